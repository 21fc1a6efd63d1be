// The GL renderer, headless (EGL device platform; Mesa llvmpipe in CI). Renders the built-in
// sample terrain (HF_SAMPLE_ARCHIVE, packed at build time) over a magenta background that the
// terrain never produces and checks the images:
// - crack-freeness: no background pixel that is enclosed by terrain (every background pixel
//   must be connected to the image border through background pixels); a top-down view from
//   inside the extent must have no background pixel at all;
// - LOD varies across the drawn tiles (levels and ldr values), with tau small and large;
// - colour-by-ldr shows several ldr values.
// The same crack checks on two real shared DEMs (HF_SHARED_DEM_DIR: ps_height_1k.png and the
// SRTM coast tile N37W123.hgt, packed at test time with the built hfpack into a temporary
// folder; skipped when either is missing), plus a footprint check: every pixel whose ray must
// cross a continuous height field over the extent is terrain. On the sample and both DEMs, the
// LOD bound of the drawn tiles (Renderer::lastDrawn), recomputed here from the archive index
// alone. A corrupt tile payload (counted, drawn from its ancestor, no holes) and the atlas's
// out-of-memory shrinking (simulated with RenderSettings::debugMaxAtlasBytes).
// RenderGlEveryDem (labels "slow" and "render"): every shared DEM, packed with hfpack's
// defaults, viewed from the default camera until settled: the same crack and LOD checks.
// Also the cpu streaming strategy against a fake sink (no GL). Skips the GL tests with a
// message when no EGL device gives a 4.5 core context.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include <chrono>
#include <thread>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include <sys/wait.h>
#include <unistd.h>

#include "archive/archive.h"
#include "gl_leak_check.h"
#include "render/gl/renderer.h"
#include "render/gl/shader.h"
#include "test_files.h"

// Mesa unloads its driver (swrast_dri.so, libLLVM) in eglTerminate; LeakSanitizer then sees the
// driver's one-time allocations from an "<unknown module>" and tests/lsan.supp (driver libraries
// by name) cannot match them. Keeping every library mapped until exit makes the stacks name the
// driver. Test binary only; the viewer unloads normally.
extern "C" int dlclose(void*) { return 0; }

