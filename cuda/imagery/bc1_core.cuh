// bc1_core.cuh - the per-block arithmetic of the CUDA BC1 encoders (cuda/imagery/bc1.cu), as
// __host__ __device__ functions so that a plain C++ test runs it on the CPU against
// src/imagery/bc1.cpp (tests/gpu/bc1_core_test.cpp). Every function reproduces the CPU
// reference bit for bit: the fast mode in integers (bc1.cpp, "Fast mode", steps 0-6), the
// quality mode in float with the CPU's operations in the CPU's order (this file is compiled
// without FMA contraction: -fmad=false for nvcc, -ffp-contract=off for the host compiler).
//
// The quality mode is split into candidate evaluations that a warp runs in parallel:
// - clusterCandidate4/3(c): the least-squares fit of the c-th ordered split, c numbering the
//   CPU's loops (i outer, j, k inner) so that "smallest error, then smallest c" is the CPU's
//   "first strictly smaller error wins";
// - the refinement's 24 moves per round (endpoint, channel, step, then the order of the pair),
//   each an independent assign(); the round's result is again the (error, index) minimum
//   against the incumbent.
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

struct QBlock {
  int n;            // opaque texels
  int idx[16];      // their positions
  int rgb[16][3];   // their colours
  bool transparent;
};

HF_BC1_HD void gather(const uint32_t w[16], QBlock& b) {
  b.n = 0;
  b.transparent = false;
  for (int i = 0; i < 16; ++i) {
    if ((w[i] >> 24) < 128u) {
      b.transparent = true;
      continue;
    }
    b.idx[b.n] = i;
    for (int k = 0; k < 3; ++k) b.rgb[b.n][k] = int((w[i] >> (8 * k)) & 255u);
    ++b.n;
  }
}

HF_BC1_HD int quant5(float v) {
  const int q = int(floorf(clampf(v, 0.0f, 255.0f) * (31.0f / 255.0f) + 0.5f));
  return clampi(q, 0, 31);
}
HF_BC1_HD int quant6(float v) {
  const int q = int(floorf(clampf(v, 0.0f, 255.0f) * (63.0f / 255.0f) + 0.5f));
  return clampi(q, 0, 63);
}
HF_BC1_HD uint16_t pack565f(const float c[3]) { return pack565(quant5(c[0]), quant6(c[1]), quant5(c[2])); }

// assign(): the squared error of endpoints (c0, c1) and their indices.
HF_BC1_HD int assign(const QBlock& b, uint16_t c0, uint16_t c1, uint32_t& indices) {
  int p[4][3];
  palette(c0, c1, p);
  const int usable = c0 > c1 ? 4 : 3;
  indices = 0xffffffffu;
  int err = 0;
  for (int t = 0; t < b.n; ++t) {
    int best = 0, bestErr = dist2(b.rgb[t], p[0]);
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int j = 1; j < 4; ++j) {  // a fixed bound: the palette stays in registers on the GPU
      const int e = j < usable ? dist2(b.rgb[t], p[j]) : 0x7fffffff;
      if (e < bestErr) {
        bestErr = e;
        best = j;
      }
    }
    err += bestErr;
    indices = (indices & ~(3u << (2 * b.idx[t]))) | (uint32_t(best) << (2 * b.idx[t]));
  }
  return err;
}

// The candidates of Best::considerPair(a, c) in order: (hi, lo) when the block is opaque and
// hi != lo, then (lo, hi). Returns how many (1 or 2) and the pairs.
HF_BC1_HD int pairCandidates(const QBlock& b, uint16_t a, uint16_t c, uint16_t out0[2], uint16_t out1[2]) {
  const uint16_t hi = a > c ? a : c, lo = a > c ? c : a;
  int n = 0;
  if (!b.transparent && hi != lo) {
    out0[n] = hi;
    out1[n] = lo;
    ++n;
  }
  out0[n] = lo;
  out1[n] = hi;
  return n + 1;
}

