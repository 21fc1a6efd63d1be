// measure_test.cpp - the measure tool's arithmetic (render/measure/measure.h): planar distances
// in projected archives, geodesics on the WGS84 ellipsoid in geographic ones (against the
// textbook lengths of one degree along the equator and along a meridian), heights sampled from
// a real archive written here (bilinear, across tile edges, nodata, missing tiles, outside the
// data) and a profile along a line.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "archive/archive.h"
#include "render/measure/measure.h"
#include "test_files.h"

namespace {

namespace fs = std::filesystem;

TEST(Measure, PlanarDistancesInProjectedArchives) {
  hfa::Header h;
  h.width = h.height = 101;
  h.spacingX = h.spacingY = 30;
  h.flags = hfa::kFlagSpacingKnown | hfa::kFlagGeoTransform;
  const hfr::GroundFrame f(h);
  EXPECT_FALSE(f.geographic());
  const hfr::Measurement m = hfr::measure(f, {0, 0, 100}, {300, 400, 220});
  EXPECT_FALSE(m.ellipsoidal);
  EXPECT_DOUBLE_EQ(m.horizontal, 500);
  EXPECT_DOUBLE_EQ(m.dz, 120);
  EXPECT_NEAR(m.spatial, 514.1984052872976, 1e-9);
}

TEST(Measure, GeodesicsInGeographicArchives) {
  // One arc-second samples with centres on whole degrees: column 0 at longitude 0, row 3600 at
  // latitude 0, row 0 at latitude 1.
  hfa::Header h;
  h.width = h.height = 3601;
  const double d = 1.0 / 3600;
  const double gt[6] = {-0.5 * d, d, 0, 1 + 0.5 * d, 0, -d};
  std::copy(gt, gt + 6, h.geoTransform);
  h.spacingX = h.spacingY = 30.9;  // the renderer's local metres (not used for the geodesic)
  h.flags = hfa::kFlagGeoTransform | hfa::kFlagGeographic | hfa::kFlagSpacingKnown;
  const hfr::GroundFrame f(h);
  ASSERT_TRUE(f.geographic());
  double lon, lat;
  f.toCrs(3600 * 30.9, 3600 * 30.9, lon, lat);
  EXPECT_NEAR(lon, 1, 1e-12);
  EXPECT_NEAR(lat, 1, 1e-12);
  // WGS84: one degree of longitude on the equator is 111319.4908 m, one degree of latitude from
  // the equator 110574.3886 m.
  const hfr::Measurement east = hfr::measure(f, {0, 0, 0}, {3600 * 30.9, 0, 0});
  EXPECT_TRUE(east.ellipsoidal);
  EXPECT_NEAR(east.horizontal, 111319.4908, 0.001);
  const hfr::Measurement north = hfr::measure(f, {0, 0, 10}, {0, 3600 * 30.9, -20});
  EXPECT_NEAR(north.horizontal, 110574.3886, 0.001);
  EXPECT_DOUBLE_EQ(north.dz, -30);
  EXPECT_NEAR(north.spatial, std::hypot(110574.3886, 30.0), 0.001);
}

// A raw archive of 40 x 20 samples (17-sample tiles: 3 x 2 at level 0), heights 1000 + 3 col - 2
// row metres, 10 m spacing; tile (1, 1) left out; sample (37, 3) is nodata.
std::string writeArchive(const fs::path& dir) {
  constexpr int kLog = 4, kP = 17;
  hfa::Header h;
  h.tileLog = kLog;
  h.levels = 1;
  h.codec = hfa::Codec::Raw;
  h.sampleType = hfpac::SampleType::Int16;
  h.width = 40;
  h.height = 20;
  h.spacingX = h.spacingY = 10;
  h.flags = hfa::kFlagSpacingKnown | hfa::kFlagNodataKept;
  h.nodata = uint16_t(int16_t(-32768));
  hfa::ArchiveWriter w;
  std::string error;
  const std::string path = (dir / "measure.hfa").string();
  EXPECT_TRUE(w.open(path, h, 8, error)) << error;
  for (uint32_t ty = 0; ty < h.tilesY(0); ++ty)
    for (uint32_t tx = 0; tx < h.tilesX(0); ++tx) {
      if (tx == 1 && ty == 1) continue;
      std::vector<uint16_t> s(size_t(kP) * kP);
      for (int j = 0; j < kP; ++j)
        for (int i = 0; i < kP; ++i) {
          const int col = int(tx) * (kP - 1) + i, row = int(ty) * (kP - 1) + j;
          s[size_t(j) * kP + size_t(i)] = col == 37 && row == 3 ? h.nodata : uint16_t(int16_t(1000 + 3 * col - 2 * row));
        }
      hfa::TileStats st;
      hfa::computeTileStats(s.data(), kLog, h.sampleType, true, h.nodata, st);
      hfa::TileEntry e;
      e.level = 0;
      e.codec = hfa::Codec::Raw;
      e.x = tx;
      e.y = ty;
      e.minSample = st.minSample;
      e.maxSample = st.maxSample;
      e.lodError = st.lodError;
      std::vector<uint8_t> payload;
      for (uint16_t v : s) {
        payload.push_back(uint8_t(v));
        payload.push_back(uint8_t(v >> 8));
      }
      EXPECT_TRUE(w.addTile(e, payload.data(), payload.size(), error)) << error;
    }
  EXPECT_TRUE(w.finish(error)) << error;
  return path;
}

struct ArchiveFixture : ::testing::Test {
  fs::path dir = hf_test::makeFreshDir("hf_measure_test");
  hfa::ArchiveReader archive;
  void SetUp() override {
    fs::create_directories(dir);
    std::string error;
    ASSERT_TRUE(archive.open(writeArchive(dir), error)) << error;
  }
  void TearDown() override { fs::remove_all(dir); }
  // World point of level-0 (col, row): x = 10 col, y = 10 (19 - row).
  static double wx(double col) { return 10 * col; }
  static double wy(double row) { return 10 * (19 - row); }
  static double want(double col, double row) { return 1000 + 3 * col - 2 * row; }
};

TEST_F(ArchiveFixture, HeightsAreBilinearAcrossTileEdges) {
  hfr::HeightSampler s(archive, 4);
  for (auto [col, row] : {std::pair{0.0, 0.0}, std::pair{16.0, 2.0}, std::pair{16.5, 2.25}, std::pair{31.75, 15.9},
                          std::pair{39.0, 19.0}, std::pair{12.3, 16.0}, std::pair{33.0, 10.5}})
    EXPECT_NEAR(s.at(wx(col), wy(row)), want(col, row), 1e-9) << col << ", " << row;
  EXPECT_TRUE(s.error().empty()) << s.error();
}

TEST_F(ArchiveFixture, NoHeightOutsideOnNodataOrWhereATileIsMissing) {
  hfr::HeightSampler s(archive);
  EXPECT_TRUE(std::isnan(s.at(wx(-0.5), wy(3))));
  EXPECT_TRUE(std::isnan(s.at(wx(39.5), wy(3))));
  EXPECT_TRUE(std::isnan(s.at(wx(3), wy(19.5))));
  EXPECT_TRUE(std::isnan(s.at(wx(37), wy(3))));        // the nodata sample
  EXPECT_TRUE(std::isnan(s.at(wx(36.5), wy(3.5))));    // next to it
  EXPECT_FALSE(std::isnan(s.at(wx(35), wy(3))));
  EXPECT_TRUE(std::isnan(s.at(wx(20), wy(18))));       // tile (1, 1) is missing
  // Its edge samples are also tile (1, 0)'s and (0, 1)'s, so they have heights.
  EXPECT_NEAR(s.at(wx(20), wy(16)), want(20, 16), 1e-9);
  EXPECT_NEAR(s.at(wx(16), wy(18)), want(16, 18), 1e-9);
}

TEST_F(ArchiveFixture, ProfileAlongALine) {
  hfr::HeightSampler s(archive);
  const hfr::GroundFrame f(archive.header());
  const std::array<double, 3> a{wx(0), wy(0), 0}, b{wx(30), wy(12), 0};
  const hfr::Profile p = hfr::profile(s, f, a, b, 31);
  ASSERT_EQ(p.distance.size(), 31u);
  ASSERT_EQ(p.height.size(), 31u);
  const double length = std::hypot(300.0, 120.0);
  for (size_t k = 0; k < 31; ++k) {
    const double t = double(k) / 30;
    EXPECT_NEAR(p.distance[k], t * length, 1e-9);
    EXPECT_NEAR(p.height[k], want(30 * t, 12 * t), 1e-9) << k;
  }
  EXPECT_NEAR(p.minHeight, 1000, 1e-9);
  EXPECT_NEAR(p.maxHeight, want(30, 12), 1e-9);
  // A line over the missing tile has NaN there and finite heights elsewhere.
  const hfr::Profile q = hfr::profile(s, f, {wx(10), wy(18), 0}, {wx(38), wy(18), 0}, 29);
  EXPECT_TRUE(std::isnan(q.height[10]));  // col 20
  EXPECT_FALSE(std::isnan(q.height[0]));
  EXPECT_FALSE(std::isnan(q.height[28]));
}

}  // namespace
