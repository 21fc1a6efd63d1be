// progressive_test.cpp - what the partial layers promise (error bounds, the shape of the layer-1
// surface) and that random access (PatchView, decodePoint) agrees with the full decoder.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
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

using hftest::opts;

std::vector<Patch> progressivePatches() {
  return {hftest::smooth(129, 129, SampleType::UInt16, 101),
          hftest::noise(65, 40, SampleType::UInt16, 102),
          hftest::seaMountain(97, 80, SampleType::Int16, 103),
          hftest::withHoles(70, 70, SampleType::Int16, 104),
          hftest::extremes(33, 33, 105),
          hftest::cliffs(50, 20, SampleType::UInt16),
          hftest::rampBumps(17, 17, SampleType::Int16, 106)};
}

// ---- Layers 1+2: within 2^(b-1) for a fixed b; lossless for b = 0 ----

class FixedBits : public ::testing::TestWithParam<int> {};

TEST_P(FixedBits, Layer12ErrorBound) {
  const int b = GetParam();
  const int32_t bound = b > 0 ? (int32_t(1) << (b - 1)) : 0;
  for (const Patch& p : progressivePatches())
    for (int seg : {5, 9, 17, 33}) {
      SCOPED_TRACE(p.name + " segment " + std::to_string(seg) + " bits " + std::to_string(b));
      Status s;
      const auto st = hftest::encodeOrDie(p, opts(seg, b), &s);
      ASSERT_EQ(s, Status::Ok);
      std::vector<uint16_t> out;
      ASSERT_EQ(hftest::decodeTo(st, p.width, p.height, out, Layers::L12), Status::Ok);
      EXPECT_LE(hftest::maxAbsError(p, out, size_t(p.width)), bound);
      if (b == 0) {
        EXPECT_EQ(hftest::maxAbsError(p, out, size_t(p.width)), 0) << "b = 0: layers 1+2 are lossless";
      }
      ASSERT_EQ(hftest::decodeTo(st, p.width, p.height, out, Layers::All), Status::Ok);
      EXPECT_EQ(hftest::maxAbsError(p, out, size_t(p.width)), 0);
    }
}

INSTANTIATE_TEST_SUITE_P(Progressive, FixedBits, ::testing::Range(0, hfpac::kMaxBits + 1),
                         [](const ::testing::TestParamInfo<int>& i) { return "b" + std::to_string(i.param); });

TEST(Progressive, Layer12ErrorBoundAutoBits) {
  for (const Patch& p : progressivePatches())
    for (int seg : {0, 5, 9, 17, 33}) {
      hftest::RoundTrip rt;
      // verifyRoundTrip checks L12 against the largest b of the stats histogram.
      ASSERT_NO_FATAL_FAILURE(hftest::verifyRoundTrip(p, opts(seg, -1), &rt));
    }
}

// ---- Layer 1: the Bezier surface ----

// Corners of the segment grid (multiples of m - 1) are control points that interpolate the
// original samples; a surface built like that has no seams (neighbouring segments share them).
TEST(Progressive, Layer1SegmentCornersAreOriginalSamples) {
  std::vector<Patch> patches = progressivePatches();
  patches.push_back(hftest::quadratic(129, 129));
  patches.push_back(hftest::smooth(257, 257, SampleType::Int16, 107, -500, 4000));
  for (const Patch& p : patches)
    for (int seg : {5, 9, 17, 33})
      for (int bits : {-1, 0, 8}) {
        SCOPED_TRACE(p.name + " " + std::to_string(p.width) + "x" + std::to_string(p.height) + " " +
                     hftest::optionsName(opts(seg, bits)));
        Status s;
        const auto st = hftest::encodeOrDie(p, opts(seg, bits), &s);
        ASSERT_EQ(s, Status::Ok);
        std::vector<uint16_t> l1;
        ASSERT_EQ(hftest::decodeTo(st, p.width, p.height, l1, Layers::L1), Status::Ok);
        const int n = seg - 1;
        int bad = 0;
        for (int y = 0; y < p.height; y += n)
          for (int x = 0; x < p.width; x += n) {
            const uint16_t got = l1[size_t(y) * size_t(p.width) + size_t(x)];
            if (got != p.at(x, y) && bad++ < 3)
              ADD_FAILURE() << "L1 at segment corner (" << x << "," << y << ") = " << p.toHeight(got)
                            << ", original " << p.height_at(x, y);
          }
        EXPECT_EQ(bad, 0);
      }
}

