// codec_test.cpp - lossless round trips, stream properties and the argument contract of the
// HFPaC CPU codec (src/codec/hfpac.h).
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "codec/hfpac.h"
#include "roundtrip.h"
#include "test_util.h"

namespace {

using hfpac::EncodeOptions;
using hfpac::Layers;
using hfpac::SampleType;
using hfpac::Status;
using hftest::Patch;
using hftest::verifyRoundTrip;

using hftest::opts;

EncodeOptions noMask(EncodeOptions o) {
  o.autoMask = false;
  o.hasNodata = false;
  return o;
}

// The usual nodata value of the type: -32768 for Int16, 65535 for UInt16.
EncodeOptions withNodata(EncodeOptions o, SampleType t) {
  o.hasNodata = true;
  o.nodata = t == SampleType::Int16 ? uint16_t(0x8000) : uint16_t(0xFFFF);
  return o;
}

constexpr int kSegments[] = {0, 5, 9, 17, 33};

// ---- Patch kinds x sizes, default options and a few option sets ----

struct KindCase {
  std::string name;
  std::function<Patch(int w, int h)> make;
};

std::vector<KindCase> allKinds() {
  return {
      {"smooth_u16", [](int w, int h) { return hftest::smooth(w, h, SampleType::UInt16, 1); }},
      {"smooth_i16", [](int w, int h) { return hftest::smooth(w, h, SampleType::Int16, 2, -1000, 2000); }},
      {"quadratic", [](int w, int h) { return hftest::quadratic(w, h); }},
      {"noise_u16", [](int w, int h) { return hftest::noise(w, h, SampleType::UInt16, 3); }},
      {"noise_i16", [](int w, int h) { return hftest::noise(w, h, SampleType::Int16, 4); }},
      {"cliffs_u16", [](int w, int h) { return hftest::cliffs(w, h, SampleType::UInt16); }},
      {"cliffs_i16", [](int w, int h) { return hftest::cliffs(w, h, SampleType::Int16); }},
      {"checker1", [](int w, int h) { return hftest::checkerboard(w, h, 1); }},
      {"checker4_i16", [](int w, int h) { return hftest::checkerboard(w, h, 4, SampleType::Int16); }},
      {"checker16", [](int w, int h) { return hftest::checkerboard(w, h, 16); }},
      {"constant", [](int w, int h) { return hftest::constant(w, h, 1234); }},
      {"seaMountain", [](int w, int h) { return hftest::seaMountain(w, h); }},
      {"holes_i16", [](int w, int h) { return hftest::withHoles(w, h, SampleType::Int16); }},
      {"holes_u16", [](int w, int h) { return hftest::withHoles(w, h, SampleType::UInt16); }},
      {"negative", [](int w, int h) { return hftest::negative(w, h); }},
      {"extremes", [](int w, int h) { return hftest::extremes(w, h); }},
      {"rampBumps", [](int w, int h) { return hftest::rampBumps(w, h, SampleType::Int16, 5); }},
  };
}

struct Size {
  int w, h;
};
const Size kSizes[] = {{1, 1}, {1, 40}, {40, 1}, {2, 2}, {3, 5}, {16, 16}, {17, 17}, {7, 300},
                       {129, 129}, {130, 65}, {257, 257}, {513, 17}};

class KindsBySizes : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(KindsBySizes, LosslessDefaultOptions) {
  const KindCase kind = allKinds()[size_t(std::get<0>(GetParam()))];
  const Size sz = kSizes[std::get<1>(GetParam())];
  const Patch p = kind.make(sz.w, sz.h);
  ASSERT_NO_FATAL_FAILURE(verifyRoundTrip(p, EncodeOptions{}));
}

TEST_P(KindsBySizes, LosslessSomeOptionSets) {
  const KindCase kind = allKinds()[size_t(std::get<0>(GetParam()))];
  const Size sz = kSizes[std::get<1>(GetParam())];
  const Patch p = kind.make(sz.w, sz.h);
  for (const EncodeOptions& o : {opts(0, -1), opts(5, 0), opts(33, 16), opts(17, 3), opts(9, 11), noMask(opts(9, -1)),
                                 withNodata(opts(9, -1), p.type), withNodata(noMask(opts(0, 5)), p.type)}) {
    ASSERT_NO_FATAL_FAILURE(verifyRoundTrip(p, o));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Codec, KindsBySizes,
    ::testing::Combine(::testing::Range(0, int(allKinds().size())), ::testing::Range(0, int(std::size(kSizes)))),
    [](const ::testing::TestParamInfo<std::tuple<int, int>>& pi) {
      const Size sz = kSizes[std::get<1>(pi.param)];
      return allKinds()[size_t(std::get<0>(pi.param))].name + "_" + std::to_string(sz.w) + "x" +
             std::to_string(sz.h);
    });

// ---- Every segment size x every bit setting, on a few kinds and sizes ----

class SegmentsByBits : public ::testing::TestWithParam<int> {};

TEST_P(SegmentsByBits, Lossless) {
  const int bits = GetParam();
  const std::vector<Patch> patches = {
      hftest::smooth(65, 47, SampleType::UInt16, 21),        // unaligned for every m
      hftest::noise(33, 33, SampleType::UInt16, 22),         // aligned for every m
      hftest::seaMountain(70, 41),                           // flat half + detail
      hftest::withHoles(40, 37, SampleType::Int16, 23),      // nodata voids
      hftest::extremes(18, 35),                              // full int16 range
      hftest::rampBumps(17, 17, SampleType::Int16, 24),
  };
  for (const Patch& p : patches)
    for (int seg : kSegments) ASSERT_NO_FATAL_FAILURE(verifyRoundTrip(p, opts(seg, bits)));
}

INSTANTIATE_TEST_SUITE_P(Codec, SegmentsByBits, ::testing::Range(-1, hfpac::kMaxBits + 1),
                         [](const ::testing::TestParamInfo<int>& pi) {
                           return pi.param < 0 ? std::string("bits_auto") : "bits_" + std::to_string(pi.param);
                         });

// ---- Odd shapes and strides ----

TEST(Codec, StrideGreaterThanWidth) {
  for (int extra : {1, 3, 64}) {
    const Patch a = hftest::smooth(45, 30, SampleType::UInt16, 31, 20000, 3000, extra);
    const Patch b = hftest::noise(19, 23, SampleType::Int16, 32, extra);
    const Patch c = hftest::constant(20, 9, 77, SampleType::UInt16, extra);
    const Patch d = hftest::rampBumps(33, 20, SampleType::Int16, 33, extra);
    for (const Patch* p : {&a, &b, &c, &d})
      for (const EncodeOptions& o : {opts(9, -1), opts(0, -1), opts(5, 4)}) ASSERT_NO_FATAL_FAILURE(verifyRoundTrip(*p, o));
  }
}

TEST(Codec, StrideDoesNotChangeTheStream) {
  const Patch tight = hftest::rampBumps(37, 29, SampleType::Int16, 41, 0);
  const Patch padded = hftest::rampBumps(37, 29, SampleType::Int16, 41, 11);
  for (const EncodeOptions& o : {opts(9, -1), opts(17, 6), opts(0, -1)}) {
    Status s1, s2;
    const auto a = hftest::encodeOrDie(tight, o, &s1);
    const auto b = hftest::encodeOrDie(padded, o, &s2);
    ASSERT_EQ(s1, Status::Ok);
    ASSERT_EQ(s2, Status::Ok);
    EXPECT_EQ(a, b) << hftest::optionsName(o);
  }
}

TEST(Codec, LongThinPatchesUpToMaxSide) {
  const Patch row = hftest::smooth(hfpac::kMaxPatchSide, 1, SampleType::UInt16, 51);
  const Patch col = hftest::noise(1, hfpac::kMaxPatchSide, SampleType::Int16, 52);
  const Patch row2 = hftest::rampBumps(hfpac::kMaxPatchSide, 2, SampleType::Int16, 53);
  for (const Patch* p : {&row, &col, &row2}) ASSERT_NO_FATAL_FAILURE(verifyRoundTrip(*p, EncodeOptions{}));
  ASSERT_NO_FATAL_FAILURE(verifyRoundTrip(row, opts(33, 2)));
}

// ---- Flat patches ----

TEST(Codec, ConstantPatchesAreHeaderOnly) {
  struct C {
    int w, h;
    uint16_t v;
    SampleType t;
  };
  const C cases[] = {{1, 1, 0, SampleType::UInt16},       {1, 1, 65535, SampleType::UInt16},
                     {129, 129, 0, SampleType::Int16},    {129, 129, 0x8000, SampleType::Int16},
                     {129, 129, 0x7FFF, SampleType::Int16}, {64, 3, 65535, SampleType::UInt16},
                     {300, 7, 4321, SampleType::UInt16},  {2, 2, 0xFFFF, SampleType::Int16}};
  for (const C& c : cases) {
    const Patch p = hftest::constant(c.w, c.h, c.v, c.t);
    for (int seg : kSegments)
      for (int bits : {-1, 0, 8, 16}) {
        hftest::RoundTrip rt;
        ASSERT_NO_FATAL_FAILURE(verifyRoundTrip(p, opts(seg, bits), &rt));
        EXPECT_TRUE(rt.info.flat);
        EXPECT_EQ(rt.stream.size(), size_t(hfpac::kHeaderBytes));
        EXPECT_EQ(rt.info.layer1Bytes, uint32_t(hfpac::kHeaderBytes));
        EXPECT_EQ(rt.info.layer2Bytes, 0u);
        EXPECT_EQ(rt.info.layer3Bytes, 0u);
      }
  }
}

// Incompressible patches are stored as raw 16-bit samples; the decoder reads them as
// little-endian pairs row by row, so odd widths (rows starting mid-word) and both sample types
// must come back exactly, at every layer, with a stride wider than the patch too.
TEST(Codec, StoredPatchesDecodeExactlyAtEveryLayer) {
  for (const auto& [w, h] : {std::pair{1, 1}, std::pair{3, 5}, std::pair{129, 129}, std::pair{77, 13}}) {
    for (SampleType t : {SampleType::UInt16, SampleType::Int16}) {
      const Patch p = hftest::noise(w, h, t, unsigned(w * 31 + h));
      hftest::RoundTrip rt;
      ASSERT_NO_FATAL_FAILURE(verifyRoundTrip(p, EncodeOptions{}, &rt));
      if (w * h < 16) continue;  // tiny noise may still fit a model
      EXPECT_TRUE(rt.info.stored) << w << "x" << h;
      const size_t stride = size_t(w) + 3;
      std::vector<uint16_t> out(stride * size_t(h), 0xABCD);
      for (Layers layers : {Layers::L1, Layers::L12, Layers::All}) {
        ASSERT_EQ(hfpac::decode(rt.stream.data(), rt.stream.size(), out.data(), stride, out.size(), layers),
                  Status::Ok);
        for (int y = 0; y < h; ++y) {
          for (int x = 0; x < w; ++x) ASSERT_EQ(out[size_t(y) * stride + size_t(x)], p.at(x, y)) << x << "," << y;
          for (size_t x = size_t(w); x < stride && y + 1 < h; ++x) ASSERT_EQ(out[size_t(y) * stride + x], 0xABCD);
        }
      }
    }
  }
}

// encodeStored lays out any samples (smooth, constant, noise, either type, any stride) as the
// stored stream: decoded exactly, flagged stored, and for incompressible data the very bytes
// encode() falls back to.
TEST(Codec, EncodeStoredGivesTheStoredStreamOfAnySamples) {
  for (SampleType t : {SampleType::UInt16, SampleType::Int16}) {
    for (const Patch& p : {hftest::smooth(129, 129, t), hftest::constant(33, 7, 1234, t, 5),
                           hftest::noise(77, 13, t, 5, 3), hftest::noise(129, 129, t, 9)}) {
      std::vector<uint8_t> stream;
      ASSERT_EQ(hfpac::encodeStored(p.data(), p.stride, p.width, p.height, t, stream), Status::Ok);
      hfpac::PatchInfo info;
      ASSERT_EQ(hfpac::readInfo(stream.data(), stream.size(), info), Status::Ok);
      EXPECT_TRUE(info.stored);
      EXPECT_EQ(info.type, t);
      std::vector<uint16_t> out(size_t(p.width) * size_t(p.height));
      ASSERT_EQ(hfpac::decode(stream.data(), stream.size(), out.data(), size_t(p.width), out.size(), Layers::All),
                Status::Ok);
      for (int y = 0; y < p.height; ++y)
        for (int x = 0; x < p.width; ++x) ASSERT_EQ(out[size_t(y) * size_t(p.width) + size_t(x)], p.at(x, y));
    }
    const Patch noise = hftest::noise(129, 129, t, 9);
    std::vector<uint8_t> stored, encoded;
    ASSERT_EQ(hfpac::encodeStored(noise.data(), noise.stride, 129, 129, t, stored), Status::Ok);
    ASSERT_EQ(hfpac::encode(noise.data(), noise.stride, 129, 129, t, EncodeOptions{}, encoded), Status::Ok);
    EXPECT_EQ(stored, encoded);
  }
  std::vector<uint8_t> out;
  const uint16_t one = 0;
  EXPECT_EQ(hfpac::encodeStored(nullptr, 1, 1, 1, SampleType::UInt16, out), Status::InvalidArgument);
  EXPECT_EQ(hfpac::encodeStored(&one, 0, 1, 1, SampleType::UInt16, out), Status::InvalidArgument);
  EXPECT_EQ(hfpac::encodeStored(&one, 1, 0, 1, SampleType::UInt16, out), Status::InvalidArgument);
}

TEST(Codec, AlmostFlatIsNotFlat) {
  Patch p = hftest::constant(129, 129, 500, SampleType::Int16);
  for (auto [x, y] : {std::pair{0, 0}, std::pair{128, 128}, std::pair{64, 0}, std::pair{77, 101}}) {
    Patch q = p;
    q.at(x, y) = 501;
    hftest::RoundTrip rt;
    ASSERT_NO_FATAL_FAILURE(verifyRoundTrip(q, EncodeOptions{}, &rt));
    EXPECT_FALSE(rt.info.flat);
    q.at(x, y) = uint16_t(int16_t(-32768));
    ASSERT_NO_FATAL_FAILURE(verifyRoundTrip(q, EncodeOptions{}, &rt));
  }
}

TEST(Codec, SeaAndMountainIsSmallerThanNoise) {
  // Sanity of the compression itself: half flat sea must compress better than white noise.
  hftest::RoundTrip sea, noise;
  ASSERT_NO_FATAL_FAILURE(verifyRoundTrip(hftest::seaMountain(129, 129), EncodeOptions{}, &sea));
  ASSERT_NO_FATAL_FAILURE(verifyRoundTrip(hftest::noise(129, 129), EncodeOptions{}, &noise));
  EXPECT_LT(sea.stream.size(), noise.stream.size());
  EXPECT_LT(sea.stream.size(), size_t(129 * 129 * 2)) << "smaller than raw";
}

// ---- Option choices: automatic ones are never worse than the fixed ones ----

TEST(Codec, AutoSegmentKeepsTheSmallest) {
  const std::vector<Patch> patches = {hftest::smooth(129, 129, SampleType::UInt16, 61), hftest::seaMountain(129, 129),
                                      hftest::noise(40, 40), hftest::rampBumps(65, 33, SampleType::Int16, 62)};
  for (const Patch& p : patches)
    for (int bits : {-1, 0, 5}) {
      SCOPED_TRACE(p.name + " bits " + std::to_string(bits));
      hftest::RoundTrip autoRt;
      ASSERT_NO_FATAL_FAILURE(verifyRoundTrip(p, opts(0, bits), &autoRt));
      size_t best = SIZE_MAX;
      int bestSeg = 0;
      for (int seg : {5, 9, 17, 33}) {
        Status s;
        const size_t n = hftest::encodeOrDie(p, opts(seg, bits), &s).size();
        ASSERT_EQ(s, Status::Ok);
        if (n < best) best = n, bestSeg = seg;
      }
      EXPECT_EQ(autoRt.stream.size(), best) << "segment 0 chose " << autoRt.info.segment << ", best is " << bestSeg;
      // It is one of the four fixed streams.
      EXPECT_EQ(autoRt.stream, hftest::encodeOrDie(p, opts(autoRt.info.segment, bits)));
    }
}

TEST(Codec, AutoBitsNoLargerThanAnyFixedBits) {
  const std::vector<Patch> patches = {hftest::smooth(129, 129, SampleType::UInt16, 71), hftest::seaMountain(129, 129),
                                      hftest::noise(48, 48), hftest::withHoles(100, 60, SampleType::Int16, 72),
                                      hftest::rampBumps(17, 17, SampleType::Int16, 73)};
  for (const Patch& p : patches)
    for (int seg : {5, 9, 17, 33}) {
      SCOPED_TRACE(p.name + " segment " + std::to_string(seg));
      Status s;
      const size_t autoSize = hftest::encodeOrDie(p, opts(seg, -1), &s).size();
      ASSERT_EQ(s, Status::Ok);
      for (int b = 0; b <= hfpac::kMaxBits; ++b) {
        const size_t fixed = hftest::encodeOrDie(p, opts(seg, b), &s).size();
        ASSERT_EQ(s, Status::Ok);
        EXPECT_LE(autoSize, fixed) << "bits=-1 (auto) is larger than bits=" << b;
      }
    }
}

// ---- Masked value (nodata voids, flat sea) ----

TEST(Codec, MaskingOptions) {
  const std::vector<Patch> patches = {hftest::withHoles(129, 129, SampleType::Int16, 91),
                                      hftest::withHoles(100, 70, SampleType::UInt16, 92),
                                      hftest::seaMountain(129, 129), hftest::seaMountain(65, 33, SampleType::UInt16),
                                      hftest::smooth(64, 64), hftest::noise(40, 40)};
  for (const Patch& p : patches)
    for (int seg : {0, 9})
      for (int bits : {-1, 0, 6}) {
        SCOPED_TRACE(p.name + " " + std::to_string(p.width) + "x" + std::to_string(p.height) + " " +
                     hftest::optionsName(opts(seg, bits)));
        hftest::RoundTrip none, automatic, nodata;
        ASSERT_NO_FATAL_FAILURE(verifyRoundTrip(p, noMask(opts(seg, bits)), &none));
        ASSERT_NO_FATAL_FAILURE(verifyRoundTrip(p, opts(seg, bits), &automatic));
        ASSERT_NO_FATAL_FAILURE(verifyRoundTrip(p, withNodata(opts(seg, bits), p.type), &nodata));
        // Without candidates there is no mask; with more candidates the stream never grows.
        EXPECT_FALSE(none.info.masked);
        EXPECT_LE(automatic.stream.size(), none.stream.size());
        EXPECT_LE(nodata.stream.size(), automatic.stream.size());
        if (nodata.info.masked && !automatic.info.masked) {
          const uint16_t want = p.type == SampleType::Int16 ? uint16_t(0x8000) : uint16_t(0xFFFF);
          EXPECT_EQ(nodata.info.maskValue, want) << "only the nodata value is a new candidate";
        }
      }
}

TEST(Codec, NodataOptionWithValueNotInPatch) {
  const Patch p = hftest::smooth(50, 40);
  EncodeOptions o;
  o.hasNodata = true;
  o.nodata = 7;  // not in the patch
  o.autoMask = false;
  hftest::RoundTrip rt;
  ASSERT_NO_FATAL_FAILURE(verifyRoundTrip(p, o, &rt));
  EXPECT_FALSE(rt.info.masked);
}

TEST(Codec, MostlyNodataPatch) {
  // 95 % voids, a few real heights: the mask must not swallow the real points.
  hftest::Rng rng(93);
  for (SampleType t : {SampleType::Int16, SampleType::UInt16}) {
    const uint16_t nodata = t == SampleType::Int16 ? uint16_t(0x8000) : uint16_t(0xFFFF);
    Patch p = hftest::constant(129, 129, nodata, t);
    for (int k = 0; k < 800; ++k) p.at(rng.range(0, 128), rng.range(0, 128)) = uint16_t(rng.range(100, 3000));
    for (const EncodeOptions& o : {opts(9, -1), withNodata(opts(0, -1), t), noMask(opts(17, 2))})
      ASSERT_NO_FATAL_FAILURE(verifyRoundTrip(p, o));
  }
}

// ---- Determinism and size bound ----

TEST(Codec, EncodeIsDeterministic) {
  const std::vector<Patch> patches = {hftest::smooth(129, 129), hftest::noise(77, 51), hftest::seaMountain(130, 65),
                                      hftest::withHoles(64, 64, SampleType::Int16)};
  for (const Patch& p : patches)
    for (const EncodeOptions& o : {opts(9, -1), opts(0, -1), opts(33, 7)}) {
      Status s1, s2;
      hfpac::EncodeStats st1, st2;
      const auto a = hftest::encodeOrDie(p, o, &s1, &st1);
      const Patch copy = p;  // different address, same values
      const auto b = hftest::encodeOrDie(copy, o, &s2, &st2);
      ASSERT_EQ(s1, Status::Ok);
      ASSERT_EQ(s2, Status::Ok);
      EXPECT_EQ(a, b) << p.name << " " << hftest::optionsName(o);
      EXPECT_EQ(st1.prominentPoints, st2.prominentPoints);
      EXPECT_EQ(0, std::memcmp(st1.bitsHistogram, st2.bitsHistogram, sizeof st1.bitsHistogram));
    }
}

TEST(Codec, EncodeReplacesOutput) {
  const Patch p = hftest::smooth(33, 33);
  std::vector<uint8_t> out(12345, 0x77);
  ASSERT_EQ(hfpac::encode(p.data(), p.stride, p.width, p.height, p.type, EncodeOptions{}, out), Status::Ok);
  EXPECT_EQ(out, hftest::encodeOrDie(p, EncodeOptions{}));
}

TEST(Codec, MaxEncodedSizeIsAnUpperBound) {
  // Worst cases: noise at every option, at several sizes.
  for (Size sz : {Size{1, 1}, Size{2, 2}, Size{5, 5}, Size{16, 16}, Size{17, 17}, Size{33, 1}, Size{100, 3}, Size{129, 129}}) {
    const Patch ps[] = {hftest::noise(sz.w, sz.h, SampleType::UInt16, 81), hftest::checkerboard(sz.w, sz.h, 1),
                        hftest::extremes(sz.w, sz.h)};
    for (const Patch& p : ps)
      for (int seg : kSegments)
        for (int bits = -1; bits <= hfpac::kMaxBits; ++bits) {
          Status s;
          const auto st = hftest::encodeOrDie(p, opts(seg, bits), &s);
          ASSERT_EQ(s, Status::Ok);
          EXPECT_LE(st.size(), hfpac::maxEncodedSize(sz.w, sz.h))
              << p.name << " " << sz.w << "x" << sz.h << " " << hftest::optionsName(opts(seg, bits));
        }
  }
  EXPECT_GE(hfpac::maxEncodedSize(1, 1), size_t(hfpac::kHeaderBytes));
  EXPECT_GE(hfpac::maxEncodedSize(hfpac::kMaxPatchSide, hfpac::kMaxPatchSide), size_t(2) * hfpac::kMaxPatchSide * hfpac::kMaxPatchSide);
  EXPECT_LE(hfpac::maxEncodedSize(129, 129), hfpac::maxEncodedSize(130, 129));
}

// ---- readInfo ----

TEST(Codec, ReadInfoFields) {
  hftest::RoundTrip rt;
  const Patch p = hftest::rampBumps(33, 20, SampleType::Int16, 91);
  ASSERT_NO_FATAL_FAILURE(verifyRoundTrip(p, opts(5, 4), &rt));
  EXPECT_EQ(rt.info.width, 33);
  EXPECT_EQ(rt.info.height, 20);
  EXPECT_EQ(rt.info.type, SampleType::Int16);
  EXPECT_EQ(rt.info.segment, 5);
  EXPECT_FALSE(rt.info.perAreaBits);
  EXPECT_EQ(rt.info.uniformBits, 4);
  EXPECT_FALSE(rt.info.flat);
  EXPECT_GT(rt.info.layer3Bytes, 0u);
  // The first bytes are the magic, little-endian, then the version.
  ASSERT_GE(rt.stream.size(), 5u);
  const uint32_t magic = uint32_t(rt.stream[0]) | uint32_t(rt.stream[1]) << 8 | uint32_t(rt.stream[2]) << 16 |
                         uint32_t(rt.stream[3]) << 24;
  EXPECT_EQ(magic, hfpac::kMagic);
  EXPECT_EQ(rt.stream[0], 'H');
  EXPECT_EQ(rt.stream[3], 'C');
}

TEST(Codec, ReadInfoShortOrForeignInput) {
  hfpac::PatchInfo info;
  const std::vector<uint8_t> st = hftest::encodeOrDie(hftest::smooth(20, 20), EncodeOptions{});
  EXPECT_EQ(hfpac::readInfo(st.data(), 0, info), Status::TruncatedHeader);
  EXPECT_EQ(hfpac::readInfo(st.data(), hfpac::kHeaderBytes - 1, info), Status::TruncatedHeader);
  std::vector<uint8_t> bad = st;
  bad[0] ^= 0x20;  // 'h'
  EXPECT_EQ(hfpac::readInfo(bad.data(), bad.size(), info), Status::BadMagic);
  std::vector<uint16_t> dst(400);
  EXPECT_EQ(hfpac::decode(bad.data(), bad.size(), dst.data(), 20, dst.size()), Status::BadMagic);
  bad = st;
  bad[4] = uint8_t(hfpac::kVersion + 1);
  EXPECT_EQ(hfpac::readInfo(bad.data(), bad.size(), info), Status::UnsupportedVersion);
  EXPECT_EQ(hfpac::decode(bad.data(), bad.size(), dst.data(), 20, dst.size()), Status::UnsupportedVersion);
  EXPECT_NE(hfpac::readInfo(st.data(), st.size() - 4, info), Status::Ok);
  EXPECT_EQ(hfpac::readInfo(st.data(), st.size() - 4, info), Status::TruncatedStream);
}

// ---- Invalid arguments ----

TEST(Codec, EncodeInvalidArguments) {
  const Patch p = hftest::smooth(40, 30);
  std::vector<uint8_t> out;
  auto enc = [&](const uint16_t* s, size_t stride, int w, int h, EncodeOptions o) {
    return hfpac::encode(s, stride, w, h, SampleType::UInt16, o, out);
  };
  EXPECT_EQ(enc(nullptr, 40, 40, 30, {}), Status::InvalidArgument);
  EXPECT_EQ(enc(p.data(), 40, 0, 30, {}), Status::InvalidArgument);
  EXPECT_EQ(enc(p.data(), 40, 40, 0, {}), Status::InvalidArgument);
  EXPECT_EQ(enc(p.data(), 40, -1, 30, {}), Status::InvalidArgument);
  EXPECT_EQ(enc(p.data(), 40, 40, -5, {}), Status::InvalidArgument);
  std::vector<uint16_t> big(size_t(hfpac::kMaxPatchSide) + 1, 1);
  EXPECT_EQ(enc(big.data(), big.size(), hfpac::kMaxPatchSide + 1, 1, {}), Status::InvalidArgument);
  EXPECT_EQ(enc(big.data(), 1, 1, hfpac::kMaxPatchSide + 1, {}), Status::InvalidArgument);
  EXPECT_EQ(enc(p.data(), 39, 40, 30, {}), Status::InvalidArgument) << "stride < width";
  EXPECT_EQ(enc(p.data(), 0, 40, 30, {}), Status::InvalidArgument) << "stride 0";
  for (int seg : {-1, 1, 2, 3, 4, 6, 7, 8, 10, 16, 32, 34, 65, 1000})
    EXPECT_EQ(enc(p.data(), 40, 40, 30, opts(seg, -1)), Status::InvalidArgument) << "segment " << seg;
  for (int bits : {-100, -2, 17, 31, 32, 1000})
    EXPECT_EQ(enc(p.data(), 40, 40, 30, opts(9, bits)), Status::InvalidArgument) << "bits " << bits;
  EXPECT_EQ(hfpac::encode(p.data(), 40, 40, 30, SampleType(7), EncodeOptions{}, out), Status::InvalidArgument)
      << "unknown sample type";
  // Valid extremes are accepted.
  EXPECT_EQ(enc(p.data(), 40, 40, 30, opts(33, 16)), Status::Ok);
  EXPECT_EQ(enc(p.data(), 40, 1, 1, opts(5, 0)), Status::Ok);
}

TEST(Codec, DecodeInvalidArguments) {
  const std::vector<uint8_t> st = hftest::encodeOrDie(hftest::smooth(40, 30), EncodeOptions{});
  std::vector<uint16_t> dst(40 * 30);
  EXPECT_EQ(hfpac::decode(nullptr, st.size(), dst.data(), 40, dst.size()), Status::InvalidArgument);
  EXPECT_EQ(hfpac::decode(st.data(), st.size(), nullptr, 40, dst.size()), Status::InvalidArgument);
  EXPECT_EQ(hfpac::decode(st.data(), st.size(), dst.data(), 39, dst.size()), Status::InvalidArgument);
  EXPECT_EQ(hfpac::decode(st.data(), st.size(), dst.data(), 40, dst.size() - 1), Status::InvalidArgument);
  EXPECT_EQ(hfpac::decode(st.data(), st.size(), dst.data(), 40, 0), Status::InvalidArgument);
  // Exactly (height - 1) * stride + width is enough.
  std::vector<uint16_t> wide(29 * 50 + 40);
  EXPECT_EQ(hfpac::decode(st.data(), st.size(), wide.data(), 50, wide.size()), Status::Ok);
  EXPECT_EQ(hfpac::decode(st.data(), st.size(), wide.data(), 50, wide.size() - 1), Status::InvalidArgument);

  hfpac::PatchInfo info;
  EXPECT_NE(hfpac::readInfo(nullptr, st.size(), info), Status::Ok);
  hfpac::PatchView view;
  EXPECT_NE(hfpac::PatchView::open(nullptr, st.size(), view), Status::Ok);
  uint16_t v = 0;
  EXPECT_NE(hfpac::decodePoint(nullptr, st.size(), 0, 0, v), Status::Ok);
  EXPECT_EQ(hfpac::decodePoint(st.data(), st.size(), 0, 0, v), Status::Ok);
  EXPECT_EQ(hfpac::decodePoint(st.data(), st.size(), 39, 29, v), Status::Ok);
  EXPECT_EQ(hfpac::decodePoint(st.data(), st.size(), 40, 0, v), Status::InvalidArgument);
  EXPECT_EQ(hfpac::decodePoint(st.data(), st.size(), 0, 30, v), Status::InvalidArgument);
  EXPECT_EQ(hfpac::decodePoint(st.data(), st.size(), -1, 0, v), Status::InvalidArgument);
  EXPECT_EQ(hfpac::decodePoint(st.data(), st.size(), 0, -1, v), Status::InvalidArgument);
}

// ---- Status messages ----

TEST(Codec, StatusMessagesAreDistinct) {
  const Status all[] = {Status::Ok,           Status::InvalidArgument,  Status::TruncatedHeader,
                        Status::BadMagic,     Status::UnsupportedVersion, Status::InvalidHeader,
                        Status::TruncatedStream, Status::SizeMismatch,  Status::InvalidAreaTable,
                        Status::InvalidProminent, Status::InvalidMask, Status::InvalidBlock,
                        Status::Unsupported, Status::OutOfRange};
  std::set<std::string> seen;
  for (Status s : all) {
    const char* m = hfpac::statusMessage(s);
    ASSERT_NE(m, nullptr) << int(s);
    EXPECT_GT(std::strlen(m), 0u) << int(s);
    EXPECT_EQ(std::strchr(m, '\n'), nullptr) << "one line: " << m;
    EXPECT_TRUE(seen.insert(m).second) << "duplicate message: " << m;
  }
  EXPECT_EQ(seen.size(), std::size(all));
  EXPECT_NE(hfpac::statusMessage(Status(12345)), nullptr);
  EXPECT_NE(hfpac::statusMessage(Status(-1)), nullptr);
}

}  // namespace
