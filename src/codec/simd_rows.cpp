// simd_rows.cpp - AVX2 kernels for the CPU decoder; see simd_rows.h. Compiled with per-function
// target attributes, so the library still runs on any x86-64 and elsewhere builds the stubs.
#include "codec/simd_rows.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HFPAC_HAVE_AVX2_KERNELS 1
#endif

namespace hfpac::detail {

#ifdef HFPAC_HAVE_AVX2_KERNELS

bool hasAvx2() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes;
}

__attribute__((target("avx2,fma"))) int predictRowAvx2(double quad, double lin, double constant,
                                                        int shift, int len, uint16_t* out) {
  const __m256d q = _mm256_set1_pd(quad), l = _mm256_set1_pd(lin), c = _mm256_set1_pd(constant);
  const __m256d scale = _mm256_set1_pd(1.0 / double(int64_t(1) << shift));
  const __m256d lo = _mm256_setzero_pd(), hi = _mm256_set1_pd(65535.0);
  __m256d a = _mm256_setr_pd(0.0, 1.0, 2.0, 3.0);
  const __m256d four = _mm256_set1_pd(4.0);
  int done = 0;
  for (; done + 4 <= len; done += 4) {
    // Exact: fma rounds once, and the exact result is an integer below 2^53.
    const __m256d s = _mm256_fmadd_pd(_mm256_fmadd_pd(q, a, l), a, c);
    __m256d t = _mm256_floor_pd(_mm256_mul_pd(s, scale));  // power-of-two scale: exact
    t = _mm256_min_pd(_mm256_max_pd(t, lo), hi);
    const __m128i v = _mm256_cvttpd_epi32(t);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + done), _mm_packus_epi32(v, v));
    a = _mm256_add_pd(a, four);
  }
  return done;
}

__attribute__((target("avx2,fma"))) void predictSegmentAvx2(const int32_t p[3][3], int segLog,
                                                            int j0, int j1, int len,
                                                            uint16_t* out, size_t stride) {
  const int n = 1 << segLog, shift = 4 * segLog;
  const double nn = double(n) * n, twoN = 2.0 * n;
  const double half = double(int64_t(1) << (shift - 1));
  const __m256d scale = _mm256_set1_pd(1.0 / double(int64_t(1) << shift));
  const __m256d lo = _mm256_setzero_pd(), hi = _mm256_set1_pd(65535.0);
  const __m256d four = _mm256_set1_pd(4.0);
  // The control net's rows as vectors (lane k = column k), converted once per segment.
  __m256d net[3];
  for (int r = 0; r < 3; ++r) net[r] = _mm256_setr_pd(p[r][0], p[r][1], p[r][2], 0.0);
  for (int j = j0; j < j1; ++j, out += stride) {
    // Row weights scaled by n^2, then the three columns at once (exact integers < 2^36).
    const double w0 = double(n - j) * (n - j), w1 = 2.0 * j * (n - j), w2 = double(j) * j;
    const __m256d cols = _mm256_fmadd_pd(
        _mm256_set1_pd(w2), net[2],
        _mm256_fmadd_pd(_mm256_set1_pd(w1), net[1], _mm256_mul_pd(_mm256_set1_pd(w0), net[0])));
    alignas(32) double col[4];
    _mm256_store_pd(col, cols);
    const __m256d q = _mm256_set1_pd(col[0] - 2.0 * col[1] + col[2]);
    const __m256d l = _mm256_set1_pd(twoN * (col[1] - col[0]));
    const __m256d c = _mm256_set1_pd(nn * col[0] + half);
    __m256d a = _mm256_setr_pd(0.0, 1.0, 2.0, 3.0);
    int x = 0;
    for (; x + 4 <= len; x += 4) {
      const __m256d sum = _mm256_fmadd_pd(_mm256_fmadd_pd(q, a, l), a, c);
      __m256d t = _mm256_floor_pd(_mm256_mul_pd(sum, scale));
      t = _mm256_min_pd(_mm256_max_pd(t, lo), hi);
      const __m128i v = _mm256_cvttpd_epi32(t);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(out + x), _mm_packus_epi32(v, v));
      a = _mm256_add_pd(a, four);
    }
    if (x < len) {
      // 1-3 remaining points (the shared last column of a patch): same arithmetic, masked.
      alignas(16) uint16_t tail[8];
      const __m256d sum = _mm256_fmadd_pd(_mm256_fmadd_pd(q, a, l), a, c);
      __m256d t = _mm256_floor_pd(_mm256_mul_pd(sum, scale));
      t = _mm256_min_pd(_mm256_max_pd(t, lo), hi);
      const __m128i v = _mm256_cvttpd_epi32(t);
      _mm_store_si128(reinterpret_cast<__m128i*>(tail), _mm_packus_epi32(v, v));
      for (int i = 0; x < len; ++x, ++i) out[x] = tail[i];
    }
  }
}

__attribute__((target("avx2"))) uint32_t lowRow16Avx2(const uint8_t* base, uint64_t bit, int b,
                                                       const int32_t* corr, uint16_t* row,
                                                       uint16_t flip) {
  const uint8_t* p = base + (bit >> 3);
  const int s0 = int(bit & 7);
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i mask = _mm256_set1_epi32(int((1u << b) - 1u));
  const __m256i half = _mm256_set1_epi32(b > 0 ? (1 << (b - 1)) : 0);
  const __m256i flips = _mm256_set1_epi32(flip);
  __m256i bad = _mm256_setzero_si256();
  __m128i halves[2];
  for (int h = 0; h < 2; ++h) {
    // Bit offset of each field, then a 32-bit window at its byte (b + 7 <= 23 bits fit).
    const __m256i offset = _mm256_add_epi32(
        _mm256_set1_epi32(s0 + h * 8 * b), _mm256_mullo_epi32(lane, _mm256_set1_epi32(b)));
    const __m256i bytes = _mm256_srli_epi32(offset, 3);
    const __m256i shifts = _mm256_and_si256(offset, _mm256_set1_epi32(7));
    const __m256i words = _mm256_i32gather_epi32(reinterpret_cast<const int*>(p), bytes, 1);
    const __m256i low = _mm256_and_si256(_mm256_srlv_epi32(words, shifts), mask);
    const __m256i pred =
        _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + h * 8)));
    const __m256i inv = _mm256_add_epi32(
        pred, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(corr + h * 8)));
    const __m256i v = _mm256_sub_epi32(_mm256_add_epi32(inv, low), half);
    bad = _mm256_or_si256(bad, _mm256_srli_epi32(v, 16));  // sign or > 65535
    const __m256i flipped = _mm256_xor_si256(_mm256_and_si256(v, _mm256_set1_epi32(0xffff)), flips);
    const __m128i packed = _mm_packus_epi32(_mm256_castsi256_si128(flipped),
                                            _mm256_extracti128_si256(flipped, 1));
    halves[h] = packed;
  }
  _mm_storeu_si128(reinterpret_cast<__m128i*>(row), halves[0]);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(row + 8), halves[1]);
  return uint32_t(_mm256_movemask_epi8(_mm256_cmpeq_epi32(bad, _mm256_setzero_si256())) != -1);
}

#else

bool hasAvx2() { return false; }
int predictRowAvx2(double, double, double, int, int, uint16_t*) { return 0; }
void predictSegmentAvx2(const int32_t[3][3], int, int, int, int, uint16_t*, size_t) {}
uint32_t lowRow16Avx2(const uint8_t*, uint64_t, int, const int32_t*, uint16_t*, uint16_t) {
  return 0;
}

#endif

}  // namespace hfpac::detail
