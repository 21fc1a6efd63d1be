// ans_test.cpp - the entropy-coded patches of src/codec/ans.h: exact round trips of every kind
// of patch and lane count, the size advantage it exists for, and safe refusal of bad streams.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "codec/ans.h"
#include "codec/ans_lanes.h"
#include "codec/simd_rows.h"
#include "test_util.h"

namespace {

using hfpac::SampleType;
using hfpac::Status;
using hftest::Patch;

std::vector<uint8_t> encodeOrFail(const Patch& p, int lanes = hfpac::kAnsAutoLanes) {
  std::vector<uint8_t> out;
  hfpac::AnsOptions o;
  o.lanes = lanes;
  EXPECT_EQ(hfpac::ansEncode(p.samples.data(), p.stride, p.width, p.height, p.type, out, o), Status::Ok);
  return out;
}

// Decodes into a buffer with a wider stride and junk around, checks every sample and that the
// padding is untouched.
void expectExact(const Patch& p, const std::vector<uint8_t>& stream) {
  ASSERT_EQ(stream.size() % 4, 0u);
  hfpac::AnsInfo info;
  ASSERT_EQ(hfpac::ansReadInfo(stream.data(), stream.size(), info), Status::Ok);
  EXPECT_EQ(info.width, p.width);
  EXPECT_EQ(info.height, p.height);
  EXPECT_EQ(info.type, p.type);
  EXPECT_EQ(info.streamBytes, stream.size());
  const size_t stride = size_t(p.width) + 2;
  std::vector<uint16_t> out(stride * size_t(p.height), 0xBEEF);
  ASSERT_EQ(hfpac::ansDecode(stream.data(), stream.size(), out.data(), stride, out.size()), Status::Ok) << p.name;
  for (int y = 0; y < p.height; ++y) {
    for (int x = 0; x < p.width; ++x)
      ASSERT_EQ(out[size_t(y) * stride + size_t(x)], p.at(x, y)) << p.name << " at " << x << "," << y;
    ASSERT_EQ(out[size_t(y) * stride + size_t(p.width)], 0xBEEF);
  }
}

std::vector<Patch> kinds(int w, int h) {
  return {hftest::smooth(w, h, SampleType::UInt16, 1),      hftest::smooth(w, h, SampleType::Int16, 2),
          hftest::noise(w, h, SampleType::UInt16, 3),       hftest::noise(w, h, SampleType::Int16, 4),
          hftest::rampBumps(w, h, SampleType::Int16, 5),    hftest::constant(w, h, 65535, SampleType::UInt16),
          hftest::constant(w, h, 0x8000, SampleType::Int16), hftest::seaMountain(w, h, SampleType::Int16, 6),
          hftest::withHoles(w, h, SampleType::Int16, 7),    hftest::negative(w, h, 8)};
}

TEST(Ans, RoundTripsEveryKindAndSize) {
  for (auto [w, h] : {std::pair{1, 1}, std::pair{2, 1}, std::pair{1, 7}, std::pair{129, 129}, std::pair{33, 65},
                      std::pair{300, 2}})
    for (const Patch& p : kinds(w, h)) ASSERT_NO_FATAL_FAILURE(expectExact(p, encodeOrFail(p))) << p.name;
}

TEST(Ans, RoundTripsEveryLaneCount) {
  const Patch p = hftest::rampBumps(129, 129, SampleType::Int16, 9);
  for (int lanes : {1, 2, 3, 7, 8, 31, 32, 64}) ASSERT_NO_FATAL_FAILURE(expectExact(p, encodeOrFail(p, lanes))) << lanes;
}

// Nodata: samples equal to the mask value are escapes; a patch with voids (and a mask value
// that does not occur, and an all-void patch) round-trips, and masking makes voids cheap.
TEST(Ans, MaskedPatchesRoundTripAndVoidsAreCheap) {
  for (SampleType t : {SampleType::Int16, SampleType::UInt16}) {
    const uint16_t nodata = t == SampleType::Int16 ? 0x8000 : 0xFFFF;
    Patch p = hftest::smooth(129, 129, t, 16);
    for (int y = 0; y < 129; ++y)
      for (int x = 0; x < 129; ++x)
        if ((x - 40) * (x - 40) + (y - 70) * (y - 70) < 900 || x == 0 || y == 128 || (x * 7 + y * 13) % 97 == 0)
          p.at(x, y) = nodata;
    hfpac::AnsOptions o;
    o.hasMask = true;
    o.maskValue = nodata;
    for (int lanes : {1, 8, 64}) {
      o.lanes = lanes;
      std::vector<uint8_t> masked, plain;
      ASSERT_EQ(hfpac::ansEncode(p.samples.data(), p.stride, 129, 129, t, masked, o), Status::Ok);
      ASSERT_NO_FATAL_FAILURE(expectExact(p, masked));
      hfpac::AnsInfo info;
      ASSERT_EQ(hfpac::ansReadInfo(masked.data(), masked.size(), info), Status::Ok);
      EXPECT_TRUE(info.masked);
      EXPECT_EQ(info.maskValue, nodata);
      hfpac::AnsOptions unmasked;
      unmasked.lanes = lanes;
      ASSERT_EQ(hfpac::ansEncode(p.samples.data(), p.stride, 129, 129, t, plain, unmasked), Status::Ok);
      ASSERT_NO_FATAL_FAILURE(expectExact(p, plain));
      EXPECT_LT(masked.size(), plain.size()) << lanes;
    }
    const Patch voids = hftest::constant(33, 9, nodata, t);
    std::vector<uint8_t> stream;
    ASSERT_EQ(hfpac::ansEncode(voids.samples.data(), voids.stride, 33, 9, t, stream, o), Status::Ok);
    ASSERT_NO_FATAL_FAILURE(expectExact(voids, stream));
    o.maskValue = 12345;  // not in the patch: no mask written
    const Patch smooth = hftest::smooth(20, 20, t, 17);
    ASSERT_EQ(hfpac::ansEncode(smooth.samples.data(), smooth.stride, 20, 20, t, stream, o), Status::Ok);
    hfpac::AnsInfo info;
    ASSERT_EQ(hfpac::ansReadInfo(stream.data(), stream.size(), info), Status::Ok);
    EXPECT_FALSE(info.masked);
    ASSERT_NO_FATAL_FAILURE(expectExact(smooth, stream));
  }
}

// A decoded sample equal to the mask value is a corrupt stream (a valid one codes it as an
// escape): the mask value rewritten to a value that occurs once, at every column of a row (row
// starts, group and register boundaries, inside registers) and for every decoding loop (lane
// counts of the AVX2 loop, its compact and 64-bit tables, the scalar loops), is OutOfRange.
TEST(Ans, SampleEqualToTheMaskValueIsRefusedAnywhere) {
  for (bool simd : {true, false}) {
    hfpac::detail::setSimdDisabledForTesting(!simd);
    for (const Patch& base : {hftest::smooth(129, 40, SampleType::UInt16, 30, 20000, 60), hftest::lattice(129, 40)}) {
      for (int lanes : {8, 16, 32, 5}) {
        for (int x = 0; x < base.width; ++x) {
          Patch p = base;
          p.at(3, 2) = 0xFFFF;  // a void (the mask value), far from the row tested
          p.at(x, 20) = 7;      // occurs once
          hfpac::AnsOptions o;
          o.lanes = lanes;
          o.hasMask = true;
          o.maskValue = 0xFFFF;
          std::vector<uint8_t> stream;
          ASSERT_EQ(hfpac::ansEncode(p.samples.data(), p.stride, p.width, p.height, p.type, stream, o), Status::Ok);
          std::vector<uint16_t> out(size_t(p.width) * size_t(p.height));
          ASSERT_EQ(hfpac::ansDecode(stream.data(), stream.size(), out.data(), size_t(p.width), out.size()),
                    Status::Ok);
          stream[hfpac::kAnsHeaderBytes] = 7;  // the mask value: 0xFFFF -> 7
          stream[hfpac::kAnsHeaderBytes + 1] = 0;
          ASSERT_EQ(hfpac::ansDecode(stream.data(), stream.size(), out.data(), size_t(p.width), out.size()),
                    Status::OutOfRange)
              << p.name << " lanes " << lanes << " x " << x << (simd ? "" : " (scalar)");
        }
      }
    }
  }
  hfpac::detail::setSimdDisabledForTesting(false);
}

// Residuals near a lattice (lidar quantised finer than its own step) take the large token set,
// where a residual below 256 is a token of its own; a gentle ramp keeps the small one. Both exact.
TEST(Ans, TokenSetFollowsTheResiduals) {
  const Patch lattice = hftest::lattice(129, 129);
  const std::vector<uint8_t> a = encodeOrFail(lattice);
  hfpac::AnsInfo info;
  ASSERT_EQ(hfpac::ansReadInfo(a.data(), a.size(), info), Status::Ok);
  EXPECT_EQ(info.directLog2, 8);
  ASSERT_NO_FATAL_FAILURE(expectExact(lattice, a));
  Patch smooth = hftest::constant(129, 129, 500, SampleType::Int16);
  for (int y = 0; y < 129; ++y)
    for (int x = 0; x < 129; ++x) smooth.at(x, y) = uint16_t(500 + x / 8 + y / 5);  // residuals 0 and 1
  const std::vector<uint8_t> b = encodeOrFail(smooth);
  ASSERT_EQ(hfpac::ansReadInfo(b.data(), b.size(), info), Status::Ok);
  EXPECT_EQ(info.directLog2, 4);
  ASSERT_NO_FATAL_FAILURE(expectExact(smooth, b));
}

// The widest residuals: 0 and 65535 (or -32768 and 32767) alternating, and the longest side.
TEST(Ans, ExtremeResidualsAndSides) {
  Patch u = hftest::constant(64, 3, 0, SampleType::UInt16), s = hftest::constant(64, 3, 0, SampleType::Int16);
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 64; ++x) {
      u.at(x, y) = (x + y) % 2 ? 65535 : 0;
      s.at(x, y) = (x + y) % 2 ? 0x7FFF : 0x8000;
    }
  ASSERT_NO_FATAL_FAILURE(expectExact(u, encodeOrFail(u)));
  ASSERT_NO_FATAL_FAILURE(expectExact(s, encodeOrFail(s)));
  const Patch wide = hftest::noise(hfpac::kMaxPatchSide, 1, SampleType::UInt16, 10);
  const Patch tall = hftest::smooth(1, hfpac::kMaxPatchSide, SampleType::Int16, 11);
  ASSERT_NO_FATAL_FAILURE(expectExact(wide, encodeOrFail(wide)));
  ASSERT_NO_FATAL_FAILURE(expectExact(tall, encodeOrFail(tall)));
}

