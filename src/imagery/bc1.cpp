// bc1.cpp - BC1 (DXT1) encoders: the fast one-pass mode and the cluster-fit quality mode, and
// the reference decoder. The CUDA encoders of src/gpu reproduce these bit for bit, so:
// - the fast mode is integer arithmetic throughout, specified step by step in "Fast mode" below
//   (the CPU code evaluates some of it in float on integers small enough to be exact);
// - the quality mode's arithmetic is plain float (the library is built with -ffp-contract=off:
//   no fused multiply-add), in the order written; integer rounding is explicit;
// - ties are broken by a fixed order: the lower palette index wins a tie in index selection,
//   the earlier candidate wins a tie in error (candidates are visited in the order written);
// - the principal axis comes from a fixed number of power iterations from a fixed start.
// Errors are measured as squared RGB distance to the palette the reference decoder produces
// (the quantity RGB PSNR is computed from), in integers.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "imagery/imagery.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "bc1.cpp's fast mode reads texels and writes blocks as little-endian words"
#endif

namespace himg {

namespace {

struct Block {
  int n = 0;              // opaque texels
  int idx[16];            // their positions 0..15
  int rgb[16][3];         // their colours
  bool transparent = false;  // some texel has alpha < 128
};

void gather(const uint8_t rgba[64], Block& b) {
  b.n = 0;
  b.transparent = false;
  for (int i = 0; i < 16; ++i) {
    if (rgba[4 * i + 3] < 128) {
      b.transparent = true;
      continue;
    }
    b.idx[b.n] = i;
    for (int k = 0; k < 3; ++k) b.rgb[b.n][k] = rgba[4 * i + k];
    ++b.n;
  }
}

// 8-bit value -> 5 or 6 bits, rounded to the nearest representable expanded value.
inline int quant5(float v) {
  const int q = int(std::floor(std::clamp(v, 0.0f, 255.0f) * (31.0f / 255.0f) + 0.5f));
  return std::clamp(q, 0, 31);
}
inline int quant6(float v) {
  const int q = int(std::floor(std::clamp(v, 0.0f, 255.0f) * (63.0f / 255.0f) + 0.5f));
  return std::clamp(q, 0, 63);
}
inline uint16_t pack565(int r5, int g6, int b5) { return uint16_t((r5 << 11) | (g6 << 5) | b5); }
inline uint16_t pack565f(const float c[3]) { return pack565(quant5(c[0]), quant6(c[1]), quant5(c[2])); }
inline void unpack565(uint16_t c, int out[3]) {
  const int r = (c >> 11) & 31, g = (c >> 5) & 63, b = c & 31;
  out[0] = (r << 3) | (r >> 2);
  out[1] = (g << 2) | (g >> 4);
  out[2] = (b << 3) | (b >> 2);
}

// The palette the reference decoder makes of (c0, c1); 4 entries (the 4th of a 3-colour block
// is transparent black).
void palette(uint16_t c0, uint16_t c1, int p[4][3]) {
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

inline int dist2(const int a[3], const int b[3]) {
  const int dr = a[0] - b[0], dg = a[1] - b[1], db = a[2] - b[2];
  return dr * dr + dg * dg + db * db;
}

// Indices for endpoints (c0, c1) in the mode their order implies; returns the squared error
// over the opaque texels. Transparent texels get index 3 (3-colour mode only; the caller makes
// sure a block with transparency is in that mode).
int assign(const Block& b, uint16_t c0, uint16_t c1, uint32_t& indices) {
  int p[4][3];
  palette(c0, c1, p);
  const int usable = c0 > c1 ? 4 : 3;
  indices = 0;
  for (int i = 0; i < 16; ++i) indices |= 3u << (2 * i);  // transparent unless opaque below
  int err = 0;
  for (int t = 0; t < b.n; ++t) {
    int best = 0, bestErr = dist2(b.rgb[t], p[0]);
    for (int j = 1; j < usable; ++j) {
      const int e = dist2(b.rgb[t], p[j]);
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

void write(uint16_t c0, uint16_t c1, uint32_t indices, uint8_t out[8]) {
  out[0] = uint8_t(c0);
  out[1] = uint8_t(c0 >> 8);
  out[2] = uint8_t(c1);
  out[3] = uint8_t(c1 >> 8);
  for (int i = 0; i < 4; ++i) out[4 + i] = uint8_t(indices >> (8 * i));
}

// A candidate (c0, c1) in the mode the block needs: with transparency, 3-colour (c0 <= c1);
// else the order chooses the mode, both are tried by the callers. Keeps the best.
struct Best {
  int err = 1 << 30;
  uint16_t c0 = 0, c1 = 0;
  uint32_t indices = 0;
  void consider(const Block& b, uint16_t c0_, uint16_t c1_) {
    uint32_t ind;
    const int e = assign(b, c0_, c1_, ind);
    if (e < err) {
      err = e;
      c0 = c0_;
      c1 = c1_;
      indices = ind;
    }
  }
  // Both orders of an endpoint pair: 4-colour (larger first) and 3-colour (smaller first);
  // only 3-colour with transparency. Equal endpoints: one 3-colour block.
  void considerPair(const Block& b, uint16_t a, uint16_t c) {
    const uint16_t hi = std::max(a, c), lo = std::min(a, c);
    if (!b.transparent && hi != lo) consider(b, hi, lo);
    consider(b, lo, hi);
  }
};

// Mean and principal axis (power iteration: 8 steps from the covariance's largest diagonal
// direction, a fixed start so the GPU port follows the same path).
void principalAxis(const Block& b, float mean[3], float axis[3]) {
  float sum[3] = {0, 0, 0};
  for (int t = 0; t < b.n; ++t)
    for (int k = 0; k < 3; ++k) sum[k] += float(b.rgb[t][k]);
  const float inv = 1.0f / float(b.n);
  for (int k = 0; k < 3; ++k) mean[k] = sum[k] * inv;
  float cov[6] = {0, 0, 0, 0, 0, 0};  // rr rg rb gg gb bb
  for (int t = 0; t < b.n; ++t) {
    const float r = float(b.rgb[t][0]) - mean[0], g = float(b.rgb[t][1]) - mean[1],
                bl = float(b.rgb[t][2]) - mean[2];
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
    const float m = std::max(std::fabs(x), std::max(std::fabs(y), std::fabs(z)));
    if (!(m > 0.0f)) break;  // no variance: keep the direction
    const float s = 1.0f / m;
    v[0] = x * s;
    v[1] = y * s;
    v[2] = z * s;
  }
  const float len2 = v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
  const float il = len2 > 0.0f ? 1.0f / std::sqrt(len2) : 0.0f;
  for (int k = 0; k < 3; ++k) axis[k] = v[k] * il;
}

// Quality mode's first candidate: extremes of the projections on the principal axis, inset by
// 1/16 of the range (the palette's outer entries then sit inside the colour spread, which lowers
// the error of the texels between them), rounded to 565. (This was also the fast mode before the
// integer fast mode below replaced it; Quality keeps it so that its output stays unchanged.)
void axisEndpoints(const Block& b, const float mean[3], const float axis[3], uint16_t& e0, uint16_t& e1) {
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

// Solid colour: the 565 pair whose 3-colour midpoint (or the endpoint itself) is closest, per
// channel; exact where 565 can represent the colour.
void solidEndpoints(const int rgb[3], uint16_t& e0, uint16_t& e1) {
  const float f[3] = {float(rgb[0]), float(rgb[1]), float(rgb[2])};
  e0 = e1 = pack565f(f);
}

// Cluster fit over the texels ordered along `axis`: every split of the ordered list into 4
// (or 3) consecutive clusters, least-squares endpoints for the cluster weights, the smallest
// least-squares residual kept (Castano, "High Quality DXT Compression using CUDA"). Returns the
// unquantised endpoints of the best 4- and 3-cluster fits (found4/found3 false when none).
struct Fit {
  bool found = false;
  float a[3] = {0, 0, 0}, b[3] = {0, 0, 0};
};

void clusterFit(const Block& b, const float axis[3], Fit& fit4, Fit& fit3) {
  const int n = b.n;
  // Order along the axis (insertion sort: 16 elements; ties keep the texel order).
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
  // Prefix sums of the points.
  float pre[17][3];
  for (int k = 0; k < 3; ++k) pre[0][k] = 0.0f;
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < 3; ++k) pre[i + 1][k] = pre[i][k] + pts[i][k];
  float xx = 0.0f;  // sum of |p|^2: constant part of the residual
  for (int i = 0; i < n; ++i) xx += pts[i][0] * pts[i][0] + pts[i][1] * pts[i][1] + pts[i][2] * pts[i][2];

  // Least squares: point i has weight w_i for endpoint a and 1 - w_i for b. With
  // A = sum w^2, B = sum (1-w)^2, C = sum w(1-w), X = sum w p, Y = sum (1-w) p:
  // a = (B X - C Y) / (A B - C^2), b = (A Y - C X) / (A B - C^2), residual = xx - a.X - b.Y
  // (componentwise dot products), the least-squares error.
  auto solve = [&](float A, float B, float C, const float X[3], const float Y[3], Fit& fit, float& bestErr) {
    const float det = A * B - C * C;
    if (!(std::fabs(det) > 1e-6f)) return;
    const float id = 1.0f / det;
    float a[3], c[3];
    for (int k = 0; k < 3; ++k) {
      a[k] = (B * X[k] - C * Y[k]) * id;
      c[k] = (A * Y[k] - C * X[k]) * id;
    }
    const float err = xx - (a[0] * X[0] + a[1] * X[1] + a[2] * X[2]) - (c[0] * Y[0] + c[1] * Y[1] + c[2] * Y[2]);
    if (err < bestErr) {
      bestErr = err;
      fit.found = true;
      for (int k = 0; k < 3; ++k) {
        fit.a[k] = a[k];
        fit.b[k] = c[k];
      }
    }
  };
  // 4 clusters: [0, i) weight 1, [i, j) 2/3, [j, k) 1/3, [k, n) 0.
  float best4 = 3.4e38f;
  for (int i = 0; i <= n; ++i)
    for (int j = i; j <= n; ++j)
      for (int k = j; k <= n; ++k) {
        const float n1 = float(i), n2 = float(j - i), n3 = float(k - j), n4 = float(n - k);
        const float A = n1 + n2 * (4.0f / 9.0f) + n3 * (1.0f / 9.0f);
        const float B = n4 + n3 * (4.0f / 9.0f) + n2 * (1.0f / 9.0f);
        const float C = (n2 + n3) * (2.0f / 9.0f);
        float X[3], Y[3];
        for (int q = 0; q < 3; ++q) {
          const float s1 = pre[i][q], s2 = pre[j][q] - pre[i][q], s3 = pre[k][q] - pre[j][q],
                      s4 = pre[n][q] - pre[k][q];
          X[q] = s1 + s2 * (2.0f / 3.0f) + s3 * (1.0f / 3.0f);
          Y[q] = s4 + s3 * (2.0f / 3.0f) + s2 * (1.0f / 3.0f);
        }
        solve(A, B, C, X, Y, fit4, best4);
      }
  // 3 clusters: [0, i) weight 1, [i, j) 1/2, [j, n) 0.
  float best3 = 3.4e38f;
  for (int i = 0; i <= n; ++i)
    for (int j = i; j <= n; ++j) {
      const float n1 = float(i), n2 = float(j - i), n3 = float(n - j);
      const float A = n1 + n2 * 0.25f, B = n3 + n2 * 0.25f, C = n2 * 0.25f;
      float X[3], Y[3];
      for (int q = 0; q < 3; ++q) {
        const float s1 = pre[i][q], s2 = pre[j][q] - pre[i][q], s3 = pre[n][q] - pre[j][q];
        X[q] = s1 + s2 * 0.5f;
        Y[q] = s3 + s2 * 0.5f;
      }
      solve(A, B, C, X, Y, fit3, best3);
    }
}

// Local search in 565 around a pair: each of the 12 channel steps (+-1 on r, g, b of either
// endpoint), greedy, while the true error falls (at most 8 rounds).
void refine(const Block& b, Best& best) {
  for (int round = 0; round < 8; ++round) {
    const uint16_t c0 = best.c0, c1 = best.c1;
    const int before = best.err;
    for (int e = 0; e < 2; ++e)
      for (int ch = 0; ch < 3; ++ch)
        for (int s = -1; s <= 1; s += 2) {
          const uint16_t base = e == 0 ? c0 : c1;
          int r = (base >> 11) & 31, g = (base >> 5) & 63, bl = base & 31;
          if (ch == 0) r += s;
          else if (ch == 1) g += s;
          else bl += s;
          if (r < 0 || r > 31 || g < 0 || g > 63 || bl < 0 || bl > 31) continue;
          const uint16_t moved = pack565(r, g, bl);
          best.considerPair(b, e == 0 ? moved : c0, e == 0 ? c1 : moved);
        }
    if (best.err >= before) break;
  }
}

// ---- Fast mode ----
//
// The exact algorithm (the CUDA port reproduces it bit for bit). Everything is integer
// arithmetic; "/" is integer division of non-negative numbers (truncation), ">>" a shift of a
// non-negative number. A texel's colour is (r, g, b), 8 bits each; E5(q) = q << 3 | q >> 2 and
// E6(q) = q << 2 | q >> 4 expand 565 fields to 8 bits (as the reference decoder does), and
// pack(r5, g6, b5) = r5 << 11 | g6 << 5 | b5.
//
// 0. Transparency. A texel is transparent when its alpha < 128. No opaque texel: the block is
//    c0 = c1 = 0 with every index 3. Otherwise every transparent texel takes, for the steps
//    below, the colour of the first opaque texel (texel order 0..15), so that there are always
//    16 colours; such a block is "transparent": 3-colour mode, and whatever the steps below
//    give its transparent texels, they get index 3.
// 1. One colour (all 16 colours equal, (r, g, b)):
//    - opaque block: per channel the single-colour table pair (hi, lo) of the channel's value
//      (below); H = pack(hi_r, hi_g, hi_b), L = pack(lo_r, lo_g, lo_b). H > L: c0 = H, c1 = L,
//      every index 2. H < L: c0 = L, c1 = H, every index 3. H == L (the colour is exact in 565:
//      then (hi, lo) = (q, q) in every channel): c0 = c1 = H, every index 0.
//    - transparent block: c0 = c1 = pack(q5(r), q6(g), q5(b)) (below), opaque texels index 0.
//    Single-colour table for a B-bit field (B = 5, 6) and an 8-bit value v: the pair (hi, lo)
//    of B-bit values that minimises |(2 E(hi) + E(lo)) / 3 - v| (the 4-colour palette's third
//    entry as the reference decoder computes it); ties: the smaller |hi - lo|, then the first
//    in the order hi = 0, 1, ... (outer loop), lo = 0, 1, ... (inner loop).
// 2. Statistics of the 16 colours: per channel k: min_k, max_k, sum_k; the cross sums
//    s_rg = sum(r g), s_rb = sum(r b), s_gb = sum(g b).
// 3. Endpoints from the bounding box, inset by about 3/32 of the range on each side:
//    inset_k = (3 (max_k - min_k) + 16) >> 5, hi_k = max_k - inset_k, lo_k = min_k + inset_k.
//    Diagonal: the reference channel m is the one of largest range max_k - min_k (ties: r, then
//    g, then b); each other channel k whose covariance with m is negative,
//    16 s_mk - sum_m sum_k < 0, has hi_k and lo_k swapped (so that the box diagonal follows the
//    colours' trend, e.g. blue falling while red rises).
//    Quantisation to the nearest 565 level (for every 8-bit v, the level whose expansion is
//    nearest to v): q5(v) = (31 v + 127) / 255, q6(v) = (63 v + 127) / 255;
//    A = pack(q5(hi_r), q6(hi_g), q5(hi_b)), B = pack(q5(lo_r), q6(lo_g), q5(lo_b)).
// 4. Mode and order. Opaque block: 4 colours, c0 = max(A, B), c1 = min(A, B); when A == B the
//    block is instead encoded as one colour by step 1's opaque rule, with the rounded mean
//    (sum_k + 8) >> 4 as the colour. Transparent block: 3 colours, c0 = min(A, B),
//    c1 = max(A, B); when A == B, c0 = c1 = A and every opaque texel gets index 0.
// 5. Indices: the nearest palette entry along the endpoints' line, by projection (the palette
//    entries lie on that line up to the decoder's rounding). P0 = E(c0), P1 = E(c1) per channel;
//    4 colours: P2 = (2 P0 + P1) / 3, P3 = (P0 + 2 P1) / 3; 3 colours: P2 = (P0 + P1) / 2.
//    dir = P0 - P1 (signed), d_j = dot(P_j, dir); thresholds (twice the midpoints):
//    4 colours: T1 = d3 + d1, T2 = d2 + d3, T3 = d0 + d2; 3 colours: T1 = T2 = d2 + d1,
//    T3 = d0 + d2. For each texel v = 2 dot((r, g, b), dir) and x_i = 1 if v > T_i else 0;
//    index = (1 - x2) | (x1 xor x3) << 1. That is v > T3: 0; T2 < v <= T3: 2; T1 < v <= T2: 3;
//    else 1 (a tie goes to the entry nearer P1). Transparent texels: index 3.
// 6. Two clusters. When no opaque texel got index 2 or 3 in step 5 (all sit at the ends of
//    the box, e.g. a block of two colours, where the inset only moved the endpoints away from
//    them), steps 3-5 run again with inset_k = 0 (A != B again: the box only grew). The result
//    with the smaller squared RGB error over the opaque texels (against the palette the
//    reference decoder makes of c0, c1) is kept; on a tie, the inset one.
// All magnitudes stay below 2^24 (|v| < 2^20, cross sums < 2^21, 16 s_mk < 2^24), so int32 is
// enough everywhere; the CPU code below evaluates steps 2 and 5 in float, where every operand
// and result is such an integer, which makes the float operations exact (equal to the integer
// ones in any order) and lets the compiler vectorise them.

struct FastTables {
  uint8_t q5[256], q6[256];                        // step 3's quantisation
  uint8_t hi5[256], lo5[256], hi6[256], lo6[256];  // step 1's single-colour tables
};

void makeSingleColourTable(int bits, uint8_t hi_out[256], uint8_t lo_out[256]) {
  const int top = (1 << bits) - 1;
  auto expand = [bits](int q) { return bits == 5 ? (q << 3) | (q >> 2) : (q << 2) | (q >> 4); };
  for (int v = 0; v < 256; ++v) {
    int best_err = 1 << 30, best_spread = 1 << 30;
    for (int hi = 0; hi <= top; ++hi)
      for (int lo = 0; lo <= top; ++lo) {
        const int p = (2 * expand(hi) + expand(lo)) / 3;
        const int err = p > v ? p - v : v - p, spread = hi > lo ? hi - lo : lo - hi;
        if (err < best_err || (err == best_err && spread < best_spread)) {
          best_err = err;
          best_spread = spread;
          hi_out[v] = uint8_t(hi);
          lo_out[v] = uint8_t(lo);
        }
      }
  }
}

FastTables makeFastTables() {
  FastTables t{};
  for (int v = 0; v < 256; ++v) {
    t.q5[v] = uint8_t((31 * v + 127) / 255);
    t.q6[v] = uint8_t((63 * v + 127) / 255);
  }
  makeSingleColourTable(5, t.hi5, t.lo5);
  makeSingleColourTable(6, t.hi6, t.lo6);
  return t;
}

const FastTables& fastTables() {
  static const FastTables tables = makeFastTables();
  return tables;
}

// write() as one 8-byte store (the block is little-endian, as is every target of this code).
inline void fastWrite(uint16_t c0, uint16_t c1, uint32_t indices, uint8_t out[8]) {
  const uint64_t v = uint64_t(c0) | uint64_t(c1) << 16 | uint64_t(indices) << 32;
  std::memcpy(out, &v, 8);
}

// Step 1 for an opaque block.
inline void fastSolid(int r, int g, int b, const FastTables& tab, uint8_t out[8]) {
  const uint16_t hi = pack565(tab.hi5[r], tab.hi6[g], tab.hi5[b]);
  const uint16_t lo = pack565(tab.lo5[r], tab.lo6[g], tab.lo5[b]);
  if (hi > lo) fastWrite(hi, lo, 0xaaaaaaaau, out);
  else if (hi < lo) fastWrite(lo, hi, 0xffffffffu, out);
  else fastWrite(hi, lo, 0u, out);
}

inline float minf(float a, float b) { return b < a ? b : a; }
inline float maxf(float a, float b) { return b > a ? b : a; }

// Step 5's selection for the 16 texels, packed: texel (x, y) at bit 2 (4 y + x).
__attribute__((always_inline)) inline uint32_t fastIndices(const float r[16], const float g[16], const float b[16],
                                                           const int dir[3], int t1, int t2, int t3) {
  const float fr = float(2 * dir[0]), fg = float(2 * dir[1]), fb = float(2 * dir[2]);
  const float f1 = float(t1), f2 = float(t2), f3 = float(t3);
  uint32_t idx[16];
  for (int t = 0; t < 16; ++t) {
    const float v = (r[t] * fr + g[t] * fg) + b[t] * fb;
    const uint32_t x1 = v > f1 ? 1u : 0u, x2 = v > f2 ? 1u : 0u, x3 = v > f3 ? 1u : 0u;
    idx[t] = (x2 ^ 1u) | ((x1 ^ x3) << 1);
  }
  uint32_t col[4];  // column x: its 4 rows at bytes y
  for (int x = 0; x < 4; ++x) col[x] = (idx[x] | (idx[4 + x] << 8)) | ((idx[8 + x] << 16) | (idx[12 + x] << 24));
  return col[0] | col[1] << 2 | col[2] << 4 | col[3] << 6;
}

// Step 3's box: the channels' extremes and which of them the diagonal swaps.
struct FastBox {
  int mn[3], mx[3];
  bool flip[3];  // hi and lo swapped
};

// Steps 3 (the inset, in 32nds of the range: 3, or 0 in step 6) to 5: endpoints and indices.
// False for step 4's A == B (then c0 = A, nothing else set).
__attribute__((always_inline)) inline bool fastEncodeBox(const float r[16], const float g[16], const float b[16],
                                                         const FastBox& box, int inset32, uint32_t transparent_bits,
                                                         const FastTables& tab, uint16_t& c0, uint16_t& c1,
                                                         uint32_t& indices) {
  int hi[3], lo[3];
  for (int k = 0; k < 3; ++k) {
    const int inset = (inset32 * (box.mx[k] - box.mn[k]) + 16) >> 5;
    const int h = box.mx[k] - inset, l = box.mn[k] + inset;
    hi[k] = box.flip[k] ? l : h;
    lo[k] = box.flip[k] ? h : l;
  }
  const uint16_t A = pack565(tab.q5[hi[0]], tab.q6[hi[1]], tab.q5[hi[2]]);
  const uint16_t B = pack565(tab.q5[lo[0]], tab.q6[lo[1]], tab.q5[lo[2]]);
  // Step 4.
  if (A == B) {
    c0 = A;
    return false;
  }
  c0 = transparent_bits ? std::min(A, B) : std::max(A, B);
  c1 = transparent_bits ? std::max(A, B) : std::min(A, B);
  // Step 5: the thresholds as dot products of palette sums (d_i + d_j = dot(P_i + P_j, dir)).
  int p0[3], p1[3];
  unpack565(c0, p0);
  unpack565(c1, p1);
  const int dir[3] = {p0[0] - p1[0], p0[1] - p1[1], p0[2] - p1[2]};
  int s1[3], s2[3], s3[3];  // P3 + P1, P2 + P3, P0 + P2 (3 colours: P2 + P1, P2 + P1, P0 + P2)
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
  auto dot = [&dir](const int c[3]) { return c[0] * dir[0] + c[1] * dir[1] + c[2] * dir[2]; };
  indices = fastIndices(r, g, b, dir, dot(s1), dot(s2), dot(s3));
  return true;
}

// Step 6's error: the squared RGB distance of the opaque texels to their palette entries.
int fastError(const float r[16], const float g[16], const float b[16], uint16_t c0, uint16_t c1, uint32_t indices,
              uint32_t transparent_bits) {
  int p[4][3];
  palette(c0, c1, p);
  int err = 0;
  for (int t = 0; t < 16; ++t) {
    if ((transparent_bits >> (2 * t)) & 3) continue;
    const int* e = p[(indices >> (2 * t)) & 3];
    const int c[3] = {int(r[t]), int(g[t]), int(b[t])};
    err += dist2(c, e);
  }
  return err;
}

// Step 6: again without inset; the result with the smaller error (the inset one on a tie).
__attribute__((always_inline)) inline void fastWithoutInset(const float r[16], const float g[16], const float b[16],
                                                            const FastBox& box, uint32_t transparent_bits,
                                                            const FastTables& tab, uint16_t& c0, uint16_t& c1,
                                                            uint32_t& indices) {
  uint16_t d0 = 0, d1 = 0;
  uint32_t d_indices = 0;
  fastEncodeBox(r, g, b, box, 0, transparent_bits, tab, d0, d1, d_indices);  // A != B: the box only grew
  if (fastError(r, g, b, d0, d1, d_indices, transparent_bits) < fastError(r, g, b, c0, c1, indices, transparent_bits)) {
    c0 = d0;
    c1 = d1;
    indices = d_indices;
  }
}

void fastTransparent(const uint8_t* p, size_t stride, const FastTables& tab, uint8_t out[8]);

// Steps 1-6 for the block at p, rows `stride` bytes apart. kCheckAlpha: an opaque block is
// expected, one with a transparent texel goes to fastTransparent (step 0), which calls back
// with the block of step 0 (transparent texels replaced) and transparent_bits (3 at their
// indices; 0 for an opaque block). Everything here is inlined into the per-block loop (the
// rare paths too: a call on any path made the compiler keep more of the block in memory).
template <bool kCheckAlpha>
__attribute__((always_inline)) inline void fastCore(const uint8_t* p, size_t stride, uint32_t transparent_bits,
                                                    const FastTables& tab, uint8_t out[8]) {
  uint32_t w[16];  // little-endian loads: r | g << 8 | b << 16 | a << 24
  for (int y = 0; y < 4; ++y) std::memcpy(w + 4 * y, p + size_t(y) * stride, 16);
  if (kCheckAlpha) {
    uint32_t all[4];
    for (int j = 0; j < 4; ++j) all[j] = (w[j] & w[4 + j]) & (w[8 + j] & w[12 + j]);
    if (!(((all[0] & all[1]) & (all[2] & all[3])) & 0x80000000u)) return fastTransparent(p, stride, tab, out);
  }
  // Step 1.
  uint32_t diff[4];
  for (int j = 0; j < 4; ++j) diff[j] = ((w[j] ^ w[0]) | (w[4 + j] ^ w[0])) | ((w[8 + j] ^ w[0]) | (w[12 + j] ^ w[0]));
  if ((((diff[0] | diff[1]) | (diff[2] | diff[3])) & 0x00ffffffu) == 0) {
    const int r = int(w[0] & 255u), g = int((w[0] >> 8) & 255u), b = int((w[0] >> 16) & 255u);
    if (!transparent_bits) fastSolid(r, g, b, tab, out);
    else {
      const uint16_t c = pack565(tab.q5[r], tab.q6[g], tab.q5[b]);
      fastWrite(c, c, transparent_bits, out);
    }
    return;
  }
  // Step 2, as 4 lanes (texel columns) folded over the rows: a form the compiler vectorises.
  float r[16], g[16], b[16];
  for (int t = 0; t < 16; ++t) {
    r[t] = float(int(w[t] & 255u));
    g[t] = float(int((w[t] >> 8) & 255u));
    b[t] = float(int((w[t] >> 16) & 255u));
  }
  float mnr[4], mng[4], mnb[4], mxr[4], mxg[4], mxb[4], sr[4], sg[4], sb[4], srg[4], srb[4], sgb[4];
  for (int j = 0; j < 4; ++j) {
    mnr[j] = minf(minf(r[j], r[4 + j]), minf(r[8 + j], r[12 + j]));
    mng[j] = minf(minf(g[j], g[4 + j]), minf(g[8 + j], g[12 + j]));
    mnb[j] = minf(minf(b[j], b[4 + j]), minf(b[8 + j], b[12 + j]));
    mxr[j] = maxf(maxf(r[j], r[4 + j]), maxf(r[8 + j], r[12 + j]));
    mxg[j] = maxf(maxf(g[j], g[4 + j]), maxf(g[8 + j], g[12 + j]));
    mxb[j] = maxf(maxf(b[j], b[4 + j]), maxf(b[8 + j], b[12 + j]));
    sr[j] = (r[j] + r[4 + j]) + (r[8 + j] + r[12 + j]);
    sg[j] = (g[j] + g[4 + j]) + (g[8 + j] + g[12 + j]);
    sb[j] = (b[j] + b[4 + j]) + (b[8 + j] + b[12 + j]);
    srg[j] = (r[j] * g[j] + r[4 + j] * g[4 + j]) + (r[8 + j] * g[8 + j] + r[12 + j] * g[12 + j]);
    srb[j] = (r[j] * b[j] + r[4 + j] * b[4 + j]) + (r[8 + j] * b[8 + j] + r[12 + j] * b[12 + j]);
    sgb[j] = (g[j] * b[j] + g[4 + j] * b[4 + j]) + (g[8 + j] * b[8 + j] + g[12 + j] * b[12 + j]);
  }
  auto min4 = [](const float v[4]) { return int(minf(minf(v[0], v[1]), minf(v[2], v[3]))); };
  auto max4 = [](const float v[4]) { return int(maxf(maxf(v[0], v[1]), maxf(v[2], v[3]))); };
  auto sum4 = [](const float v[4]) { return int((v[0] + v[1]) + (v[2] + v[3])); };
  const int mn[3] = {min4(mnr), min4(mng), min4(mnb)}, mx[3] = {max4(mxr), max4(mxg), max4(mxb)};
  const int sum[3] = {sum4(sr), sum4(sg), sum4(sb)};
  // Step 3: the diagonal.
  int range[3];
  for (int k = 0; k < 3; ++k) range[k] = mx[k] - mn[k];
  const bool neg_rg = 16 * sum4(srg) - sum[0] * sum[1] < 0, neg_rb = 16 * sum4(srb) - sum[0] * sum[2] < 0,
             neg_gb = 16 * sum4(sgb) - sum[1] * sum[2] < 0;
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
  uint16_t c0, c1;
  uint32_t indices;
  if (!fastEncodeBox(r, g, b, box, 3, transparent_bits, tab, c0, c1, indices)) {  // step 4's A == B
    if (!transparent_bits) fastSolid((sum[0] + 8) >> 4, (sum[1] + 8) >> 4, (sum[2] + 8) >> 4, tab, out);
    else fastWrite(c0, c0, transparent_bits, out);
    return;
  }
  // Step 6 (rare). With every range below 5 there was no inset: nothing would change.
  if ((indices & ~transparent_bits & 0xaaaaaaaau) == 0 && (range[0] > 4 || range[1] > 4 || range[2] > 4))
    fastWithoutInset(r, g, b, box, transparent_bits, tab, c0, c1, indices);
  fastWrite(c0, c1, indices | transparent_bits, out);
}

// Step 0 for a block with some alpha < 128 (rare: the edges of the coverage), then the rest.
__attribute__((noinline)) void fastTransparent(const uint8_t* p, size_t stride, const FastTables& tab, uint8_t out[8]) {
  uint32_t w[16];
  for (int y = 0; y < 4; ++y) std::memcpy(w + 4 * y, p + size_t(y) * stride, 16);
  int first = -1;
  for (int t = 0; t < 16 && first < 0; ++t)
    if (w[t] & 0x80000000u) first = t;
  if (first < 0) {
    fastWrite(0, 0, 0xffffffffu, out);
    return;
  }
  uint32_t transparent_bits = 0;
  for (int t = 0; t < 16; ++t)
    if (!(w[t] & 0x80000000u)) {
      transparent_bits |= 3u << (2 * t);
      w[t] = w[first];
    }
  uint8_t block[64];
  std::memcpy(block, w, 64);
  fastCore<false>(block, 16, transparent_bits, tab, out);
}

// The block whose top-left texel is at p (rows `stride` bytes apart).
inline void fastBlock(const uint8_t* p, size_t stride, const FastTables& tab, uint8_t out[8]) {
  fastCore<true>(p, stride, 0, tab, out);
}

}  // namespace

const char* bc1ModeName(Bc1Mode m) { return m == Bc1Mode::Quality ? "quality" : "fast"; }

void encodeBc1Block(const uint8_t rgba[64], Bc1Mode mode, uint8_t out[8]) {
  if (mode == Bc1Mode::Fast) {
    fastBlock(rgba, 16, fastTables(), out);
    return;
  }
  Block b;
  gather(rgba, b);
  if (b.n == 0) {  // fully transparent: 3-colour mode, every index 3
    write(0, 0, 0xffffffffu, out);
    return;
  }
  float mean[3], axis[3];
  principalAxis(b, mean, axis);
  Best best;
  bool solid = true;
  for (int t = 1; t < b.n && solid; ++t)
    solid = b.rgb[t][0] == b.rgb[0][0] && b.rgb[t][1] == b.rgb[0][1] && b.rgb[t][2] == b.rgb[0][2];
  uint16_t e0, e1;
  if (solid) {
    solidEndpoints(b.rgb[0], e0, e1);
    best.considerPair(b, e0, e1);
    refine(b, best);
  } else {
    axisEndpoints(b, mean, axis, e0, e1);
    best.considerPair(b, e0, e1);
    Fit fit4, fit3;
    clusterFit(b, axis, fit4, fit3);
    if (fit4.found) best.considerPair(b, pack565f(fit4.a), pack565f(fit4.b));
    if (fit3.found) best.considerPair(b, pack565f(fit3.a), pack565f(fit3.b));
    refine(b, best);
  }
  write(best.c0, best.c1, best.indices, out);
}

void encodeBc1(const uint8_t* rgba, int width, int height, Bc1Mode mode, uint8_t* out) {
  const int bw = width / 4, bh = height / 4;
  if (mode == Bc1Mode::Fast) {  // straight from the image rows: no copy, no per-block setup
    const FastTables& tables = fastTables();
    const size_t stride = size_t(width) * 4;
    for (int by = 0; by < bh; ++by) {
      const uint8_t* row = rgba + size_t(by) * 4 * stride;
      uint8_t* dst = out + size_t(by) * size_t(bw) * kBc1BlockBytes;
      for (int bx = 0; bx < bw; ++bx) fastBlock(row + size_t(bx) * 16, stride, tables, dst + size_t(bx) * kBc1BlockBytes);
    }
    return;
  }
  uint8_t block[64];
  for (int by = 0; by < bh; ++by)
    for (int bx = 0; bx < bw; ++bx) {
      for (int y = 0; y < 4; ++y)
        std::memcpy(block + 16 * y, rgba + (size_t(by * 4 + y) * size_t(width) + size_t(bx * 4)) * 4, 16);
      encodeBc1Block(block, mode, out + (size_t(by) * size_t(bw) + size_t(bx)) * kBc1BlockBytes);
    }
}

void decodeBc1Block(const uint8_t in[8], uint8_t rgba[64]) {
  const uint16_t c0 = uint16_t(in[0] | (in[1] << 8)), c1 = uint16_t(in[2] | (in[3] << 8));
  const uint32_t indices = uint32_t(in[4]) | uint32_t(in[5]) << 8 | uint32_t(in[6]) << 16 | uint32_t(in[7]) << 24;
  int p[4][3];
  palette(c0, c1, p);
  for (int i = 0; i < 16; ++i) {
    const int j = int((indices >> (2 * i)) & 3);
    for (int k = 0; k < 3; ++k) rgba[4 * i + k] = uint8_t(p[j][k]);
    rgba[4 * i + 3] = (c0 <= c1 && j == 3) ? 0 : 255;
  }
}

void decodeBc1(const uint8_t* blocks, int width, int height, uint8_t* rgba) {
  uint8_t block[64];
  const int bw = width / 4, bh = height / 4;
  for (int by = 0; by < bh; ++by)
    for (int bx = 0; bx < bw; ++bx) {
      decodeBc1Block(blocks + (size_t(by) * size_t(bw) + size_t(bx)) * kBc1BlockBytes, block);
      for (int y = 0; y < 4; ++y)
        std::memcpy(rgba + (size_t(by * 4 + y) * size_t(width) + size_t(bx * 4)) * 4, block + 16 * y, 16);
    }
}

}  // namespace himg
