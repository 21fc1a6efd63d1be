// render_ocean_test.cpp - the animated ocean in the renderer (issue 14; render/gl/ocean_gl.h),
// headless on EGL (llvmpipe in CI) over the built-in sample terrain (which has a sea at 0 m):
// water is drawn where the terrain is at or below the level, animated and deterministic per
// time; no water at the level leaves the image exactly as without the ocean; raising the level
// floods more; bad parameters are refused with the ocean kept. And the shore distance transform
// (GL-free).
#include <glad/gl.h>
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <thread>

#include "archive/archive.h"
#include "gl_leak_check.h"
#include "render/gl/ocean_gl.h"
#include "render/gl/renderer.h"
#include "render/gl/shader.h"
#include "render/ocean/ocean.h"
#include "test_files.h"

extern "C" int dlclose(void*) { return 0; }  // see render_gl_test.cpp (LSan + Mesa)

namespace {

constexpr int kW = 240, kH = 160;

struct Gl {
  std::unique_ptr<hfr::GlContext> context;
  hfa::ArchiveReader archive;
  std::string skip;
};

Gl& gl() {
  static Gl g;
  static const bool done = [] {
    std::string error;
    if (!g.archive.open(hf_test::samplePath(false), error))
      g.skip = "sample archive: " + error;
    else if (!(g.context = hfr::createHeadlessContext(error))) g.skip = "no headless GL: " + error;
    return true;
  }();
  (void)done;
  return g;
}

#define REQUIRE_GL()                                 \
  do {                                               \
    if (!gl().context) GTEST_SKIP() << gl().skip;    \
  } while (0)

struct View {
  std::unique_ptr<hfr::StreamStrategy> strategy;
  std::unique_ptr<hfr::Renderer> renderer;
};

View make(bool ocean, double level = 0, const std::string& device = "") {
  View v;
  std::string error;
  v.strategy = hfr::makeStreamStrategy("cpu", gl().archive, error);
  hfr::RenderSettings rs;
  rs.width = kW;
  rs.height = kH;
  rs.tau = 2;
  rs.ocean = ocean;
  rs.waterLevel = level;
  rs.oceanSynchronous = true;
  rs.oceanDevice = device;
  v.renderer = hfr::Renderer::create(gl().archive, *v.strategy, rs, error);
  EXPECT_TRUE(v.renderer) << error;
  return v;
}

std::vector<uint8_t> shoot(hfr::Renderer& r, const hfr::Camera& cam, double seconds) {
  for (int i = 0; i < 4000 && !(i > 0 && r.settled()); ++i) {
    r.stream(cam);
    if (i > 100) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  r.setTime(seconds);
  r.frame(cam);
  return r.readPixels();
}

double differing(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  size_t n = 0;
  for (size_t i = 0; i + 3 < a.size(); i += 4)
    n += a[i] != b[i] || a[i + 1] != b[i + 1] || a[i + 2] != b[i + 2];
  return double(n) / double(a.size() / 4);
}

// Low over the sample terrain's sea, looking north-east towards a coast.
hfr::Camera seaCamera() {
  hfr::Camera c;
  c.x = 46000;
  c.y = 18000;
  c.z = 60;
  c.yaw = 30;
  c.pitch = -10;
  return c;
}

TEST(RenderOcean, WaterIsAnimatedAndTheSameForTheSameTime) {
  REQUIRE_GL();
  View on = make(true), off = make(false);
  ASSERT_TRUE(on.renderer && off.renderer);
  EXPECT_TRUE(on.renderer->hasOcean());
  const auto a = shoot(*on.renderer, seaCamera(), 3.0);
  const auto b = shoot(*on.renderer, seaCamera(), 3.0);
  const auto c = shoot(*on.renderer, seaCamera(), 3.5);
  const auto flat = shoot(*off.renderer, seaCamera(), 3.0);
  EXPECT_EQ(differing(a, b), 0.0);      // deterministic per time
  EXPECT_GT(differing(a, c), 0.2);      // the waves move
  EXPECT_GT(differing(a, flat), 0.4);   // most of this view is sea
  size_t black = 0;                     // NaN in the shader shows as black
  for (size_t i = 0; i + 3 < a.size(); i += 4) black += a[i] == 0 && a[i + 1] == 0 && a[i + 2] == 0;
  EXPECT_EQ(black, 0u);
}

// The default fields (GL compute) draw the sea the CPU worker's fields draw: the same image up
// to float rounding of a few pixels (a wrong field would change most of the sea).
TEST(RenderOcean, GlComputeFieldsDrawTheCpuWorkersSea) {
  REQUIRE_GL();
  View glView = make(true), cpuView = make(true, 0, "cpu");
  ASSERT_TRUE(glView.renderer && cpuView.renderer);
  EXPECT_EQ(glView.renderer->oceanDevice(), "gl");
  EXPECT_EQ(cpuView.renderer->oceanDevice(), "cpu");
  for (double t : {0.0, 3.0, 600.5}) {
    const auto a = shoot(*glView.renderer, seaCamera(), t);
    const auto b = shoot(*cpuView.renderer, seaCamera(), t);
    EXPECT_LT(differing(a, b), 0.002) << "t " << t;
  }
}

TEST(RenderOcean, NoWaterAtTheLevelLeavesTheImageAlone) {
  REQUIRE_GL();
  View dry = make(true, -1000), off = make(false);
  ASSERT_TRUE(dry.renderer && off.renderer);
  EXPECT_FALSE(dry.renderer->hasOcean());
  bool noted = false;
  for (const std::string& n : dry.renderer->notes()) noted |= n.find("no water") != std::string::npos;
  EXPECT_TRUE(noted);
  EXPECT_EQ(differing(shoot(*dry.renderer, seaCamera(), 1), shoot(*off.renderer, seaCamera(), 1)), 0.0);
}

TEST(RenderOcean, RaisingTheLevelFloodsMoreAndBadParametersAreRefused) {
  REQUIRE_GL();
  View off = make(false), sea = make(true, 0), flood = make(true, 150);
  ASSERT_TRUE(off.renderer && sea.renderer && flood.renderer);
  hfr::Camera top = off.renderer->defaultCamera();
  const auto base = shoot(*off.renderer, top, 2);
  const double atSea = differing(shoot(*sea.renderer, top, 2), base);
  const double flooded = differing(shoot(*flood.renderer, top, 2), base);
  EXPECT_GT(atSea, 0.02);
  EXPECT_GT(flooded, atSea + 0.02);
  // A bad wind is refused at once; the ocean stays.
  hfr::Renderer& r = *sea.renderer;
  r.settings().oceanParams.windSpeed = 100;
  std::string error;
  EXPECT_FALSE(r.updateOcean(error));
  EXPECT_NE(error.find("wind speed"), std::string::npos) << error;
  EXPECT_TRUE(r.hasOcean());
  r.settings().oceanParams.windSpeed = 14;
  EXPECT_TRUE(r.updateOcean(error)) << error;
  r.settings().ocean = false;
  EXPECT_TRUE(r.updateOcean(error)) << error;
  EXPECT_FALSE(r.hasOcean());
  EXPECT_EQ(differing(shoot(r, top, 2), base), 0.0);  // off again: the terrain as before
}

// The water writes no depth (it is drawn where the terrain flagged water, Renderer::drawOcean):
// picking a pixel where it shows meets the water plane, one where land shows meets the land.
TEST(RenderOcean, PickingMeetsTheWaterWhereItShowsAndTheLandElsewhere) {
  REQUIRE_GL();
  constexpr double kLevel = 150;
  View off = make(false), flood = make(true, kLevel);
  ASSERT_TRUE(off.renderer && flood.renderer);
  const hfr::Camera top = off.renderer->defaultCamera();
  shoot(*off.renderer, top, 2);
  shoot(*flood.renderer, top, 2);
  size_t water = 0, land = 0, seabed = 0;
  for (int y = 2; y < kH; y += 6)
    for (int x = 2; x < kW; x += 6) {
      std::array<double, 3> ground{}, picked{};
      const bool hitGround = off.renderer->pick(x + 0.5, y + 0.5, ground);
      const bool hit = flood.renderer->pick(x + 0.5, y + 0.5, picked);
      if (!hitGround) continue;  // beside the terrain
      ASSERT_TRUE(hit) << x << "," << y;
      if (ground[2] < kLevel - 1) {  // under water: the surface, on this pixel's ray
        if (picked == ground) {
          // Unless the ray meets the water beside the DEM's extent, where there is none (it
          // entered the flooded DEM through its side, low over an edge): then the seabed shows.
          ++seabed;
          continue;
        }
        ++water;
        EXPECT_EQ(picked[2], kLevel) << x << "," << y;
        double px = 0, py = 0;
        ASSERT_TRUE(flood.renderer->project(picked, px, py));
        EXPECT_NEAR(px, x + 0.5, 0.01);
        EXPECT_NEAR(py, y + 0.5, 0.01);
      } else if (ground[2] > kLevel + 1) {  // land: the land
        ++land;
        for (int k = 0; k < 3; ++k)
          EXPECT_NEAR(picked[size_t(k)], ground[size_t(k)],
                      1e-6 * (1 + std::fabs(ground[size_t(k)])));
      }
    }
  EXPECT_GT(water, 20u);
  EXPECT_GT(land, 20u);
  EXPECT_LT(seabed, water / 4);
}

// RMS of (got - want) relative to the RMS of want.
double relativeRms(const std::vector<float>& want, const std::vector<float>& got) {
  double err = 0, ref = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double d = double(got[i]) - double(want[i]);
    err += d * d;
    ref += double(want[i]) * double(want[i]);
  }
  return ref > 0 ? std::sqrt(err / ref) : std::sqrt(err);
}

// Level `level` of an RGBA32F texture, as four planes.
std::array<std::vector<float>, 4> readLevel(unsigned texture, int level, int side) {
  std::vector<float> rgba(size_t(side) * size_t(side) * 4);
  glGetTextureImage(texture, level, GL_RGBA, GL_FLOAT, GLsizei(rgba.size() * sizeof(float)),
                    rgba.data());
  std::array<std::vector<float>, 4> planes;
  for (int c = 0; c < 4; ++c) {
    planes[size_t(c)].resize(rgba.size() / 4);
    for (size_t i = 0; i < planes[size_t(c)].size(); ++i)
      planes[size_t(c)][i] = rgba[4 * i + size_t(c)];
  }
  return planes;
}

// GL's box filter: the mean of each 2 x 2 block.
std::vector<float> halve(const std::vector<float>& v, int side) {
  const int h = side / 2;
  std::vector<float> out(size_t(h) * size_t(h));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < h; ++x) {
      auto at = [&](int px, int py) { return double(v[size_t(py) * size_t(side) + size_t(px)]); };
      out[size_t(y) * size_t(h) + size_t(x)] =
          float((at(2 * x, 2 * y) + at(2 * x + 1, 2 * y) + at(2 * x, 2 * y + 1) +
                 at(2 * x + 1, 2 * y + 1)) /
                4);
    }
  return out;
}

