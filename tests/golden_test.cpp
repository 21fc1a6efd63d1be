// golden_test.cpp - fixed inputs whose encoded bytes are checked in (tests/golden/*.hfp).
//
// A change that alters any stream byte, or the layer-1 / layer-1+2 decode of a golden stream
// (tests/golden/layers.txt holds FNV-1a hashes of those decodes), is a format change: bump
// kVersion or fix the regression. The inputs are generated with integer arithmetic only, so
// they are the same on every platform and compiler.
//
// Regenerate after an intended format change:
//   HF_UPDATE_GOLDEN=1 ./hf_codec_tests --gtest_filter='Golden*'
// then review and commit tests/golden/.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "codec/hfpac.h"
#include "test_util.h"

#ifndef HF_GOLDEN_DIR
#error "HF_GOLDEN_DIR must point at tests/golden"
#endif

namespace {

using hfpac::EncodeOptions;
using hfpac::Layers;
using hfpac::SampleType;
using hfpac::Status;
using hftest::Patch;

bool updating() {
  const char* v = std::getenv("HF_UPDATE_GOLDEN");
  return v && *v && std::string(v) != "0";
}

std::string goldenPath(const std::string& file) { return std::string(HF_GOLDEN_DIR) + "/" + file; }

bool readFile(const std::string& path, std::vector<uint8_t>& out) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  out.clear();
  uint8_t buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.insert(out.end(), buf, buf + n);
  const bool ok = !std::ferror(f);
  std::fclose(f);
  return ok;
}

bool writeFile(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  return bool(f);
}

uint64_t fnv1a(const std::vector<uint16_t>& v) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint16_t s : v)
    for (int i = 0; i < 2; ++i) {
      h ^= uint8_t(s >> (8 * i));
      h *= 0x100000001b3ull;
    }
  return h;
}

// ---- Inputs (integer arithmetic only) ----

// 17 x 17 Int16: a tilted ramp, a paraboloid hill, a pit and a little noise; one nodata void.
Patch ramp17() {
  hftest::Rng rng(17);
  Patch p = hftest::generate("ramp17", 17, 17, SampleType::Int16, [&](int x, int y) {
    int v = 120 + 9 * x - 4 * y;
    const int r2 = (x - 5) * (x - 5) + (y - 9) * (y - 9);
    if (r2 < 25) v += 16 * (25 - r2);
    const int q2 = (x - 12) * (x - 12) + (y - 4) * (y - 4);
    if (q2 < 9) v -= 30 * (9 - q2);
    return v + rng.range(-2, 2);
  });
  p.at(15, 15) = uint16_t(int16_t(-32768));
  return p;
}

// 33 x 20 UInt16, coded with bits = 4 and segment 5: mostly smooth with a ridge and some spikes
// that must become prominent points.
Patch u16x33x20() {
  hftest::Rng rng(3320);
  return hftest::generate("u16_33x20", 33, 20, SampleType::UInt16, [&](int x, int y) {
    int v = 30000 + 40 * x + 25 * y - (x - 16) * (x - 16) * 3;
    if (x == 2 * y) v += 600;  // ridge line
    if (rng.below(23) == 0) v += rng.range(-3000, 3000);  // spikes
    return v + rng.range(-5, 5);
  });
}

// 24 x 24 flat sea level: the stream is just the header.
Patch flat24() { return hftest::constant(24, 24, 0, SampleType::Int16); }

// 20 x 13 UInt16 white noise.
Patch noise20x13() {
  hftest::Rng rng(2013);
  Patch p = hftest::makePatch("noise20x13", 20, 13, SampleType::UInt16);
  for (int y = 0; y < 13; ++y)
    for (int x = 0; x < 20; ++x) p.at(x, y) = rng.u16();
  return p;
}

// 40 x 36 Int16: flat sea on the left, hills on the right; auto segment and auto (per-area) bits.
Patch coast40x36() {
  hftest::Rng rng(4036);
  return hftest::generate("coast40x36", 40, 36, SampleType::Int16, [&](int x, int y) {
    if (x < 18) return 0;
    const int dx = x - 30, dy = y - 18;
    const int r2 = dx * dx + dy * dy;
    int v = 5 + 3 * (x - 18) + (r2 < 144 ? 9 * (144 - r2) : 0);
    if (y > 28) v += 40 * (x % 3);  // rough terrain in one corner
    return v + rng.range(0, 3);
  });
}

struct GoldenCase {
  std::string file;
  Patch (*make)();
  int segment, bits;
};

const GoldenCase kCases[] = {
    {"ramp17_i16_default.hfp", ramp17, 9, -1},
    {"u16_33x20_seg5_bits4.hfp", u16x33x20, 5, 4},
    {"flat24_i16.hfp", flat24, 9, -1},
    {"noise20x13_u16_default.hfp", noise20x13, 9, -1},
    {"coast40x36_i16_auto.hfp", coast40x36, 0, -1},
    {"ramp17_i16_seg17_bits0.hfp", ramp17, 17, 0},
};

