// simd_rows_test.cpp - the CPU decoder's AVX2 kernels (src/codec/simd_rows.h) against scalar
// references of their contracts, on every segment size, field width and bit alignment. The
// round-trip tests only see the kernels through whole streams; here every lane and edge case
// (partial column groups, b = 0 and 16, masked lanes, out-of-range flags) is checked directly.
// Skipped where the CPU has no AVX2 (the decoder then never calls them).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "codec/layout.h"
#include "codec/simd_rows.h"

namespace {

using hfpac::detail::hasAvx2;

TEST(SimdRows, PredictSegmentEqualsEvalSegment) {
  if (!hasAvx2()) GTEST_SKIP() << "no AVX2 on this CPU";
  std::mt19937 rng(7);
  for (int segLog = 1; segLog <= 5; ++segLog) {
    const int n = 1 << segLog;
    for (int trial = 0; trial < 300; ++trial) {
      // Control points over the whole range a valid header allows (|p| < 2^21), and typical ones.
      const int32_t range = trial % 3 == 0 ? (1 << 21) - 1 : 70000;
      std::uniform_int_distribution<int32_t> value(trial % 3 == 0 ? -range : -2000, range);
      hfpac::detail::SegmentControls c;
      for (auto& row : c.p)
        for (int32_t& v : row) v = value(rng);
      const int len = 1 + int(rng() % uint32_t(n + 1));  // 1 .. n + 1 columns
      const int j0 = int(rng() % uint32_t(n)), j1 = j0 + 1 + int(rng() % uint32_t(n + 1 - j0));
      const size_t stride = size_t(len) + 5;
      std::vector<uint16_t> out(size_t(j1 - j0) * stride, 0xabcd);
      hfpac::detail::predictSegmentAvx2(c.p, segLog, j0, j1, len, out.data(), stride);
      for (int j = j0; j < j1; ++j)
        for (int a = 0; a < int(stride); ++a) {
          const uint16_t got = out[size_t(j - j0) * stride + size_t(a)];
          if (a < len) {
            ASSERT_EQ(got, hfpac::detail::evalSegment(c, a, j, segLog)) << "segLog " << segLog << " row " << j << " column " << a;
          } else {
            ASSERT_EQ(got, 0xabcd) << "wrote past the segment";
          }
        }
    }
  }
}

// Scalar reference of lowRow16Avx2 for one row whose fields start at `bit`.
uint32_t referenceRow(const std::vector<uint8_t>& bytes, uint64_t bit, int b, const int32_t* corr,
                      uint16_t* row, uint16_t flip, uint32_t maskBits, uint16_t maskOut) {
  uint32_t bad = 0;
  for (int lx = 0; lx < 16; ++lx) {
    uint32_t low = 0;
    for (int k = 0; k < b; ++k) {
      const uint64_t at = bit + uint64_t(lx * b + k);
      low |= uint32_t(bytes[size_t(at / 8)] >> (at % 8) & 1u) << k;
    }
    const int32_t v = int32_t(row[lx]) + corr[lx] + int32_t(low) - (b > 0 ? 1 << (b - 1) : 0);
    bad |= uint32_t(v < 0 || v > 65535);
    row[lx] = (maskBits >> lx & 1u) ? maskOut : uint16_t(uint16_t(v) ^ flip);
  }
  return bad;
}

TEST(SimdRows, LowRowsEqualTheScalarReference) {
  if (!hasAvx2()) GTEST_SKIP() << "no AVX2 on this CPU";
  std::mt19937 rng(11);
  for (int b = 0; b <= 16; ++b)
    for (int s0 = 0; s0 < 8; ++s0)
      for (int trial = 0; trial < 24; ++trial) {
        const int rows = 1 + int(rng() % 16u);
        // The fields of `rows` rows, then exactly the 16 readable bytes the contract asks for
        // after the first byte of the last row's field 12.
        const uint64_t first = uint64_t(s0) + 8 * uint64_t(rng() % 5u);
        const uint64_t field12 = first + uint64_t((rows - 1) * 16 + 12) * uint64_t(b);
        std::vector<uint8_t> bytes(size_t(field12 / 8) + 16);
        for (uint8_t& v : bytes) v = uint8_t(rng());
        std::vector<uint16_t> pred(size_t(rows) * 20), want;
        std::vector<int32_t> corr(size_t(rows) * 16, 0);
        std::vector<uint32_t> maskRows(size_t(rows), 0);
        const bool withCorr = trial % 2 == 1, withMask = trial % 3 == 2;
        // Mostly in range; trial 5 pushes predictions to the edges so the range flag trips.
        for (uint16_t& v : pred) v = uint16_t(trial == 5 ? (rng() % 2 ? 0 : 65535) : 20000 + rng() % 20000);
        if (withCorr)
          for (int32_t& v : corr) v = rng() % 7u == 0 ? int32_t(rng() % 4001u) - 2000 : 0;
        if (withMask)
          for (uint32_t& v : maskRows) v = rng() & 0xffffu;
        const uint16_t flip = trial % 4 == 0 ? 0x8000 : 0, maskOut = uint16_t(rng());
        want = pred;
        uint32_t wantBad = 0;
        for (int ly = 0; ly < rows; ++ly)
          wantBad |= referenceRow(bytes, first + uint64_t(ly * 16) * uint64_t(b), b, corr.data() + ly * 16,
                                  want.data() + ly * 20, flip, maskRows[size_t(ly)], maskOut);
        std::vector<uint16_t> area = pred;
        const uint32_t areaBad = hfpac::detail::lowArea16Avx2(
            bytes.data(), first, b, rows, withCorr ? corr.data() : nullptr, area.data(), 20, flip,
            withMask ? maskRows.data() : nullptr, maskOut);
        ASSERT_EQ(area, want) << "b " << b << " s0 " << s0 << " rows " << rows;
        ASSERT_EQ(areaBad != 0, wantBad != 0) << "b " << b << " s0 " << s0;
        std::vector<uint16_t> byRow = pred;
        uint32_t rowBad = 0;
        for (int ly = 0; ly < rows; ++ly)
          rowBad |= hfpac::detail::lowRow16Avx2(bytes.data(), first + uint64_t(ly * 16) * uint64_t(b), b,
                                                corr.data() + ly * 16, byRow.data() + ly * 20, flip,
                                                maskRows[size_t(ly)], maskOut);
        ASSERT_EQ(byRow, want) << "b " << b << " s0 " << s0;
        ASSERT_EQ(rowBad != 0, wantBad != 0);
      }
}

}  // namespace