HF_BC1_HD void principalAxis(const QBlock& b, float mean[3], float axis[3]) {
  float sum[3] = {0, 0, 0};
  for (int t = 0; t < b.n; ++t)
    for (int k = 0; k < 3; ++k) sum[k] += float(b.rgb[t][k]);
  const float inv = 1.0f / float(b.n);
  for (int k = 0; k < 3; ++k) mean[k] = sum[k] * inv;
  float cov[6] = {0, 0, 0, 0, 0, 0};
  for (int t = 0; t < b.n; ++t) {
    const float r = float(b.rgb[t][0]) - mean[0], g = float(b.rgb[t][1]) - mean[1], bl = float(b.rgb[t][2]) - mean[2];
    cov[0] += r * r;
    cov[1] += r * g;
    cov[2] += r * bl;
    cov[3] += g * g;
    cov[4] += g * bl;
    cov[5] += bl * bl;
  }
  float v[3] = {1.0f, 1.0f, 1.0f};
  if (cov[0] >= cov[3] && cov[0] >= cov[5]) v[0] = 2.0f;
  else if (cov[3] >= cov[5]) v[1] = 2.0f;
  else v[2] = 2.0f;
  for (int it = 0; it < 8; ++it) {
    const float x = cov[0] * v[0] + cov[1] * v[1] + cov[2] * v[2];
    const float y = cov[1] * v[0] + cov[3] * v[1] + cov[4] * v[2];
    const float z = cov[2] * v[0] + cov[4] * v[1] + cov[5] * v[2];
    const float ax = fabsf(x), ay = fabsf(y), az = fabsf(z);
    const float m = ax > (ay > az ? ay : az) ? ax : (ay > az ? ay : az);
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

HF_BC1_HD void axisEndpoints(const QBlock& b, const float mean[3], const float axis[3], uint16_t& e0, uint16_t& e1) {
  float lo = 0.0f, hi = 0.0f;
  for (int t = 0; t < b.n; ++t) {
    const float d = (float(b.rgb[t][0]) - mean[0]) * axis[0] + (float(b.rgb[t][1]) - mean[1]) * axis[1] +
                    (float(b.rgb[t][2]) - mean[2]) * axis[2];
    if (t == 0 || d < lo) lo = d;
    if (t == 0 || d > hi) hi = d;
  }
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

// The ordered points and prefix sums of clusterFit.
struct ClusterSetup {
  int n;
  float pre[17][3];
  float xx;
};

HF_BC1_HD void clusterSetup(const QBlock& b, const float axis[3], ClusterSetup& s) {
  const int n = b.n;
  int order[16];
  float proj[16];
  for (int t = 0; t < n; ++t) {
    proj[t] = float(b.rgb[t][0]) * axis[0] + float(b.rgb[t][1]) * axis[1] + float(b.rgb[t][2]) * axis[2];
    order[t] = t;
  }
  for (int i = 1; i < n; ++i) {
    const int o = order[i];
    int j = i;
    while (j > 0 && proj[order[j - 1]] > proj[o]) {
      order[j] = order[j - 1];
      --j;
    }
    order[j] = o;
  }
  float pts[16][3];
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < 3; ++k) pts[i][k] = float(b.rgb[order[i]][k]);
  for (int k = 0; k < 3; ++k) s.pre[0][k] = 0.0f;
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < 3; ++k) s.pre[i + 1][k] = s.pre[i][k] + pts[i][k];
  float xx = 0.0f;
  for (int i = 0; i < n; ++i) xx += pts[i][0] * pts[i][0] + pts[i][1] * pts[i][1] + pts[i][2] * pts[i][2];
  s.xx = xx;
  s.n = n;
}

// clusterFit's solve(): false when the system is singular; else the residual and endpoints.
HF_BC1_HD bool solve(const ClusterSetup& s, float A, float B, float C, const float X[3], const float Y[3], float& err,
                     float a[3], float c[3]) {
  const float det = A * B - C * C;
  if (!(fabsf(det) > 1e-6f)) return false;
  const float id = 1.0f / det;
  for (int k = 0; k < 3; ++k) {
    a[k] = (B * X[k] - C * Y[k]) * id;
    c[k] = (A * Y[k] - C * X[k]) * id;
  }
  err = s.xx - (a[0] * X[0] + a[1] * X[1] + a[2] * X[2]) - (c[0] * Y[0] + c[1] * Y[1] + c[2] * Y[2]);
  return true;
}

// The 4-cluster split (i, j, k), 0 <= i <= j <= k <= n.
HF_BC1_HD bool cluster4(const ClusterSetup& s, int i, int j, int k, float& err, float a[3], float c[3]) {
  const int n = s.n;
  const float n1 = float(i), n2 = float(j - i), n3 = float(k - j), n4 = float(n - k);
  const float A = n1 + n2 * (4.0f / 9.0f) + n3 * (1.0f / 9.0f);
  const float B = n4 + n3 * (4.0f / 9.0f) + n2 * (1.0f / 9.0f);
  const float C = (n2 + n3) * (2.0f / 9.0f);
  float X[3], Y[3];
  for (int q = 0; q < 3; ++q) {
    const float s1 = s.pre[i][q], s2 = s.pre[j][q] - s.pre[i][q], s3 = s.pre[k][q] - s.pre[j][q],
                s4 = s.pre[n][q] - s.pre[k][q];
    X[q] = s1 + s2 * (2.0f / 3.0f) + s3 * (1.0f / 3.0f);
    Y[q] = s4 + s3 * (2.0f / 3.0f) + s2 * (1.0f / 3.0f);
  }
  return solve(s, A, B, C, X, Y, err, a, c);
}

// The 3-cluster split (i, j), 0 <= i <= j <= n.
HF_BC1_HD bool cluster3(const ClusterSetup& s, int i, int j, float& err, float a[3], float c[3]) {
  const int n = s.n;
  const float n1 = float(i), n2 = float(j - i), n3 = float(n - j);
  const float A = n1 + n2 * 0.25f, B = n3 + n2 * 0.25f, C = n2 * 0.25f;
  float X[3], Y[3];
  for (int q = 0; q < 3; ++q) {
    const float s1 = s.pre[i][q], s2 = s.pre[j][q] - s.pre[i][q], s3 = s.pre[n][q] - s.pre[j][q];
    X[q] = s1 + s2 * 0.5f;
    Y[q] = s3 + s2 * 0.5f;
  }
  return solve(s, A, B, C, X, Y, err, a, c);
}

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
