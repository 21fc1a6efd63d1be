// simd_rows_test.cpp - the CPU decoders' AVX2 paths (src/codec/simd_rows.h, ans_avx2.cpp)
// against the scalar ones. The kernels against scalar references of their contracts, on every
// segment size, field width and bit alignment (partial column groups, b = 0 and 16, masked
// lanes, out-of-range flags); then whole HFPaC and HFAN decodes, SIMD on and off in the same
// process, on valid and on corrupted streams: the same status and, when Ok, the same samples.
// Skipped where the CPU has no AVX2 (the decoders then never use it).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "codec/ans.h"
#include "codec/hfpac.h"
#include "codec/layout.h"
#include "codec/simd_rows.h"
#include "test_util.h"

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
            ASSERT_EQ(got, hfpac::detail::evalSegment(c, a, j, segLog))
                << "segLog " << segLog << " row " << j << " column " << a;
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
        for (uint16_t& v : pred)
          v = uint16_t(trial == 5 ? (rng() % 2 ? 0 : 65535) : 20000 + rng() % 20000);
        if (withCorr)
          for (int32_t& v : corr) v = rng() % 7u == 0 ? int32_t(rng() % 4001u) - 2000 : 0;
        if (withMask)
          for (uint32_t& v : maskRows) v = rng() & 0xffffu;
        const uint16_t flip = trial % 4 == 0 ? 0x8000 : 0, maskOut = uint16_t(rng());
        want = pred;
        uint32_t wantBad = 0;
        for (int ly = 0; ly < rows; ++ly)
          wantBad |=
              referenceRow(bytes, first + uint64_t(ly * 16) * uint64_t(b), b, corr.data() + ly * 16,
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
          rowBad |= hfpac::detail::lowRow16Avx2(
              bytes.data(), first + uint64_t(ly * 16) * uint64_t(b), b, corr.data() + ly * 16,
              byRow.data() + ly * 20, flip, maskRows[size_t(ly)], maskOut);
        ASSERT_EQ(byRow, want) << "b " << b << " s0 " << s0;
        ASSERT_EQ(rowBad != 0, wantBad != 0);
      }
}

// Decodes `stream` with the SIMD paths off and on; both statuses must match, and so must the
// samples whenever the decode succeeds.
template <class Decode>
void expectSameWithAndWithoutSimd(const std::vector<uint8_t>& stream, size_t samples, Decode decode,
                                  const std::string& what) {
  std::vector<uint16_t> scalar(samples, 0x5a5a), simd(samples, 0x5a5a);
  hfpac::detail::setSimdDisabledForTesting(true);
  const hfpac::Status scalarStatus = decode(stream, scalar);
  hfpac::detail::setSimdDisabledForTesting(false);
  const hfpac::Status simdStatus = decode(stream, simd);
  ASSERT_EQ(simdStatus, scalarStatus) << what;
  if (simdStatus == hfpac::Status::Ok) {
    ASSERT_EQ(simd, scalar) << what;
  }
}

std::vector<hftest::Patch> decoderInputs() {
  using hfpac::SampleType;
  std::vector<hftest::Patch> patches;
  // Partial areas and segments (every width modulo 16 and 4 appears), nodata, extremes.
  const int sides[][2] = {{129, 129}, {65, 33}, {17, 130}, {100, 37}, {33, 9}, {1, 20}, {250, 3}};
  uint64_t seed = 1;
  for (const auto& side : sides) {
    const int w = side[0], h = side[1];
    patches.push_back(hftest::smooth(w, h, SampleType::UInt16, seed++));
    patches.push_back(hftest::noise(w, h, SampleType::Int16, seed++));
    patches.push_back(hftest::rampBumps(w, h, SampleType::Int16, seed++));
    patches.push_back(hftest::seaMountain(w, h, SampleType::Int16, seed++));
    patches.push_back(hftest::withHoles(w, h, SampleType::Int16, seed++));
    patches.push_back(hftest::withHoles(w, h, SampleType::UInt16, seed++));
    patches.push_back(hftest::negative(w, h, seed++));
  }
  return patches;
}

// Copies of `stream` with a few bytes changed past the first 16 (most corruptions that keep the
// header parse; the decoders refuse or decode the same garbage either way).
std::vector<std::vector<uint8_t>> corruptions(const std::vector<uint8_t>& stream, std::mt19937& rng,
                                              int count) {
  std::vector<std::vector<uint8_t>> out;
  if (stream.size() <= 16) return out;
  for (int i = 0; i < count; ++i) {
    std::vector<uint8_t> bad = stream;
    const int changes = 1 + int(rng() % 3u);
    for (int c = 0; c < changes; ++c)
      bad[16 + rng() % (bad.size() - 16)] ^= uint8_t(1u << (rng() % 8u));
    out.push_back(std::move(bad));
  }
  return out;
}

