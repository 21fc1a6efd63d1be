// bc1_core.cuh - the per-block arithmetic of the CUDA BC1 encoders (cuda/imagery/bc1.cu), as
// __host__ __device__ functions so that a plain C++ test runs it on the CPU against
// src/imagery/bc1.cpp (tests/gpu/bc1_core_test.cpp). Every function reproduces the CPU
// reference bit for bit: the fast mode in integers (bc1.cpp, "Fast mode", steps 0-6), the
// quality mode in float with the CPU's operations in the CPU's order (this file is compiled
// without FMA contraction: -fmad=false for nvcc, -ffp-contract=off for the host compiler).
//
// The quality mode is split into pieces that a warp's lanes evaluate in parallel:
// - the setup (mean, covariance, axis, the ordering along it, prefix sums) spread over lanes
//   where that keeps the CPU's operation order (each lane repeats the CPU's chain of additions
//   up to its own point, the stable insertion sort becomes a rank count);
// - the cluster fit's splits, numbered in the CPU's loop order (i outer, then j, k inner), so
//   that "smallest error, then smallest number" is the CPU's "first strictly smaller error
//   wins"; a split's least-squares coefficients depend on (split, n) only (a table for n = 16),
//   its X and Y on two per-pair terms computed once per block (pairTermsIJ/JK);
// - the candidate endpoints and the refinement's 24 moves per round, each an independent
//   assignQ() (the CPU's assign() in exact rearranged integer arithmetic), the round's result
//   again the (error, candidate) minimum against the incumbent.
// tests/gpu/bc1_core_test.cpp drives these functions the way the kernel does, on the CPU.
#pragma once

#include <math.h>  // fabsf, floorf, sqrtf: the same IEEE functions on host and device

#include <cstdint>

#if defined(__CUDACC__)
#define HF_BC1_HD __host__ __device__ __forceinline__
#else
#define HF_BC1_HD inline
#endif

namespace hfbc1 {

// ---- shared helpers ----

HF_BC1_HD int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }
HF_BC1_HD float clampf(float v, float lo, float hi) { return v < lo ? lo : (hi < v ? hi : v); }
HF_BC1_HD uint16_t pack565(int r5, int g6, int b5) { return uint16_t((r5 << 11) | (g6 << 5) | b5); }
HF_BC1_HD void unpack565(uint16_t c, int out[3]) {
  const int r = (c >> 11) & 31, g = (c >> 5) & 63, b = c & 31;
  out[0] = (r << 3) | (r >> 2);
  out[1] = (g << 2) | (g >> 4);
  out[2] = (b << 3) | (b >> 2);
}
HF_BC1_HD void palette(uint16_t c0, uint16_t c1, int p[4][3]) {
  unpack565(c0, p[0]);
  unpack565(c1, p[1]);
  if (c0 > c1) {
    for (int k = 0; k < 3; ++k) {
      p[2][k] = (2 * p[0][k] + p[1][k]) / 3;
      p[3][k] = (p[0][k] + 2 * p[1][k]) / 3;
    }
  } else {
    for (int k = 0; k < 3; ++k) {
      p[2][k] = (p[0][k] + p[1][k]) / 2;
      p[3][k] = 0;
    }
  }
}
HF_BC1_HD int dist2(const int a[3], const int b[3]) {
  const int dr = a[0] - b[0], dg = a[1] - b[1], db = a[2] - b[2];
  return dr * dr + dg * dg + db * db;
}
HF_BC1_HD int popcount32(uint32_t v) {
#if defined(__CUDA_ARCH__)
  return __popc(v);
#else
  return __builtin_popcount(v);
#endif
}
HF_BC1_HD uint64_t block64(uint16_t c0, uint16_t c1, uint32_t indices) {
  return uint64_t(c0) | uint64_t(c1) << 16 | uint64_t(indices) << 32;
}

// ---- fast mode (bc1.cpp "Fast mode"; integers throughout) ----

