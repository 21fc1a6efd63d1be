// simd_rows.cpp - AVX2 kernels for the CPU decoder; see simd_rows.h. Compiled with per-function
// target attributes, so the library still runs on any x86-64 and elsewhere builds the stubs.
#include "codec/simd_rows.h"

#include <atomic>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HFPAC_HAVE_AVX2_KERNELS 1
#endif

namespace hfpac::detail {

constexpr int kMaxFieldBits = 16;  // b of a residual field

#ifdef HFPAC_HAVE_AVX2_KERNELS

namespace {
std::atomic<bool> simdDisabled{false};
}  // namespace

void setSimdDisabledForTesting(bool disabled) { simdDisabled.store(disabled, std::memory_order_relaxed); }

bool hasAvx2() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes && !simdDisabled.load(std::memory_order_relaxed);
}

// The rows of one segment for G groups of four columns (predictSegmentAvx2 says how): G is a
// constant, so the walk keeps its state in registers.
template <int G>
__attribute__((target("avx2,fma"))) inline void predictSegmentGroups(
    const __m256d (&pk)[3][3], const double (&w)[3], const double (&dw)[3], double half, double dn,
    __m256d scale, int rows, int len, uint16_t* out, size_t stride) {
  __m256d sum[G], delta[G], delta2[G];
#pragma GCC unroll 9
  for (int g = 0; g < G; ++g) {
    const __m256d a = _mm256_add_pd(_mm256_set1_pd(4.0 * g), _mm256_setr_pd(0.0, 1.0, 2.0, 3.0));
    const __m256d na = _mm256_sub_pd(_mm256_set1_pd(dn), a);
    const __m256d wa0 = _mm256_mul_pd(na, na), wa2 = _mm256_mul_pd(a, a);
    const __m256d wa1 = _mm256_mul_pd(_mm256_add_pd(a, a), na);
    __m256d R[3];
    for (int r = 0; r < 3; ++r)
      R[r] = _mm256_fmadd_pd(wa2, pk[r][2], _mm256_fmadd_pd(wa1, pk[r][1], _mm256_mul_pd(wa0, pk[r][0])));
    sum[g] = _mm256_fmadd_pd(_mm256_set1_pd(w[2]), R[2],
                             _mm256_fmadd_pd(_mm256_set1_pd(w[1]), R[1],
                                             _mm256_fmadd_pd(_mm256_set1_pd(w[0]), R[0], _mm256_set1_pd(half))));
    delta[g] = _mm256_fmadd_pd(_mm256_set1_pd(dw[2]), R[2],
                               _mm256_fmadd_pd(_mm256_set1_pd(dw[1]), R[1], _mm256_mul_pd(_mm256_set1_pd(dw[0]), R[0])));
    const __m256d outer = _mm256_add_pd(R[0], R[2]);
    delta2[g] = _mm256_sub_pd(_mm256_add_pd(outer, outer), _mm256_mul_pd(_mm256_set1_pd(4.0), R[1]));
  }
  const __m256d lo = _mm256_setzero_pd(), hi = _mm256_set1_pd(65535.0);
  for (int j = 0; j < rows; ++j, out += stride) {
#pragma GCC unroll 9
    for (int g = 0; g < G; ++g) {
      // floor(S / 2^shift) clamped: the scale is a power of two (exact) and truncation equals
      // floor once the value is clamped at 0.
      const __m256d t = _mm256_min_pd(_mm256_max_pd(_mm256_mul_pd(sum[g], scale), lo), hi);
      const __m128i v = _mm256_cvttpd_epi32(t);
      const __m128i packed = _mm_packus_epi32(v, v);
      if (g < G - 1 || 4 * G == len) {
        _mm_storel_epi64(reinterpret_cast<__m128i*>(out + 4 * g), packed);
      } else {
        // 1-3 remaining points (the shared last column of a patch).
        alignas(16) uint16_t tail[8];
        _mm_store_si128(reinterpret_cast<__m128i*>(tail), packed);
        for (int x = 4 * g, i = 0; x < len; ++x, ++i) out[x] = tail[i];
      }
      sum[g] = _mm256_add_pd(sum[g], delta[g]);
      delta[g] = _mm256_add_pd(delta[g], delta2[g]);
    }
  }
}

