// ans_avx2.cpp - the HFAN decoder's 8-lane loop in AVX2 registers (see ans_lanes.h). Compiled
// with per-function target attributes, so the library still runs on any x86-64; elsewhere the
// entry point reports that it did nothing and the scalar loops run.
//
// One group of 8 samples is 8 rANS lanes in one register: the slot entries by two gathers (the
// low and high words of the 64-bit entries; one gather of the compact 32-bit entries for
// unmasked streams of the small token set), the state step by one multiply, and each refill
// (lanes that fell below 2^16 take the next words of the shared stream, in lane order) by a
// byte-free permute: lane l takes word pos + (number of needing lanes before l), looked up from
// the 8-bit need mask. Inside a row, the samples are a prefix sum of the residuals plus the last
// sample, kept in a register while a row goes on. Everything equals the scalar loop: the same
// states, words, samples and flags.
#include "codec/ans_lanes.h"
#include "codec/simd_rows.h"

#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HFPAC_HAVE_ANS_AVX2 1
#endif

namespace hfpac::detail {

#ifdef HFPAC_HAVE_ANS_AVX2

namespace {

// For every 8-bit need mask: which of the 8 words loaded at `pos` each lane takes.
struct RefillTable {
  alignas(32) int32_t index[256][8];
  RefillTable() {
    for (int mask = 0; mask < 256; ++mask) {
      int next = 0;
      for (int l = 0; l < 8; ++l) index[mask][l] = (mask >> l & 1) ? next++ : 0;
    }
  }
};
const RefillTable& refillTable() {
  static const RefillTable table;
  return table;
}

// Where the refills read the word stream: the stream itself, or near its end a zero-padded copy
// of its last words (word i at bytes + 2 (i - first)), so that every load of 8 words is in bounds.
struct WordSource {
  const uint8_t* bytes;
  size_t first;
};

// Lanes whose state fell below 2^16 shift in the next words of the stream, in lane order.
__attribute__((target("avx2,popcnt"))) inline __m256i refill(__m256i x, const WordSource& src, size_t& pos,
                                                             const RefillTable& table) {
  const __m256i need = _mm256_cmpeq_epi32(_mm256_srli_epi32(x, 16), _mm256_setzero_si256());
  // No branch on the mask (it is data, and mispredicts): a mask of 0 takes nothing.
  const int mask = _mm256_movemask_ps(_mm256_castsi256_ps(need));
  const __m256i words = _mm256_cvtepu16_epi32(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(src.bytes + 2 * (pos - src.first))));
  const __m256i taken = _mm256_permutevar8x32_epi32(
      words, _mm256_load_si256(reinterpret_cast<const __m256i*>(table.index[mask])));
  pos += size_t(__builtin_popcount(unsigned(mask)));
  return _mm256_blendv_epi8(x, _mm256_or_si256(_mm256_slli_epi32(x, 16), taken), need);
}

// The low 32 bits of a * b per lane, as vpmulld, by two vpmuludq (even and odd lanes): half the
// latency on the chain every group waits for.
__attribute__((target("avx2"))) inline __m256i mulLow32(__m256i a, __m256i b) {
  const __m256i even = _mm256_mul_epu32(a, b);
  const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), _mm256_srli_epi64(b, 32));
  return _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xaa);
}

// What the group loop sets up once per patch.
struct GroupConstants {
  __m256i slotMask, field12, one, escapeBit, contextWords, lo, hi, maskValue, low16, seven, compactEscape;
};

// The residuals of a register's 8 lanes (zigzagged in zv), unzigzagged and summed in lane order.
__attribute__((target("avx2"))) inline __m256i prefixSumOfResiduals(__m256i zv, const GroupConstants& c) {
  __m256i r = _mm256_xor_si256(_mm256_srli_epi32(zv, 1), _mm256_sub_epi32(_mm256_setzero_si256(),
                                                                         _mm256_and_si256(zv, c.one)));
  r = _mm256_add_epi32(r, _mm256_slli_si256(r, 4));
  r = _mm256_add_epi32(r, _mm256_slli_si256(r, 8));
  const __m256i carry = _mm256_permutevar8x32_epi32(r, _mm256_set1_epi32(3));
  return _mm256_add_epi32(r, _mm256_blend_epi32(_mm256_setzero_si256(), carry, 0xf0));
}

