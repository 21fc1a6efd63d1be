// bc1_test.cpp - the CUDA BC1 encoders and tile mips (src/gpu/imagery/bc1_encoder.h) on the
// device against the CPU reference (src/imagery): byte-identical blocks in both modes, mip
// levels and whole tile chains. Skips without a CUDA device (CI); scripts/device-check runs it.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "gpu/cuda_util.h"
#include "gpu/imagery/bc1_encoder.h"
#include "gpu_test_util.h"
#include "imagery/imagery.h"

namespace {

// An image of w x h texels mixing every kind of block: smooth ramps, noise, solid areas, sharp
// edges, and a ring of partial coverage (alpha 0 / 127 / 128 / 255).
std::vector<uint8_t> testImage(int w, int h, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> img(size_t(w) * size_t(h) * 4);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      uint8_t* p = &img[(size_t(y) * size_t(w) + size_t(x)) * 4];
      const int region = (x / 32 + 3 * (y / 32)) % 5;
      for (int k = 0; k < 3; ++k) {
        int v = 0;
        if (region == 0) v = (x * (k + 1) + y * (3 - k)) % 256;
        else if (region == 1) v = int(rng() % 256);
        else if (region == 2) v = 40 + 60 * k;
        else if (region == 3) v = ((x / 3 + y / 5) % 2) ? 220 - 30 * k : 20 + 40 * k;
        else v = 128 + int(rng() % 9) - 4;
        p[k] = uint8_t(v);
      }
      const int d = (x - w / 2) * (x - w / 2) + (y - h / 2) * (y - h / 2);
      const int r = std::min(w, h) / 3;
      p[3] = d < r * r ? 255 : d < (r + 6) * (r + 6) ? uint8_t(rng() % 4 == 0 ? 0 : rng() % 2 ? 127 : 128) : 0;
    }
  return img;
}

std::vector<uint8_t> gpuEncode(const std::vector<uint8_t>& img, int w, int h, himg::Bc1Mode mode) {
  hfgpu::DeviceBuffer<uint8_t> d(img.size()), blocks(img.size() / 8);
  CUDA_CHECK(cudaMemcpy(d.get(), img.data(), img.size(), cudaMemcpyHostToDevice));
  hfgpu::encodeBc1Async(d.get(), w, h, mode, blocks.get(), nullptr);
  std::vector<uint8_t> out(img.size() / 8);
  CUDA_CHECK(cudaMemcpy(out.data(), blocks.get(), out.size(), cudaMemcpyDeviceToHost));
  return out;
}

size_t differingBlocks(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  size_t n = 0;
  for (size_t i = 0; i + 8 <= a.size() && i + 8 <= b.size(); i += 8) n += std::memcmp(&a[i], &b[i], 8) != 0;
  return n + (a.size() != b.size());
}

TEST(GpuBc1, FastEqualsCpu) {
  HF_REQUIRE_CUDA_DEVICE();
  const int w = 1024, h = 1028;
  const auto img = testImage(w, h, 1);
  std::vector<uint8_t> ref(img.size() / 8);
  himg::encodeBc1(img.data(), w, h, himg::Bc1Mode::Fast, ref.data());
  EXPECT_EQ(differingBlocks(gpuEncode(img, w, h, himg::Bc1Mode::Fast), ref), 0u);
}

TEST(GpuBc1, QualityEqualsCpu) {
  HF_REQUIRE_CUDA_DEVICE();
  const int w = 1024, h = 1028;  // about 1 M texels (the CPU reference takes a few seconds)
  const auto img = testImage(w, h, 2);
  std::vector<uint8_t> ref(img.size() / 8);
  himg::encodeBc1(img.data(), w, h, himg::Bc1Mode::Quality, ref.data());
  EXPECT_EQ(differingBlocks(gpuEncode(img, w, h, himg::Bc1Mode::Quality), ref), 0u);
}

