// jpeg_decode_test.cpp - hfgpu::GpuJpegDecoder (src/gpu/imagery/jpeg_decoder.h) on the device
// against himg::JpegTileDecoder (libjpeg-turbo): batches of synthetic and real tiles decode bit
// for bit; corrupt tiles mixed into a batch are flagged (exactly when the CPU model of the kernels
// in jpeg_decode_core_test.cpp flags them, and always when libjpeg rejects them) while the
// others still decode exactly. Skips without a CUDA device.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "gpu/cuda_util.h"
#include "gpu/imagery/jpeg_decoder.h"
#include "gpu_test_util.h"
#include "imagery/imagery.h"
#include "imagery/jpeg_decode_core.cuh"

// Defined in jpeg_decode_core_test.cpp (the same executable).
namespace jdectest {
std::vector<uint8_t> syntheticRgba(int size, int p, uint32_t seed, bool coverage);
std::vector<uint8_t> encodeTile(const std::vector<uint8_t>& rgba, int size, int quality);
std::vector<std::vector<uint8_t>> realRgbaTiles(int size, size_t max_tiles);
struct CpuResult {
  std::string host_error;
  uint32_t flags = 0;
  bool ok() const { return host_error.empty() && flags == 0; }
};
CpuResult cpuDecode(const hfjdec::Tables& t, const uint8_t* tile, size_t n, int size, uint8_t* rgba,
                    bool* out_of_range);
}  // namespace jdectest