// A register's 8 values as 16-bit samples (their low 16 bits).
__attribute__((target("avx2"))) inline __m128i packSamples(__m256i v, const GroupConstants& c) {
  const __m256i packed = _mm256_packus_epi32(_mm256_and_si256(v, c.low16), _mm256_setzero_si256());
  return _mm256_castsi256_si128(_mm256_permute4x64_epi64(packed, 0x08));  // qwords 0, 2
}

__attribute__((target("avx2"))) inline void storeSamples(uint16_t* at, __m256i v, const GroupConstants& c) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(at), packSamples(v, c));
}

// Writes one register's 8 samples (the register's lanes are samples first .. first + 7, at d.x
// in d.row): last unmasked sample + the prefix sum of the residuals, restarted from the sample
// above where a row starts inside the register (as AnsGroupDecoder::emit predicts). Rows
// narrower than 8 samples go through the scalar emit.
__attribute__((target("avx2"))) inline void emitRegister(AnsGroupDecoder& d, const GroupConstants& c,
                                                         __m256i eLow, __m256i zv, __m256i escape,
                                                         __m256i& badLanes) {
  constexpr size_t L = kAnsRegisterLanes;
  if (d.width < L) {
    alignas(32) uint32_t entryLow[L], z[L];
    _mm256_store_si256(reinterpret_cast<__m256i*>(entryLow), eLow);
    _mm256_store_si256(reinterpret_cast<__m256i*>(z), zv);
    d.emit(entryLow, z, L);
    return;
  }
  const __m256i r = prefixSumOfResiduals(zv, c);
  // Lane j starts a row (j = 8: none). The prediction base of lanes >= j is the sample above it,
  // unless that row is the first, lane j is an escape, or the sample above is masked.
  const size_t x0 = d.x;
  const size_t j = x0 == 0 ? 0 : (d.width - x0 < L ? d.width - x0 : L);
  int64_t base = d.last, restart = d.last;
  uint16_t* rowStart = d.row;
  size_t yStart = d.y;
  if (j < L) {
    rowStart = j == 0 ? d.row : d.row + d.dstStride;
    yStart = j == 0 ? d.y : d.y + 1;
    alignas(32) int32_t lanes[L], esc[L];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), r);
    _mm256_store_si256(reinterpret_cast<__m256i*>(esc), escape);
    if (yStart > 0 && esc[j] == 0) {
      const uint16_t above = rowStart[-std::ptrdiff_t(d.dstStride)];
      if (!d.masked || above != d.maskValue)
        restart = (d.isSigned ? int64_t(int16_t(above)) : int64_t(above)) - (j > 0 ? lanes[j - 1] : 0);
    }
  }
  // |residual| <= 2^16 and, unless a value was already out of range (the flag then set), the
  // bases are within 2^16 of the sample range: the 32-bit sums are exact whenever they matter.
  const __m256i before = _mm256_cmpgt_epi32(_mm256_set1_epi32(int32_t(j)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  const __m256i bases = _mm256_blendv_epi8(_mm256_set1_epi32(int32_t(restart)), _mm256_set1_epi32(int32_t(base)), before);
  const __m256i v = _mm256_add_epi32(r, bases);
  __m256i outside = _mm256_or_si256(_mm256_cmpgt_epi32(c.lo, v), _mm256_cmpgt_epi32(v, c.hi));
  __m256i out = v;
  if (d.masked) {
    const __m256i equalsMask = _mm256_cmpeq_epi32(_mm256_and_si256(v, c.low16), c.maskValue);
    outside = _mm256_andnot_si256(escape, _mm256_or_si256(outside, equalsMask));  // an escape writes no value
    out = _mm256_blendv_epi8(v, c.maskValue, escape);
  }
  badLanes = _mm256_or_si256(badLanes, outside);
  const __m128i samples = packSamples(out, c);
  d.last = (j < L ? restart : base) + int64_t(_mm256_extract_epi32(r, 7));
  if (j == L) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d.row + x0), samples);
    d.x = x0 + L;
  } else {
    alignas(16) uint16_t tmp[L];
    _mm_store_si128(reinterpret_cast<__m128i*>(tmp), samples);
    if (j > 0) std::memcpy(d.row + x0, tmp, j * sizeof(uint16_t));
    std::memcpy(rowStart, tmp + j, (L - j) * sizeof(uint16_t));
    d.row = rowStart;
    d.y = yStart;
    d.x = L - j;
  }
  if (d.x == d.width) {
    d.x = 0;
    ++d.y;
    d.row += d.dstStride;
  }
}