// What the stage is for: smooth and flat data far below 16 bits a sample, noise near it.
TEST(Ans, SizesFollowTheData) {
  const Patch flat = hftest::constant(129, 129, 1234, SampleType::UInt16);
  EXPECT_LE(encodeOrFail(flat).size(), 96u);  // header, one token, the states (8 lanes: a small stream)
  const Patch smooth = hftest::smooth(129, 129, SampleType::UInt16, 12);
  const Patch noise = hftest::noise(129, 129, SampleType::UInt16, 13);
  const size_t smoothBytes = encodeOrFail(smooth).size(), noiseBytes = encodeOrFail(noise).size();
  EXPECT_LT(smoothBytes * 3 / 2, noiseBytes);
  EXPECT_LT(noiseBytes, 129u * 129u * 2u * 110u / 100u);  // at most ~10 % over raw
}

TEST(Ans, EncodeRefusesBadArguments) {
  const Patch p = hftest::smooth(8, 8, SampleType::UInt16, 14);
  std::vector<uint8_t> out;
  EXPECT_EQ(hfpac::ansEncode(nullptr, 8, 8, 8, SampleType::UInt16, out), Status::InvalidArgument);
  EXPECT_EQ(hfpac::ansEncode(p.samples.data(), 7, 8, 8, SampleType::UInt16, out), Status::InvalidArgument);
  EXPECT_EQ(hfpac::ansEncode(p.samples.data(), 8, 0, 8, SampleType::UInt16, out), Status::InvalidArgument);
  hfpac::AnsOptions o;
  o.lanes = -1;  // (0 is kAnsAutoLanes)
  EXPECT_EQ(hfpac::ansEncode(p.samples.data(), 8, 8, 8, SampleType::UInt16, out, o), Status::InvalidArgument);
  o.lanes = 65;
  EXPECT_EQ(hfpac::ansEncode(p.samples.data(), 8, 8, 8, SampleType::UInt16, out, o), Status::InvalidArgument);
}