// The GL compute step (the default ocean fields) against the CPU reference: level 0 and every
// mip level, at several sizes and times (an hour in, the phase still agrees), and after a
// parameter change of size. A wrong twiddle sign, packing, index or filter is O(1).
TEST(OceanFieldsGl, EqualTheCpuFieldsAndTheirMipChain) {
  REQUIRE_GL();
  std::string error, note;
  const std::string dir = hfr::resolveShaderDir("", error);
  ASSERT_FALSE(dir.empty()) << error;
  hfr::OceanParams p;
  p.windSpeed = 12;
  p.windDirection = 30;
  p.choppiness = 1.5;
  p.size = 16;
  auto fields = hfr::makeGlOceanFields(dir, p, note);
  ASSERT_TRUE(fields) << note;
  EXPECT_STREQ(fields->name(), "gl");
  for (int size : {16, 32, 128, 256}) {
    p.size = size;
    fields->setParams(p);
    hfr::OceanSimulation cpu(p);
    for (double t : {0.0, 2.5, 3600.75}) {
      SCOPED_TRACE("size " + std::to_string(size) + " t " + std::to_string(t));
      ASSERT_TRUE(fields->update(t, true));
      EXPECT_EQ(fields->error(), "");
      EXPECT_DOUBLE_EQ(fields->patchMetres(), p.patchMetres);
      hfr::OceanFrame want;
      cpu.evaluate(t, want);
      std::array<std::vector<float>, 4> expect = {want.slopeX, want.slopeY, want.dispX, want.dispY};
      int side = size;
      for (int level = 0; side >= 1; ++level, side /= 2) {
        SCOPED_TRACE("level " + std::to_string(level));
        if (level > 0)
          for (auto& plane : expect) plane = halve(plane, side * 2);
        const auto got = readLevel(fields->texture(), level, side);
        // Float FFTs lose ~1e-7 in RMS, GPU sines ~1e-6 rad; the deepest levels average to
        // near zero, so their tolerance is absolute against the field's own scale.
        for (size_t c = 0; c < 4; ++c) {
          double scale = 0;
          for (float v : (c < 2 ? want.slopeX : want.dispX)) scale += double(v) * double(v);
          scale = std::sqrt(scale / double(want.slopeX.size()));
          double err = 0;
          for (size_t i = 0; i < got[c].size(); ++i)
            err += std::pow(double(got[c][i]) - double(expect[c][i]), 2);
          err = std::sqrt(err / double(got[c].size()));
          EXPECT_LT(err, 2e-5 * scale) << "channel " << c;
          if (level == 0) {
            EXPECT_LT(relativeRms(expect[c], got[c]), 2e-5) << "channel " << c;
          }
        }
      }
    }
  }
  // A bad parameter set is refused with a reason and the old spectrum animates on; a good one
  // clears the reason.
  hfr::OceanParams bad = p;
  bad.windSpeed = 100;
  fields->setParams(bad);
  ASSERT_TRUE(fields->update(1.0, true));
  EXPECT_NE(fields->error().find("wind speed"), std::string::npos) << fields->error();
  p.windSpeed = 8;
  fields->setParams(p);
  ASSERT_TRUE(fields->update(1.0, true));
  EXPECT_EQ(fields->error(), "");
  EXPECT_EQ(glGetError(), GLenum(GL_NO_ERROR));
}

TEST(OceanShore, DistanceToLandInTexels) {
  hfr::Seabed s;
  s.width = 7;
  s.height = 5;
  s.metres.assign(35, -10.0f);
  s.metres[2 * 7 + 3] = 5.0f;  // one island in the middle
  s.metres[0] = std::numeric_limits<float>::quiet_NaN();  // nodata: water
  const std::vector<float> d = hfr::shoreDistance(s, 0.0);
  ASSERT_EQ(d.size(), 35u);
  EXPECT_EQ(d[2 * 7 + 3], 0.0f);
  EXPECT_NEAR(d[2 * 7 + 4], 1.0, 1e-6);
  EXPECT_NEAR(d[1 * 7 + 4], 4.0 / 3.0, 1e-6);  // diagonal: chamfer 4/3
  EXPECT_NEAR(d[2 * 7 + 6], 3.0, 1e-6);
  EXPECT_GT(d[0], 3.0f);
  // All land: no water at all.
  EXPECT_FALSE(hfr::shoreDistance(s, -100.0).empty());  // the nodata sample is still water
  s.metres[0] = 1.0f;
  EXPECT_TRUE(hfr::shoreDistance(s, -100.0).empty());
}

}  // namespace