// layers.txt: "<file> <fnv1a of the L1 decode> <fnv1a of the L12 decode>" per line.
std::map<std::string, std::pair<uint64_t, uint64_t>> readLayerHashes() {
  std::map<std::string, std::pair<uint64_t, uint64_t>> m;
  std::ifstream f(goldenPath("layers.txt"));
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream is(line);
    std::string name, a, b;
    if (is >> name >> a >> b) m[name] = {std::stoull(a, nullptr, 16), std::stoull(b, nullptr, 16)};
  }
  return m;
}

class Golden : public ::testing::TestWithParam<int> {};

TEST_P(Golden, EncodeMatchesAndDecodeIsLossless) {
  const GoldenCase& c = kCases[GetParam()];
  const Patch p = c.make();
  EncodeOptions o;
  o.segment = c.segment;
  o.bits = c.bits;
  std::vector<uint8_t> encoded;
  ASSERT_EQ(hfpac::encode(p.data(), p.stride, p.width, p.height, p.type, o, encoded), Status::Ok);

  std::vector<uint16_t> l1, l12;
  ASSERT_EQ(hftest::decodeTo(encoded, p.width, p.height, l1, Layers::L1), Status::Ok);
  ASSERT_EQ(hftest::decodeTo(encoded, p.width, p.height, l12, Layers::L12), Status::Ok);

  if (updating()) {
    ASSERT_TRUE(writeFile(goldenPath(c.file), encoded)) << "cannot write " << goldenPath(c.file);
    std::map<std::string, std::pair<uint64_t, uint64_t>> hashes = readLayerHashes();
    hashes[c.file] = {fnv1a(l1), fnv1a(l12)};
    std::ofstream f(goldenPath("layers.txt"), std::ios::trunc);
    f << "# FNV-1a (64-bit, little-endian sample bytes) of the Layers::L1 and Layers::L12 decodes\n"
         "# of each golden stream. Regenerate: HF_UPDATE_GOLDEN=1 hf_codec_tests --gtest_filter='Golden*'\n";
    for (const auto& [name, h] : hashes) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%016llx %016llx", static_cast<unsigned long long>(h.first),
                    static_cast<unsigned long long>(h.second));
      f << name << " " << buf << "\n";
    }
    ASSERT_TRUE(bool(f));
    std::printf("[golden] wrote %s (%zu bytes)\n", c.file.c_str(), encoded.size());
  }

  std::vector<uint8_t> golden;
  ASSERT_TRUE(readFile(goldenPath(c.file), golden))
      << "missing " << goldenPath(c.file) << "; generate with HF_UPDATE_GOLDEN=1";
  EXPECT_EQ(encoded.size(), golden.size()) << "encoder output differs from the golden stream";
  EXPECT_TRUE(encoded == golden) << "encoder output differs from the golden stream " << c.file;

  // The checked-in bytes decode to the input, whatever the encoder does today.
  std::vector<uint16_t> out;
  ASSERT_EQ(hftest::decodeTo(golden, p.width, p.height, out, Layers::All), Status::Ok);
  for (int y = 0; y < p.height; ++y)
    for (int x = 0; x < p.width; ++x) ASSERT_EQ(out[size_t(y) * size_t(p.width) + size_t(x)], p.at(x, y)) << x << "," << y;

  // And the partial layers decode to the recorded values.
  const auto hashes = readLayerHashes();
  const auto it = hashes.find(c.file);
  ASSERT_NE(it, hashes.end()) << "no entry for " << c.file << " in layers.txt";
  std::vector<uint16_t> gl1, gl12;
  ASSERT_EQ(hftest::decodeTo(golden, p.width, p.height, gl1, Layers::L1), Status::Ok);
  ASSERT_EQ(hftest::decodeTo(golden, p.width, p.height, gl12, Layers::L12), Status::Ok);
  EXPECT_EQ(fnv1a(gl1), it->second.first) << "layer-1 decode of the golden stream changed";
  EXPECT_EQ(fnv1a(gl12), it->second.second) << "layer-1+2 decode of the golden stream changed";

  hfpac::PatchInfo info;
  ASSERT_EQ(hfpac::readInfo(golden.data(), golden.size(), info), Status::Ok);
  EXPECT_EQ(info.width, p.width);
  EXPECT_EQ(info.height, p.height);
  EXPECT_EQ(info.type, p.type);
}

INSTANTIATE_TEST_SUITE_P(Golden, Golden, ::testing::Range(0, int(std::size(kCases))),
                         [](const ::testing::TestParamInfo<int>& i) {
                           std::string n = kCases[i.param].file;
                           n = n.substr(0, n.find('.'));
                           return n;
                         });

// The flat golden stream is exactly the header.
TEST(GoldenFlat, IsHeaderOnly) {
  std::vector<uint8_t> golden;
  ASSERT_TRUE(readFile(goldenPath("flat24_i16.hfp"), golden));
  EXPECT_EQ(golden.size(), size_t(hfpac::kHeaderBytes));
}

}  // namespace
