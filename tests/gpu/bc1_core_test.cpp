// bc1_core_test.cpp - the CUDA BC1 encoders' per-block arithmetic (cuda/imagery/bc1_core.cuh)
// run on the CPU against the reference (src/imagery/bc1.cpp), block by block: runs everywhere
// (CI has no GPU). The quality mode is driven the way cuda/imagery/bc1.cu's warp drives it:
// every cluster split evaluated independently, the (error, split index) minimum taken, the
// refinement's 24 moves of a round evaluated independently and the (error, move) minimum taken.
// The device tests (bc1_test.cpp) then check the kernels against the same reference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#include <stb/stb_image.h>

#include "imagery/bc1_core.cuh"
#include "imagery/imagery.h"

namespace {

std::vector<uint16_t> singleColourTable() {
  std::vector<uint16_t> t(512);
  hfbc1::makeSingleColourTables(t.data());
  return t;
}

uint64_t fastCore(const uint8_t rgba[64], const std::vector<uint16_t>& table) {
  uint32_t w[16];
  std::memcpy(w, rgba, 64);
  return hfbc1::fastBlock(w, table.data());
}

// The quality kernel's tables (cuda/imagery/bc1.cu's ensureTables and coefKernel).
struct QualityTables {
  uint32_t split4[hfbc1::kSplits4], split3[hfbc1::kSplits3], pairs[hfbc1::kSplits3];
  hfbc1::Coef coef4[hfbc1::kSplits4], coef3[hfbc1::kSplits3];
  QualityTables() {
    int n4 = 0, n3 = 0;
    for (int i = 0; i <= 16; ++i)
      for (int j = i; j <= 16; ++j) {
        pairs[n3] = uint32_t(i) | uint32_t(j) << 5;
        split3[n3] = uint32_t(i) | uint32_t(j) << 5;
        if (hfbc1::splitCoef3(16, i, j, coef3[n3])) split3[n3] |= 0x80000000u;
        ++n3;
        for (int k = j; k <= 16; ++k, ++n4) {
          split4[n4] = hfbc1::splitWord(i, j, k);
          if (hfbc1::splitCoef4(16, i, j, k, coef4[n4])) split4[n4] |= 0x80000000u;
        }
      }
  }
};

// The best (error, candidate) of a list evaluated in candidate order: the warp's minimum.
struct ArgMin {
  float err = hfbc1::kNoFit;
  int index = -1;
  void offer(float e, int i) {
    if (e < err) {
      err = e;
      index = i;
    }
  }
};

// The quality kernel's decomposition, one "lane" after another, with the same core functions
// on the same operands.
uint64_t qualityCore(const uint8_t rgba[64], const QualityTables& tab) {
  hfbc1::QTexel tex[16];
  int col[16][3];
  int n = 0, isum[3] = {0, 0, 0}, sumsq = 0;
  for (int t = 0; t < 16; ++t) {
    const int r = rgba[4 * t], g = rgba[4 * t + 1], b = rgba[4 * t + 2];
    const bool opaque = rgba[4 * t + 3] >= 128;
    tex[t] = hfbc1::QTexel{r, g, b, opaque ? -1 : 0};
    if (!opaque) continue;
    col[n][0] = r, col[n][1] = g, col[n][2] = b;
    isum[0] += r, isum[1] += g, isum[2] += b;
    sumsq += r * r + g * g + b * b;
    ++n;
  }
  if (n == 0) return hfbc1::block64(0, 0, 0xffffffffu);
  const bool transparent = n < 16;
  const float inv = 1.0f / float(n);
  const float mean[3] = {float(isum[0]) * inv, float(isum[1]) * inv, float(isum[2]) * inv};
  float cov[6];
  for (int c = 0; c < 6; ++c) {
    const int ca = hfbc1::covFirst(c), cb = hfbc1::covSecond(c);
    float acc = 0.0f;
    for (int t = 0; t < n; ++t) acc += (float(col[t][ca]) - mean[ca]) * (float(col[t][cb]) - mean[cb]);
    cov[c] = acc;
  }
  float axis[3];
  hfbc1::axisFromCov(cov, axis);
  bool solid = true;
  for (int t = 1; t < n; ++t) solid = solid && col[t][0] == col[0][0] && col[t][1] == col[0][1] && col[t][2] == col[0][2];
  uint16_t pa[3], pc[3];
  int pairs = 1;
  if (solid) {
    const float f[3] = {float(col[0][0]), float(col[0][1]), float(col[0][2])};
    pa[0] = pc[0] = hfbc1::pack565f(f);
  } else {
    float lo = 0.0f, hi = 0.0f;
    for (int t = 0; t < n; ++t) {
      const float v = hfbc1::axisOffset(col[t], mean, axis);
      if (t == 0 || v < lo) lo = v;
      if (t == 0 || v > hi) hi = v;
    }
    hfbc1::axisEndpointsFrom(lo, hi, mean, axis, pa[0], pc[0]);
    float proj[16], pts[16][3];
    for (int t = 0; t < n; ++t) proj[t] = hfbc1::clusterProj(col[t], axis);
    for (int t = 0; t < n; ++t) {
      int rank = 0;
      for (int u = 0; u < n; ++u) rank += (proj[u] < proj[t] || (proj[u] == proj[t] && u < t)) ? 1 : 0;
      for (int q = 0; q < 3; ++q) pts[rank][q] = float(col[t][q]);
    }
    float pre[17][3] = {{0.0f, 0.0f, 0.0f}};
    for (int i = 0; i < n; ++i) {  // "lane" i's own chain of additions
      float acc[3] = {0.0f, 0.0f, 0.0f};
      for (int m = 0; m <= i; ++m)
        for (int q = 0; q < 3; ++q) acc[q] += pts[m][q];
      for (int q = 0; q < 3; ++q) pre[i + 1][q] = acc[q];
    }
    float xx = 0.0f;
    for (int i = 0; i < n; ++i) xx += pts[i][0] * pts[i][0] + pts[i][1] * pts[i][1] + pts[i][2] * pts[i][2];
    float U[hfbc1::kSplits3][3], Z[hfbc1::kSplits3][3], T[hfbc1::kSplits3][3], W[hfbc1::kSplits3][3];
    for (int p = 0; p < hfbc1::kSplits3; ++p) {
      const int a = int(tab.pairs[p] & 31u), b = int(tab.pairs[p] >> 5);
      if (b > n) continue;
      hfbc1::pairTermsIJ(pre[a], pre[b], U[p], Z[p]);
      hfbc1::pairTermsJK(pre[a], pre[b], pre[n], T[p], W[p]);
    }
    auto coef4 = [&](int s, hfbc1::Coef& cf) {
      const uint32_t sw = tab.split4[s];
      if (n == 16) {
        cf = tab.coef4[s];
        return (sw >> 31) != 0;
      }
      return hfbc1::splitCoef4(n, int(sw & 31u), int((sw >> 5) & 31u), int((sw >> 10) & 31u), cf);
    };
    auto eval4 = [&](int s, const hfbc1::Coef& cf, float a[3], float c[3]) {
      const uint32_t sw = tab.split4[s];
      const int pij = int((sw >> 15) & 255u), pjk = int(sw >> 23) & 255;
      float X[3], Y[3];
      for (int q = 0; q < 3; ++q) {
        X[q] = U[pij][q] + T[pjk][q];
        Y[q] = W[pjk][q] + Z[pij][q];
      }
      return hfbc1::solveSplit(cf, X, Y, xx, a, c);
    };
    ArgMin best4;
    for (int s = 0; s < hfbc1::kSplits4; ++s) {
      hfbc1::Coef cf;
      if (int((tab.split4[s] >> 10) & 31u) > n || !coef4(s, cf)) continue;
      float a[3], c[3];
      best4.offer(eval4(s, cf, a, c), s);
    }
    if (best4.index >= 0) {  // the winner again, coefficients computed as for n < 16
      const uint32_t sw = tab.split4[best4.index];
      hfbc1::Coef cf;
      hfbc1::splitCoef4(n, int(sw & 31u), int((sw >> 5) & 31u), int((sw >> 10) & 31u), cf);
      float a[3], c[3];
      eval4(best4.index, cf, a, c);
      pa[pairs] = hfbc1::pack565f(a);
      pc[pairs] = hfbc1::pack565f(c);
      ++pairs;
    }
    auto eval3 = [&](int s, const hfbc1::Coef& cf, float a[3], float c[3]) {
      const int i = int(tab.split3[s] & 31u), j = int((tab.split3[s] >> 5) & 31u);
      float X[3], Y[3];
      hfbc1::cluster3XY(pre[i], pre[j], pre[n], X, Y);
      return hfbc1::solveSplit(cf, X, Y, xx, a, c);
    };
    ArgMin best3;
    for (int s = 0; s < hfbc1::kSplits3; ++s) {
      const uint32_t sw = tab.split3[s];
      const int i = int(sw & 31u), j = int((sw >> 5) & 31u);
      if (j > n) continue;
      hfbc1::Coef cf;
      if (n == 16) {
        if (!(sw >> 31)) continue;
        cf = tab.coef3[s];
      } else if (!hfbc1::splitCoef3(n, i, j, cf)) {
        continue;
      }
      float a[3], c[3];
      best3.offer(eval3(s, cf, a, c), s);
    }
    if (best3.index >= 0) {
      const uint32_t sw = tab.split3[best3.index];
      hfbc1::Coef cf;
      hfbc1::splitCoef3(n, int(sw & 31u), int((sw >> 5) & 31u), cf);
      float a[3], c[3];
      eval3(best3.index, cf, a, c);
      pa[pairs] = hfbc1::pack565f(a);
      pc[pairs] = hfbc1::pack565f(c);
      ++pairs;
    }
  }
  int bestErr = 1 << 30;
  uint16_t b0 = 0, b1 = 0;
  uint32_t bi = 0;
  for (int p = 0; p < pairs; ++p) {
    uint16_t o0[2], o1[2];
    const int count = hfbc1::pairCandidates(transparent, pa[p], pc[p], o0, o1);
    for (int q = 0; q < count; ++q) {
      uint32_t ind;
      const int e = hfbc1::assignQ(tex, sumsq, o0[q], o1[q], ind);
      if (e < bestErr) {
        bestErr = e;
        b0 = o0[q];
        b1 = o1[q];
        bi = ind;
      }
    }
  }
  for (int round = 0; round < 8; ++round) {
    int roundErr = 0x7fffffff;
    uint16_t r0 = 0, r1 = 0;
    uint32_t ri = 0;
    for (int lane = 0; lane < 24; ++lane) {
      uint16_t a, c;
      if (!hfbc1::refineMove(b0, b1, lane >> 1, a, c)) continue;
      uint16_t o0[2], o1[2];
      const int count = hfbc1::pairCandidates(transparent, a, c, o0, o1);
      if ((lane & 1) >= count) continue;
      uint32_t ind;
      const int e = hfbc1::assignQ(tex, sumsq, o0[lane & 1], o1[lane & 1], ind);
      if (e < roundErr) {
        roundErr = e;
        r0 = o0[lane & 1];
        r1 = o1[lane & 1];
        ri = ind;
      }
    }
    if (!(roundErr < bestErr)) break;
    bestErr = roundErr;
    b0 = r0;
    b1 = r1;
    bi = ri;
  }
  return hfbc1::block64(b0, b1, bi);
}

uint64_t reference(const uint8_t rgba[64], himg::Bc1Mode mode) {
  uint8_t out[8];
  himg::encodeBc1Block(rgba, mode, out);
  uint64_t v;
  std::memcpy(&v, out, 8);
  return v;
}

// Blocks of every kind the encoders branch on.
std::vector<std::vector<uint8_t>> testBlocks(size_t random_count) {
  std::mt19937 rng(12345);
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<std::vector<uint8_t>> blocks;
  auto add = [&](auto&& texel) {
    std::vector<uint8_t> b(64);
    for (int t = 0; t < 16; ++t) texel(t, &b[size_t(4 * t)]);
    blocks.push_back(b);
  };
  for (size_t n = 0; n < random_count; ++n) {
    const int kind = int(n % 8);
    const int base[3] = {byte(rng), byte(rng), byte(rng)}, spread = 1 + byte(rng) % 64;
    const int other[3] = {byte(rng), byte(rng), byte(rng)};
    const uint32_t alpha_mask = uint32_t(rng());
    add([&](int t, uint8_t* p) {
      for (int k = 0; k < 3; ++k) {
        int v = base[k];
        if (kind == 0) v = byte(rng);                                             // noise
        else if (kind == 1) v = base[k] + (t % 4) * spread / 4 - (t / 4) * spread / 8;  // gradient
        else if (kind == 2) v = (t * 7 + k) % 3 == 0 ? other[k] : base[k];        // two colours
        else if (kind == 3) v = base[k];                                          // solid
        else if (kind == 4) v = base[k] + (byte(rng) % 3) - 1;                    // near solid
        else if (kind == 5) v = base[k] + (byte(rng) % spread) - spread / 2;      // texture
        else if (kind == 6) v = k == 1 ? base[1] + t * 8 : base[k] - t * 8;       // anti-correlated
        else v = byte(rng) < 128 ? base[k] : other[k];                            // random two
        p[k] = uint8_t(v < 0 ? 0 : v > 255 ? 255 : v);
      }
      // Transparency in a quarter of the blocks, every pattern; alpha values around 128.
      const bool transparent = (n % 4 == 3) && ((alpha_mask >> t) & 1u);
      p[3] = uint8_t(transparent ? (n % 3 == 0 ? 0 : 127) : (n % 5 == 0 ? 128 : 255));
    });
  }
  // Fully transparent, one texel opaque, every solid grey level.
  add([](int, uint8_t* p) { p[0] = 10, p[1] = 20, p[2] = 30, p[3] = 0; });
  add([](int t, uint8_t* p) { p[0] = 200, p[1] = 100, p[2] = 50, p[3] = t == 5 ? 255 : 0; });
  for (int v = 0; v < 256; ++v) add([v](int, uint8_t* p) { p[0] = p[1] = p[2] = uint8_t(v), p[3] = 255; });
  return blocks;
}

TEST(Bc1Core, FastEqualsCpuReference) {
  const auto table = singleColourTable();
  size_t mismatches = 0;
  const auto blocks = testBlocks(400000);
  for (const auto& b : blocks)
    if (fastCore(b.data(), table) != reference(b.data(), himg::Bc1Mode::Fast)) ++mismatches;
  EXPECT_EQ(mismatches, 0u) << "of " << blocks.size() << " blocks";
}

TEST(Bc1Core, QualityEqualsCpuReference) {
  const auto tab = std::make_unique<QualityTables>();
  size_t mismatches = 0;
  const auto blocks = testBlocks(30000);
  for (const auto& b : blocks)
    if (qualityCore(b.data(), *tab) != reference(b.data(), himg::Bc1Mode::Quality)) ++mismatches;
  EXPECT_EQ(mismatches, 0u) << "of " << blocks.size() << " blocks";
}

// Every block of the shared Puget Sound texture (real imagery), both modes.
TEST(Bc1Core, RealImageryEqualsCpuReference) {
  const std::string path = std::string(HF_SHARED_DEM_DIR) + "/../imagery/ps_texture_1k.png";
  int w = 0, h = 0, n = 0;
  stbi_uc* px = stbi_load(path.c_str(), &w, &h, &n, 4);
  if (!px) GTEST_SKIP() << path << " is not readable here";
  const auto table = singleColourTable();
  const auto tab = std::make_unique<QualityTables>();
  size_t fast_bad = 0, quality_bad = 0, count = 0;
  uint8_t block[64];
  for (int by = 0; by + 4 <= h; by += 4)
    for (int bx = 0; bx + 4 <= w; bx += 4, ++count) {
      for (int y = 0; y < 4; ++y) std::memcpy(block + 16 * y, px + (size_t(by + y) * size_t(w) + size_t(bx)) * 4, 16);
      fast_bad += fastCore(block, table) != reference(block, himg::Bc1Mode::Fast);
      // The quality mode on every 4th block (the CPU reference is slow).
      if ((bx / 4 + by / 4) % 4 == 0) quality_bad += qualityCore(block, *tab) != reference(block, himg::Bc1Mode::Quality);
    }
  stbi_image_free(px);
  EXPECT_EQ(fast_bad, 0u) << "of " << count << " blocks";
  EXPECT_EQ(quality_bad, 0u) << "of about " << count / 4 << " blocks";
}

}  // namespace