// Inside one segment every row and every column of the layer-1 surface is a quadratic
// polynomial of the sample index (a biquadratic Bezier patch), up to the rounding of each value:
// third finite differences of rounded quadratic values are at most 8 * 0.5 = 4.
TEST(Progressive, Layer1IsPiecewiseBiquadratic) {
  const std::vector<Patch> patches = {hftest::smooth(129, 129, SampleType::UInt16, 111),
                                      hftest::rampBumps(129, 65, SampleType::Int16, 112),
                                      hftest::noise(65, 65, SampleType::UInt16, 113),
                                      hftest::quadratic(257, 129, SampleType::Int16)};
  for (const Patch& p : patches)
    for (int seg : {5, 9, 17, 33}) {
      SCOPED_TRACE(p.name + " segment " + std::to_string(seg));
      Status s;
      const auto st = hftest::encodeOrDie(p, opts(seg, -1), &s);
      ASSERT_EQ(s, Status::Ok);
      hfpac::PatchInfo info;
      ASSERT_EQ(hfpac::readInfo(st.data(), st.size(), info), Status::Ok);
      if (info.stored) continue;  // no surface: every layer is the data itself
      std::vector<uint16_t> l1;
      ASSERT_EQ(hftest::decodeTo(st, p.width, p.height, l1, Layers::L1), Status::Ok);
      const int n = seg - 1;
      auto v = [&](int x, int y) { return p.toHeight(l1[size_t(y) * size_t(p.width) + size_t(x)]); };
      // Values the surface does not explain: clamped ones, and masked points (exact at layer 1).
      auto clampedAt = [&](int x, int y) {
        if (info.masked && p.at(x, y) == info.maskValue) return true;
        const int32_t h = v(x, y);
        return p.type == SampleType::Int16 ? (h == -32768 || h == 32767) : (h == 0 || h == 65535);
      };
      int bad = 0;
      // Rows: for each segment span [x0, x0 + n] and each 4 consecutive samples in it.
      for (int y = 0; y < p.height; ++y)
        for (int x0 = 0; x0 + n < p.width; x0 += n)
          for (int x = x0; x + 3 <= x0 + n; ++x) {
            if (clampedAt(x, y) || clampedAt(x + 1, y) || clampedAt(x + 2, y) || clampedAt(x + 3, y)) continue;
            const int32_t a = v(x, y), b = v(x + 1, y), c = v(x + 2, y), d = v(x + 3, y);
            const int32_t d3 = d - 3 * c + 3 * b - a;
            if (std::abs(d3) > 4 && bad++ < 3)
              ADD_FAILURE() << "row " << y << " x " << x << "..: third difference " << d3;
          }
      for (int x = 0; x < p.width; ++x)
        for (int y0 = 0; y0 + n < p.height; y0 += n)
          for (int y = y0; y + 3 <= y0 + n; ++y) {
            if (clampedAt(x, y) || clampedAt(x, y + 1) || clampedAt(x, y + 2) || clampedAt(x, y + 3)) continue;
            const int32_t a = v(x, y), b = v(x, y + 1), c = v(x, y + 2), d = v(x, y + 3);
            const int32_t d3 = d - 3 * c + 3 * b - a;
            if (std::abs(d3) > 4 && bad++ < 3)
              ADD_FAILURE() << "column " << x << " y " << y << "..: third difference " << d3;
          }
      EXPECT_EQ(bad, 0);
    }
}