namespace {

using namespace jdectest;

struct Batch {
  std::vector<std::vector<uint8_t>> tiles;
  std::vector<std::string> what;
};

// Decodes `b` on the device (size x size tiles, tables of `quality`); checks every tile against
// libjpeg and the CPU model of the kernels. Returns the number of tiles decoded.
size_t checkBatch(hfgpu::GpuJpegDecoder& gpu, const Batch& b, int size, int quality, hfgpu::Stream& stream) {
  const std::vector<uint8_t> tb = himg::makeJpegTables(quality);
  std::string error;
  EXPECT_TRUE(gpu.setTables(tb.data(), tb.size(), error)) << error;
  himg::JpegTileDecoder ref;
  EXPECT_TRUE(ref.setTables(tb.data(), tb.size(), error)) << error;
  hfjdec::Tables t;
  EXPECT_TRUE(hfjdec::parseTables(tb.data(), tb.size(), t, error)) << error;
  const size_t n = b.tiles.size(), tile_bytes = size_t(size) * size_t(size) * 4;
  std::vector<hfgpu::JpegTileInput> in(n);
  for (size_t i = 0; i < n; ++i) in[i] = {b.tiles[i].data(), b.tiles[i].size()};
  hfgpu::DeviceBuffer<uint8_t> out(n * tile_bytes);
  const std::vector<std::string> errs = gpu.decode(in.data(), n, size, out.get(), stream);
  EXPECT_EQ(errs.size(), n);
  std::vector<uint8_t> host(n * tile_bytes);
  CUDA_CHECK(cudaMemcpy(host.data(), out.get(), host.size(), cudaMemcpyDeviceToHost));
  size_t decoded = 0;
  std::vector<uint8_t> want(tile_bytes), model(tile_bytes);
  for (size_t i = 0; i < n; ++i) {
    const bool ref_ok = ref.decode(b.tiles[i].data(), b.tiles[i].size(), size, want.data(), error);
    bool extreme = false;
    const CpuResult m = cpuDecode(t, b.tiles[i].data(), b.tiles[i].size(), size, model.data(), &extreme);
    const bool gpu_ok = errs[i].empty();
    EXPECT_EQ(gpu_ok, m.ok()) << b.what[i] << ": GPU '" << errs[i] << "', CPU model '" << m.host_error << "' flags "
                              << m.flags;
    if (!ref_ok) {
      EXPECT_FALSE(gpu_ok) << b.what[i] << ": libjpeg rejects it (" << error << ")";
    }
    if (!gpu_ok) continue;
    ++decoded;
    const uint8_t* got = host.data() + i * tile_bytes;
    // The kernels equal their CPU model always; libjpeg wherever it is defined (outOfRangeBlock).
    EXPECT_TRUE(std::equal(model.begin(), model.end(), host.data() + i * tile_bytes)) << b.what[i];
    if (ref_ok && !extreme) {
      size_t diff = 0;
      for (size_t k = 0; k < tile_bytes; ++k) diff += got[k] != want[k];
      EXPECT_EQ(diff, 0u) << b.what[i] << ": channels differing from libjpeg";
    }
  }
  return decoded;
}

TEST(JpegDecodeDevice, SyntheticBatchesBitExact) {
  HF_REQUIRE_CUDA_DEVICE();
  hfgpu::GpuJpegDecoder gpu;
  hfgpu::Stream stream;
  for (int quality : {50, 90, 100}) {
    for (int size : {256, 48, 272}) {
      Batch b;
      for (int i = 0; i < (size == 256 ? 140 : 20); ++i) {
        b.tiles.push_back(encodeTile(syntheticRgba(size, i % 7, uint32_t(i), i % 3 == 0), size, quality));
        b.what.push_back("q" + std::to_string(quality) + " size " + std::to_string(size) + " tile " + std::to_string(i));
      }
      EXPECT_EQ(checkBatch(gpu, b, size, quality, stream), b.tiles.size());
    }
  }
}

TEST(JpegDecodeDevice, RealImageryBitExact) {
  HF_REQUIRE_CUDA_DEVICE();
  const std::vector<std::vector<uint8_t>> rgba = realRgbaTiles(256, 12);
  if (rgba.empty()) GTEST_SKIP() << "shared imagery not found";
  hfgpu::GpuJpegDecoder gpu;
  hfgpu::Stream stream;
  for (int quality : {50, 90, 100}) {
    Batch b;
    for (size_t i = 0; i < rgba.size(); ++i) {
      std::vector<uint8_t> img = rgba[i];
      if (i % 2)
        for (int y = 0; y < 256; ++y)
          for (int x = 0; x < 256; ++x)
            if ((x - 128) * (x - 128) + (y - 100) * (y - 100) > 90 * 90) img[(size_t(y) * 256 + size_t(x)) * 4 + 3] = 0;
      b.tiles.push_back(encodeTile(img, 256, quality));
      b.what.push_back("real tile " + std::to_string(i) + " q" + std::to_string(quality));
    }
    EXPECT_EQ(checkBatch(gpu, b, 256, quality, stream), b.tiles.size());
  }
}

TEST(JpegDecodeDevice, CorruptTilesInABatchAreFlagged) {
  HF_REQUIRE_CUDA_DEVICE();
  const int size = 256, quality = 90;
  std::mt19937 rng(77);
  Batch b;
  size_t corrupt = 0;
  for (int i = 0; i < 400; ++i) {
    std::vector<uint8_t> tile = encodeTile(syntheticRgba(size, i % 7, uint32_t(1000 + i), i % 4 == 0), size, quality);
    std::string what = "tile " + std::to_string(i);
    if (i % 3 == 1) {
      ++corrupt;
      const size_t at = 300 + rng() % (tile.size() - 302);
      switch (i % 5) {
        case 0: tile.resize(at); what += " truncated"; break;
        case 1: tile[at] ^= uint8_t(1u << (rng() % 8)); what += " bit flip"; break;
        case 2:
          for (size_t k = at; k < tile.size() - 2 && k < at + 64; ++k) tile[k] = uint8_t(rng());
          what += " garbage";
          break;
        case 3: {  // an RST removed
          for (size_t k = at; k + 1 < tile.size() - 2; ++k)
            if (tile[k] == 0xFF && tile[k + 1] >= 0xD0 && tile[k + 1] <= 0xD7) {
              tile.erase(tile.begin() + long(k), tile.begin() + long(k) + 2);
              break;
            }
          what += " RST removed";
          break;
        }
        default: tile.erase(tile.begin() + long(at)); what += " byte deleted"; break;
      }
    }
    b.tiles.push_back(std::move(tile));
    b.what.push_back(what);
  }
  hfgpu::GpuJpegDecoder gpu;
  hfgpu::Stream stream;
  const size_t decoded = checkBatch(gpu, b, size, quality, stream);
  EXPECT_GE(decoded, b.tiles.size() - corrupt);
  // Garbage tiles of every kind in one batch, then a clean batch on the same decoder.
  Batch g;
  for (int i = 0; i < 64; ++i) {
    std::vector<uint8_t> tile(size_t(rng() % 5000));
    for (auto& v : tile) v = uint8_t(rng());
    if (i % 2 && tile.size() > 4) {
      tile[0] = 0xFF;
      tile[1] = 0xD8;
    }
    g.tiles.push_back(std::move(tile));
    g.what.push_back("random bytes " + std::to_string(i));
  }
  EXPECT_EQ(checkBatch(gpu, g, size, quality, stream), 0u);
  Batch clean;
  for (int i = 0; i < 16; ++i) {
    clean.tiles.push_back(encodeTile(syntheticRgba(size, i % 7, uint32_t(i), false), size, quality));
    clean.what.push_back("clean " + std::to_string(i));
  }
  EXPECT_EQ(checkBatch(gpu, clean, size, quality, stream), clean.tiles.size());
}

TEST(JpegDecodeDevice, AsyncStepsAndEmptyBatches) {
  HF_REQUIRE_CUDA_DEVICE();
  hfgpu::GpuJpegDecoder gpu;
  hfgpu::Stream stream;
  const std::vector<uint8_t> tb = himg::makeJpegTables(90);
  std::string error;
  ASSERT_TRUE(gpu.setTables(tb.data(), tb.size(), error)) << error;
  EXPECT_EQ(gpu.prepare(nullptr, 0, 256), 0u);
  gpu.uploadAsync(stream);
  gpu.decodeAsync(nullptr, stream);
  gpu.fetchStatusesAsync(stream);
  stream.synchronize();
  EXPECT_TRUE(gpu.errors().empty());
  const std::vector<uint8_t> tile = encodeTile(syntheticRgba(256, 4, 1, true), 256, 90);
  std::vector<hfgpu::JpegTileInput> in(3, hfgpu::JpegTileInput{tile.data(), tile.size()});
  in[1] = {nullptr, 0};
  hfgpu::DeviceBuffer<uint8_t> out(3 * 256 * 256 * 4);
  EXPECT_EQ(gpu.prepare(in.data(), 3, 256), 2u);
  EXPECT_GT(gpu.stagedBytes(), tile.size());
  // Before the device has run: the host's verdicts alone (the renderer reserves layers by them).
  ASSERT_EQ(gpu.hostErrors().size(), 3u);
  EXPECT_EQ(gpu.hostErrors()[0], "");
  EXPECT_NE(gpu.hostErrors()[1], "");
  EXPECT_EQ(gpu.hostErrors()[2], "");
  gpu.uploadAsync(stream);
  gpu.decodeAsync(out.get(), stream);
  gpu.fetchStatusesAsync(stream);
  stream.synchronize();
  const std::vector<std::string> e = gpu.errors();
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0], "");
  EXPECT_NE(e[1], "");
  EXPECT_EQ(e[2], "");
  std::vector<uint8_t> got(256 * 256 * 4), want(256 * 256 * 4);
  himg::JpegTileDecoder ref;
  ASSERT_TRUE(ref.setTables(tb.data(), tb.size(), error));
  ASSERT_TRUE(ref.decode(tile.data(), tile.size(), 256, want.data(), error));
  CUDA_CHECK(cudaMemcpy(got.data(), out.get() + 2 * 256 * 256 * 4, got.size(), cudaMemcpyDeviceToHost));
  EXPECT_EQ(got, want);
  // Wrong size for the tiles: host errors, nothing launched.
  EXPECT_EQ(gpu.prepare(in.data(), 3, 128), 0u);
  EXPECT_EQ(gpu.decode(in.data(), 3, 100, out.get(), stream).size(), 3u);
}

}  // namespace