TEST(GpuBc1, TileChainsEqualCpuMipsAndBc1) {
  HF_REQUIRE_CUDA_DEVICE();
  const int size = himg::kTileSize, levels = himg::kTileMipLevels;
  const size_t count = 6, tileBytes = size_t(size) * size * 4;
  std::vector<uint8_t> tiles;
  for (size_t t = 0; t < count; ++t) {
    const auto img = testImage(size, size, unsigned(10 + t));
    tiles.insert(tiles.end(), img.begin(), img.end());
  }
  const size_t chain = hfgpu::bc1ChainBytes(size, levels);
  ASSERT_EQ(chain, size_t(43648));
  hfgpu::DeviceBuffer<uint8_t> d(tiles.size()), scratch(hfgpu::mipScratchBytes(size, levels, count)),
      chains(chain * count);
  CUDA_CHECK(cudaMemcpy(d.get(), tiles.data(), tiles.size(), cudaMemcpyHostToDevice));
  for (himg::Bc1Mode mode : {himg::Bc1Mode::Fast, himg::Bc1Mode::Quality}) {
    hfgpu::encodeTileChainsAsync(d.get(), size, levels, count, mode, scratch.get(), chains.get(), nullptr);
    std::vector<uint8_t> got(chain * count);
    CUDA_CHECK(cudaMemcpy(got.data(), chains.get(), got.size(), cudaMemcpyDeviceToHost));
    for (size_t t = 0; t < count; ++t) {
      std::vector<std::vector<uint8_t>> mips;
      himg::buildMipChain(tiles.data() + t * tileBytes, size, levels, mips);
      for (int l = 0; l < levels; ++l) {
        const int s = size >> l;
        std::vector<uint8_t> ref(size_t(s) * s / 2);
        himg::encodeBc1(mips[size_t(l)].data(), s, s, mode, ref.data());
        const uint8_t* g = got.data() + t * chain + hfgpu::bc1ChainLevelOffset(size, l);
        EXPECT_EQ(differingBlocks(std::vector<uint8_t>(g, g + ref.size()), ref), 0u)
            << "tile " << t << " level " << l << " mode " << himg::bc1ModeName(mode);
      }
    }
  }
}

TEST(GpuBc1, ReduceMipEqualsCpu) {
  HF_REQUIRE_CUDA_DEVICE();
  const int size = 64;
  const auto img = testImage(size, size * 3, 7);  // three tiles
  hfgpu::DeviceBuffer<uint8_t> d(img.size()), half(img.size() / 4);
  CUDA_CHECK(cudaMemcpy(d.get(), img.data(), img.size(), cudaMemcpyHostToDevice));
  hfgpu::reduceMipAsync(d.get(), size, 3, half.get(), nullptr);
  std::vector<uint8_t> got(img.size() / 4);
  CUDA_CHECK(cudaMemcpy(got.data(), half.get(), got.size(), cudaMemcpyDeviceToHost));
  for (int t = 0; t < 3; ++t) {
    std::vector<std::vector<uint8_t>> mips;
    himg::buildMipChain(img.data() + size_t(t) * size * size * 4, size, 2, mips);
    EXPECT_EQ(0, std::memcmp(got.data() + size_t(t) * size * size, mips[1].data(), mips[1].size())) << "tile " << t;
  }
}

TEST(GpuBc1, BadSizesThrow) {
  HF_REQUIRE_CUDA_DEVICE();
  EXPECT_THROW(hfgpu::encodeBc1Async(nullptr, 6, 4, himg::Bc1Mode::Fast, nullptr, nullptr), std::invalid_argument);
  EXPECT_THROW(hfgpu::encodeBc1Async(nullptr, 0, 4, himg::Bc1Mode::Fast, nullptr, nullptr), std::invalid_argument);
  EXPECT_THROW(hfgpu::reduceMipAsync(nullptr, 3, 1, nullptr, nullptr), std::invalid_argument);
  EXPECT_THROW(hfgpu::encodeTileChainsAsync(nullptr, 256, 8, 1, himg::Bc1Mode::Fast, nullptr, nullptr, nullptr),
               std::invalid_argument);
}

}  // namespace