// A quadratic polynomial is exactly a biquadratic Bezier surface on every segment, so layer 1
// alone reproduces it up to the rounding of control points and values.
TEST(Progressive, Layer1ReproducesQuadratics) {
  for (SampleType t : {SampleType::UInt16, SampleType::Int16})
    for (int seg : {5, 9, 17, 33}) {
      const Patch p = hftest::quadratic(129, 129, t);
      Status s;
      const auto st = hftest::encodeOrDie(p, opts(seg, -1), &s);
      ASSERT_EQ(s, Status::Ok);
      std::vector<uint16_t> l1;
      ASSERT_EQ(hftest::decodeTo(st, p.width, p.height, l1, Layers::L1), Status::Ok);
      EXPECT_LE(hftest::maxAbsError(p, l1, size_t(p.width)), 2) << "segment " << seg;
    }
}

// Layer 1 follows smooth terrain closely (a sanity bound, far from tight).
TEST(Progressive, Layer1ApproximatesSmoothTerrain) {
  const Patch p = hftest::smooth(129, 129, SampleType::UInt16, 121, 20000, 3000);
  for (int seg : {5, 9}) {
    Status s;
    const auto st = hftest::encodeOrDie(p, opts(seg, -1), &s);
    ASSERT_EQ(s, Status::Ok);
    std::vector<uint16_t> l1;
    ASSERT_EQ(hftest::decodeTo(st, p.width, p.height, l1, Layers::L1), Status::Ok);
    EXPECT_LE(hftest::maxAbsError(p, l1, size_t(p.width)), 60) << "segment " << seg;
  }
}

// Approximations that overshoot are clamped to the type's range, never wrapped around:
// heights next to -32768 (Int16) or 0 / 65535 (UInt16) with cliffs stay on their side.
TEST(Progressive, Layer1AndLayer12ClampInsteadOfWrapping) {
  struct C {
    SampleType t;
    int lo, hi;
  };
  const C cases[] = {{SampleType::Int16, -32768, -32000}, {SampleType::Int16, 32000, 32767},
                     {SampleType::UInt16, 0, 700}, {SampleType::UInt16, 64800, 65535}};
  for (const C& c : cases) {
    // Cliffs between lo and hi plus noise: the Bezier fit overshoots at every step.
    hftest::Rng rng(uint64_t(c.lo) * 7 + 3);
    const Patch p = hftest::generate("nearLimit", 65, 65, c.t, [&](int x, int y) {
      const bool high = ((x / 5) + (y / 9)) % 2;
      return high ? c.hi - rng.range(0, 20) : c.lo + rng.range(0, 20);
    });
    const int32_t range = c.hi - c.lo;
    for (int seg : {5, 9, 17, 33})
      for (int bits : {-1, 4, 12}) {
        SCOPED_TRACE(std::to_string(c.lo) + ".." + std::to_string(c.hi) + " " + hftest::optionsName(opts(seg, bits)));
        Status s;
        const auto st = hftest::encodeOrDie(p, opts(seg, bits), &s);
        ASSERT_EQ(s, Status::Ok);
        for (Layers layers : {Layers::L1, Layers::L12}) {
          std::vector<uint16_t> out;
          ASSERT_EQ(hftest::decodeTo(st, p.width, p.height, out, layers), Status::Ok);
          int32_t mn = 1 << 20, mx = -(1 << 20);
          for (uint16_t v : out) mn = std::min(mn, p.toHeight(v)), mx = std::max(mx, p.toHeight(v));
          EXPECT_GE(mn, c.lo - 3 * range) << "layers " << int(layers) << ": wrapped around?";
          EXPECT_LE(mx, c.hi + 3 * range) << "layers " << int(layers) << ": wrapped around?";
        }
      }
  }
}

// ---- Random access equals the full decode ----

