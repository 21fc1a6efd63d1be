// jpeg_encode_test.cpp - the CUDA JPEG tile encoder (src/gpu/imagery/jpeg_encoder.h) on the
// device against himg::encodeJpegTile (libjpeg-turbo): byte-identical streams for batches of
// mixed tiles (full, partial and empty coverage), several sizes and qualities, device and host
// input; argument checks. Skips without a CUDA device (CI); scripts/device-check runs it.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpu/cuda_util.h"
#include "gpu/imagery/jpeg_encoder.h"
#include "gpu_test_util.h"
#include "imagery/imagery.h"

namespace {

// Tile i of a batch: a pattern chosen by i (ramps, noise, flat, saturated stripes, fine edges,
// smooth noise) and a coverage chosen by i / 6 (full, a disc, none, a diagonal cut).
std::vector<uint8_t> makeBatch(int size, int count, unsigned seed) {
  std::mt19937 rng(seed);
  const size_t texels = size_t(size) * size_t(size);
  std::vector<uint8_t> img(texels * 4 * size_t(count));
  for (int i = 0; i < count; ++i)
    for (int y = 0; y < size; ++y)
      for (int x = 0; x < size; ++x) {
        uint8_t* px = &img[(size_t(i) * texels + size_t(y) * size_t(size) + size_t(x)) * 4];
        for (int k = 0; k < 3; ++k) {
          int v = 0;
          switch (i % 6) {
            case 0: v = (x * (k + 1) + y * (3 - k) + i) * 255 / (4 * size); break;
            case 1: v = int(rng() % 256); break;
            case 2: v = 20 + 90 * k + i % 7; break;
            case 3: v = ((x / 8 + y / 8 + k) % 3 == 0) ? 255 : 0; break;
            case 4: v = ((x / 3 + y / 5 + k) % 2) ? 250 : 3; break;
            default: v = 128 + (x * 7 + y * 3) % 40 + int(rng() % 16) - 8; break;
          }
          px[k] = uint8_t(std::clamp(v, 0, 255));
        }
        const int dx = x - size / 2, dy = y - size / 3, r = size / 3;
        const int cov = (i / 6) % 4;
        px[3] = cov == 0   ? 255
                : cov == 1 ? (dx * dx + dy * dy < r * r ? 255 : 0)
                : cov == 2 ? 0
                           : (x + y < size / 2 ? 0 : 255);
      }
  return img;
}

void expectBatchMatches(const std::vector<uint8_t>& img, int size, int count, int quality,
                        const std::vector<std::vector<uint8_t>>& streams) {
  ASSERT_EQ(streams.size(), size_t(count));
  const size_t tileBytes = size_t(size) * size_t(size) * 4;
  int mismatches = 0;
  for (int i = 0; i < count; ++i) {
    std::vector<uint8_t> ref;
    std::string err;
    ASSERT_TRUE(himg::encodeJpegTile(img.data() + size_t(i) * tileBytes, size, quality, ref, err)) << err;
    if (ref != streams[size_t(i)] && ++mismatches <= 5)
      ADD_FAILURE() << "size " << size << " q" << quality << " tile " << i << ": " << streams[size_t(i)].size()
                    << " bytes, libjpeg " << ref.size();
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(GpuJpegEncode, BatchesByteIdenticalToLibjpeg) {
  HF_REQUIRE_CUDA_DEVICE();
  const int count = 48;
  for (int quality : {50, 75, 90, 95, 100}) {
    hfgpu::GpuJpegEncoder enc(quality);
    EXPECT_EQ(enc.quality(), quality);
    const std::vector<uint8_t> img = makeBatch(256, count, unsigned(quality));
    std::vector<std::vector<uint8_t>> streams;
    enc.encode(img.data(), count, 256, streams);
    expectBatchMatches(img, 256, count, quality, streams);
  }
}

TEST(GpuJpegEncode, SizesAndReuse) {
  HF_REQUIRE_CUDA_DEVICE();
  hfgpu::GpuJpegEncoder enc(90);
  // 48: a strip of 3 MCUs (partial transform block); 1024: 64 MCUs per interval; sizes shrink
  // and grow on one encoder (buffers reused).
  for (int size : {16, 48, 1024, 128, 256, 32}) {
    const int count = size >= 1024 ? 7 : 25;
    const std::vector<uint8_t> img = makeBatch(size, count, unsigned(size));
    std::vector<std::vector<uint8_t>> streams;
    enc.encode(img.data(), count, size, streams);
    expectBatchMatches(img, size, count, 90, streams);
  }
}

TEST(GpuJpegEncode, DeviceInputAsyncAndPackedBufferGrowth) {
  HF_REQUIRE_CUDA_DEVICE();
  // Noise at quality 100 takes more than the packed buffer's initial half byte per texel:
  // finish() grows it and packs again.
  const int count = 12, size = 256;
  std::vector<uint8_t> img(size_t(count) * size * size * 4);
  std::mt19937 rng(5);
  for (auto& v : img) v = uint8_t(rng());
  for (size_t i = 3; i < img.size(); i += 4) img[i] = 255;
  hfgpu::DeviceBuffer<uint8_t> dev(img.size());
  CUDA_CHECK(cudaMemcpy(dev.get(), img.data(), img.size(), cudaMemcpyHostToDevice));
  hfgpu::Stream stream;
  hfgpu::GpuJpegEncoder enc(100);
  std::vector<std::vector<uint8_t>> streams;
  enc.encodeAsync(dev.get(), count, size, stream);
  enc.finish(streams);
  expectBatchMatches(img, size, count, 100, streams);
  // And again on the grown buffer.
  enc.encodeAsync(dev.get(), count, size, stream);
  enc.finish(streams);
  expectBatchMatches(img, size, count, 100, streams);
  // An empty batch.
  enc.encodeAsync(dev.get(), 0, size, stream);
  enc.finish(streams);
  EXPECT_TRUE(streams.empty());
}

TEST(GpuJpegEncode, StreamsDecode) {
  HF_REQUIRE_CUDA_DEVICE();
  const int count = 24, size = 256, quality = 90;
  const std::vector<uint8_t> img = makeBatch(size, count, 3);
  hfgpu::GpuJpegEncoder enc(quality);
  std::vector<std::vector<uint8_t>> streams;
  enc.encode(img.data(), count, size, streams);
  const std::vector<uint8_t> tables = himg::makeJpegTables(quality);
  himg::JpegTileDecoder dec;
  std::string err;
  ASSERT_TRUE(dec.setTables(tables.data(), tables.size(), err)) << err;
  std::vector<uint8_t> out(size_t(size) * size * 4);
  for (int i = 0; i < count; ++i) {
    ASSERT_TRUE(dec.decode(streams[size_t(i)].data(), streams[size_t(i)].size(), size, out.data(), err))
        << i << ": " << err;
    const uint8_t* src = img.data() + size_t(i) * out.size();
    for (size_t t = 0; t < size_t(size) * size; ++t)
      ASSERT_EQ(out[4 * t + 3] == 255, src[4 * t + 3] >= 128) << "coverage of tile " << i << " texel " << t;
  }
}

TEST(GpuJpegEncode, BadArguments) {
  EXPECT_THROW(hfgpu::GpuJpegEncoder(0), std::invalid_argument);
  EXPECT_THROW(hfgpu::GpuJpegEncoder(101), std::invalid_argument);
  HF_REQUIRE_CUDA_DEVICE();
  hfgpu::GpuJpegEncoder enc(75);
  std::vector<std::vector<uint8_t>> streams;
  std::vector<uint8_t> img(24 * 24 * 4);
  EXPECT_THROW(enc.encode(img.data(), 1, 24, streams), std::invalid_argument);
  EXPECT_THROW(enc.encode(img.data(), 1, 8192, streams), std::invalid_argument);
  EXPECT_THROW(enc.finish(streams), std::logic_error);
}

}  // namespace