__attribute__((target("avx2,fma"))) void predictSegmentAvx2(const int32_t p[3][3], int segLog,
                                                            int j0, int j1, int len,
                                                            uint16_t* out, size_t stride) {
  // n^4 B(j, a) = sum_r W_r(j) R_r(a), R_r(a) = sum_k W_k(a) p[r][k], with the Bernstein weights
  // scaled by n^2: W_0(t) = (n - t)^2, W_1(t) = 2t(n - t), W_2(t) = t^2. Every quantity is an
  // integer below 2^53, so the doubles are exact (fma rounds once). Down the segment each group
  // of four columns is walked with forward differences: S += D, D += D2, two adds a row, and
  // D2 = 2 R_0 - 4 R_1 + 2 R_2 is constant (the second difference of every W_r is 2, -4, 2).
  const int n = 1 << segLog, shift = 4 * segLog;
  const double half = double(int64_t(1) << (shift - 1));
  const __m256d scale = _mm256_set1_pd(1.0 / double(int64_t(1) << shift));
  const double dn = n;
  auto weight = [dn](int r, double t) { return r == 0 ? (dn - t) * (dn - t) : r == 1 ? 2.0 * t * (dn - t) : t * t; };
  double w[3], dw[3];  // W_r(j0) and W_r(j0 + 1) - W_r(j0)
  for (int r = 0; r < 3; ++r) {
    w[r] = weight(r, j0);
    dw[r] = weight(r, j0 + 1) - w[r];
  }
  __m256d pk[3][3];
  for (int r = 0; r < 3; ++r)
    for (int k = 0; k < 3; ++k) pk[r][k] = _mm256_set1_pd(double(p[r][k]));
  const int rows = j1 - j0;
  // len <= n + 1 <= 33 columns: at most 9 groups of four.
  switch ((len + 3) / 4) {
    case 1: return predictSegmentGroups<1>(pk, w, dw, half, dn, scale, rows, len, out, stride);
    case 2: return predictSegmentGroups<2>(pk, w, dw, half, dn, scale, rows, len, out, stride);
    case 3: return predictSegmentGroups<3>(pk, w, dw, half, dn, scale, rows, len, out, stride);
    case 4: return predictSegmentGroups<4>(pk, w, dw, half, dn, scale, rows, len, out, stride);
    case 5: return predictSegmentGroups<5>(pk, w, dw, half, dn, scale, rows, len, out, stride);
    case 6: return predictSegmentGroups<6>(pk, w, dw, half, dn, scale, rows, len, out, stride);
    case 7: return predictSegmentGroups<7>(pk, w, dw, half, dn, scale, rows, len, out, stride);
    case 8: return predictSegmentGroups<8>(pk, w, dw, half, dn, scale, rows, len, out, stride);
    default: return predictSegmentGroups<9>(pk, w, dw, half, dn, scale, rows, len, out, stride);
  }
}

namespace {

// How the 16 b-bit fields of a row reach 32-bit lanes without a gather: lanes 4g..4g+3 (a group)
// take bytes from 16 bytes loaded at the byte of field 4g's first bit; a byte shuffle puts the 4
// bytes holding field i into lane i and a variable shift drops the bits before it. The controls
// depend only on b and the group's first bit within its byte (s = 0..7), so they are tabled.
struct GroupUnpack {
  alignas(16) uint8_t shuffle[16];
  alignas(16) uint32_t shift[4];
};
struct GroupUnpackTable {
  GroupUnpack entry[kMaxFieldBits + 1][8];
  GroupUnpackTable() {
    for (int b = 0; b <= kMaxFieldBits; ++b)
      for (int s = 0; s < 8; ++s) {
        GroupUnpack& u = entry[b][s];
        for (int i = 0; i < 4; ++i) {
          const int bit = s + i * b;  // <= 7 + 48: bytes 0..9 of the 16 loaded
          for (int k = 0; k < 4; ++k) u.shuffle[4 * i + k] = uint8_t(bit / 8 + k);
          u.shift[i] = uint32_t(bit % 8);
        }
      }
  }
};
const GroupUnpackTable& groupUnpackTable() {
  static const GroupUnpackTable table;
  return table;
}

// What lowRow16Avx2 and lowArea16Avx2 set up once per call: the constants of b, and the unpack
// controls of a row whose fields start s0 bits into its first byte. Rows of a full-width area
// are 16 * b bits = 2b bytes apart, so every row of an area has the same s0.
struct LowRowConstants {
  __m256i mask, half, flips, maskOut;
  __m256i shuffle[2], shift[2];  // lanes 0-7 (groups 0, 1) and 8-15 (groups 2, 3)
  int groupByte[4];              // byte of each group's first field from the row's first byte

  __attribute__((target("avx2"))) LowRowConstants(int b, int s0, uint16_t flip, uint16_t maskValue) {
    mask = _mm256_set1_epi32(int((1u << b) - 1u));
    half = _mm256_set1_epi32(b > 0 ? (1 << (b - 1)) : 0);
    flips = _mm256_set1_epi32(flip);
    maskOut = _mm256_set1_epi16(int16_t(maskValue));
    const GroupUnpackTable& table = groupUnpackTable();
    const GroupUnpack* u[4];
    for (int g = 0; g < 4; ++g) {
      const int bit = s0 + 4 * g * b;
      groupByte[g] = bit / 8;
      u[g] = &table.entry[b][bit % 8];
    }
    for (int h = 0; h < 2; ++h) {
      shuffle[h] = _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(u[2 * h + 1]->shuffle),
                                       reinterpret_cast<const __m128i*>(u[2 * h]->shuffle));
      shift[h] = _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(u[2 * h + 1]->shift),
                                     reinterpret_cast<const __m128i*>(u[2 * h]->shift));
    }
  }
};