TEST(Progressive, PatchViewEqualsDecodeEverywhere) {
  std::vector<Patch> patches = progressivePatches();
  patches.push_back(hftest::constant(20, 30, 4242));
  patches.push_back(hftest::seaMountain(130, 65));
  patches.push_back(hftest::noise(1, 37, SampleType::Int16, 131));
  patches.push_back(hftest::noise(37, 1, SampleType::UInt16, 132));
  for (const Patch& p : patches)
    for (const EncodeOptions& o : {opts(9, -1), opts(5, 0), opts(33, 16), opts(0, -1), opts(17, 3)}) {
      SCOPED_TRACE(p.name + " " + std::to_string(p.width) + "x" + std::to_string(p.height) + " " + hftest::optionsName(o));
      Status s;
      const auto st = hftest::encodeOrDie(p, o, &s);
      ASSERT_EQ(s, Status::Ok);
      hfpac::PatchView view;
      ASSERT_EQ(hfpac::PatchView::open(st.data(), st.size(), view), Status::Ok);
      hfpac::PatchInfo info;
      ASSERT_EQ(hfpac::readInfo(st.data(), st.size(), info), Status::Ok);
      hftest::expectSameInfo(view.info(), info);
      const hfpac::PatchView copy = view;  // views are values; a copy reads the same stream
      for (Layers layers : {Layers::L1, Layers::L12, Layers::All}) {
        std::vector<uint16_t> full;
        ASSERT_EQ(hftest::decodeTo(st, p.width, p.height, full, layers), Status::Ok);
        int bad = 0;
        for (int y = 0; y < p.height; ++y)
          for (int x = 0; x < p.width; ++x) {
            const uint16_t want = full[size_t(y) * size_t(p.width) + size_t(x)];
            const uint16_t got = view.sample(x, y, layers);
            if (got != want && bad++ < 3)
              ADD_FAILURE() << "layers " << int(layers) << " (" << x << "," << y << "): sample " << got
                            << " decode " << want;
            if (copy.sample(x, y, layers) != want && bad++ < 3) ADD_FAILURE() << "copied view differs";
          }
        EXPECT_EQ(bad, 0) << "layers " << int(layers);
      }
      // The default layer is All.
      EXPECT_EQ(view.sample(0, 0), p.at(0, 0));
      EXPECT_EQ(view.sample(p.width - 1, p.height - 1), p.at(p.width - 1, p.height - 1));
    }
}

TEST(Progressive, DecodePointEqualsDecode) {
  const std::vector<Patch> patches = {hftest::smooth(129, 129, SampleType::Int16, 141), hftest::noise(40, 33),
                                      hftest::withHoles(65, 17, SampleType::UInt16, 142)};
  for (const Patch& p : patches)
    for (const EncodeOptions& o : {opts(9, -1), opts(17, 5)}) {
      Status s;
      const auto st = hftest::encodeOrDie(p, o, &s);
      ASSERT_EQ(s, Status::Ok);
      for (Layers layers : {Layers::L1, Layers::L12, Layers::All}) {
        std::vector<uint16_t> full;
        ASSERT_EQ(hftest::decodeTo(st, p.width, p.height, full, layers), Status::Ok);
        // Every point on a coarse lattice plus all four borders (decodePoint re-validates each time).
        for (int y = 0; y < p.height; ++y)
          for (int x = 0; x < p.width; ++x) {
            const bool border = x == 0 || y == 0 || x == p.width - 1 || y == p.height - 1;
            if (!border && (x % 7 || y % 5)) continue;
            uint16_t v = 0;
            ASSERT_EQ(hfpac::decodePoint(st.data(), st.size(), x, y, v, layers), Status::Ok);
            ASSERT_EQ(v, full[size_t(y) * size_t(p.width) + size_t(x)])
                << p.name << " layers " << int(layers) << " (" << x << "," << y << ")";
          }
        uint16_t v = 0;
        ASSERT_EQ(hfpac::decodePoint(st.data(), st.size(), 3, 2, v), Status::Ok);
        EXPECT_EQ(v, p.at(3, 2)) << "default layers = All";
      }
    }
}

}  // namespace