// Step 3's quantisation to the nearest 565 level.
HF_BC1_HD int q5(int v) { return (31 * v + 127) / 255; }
HF_BC1_HD int q6(int v) { return (63 * v + 127) / 255; }

// Step 1's single-colour tables: hi and lo fields of value v packed as hi | lo << 8, for 5
// (index 0..255) and 6 bits (256..511). Made by makeSingleColourTables (host) exactly as
// bc1.cpp's makeSingleColourTable.
inline void makeSingleColourTables(uint16_t table[512]) {
  for (int bits = 5; bits <= 6; ++bits) {
    const int top = (1 << bits) - 1;
    for (int v = 0; v < 256; ++v) {
      int best_err = 1 << 30, best_spread = 1 << 30, best_hi = 0, best_lo = 0;
      for (int hi = 0; hi <= top; ++hi)
        for (int lo = 0; lo <= top; ++lo) {
          const int eh = bits == 5 ? (hi << 3) | (hi >> 2) : (hi << 2) | (hi >> 4);
          const int el = bits == 5 ? (lo << 3) | (lo >> 2) : (lo << 2) | (lo >> 4);
          const int p = (2 * eh + el) / 3;
          const int err = p > v ? p - v : v - p, spread = hi > lo ? hi - lo : lo - hi;
          if (err < best_err || (err == best_err && spread < best_spread)) {
            best_err = err;
            best_spread = spread;
            best_hi = hi;
            best_lo = lo;
          }
        }
      table[(bits - 5) * 256 + v] = uint16_t(best_hi | best_lo << 8);
    }
  }
}

// Step 1 for an opaque block of one colour; `table` as makeSingleColourTables.
HF_BC1_HD uint64_t fastSolid(int r, int g, int b, const uint16_t* table) {
  const uint16_t tr = table[r], tg = table[256 + g], tb = table[b];
  const uint16_t hi = pack565(tr & 255, tg & 255, tb & 255);
  const uint16_t lo = pack565(tr >> 8, tg >> 8, tb >> 8);
  if (hi > lo) return block64(hi, lo, 0xaaaaaaaau);
  if (hi < lo) return block64(lo, hi, 0xffffffffu);
  return block64(hi, lo, 0u);
}

struct FastBox {
  int mn[3], mx[3];
  bool flip[3];
};

// Steps 3-5 for one inset (in 32nds); false for step 4's A == B (c0 = A).
HF_BC1_HD bool fastEncodeBox(const int rgb[16][3], const FastBox& box, int inset32, uint32_t transparent_bits,
                             uint16_t& c0, uint16_t& c1, uint32_t& indices) {
  int hi[3], lo[3];
  for (int k = 0; k < 3; ++k) {
    const int inset = (inset32 * (box.mx[k] - box.mn[k]) + 16) >> 5;
    const int h = box.mx[k] - inset, l = box.mn[k] + inset;
    hi[k] = box.flip[k] ? l : h;
    lo[k] = box.flip[k] ? h : l;
  }
  const uint16_t A = pack565(q5(hi[0]), q6(hi[1]), q5(hi[2]));
  const uint16_t B = pack565(q5(lo[0]), q6(lo[1]), q5(lo[2]));
  if (A == B) {
    c0 = A;
    return false;
  }
  const uint16_t mn = A < B ? A : B, mx = A < B ? B : A;
  c0 = transparent_bits ? mn : mx;
  c1 = transparent_bits ? mx : mn;
  int p0[3], p1[3];
  unpack565(c0, p0);
  unpack565(c1, p1);
  const int dir[3] = {p0[0] - p1[0], p0[1] - p1[1], p0[2] - p1[2]};
  int s1[3], s2[3], s3[3];
  for (int k = 0; k < 3; ++k) {
    if (!transparent_bits) {
      const int p2 = (2 * p0[k] + p1[k]) / 3, p3 = (p0[k] + 2 * p1[k]) / 3;
      s1[k] = p3 + p1[k];
      s2[k] = p2 + p3;
      s3[k] = p0[k] + p2;
    } else {
      const int p2 = (p0[k] + p1[k]) / 2;
      s1[k] = s2[k] = p2 + p1[k];
      s3[k] = p0[k] + p2;
    }
  }
  const int t1 = s1[0] * dir[0] + s1[1] * dir[1] + s1[2] * dir[2];
  const int t2 = s2[0] * dir[0] + s2[1] * dir[1] + s2[2] * dir[2];
  const int t3 = s3[0] * dir[0] + s3[1] * dir[1] + s3[2] * dir[2];
  uint32_t out = 0;
  for (int t = 0; t < 16; ++t) {
    const int v = 2 * (rgb[t][0] * dir[0] + rgb[t][1] * dir[1] + rgb[t][2] * dir[2]);
    const uint32_t x1 = v > t1 ? 1u : 0u, x2 = v > t2 ? 1u : 0u, x3 = v > t3 ? 1u : 0u;
    out |= ((x2 ^ 1u) | ((x1 ^ x3) << 1)) << (2 * t);
  }
  indices = out;
  return true;
}

