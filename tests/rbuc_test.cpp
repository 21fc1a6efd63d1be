// rbuc_test.cpp - 2DRBUC residual coding (docs/format.md 5.2): round trips over the same patch
// kinds as the layered coding, its two-level progressive decoding, random access, and that it
// is smaller than layers 2 + 3 on terrain-like data.
#include <gtest/gtest.h>

#include <vector>

#include "codec/hfpac.h"
#include "roundtrip.h"
#include "test_util.h"

namespace {

using hfpac::Layers;
using hfpac::SampleType;
using hfpac::Status;
using hftest::Patch;
using hftest::rbucOpts;
using hftest::verifyRoundTrip;

std::vector<Patch> patches() {
  return {hftest::smooth(129, 129, SampleType::Int16, 401),
          hftest::smooth(130, 65, SampleType::UInt16, 402),
          hftest::seaMountain(129, 129, SampleType::Int16, 403),
          hftest::withHoles(97, 61, SampleType::Int16, 404),
          hftest::withHoles(64, 64, SampleType::UInt16, 405),
          hftest::rampBumps(33, 33, SampleType::Int16, 406),
          hftest::extremes(45, 70, 407),
          hftest::negative(31, 47, 408),
          hftest::noise(40, 40, SampleType::UInt16, 409),
          hftest::cliffs(65, 33),
          hftest::checkerboard(48, 48, 3),
          hftest::constant(20, 20, 7),
          hftest::smooth(1, 77, SampleType::UInt16, 410),
          hftest::smooth(77, 1, SampleType::UInt16, 411),
          hftest::smooth(2, 2, SampleType::Int16, 412)};
}

TEST(Rbuc, RoundTripEveryKindAndSegment) {
  for (const Patch& p : patches())
    for (int segment : {0, 5, 9, 17, 33}) ASSERT_NO_FATAL_FAILURE(verifyRoundTrip(p, rbucOpts(segment)));
}

TEST(Rbuc, LayersOneAndTwoIsLosslessAndPointsMatch) {
  for (const Patch& p : patches()) {
    SCOPED_TRACE(p.name);
    const std::vector<uint8_t> st = hftest::encodeOrDie(p, rbucOpts(9));
    std::vector<uint16_t> all, l12, l1;
    ASSERT_EQ(hftest::decodeTo(st, p.width, p.height, all), Status::Ok);
    ASSERT_EQ(hftest::decodeTo(st, p.width, p.height, l12, Layers::L12), Status::Ok);
    ASSERT_EQ(hftest::decodeTo(st, p.width, p.height, l1, Layers::L1), Status::Ok);
    EXPECT_EQ(all, l12);
    hfpac::PatchView view;
    ASSERT_EQ(hfpac::PatchView::open(st.data(), st.size(), view), Status::Ok);
    size_t bad = 0;
    for (int y = 0; y < p.height; ++y)
      for (int x = 0; x < p.width; ++x) {
        const size_t k = size_t(y) * size_t(p.width) + size_t(x);
        bad += view.sample(x, y, Layers::All) != all[k];
        bad += view.sample(x, y, Layers::L1) != l1[k];
      }
    EXPECT_EQ(bad, 0u);
  }
}

TEST(Rbuc, LayerOneEqualsTheLayeredCodingsLayerOne) {
  // Same encoder choices for layer 1 (same segment, no mask): the coarse surface is shared.
  hfpac::EncodeOptions layered = hftest::opts(9, -1), rbuc = rbucOpts(9);
  layered.autoMask = rbuc.autoMask = false;
  const Patch p = hftest::smooth(129, 129, SampleType::Int16, 420);
  std::vector<uint16_t> a, b;
  ASSERT_EQ(hftest::decodeTo(hftest::encodeOrDie(p, layered), p.width, p.height, a, Layers::L1), Status::Ok);
  ASSERT_EQ(hftest::decodeTo(hftest::encodeOrDie(p, rbuc), p.width, p.height, b, Layers::L1), Status::Ok);
  EXPECT_EQ(a, b);
}

TEST(Rbuc, SmallerThanLayersTwoAndThreeOnSmoothTerrain) {
  size_t layered = 0, rbuc = 0;
  for (uint64_t seed = 430; seed < 436; ++seed) {
    const Patch p = hftest::smooth(129, 129, SampleType::Int16, seed);
    layered += hftest::encodeOrDie(p, hftest::opts(9, -1)).size();
    rbuc += hftest::encodeOrDie(p, rbucOpts(9)).size();
  }
  EXPECT_LT(rbuc, layered);
}

TEST(Rbuc, CorruptBlockIndexIsRefused) {
  const Patch p = hftest::smooth(70, 70, SampleType::UInt16, 440);
  std::vector<uint8_t> st = hftest::encodeOrDie(p, rbucOpts(9));
  hfpac::PatchInfo info;
  ASSERT_EQ(hfpac::readInfo(st.data(), st.size(), info), Status::Ok);
  ASSERT_TRUE(info.rbuc);
  // The block index starts section B (no mask here): its first word is the offset width.
  const size_t index = size_t(info.layer1Bytes);
  std::vector<uint16_t> out(size_t(p.width) * size_t(p.height));
  std::vector<uint8_t> bad = st;
  bad[index] = 33;  // offset width beyond 32 bits
  EXPECT_EQ(hfpac::decode(bad.data(), bad.size(), out.data(), size_t(p.width), out.size()),
            Status::InvalidBlock);
  bad = st;
  bad[index + 4] ^= 0x01;  // block 0 must start at bit 0
  EXPECT_EQ(hfpac::decode(bad.data(), bad.size(), out.data(), size_t(p.width), out.size()),
            Status::InvalidBlock);
  // A root width of 31 in block 0 (section D starts right after section B).
  bad = st;
  const size_t d = size_t(info.layer1Bytes) + info.layer2Bytes;
  bad[d] = uint8_t((bad[d] & ~0x1f) | 31);
  EXPECT_EQ(hfpac::decode(bad.data(), bad.size(), out.data(), size_t(p.width), out.size()),
            Status::InvalidBlock);
}

}  // namespace