// One 16-point row (lowRow16Avx2's contract) whose first byte is p; returns the out-of-range
// flags of its lanes. Reads 16 bytes from each group's first byte.
__attribute__((target("avx2"))) inline __m256i lowRow16(const LowRowConstants& k, const uint8_t* p,
                                                        const int32_t* corr, uint16_t* row,
                                                        uint32_t maskBits) {
  __m256i bad = _mm256_setzero_si256();
  __m128i halves[2];
  for (int h = 0; h < 2; ++h) {
    const __m256i bytes = _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(p + k.groupByte[2 * h + 1]),
                                              reinterpret_cast<const __m128i*>(p + k.groupByte[2 * h]));
    const __m256i words = _mm256_shuffle_epi8(bytes, k.shuffle[h]);
    const __m256i low = _mm256_and_si256(_mm256_srlv_epi32(words, k.shift[h]), k.mask);
    const __m256i pred =
        _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + h * 8)));
    const __m256i inv = _mm256_add_epi32(
        pred, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(corr + h * 8)));
    const __m256i v = _mm256_sub_epi32(_mm256_add_epi32(inv, low), k.half);
    bad = _mm256_or_si256(bad, _mm256_srli_epi32(v, 16));  // sign or > 65535
    const __m256i flipped = _mm256_xor_si256(_mm256_and_si256(v, _mm256_set1_epi32(0xffff)), k.flips);
    halves[h] = _mm_packus_epi32(_mm256_castsi256_si128(flipped), _mm256_extracti128_si256(flipped, 1));
  }
  __m256i out = _mm256_set_m128i(halves[1], halves[0]);
  if (maskBits != 0) {
    // Lane lx takes maskOut where bit lx is set: one blend instead of a branch per point.
    const __m256i select = _mm256_setr_epi16(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096,
                                             8192, 16384, -32768);
    const __m256i masked = _mm256_cmpeq_epi16(
        _mm256_and_si256(_mm256_set1_epi16(int16_t(maskBits)), select), select);
    out = _mm256_blendv_epi8(out, k.maskOut, masked);
  }
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(row), out);
  return bad;
}

__attribute__((target("avx2"))) inline uint32_t anyBad(__m256i bad) {
  return uint32_t(_mm256_testz_si256(bad, bad) == 0);
}

}  // namespace

__attribute__((target("avx2"))) uint32_t lowRow16Avx2(const uint8_t* base, uint64_t bit, int b,
                                                       const int32_t* corr, uint16_t* row,
                                                       uint16_t flip, uint32_t maskBits,
                                                       uint16_t maskOut) {
  const LowRowConstants k(b, int(bit & 7), flip, maskOut);
  return anyBad(lowRow16(k, base + (bit >> 3), corr, row, maskBits));
}

__attribute__((target("avx2"))) uint32_t lowArea16Avx2(const uint8_t* base, uint64_t bit, int b,
                                                        int rows, const int32_t* corr,
                                                        uint16_t* origin, size_t stride,
                                                        uint16_t flip, const uint32_t* maskRows,
                                                        uint16_t maskOut) {
  const LowRowConstants k(b, int(bit & 7), flip, maskOut);
  static constexpr int32_t kZero[16] = {};
  __m256i bad = _mm256_setzero_si256();
  const uint8_t* p = base + (bit >> 3);
  for (int ly = 0; ly < rows; ++ly, p += 2 * b) {  // rows are 16 * b bits = 2b bytes apart
    const int32_t* corrRow = corr ? corr + 16 * ly : kZero;
    bad = _mm256_or_si256(bad, lowRow16(k, p, corrRow, origin + size_t(ly) * stride,
                                        maskRows ? maskRows[ly] : 0u));
  }
  return anyBad(bad);
}

#else

bool hasAvx2() { return false; }
void setSimdDisabledForTesting(bool) {}
void predictSegmentAvx2(const int32_t[3][3], int, int, int, int, uint16_t*, size_t) {}
uint32_t lowRow16Avx2(const uint8_t*, uint64_t, int, const int32_t*, uint16_t*, uint16_t, uint32_t,
                      uint16_t) {
  return 0;
}
uint32_t lowArea16Avx2(const uint8_t*, uint64_t, int, int, const int32_t*, uint16_t*, size_t, uint16_t,
                       const uint32_t*, uint16_t) {
  return 0;
}

#endif

}  // namespace hfpac::detail