HF_BC1_HD int fastError(const int rgb[16][3], uint16_t c0, uint16_t c1, uint32_t indices, uint32_t transparent_bits) {
  int p[4][3];
  palette(c0, c1, p);
  int err = 0;
  for (int t = 0; t < 16; ++t) {
    if ((transparent_bits >> (2 * t)) & 3) continue;
    err += dist2(rgb[t], p[(indices >> (2 * t)) & 3]);
  }
  return err;
}

// The whole fast mode for one block given as 16 little-endian RGBA words (r | g << 8 | ...).
HF_BC1_HD uint64_t fastBlock(const uint32_t w_in[16], const uint16_t* table) {
  // Step 0. The first opaque texel's word, found without indexing by a variable (which would
  // put the block in local memory on the GPU).
  uint32_t w[16], first = 0;
  bool any = false;
  for (int t = 15; t >= 0; --t) {
    w[t] = w_in[t];
    if (w[t] & 0x80000000u) {
      first = w[t];
      any = true;
    }
  }
  if (!any) return block64(0, 0, 0xffffffffu);
  uint32_t transparent_bits = 0;
  for (int t = 0; t < 16; ++t)
    if (!(w[t] & 0x80000000u)) {
      transparent_bits |= 3u << (2 * t);
      w[t] = first;
    }
  // Step 1.
  bool solid = true;
  for (int t = 1; t < 16; ++t) solid = solid && ((w[t] ^ w[0]) & 0x00ffffffu) == 0;
  if (solid) {
    const int r = int(w[0] & 255u), g = int((w[0] >> 8) & 255u), b = int((w[0] >> 16) & 255u);
    if (!transparent_bits) return fastSolid(r, g, b, table);
    const uint16_t c = pack565(q5(r), q6(g), q5(b));
    return block64(c, c, transparent_bits);
  }
  // Step 2.
  int rgb[16][3];
  int mn[3] = {255, 255, 255}, mx[3] = {0, 0, 0}, sum[3] = {0, 0, 0}, srg = 0, srb = 0, sgb = 0;
  for (int t = 0; t < 16; ++t) {
    for (int k = 0; k < 3; ++k) {
      const int v = int((w[t] >> (8 * k)) & 255u);
      rgb[t][k] = v;
      mn[k] = v < mn[k] ? v : mn[k];
      mx[k] = v > mx[k] ? v : mx[k];
      sum[k] += v;
    }
    srg += rgb[t][0] * rgb[t][1];
    srb += rgb[t][0] * rgb[t][2];
    sgb += rgb[t][1] * rgb[t][2];
  }
  // Step 3: the diagonal.
  const int range[3] = {mx[0] - mn[0], mx[1] - mn[1], mx[2] - mn[2]};
  const bool neg_rg = 16 * srg - sum[0] * sum[1] < 0, neg_rb = 16 * srb - sum[0] * sum[2] < 0,
             neg_gb = 16 * sgb - sum[1] * sum[2] < 0;
  FastBox box;
  for (int k = 0; k < 3; ++k) {
    box.mn[k] = mn[k];
    box.mx[k] = mx[k];
  }
  if (range[0] >= range[1] && range[0] >= range[2]) {
    box.flip[0] = false;
    box.flip[1] = neg_rg;
    box.flip[2] = neg_rb;
  } else if (range[1] >= range[2]) {
    box.flip[0] = neg_rg;
    box.flip[1] = false;
    box.flip[2] = neg_gb;
  } else {
    box.flip[0] = neg_rb;
    box.flip[1] = neg_gb;
    box.flip[2] = false;
  }
  uint16_t c0 = 0, c1 = 0;
  uint32_t indices = 0;
  if (!fastEncodeBox(rgb, box, 3, transparent_bits, c0, c1, indices)) {  // step 4's A == B
    if (!transparent_bits) return fastSolid((sum[0] + 8) >> 4, (sum[1] + 8) >> 4, (sum[2] + 8) >> 4, table);
    return block64(c0, c0, transparent_bits);
  }
  // Step 6.
  if ((indices & ~transparent_bits & 0xaaaaaaaau) == 0 && (range[0] > 4 || range[1] > 4 || range[2] > 4)) {
    uint16_t d0 = 0, d1 = 0;
    uint32_t d_indices = 0;
    fastEncodeBox(rgb, box, 0, transparent_bits, d0, d1, d_indices);
    if (fastError(rgb, d0, d1, d_indices, transparent_bits) < fastError(rgb, c0, c1, indices, transparent_bits)) {
      c0 = d0;
      c1 = d1;
      indices = d_indices;
    }
  }
  return block64(c0, c1, indices | transparent_bits);
}

