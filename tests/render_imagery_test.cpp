// render_imagery_test.cpp - imagery draped on the terrain (issue 11), headless (llvmpipe in CI):
// the Puget Sound pair (ps_height_1k.png packed by hfpack, ps_texture_1k.png added as imagery by
// tests/imagery_archive.h), seen from straight above with the imagery view:
// - the rendered colours follow the source texture (per-region mean colours, correlation >= 0.9
//   per channel), with the BC1 atlas (cpu) and the RGBA8 atlas (raw);
// - no seams at imagery tile borders: colour steps across tile borders are no larger than
//   inside tiles;
// - a corrupt imagery tile is counted and drawn from its ancestor (no hole, no magenta);
// - finer imagery-only levels are used when the camera is close;
// - bc1 tiles (the stored BC1 mip chain): a BC1 atlas gets exactly the stored blocks (the same
//   blocks the CPU strategy makes from the same texels), an RGBA8 atlas their decoding; corrupt
//   bc1 archives give one-line errors, never a crash; they render like the others.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <thread>

#include <unistd.h>

#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#include <stb/stb_image.h>

#include "gl_leak_check.h"
#include "archive/archive.h"
#include "imagery_archive.h"
#include "render/gl/renderer.h"
#include "render/stream/colour.h"
#include "test_files.h"

extern "C" int dlclose(void*) { return 0; }  // see render_gl_test.cpp (LeakSanitizer + Mesa)

