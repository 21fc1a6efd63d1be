// decode_math.h - the layer-1 prediction as the GPU decoder evaluates it (internal; shared by
// cuda/decode.cu and the host tests, hence HFPAC_HD).
//
// docs/format.md section 4 defines P(x, y) = clamp((S + 2^(4s-1)) >> 4s) with
// S = sum_rk wy(c)[r] wx(a)[k] P[r][k], wx/wy = ((n - t)^2, 2 t (n - t), t^2). For a fixed column
// a of a segment, with R[r] = sum_k wx(a)[k] P[r][k], the same S is a quadratic in c:
//
//   S(c) = n^2 R0 + c * 2n (R1 - R0) + c^2 (R0 - 2 R1 + R2)
//
// (expand the Bernstein weights). The decoder computes (C, L, Q) once per thread and column, adds
// the rounding half into C, and walks down its rows with exact 64-bit forward differences:
// S(c + 1) = S(c) + D(c), D(c) = L + Q (2c + 1), D(c + 1) = D(c) + 2Q. Everything is an exact
// integer: |P| < 2^23 (every valid and hostile stream), so |R| < 2^35, |Q| < 2^37, |L| < 2^42,
// |C| < 2^46 and |S| < 2^50 even for the few rows past a segment end (c <= n + 3) that a thread
// steps over without storing. Hence the result is bit-identical to layout.h's evalSegment.
#pragma once

#include <cstdint>

#include "codec/layout.h"

namespace hfgpu::detail {

struct ColumnPoly {
  int64_t c, l, q;  // S(c) = c + c * (l + c * q), rounding half included in c
};

HFPAC_HD inline ColumnPoly columnPoly(const int32_t (&p)[3][3], int a, int segLog) {
  const int n = 1 << segLog;
  const int32_t w0 = (n - a) * (n - a), w1 = 2 * a * (n - a), w2 = a * a;  // <= 2^10
  int64_t r[3];
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
  for (int k = 0; k < 3; ++k)
    r[k] = int64_t(w0) * p[k][0] + int64_t(w1) * p[k][1] + int64_t(w2) * p[k][2];
  ColumnPoly cp;
  cp.q = r[0] - 2 * r[1] + r[2];
  cp.l = (r[1] - r[0]) * (int64_t(2) << segLog);
  cp.c = r[0] * (int64_t(1) << (2 * segLog)) + (int64_t(1) << (4 * segLog - 1));  // r[0] may be < 0
  return cp;
}

// The sum S(c0) (rounding half included) and its first difference D(c0) = S(c0 + 1) - S(c0).
HFPAC_HD inline int64_t polyAt(const ColumnPoly& cp, int c) { return cp.c + c * (cp.l + c * cp.q); }
HFPAC_HD inline int64_t polyStep(const ColumnPoly& cp, int c) { return cp.l + cp.q * (2 * c + 1); }

// floor(S / 2^4s) clamped to 0..65535 (S includes the rounding half).
HFPAC_HD inline int32_t predictionOf(int64_t s, int segLog) {
  // Stored points have |S| < n^4 2^23, so the value fits in 32 bits (rows past a segment end are
  // never stored; their truncation is harmless).
  const int32_t v = int32_t(s >> (4 * segLog));
  return v < 0 ? 0 : (v > 65535 ? 65535 : v);
}

// The strip kernel (cuda/decode.cu, decodeStrips) decodes a patch by chunks of one area row (a
// 16-row strip): the strip's areasX areas split into the fewest chunks of at most
// kStripMaxAreas areas, all of one size but the last (a 129-wide patch: one chunk of 9 areas,
// its 1-wide area included). The area at column ax of a strip starts a chunk iff
// ax % stripChunkAreas(areasX) == 0; the chunk is that area and the next ones of the strip,
// which DecodePlan lays out consecutively (all areas of a patch, raster order).
constexpr int kStripMaxAreas = 9;
HFPAC_HD inline int stripChunkAreas(int areasX) {
  const int chunks = (areasX + kStripMaxAreas - 1) / kStripMaxAreas;
  return (areasX + chunks - 1) / chunks;
}

}  // namespace hfgpu::detail