// ---- quality mode ----
//
// bc1.cpp's quality encoder cut into pieces that lanes of a warp evaluate independently. Every
// piece performs the CPU's float operations on the CPU's operands in the CPU's order (the
// comments name the bc1.cpp expression each one reproduces); only work that is exact in any
// order (integer sums) or that yields the same rounded value (a subexpression computed once
// and reused) is rearranged.

// One texel for assignQ: its colour and whether it is opaque (-1) or transparent (0). 16 bytes:
// one broadcast vector load from shared memory per texel on the GPU.
struct alignas(16) QTexel {
  int r, g, b, opaque;
};

HF_BC1_HD int quant5(float v) {
  const int q = int(floorf(clampf(v, 0.0f, 255.0f) * (31.0f / 255.0f) + 0.5f));
  return clampi(q, 0, 31);
}
HF_BC1_HD int quant6(float v) {
  const int q = int(floorf(clampf(v, 0.0f, 255.0f) * (63.0f / 255.0f) + 0.5f));
  return clampi(q, 0, 63);
}
HF_BC1_HD uint16_t pack565f(const float c[3]) { return pack565(quant5(c[0]), quant6(c[1]), quant5(c[2])); }

// bc1.cpp's assign(): the squared RGB error of endpoints (c0, c1) over the opaque texels and
// their indices (transparent texels: 3), for all 16 texels of the block; `sumsq` is the sum of
// r^2 + g^2 + b^2 over the opaque texels. Exact integer arithmetic rearranged:
// dist2(x, p_j) = |x|^2 + e_j with e_j = |p_j|^2 - 2 x.p_j, so the nearest entry is the smallest
// e_j; m_j = 4 e_j + j orders the entries by e_j and then by j, so min_j m_j is the CPU's choice
// (the lower index wins a tie) and carries the index in its low 2 bits. Three integer
// multiply-adds per entry instead of the differences and squares.
HF_BC1_HD int assignQ(const QTexel tex[16], int sumsq, uint16_t c0, uint16_t c1, uint32_t& indices) {
  int p[4][3];
  palette(c0, c1, p);
  int K[4], Q[4][3];
  for (int j = 0; j < 4; ++j) {
    K[j] = 4 * (p[j][0] * p[j][0] + p[j][1] * p[j][1] + p[j][2] * p[j][2]) + j;
    for (int k = 0; k < 3; ++k) Q[j][k] = -8 * p[j][k];
  }
  if (!(c0 > c1)) K[3] = 1 << 29;  // 3 colours: entry 3 is never chosen (|4 e_j| < 2^23)
  uint32_t ind = 0;
  int summ = 0;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int t = 0; t < 16; ++t) {
    const QTexel x = tex[t];
    int m = K[0] + x.r * Q[0][0] + x.g * Q[0][1] + x.b * Q[0][2];
    for (int j = 1; j < 4; ++j) {
      const int v = K[j] + x.r * Q[j][0] + x.g * Q[j][1] + x.b * Q[j][2];
      m = v < m ? v : m;
    }
    m = x.opaque ? m : 3;  // transparent: index 3, and 3 is taken off again below
    summ += m;
    ind |= uint32_t(m & 3) << (2 * t);
  }
  indices = ind;
  // summ = 4 sum(e) + sum of all 16 indices; the indices' sum from their bits.
  const int sumj = popcount32(ind & 0x55555555u) + 2 * popcount32(ind & 0xaaaaaaaau);
  return sumsq + (summ - sumj) / 4;
}