// The group loop for R registers of 8 lanes (lanes = 8R): the table lookups and state steps of
// the registers are independent (R chains in flight); the refills follow lane order. kCompact:
// the tables are d.compactEntries (ans_lanes.h).
template <int R, bool kCompact>
__attribute__((target("avx2,popcnt"))) void decodeGroups(AnsGroupDecoder& d) {
  constexpr size_t L = size_t(R) * kAnsRegisterLanes;
  const RefillTable& table = refillTable();
  // Little-endian 64-bit entries as pairs of 32-bit words, or the compact 32-bit entries.
  const int* entryWords = kCompact ? reinterpret_cast<const int*>(d.compactEntries)
                                   : reinterpret_cast<const int*>(d.entries);
  GroupConstants c;
  c.slotMask = _mm256_set1_epi32(int((1u << kAnsScaleBits) - 1u));
  c.field12 = _mm256_set1_epi32(4095);
  c.one = _mm256_set1_epi32(1);
  c.escapeBit = _mm256_set1_epi32(int(kAnsEntryEscape));
  // Context t's table starts t * tableStride entries on: in 32-bit words, twice that (compact
  // tables: t * compactStride words).
  c.contextWords = _mm256_set1_epi32(kCompact ? int(d.compactStride) : int(2 * d.tableStride));
  c.lo = _mm256_set1_epi32(d.lo);
  c.hi = _mm256_set1_epi32(d.hi);
  c.maskValue = _mm256_set1_epi32(d.maskValue);
  c.low16 = _mm256_set1_epi32(0xffff);
  c.seven = _mm256_set1_epi32(7);
  c.compactEscape = _mm256_set1_epi32(int(kAnsCompactEscapeRaw));
  __m256i x[R], context[R];
  for (int q = 0; q < R; ++q) {
    x[q] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(d.state + 8 * q));
    context[q] = _mm256_mullo_epi32(
        _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(d.laneMasked + 8 * q))),
        c.contextWords);
  }
  __m256i badLanes = _mm256_setzero_si256();
  // The fast path's range check: the lowest and highest values written (one test at the end).
  __m256i lowest = c.lo, highest = c.hi;
  // The last unmasked sample in every lane. Where it matters it fits 32 bits (emitRegister says
  // why); where it does not, the out-of-range flag is set already.
  __m256i lastV = _mm256_set1_epi32(int32_t(d.last));
  size_t pos = d.pos;
  WordSource src{d.wordBytes, 0};
  // Once at most 2L + 8 words remain (a group reads at most 2L, a load 8 past its position),
  // the refills read a padded copy of them; a refill past the last word is a truncated stream,
  // found where the scalar loop finds it (the same refills in the same order).
  // In the tail a phase's registers refill one after the other and the check comes after the
  // last: a register's 8-word load may start up to 8 (R - 1) words past the stream's end, so the
  // copy is zero-padded by L more words.
  constexpr size_t kTailWords = 2 * L + 8;
  alignas(16) uint8_t tail[2 * (kTailWords + L)];
  bool inTail = false;
  while (d.n - d.first >= L) {
    if (!inTail && d.words - pos <= kTailWords) {
      std::memset(tail, 0, sizeof(tail));
      std::memcpy(tail, d.wordBytes + 2 * pos, 2 * (d.words - pos));
      src = WordSource{tail, pos};
      inTail = true;
    }
    __m256i eLow[R], zv[R], k[R];
    // Tokens: the slot's entry and the state step for every register, then the refills.
#pragma GCC unroll 4
    for (int q = 0; q < R; ++q) {
      if constexpr (kCompact) {
        const __m256i slot = _mm256_add_epi32(_mm256_and_si256(x[q], c.slotMask), context[q]);
        eLow[q] = _mm256_i32gather_epi32(entryWords, slot, 4);
        zv[q] = _mm256_srli_epi32(eLow[q], kAnsCompactFieldShift);  // the value field, for now
      } else {
        const __m256i slot2 =
            _mm256_add_epi32(_mm256_slli_epi32(_mm256_and_si256(x[q], c.slotMask), 1), context[q]);
        eLow[q] = _mm256_i32gather_epi32(entryWords, slot2, 4);
        zv[q] = _mm256_i32gather_epi32(entryWords + 1, slot2, 4);  // the token's base, for now
      }
      const __m256i freq = _mm256_add_epi32(_mm256_and_si256(eLow[q], c.field12), c.one);
      const __m256i offset = _mm256_and_si256(_mm256_srli_epi32(eLow[q], 12), c.field12);
      x[q] = _mm256_add_epi32(mulLow32(freq, _mm256_srli_epi32(x[q], kAnsScaleBits)), offset);
    }
    // The token refill, skipped where no lane needs a word (runs of likely tokens: sea, flats).
    __m256i low = _mm256_setzero_si256();
#pragma GCC unroll 4
    for (int q = 0; q < R; ++q) low = _mm256_or_si256(low, _mm256_cmpeq_epi32(_mm256_srli_epi32(x[q], 16), _mm256_setzero_si256()));
    if (!_mm256_testz_si256(low, low)) {
#pragma GCC unroll 4
      for (int q = 0; q < R; ++q) x[q] = refill(x[q], src, pos, table);
      if (pos > d.words) break;  // only in the tail
    }
    // Raw bits: the low k bits of the state complete the token's base. A group without any
    // (small residuals: flat and smooth ground, sea) skips the pass and its refill, which would
    // change nothing (every state is >= 2^16 after the token refill): a shorter chain per group.
    __m256i anyRaw = _mm256_setzero_si256(), escape[R];
#pragma GCC unroll 4
    for (int q = 0; q < R; ++q) {
      if constexpr (kCompact) {  // a raw bit count of 15 is the escape (no raw bits)
        const __m256i rawField = _mm256_and_si256(_mm256_srli_epi32(eLow[q], kAnsCompactRawShift), c.compactEscape);
        escape[q] = _mm256_cmpeq_epi32(rawField, c.compactEscape);
        k[q] = _mm256_andnot_si256(escape[q], rawField);
      } else {
        escape[q] = _mm256_cmpeq_epi32(_mm256_and_si256(eLow[q], c.escapeBit), c.escapeBit);
        k[q] = _mm256_and_si256(_mm256_srli_epi32(eLow[q], 24), _mm256_set1_epi32(31));
      }
      anyRaw = _mm256_or_si256(anyRaw, k[q]);
    }
    if (!_mm256_testz_si256(anyRaw, anyRaw)) {
#pragma GCC unroll 4
      for (int q = 0; q < R; ++q) {
        const __m256i raw = _mm256_and_si256(x[q], _mm256_sub_epi32(_mm256_sllv_epi32(c.one, k[q]), c.one));
        zv[q] = _mm256_or_si256(kCompact ? _mm256_sllv_epi32(zv[q], k[q]) : zv[q], raw);
        x[q] = _mm256_srlv_epi32(x[q], k[q]);
      }
#pragma GCC unroll 4
      for (int q = 0; q < R; ++q) x[q] = refill(x[q], src, pos, table);
      if (pos > d.words) break;
    }
#pragma GCC unroll 4
    for (int q = 0; q < R; ++q) {
      if (d.masked) context[q] = _mm256_and_si256(escape[q], c.contextWords);
      if (d.x != 0 && d.width - d.x >= kAnsRegisterLanes && (!d.masked || _mm256_testz_si256(escape[q], escape[q]))) {
        // Inside a row, not at its start, no escapes: the samples are the last one plus the
        // prefix sum of the residuals; `last` stays in a register (no trip through a scalar).
        const __m256i v = _mm256_add_epi32(prefixSumOfResiduals(zv[q], c), lastV);
        lowest = _mm256_min_epi32(lowest, v);
        highest = _mm256_max_epi32(highest, v);
        if (d.masked)  // an unmasked sample equal to the mask value: a corrupt stream
          badLanes = _mm256_or_si256(badLanes, _mm256_cmpeq_epi32(_mm256_and_si256(v, c.low16), c.maskValue));
        storeSamples(d.row + d.x, v, c);
        lastV = _mm256_permutevar8x32_epi32(v, c.seven);
        d.x += kAnsRegisterLanes;
        if (d.x == d.width) {
          d.x = 0;
          ++d.y;
          d.row += d.dstStride;
        }
        continue;
      }
      d.last = _mm256_cvtsi256_si32(lastV);
      // (emitRegister's scalar path reads the escape bit of the 64-bit entries' low words.)
      emitRegister(d, c, kCompact ? _mm256_and_si256(escape[q], c.escapeBit) : eLow[q], zv[q], escape[q], badLanes);
      lastV = _mm256_set1_epi32(int32_t(d.last));
    }
    d.first += L;
  }
  for (int q = 0; q < R; ++q) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d.state + 8 * q), x[q]);
    alignas(32) uint32_t contextLanes[kAnsRegisterLanes];
    _mm256_store_si256(reinterpret_cast<__m256i*>(contextLanes), context[q]);
    for (size_t l = 0; l < kAnsRegisterLanes; ++l) d.laneMasked[8 * size_t(q) + l] = contextLanes[l] != 0;
  }
  d.last = _mm256_cvtsi256_si32(lastV);
  badLanes = _mm256_or_si256(badLanes, _mm256_or_si256(_mm256_cmpgt_epi32(c.lo, lowest), _mm256_cmpgt_epi32(highest, c.hi)));
  d.truncated = pos > d.words;
  d.pos = pos;
  d.bad |= uint32_t(!_mm256_testz_si256(badLanes, badLanes));
}

}  // namespace

bool ansAvx2ServesLanes(size_t lanes) {
  return hasAvx2() && (lanes == 8 || lanes == 16 || lanes == 24 || lanes == 32);
}

bool ansDecodeGroupsAvx2(AnsGroupDecoder& d) {
  if (!ansAvx2ServesLanes(d.lanes)) return false;
  const bool compact = d.compactEntries != nullptr;
  switch (d.lanes) {
    case 8: compact ? decodeGroups<1, true>(d) : decodeGroups<1, false>(d); return true;
    case 16: compact ? decodeGroups<2, true>(d) : decodeGroups<2, false>(d); return true;
    case 24: compact ? decodeGroups<3, true>(d) : decodeGroups<3, false>(d); return true;
    default: compact ? decodeGroups<4, true>(d) : decodeGroups<4, false>(d); return true;
  }
}

#else

bool ansAvx2ServesLanes(size_t) { return false; }
bool ansDecodeGroupsAvx2(AnsGroupDecoder&) { return false; }

#endif

}  // namespace hfpac::detail
