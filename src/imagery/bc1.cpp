// bc1.cpp - BC1 (DXT1) encoders: the fast one-pass mode and the cluster-fit quality mode, and
// the reference decoder. The CUDA encoders of src/gpu reproduce these bit for bit, so:
// - arithmetic is plain float (the library is built with -ffp-contract=off: no fused
//   multiply-add), in the order written; integer rounding is explicit;
// - ties are broken by a fixed order: the lower palette index wins a tie in index selection,
//   the earlier candidate wins a tie in error (candidates are visited in the order written);
// - the principal axis comes from a fixed number of power iterations from a fixed start.
// Errors are measured as squared RGB distance to the palette the reference decoder produces
// (the quantity RGB PSNR is computed from), in integers.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "imagery/imagery.h"

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

// Fast mode: extremes of the projections on the principal axis, inset by 1/16 of the range
// (the palette's outer entries then sit inside the colour spread, which lowers the error of
// the texels between them), rounded to 565; one pass.
void fastEndpoints(const Block& b, const float mean[3], const float axis[3], uint16_t& e0, uint16_t& e1) {
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

}  // namespace

const char* bc1ModeName(Bc1Mode m) { return m == Bc1Mode::Quality ? "quality" : "fast"; }

void encodeBc1Block(const uint8_t rgba[64], Bc1Mode mode, uint8_t out[8]) {
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
    if (mode == Bc1Mode::Quality) refine(b, best);
  } else {
    fastEndpoints(b, mean, axis, e0, e1);
    if (mode == Bc1Mode::Fast) {
      // One pass: the pair in the mode the block needs (4 colours unless transparent).
      if (b.transparent || e0 == e1) best.consider(b, std::min(e0, e1), std::max(e0, e1));
      else best.consider(b, std::max(e0, e1), std::min(e0, e1));
    } else {
      best.considerPair(b, e0, e1);
      Fit fit4, fit3;
      clusterFit(b, axis, fit4, fit3);
      if (fit4.found) best.considerPair(b, pack565f(fit4.a), pack565f(fit4.b));
      if (fit3.found) best.considerPair(b, pack565f(fit3.a), pack565f(fit3.b));
      refine(b, best);
    }
  }
  write(best.c0, best.c1, best.indices, out);
}

void encodeBc1(const uint8_t* rgba, int width, int height, Bc1Mode mode, uint8_t* out) {
  uint8_t block[64];
  const int bw = width / 4, bh = height / 4;
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