// The candidates of Best::considerPair(a, c) in order: (hi, lo) when the block is opaque and
// hi != lo, then (lo, hi). Returns how many (1 or 2) and the pairs.
HF_BC1_HD int pairCandidates(bool transparent, uint16_t a, uint16_t c, uint16_t out0[2], uint16_t out1[2]) {
  const uint16_t hi = a > c ? a : c, lo = a > c ? c : a;
  int n = 0;
  if (!transparent && hi != lo) {
    out0[n] = hi;
    out1[n] = lo;
    ++n;
  }
  out0[n] = lo;
  out1[n] = hi;
  return n + 1;
}

// principalAxis(), the covariance's entry c (0..5: rr rg rb gg gb bb) over the n opaque texels
// in order (rgb: their colours, compacted): `cov[c] += r * g` with r, g the centred values.
HF_BC1_HD int covFirst(int c) { return c < 3 ? 0 : c < 5 ? 1 : 2; }
HF_BC1_HD int covSecond(int c) { return c < 3 ? c : c < 5 ? c - 2 : 2; }

// principalAxis() after the covariance: the fixed power iteration and the normalisation.
HF_BC1_HD void axisFromCov(const float cov[6], float axis[3]) {
  float v[3] = {1.0f, 1.0f, 1.0f};
  if (cov[0] >= cov[3] && cov[0] >= cov[5]) v[0] = 2.0f;
  else if (cov[3] >= cov[5]) v[1] = 2.0f;
  else v[2] = 2.0f;
  for (int it = 0; it < 8; ++it) {
    const float x = cov[0] * v[0] + cov[1] * v[1] + cov[2] * v[2];
    const float y = cov[1] * v[0] + cov[3] * v[1] + cov[4] * v[2];
    const float z = cov[2] * v[0] + cov[4] * v[1] + cov[5] * v[2];
    const float ax = fabsf(x), ay = fabsf(y), az = fabsf(z);
    const float m = ax > (ay > az ? ay : az) ? ax : (ay > az ? ay : az);  // std::max's result
    if (!(m > 0.0f)) break;
    const float s = 1.0f / m;
    v[0] = x * s;
    v[1] = y * s;
    v[2] = z * s;
  }
  const float len2 = v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
  const float il = len2 > 0.0f ? 1.0f / sqrtf(len2) : 0.0f;
  for (int k = 0; k < 3; ++k) axis[k] = v[k] * il;
}

