// realdem_test.cpp - lossless round trip of every real DEM in HF_SHARED_DEM_DIR (label "slow").
//
// Each DEM is read with hf_demio (floats arrive quantised to a UInt16 grid; that grid is what
// must survive), cut into 129 x 129 patches stepping 128 (shared edges, smaller patches at the
// right and bottom borders), encoded and decoded with the batch API on every core.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "codec/hfpac.h"
#include "demio/dem_io.h"

#ifndef HF_SHARED_DEM_DIR
#error "HF_SHARED_DEM_DIR must name the shared DEM folder"
#endif

namespace {

namespace fs = std::filesystem;
using hfpac::Layers;
using hfpac::Status;

constexpr int kPatch = 129, kStep = 128;

std::vector<std::string> demFiles() {
  std::vector<std::string> files;
  std::error_code ec;
  const fs::path dir(HF_SHARED_DEM_DIR);
  if (!fs::is_directory(dir, ec)) return files;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_regular_file()) continue;
    std::string ext = e.path().extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char ch) { return char(std::tolower(ch)); });
    if (ext == ".hgt" || ext == ".tif" || ext == ".tiff" || ext == ".png" || ext == ".jpg" || ext == ".nc" ||
        ext == ".dem")
      files.push_back(e.path().filename().string());
  }
  std::sort(files.begin(), files.end());
  if (fs::exists(dir / "srtm3-sierra" / "sierra.vrt", ec)) files.push_back("srtm3-sierra/sierra.vrt");
  return files;
}

struct Tile {
  int x0, y0, w, h;
};

std::vector<Tile> tiles(int width, int height) {
  std::vector<Tile> t;
  auto starts = [](int n) {
    std::vector<int> s;
    for (int i = 0; i == 0 || i < n - 1; i += kStep) s.push_back(i);  // a 1-wide remainder is covered
    return s;
  };
  for (int y0 : starts(height))
    for (int x0 : starts(width)) t.push_back({x0, y0, std::min(kPatch, width - x0), std::min(kPatch, height - y0)});
  return t;
}

// Encodes the selected tiles with `options`, decodes them, and checks the decode (lossless at
// All; within the error bound at L12 when bits is fixed). Returns the total stream bytes.
uint64_t roundTrip(const demio::Dem& dem, const std::vector<Tile>& all, size_t every, const hfpac::EncodeOptions& o) {
  std::vector<Tile> sel;
  for (size_t i = 0; i < all.size(); i += every) sel.push_back(all[i]);
  std::vector<hfpac::PatchIn> in(sel.size());
  for (size_t i = 0; i < sel.size(); ++i) {
    in[i].samples = dem.samples.data() + size_t(sel[i].y0) * size_t(dem.width) + size_t(sel[i].x0);
    in[i].stride = size_t(dem.width);
    in[i].width = sel[i].w;
    in[i].height = sel[i].h;
    in[i].type = dem.type;
  }
  std::vector<std::vector<uint8_t>> streams;
  std::vector<Status> statuses;
  const Status es = hfpac::encodeBatch(in.data(), in.size(), o, streams, statuses, 0);
  EXPECT_EQ(es, Status::Ok) << hfpac::statusMessage(es);
  if (es != Status::Ok) return 0;

  uint64_t bytes = 0;
  const size_t patchSamples = size_t(kPatch) * kPatch;
  std::vector<uint16_t> out(sel.size() * patchSamples, 0);
  std::vector<hfpac::PatchOut> po(sel.size());
  for (size_t i = 0; i < sel.size(); ++i) {
    bytes += streams[i].size();
    EXPECT_LE(streams[i].size(), hfpac::maxEncodedSize(sel[i].w, sel[i].h));
    po[i] = {streams[i].data(), streams[i].size(), out.data() + i * patchSamples, size_t(sel[i].w), patchSamples};
  }
  const Layers layersToCheck[] = {Layers::All, Layers::L12};
  for (Layers layers : layersToCheck) {
    if (layers == Layers::L12 && o.bits < 0) continue;
    const Status ds = hfpac::decodeBatch(po.data(), po.size(), layers, statuses, 0);
    EXPECT_EQ(ds, Status::Ok) << hfpac::statusMessage(ds);
    if (ds != Status::Ok) return bytes;
    const int32_t bound = layers == Layers::All ? 0 : (o.bits > 0 ? (1 << (o.bits - 1)) : 0);
    size_t reported = 0;
    for (size_t i = 0; i < sel.size(); ++i) {
      const Tile& t = sel[i];
      for (int y = 0; y < t.h; ++y)
        for (int x = 0; x < t.w; ++x) {
          const uint16_t want = dem.samples[size_t(t.y0 + y) * size_t(dem.width) + size_t(t.x0 + x)];
          const uint16_t got = out[i * patchSamples + size_t(y) * size_t(t.w) + size_t(x)];
          const bool isSigned = dem.type == hfpac::SampleType::Int16;
          const int32_t err = isSigned ? int32_t(int16_t(got)) - int32_t(int16_t(want)) : int32_t(got) - int32_t(want);
          if (std::abs(err) > bound && reported++ < 5)
            ADD_FAILURE() << "layers " << int(layers) << " tile at (" << t.x0 << "," << t.y0 << ") " << t.w << "x" << t.h
                          << " sample (" << x << "," << y << "): got " << got << " want " << want;
        }
    }
    EXPECT_EQ(reported, 0u) << "layers " << int(layers) << " segment " << o.segment << " bits " << o.bits;
  }
  return bytes;
}