namespace {

namespace fs = std::filesystem;
constexpr int kW = 320, kH = 320;

fs::path scratch() {
  static const fs::path d = [] {
    return hf_test::makeFreshDir("hf_render_imagery");
  }();
  return d;
}

struct Fixture {
  std::string skip, heights, jpeg, raw, finer, bc1;
  hftest::RgbaImage texture;
};

const Fixture& fixture() {
  static Fixture f = [] {
    Fixture x;
    const fs::path dem = fs::path(HF_SHARED_DEM_DIR) / "ps_height_1k.png";
    // $HF_TEST_PS_TEXTURE: the texture elsewhere (the GPU machine has no ../shared).
    const char* texEnv = std::getenv("HF_TEST_PS_TEXTURE");
    const fs::path tex = texEnv && *texEnv ? fs::path(texEnv)
                                           : fs::path(HF_SHARED_DEM_DIR) / ".." / "imagery" / "ps_texture_1k.png";
    // $HF_TEST_PS_ARCHIVE: the heights already packed (hfpack's defaults), for builds without
    // GDAL (the GPU machine's); else hfpack packs them here.
    const char* packed = std::getenv("HF_TEST_PS_ARCHIVE");
#ifndef HFPACK_BINARY
    if (!packed || !*packed) {
      x.skip = "built without hfpack (GDAL) and no $HF_TEST_PS_ARCHIVE";
      return x;
    }
#endif
    if (!fs::exists(tex) || (!(packed && *packed) && !fs::exists(dem))) {
      x.skip = "no Puget Sound pair in " + std::string(HF_SHARED_DEM_DIR) + "/..";
      return x;
    }
    int n = 0;
    unsigned char* p = stbi_load(tex.c_str(), &x.texture.w, &x.texture.h, &n, 4);
    if (!p) {
      x.skip = "cannot read " + tex.string();
      return x;
    }
    x.texture.rgba.assign(p, p + size_t(x.texture.w) * size_t(x.texture.h) * 4);
    stbi_image_free(p);
    if (packed && *packed) {
      x.heights = packed;
    } else {
#ifdef HFPACK_BINARY
      x.heights = (scratch() / "ps.hfa").string();
      const std::string cmd = std::string("GDAL_PAM_ENABLED=NO '") + HFPACK_BINARY + "' '" + dem.string() +
                              "' -o '" + x.heights + "' -q >/dev/null 2>&1";
      if (std::system(cmd.c_str()) != 0) {
        x.skip = "hfpack failed on " + dem.string();
        return x;
      }
#endif
    }
    std::string error;
    x.jpeg = (scratch() / "ps_jpeg.hfa").string();
    x.raw = (scratch() / "ps_raw.hfa").string();
    x.finer = (scratch() / "ps_finer.hfa").string();
    x.bc1 = (scratch() / "ps_bc1.hfa").string();
    if (!hftest::addImagery(x.heights, x.jpeg, x.texture, hfa::ImageryCodec::Jpeg, 90, 0, error) ||
        !hftest::addImagery(x.heights, x.raw, x.texture, hfa::ImageryCodec::Raw, 0, 0, error) ||
        !hftest::addImagery(x.heights, x.bc1, x.texture, hfa::ImageryCodec::Bc1, 0, 0, error, himg::Bc1Mode::Fast) ||
        !hftest::addImagery(x.heights, x.finer, x.texture, hfa::ImageryCodec::Jpeg, 90, 1, error))
      x.skip = "adding imagery: " + error;
    return x;
  }();
  return f;
}

struct View {
  std::unique_ptr<hfr::GlContext> context;
  hfa::ArchiveReader archive;
  std::unique_ptr<hfr::StreamStrategy> strategy;
  std::unique_ptr<hfr::Renderer> renderer;
  hfr::Camera cam;
  std::vector<uint8_t> px;
  hfr::FrameStats st;
  uint64_t colourCacheHits = 0, colourBytesToDevice = 0;  // summed over the streaming steps
};

hfr::GlContext* context(std::string& skip) {
  static std::string error;
  static std::unique_ptr<hfr::GlContext> c = hfr::createHeadlessContext(error);
  if (!c) skip = "no headless GL: " + error;
  return c.get();
}

// Renders `path` from straight above its centre (imagery view, no fog, heights flattened so
// that every pixel shows the texel straight below it) until settled.
// vramCacheMiB >= 0: the cuda imagery strategy's VRAM cache of that size (0: the whole
// imagery, loaded before the first step).
bool render(const std::string& path, const std::string& imageryStream, View& v, std::string& error,
            double heightAbove = 1.15, double tau = 1.0, double vramCacheMiB = -1) {
  if (!v.archive.open(path, error)) return false;
  v.strategy = hfr::makeStreamStrategy("cpu", v.archive, error);
  if (!v.strategy) return false;
  hfr::RenderSettings rs;
  rs.width = kW;
  rs.height = kH;
  rs.tau = tau;
  rs.fog = false;
  rs.view = hfr::View::Imagery;
  rs.imageryStream = imageryStream;
  rs.verticalExaggeration = 1e-4;
  rs.background = {1.0f, 0.0f, 1.0f};
  rs.prefetch = false;
  rs.imageryVramCache = vramCacheMiB >= 0;
  rs.imageryCacheMiB = std::max(0.0, vramCacheMiB);
  v.renderer = hfr::Renderer::create(v.archive, *v.strategy, rs, error);
  if (!v.renderer) return false;
  v.renderer->finishPrefetch();
  double minZ, maxZ, ex, ey;
  v.renderer->terrainBox(minZ, maxZ, ex, ey);
  v.cam.x = ex / 2;
  v.cam.y = ey / 2;
  v.cam.z = maxZ + heightAbove * std::max(ex, ey);  // 60 degree vertical field of view
  v.cam.yaw = 90;
  v.cam.pitch = -89.99;
  for (int i = 0; i < 4000 && !v.renderer->settled(); ++i) {
    hfr::FrameStats fs;
    v.renderer->stream(v.cam, &fs);
    v.colourCacheHits += fs.colourCacheHits;
    v.colourBytesToDevice += fs.colourBytesToDevice;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  v.renderer->frame(v.cam, &v.st);
  v.px = v.renderer->readPixels();
  return true;
}

// The texture's colour (box-averaged over `r` texels) at world (x, y).
std::array<double, 3> textureAt(const hfa::Header& h, const hftest::RgbaImage& t, double x, double y, int r) {
  const double X = x / h.spacingX, Y = (double(h.height - 1) * h.spacingY - y) / h.spacingY;
  const int u = int(X / double(h.width - 1) * t.w), v = int(Y / double(h.height - 1) * t.h);
  std::array<double, 3> c{0, 0, 0};
  int n = 0;
  for (int dy = -r; dy <= r; ++dy)
    for (int dx = -r; dx <= r; ++dx) {
      const int uu = std::clamp(u + dx, 0, t.w - 1), vv = std::clamp(v + dy, 0, t.h - 1);
      for (int k = 0; k < 3; ++k) c[size_t(k)] += t.rgba[(size_t(vv) * size_t(t.w) + size_t(uu)) * 4 + size_t(k)];
      ++n;
    }
  for (double& v2 : c) v2 /= n;
  return c;
}

double correlation(const std::vector<double>& a, const std::vector<double>& b) {
  double ma = 0, mb = 0;
  for (size_t i = 0; i < a.size(); ++i) ma += a[i], mb += b[i];
  ma /= double(a.size());
  mb /= double(b.size());
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    sab += (a[i] - ma) * (b[i] - mb);
    saa += (a[i] - ma) * (a[i] - ma);
    sbb += (b[i] - mb) * (b[i] - mb);
  }
  return sab / std::sqrt(std::max(1e-12, saa * sbb));
}

// Per 20 x 20 pixel region: the rendered mean colour and the texture's mean colour at the
// ground points under the same pixels (Renderer::pick). Correlation per channel.
void expectFollowsTexture(View& v, const char* what) {
  const Fixture& f = fixture();
  std::vector<double> got[3], want[3];
  size_t terrain = 0;
  for (int ry = 0; ry < kH; ry += 20)
    for (int rx = 0; rx < kW; rx += 20) {
      std::array<double, 3> g{0, 0, 0}, w{0, 0, 0};
      int n = 0;
      for (int y = ry + 2; y < ry + 20; y += 4)
        for (int x = rx + 2; x < rx + 20; x += 4) {
          std::array<double, 3> world;
          if (!v.renderer->pick(x + 0.5, y + 0.5, world)) continue;
          const uint8_t* p = &v.px[(size_t(y) * kW + size_t(x)) * 4];
          const auto t = textureAt(v.archive.header(), f.texture, world[0], world[1], 1);
          for (int k = 0; k < 3; ++k) {
            g[size_t(k)] += p[k];
            w[size_t(k)] += t[size_t(k)];
          }
          ++n;
        }
      if (n < 16) continue;  // mostly background
      ++terrain;
      for (int k = 0; k < 3; ++k) {
        got[k].push_back(g[size_t(k)] / n);
        want[k].push_back(w[size_t(k)] / n);
      }
    }
  ASSERT_GT(terrain, 150u) << what;
  for (int k = 0; k < 3; ++k) {
    const double c = correlation(got[k], want[k]);
    std::printf("%s: channel %d correlation %.4f over %zu regions\n", what, k, c, terrain);
    EXPECT_GE(c, 0.9) << what << " channel " << k;
  }
}

#define REQUIRE_FIXTURE()                                     \
  do {                                                        \
    std::string skip_;                                        \
    if (!fixture().skip.empty()) GTEST_SKIP() << fixture().skip; \
    if (!context(skip_)) GTEST_SKIP() << skip_;               \
  } while (0)

TEST(RenderImagery, ColoursFollowTheTextureBc1AndRgba8) {
  REQUIRE_FIXTURE();
  for (const char* stream : {"cpu", "raw"}) {
    View v;
    std::string error;
    ASSERT_TRUE(render(fixture().jpeg, stream, v, error)) << error;
    ASSERT_TRUE(v.renderer->hasImagery());
    EXPECT_EQ(v.renderer->imageryStrategy(), stream);
    EXPECT_TRUE(v.renderer->settled());
    EXPECT_EQ(v.st.colourMissing, 0u);
    EXPECT_GT(v.st.colourResident, 0u);
    if (const char* dir = std::getenv("HF_TEST_SHOTS")) {
      std::string e2;
      hfr::writePng(std::string(dir) + "/ps_imagery_" + stream + ".png", kW, kH, v.px, e2);
    }
    expectFollowsTexture(v, stream);
  }
}

// The cuda imagery strategy (the GPU machine; skipped elsewhere) with its VRAM cache of BC1
// chains: the whole imagery loaded first (then every tile the view wants is copied from the
// pool: hits, not one byte over PCIe), and a pool of two chains (misses and evictions). Both
// must draw exactly the image of the cuda strategy without a cache.
TEST(RenderImagery, CudaVramCacheDrawsTheSameImage) {
  REQUIRE_FIXTURE();
  View plain;
  std::string error;
  ASSERT_TRUE(render(fixture().jpeg, "cuda", plain, error)) << error;
  if (plain.renderer->imageryStrategy() != "cuda")
    GTEST_SKIP() << "no cuda imagery here (it fell back to " << plain.renderer->imageryStrategy() << ")";
  ASSERT_TRUE(plain.renderer->settled());
  EXPECT_EQ(plain.colourCacheHits, 0u);
  EXPECT_GT(plain.colourBytesToDevice, 0u);
  for (double mib : {0.0, 0.09}) {
    SCOPED_TRACE(mib);
    View v;
    ASSERT_TRUE(render(fixture().jpeg, "cuda", v, error, 1.15, 1.0, mib)) << error;
    ASSERT_EQ(v.renderer->imageryStrategy(), "cuda");
    EXPECT_TRUE(v.renderer->settled());
    EXPECT_EQ(v.st.colourMissing, 0u);
    if (mib == 0) {
      EXPECT_GT(v.colourCacheHits, 0u);
      EXPECT_EQ(v.colourBytesToDevice, 0u) << "imagery crossed PCIe although the whole of it was in video memory";
    } else {
      EXPECT_LE(v.st.colourCacheBytes, 2u * 44u * 1024u);
    }
    ASSERT_EQ(v.px.size(), plain.px.size());
    size_t differ = 0;
    for (size_t i = 0; i < v.px.size(); ++i) differ += v.px[i] != plain.px[i];
    EXPECT_EQ(differ, 0u) << "bytes of the image differ from the cuda strategy's without a cache";
  }
}

TEST(RenderImagery, RawImageryTilesToo) {
  REQUIRE_FIXTURE();
  View v;
  std::string error;
  ASSERT_TRUE(render(fixture().raw, "cpu", v, error)) << error;
  expectFollowsTexture(v, "raw tiles, BC1 atlas");
}

TEST(RenderImagery, Bc1TilesRenderWithBothAtlases) {
  REQUIRE_FIXTURE();
  for (const char* stream : {"cpu", "raw"}) {
    View v;
    std::string error;
    ASSERT_TRUE(render(fixture().bc1, stream, v, error)) << error;
    EXPECT_TRUE(v.renderer->settled());
    EXPECT_EQ(v.st.colourMissing, 0u);
    EXPECT_EQ(v.st.colourFailed, 0u);
    expectFollowsTexture(v, (std::string("bc1 tiles, ") + stream).c_str());
  }
}

// GL-free: ColourStrategy::makeTile on bc1 tiles.
TEST(RenderImagery, Bc1TileUploadsTheStoredChain) {
  if (!fixture().skip.empty()) GTEST_SKIP() << fixture().skip;
  hfa::ArchiveReader bc1, raw;
  std::string error;
  ASSERT_TRUE(bc1.open(fixture().bc1, error)) << error;
  ASSERT_TRUE(raw.open(fixture().raw, error)) << error;
  ASSERT_EQ(bc1.imagery().codec, hfa::ImageryCodec::Bc1);
  ASSERT_EQ(bc1.imageryTiles().size(), raw.imageryTiles().size());
  const int T = bc1.imagery().tileSize;
  himg::JpegTileDecoder decoder;  // no tables: a bc1 tile never touches it
  for (size_t t = 0; t < bc1.imageryTiles().size(); t += 7) {
    const uint8_t* data;
    size_t size;
    ASSERT_TRUE(bc1.imageryPayload(t, data, size, error)) << error;
    ASSERT_EQ(size, 43648u);
    // BC1 atlas: the stored levels, byte for byte, as separate mips.
    hfr::ColourTile got;
    uint64_t read = 0;
    ASSERT_TRUE(hfr::ColourStrategy::makeTile(bc1, t, hfr::ColourFormat::Bc1, himg::Bc1Mode::Quality, decoder, got,
                                              read)) << got.error;
    EXPECT_EQ(read, size);
    ASSERT_EQ(got.mips.size(), size_t(himg::kTileMipLevels));
    std::vector<uint8_t> joined;
    for (int m = 0; m < himg::kTileMipLevels; ++m) {
      EXPECT_EQ(got.mips[size_t(m)].size(), size_t(T >> m) * size_t(T >> m) / 2) << m;
      joined.insert(joined.end(), got.mips[size_t(m)].begin(), got.mips[size_t(m)].end());
    }
    EXPECT_TRUE(std::equal(joined.begin(), joined.end(), data, data + size)) << "tile " << t;
    // ... which is what the CPU strategy makes from the same texels (raw twin, fast encoder).
    hfr::ColourTile cpu;
    ASSERT_TRUE(hfr::ColourStrategy::makeTile(raw, t, hfr::ColourFormat::Bc1, himg::Bc1Mode::Fast, decoder, cpu,
                                              read)) << cpu.error;
    EXPECT_EQ(cpu.mips, got.mips) << "tile " << t;
    // RGBA8 atlas: every level decoded.
    hfr::ColourTile rgba;
    read = 0;
    ASSERT_TRUE(hfr::ColourStrategy::makeTile(bc1, t, hfr::ColourFormat::Rgba8, himg::Bc1Mode::Fast, decoder, rgba,
                                              read)) << rgba.error;
    EXPECT_EQ(read, size);
    ASSERT_EQ(rgba.mips.size(), got.mips.size());
    for (size_t m = 0; m < got.mips.size(); ++m) {
      const int s2 = T >> m;
      std::vector<uint8_t> want(size_t(s2) * size_t(s2) * 4);
      himg::decodeBc1(got.mips[m].data(), s2, s2, want.data());
      EXPECT_EQ(rgba.mips[m], want) << "tile " << t << " level " << m;
    }
  }
}

// Fuzz-style: bytes of a bc1 archive flipped at random (index, payloads); open and every tile's
// makeTile either succeed or give one line, never crash (run under ASan in CI).
TEST(RenderImagery, CorruptBc1ArchivesNeverCrash) {
  if (!fixture().skip.empty()) GTEST_SKIP() << fixture().skip;
  std::ifstream in(fixture().bc1, std::ios::binary);
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  uint64_t imageryStart = 0;
  {
    hfa::ArchiveReader r;
    std::string error;
    ASSERT_TRUE(r.open(fixture().bc1, error)) << error;
    imageryStart = bytes[192] | uint64_t(bytes[193]) << 8 | uint64_t(bytes[194]) << 16 | uint64_t(bytes[195]) << 24;
    ASSERT_GT(imageryStart, 0u);
  }
  const std::string bad = (scratch() / "ps_bc1_bad.hfa").string();
  std::mt19937 rng(11);
  size_t opened = 0, failedTiles = 0;
  for (int trial = 0; trial < 40; ++trial) {
    std::vector<uint8_t> b = bytes;
    // Half the trials hit the imagery index, half anywhere (mostly payloads).
    const uint64_t lo = trial % 2 ? imageryStart : 0, hi = trial % 2 ? imageryStart + 64 + 32 * 90 : b.size();
    for (int f = 0; f < 1 + trial % 3; ++f)
      b[size_t(lo + rng() % (std::min<uint64_t>(hi, b.size()) - lo))] ^= uint8_t(1u << (rng() % 8));
    std::ofstream(bad, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
    hfa::ArchiveReader r;
    std::string error;
    if (!r.open(bad, error)) {
      EXPECT_FALSE(error.empty());
      EXPECT_EQ(error.find('\n'), std::string::npos) << error;
      continue;
    }
    ++opened;
    himg::JpegTileDecoder decoder;
    for (size_t t = 0; t < r.imageryTiles().size(); ++t)
      for (hfr::ColourFormat format : {hfr::ColourFormat::Bc1, hfr::ColourFormat::Rgba8}) {
        hfr::ColourTile tile;
        uint64_t read = 0;
        if (!hfr::ColourStrategy::makeTile(r, t, format, himg::Bc1Mode::Fast, decoder, tile, read)) {
          ++failedTiles;
          EXPECT_NE(tile.error.find("imagery tile (k"), std::string::npos) << tile.error;
          EXPECT_EQ(tile.error.find('\n'), std::string::npos) << tile.error;
        } else {
          EXPECT_EQ(tile.mips.size(), size_t(himg::kTileMipLevels));
        }
      }
  }
  EXPECT_GT(opened, 0u);
  EXPECT_GT(failedTiles, 0u);  // a flipped payload byte is a checksum mismatch naming the tile
}

// Colour steps between neighbouring pixels: the largest mean step along pixel columns that
// cross an imagery tile border must not exceed the largest mean step of columns inside tiles
// by much (a seam is a line of large steps along the border).
TEST(RenderImagery, NoSeamsAtTileBorders) {
  REQUIRE_FIXTURE();
  View v;
  std::string error;
  ASSERT_TRUE(render(fixture().jpeg, "cpu", v, error, 0.6)) << error;  // close: level-0 tiles
  const hfa::Header& h = v.archive.header();
  const double tileWorld = double(1 << h.tileLog) * h.spacingX;
  // For each screen column x, the mean |step| to column x + 1 over the rows, and whether a
  // tile border (world x multiple of tileWorld) lies between the two columns.
  std::vector<double> border, inside;
  for (int x = 1; x + 2 < kW; ++x) {
    std::array<double, 3> a, b;
    const int y = kH / 2;
    if (!v.renderer->pick(x + 0.5, y + 0.5, a) || !v.renderer->pick(x + 1.5, y + 0.5, b)) continue;
    double step = 0;
    int n = 0;
    for (int yy = 10; yy < kH - 10; ++yy) {
      const uint8_t* p = &v.px[(size_t(yy) * kW + size_t(x)) * 4];
      const uint8_t* q = p + 4;
      if (p[0] == 255 && p[1] == 0 && p[2] == 255) continue;
      for (int k = 0; k < 3; ++k) step += std::abs(int(p[k]) - int(q[k]));
      ++n;
    }
    if (n == 0) continue;
    const bool crosses = std::floor(a[0] / tileWorld) != std::floor(b[0] / tileWorld);
    (crosses ? border : inside).push_back(step / n);
  }
  ASSERT_FALSE(border.empty());
  ASSERT_GT(inside.size(), 50u);
  std::sort(inside.begin(), inside.end());
  const double p95 = inside[size_t(double(inside.size()) * 0.95)];
  for (double s : border) EXPECT_LE(s, p95 * 1.25 + 1.0) << "a seam at a tile border";
}

TEST(RenderImagery, FinerImageryLevelsAndCorruptTiles) {
  REQUIRE_FIXTURE();
  // A copy with one corrupt level-0 imagery payload.
  const std::string bad = (scratch() / "ps_bad.hfa").string();
  fs::copy_file(fixture().finer, bad, fs::copy_options::overwrite_existing);
  {
    hfa::ArchiveReader r;
    std::string error;
    ASSERT_TRUE(r.open(bad, error)) << error;
    EXPECT_EQ(r.imagery().finerLevels, 1);
    // The level-0 tile under the camera (straight above the centre).
    const uint32_t nx = hfa::imageryTilesX(r.header(), r.imagery(), 0);
    const uint32_t ny = hfa::imageryTilesY(r.header(), r.imagery(), 0);
    const long centre = r.findImagery(0, nx / 2, ny / 2);
    ASSERT_GE(centre, 0);
    const hfa::ImageryEntry e = r.imageryTiles()[size_t(centre)];
    r.close();
    std::fstream f(bad, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(std::streamoff(e.offset + e.size / 2));
    f.put(char(0x5a));
  }
  View v;
  std::string error;
  ASSERT_TRUE(render(bad, "cpu", v, error, 0.04)) << error;  // close: the finer imagery level wanted
  EXPECT_GE(v.st.colourFailed, 1u);
  EXPECT_TRUE(v.renderer->settled());
  size_t magenta = 0;
  for (size_t i = 0; i < v.px.size(); i += 4) magenta += v.px[i] == 255 && v.px[i + 1] == 0 && v.px[i + 2] == 255;
  EXPECT_EQ(magenta, 0u);  // straight above, inside the extent: terrain everywhere
}

// A version-1 archive (heights only, the format before imagery) still renders: the imagery view
// asked for shades as `shaded`, nothing is missing, the terrain fills the view.
TEST(RenderImagery, VersionOneArchiveStillRenders) {
  REQUIRE_FIXTURE();
  const std::string v1 = (scratch() / "ps_v1.hfa").string();
  {
    std::ifstream in(fixture().heights, std::ios::binary);
    std::vector<uint8_t> b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_GT(b.size(), 256u);
    b[4] = 1;  // a version-1 file is byte for byte a version-2 file without imagery
    const uint32_t crc = hfa::crc32(b.data(), 252);
    for (int i = 0; i < 4; ++i) b[size_t(252 + i)] = uint8_t(crc >> (8 * i));
    std::ofstream(v1, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
  }
  View v;
  std::string error;
  ASSERT_TRUE(render(v1, "cpu", v, error)) << error;
  EXPECT_FALSE(v.renderer->hasImagery());
  EXPECT_TRUE(v.renderer->settled());
  EXPECT_EQ(v.st.tilesMissing, 0u);
  size_t terrain = 0;
  for (size_t i = 0; i < v.px.size(); i += 4) terrain += !(v.px[i] == 255 && v.px[i + 1] == 0 && v.px[i + 2] == 255);
  EXPECT_GT(terrain, v.px.size() / 4 / 2);
}

}  // namespace