// axisEndpoints(): one texel's offset along the axis, then the endpoints from the extremes.
HF_BC1_HD float axisOffset(const int rgb[3], const float mean[3], const float axis[3]) {
  return (float(rgb[0]) - mean[0]) * axis[0] + (float(rgb[1]) - mean[1]) * axis[1] + (float(rgb[2]) - mean[2]) * axis[2];
}
HF_BC1_HD void axisEndpointsFrom(float lo, float hi, const float mean[3], const float axis[3], uint16_t& e0,
                                 uint16_t& e1) {
  const float inset = (hi - lo) * (1.0f / 16.0f);
  lo += inset;
  hi -= inset;
  float a[3], c[3];
  for (int k = 0; k < 3; ++k) {
    a[k] = mean[k] + axis[k] * lo;
    c[k] = mean[k] + axis[k] * hi;
  }
  e0 = pack565f(c);
  e1 = pack565f(a);
}

// clusterFit()'s projection used for the ordering.
HF_BC1_HD float clusterProj(const int rgb[3], const float axis[3]) {
  return float(rgb[0]) * axis[0] + float(rgb[1]) * axis[1] + float(rgb[2]) * axis[2];
}

// ---- cluster fit: splits, their coefficients, their errors ----
//
// The ordered 4-cluster splits (i, j, k), 0 <= i <= j <= k <= 16, numbered in the CPU's loop
// order (i outer, k inner): kSplits4 of them; the 3-cluster splits (i, j) likewise, kSplits3.
// A pair (a, b), 0 <= a <= b <= 16, has the number pairIndex(a, b) in the same order; the
// 3-cluster split (i, j) is pair (i, j).
constexpr int kSplits4 = 969;
constexpr int kSplits3 = 153;
HF_BC1_HD int pairIndex(int a, int b) { return a * 17 - a * (a - 1) / 2 + (b - a); }

// A split as one word: i | j << 5 | k << 10 | pairIndex(i, j) << 15 | pairIndex(j, k) << 23,
// and bit 31 set when the 16-texel system is solvable (see splitCoef4).
HF_BC1_HD uint32_t splitWord(int i, int j, int k) {
  return uint32_t(i) | uint32_t(j) << 5 | uint32_t(k) << 10 | uint32_t(pairIndex(i, j)) << 15 |
         uint32_t(pairIndex(j, k)) << 23;
}

// solve()'s coefficients of a split of n texels: A, B, C as clusterFit computes them, and
// id = 1 / det; false when det is too small (the CPU skips the split). They depend on the split
// and n only: the kernels take them from a table for n = 16.
struct Coef {
  float A, B, C, id;
};
HF_BC1_HD bool coefFromABC(float A, float B, float C, Coef& cf) {
  const float det = A * B - C * C;
  cf.A = A;
  cf.B = B;
  cf.C = C;
  cf.id = 0.0f;
  if (!(fabsf(det) > 1e-6f)) return false;
  cf.id = 1.0f / det;
  return true;
}
HF_BC1_HD bool splitCoef4(int n, int i, int j, int k, Coef& cf) {
  const float n1 = float(i), n2 = float(j - i), n3 = float(k - j), n4 = float(n - k);
  const float A = n1 + n2 * (4.0f / 9.0f) + n3 * (1.0f / 9.0f);
  const float B = n4 + n3 * (4.0f / 9.0f) + n2 * (1.0f / 9.0f);
  const float C = (n2 + n3) * (2.0f / 9.0f);
  return coefFromABC(A, B, C, cf);
}
HF_BC1_HD bool splitCoef3(int n, int i, int j, Coef& cf) {
  const float n1 = float(i), n2 = float(j - i), n3 = float(n - j);
  const float A = n1 + n2 * 0.25f, B = n3 + n2 * 0.25f, C = n2 * 0.25f;
  return coefFromABC(A, B, C, cf);
}