namespace {

constexpr int kW = 320, kH = 240;

struct Gl {
  std::unique_ptr<hfr::GlContext> context;
  hfa::ArchiveReader archive;
  std::unique_ptr<hfr::StreamStrategy> strategy;
  std::unique_ptr<hfr::Renderer> renderer;
  std::string skip;
};

void init(Gl& s) {
    std::string error;
    if (!s.archive.open(HF_SAMPLE_ARCHIVE, error)) {
      s.skip = "sample archive: " + error;
      return;
    }
    s.context = hfr::createHeadlessContext(error);
    if (!s.context) {
      s.skip = "no headless GL: " + error;
      return;
    }
    s.strategy = hfr::makeStreamStrategy("cpu", s.archive, error);
    hfr::RenderSettings rs;
    rs.width = kW;
    rs.height = kH;
    rs.background = {1.0f, 0.0f, 1.0f};
    s.renderer = hfr::Renderer::create(s.archive, *s.strategy, rs, error);
    if (!s.renderer) s.skip = "renderer: " + error;  // a real failure: reported below
}

Gl& gl() {
  static Gl g;
  static const bool done = (init(g), true);
  (void)done;
  return g;
}

#define REQUIRE_GL()                                                     \
  do {                                                                   \
    if (!gl().context) GTEST_SKIP() << gl().skip;                        \
    ASSERT_TRUE(gl().renderer) << gl().skip;                             \
  } while (0)

struct Shot {
  std::vector<uint8_t> px;  // RGBA, w x h
  int w = kW, h = kH;
  hfr::FrameStats stats;
  bool settled = false;
};

Shot render(hfr::Renderer& r, const hfr::Camera& cam, double tau,
            hfr::View view = hfr::View::Shaded, int maxSteps = 2000) {
  r.settings().tau = tau;
  r.settings().view = view;
  Shot s;
  // Stream until settled (a stream() call may request more detail, so settle after it). After
  // maxSteps quick polls, wait for the loader threads as long as a loaded machine needs; the
  // deadline only catches a broken loader.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  for (int i = 0;; ++i) {
    r.stream(cam);
    if (r.settled()) break;
    if (i >= maxSteps) {
      if (std::chrono::steady_clock::now() > deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  r.frame(cam, &s.stats);
  s.settled = r.settled();
  s.px = r.readPixels();
  s.w = r.settings().width;
  s.h = r.settings().height;
  return s;
}
Shot render(const hfr::Camera& cam, double tau, hfr::View view = hfr::View::Shaded,
            int maxSteps = 2000) {
  return render(*gl().renderer, cam, tau, view, maxSteps);
}

bool isBackground(const std::vector<uint8_t>& px, size_t i) {
  return px[4 * i] == 255 && px[4 * i + 1] == 0 && px[4 * i + 2] == 255;
}

// Pure black pixels: shading never makes them (the darkest tint times the ambient is well above
// 0), NaN arithmetic in the fragment shader does (clamp(NaN) = 0).
size_t blackPixels(const std::vector<uint8_t>& px) {
  size_t n = 0;
  for (size_t i = 0; i + 3 < px.size(); i += 4) n += px[i] == 0 && px[i + 1] == 0 && px[i + 2] == 0;
  return n;
}

// Background pixels not connected to the image border (4-neighbourhood) = holes in the terrain.
// `px`: a w x h image.
size_t enclosedBackground(const std::vector<uint8_t>& px, size_t* background = nullptr, int w = kW,
                          int h = kH) {
  std::vector<uint8_t> seen(size_t(w) * size_t(h), 0);
  std::vector<size_t> stack;
  size_t total = 0;
  for (size_t i = 0; i < seen.size(); ++i) total += isBackground(px, i);
  auto push = [&](int x, int y) {
    const size_t i = size_t(y) * size_t(w) + size_t(x);
    if (!seen[i] && isBackground(px, i)) {
      seen[i] = 1;
      stack.push_back(i);
    }
  };
  for (int x = 0; x < w; ++x) push(x, 0), push(x, h - 1);
  for (int y = 0; y < h; ++y) push(0, y), push(w - 1, y);
  size_t reached = 0;
  while (!stack.empty()) {
    const size_t i = stack.back();
    stack.pop_back();
    ++reached;
    const int x = int(i % size_t(w)), y = int(i / size_t(w));
    if (x > 0) push(x - 1, y);
    if (x + 1 < w) push(x + 1, y);
    if (y > 0) push(x, y - 1);
    if (y + 1 < h) push(x, y + 1);
  }
  if (background) *background = total;
  return total - reached;
}

// A w x h mask from each pixel's ray against the terrain box: `test` gets the ray's (x, y) where
// it crosses z = maxZ and then z = minZ (both in front of the eye) and the box's x / y extent;
// pixels whose ray does not go down stay 0. Empty unless the eye is above maxZ.
template <class Test>
std::vector<uint8_t> rayMask(const hfr::Renderer& r, const hfr::Camera& cam, int w, int h, Test test) {
  std::vector<uint8_t> mask(size_t(w) * size_t(h), 0);
  double minZ = 0, maxZ = 0, ex = 0, ey = 0;
  r.terrainBox(minZ, maxZ, ex, ey);
  if (!(cam.z > maxZ + 1)) return mask;
  const auto vp = cam.viewProj(double(w) / h, 1.0, 1e7);
  for (int iy = 0; iy < h; ++iy)
    for (int ix = 0; ix < w; ++ix) {
      const double nx = 2.0 * (ix + 0.5) / w - 1.0, ny = 1.0 - 2.0 * (iy + 0.5) / h;
      std::array<double, 3> a{}, b{};
      if (!hfr::unproject(vp, nx, ny, -1.0, a) || !hfr::unproject(vp, nx, ny, 1.0, b)) continue;
      const double dx = b[0] - a[0], dy = b[1] - a[1], dz = b[2] - a[2];
      if (!(dz < 0)) continue;
      std::array<std::array<double, 2>, 2> xy{};
      bool ahead = true;
      for (int k = 0; k < 2; ++k) {
        const double t = ((k == 0 ? maxZ : minZ) - a[2]) / dz;
        ahead = ahead && t >= 0;
        xy[size_t(k)] = {a[0] + t * dx, a[1] + t * dy};
      }
      mask[size_t(iy) * size_t(w) + size_t(ix)] = ahead && test(xy, ex, ey);
    }
  return mask;
}

// The terrain's footprint in the image: pixels whose centre ray must hit the terrain. The
// drawn mesh is a height field over the extent with heights in [minZ, maxZ] (its vertices are
// samples); a ray that enters the box [0, extentX] x [0, extentY] through its top (z = maxZ)
// and leaves through its bottom (z = minZ) crosses it unless the surface has a gap (a crack).
// The box is shrunk by 1 % of the extent on each side (pixel centres, rasterisation at the
// border). Empty unless the eye is above maxZ. A w x h image.
std::vector<uint8_t> footprint(const hfr::Renderer& r, const hfr::Camera& cam, int w = kW, int h = kH) {
  return rayMask(r, cam, w, h, [](const std::array<std::array<double, 2>, 2>& xy, double ex, double ey) {
    const double mx = 0.01 * ex, my = 0.01 * ey;
    bool inside = true;
    for (const auto& p : xy) inside = inside && p[0] >= mx && p[0] <= ex - mx && p[1] >= my && p[1] <= ey - my;
    return inside;
  });
}

// Pixels whose ray passes beside the DEM's extent (a 1 % margin) on the same side at its lowest
// and highest height: no terrain may be drawn there (the pyramid's padding beyond the DEM is
// not terrain). Empty when the camera is not above the terrain.
std::vector<uint8_t> outsideExtent(const hfr::Renderer& r, const hfr::Camera& cam, int w, int h) {
  return rayMask(r, cam, w, h, [](const std::array<std::array<double, 2>, 2>& xy, double ex, double ey) {
    const double mx = 0.01 * ex, my = 0.01 * ey;
    int sides = 0xF;  // west, east, south, north: outside on that side at both heights
    for (const auto& p : xy)
      sides &= (p[0] < -mx ? 1 : 0) | (p[0] > ex + mx ? 2 : 0) | (p[1] < -my ? 4 : 0) | (p[1] > ey + my ? 8 : 0);
    return sides != 0;
  });
}

// The crack checks of one image: no background pixel enclosed by terrain, none inside the
// terrain's footprint, no terrain beside the DEM's extent. Returns the background pixel count;
// `inFootprint`: the footprint's size.
size_t expectNoHoles(const Shot& s, const hfr::Renderer& r, const hfr::Camera& cam,
                     size_t* inFootprint = nullptr) {
  size_t bg = 0;
  EXPECT_EQ(enclosedBackground(s.px, &bg, s.w, s.h), 0u) << "holes in the terrain";
  const std::vector<uint8_t> fp = footprint(r, cam, s.w, s.h);
  size_t n = 0, holes = 0;
  for (size_t i = 0; i < fp.size(); ++i)
    if (fp[i]) ++n, holes += isBackground(s.px, i);
  EXPECT_EQ(holes, 0u) << "background pixels inside the terrain footprint of " << n;
  const std::vector<uint8_t> out = outsideExtent(r, cam, s.w, s.h);
  size_t beside = 0, outside = 0;
  for (size_t i = 0; i < out.size(); ++i)
    if (out[i]) ++outside, beside += !isBackground(s.px, i);
  EXPECT_EQ(beside, 0u) << "terrain drawn beside the DEM's extent (pyramid padding) in " << beside << " of "
                        << outside << " pixels";
  if (inFootprint) *inFootprint = n;
  return bg;
}

// ---- The LOD bound of the drawn tiles, recomputed from the archive index alone ----
//
// LodSelector's contract (src/render/lod/lod.h, docs/rendering.md section 2): a drawn tile's
// error at centre ldr c is lodError[c] + the deviation of its level from the finest data (max
// over children of child lodError[1] + child deviation), in world units (archive units times
// |verticalScale| times the exaggeration), projected at the distance from the eye to the tile's
// box: pixels = error * (viewportHeight / 2) / tan(fovY / 2) / distance. It must be <= tau
// unless the tile is `forced` (no finer tile, or a finer one failed).
struct LodCheck {
  size_t tiles = 0, violations = 0;
  size_t badForced = 0;       // forced although every child exists and none failed
  double worst = 0;           // max pixels / tau over the tiles that are not forced
  double maxDiff = 0;         // max |recomputed - DrawTile::pixels| / max(1, pixels)
  std::string first;          // the first violation
};

LodCheck checkLodBound(const hfa::ArchiveReader& a, hfr::Renderer& r,
                       const hfr::Camera& cam, double tau,
                       const std::set<size_t>& failed = std::set<size_t>()) {
  const hfa::Header& h = a.header();
  const auto& e = a.tiles();
  const double sx = h.spacingX > 0 ? h.spacingX : 1, sy = h.spacingY > 0 ? h.spacingY : 1;
  const double exag = r.settings().verticalExaggeration;
  const double zs = std::fabs(h.verticalScale) * exag;
  const double N = double(1 << h.tileLog), top = double(h.height > 0 ? h.height - 1 : 0) * sy;
  // Deviation bottom-up (the index is sorted by level).
  std::vector<double> dev(e.size(), 0.0);
  auto child = [&](size_t t, uint32_t c) {
    return e[t].level == 0 ? -1L
                           : a.find(e[t].level - 1, 2 * e[t].x + (c & 1), 2 * e[t].y + (c >> 1));
  };
  for (size_t t = 0; t < e.size(); ++t)
    for (uint32_t c = 0; c < 4; ++c) {
      const long k = child(t, c);
      if (k >= 0) dev[t] = std::max(dev[t], double(e[size_t(k)].lodError[1]) * zs + dev[size_t(k)]);
    }
  const double ppu =
      0.5 * double(r.settings().height) /
      std::tan(cam.fovY * 3.14159265358979323846 / 360.0);
  LodCheck out;
  for (const hfr::DrawTile& d : r.lastDrawn()) {
    ++out.tiles;
    const hfa::TileEntry& t = e[d.tile];
    EXPECT_EQ(int(t.level), d.level);
    const double span = N * double(1u << t.level);
    const double box[6] = {double(t.x) * span * sx,
                           top - double(t.y + 1) * span * sy,
                           std::min(h.verticalOffset + h.verticalScale * t.minSample,
                                    h.verticalOffset + h.verticalScale * t.maxSample) * exag,
                           double(t.x + 1) * span * sx,
                           top - double(t.y) * span * sy,
                           std::max(h.verticalOffset + h.verticalScale * t.minSample,
                                    h.verticalOffset + h.verticalScale * t.maxSample) * exag};
    const double eye[3] = {cam.x, cam.y, cam.z};
    double d2 = 0;
    for (int i = 0; i < 3; ++i) {
      const double v = eye[i] < box[i] ? box[i] - eye[i] : (eye[i] > box[i + 3] ? eye[i] - box[i + 3] : 0.0);
      d2 += v * v;
    }
    const double error = double(t.lodError[size_t(d.centre)]) * zs + dev[d.tile];
    const double pixels = error <= 0 ? 0.0
                          : d2 > 0   ? error * ppu / std::sqrt(d2)
                                     : std::numeric_limits<double>::infinity();
    out.maxDiff = std::max(out.maxDiff, std::fabs(pixels - d.pixels) / std::max(1.0, d.pixels));
    if (d.forced) {
      bool finer = t.level > 0;  // every child exists and none failed
      for (uint32_t c = 0; c < 4 && finer; ++c) {
        const long k = child(d.tile, c);
        finer = k >= 0 && !failed.count(size_t(k));
      }
      // Next to a failed tile's parent (drawn instead of the failed tile and its siblings),
      // finer tiles are coarsened to keep the levels balanced (lod.h): forced within one
      // parent-sized tile of that parent. Level-0 sample units, y down as the tile grid.
      bool nearFailure = false;
      const double ts = N * double(1u << t.level), tx = t.x * ts, ty = t.y * ts;
      for (size_t f : failed) {
        const hfa::TileEntry& fe = e[f];
        const double ps = N * double(1u << (fe.level + 1));
        const double px = double(fe.x >> 1) * ps, py = double(fe.y >> 1) * ps;
        nearFailure |= tx < px + 2 * ps && tx + ts > px - ps && ty < py + 2 * ps && ty + ts > py - ps;
      }
      out.badForced += finer && !nearFailure;
      continue;
    }
    out.worst = std::max(out.worst, pixels / tau);
    if (pixels > tau * (1 + 1e-5) + 1e-9) {
      if (!out.violations++)
        out.first = a.tileName(d.tile) + " ldr " + std::to_string(d.centre) + ": " +
                    std::to_string(pixels) + " px > tau " + std::to_string(tau);
    }
  }
  return out;
}

size_t distinct(const std::vector<size_t>& counts) {
  size_t n = 0;
  for (size_t c : counts) n += c > 0;
  return n;
}

hfr::Camera topDown() {  // inside the extent, the whole image is terrain
  hfr::Camera c;
  c.x = 30000, c.y = 30000, c.z = 16000, c.yaw = 90, c.pitch = -90;
  return c;
}
hfr::Camera oblique() { return gl().renderer->defaultCamera(); }
hfr::Camera low() {  // near the ground in the south-west, looking north-east over the terrain
  hfr::Camera c;
  c.x = 4000, c.y = 3000, c.z = 3500, c.yaw = 45, c.pitch = -12;
  return c;
}

void dumpOnFailure(const Shot& s, const std::string& name) {
  if (!::testing::Test::HasFailure()) return;
  std::string e;
  const std::string path = ::testing::TempDir() + "hfview_" + name + ".png";
  if (hfr::writePng(path, s.w, s.h, s.px, e)) std::printf("image: %s\n", path.c_str());
}

TEST(RenderGl, CrackFreeFromThreeCamerasAndTwoTaus) {
  REQUIRE_GL();
  const std::pair<const char*, hfr::Camera> cams[] = {
      {"top", topDown()}, {"oblique", oblique()}, {"low", low()}};
  std::set<std::pair<int, int>> levelLdr;
  for (const auto& [name, cam] : cams)
    for (double tau : {0.5, 8.0}) {
      SCOPED_TRACE(std::string(name) + " tau " + std::to_string(tau));
      const Shot s = render(cam, tau);
      EXPECT_TRUE(s.settled);
      EXPECT_GT(s.stats.tilesDrawn, 0u);
      EXPECT_EQ(s.stats.lod.cornerClamps, 0u);
      const size_t bg = expectNoHoles(s, *gl().renderer, cam);
      EXPECT_EQ(blackPixels(s.px), 0u) << "NaN shading (black pixels)";
      if (std::string(name) == "top") {
        EXPECT_EQ(bg, 0u);
      } else {
        EXPECT_GT(bg, 0u);                              // sky or surroundings visible
        EXPECT_LT(bg, size_t(kW) * kH * 9 / 10);        // and terrain
      }
      for (size_t l = 0; l < s.stats.tilesPerLevel.size(); ++l)
        if (s.stats.tilesPerLevel[l]) levelLdr.insert({int(l), -1});
      for (size_t k = 0; k < s.stats.tilesPerLdr.size(); ++k)
        if (s.stats.tilesPerLdr[k]) levelLdr.insert({-1, int(k)});
      if (std::string(name) != "top" && tau < 1) {
        EXPECT_GE(distinct(s.stats.tilesPerLevel) + distinct(s.stats.tilesPerLdr), 3u)
            << "LOD does not vary across tiles";
      }
      dumpOnFailure(s, std::string(name) + "_" + std::to_string(int(tau * 10)));
    }
  // Over all views, several levels and several ldr values were drawn.
  size_t levels = 0, ldrs = 0;
  for (const auto& p : levelLdr) (p.first >= 0 ? levels : ldrs)++;
  EXPECT_GE(levels, 3u);
  EXPECT_GE(ldrs, 3u);
}

// The terrain program's speed rests on two properties of its source (session 24 on the H100:
// each cost a quarter or more of the 1080p frame; docs/rendering.md, "Nothing is discarded,
// nothing is clipped"): the fragment shader never discards and asks for early depth tests, and
// the vertex shader writes a clip distance only in the nodata-holes variant. Timing is not a
// unit test's job; this keeps a later edit from losing them unnoticed.
std::string shaderCode(const std::string& file) {
  std::string error, source;
  std::vector<std::string> files;
  const std::string dir = hfr::resolveShaderDir("", error);
  EXPECT_FALSE(dir.empty()) << error;
  EXPECT_TRUE(hfr::preprocessShader(dir, file, source, files, error)) << error;
  std::string code;  // without comments
  for (size_t i = 0; i < source.size();) {
    if (source.compare(i, 2, "//") == 0) {
      i = source.find('\n', i);
      if (i == std::string::npos) break;
    } else if (source.compare(i, 2, "/*") == 0) {
      i = source.find("*/", i);
      if (i == std::string::npos) break;
      i += 2;
    } else {
      code += source[i++];
    }
  }
  return code;
}

TEST(TerrainShaders, NoDiscardAndNoClipDistanceOutsideTheNodataVariant) {
  const std::string frag = shaderCode("terrain.frag"), vert = shaderCode("terrain.vert");
  EXPECT_EQ(frag.find("discard"), std::string::npos);
  EXPECT_EQ(frag.find("gl_FragDepth"), std::string::npos);
  EXPECT_NE(frag.find("layout(early_fragment_tests) in;"), std::string::npos);
  const size_t variant = vert.find("#ifdef HF_NODATA_HOLES");
  ASSERT_NE(variant, std::string::npos);
  size_t outside = 0;
  for (size_t at = vert.find("gl_ClipDistance"); at != std::string::npos;
       at = vert.find("gl_ClipDistance", at + 1)) {
    const size_t open = vert.rfind("#ifdef HF_NODATA_HOLES", at), close = vert.rfind("#endif", at);
    outside += open == std::string::npos || (close != std::string::npos && close > open);
  }
  EXPECT_EQ(outside, 0u) << "a clip distance outside #ifdef HF_NODATA_HOLES";
}

// Wireframe is an overlay: translucent lines over the shading, faded where the mesh is denser
// than the pixels (so a distant view keeps its shading), and screenshots stay opaque.
TEST(RenderGl, WireframeOverlaysTheShading) {
  REQUIRE_GL();
  hfr::Renderer& r = *gl().renderer;
  // Close: straight down from 600 m above the highest sample around the centre (30 m samples:
  // a grid step spans several pixels).
  double minZ = 0, maxZ = 0, ex = 0, ey = 0;
  r.terrainBox(minZ, maxZ, ex, ey);
  hfr::Camera close;
  close.x = ex / 2, close.y = ey / 2, close.yaw = 90, close.pitch = -90;
  double lo = 0, hi = 0;
  ASSERT_TRUE(r.heightBounds(close.x, close.y, lo, hi));
  close.z = hi + 600;
  const Shot plain = render(oblique(), 1.0);
  const Shot nearPlain = render(close, 1.0);
  r.settings().wireframe = true;
  const Shot wire = render(oblique(), 1.0);
  const Shot near = render(close, 1.0);
  r.settings().wireframe = false;
  size_t translucent = 0;
  for (const Shot* s : {&wire, &near})
    for (size_t i = 3; i < s->px.size(); i += 4) translucent += s->px[i] != 255;
  EXPECT_EQ(translucent, 0u) << "the line pass changed the destination alpha";
  auto meanDiff = [](const Shot& a, const Shot& b) {
    double d = 0;
    for (size_t i = 0; i < a.px.size(); ++i)
      if (i % 4 != 3) d += std::abs(int(a.px[i]) - int(b.px[i]));
    return d / double(a.px.size() / 4 * 3);
  };
  const double far = meanDiff(plain, wire), closeUp = meanDiff(nearPlain, near);
  std::printf("[wireframe] mean channel change: oblique %.1f, close %.1f\n", far, closeUp);
  EXPECT_LT(far, 25.0) << "the lines hide the shading";
  EXPECT_GT(closeUp, 3.0) << "no lines where the triangles are large";
  dumpOnFailure(wire, "wireframe");
}

TEST(RenderGl, CrackFreeWhileStreaming) {
  // A fresh renderer: only the top level is resident at first. Every frame while the tiles
  // arrive, and then while the camera flies on (prefetch on, fixed frame time), mixes levels
  // that are still arriving: missing tiles are drawn from resident ancestors, and where a
  // balance split would need a missing tile the finer side is coarsened (docs/rendering.md,
  // "Transient imbalance"). Every frame must be balanced, clamp-free and hole-free.
  REQUIRE_GL();
  std::string error;
  auto strategy = hfr::makeStreamStrategy("cpu", gl().archive, error);
  hfr::RenderSettings rs;
  rs.width = kW;
  rs.height = kH;
  rs.background = {1.0f, 0.0f, 1.0f};
  rs.tau = 0.7;
  rs.prefetchFrameSeconds = 1.0 / 30;
  rs.uploadsPerFrame = 6;  // many mid-streaming frames
  auto r = hfr::Renderer::create(gl().archive, *strategy, rs, error);
  ASSERT_TRUE(r) << error;
  const int n = r->pyramid().tileLog;
  size_t frames = 0, coarsened = 0, raised = 0, prefetched = 0;
  auto check = [&](const hfr::Camera& cam, const std::string& what) {
    hfr::FrameStats st;
    r->frame(cam, &st);
    Shot s;
    s.px = r->readPixels();
    ++frames;
    coarsened += st.lod.coarsened;
    raised += st.lod.raisedCentres;
    prefetched += st.tilesPrefetch;
    EXPECT_GT(st.tilesDrawn, 0u) << what;
    EXPECT_EQ(st.lod.cornerClamps, 0u) << what;
    EXPECT_EQ(enclosedBackground(s.px), 0u) << "holes " << what;
    // Balance of what was drawn: tiles whose closed footprints touch differ by <= 1 level.
    const auto& drawn = r->lastDrawn();
    for (size_t i = 0; i < drawn.size(); ++i)
      for (size_t j = i + 1; j < drawn.size(); ++j) {
        const auto& a = drawn[i];
        const auto& b = drawn[j];
        const long sa = long(1) << (n + a.level), sb = long(1) << (n + b.level);
        const long ax = long(a.x) * sa, ay = long(a.y) * sa, bx = long(b.x) * sb, by = long(b.y) * sb;
        const bool touch = ax <= bx + sb && bx <= ax + sa && ay <= by + sb && by <= ay + sa;
        if (touch) {
          EXPECT_LE(std::abs(a.level - b.level), 1) << "unbalanced " << what;
        }
      }
    dumpOnFailure(s, "streaming_" + std::to_string(frames));
  };
  // 1. Standing still: every frame until everything wanted is resident.
  const hfr::Camera start = low();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  for (int step = 0; step < 400 && !::testing::Test::HasFailure(); ++step) {
    check(start, "after " + std::to_string(step) + " steps");
    if (r->settled() || std::chrono::steady_clock::now() > deadline) break;
  }
  EXPECT_TRUE(r->settled());
  // 2. Flying on along the view direction (tiles keep arriving, prefetch asks ahead).
  hfr::Camera cam = start;
  const auto f = cam.forward();
  for (int step = 0; step < 16 && !::testing::Test::HasFailure(); ++step) {
    cam.x += 300 * f[0];
    cam.y += 300 * f[1];
    check(cam, "flying, step " + std::to_string(step));
  }
  std::printf("%zu frames: %zu balance merges, %zu raised centres, %zu prefetch requests\n",
              frames, coarsened, raised, prefetched);
  EXPECT_GT(prefetched, 0u);
}

TEST(RenderGl, ColourByLdrShowsSeveralValues) {
  REQUIRE_GL();
  const Shot s = render(low(), 16.0, hfr::View::Ldr);
  gl().renderer->settings().view = hfr::View::Shaded;
  ASSERT_GE(distinct(s.stats.tilesPerLdr), 3u);
  // The debug palette (shaders/terrain.frag) times a shade factor: classify pixels by
  // chromaticity and count the palette entries that cover a visible share of the image.
  const std::array<std::array<double, 3>, 9> pal = {{{0.95, 0.20, 0.15}, {0.20, 0.80, 0.20},
                                                     {0.20, 0.35, 0.95}, {0.95, 0.85, 0.10},
                                                     {0.10, 0.85, 0.85}, {0.95, 0.55, 0.10},
                                                     {0.55, 0.30, 0.95}, {0.90, 0.90, 0.90},
                                                     {0.45, 0.25, 0.10}}};
  std::map<int, size_t> hits;
  for (size_t i = 0; i < size_t(kW) * kH; ++i) {
    if (isBackground(s.px, i)) continue;
    const double r = s.px[4 * i], g = s.px[4 * i + 1], b = s.px[4 * i + 2], sum = r + g + b;
    if (sum < 60) continue;
    int best = -1;
    double bestD = 1e9;
    for (int k = 0; k < 9; ++k) {
      const double ps = pal[size_t(k)][0] + pal[size_t(k)][1] + pal[size_t(k)][2];
      double d = 0;
      for (int c = 0; c < 3; ++c) {
        const double v = (c == 0 ? r : c == 1 ? g : b) / sum - pal[size_t(k)][size_t(c)] / ps;
        d += v * v;
      }
      if (d < bestD) bestD = d, best = k;
    }
    if (bestD < 0.003) ++hits[best];
  }
  size_t shown = 0;
  for (const auto& h : hits) shown += h.second > size_t(kW) * kH / 200;
  EXPECT_GE(shown, 3u);
  dumpOnFailure(s, "ldr");
}

// ---- Scenes of their own: real DEMs packed at test time, corrupted and shrunk archives ----

namespace fs = std::filesystem;

// This process's scratch folder (packed DEMs, a corrupted copy), removed at exit.
const fs::path& scratch() {
  struct Dir {
    fs::path path;
    Dir() : path(hf_test::makeFreshDir("hf_render_gl_test")) {}
    ~Dir() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  };
  static const Dir dir;
  return dir.path;
}

struct Scene {  // members in this order: the renderer goes first, the archive last
  hfa::ArchiveReader archive;
  std::unique_ptr<hfr::StreamStrategy> strategy;
  std::unique_ptr<hfr::Renderer> renderer;
};

// The archive at `path`, the cpu strategy and a w x h renderer over magenta without fog.
// Returns the error ("" on success).
std::string openScene(Scene& s, const std::string& path,
                      hfr::RenderSettings rs = hfr::RenderSettings(), int w = kW, int h = kH) {
  std::string error;
  if (!s.archive.open(path, error)) return error;
  s.strategy = hfr::makeStreamStrategy("cpu", s.archive, error);
  if (!s.strategy) return error;
  rs.width = w;
  rs.height = h;
  rs.background = {1.0f, 0.0f, 1.0f};
  rs.fog = false;
  s.renderer = hfr::Renderer::create(s.archive, *s.strategy, rs, error);
  return s.renderer ? std::string() : error;
}

struct Dem {
  const char* file;
  const char* packArgs;
  double exaggeration;  // RenderSettings::verticalExaggeration
};
// Puget Sound, 16-bit in 0.1 m at 160 m spacing, no georeferencing: the archive is in sample
// units (spacing 1, heights 0 .. 43798). The true relief is 0.1 / 160 = 0.000625; the renderer
// exaggerates it 3.2 times (hfpack keeps 16-bit samples as they are: no --vertical-scale).
const Dem kPugetSound{"ps_height_1k.png", "", 0.002};
// San Francisco and the Pacific: 60 % flat sea (one value) next to hills; metres.
const Dem kSrtmCoast{"N37W123.hgt", "", 1.0};

// Packs a shared DEM with the built hfpack into scratch(). Empty with `skip` set when the DEM
// folder, the DEM or the packer is missing; a failing pack is a test failure.
std::string packDem(const Dem& dem, std::string& skip) {
#ifndef HFPACK_BINARY
  (void)dem;
  skip = "built without hfpack (GDAL): no real-DEM archives";
  return std::string();
#else
  const fs::path src = fs::path(HF_SHARED_DEM_DIR) / dem.file;
  if (!fs::exists(src)) {
    skip = "no shared DEM " + src.string();
    return std::string();
  }
  std::string stem = dem.file;  // "srtm3-sierra/sierra.vrt": one file in scratch()
  std::replace(stem.begin(), stem.end(), '/', '_');
  const fs::path out = scratch() / (stem + ".hfa"), log = scratch() / "hfpack.log";
  const std::string cmd = std::string("GDAL_PAM_ENABLED=NO '") + HFPACK_BINARY + "' '" +
                          src.string() + "' -o '" + out.string() + "' -q " + dem.packArgs +
                          " >'" + log.string() + "' 2>&1";
  const int rc = std::system(cmd.c_str());
  if (rc != 0 || !fs::exists(out)) {
    std::string text;
    if (std::FILE* f = std::fopen(log.c_str(), "rb")) {
      char buf[512];
      for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
      std::fclose(f);
    }
    ADD_FAILURE() << "hfpack " << dem.file << " failed (" << rc << "): " << text;
    return std::string();
  }
  return out.string();
#endif
}

// Top-down from inside the extent (all terrain), the renderer's oblique default, and low near
// the middle of the south edge looking north across the terrain (several levels in one view).
std::vector<std::pair<std::string, hfr::Camera>> sceneCameras(const hfr::Renderer& r) {
  double minZ = 0, maxZ = 0, ex = 0, ey = 0;
  r.terrainBox(minZ, maxZ, ex, ey);
  hfr::Camera top;
  top.x = ex / 2, top.y = ey / 2, top.z = maxZ + 0.3 * std::min(ex, ey);
  top.yaw = 90, top.pitch = -90;
  hfr::Camera low;
  low.x = 0.5 * ex, low.y = 0.05 * ey, low.z = maxZ + 0.005 * std::hypot(ex, ey);
  low.yaw = 90, low.pitch = -8;
  return {{"top", top}, {"oblique", r.defaultCamera()}, {"low", low}};
}

// Every camera at tau 1, 4 and 16, settled: no holes (enclosed or in the footprint), no corner
// clamps, every drawn tile within tau (recomputed from the index), LOD varying over levels and
// ldrs. The tau-16 views checked against tau 1 must fail the bound: the check has teeth.
void crackFreeAndWithinTau(const Dem& dem) {
  std::string skip;
  const std::string path = packDem(dem, skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_FALSE(path.empty());
  Scene sc;
  hfr::RenderSettings rs;
  rs.verticalExaggeration = dem.exaggeration;
  ASSERT_EQ(openScene(sc, path, rs), "");
  hfr::Renderer& r = *sc.renderer;
  std::set<size_t> levels, ldrs;
  size_t mostLevels = 0, strictViolations = 0;
  for (const auto& [name, cam] : sceneCameras(r))
    for (double tau : {1.0, 4.0, 16.0}) {
      const std::string what = std::string(dem.file) + " " + name + " tau " + std::to_string(tau);
      SCOPED_TRACE(what);
      const Shot s = render(r, cam, tau);
      EXPECT_TRUE(s.settled);
      EXPECT_GT(s.stats.tilesDrawn, 0u);
      EXPECT_EQ(s.stats.lod.cornerClamps, 0u);
      EXPECT_EQ(s.stats.failedTiles, 0u);
      size_t fp = 0;
      const size_t bg = expectNoHoles(s, r, cam, &fp);
      if (name == "top") {
        EXPECT_EQ(bg, 0u);
      }
      EXPECT_GT(fp, size_t(kW) * kH / 4) << "the footprint check covers too little";
      const LodCheck lc = checkLodBound(sc.archive, r, cam, tau);
      EXPECT_EQ(lc.tiles, s.stats.tilesDrawn);
      EXPECT_EQ(lc.violations, 0u) << lc.first;
      EXPECT_EQ(lc.badForced, 0u);
      EXPECT_LT(lc.maxDiff, 1e-3) << "recomputed error differs from the selector's";
      if (tau == 16.0) strictViolations += checkLodBound(sc.archive, r, cam, 1.0).violations;
      std::string lv;
      for (size_t l = 0; l < s.stats.tilesPerLevel.size(); ++l)
        lv += (l ? "/" : "") + std::to_string(s.stats.tilesPerLevel[l]);
      std::printf("%s: %zu tiles (per level %s), footprint %zu px, worst %.2f tau\n",
                  what.c_str(), lc.tiles, lv.c_str(), fp, lc.worst);
      for (size_t l = 0; l < s.stats.tilesPerLevel.size(); ++l)
        if (s.stats.tilesPerLevel[l]) levels.insert(l);
      for (size_t k = 0; k < s.stats.tilesPerLdr.size(); ++k)
        if (s.stats.tilesPerLdr[k]) ldrs.insert(k);
      mostLevels = std::max(mostLevels, distinct(s.stats.tilesPerLevel));
      dumpOnFailure(s, std::string(dem.file) + "_" + name + "_" + std::to_string(int(tau)));
    }
  EXPECT_GE(levels.size(), 3u) << "LOD does not vary over levels";
  EXPECT_GE(ldrs.size(), 3u) << "LOD does not vary over ldrs";
  EXPECT_GE(mostLevels, 2u) << "no view mixes levels";
  EXPECT_GT(strictViolations, 0u) << "tau 16 selections pass a tau 1 check: it cannot fail";
}

TEST(RenderGlDem, PugetSoundCrackFreeAndWithinTau) {
  REQUIRE_GL();
  crackFreeAndWithinTau(kPugetSound);
}

TEST(RenderGlDem, SrtmCoastCrackFreeAndWithinTau) {
  REQUIRE_GL();
  crackFreeAndWithinTau(kSrtmCoast);
}

// --nodata keep: void samples keep the nodata value (-32768 here). The renderer draws them as
// holes (background), never as pits to -32768 m; the same DEM with --nodata fill is solid.
TEST(RenderGlDem, KeptNodataIsAHoleNotAPit) {
  REQUIRE_GL();
  size_t background[2] = {0, 0};
  for (int keep = 0; keep < 2; ++keep) {
    std::string skip;
    const std::string path =
        packDem(Dem{"mt_rainier_90m.tif", keep ? "--nodata keep" : "--nodata fill", 1.0}, skip);
    if (!skip.empty()) GTEST_SKIP() << skip;
    ASSERT_FALSE(path.empty());
    Scene sc;
    ASSERT_EQ(openScene(sc, path), "");
    ASSERT_EQ((sc.archive.header().flags & hfa::kFlagNodataKept) != 0, keep == 1);
    hfr::Renderer& r = *sc.renderer;
    const hfr::Camera top = sceneCameras(r)[0].second;  // straight down, all terrain
    const Shot s = render(r, top, 1.0);
    EXPECT_TRUE(s.settled);
    for (size_t i = 0; i < s.px.size() / 4; ++i) background[keep] += isBackground(s.px, i);
    EXPECT_EQ(blackPixels(s.px), 0u);
    dumpOnFailure(s, keep ? "nodata_keep" : "nodata_fill");
    std::error_code ec;
    fs::remove(path, ec);
  }
  EXPECT_EQ(background[0], 0u) << "the filled DEM does not cover the top view";
  EXPECT_GT(background[1], 20u) << "no holes where the kept nodata samples are";
  EXPECT_LT(background[1], size_t(kW) * kH / 10) << "far more holes than nodata samples";
}

// ---- Every shared DEM (labels "slow" and "render": its own ctest registration) ----
//
// Every DEM in HF_SHARED_DEM_DIR (the extensions tests/realdem_test.cpp reads, plus the sierra
// mosaic srtm3-sierra/sierra.vrt), packed with hfpack's defaults, opened and viewed from the
// renderer's default camera at 200 x 150 (tau 1) until settled: no failed tiles, no corner
// clamps, no holes (enclosed or in the footprint), every drawn tile within tau. Heights come in
// whatever units the DEM has (ps_height_1k.png: 0.1 m at spacing 1): the vertical
// exaggeration is reduced so that the height range is at most 0.3 of the shorter horizontal
// extent (1 otherwise), which keeps the eye of the default camera above the terrain.

std::vector<std::string> sharedDems() {
  std::vector<std::string> files;
  std::error_code ec;
  const fs::path dir(HF_SHARED_DEM_DIR);
  for (const auto& e : fs::directory_iterator(dir, ec)) {  // none when the folder is absent
    if (!e.is_regular_file()) continue;
    std::string ext = e.path().extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char ch) { return char(std::tolower(ch)); });
    if (ext == ".hgt" || ext == ".tif" || ext == ".tiff" || ext == ".png" || ext == ".jpg" ||
        ext == ".nc" || ext == ".dem")
      files.push_back(e.path().filename().string());
  }
  std::sort(files.begin(), files.end());
  if (fs::exists(dir / "srtm3-sierra" / "sierra.vrt", ec))
    files.push_back("srtm3-sierra/sierra.vrt");
  if (files.empty()) files.push_back("<none>");  // one skipped case that says why
  return files;
}

class RenderGlEveryDem : public ::testing::TestWithParam<std::string> {};

TEST_P(RenderGlEveryDem, DefaultViewSettlesCrackFreeWithinTau) {
  if (GetParam() == "<none>") GTEST_SKIP() << "no DEMs in HF_SHARED_DEM_DIR=" << HF_SHARED_DEM_DIR;
  REQUIRE_GL();
  using Clock = std::chrono::steady_clock;
  const auto ms = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  const auto t0 = Clock::now();
  std::string skip;
  const std::string path = packDem(Dem{GetParam().c_str(), "", 1.0}, skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_FALSE(path.empty());
  const auto t1 = Clock::now();
  constexpr int w = 200, h = 150;
  const double tau = 1.0;
  {
    Scene sc;
    ASSERT_EQ(openScene(sc, path, hfr::RenderSettings(), w, h), "");
    hfr::Renderer& r = *sc.renderer;
    double minZ = 0, maxZ = 0, ex = 0, ey = 0;
    r.terrainBox(minZ, maxZ, ex, ey);
    const double range = maxZ - minZ, extent = std::min(ex, ey);
    ASSERT_GT(extent, 0);
    if (range > 0.3 * extent) {
      r.settings().verticalExaggeration = 0.3 * extent / range;
      r.updateExaggeration();
      r.terrainBox(minZ, maxZ, ex, ey);
    }
    const hfa::Header& hd = sc.archive.header();
    const hfr::Camera cam = r.defaultCamera();
    const Shot s = render(r, cam, tau);
    const auto t2 = Clock::now();
    EXPECT_TRUE(s.settled);
    EXPECT_GT(s.stats.tilesDrawn, 0u);
    EXPECT_EQ(s.stats.failedTiles, 0u);
    EXPECT_EQ(sc.strategy->stats().failed, 0u);
    EXPECT_EQ(s.stats.lod.cornerClamps, 0u);
    size_t fp = 0;
    const size_t bg = expectNoHoles(s, r, cam, &fp);
    EXPECT_GT(fp, size_t(w) * h / 8) << "the footprint check covers too little";
    EXPECT_LT(bg, size_t(w) * h) << "no terrain in the image";
    EXPECT_EQ(blackPixels(s.px), 0u) << "NaN shading (black pixels)";
    const LodCheck lc = checkLodBound(sc.archive, r, cam, tau);
    EXPECT_EQ(lc.tiles, s.stats.tilesDrawn);
    EXPECT_EQ(lc.violations, 0u) << lc.first;
    EXPECT_EQ(lc.badForced, 0u);
    EXPECT_LT(lc.maxDiff, 1e-3) << "recomputed error differs from the selector's";
    std::string lv;
    for (size_t l = 0; l < s.stats.tilesPerLevel.size(); ++l)
      lv += (l ? "/" : "") + std::to_string(s.stats.tilesPerLevel[l]);
    std::printf(
        "[every-dem] %-24s %5ux%-5u spacing %.4g x %.4g, z %.6g .. %.6g, exaggeration "
        "%.3g: %zu tiles of %zu (per level %s), footprint %zu px, background %zu px, "
        "worst %.2f tau; pack %.0f ms, render %.0f ms\n",
        GetParam().c_str(), hd.width, hd.height, hd.spacingX, hd.spacingY, minZ, maxZ,
        r.settings().verticalExaggeration, lc.tiles, sc.archive.tiles().size(), lv.c_str(), fp, bg,
        lc.worst, ms(t0, t1), ms(t1, t2));
    std::string name = GetParam();
    std::replace(name.begin(), name.end(), '/', '_');
    dumpOnFailure(s, "every_" + name);
  }
  std::error_code ec;
  fs::remove(path, ec);  // the sierra mosaic's archive is large
}

INSTANTIATE_TEST_SUITE_P(Shared, RenderGlEveryDem, ::testing::ValuesIn(sharedDems()),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           std::string n;
                           for (char ch : i.param)
                             n += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return n;
                         });

TEST(RenderGl, DrawnTilesWithinTau) {
  // The sample terrain; the DEM tests above do the same on real data.
  REQUIRE_GL();
  size_t strictViolations = 0;
  for (const auto& [name, cam] : sceneCameras(*gl().renderer))
    for (double tau : {1.0, 8.0}) {
      SCOPED_TRACE(name + " tau " + std::to_string(tau));
      const Shot s = render(cam, tau);
      EXPECT_TRUE(s.settled);
      const LodCheck lc = checkLodBound(gl().archive, *gl().renderer, cam, tau);
      EXPECT_EQ(lc.tiles, s.stats.tilesDrawn);
      EXPECT_GT(lc.tiles, 0u);
      EXPECT_EQ(lc.violations, 0u) << lc.first;
      EXPECT_EQ(lc.badForced, 0u);
      EXPECT_LT(lc.maxDiff, 1e-3);
      if (tau == 8.0) strictViolations += checkLodBound(gl().archive, *gl().renderer, cam, 1.0).violations;
    }
  EXPECT_GT(strictViolations, 0u) << "tau 8 selections pass a tau 1 check: it cannot fail";
}

TEST(RenderGl, CorruptTileIsCountedAndDrawnFromItsAncestor) {
  REQUIRE_GL();
  const hfr::Camera cam = topDown();
  const double tau = 2.0;
  // The victim: a drawn tile of the finest drawn level, nearest the view's centre, below the
  // top level (the top level is loaded at start-up and has no ancestor).
  const Shot good = render(cam, tau);
  ASSERT_TRUE(good.settled);
  const auto& entries = gl().archive.tiles();
  const hfa::Header& h = gl().archive.header();
  size_t victim = entries.size();
  double best = 1e300;
  for (const hfr::DrawTile& d : gl().renderer->lastDrawn()) {
    if (d.level >= h.levels - 1) continue;
    const double span = double(h.tileSize() - 1) * double(1u << d.level);  // level-0 samples
    const double cx = (d.x + 0.5) * span * h.spacingX;
    const double cy = (double(h.height - 1) - (d.y + 0.5) * span) * h.spacingY;
    const double key = d.level * 1e12 + std::hypot(cx - cam.x, cy - cam.y);
    if (key < best) best = key, victim = d.tile;
  }
  ASSERT_LT(victim, entries.size());
  const hfa::TileEntry& ve = entries[victim];

  // A copy with one payload byte flipped: the index (and its checksum) is intact, so the
  // archive opens; the tile's CRC32 fails when the strategy fetches it.
  const fs::path bad = scratch() / "corrupt.hfa";
  fs::copy_file(HF_SAMPLE_ARCHIVE, bad, fs::copy_options::overwrite_existing);
  {
    std::FILE* f = std::fopen(bad.c_str(), "r+b");
    ASSERT_TRUE(f);
    const long at = long(ve.offset + ve.size / 2);
    int c = EOF;
    if (std::fseek(f, at, SEEK_SET) == 0) c = std::fgetc(f);
    const bool ok = c != EOF && std::fseek(f, at, SEEK_SET) == 0 && std::fputc(c ^ 0x5a, f) != EOF;
    std::fclose(f);
    ASSERT_TRUE(ok);
  }
  Scene sc;
  ASSERT_EQ(openScene(sc, bad.string()), "");
  for (double t : {tau, 0.7}) {  // a second, finer view after the failure: still no crash
    SCOPED_TRACE("tau " + std::to_string(t));
    const Shot s = render(*sc.renderer, cam, t);
    EXPECT_TRUE(s.settled);
    EXPECT_EQ(s.stats.failedTiles, 1u);
    EXPECT_EQ(sc.strategy->stats().failed, 1u);
    EXPECT_EQ(s.stats.lod.cornerClamps, 0u);
    EXPECT_EQ(expectNoHoles(s, *sc.renderer, cam), 0u) << "top-down: every pixel is terrain";
    bool victimDrawn = false, ancestorDrawn = false;
    for (const hfr::DrawTile& d : sc.renderer->lastDrawn()) {
      victimDrawn |= d.tile == victim;
      const int up = d.level - int(ve.level);
      ancestorDrawn |= up > 0 && d.x == (ve.x >> up) && d.y == (ve.y >> up);
    }
    EXPECT_FALSE(victimDrawn);
    EXPECT_TRUE(ancestorDrawn) << "the corrupt tile's area is not drawn by an ancestor";
    const LodCheck lc = checkLodBound(sc.archive, *sc.renderer, cam, t, {victim});
    EXPECT_EQ(lc.violations, 0u) << lc.first;
    EXPECT_EQ(lc.badForced, 0u);
    dumpOnFailure(s, "corrupt_" + std::to_string(int(t * 10)));
  }
}

std::string mibText(size_t bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f MiB", double(bytes) / 1048576.0);
  return b;
}

TEST(RenderGl, AtlasShrinksWhenTheGpuIsOutOfMemory) {
  REQUIRE_GL();
  hfr::FrameStats full;
  gl().renderer->stream(topDown(), &full);
  const size_t slotBytes = 129 * 129 * 2, fullBytes = full.atlasSlots * slotBytes;
  ASSERT_GE(full.atlasSlots, 512u);  // 341 tiles: two layers of 16 x 16 slots
  EXPECT_TRUE(gl().renderer->notes().empty());

  // Any allocation above one byte less than the full atlas fails: halved once, to one layer
  // (the top level needs one slot).
  hfr::RenderSettings rs;
  rs.debugMaxAtlasBytes = fullBytes - 1;
  Scene sc;
  ASSERT_EQ(openScene(sc, HF_SAMPLE_ARCHIVE, rs), "");
  ASSERT_EQ(sc.renderer->notes().size(), 1u);
  EXPECT_EQ(sc.renderer->notes()[0], "atlas shrunk from " + mibText(fullBytes) + " to " +
                                         mibText(fullBytes / 2) + " (GPU out of memory)");
  const Shot s = render(*sc.renderer, topDown(), 8.0);
  EXPECT_EQ(s.stats.atlasSlots, full.atlasSlots / 2);
  EXPECT_TRUE(s.settled);
  EXPECT_GT(s.stats.tilesDrawn, 0u);
  EXPECT_EQ(expectNoHoles(s, *sc.renderer, topDown()), 0u);

  // Not even the top level fits: a one-line error from create().
  rs.debugMaxAtlasBytes = 1;
  Scene none;
  const std::string error = openScene(none, HF_SAMPLE_ARCHIVE, rs);
  EXPECT_FALSE(none.renderer);
  EXPECT_NE(error.find("GPU out of memory"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

TEST(RenderGl, HugeBudgetIsClampedToTheArchive) {
  REQUIRE_GL();
  hfr::RenderSettings rs;
  rs.atlasBudgetMiB = 1e6;  // hfview --budget 1000000
  Scene sc;
  ASSERT_EQ(openScene(sc, HF_SAMPLE_ARCHIVE, rs), "");
  EXPECT_TRUE(sc.renderer->notes().empty());
  const Shot s = render(*sc.renderer, oblique(), 8.0);
  const size_t tiles = sc.archive.tiles().size();
  EXPECT_GE(s.stats.atlasSlots, tiles);
  EXPECT_LT(s.stats.atlasSlots, tiles + 256) << "more than whole layers for the archive";
  EXPECT_TRUE(s.settled);
  EXPECT_GT(s.stats.tilesDrawn, 0u);
  expectNoHoles(s, *sc.renderer, oblique());
}

// The renderer's per-frame budget (RenderSettings::uploadsPerFrame, in tiles of samples) is
// scaled by the strategy's deliveryScale(): a strategy that sends tiles compressed gets its
// compression ratio times as many per frame (at most kMaxDeliveryScale times).
TEST(RenderGl, DeliveryBudgetIsScaledByTheStrategy) {
  REQUIRE_GL();
  struct ScaledCpu final : hfr::StreamStrategy {
    ScaledCpu(const hfa::ArchiveReader& archive, double s) : inner(archive, 1), scale(s) {}
    const char* name() const override { return "cpu, scaled"; }
    void request(const std::vector<size_t>& tiles) override { inner.request(tiles); }
    size_t deliver(hfr::TileSink& sink, size_t maxTiles) override {
      budgets.push_back(maxTiles);
      return inner.deliver(sink, maxTiles);
    }
    double deliveryScale() const override { return scale; }
    bool loadNow(size_t tile, hfr::TileSink& sink, std::string& error) override {
      return inner.loadNow(tile, sink, error);
    }
    size_t pending() const override { return inner.pending(); }
    hfr::StreamStats stats() const override { return inner.stats(); }
    hfr::CpuStreamStrategy inner;
    double scale;
    std::vector<size_t> budgets;
  };
  for (const auto& [scale, expected] : {std::pair{1.0, size_t(6)}, std::pair{2.5, size_t(15)},
                                        std::pair{100.0, size_t(48)}, std::pair{0.25, size_t(6)}}) {
    ScaledCpu strategy(gl().archive, scale);
    hfr::RenderSettings rs;
    rs.width = kW;
    rs.height = kH;
    rs.uploadsPerFrame = 6;
    std::string error;
    auto r = hfr::Renderer::create(gl().archive, strategy, rs, error);
    ASSERT_TRUE(r) << error;
    for (int i = 0; i < 3; ++i) r->frame(oblique(), nullptr);
    ASSERT_FALSE(strategy.budgets.empty());
    for (size_t b : strategy.budgets) EXPECT_EQ(b, expected) << "scale " << scale;
  }
  EXPECT_EQ(hfr::deliveryBudget(64, std::nan("")), 64u);
  EXPECT_EQ(hfr::deliveryBudget(size_t(1) << 30, 8.0), size_t(8) << 30);
  EXPECT_EQ(hfr::deliveryBudget(SIZE_MAX, 8.0), SIZE_MAX);
  EXPECT_EQ(hfr::deliveryBudget(size_t(1) << 62, 8.0), SIZE_MAX / 2);
}

// ---- The cpu strategy without GL: a fake sink ----

struct FakeSink final : hfr::TileSink {
  explicit FakeSink(size_t tiles, size_t slots) : pages(tiles, slots), data(tiles) {}
  bool reserve(size_t tile, hfr::AtlasSlot& slot) override {
    uint32_t s;
    long ev;
    if (!pages.allocate(tile, frame, s, ev)) return false;
    slot.layer = s;
    return true;
  }
  void uploadSamples(size_t tile, const hfr::AtlasSlot&, const uint16_t* samples) override {
    data[tile].assign(samples, samples + 129 * 129);
  }
  void commit(size_t, const hfr::AtlasSlot&) override {}
  bool residentSlot(size_t tile, hfr::AtlasSlot& slot) override {
    const long s = pages.slot(tile);
    if (s < 0) return false;
    slot.layer = uint32_t(s);
    return true;
  }
  void failed(size_t, const std::string&) override { ++failures; }
  hfr::PageTable pages;
  std::vector<std::vector<uint16_t>> data;
  uint64_t frame = 1;
  size_t failures = 0;
};

TEST(CpuStream, DeliversDecodedTilesWithoutBlocking) {
  hfa::ArchiveReader a;
  std::string error;
  if (!a.open(HF_SAMPLE_ARCHIVE, error)) GTEST_SKIP() << error;
  ASSERT_EQ(a.header().tileSize(), 129);
  auto s = hfr::makeStreamStrategy("cpu", a, error, 2);
  ASSERT_TRUE(s) << error;
  EXPECT_FALSE(hfr::makeStreamStrategy("cuda", a, error));
  // The GL-free factory makes cpu only; raw/cuda come from makeRenderStreamStrategy.
  EXPECT_NE(error.find("needs the GL renderer"), std::string::npos) << error;
  FakeSink sink(a.tiles().size(), 16);
  std::vector<size_t> want;
  for (size_t i = 0; i < 12; ++i) want.push_back(i);
  s->request(want);
  s->request(want);  // idempotent: no tile twice
  size_t got = 0;
  // Poll like the render thread does; the deadline only bounds a broken loader (a loaded CI
  // machine can take far longer than a fixed number of spins).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (got < want.size() && std::chrono::steady_clock::now() < deadline) {
    got += s->deliver(sink, 4);
    if (got < want.size()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(got, want.size());
  EXPECT_EQ(s->pending(), 0u);
  EXPECT_EQ(sink.failures, 0u);
  std::vector<uint16_t> ref(129 * 129);
  for (size_t t : want) {
    ASSERT_TRUE(a.decodeTile(t, ref.data(), error)) << error;
    EXPECT_EQ(sink.data[t], ref) << a.tileName(t);
  }
  EXPECT_GT(s->stats().bytesRead, 0u);
}


// The archive truncated under a running cpu strategy (issue 16): the tiles past the cut come
// back as failures (counted, drawn from ancestors by the renderer), the others as before; no
// SIGBUS from the loader threads.
TEST(CpuStream, ArchiveTruncatedWhileStreamingFailsTilesNotTheProcess) {
  hfa::ArchiveReader a;
  std::string error;
  const std::string copy = ::testing::TempDir() + "hf_truncated_" + std::to_string(::getpid()) + ".hfa";
  {
    std::ifstream in(HF_SAMPLE_ARCHIVE, std::ios::binary);
    if (!in) GTEST_SKIP() << "no sample archive";
    std::ofstream out(copy, std::ios::binary);
    out << in.rdbuf();
  }
  ASSERT_TRUE(a.open(copy, error)) << error;
  auto s = hfr::makeStreamStrategy("cpu", a, error, 2, true);
  ASSERT_TRUE(s) << error;
  ASSERT_EQ(::truncate(copy.c_str(), off_t(a.fileSize() / 3)), 0);
  FakeSink sink(a.tiles().size(), a.tiles().size());
  std::vector<size_t> want;
  for (size_t i = 0; i < a.tiles().size(); ++i) want.push_back(i);
  s->request(want);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (s->pending() > 0 && std::chrono::steady_clock::now() < deadline) {
    s->deliver(sink, 16);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(s->pending(), 0u);
  EXPECT_GT(sink.failures, 0u);
  EXPECT_GT(s->stats().delivered, 0u);
  EXPECT_EQ(s->stats().failed, sink.failures);
  std::remove(copy.c_str());
}

// Progressive cpu strategy: every tile is first delivered lossy (the layer 1 + 2 decode, fewer
// bytes read than the payloads), then refined in place into the same slot: at the end the
// sink holds the exact samples, nothing is lossy or pending, and the bytes read add up to the
// payloads once. A tile evicted before its refinement is not refined (and not lossy).
TEST(CpuStream, ProgressiveDeliversLossyThenRefinesInPlace) {
  hfa::ArchiveReader a;
  std::string error;
  if (!a.open(HF_SAMPLE_ARCHIVE, error)) GTEST_SKIP() << error;
  auto s = hfr::makeStreamStrategy("cpu", a, error, 2, true);
  ASSERT_TRUE(s) << error;
  FakeSink sink(a.tiles().size(), 64);
  std::vector<size_t> want;
  uint64_t payloads = 0;
  for (size_t i = 0; i < 24 && i < a.tiles().size(); ++i) {
    want.push_back(i);
    payloads += a.tiles()[i].size;
  }
  s->request(want);
  std::vector<uint8_t> sawLossy(a.tiles().size(), 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while ((s->pending() > 0) && std::chrono::steady_clock::now() < deadline) {
    s->deliver(sink, 4);
    for (size_t t : want) sawLossy[t] |= s->lossy(t);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(s->pending(), 0u);
  EXPECT_EQ(sink.failures, 0u);
  std::vector<uint16_t> ref(129 * 129);
  size_t lossyTiles = 0;
  for (size_t t : want) {
    ASSERT_TRUE(a.decodeTile(t, ref.data(), error)) << error;
    EXPECT_EQ(sink.data[t], ref) << a.tileName(t) << " not refined to exact";
    EXPECT_FALSE(s->lossy(t));
    lossyTiles += sawLossy[t];
  }
  const hfr::StreamStats st = s->stats();
  EXPECT_GT(st.deliveredLossy, 0u) << "the sample terrain has layered tiles";
  EXPECT_EQ(st.refined, st.deliveredLossy);
  EXPECT_EQ(st.lossyResident, 0u);
  EXPECT_EQ(st.delivered, want.size());
  EXPECT_EQ(st.bytesRead, payloads) << "each payload read once: the prefix, then the rest";
  EXPECT_GT(lossyTiles, 0u);

  // Evicted before refinement: the refinement is dropped, the tile is not lossy any more.
  auto s2 = hfr::makeStreamStrategy("cpu", a, error, 1, true);
  FakeSink small(a.tiles().size(), 64);
  size_t victim = a.tiles().size();
  for (size_t t = 0; t < a.tiles().size() && victim == a.tiles().size(); ++t) {
    bool exact = true;
    uint32_t read = 0;
    if (a.decodeTileLossy(t, ref.data(), exact, read, error) && !exact) victim = t;
  }
  ASSERT_LT(victim, a.tiles().size());
  s2->request({victim});
  const auto d2 = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!s2->lossy(victim) && std::chrono::steady_clock::now() < d2) {
    s2->deliver(small, 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(s2->lossy(victim));
  small.pages.release(victim);  // evicted
  while (s2->pending() > 0 && std::chrono::steady_clock::now() < d2) {
    s2->deliver(small, 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(s2->pending(), 0u);
  EXPECT_FALSE(s2->lossy(victim));
  EXPECT_EQ(s2->stats().refined, 0u);
}

}  // namespace
