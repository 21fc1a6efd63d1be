// ans_lanes.h - internal to the HFAN decoder (ans.cpp, ans_avx2.cpp): the state of a decode in
// progress, group by group, shared by the scalar loops and the AVX2 loop, and the scalar write of
// one group's samples. Not a public header.
#pragma once

#include <cstddef>
#include <cstdint>

#include "codec/ans.h"
#include "codec/bitpack.h"

namespace hfpac::detail {

// A decoding table entry (one per slot, 64 bits): freq - 1 (bits 0-11), slot - start (12-23),
// the token's raw bit count (24-28), the escape flag (29), the token's base value (32-63).
constexpr uint32_t kAnsEntryEscape = uint32_t(1) << 29;
constexpr int kAnsScaleBits = 12;
constexpr uint32_t kAnsStateLow = 1u << 16;  // states live in [2^16, 2^32)
constexpr int kAnsRegisterLanes = 8;         // lanes in one AVX2 register

// A compact entry (32 bits), for streams of the small token set (d = 4) in the AVX2 loop: one
// gather per lookup instead of two, and a 16 KiB table per context instead of 32. freq - 1
// (bits 0-11) and slot - start (12-23) as above, the raw bit count (24-27: at most 14 with
// d = 4; 15 marks the escape, which has none) and a value field (28-31): the token itself for
// the direct tokens (no raw bits), 4 + the two bits under the top bit for the others, so
// z = field << rawBits | raw bits in both cases (the escape's field is 0).
constexpr int kAnsCompactRawShift = 24;
constexpr int kAnsCompactFieldShift = 28;
constexpr uint32_t kAnsCompactEscapeRaw = 15;
constexpr int kAnsCompactDirectLog2 = 4;

// Tests only: true makes ansDecode take constant patches through the general loop too (its
// shortcut for them skips decoding), so one process can compare both on the same streams.
void setAnsConstantShortcutDisabledForTesting(bool disabled);
// Tests only: how many decodes have taken that shortcut in this process.
uint64_t ansConstantShortcutsForTesting();

struct AnsGroupDecoder {
  // The stream: decoding tables (context c at entries + c * tableStride; or, where set, the
  // compact tables: context c at compactEntries + c * compactStride), the word stream.
  const uint64_t* entries = nullptr;
  size_t tableStride = 0;
  const uint32_t* compactEntries = nullptr;
  size_t compactStride = 0;
  const uint8_t* wordBytes = nullptr;
  size_t words = 0;
  // The patch.
  size_t n = 0, width = 0, dstStride = 0;
  bool masked = false, isSigned = false;
  uint16_t maskValue = 0;
  int32_t lo = 0, hi = 65535;
  // Progress: lane states and contexts, next word, next sample (first, and x, y, row of it).
  size_t lanes = 0;
  uint32_t state[kAnsMaxLanes] = {};
  uint8_t laneMasked[kAnsMaxLanes] = {};
  size_t pos = 0, first = 0, x = 0, y = 0;
  uint16_t* row = nullptr;
  int64_t last = 0;  // the last unmasked sample in raster order (64-bit: a corrupt stream's
                     // residuals may add up past 32 bits before the range check reports it)
  uint32_t bad = 0;  // out-of-range values seen (one branch at the end)
  bool truncated = false;  // a refill needed a word past the stream's end

  // Writes `count` samples of one group: prediction + residual (token entry's low word and z per
  // lane), escapes as the masked value.
  void emit(const uint32_t* entryLow, const uint32_t* z, size_t count) {
    for (size_t l = 0; l < count; ++l) {
      if (entryLow[l] & kAnsEntryEscape) {
        row[x] = maskValue;
      } else {
        int64_t pred = last;
        if (x == 0 && y > 0) {
          const uint16_t above = row[-std::ptrdiff_t(dstStride)];
          // Unmasked samples never equal the masked value (checked below): this tells them apart.
          if (!masked || above != maskValue) pred = isSigned ? int32_t(int16_t(above)) : int32_t(above);
        }
        const int64_t v = pred + unzigzag(z[l]);
        bad |= uint32_t(v < lo) | uint32_t(v > hi) | uint32_t(masked && uint16_t(v) == maskValue);
        row[x] = uint16_t(v);
        last = v;
      }
      if (++x == width) {
        x = 0;
        ++y;
        row += dstStride;
      }
    }
  }
};

// True where ansDecodeGroupsAvx2 serves `lanes` lanes on this CPU (then it also takes compact
// tables).
bool ansAvx2ServesLanes(size_t lanes);

// Decodes whole groups of `lanes` samples while at least that many samples remain, exactly as
// the scalar loop would: same states, words, samples and flags; sets `truncated` (and stops) where
// a refill needs a word past the stream's end. Serves lanes = 8, 16, 24 and 32 (one to four
// registers); returns false (nothing done) for other lane counts and where the CPU has no AVX2.
bool ansDecodeGroupsAvx2(AnsGroupDecoder& d);

}  // namespace hfpac::detail