// Every truncation is refused, and so is every corruption of the fields that have redundancy:
// magic, version, reserved bits, lane count, stream size, the table's padding and its
// frequencies (they must sum to 4096). Elsewhere a corruption cannot always be told from a
// valid stream (raw bits and state bits carry no redundancy: the archive's tile CRC is the
// check there), but it never reads or writes out of bounds (ASan runs this test) and decodes
// only values of the sample type. Small buffers are refused.
TEST(Ans, BadStreamsAreRefused) {
  const Patch p = hftest::rampBumps(40, 30, SampleType::Int16, 15);
  const std::vector<uint8_t> good = encodeOrFail(p);
  std::vector<uint16_t> out(40 * 30);
  for (size_t n = 0; n < good.size(); ++n) {
    const std::vector<uint8_t> cut(good.begin(), good.begin() + std::ptrdiff_t(n));
    EXPECT_NE(hfpac::ansDecode(cut.data(), cut.size(), out.data(), 40, out.size()), Status::Ok) << n;
  }
  size_t tokens = 0;
  for (int b = 0; b < 9; ++b) tokens += size_t(__builtin_popcount(good[16 + size_t(b)]));
  auto checked = [&](size_t k, uint8_t flip) {
    if (k < 5 || k == 7 || (k >= 12 && k < 16) || k == 25) return true;  // magic, version, reserved, size, padding
    if (k == 5) return flip != 0x01;                                       // flags: bit 0 is the sample type
    if (k == 6) return (good[6] ^ flip) == 0 || (good[6] ^ flip) > hfpac::kAnsMaxLanes;
    return k >= 26 && k < 26 + 2 * tokens && (k % 2 == 0 || flip != 0x01);  // frequencies (12 bits used)
  };
  size_t accepted = 0, corrupted = 0;
  for (size_t k = 0; k < good.size(); ++k)
    for (uint8_t flip : {uint8_t(0x01), uint8_t(0x08), uint8_t(0xFF)}) {
      std::vector<uint8_t> bad = good;
      bad[k] ^= flip;
      const Status st = hfpac::ansDecode(bad.data(), bad.size(), out.data(), 40, out.size());
      if (checked(k, flip)) {
        EXPECT_NE(st, Status::Ok) << "byte " << k << " ^ " << int(flip);
      } else {
        ++corrupted;
        accepted += st == Status::Ok;
      }
    }
  std::printf("[ ans      ] %zu of %zu other corruptions decode without an error\n", accepted, corrupted);
  EXPECT_EQ(hfpac::ansDecode(good.data(), good.size(), out.data(), 39, out.size()), Status::InvalidArgument);
  EXPECT_EQ(hfpac::ansDecode(good.data(), good.size(), out.data(), 40, out.size() - 1), Status::InvalidArgument);
  EXPECT_EQ(hfpac::ansDecode(good.data(), good.size(), nullptr, 40, out.size()), Status::InvalidArgument);
  EXPECT_FALSE(hfpac::isAnsStream(good.data(), 3));
  EXPECT_TRUE(hfpac::isAnsStream(good.data(), good.size()));
  std::vector<uint8_t> hfpc = good;
  std::memcpy(hfpc.data(), "HFPC", 4);
  EXPECT_EQ(hfpac::ansDecode(hfpc.data(), hfpc.size(), out.data(), 40, out.size()), Status::BadMagic);
}