TEST(SimdRows, HfpacDecodeIsTheSameWithAndWithoutSimd) {
  if (!hasAvx2()) GTEST_SKIP() << "no AVX2 on this CPU";
  std::mt19937 rng(5);
  for (const hftest::Patch& p : decoderInputs())
    for (int segment : {5, 9, 17, 33})
      for (int bits : {-1, 0, 3, 16}) {
        hfpac::EncodeOptions o;
        o.segment = segment;
        o.bits = bits;
        o.hasNodata = true;
        o.nodata = p.type == hfpac::SampleType::Int16 ? uint16_t(0x8000) : uint16_t(0xFFFF);
        std::vector<uint8_t> stream;
        ASSERT_EQ(hfpac::encode(p.data(), p.stride, p.width, p.height, p.type, o, stream),
                  hfpac::Status::Ok);
        const size_t stride = size_t(p.width) + 3;
        const size_t samples = stride * size_t(p.height);
        for (hfpac::Layers layers : {hfpac::Layers::L1, hfpac::Layers::L12, hfpac::Layers::All}) {
          auto decode = [&](const std::vector<uint8_t>& s, std::vector<uint16_t>& out) {
            return hfpac::decode(s.data(), s.size(), out.data(), stride, out.size(), layers);
          };
          const std::string what = p.name + " " + std::to_string(p.width) + "x" +
                                   std::to_string(p.height) + " segment " +
                                   std::to_string(segment) + " bits " + std::to_string(bits);
          expectSameWithAndWithoutSimd(stream, samples, decode, what);
          if (layers == hfpac::Layers::All)
            for (const auto& bad : corruptions(stream, rng, 6))
              expectSameWithAndWithoutSimd(bad, samples, decode, what + " (corrupted)");
        }
      }
}

// Every lane count, masked and not; both token sets (the AVX2 loop's compact table serves the
// small one without a mask, the 64-bit table the rest); groups with and without raw bits.
TEST(SimdRows, AnsDecodeIsTheSameWithAndWithoutSimd) {
  if (!hasAvx2()) GTEST_SKIP() << "no AVX2 on this CPU";
  std::mt19937 rng(9);
  std::vector<hftest::Patch> inputs = decoderInputs();
  for (const auto& side : {std::pair{129, 129}, std::pair{100, 37}, std::pair{7, 40}}) {
    inputs.push_back(hftest::lattice(side.first, side.second));
    inputs.push_back(hftest::smooth(side.first, side.second, hfpac::SampleType::UInt16, 21, 20000, 40));
  }
  for (const hftest::Patch& p : inputs)
    for (int lanes : {8, 16, 24, 32, 5}) {
      for (bool mask : {false, true}) {
        hfpac::AnsOptions o;
        o.lanes = lanes;
        o.hasMask = mask;
        o.maskValue = p.type == hfpac::SampleType::Int16 ? uint16_t(0x8000) : uint16_t(0xFFFF);
        std::vector<uint8_t> stream;
        ASSERT_EQ(hfpac::ansEncode(p.data(), p.stride, p.width, p.height, p.type, stream, o),
                  hfpac::Status::Ok);
        const size_t stride = size_t(p.width) + 3;
        const size_t samples = stride * size_t(p.height);
        auto decode = [&](const std::vector<uint8_t>& s, std::vector<uint16_t>& out) {
          return hfpac::ansDecode(s.data(), s.size(), out.data(), stride, out.size());
        };
        const std::string what = p.name + " " + std::to_string(p.width) + "x" +
                                 std::to_string(p.height) + " lanes " + std::to_string(lanes) +
                                 (mask ? " masked" : "");
        expectSameWithAndWithoutSimd(stream, samples, decode, what);
        for (const auto& bad : corruptions(stream, rng, 16))
          expectSameWithAndWithoutSimd(bad, samples, decode, what + " (corrupted)");
        hfpac::AnsInfo info;
        ASSERT_EQ(hfpac::ansReadInfo(stream.data(), stream.size(), info), hfpac::Status::Ok);
        if (info.masked && p.width >= 24) {
          // The masked value rewritten to a sample in the middle of the patch: an unmasked sample
          // equal to it is an error (OutOfRange), wherever in a group it falls.
          std::vector<uint8_t> clash = stream;
          const uint16_t v = p.at(p.width / 2, p.height / 2);
          clash[hfpac::kAnsHeaderBytes] = uint8_t(v);
          clash[hfpac::kAnsHeaderBytes + 1] = uint8_t(v >> 8);
          std::vector<uint16_t> out(samples);
          if (v != info.maskValue) {
            EXPECT_EQ(decode(clash, out), hfpac::Status::OutOfRange) << what;
          }
          expectSameWithAndWithoutSimd(clash, samples, decode,
                                       what + " (masked value in the data)");
        }
      }
    }
}

}  // namespace