class RealDem : public ::testing::TestWithParam<std::string> {};

TEST_P(RealDem, LosslessRoundTrip) {
  if (GetParam() == "<none>")
    GTEST_SKIP() << "no DEMs found in HF_SHARED_DEM_DIR=" << HF_SHARED_DEM_DIR
                 << " (configure with -DHF_SHARED_DEM_DIR=... to run the real-data round trips)";
  const std::string path = std::string(HF_SHARED_DEM_DIR) + "/" + GetParam();
  demio::Dem dem;
  std::string error;
  ASSERT_TRUE(demio::readDem(path, dem, error)) << path << ": " << error;
  ASSERT_EQ(dem.samples.size(), size_t(dem.width) * size_t(dem.height));
  const std::vector<Tile> all = tiles(dem.width, dem.height);

  const uint64_t bytes = roundTrip(dem, all, 1, hfpac::EncodeOptions{});
  const double raw = 2.0 * double(dem.width) * double(dem.height);
  std::printf("[realdem] %-28s %5dx%-5d %-6s %6zu patches  default: %.3f bits/sample (%.2fx)\n", GetParam().c_str(),
              dem.width, dem.height, demio::sampleTypeName(dem.type), all.size(), 8.0 * double(bytes) / (raw / 2),
              bytes ? raw / double(bytes) : 0.0);
  // Patches overlap by one row/column, so compare against the raw size of the patches themselves.
  uint64_t patchSamples = 0;
  for (const Tile& t : all) patchSamples += uint64_t(t.w) * uint64_t(t.h);
  EXPECT_LT(bytes, 2 * patchSamples) << "lossless coding of real terrain should beat 16 bits per sample";
  RecordProperty("bytes_default", std::to_string(bytes));

  // Fixed options on a subset of the patches (every 5th).
  hfpac::EncodeOptions fixed;
  fixed.segment = 17;
  fixed.bits = 8;
  roundTrip(dem, all, 5, fixed);
}

// Directory listing at start-up; an absent folder gives one skipped test with the reason.
std::vector<std::string> paramsOrPlaceholder() {
  std::vector<std::string> f = demFiles();
  if (f.empty()) f.push_back("<none>");
  return f;
}

INSTANTIATE_TEST_SUITE_P(Shared, RealDem, ::testing::ValuesIn(paramsOrPlaceholder()),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           std::string n;
                           for (char ch : i.param) n += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return n;
                         });

TEST(RealDemFolder, Present) {
  if (demFiles().empty())
    GTEST_SKIP() << "no DEMs in HF_SHARED_DEM_DIR=" << HF_SHARED_DEM_DIR
                 << " (configure with -DHF_SHARED_DEM_DIR=... to run the real-data round trips)";
  SUCCEED();
}

}  // namespace