// Constant patches - all 0 (flat sea) or all nodata - skip the decoding loop (their tokens leave
// every state as it is). Same samples and statuses as the general loop, on the streams and on
// every single-byte corruption of them.
TEST(Ans, ConstantPatchesDecodeAsTheGeneralLoopDoes) {
  struct Case {
    Patch patch;
    bool mask;
    uint16_t maskValue;
  };
  std::vector<Case> cases;
  for (SampleType t : {SampleType::Int16, SampleType::UInt16}) {
    const uint16_t nodata = t == SampleType::Int16 ? 0x8000 : 0xFFFF;
    for (auto [w, h] : {std::pair{129, 129}, std::pair{1, 1}, std::pair{37, 5}}) {
      cases.push_back({hftest::constant(w, h, 0, t), false, 0});
      cases.push_back({hftest::constant(w, h, 0, t), true, nodata});  // nodata absent: no mask written
      cases.push_back({hftest::constant(w, h, nodata, t), true, nodata});
    }
  }
  auto decode = [](const std::vector<uint8_t>& s, const Patch& p, bool shortcut, std::vector<uint16_t>& out) {
    out.assign(size_t(p.width + 1) * size_t(p.height), 0xBEEF);
    hfpac::detail::setAnsConstantShortcutDisabledForTesting(!shortcut);
    const Status st = hfpac::ansDecode(s.data(), s.size(), out.data(), size_t(p.width + 1), out.size());
    hfpac::detail::setAnsConstantShortcutDisabledForTesting(false);
    return st;
  };
  size_t streams = 0;
  const uint64_t shortcutsBefore = hfpac::detail::ansConstantShortcutsForTesting();
  for (const Case& c : cases)
    for (int lanes : {1, 5, 8, 16, 24, 32, 64}) {
      hfpac::AnsOptions o;
      o.lanes = lanes;
      o.hasMask = c.mask;
      o.maskValue = c.maskValue;
      std::vector<uint8_t> stream;
      ASSERT_EQ(hfpac::ansEncode(c.patch.samples.data(), c.patch.stride, c.patch.width, c.patch.height, c.patch.type,
                                 stream, o),
                Status::Ok);
      ASSERT_NO_FATAL_FAILURE(expectExact(c.patch, stream)) << c.patch.name;
      std::vector<std::vector<uint8_t>> variants{stream};
      for (size_t k = 0; k < stream.size(); ++k)
        for (uint8_t flip : {uint8_t(0x01), uint8_t(0x80), uint8_t(0xFF)}) {
          variants.push_back(stream);
          variants.back()[k] ^= flip;
        }
      // The mask value rewritten to 0 under an all-0 table: a decoded 0 is then a corrupt sample.
      hfpac::AnsInfo info;
      ASSERT_EQ(hfpac::ansReadInfo(stream.data(), stream.size(), info), Status::Ok);
      if (info.masked) {
        variants.push_back(stream);
        variants.back()[hfpac::kAnsHeaderBytes] = variants.back()[hfpac::kAnsHeaderBytes + 1] = 0;
      }
      // One or two words after the states (the header's size grown to match): a zero word is
      // padding, anything else a size mismatch.
      for (uint16_t w0 : {uint16_t(0), uint16_t(1)})
        for (int extra : {1, 2}) {
          variants.push_back(stream);
          std::vector<uint8_t>& v = variants.back();
          for (int k = 0; k < extra; ++k) v.insert(v.end(), {uint8_t(w0), uint8_t(w0 >> 8)});
          const uint32_t size = uint32_t(v.size());
          for (int b = 0; b < 4; ++b) v[12 + size_t(b)] = uint8_t(size >> (8 * b));
        }
      // All-void streams with their tables edited (the presence bitmaps: d = 4, 68 tokens and the
      // escape in 9 bytes, a zero byte, then freq - 1 of the one token, docs/format.md):
      // - the first table token 0 (z = 0) instead of the escape: every sample decodes to 0, an
      //   error where 0 is the mask value, found before a lane state off or words too many;
      // - the second table token 0: the lanes' first samples are voids, then zeros (no shortcut).
      if (info.masked && info.directLog2 == 4 && c.patch.at(0, 0) == c.maskValue) {
        constexpr size_t kTableBytes = 12, kEscapeByte = 8;
        const size_t table0 = hfpac::kAnsHeaderBytes + 4, table1 = table0 + kTableBytes;
        const size_t states = table1 + kTableBytes;
        for (size_t t : {table0, table1}) {
          size_t bits = 0;
          for (size_t b = 0; b <= kEscapeByte; ++b) bits += size_t(__builtin_popcount(stream[t + b]));
          ASSERT_EQ(bits, 1u) << "a void stream's table is not one token alone";
          ASSERT_NE(stream[t + kEscapeByte], 0) << "a void stream's one token is not the escape";
        }
        for (size_t t : {table0, table1})
          for (uint16_t maskValue : {c.maskValue, uint16_t(0)})
            for (int damage : {0, 1, 2}) {  // none, a lane state off, two words too many
              variants.push_back(stream);
              std::vector<uint8_t>& v = variants.back();
              v[t + kEscapeByte] = 0;
              v[t] = 1;
              v[hfpac::kAnsHeaderBytes] = uint8_t(maskValue);
              v[hfpac::kAnsHeaderBytes + 1] = uint8_t(maskValue >> 8);
              if (damage == 1) v[states] ^= 1;
              if (damage == 2) {
                v.insert(v.end(), {1, 0, 1, 0});
                const uint32_t size = uint32_t(v.size());
                for (int b = 0; b < 4; ++b) v[12 + size_t(b)] = uint8_t(size >> (8 * b));
              }
              if (t == table0) {
                std::vector<uint16_t> out(size_t(c.patch.width + 1) * size_t(c.patch.height));
                EXPECT_EQ(hfpac::ansDecode(v.data(), v.size(), out.data(), size_t(c.patch.width + 1), out.size()),
                          maskValue == 0 ? Status::OutOfRange : damage ? Status::SizeMismatch : Status::Ok);
              }
            }
      }
      for (const auto& v : variants) {
        std::vector<uint16_t> fast, general;
        const Status a = decode(v, c.patch, true, fast), b = decode(v, c.patch, false, general);
        ASSERT_EQ(a, b) << c.patch.name << " lanes " << lanes;
        if (a == Status::Ok) {
          ASSERT_EQ(fast, general) << c.patch.name << " lanes " << lanes;
        }
        ++streams;
      }
    }
  const uint64_t shortcuts = hfpac::detail::ansConstantShortcutsForTesting() - shortcutsBefore;
  std::printf("[ ans      ] %zu constant-patch streams and corruptions, %llu decodes through the shortcut: the "
              "same as the general loop\n",
              streams, (unsigned long long)shortcuts);
  EXPECT_GT(shortcuts, 2 * cases.size()) << "the shortcut was not taken";
}

}  // namespace