// The 4-cluster X and Y as sums of two per-pair terms. clusterFit computes, per channel,
//   X = (s1 + s2 * (2/3)) + s3 * (1/3),  Y = (s4 + s3 * (2/3)) + s2 * (1/3)
// with s1 = pre[i], s2 = pre[j] - pre[i], s3 = pre[k] - pre[j], s4 = pre[n] - pre[k]. The
// bracketed sums and the products depend on one pair each: (i, j) gives U = s1 + s2 * (2/3) and
// Z = s2 * (1/3), (j, k) gives T = s3 * (1/3) and W = s4 + s3 * (2/3); X = U + T, Y = W + Z then
// round exactly as the CPU's expressions. A block's warp computes them once per pair.
HF_BC1_HD void pairTermsIJ(const float pre_i[3], const float pre_j[3], float U[3], float Z[3]) {
  for (int q = 0; q < 3; ++q) {
    const float s1 = pre_i[q], s2 = pre_j[q] - pre_i[q];
    U[q] = s1 + s2 * (2.0f / 3.0f);
    Z[q] = s2 * (1.0f / 3.0f);
  }
}
HF_BC1_HD void pairTermsJK(const float pre_j[3], const float pre_k[3], const float pre_n[3], float T[3], float W[3]) {
  for (int q = 0; q < 3; ++q) {
    const float s3 = pre_k[q] - pre_j[q], s4 = pre_n[q] - pre_k[q];
    T[q] = s3 * (1.0f / 3.0f);
    W[q] = s4 + s3 * (2.0f / 3.0f);
  }
}
// The 3-cluster X and Y of split (i, j).
HF_BC1_HD void cluster3XY(const float pre_i[3], const float pre_j[3], const float pre_n[3], float X[3], float Y[3]) {
  for (int q = 0; q < 3; ++q) {
    const float s1 = pre_i[q], s2 = pre_j[q] - pre_i[q], s3 = pre_n[q] - pre_j[q];
    X[q] = s1 + s2 * 0.5f;
    Y[q] = s3 + s2 * 0.5f;
  }
}

// solve() after the coefficients: the endpoints and the least-squares residual.
HF_BC1_HD float solveSplit(const Coef& cf, const float X[3], const float Y[3], float xx, float a[3], float c[3]) {
  for (int k = 0; k < 3; ++k) {
    a[k] = (cf.B * X[k] - cf.C * Y[k]) * cf.id;
    c[k] = (cf.A * Y[k] - cf.C * X[k]) * cf.id;
  }
  return xx - (a[0] * X[0] + a[1] * X[1] + a[2] * X[2]) - (c[0] * Y[0] + c[1] * Y[1] + c[2] * Y[2]);
}

// clusterFit()'s initial best error: a split's residual must be below it to count.
constexpr float kNoFit = 3.4e38f;

// Refinement move m (0..11) of a round from (c0, c1): endpoint e = m / 6, channel (m / 2) % 3,
// step -1 for even m, +1 for odd (bc1.cpp's loop order). False when it leaves 565.
HF_BC1_HD bool refineMove(uint16_t c0, uint16_t c1, int m, uint16_t& a, uint16_t& c) {
  const int e = m / 6, ch = (m / 2) % 3, step = (m & 1) ? 1 : -1;
  const uint16_t base = e == 0 ? c0 : c1;
  int r = (base >> 11) & 31, g = (base >> 5) & 63, bl = base & 31;
  if (ch == 0) r += step;
  else if (ch == 1) g += step;
  else bl += step;
  if (r < 0 || r > 31 || g < 0 || g > 63 || bl < 0 || bl > 31) return false;
  const uint16_t moved = pack565(r, g, bl);
  a = e == 0 ? moved : c0;
  c = e == 0 ? c1 : moved;
  return true;
}

}  // namespace hfbc1
