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

// The quality kernel's decomposition, one "lane" after another.
uint64_t qualityCore(const uint8_t rgba[64]) {
  uint32_t w[16];
  std::memcpy(w, rgba, 64);
  hfbc1::QBlock blk;
  hfbc1::gather(w, blk);
  if (blk.n == 0) return hfbc1::block64(0, 0, 0xffffffffu);
  float mean[3], axis[3];
  hfbc1::principalAxis(blk, mean, axis);
  bool solid = true;
  for (int t = 1; t < blk.n; ++t)
    solid = solid && blk.rgb[t][0] == blk.rgb[0][0] && blk.rgb[t][1] == blk.rgb[0][1] && blk.rgb[t][2] == blk.rgb[0][2];
  uint16_t pa[3], pc[3];
  int pairs = 0;
  if (solid) {
    const float f[3] = {float(blk.rgb[0][0]), float(blk.rgb[0][1]), float(blk.rgb[0][2])};
    pa[0] = pc[0] = hfbc1::pack565f(f);
    pairs = 1;
  } else {
    hfbc1::axisEndpoints(blk, mean, axis, pa[0], pc[0]);
    pairs = 1;
    hfbc1::ClusterSetup setup;
    hfbc1::clusterSetup(blk, axis, setup);
    float best = INFINITY, ba[3] = {0, 0, 0}, bc[3] = {0, 0, 0};
    for (int i = 0; i <= 16; ++i)  // the split table's order; the minimum keeps the first
      for (int j = i; j <= 16; ++j)
        for (int k = j; k <= 16; ++k) {
          float err, a[3], c[3];
          if (k > blk.n || !hfbc1::cluster4(setup, i, j, k, err, a, c)) continue;
          if (err < best) {
            best = err;
            std::memcpy(ba, a, sizeof a);
            std::memcpy(bc, c, sizeof c);
          }
        }
    if (best < 3.4e38f) {
      pa[pairs] = hfbc1::pack565f(ba);
      pc[pairs] = hfbc1::pack565f(bc);
      ++pairs;
    }
    best = INFINITY;
    for (int i = 0; i <= 16; ++i)
      for (int j = i; j <= 16; ++j) {
        float err, a[3], c[3];
        if (j > blk.n || !hfbc1::cluster3(setup, i, j, err, a, c)) continue;
        if (err < best) {
          best = err;
          std::memcpy(ba, a, sizeof a);
          std::memcpy(bc, c, sizeof c);
        }
      }
    if (best < 3.4e38f) {
      pa[pairs] = hfbc1::pack565f(ba);
      pc[pairs] = hfbc1::pack565f(bc);
      ++pairs;
    }
  }
  int bestErr = 1 << 30;
  uint16_t b0 = 0, b1 = 0;
  uint32_t bi = 0;
  for (int p = 0; p < pairs; ++p) {
    uint16_t o0[2], o1[2];
    const int count = hfbc1::pairCandidates(blk, pa[p], pc[p], o0, o1);
    for (int q = 0; q < count; ++q) {
      uint32_t ind;
      const int e = hfbc1::assign(blk, o0[q], o1[q], ind);
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
      const int count = hfbc1::pairCandidates(blk, a, c, o0, o1);
      if ((lane & 1) >= count) continue;
      uint32_t ind;
      const int e = hfbc1::assign(blk, o0[lane & 1], o1[lane & 1], ind);
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
  size_t mismatches = 0;
  const auto blocks = testBlocks(30000);
  for (const auto& b : blocks)
    if (qualityCore(b.data()) != reference(b.data(), himg::Bc1Mode::Quality)) ++mismatches;
  EXPECT_EQ(mismatches, 0u) << "of " << blocks.size() << " blocks";
}

// Every block of the shared Puget Sound texture (real imagery), both modes.
TEST(Bc1Core, RealImageryEqualsCpuReference) {
  const std::string path = std::string(HF_SHARED_DEM_DIR) + "/../imagery/ps_texture_1k.png";
  int w = 0, h = 0, n = 0;
  stbi_uc* px = stbi_load(path.c_str(), &w, &h, &n, 4);
  if (!px) GTEST_SKIP() << path << " is not readable here";
  const auto table = singleColourTable();
  size_t fast_bad = 0, quality_bad = 0, count = 0;
  uint8_t block[64];
  for (int by = 0; by + 4 <= h; by += 4)
    for (int bx = 0; bx + 4 <= w; bx += 4, ++count) {
      for (int y = 0; y < 4; ++y) std::memcpy(block + 16 * y, px + (size_t(by + y) * size_t(w) + size_t(bx)) * 4, 16);
      fast_bad += fastCore(block, table) != reference(block, himg::Bc1Mode::Fast);
      // The quality mode on every 4th block (the CPU reference is slow).
      if ((bx / 4 + by / 4) % 4 == 0) quality_bad += qualityCore(block) != reference(block, himg::Bc1Mode::Quality);
    }
  stbi_image_free(px);
  EXPECT_EQ(fast_bad, 0u) << "of " << count << " blocks";
  EXPECT_EQ(quality_bad, 0u) << "of about " << count / 4 << " blocks";
}

}  // namespace
