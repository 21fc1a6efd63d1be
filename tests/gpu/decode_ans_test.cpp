// decode_ans_test.cpp - HFAN patches (codec/ans.h) decoded on the GPU (gpu/ans_decoder.h) give
// exactly the CPU decoder's samples, and the GPU refuses exactly the streams the CPU refuses.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "gpu/cuda_util.h"

#include "codec/ans.h"
#include "gpu/ans_decoder.h"
#include "gpu_test_util.h"
#include "test_util.h"

namespace {

using hfpac::SampleType;
using hfpac::Status;

std::vector<uint8_t> encode(const hftest::Patch& p, int lanes, bool mask, uint16_t maskValue) {
  hfpac::AnsOptions o;
  o.lanes = lanes;
  o.hasMask = mask;
  o.maskValue = maskValue;
  std::vector<uint8_t> out;
  EXPECT_EQ(hfpac::ansEncode(p.samples.data(), p.stride, p.width, p.height, p.type, out, o), Status::Ok);
  return out;
}

// CPU decode of every stream, then the GPU batch: same status class, same samples when Ok.
void expectParity(const std::vector<std::vector<uint8_t>>& streams, size_t* okCount = nullptr) {
  std::vector<std::vector<uint16_t>> gpu;
  std::vector<Status> gpuStatus;
  hfgpu::ansDecodeBatch(streams, gpu, gpuStatus);
  ASSERT_EQ(gpu.size(), streams.size());
  size_t ok = 0;
  for (size_t i = 0; i < streams.size(); ++i) {
    hfpac::AnsInfo info;
    std::vector<uint16_t> cpu;
    Status cpuStatus = hfpac::ansReadInfo(streams[i].data(), streams[i].size(), info);
    if (cpuStatus == Status::Ok) {
      cpu.assign(size_t(info.width) * size_t(info.height), 0);
      cpuStatus = hfpac::ansDecode(streams[i].data(), streams[i].size(), cpu.data(), size_t(info.width), cpu.size());
    }
    ASSERT_EQ(cpuStatus == Status::Ok, gpuStatus[i] == Status::Ok)
        << "stream " << i << ": cpu " << hfpac::statusMessage(cpuStatus) << ", gpu " << hfpac::statusMessage(gpuStatus[i]);
    if (cpuStatus != Status::Ok) continue;
    ++ok;
    ASSERT_EQ(cpu, gpu[i]) << "stream " << i;
  }
  if (okCount) *okCount = ok;
}

TEST(AnsGpu, DecodesEveryKindLaneCountAndTokenSet) {
  HF_REQUIRE_CUDA_DEVICE();
  std::vector<std::vector<uint8_t>> streams;
  for (auto [w, h] : {std::pair{1, 1}, std::pair{129, 129}, std::pair{33, 65}, std::pair{300, 2}, std::pair{5, 70}})
    for (int lanes : {1, 3, 8, 32}) {
      for (SampleType t : {SampleType::UInt16, SampleType::Int16}) {
        const uint16_t nodata = t == SampleType::Int16 ? 0x8000 : 0xFFFF;
        streams.push_back(encode(hftest::smooth(w, h, t, 1), lanes, false, 0));
        streams.push_back(encode(hftest::noise(w, h, t, 2), lanes, false, 0));
        streams.push_back(encode(hftest::withHoles(w, h, t, 3), lanes, true, nodata));
        streams.push_back(encode(hftest::constant(w, h, nodata, t), lanes, true, nodata));
      }
      streams.push_back(encode(hftest::seaMountain(w, h, SampleType::Int16, 4), lanes, false, 0));
      streams.push_back(encode(hftest::negative(w, h, 5), lanes, false, 0));
    }
  // Residuals near a lattice: the 256-token set.
  hftest::Patch lattice = hftest::constant(129, 129, 30000, SampleType::UInt16);
  hftest::Rng rng(6);
  for (int y = 0; y < 129; ++y)
    for (int x = 0, v = 30000; x < 129; ++x) lattice.at(x, y) = uint16_t(v += (int(rng.below(9)) - 4) * 13 + int(rng.below(2)));
  streams.push_back(encode(lattice, 8, false, 0));
  hfpac::AnsInfo info;
  ASSERT_EQ(hfpac::ansReadInfo(streams.back().data(), streams.back().size(), info), Status::Ok);
  EXPECT_EQ(info.directLog2, 8);
  size_t ok = 0;
  ASSERT_NO_FATAL_FAILURE(expectParity(streams, &ok));
  EXPECT_EQ(ok, streams.size());
}

// Truncations and byte flips: the GPU accepts exactly what the CPU accepts, with its samples.
TEST(AnsGpu, RefusesWhatTheCpuRefuses) {
  HF_REQUIRE_CUDA_DEVICE();
  const std::vector<uint8_t> good = encode(hftest::withHoles(40, 30, SampleType::Int16, 7), 8, true, 0x8000);
  std::vector<std::vector<uint8_t>> streams;
  for (size_t n = 0; n < good.size(); n += 3) streams.emplace_back(good.begin(), good.begin() + std::ptrdiff_t(n));
  for (size_t k = 0; k < good.size(); ++k)
    for (uint8_t flip : {uint8_t(0x01), uint8_t(0x10), uint8_t(0xFF)}) {
      std::vector<uint8_t> bad = good;
      bad[k] ^= flip;
      streams.push_back(bad);
    }
  size_t ok = 0;
  ASSERT_NO_FATAL_FAILURE(expectParity(streams, &ok));
  std::printf("[ ans gpu  ] %zu of %zu damaged streams decode (the CPU decoder agrees on each)\n", ok, streams.size());
}

// AnsSurfaceDecoder (the cuda streaming strategy's path): patches placed in the layers of a 16-bit
// surface array, two batches in a row on one decoder (its staging reused), every texel of a
// patch equal to the CPU decode, texels outside the patches untouched; header errors (wrong
// geometry, cut streams) keep their host status and write nothing; a corrupt word stream gets
// the decoder's error.
TEST(AnsGpu, SurfaceDecoderPlacesPatchesInLayers) {
  HF_REQUIRE_CUDA_DEVICE();
  constexpr int kSide = 400, kLayers = 3;
  const cudaChannelFormatDesc u16 = cudaCreateChannelDesc(16, 0, 0, 0, cudaChannelFormatKindUnsigned);
  std::vector<cudaArray_t> arrays(kLayers);
  std::vector<cudaSurfaceObject_t> surfaces(kLayers);
  const std::vector<uint16_t> fill(size_t(kSide) * kSide, 0xABCD);
  for (int l = 0; l < kLayers; ++l) {
    CUDA_CHECK(cudaMallocArray(&arrays[size_t(l)], &u16, kSide, kSide, cudaArraySurfaceLoadStore));
    cudaResourceDesc r{};
    r.resType = cudaResourceTypeArray;
    r.res.array.array = arrays[size_t(l)];
    CUDA_CHECK(cudaCreateSurfaceObject(&surfaces[size_t(l)], &r));
  }
  hfgpu::AnsSurfaceDecoder decoder;
  hfgpu::Stream stream;
  for (int batch = 0; batch < 2; ++batch) {
    for (int l = 0; l < kLayers; ++l)
      CUDA_CHECK(cudaMemcpy2DToArray(arrays[size_t(l)], 0, 0, fill.data(), kSide * 2, kSide * 2, kSide,
                                     cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaDeviceSynchronize());  // the fills, before the decoder's own stream writes
    std::vector<hftest::Patch> patches;
    std::vector<std::vector<uint8_t>> streams;
    std::vector<hfgpu::AnsSurfaceInput> in;
    const SampleType t = batch == 0 ? SampleType::Int16 : SampleType::UInt16;
    const uint16_t nodata = t == SampleType::Int16 ? 0x8000 : 0xFFFF;
    for (int k = 0; k < 7; ++k) {
      patches.push_back(k % 3 == 0   ? hftest::smooth(129, 129, t, uint32_t(10 + k + batch))
                        : k % 3 == 1 ? hftest::withHoles(129, 129, t, uint32_t(20 + k))
                                     : hftest::constant(129, 129, k == 2 ? 0 : nodata, t));
      streams.push_back(encode(patches.back(), k < 4 ? 32 : 8, k % 3 != 0, nodata));
    }
    for (size_t k = 0; k < streams.size(); ++k) {
      hfgpu::AnsSurfaceInput p;
      p.data = streams[k].data();
      p.size = streams[k].size();
      p.width = p.height = 129;
      p.type = t;
      p.surface = uint32_t(k % kLayers);
      p.x = int(k / kLayers) * 129 + (batch ? 7 : 0);
      p.y = int(k % 2) * 150;
      in.push_back(p);
    }
    in[5].width = 128;                    // wrong geometry: refused on the host
    in[6].size = 20;                      // cut: refused on the host
    // Patch 3 (unmasked, 32 lanes) with its first lane's state below 2^16: the host's header
    // checks pass, the kernel refuses it (InvalidHeader, as the CPU decoder does).
    std::vector<uint8_t> corrupt = streams[3];
    {
      hfpac::AnsInfo info;
      ASSERT_EQ(hfpac::ansReadInfo(corrupt.data(), corrupt.size(), info), Status::Ok);
      ASSERT_FALSE(info.masked);
      const int tokens = (1 << info.directLog2) + (17 - info.directLog2) * 4;
      const size_t presence = size_t(tokens + 1 + 7) / 8;
      size_t present = 0;
      for (size_t b = 0; b < presence; ++b) present += size_t(__builtin_popcount(corrupt[16 + b]));
      const size_t states = 16 + presence + 1 + 2 * present;
      corrupt[states] = 1;
      corrupt[states + 1] = corrupt[states + 2] = corrupt[states + 3] = 0;
    }
    in[3].data = corrupt.data();
    ASSERT_EQ(decoder.prepare(in.data(), in.size()), 5u);
    EXPECT_EQ(decoder.patchCount(), 7u);
    EXPECT_GT(decoder.uploadBytes(), 0u);
    decoder.decodeAsync(surfaces.data(), kLayers, stream.get());
    stream.synchronize();
    const std::vector<Status> st = decoder.statuses();
    ASSERT_EQ(st.size(), 7u);
    EXPECT_EQ(st[5], Status::InvalidArgument);
    EXPECT_NE(st[6], Status::Ok);
    std::vector<uint16_t> cpu(129 * 129);
    EXPECT_EQ(hfpac::ansDecode(corrupt.data(), corrupt.size(), cpu.data(), 129, cpu.size()), Status::InvalidHeader);
    EXPECT_EQ(st[3], Status::InvalidHeader);
    std::vector<std::vector<uint16_t>> layers(kLayers, std::vector<uint16_t>(size_t(kSide) * kSide));
    for (int l = 0; l < kLayers; ++l)
      CUDA_CHECK(cudaMemcpy2DFromArray(layers[size_t(l)].data(), kSide * 2, arrays[size_t(l)], 0, 0, kSide * 2, kSide,
                                       cudaMemcpyDeviceToHost));
    std::vector<std::vector<uint8_t>> written(kLayers, std::vector<uint8_t>(size_t(kSide) * kSide, 0));
    for (size_t k = 0; k < in.size(); ++k) {
      if (st[k] != Status::Ok || k == 3) continue;
      const hfgpu::AnsSurfaceInput& p = in[k];
      for (int y = 0; y < 129; ++y)
        for (int x = 0; x < 129; ++x) {
          ASSERT_EQ(layers[p.surface][size_t(p.y + y) * kSide + size_t(p.x + x)], patches[k].at(x, y))
              << "batch " << batch << " patch " << k << " at " << x << "," << y;
          written[p.surface][size_t(p.y + y) * kSide + size_t(p.x + x)] = 1;
        }
    }
    // Every texel no accepted patch covers keeps the fill: the patches refused on the host (5, 6)
    // and by the kernel (3) are not written.
    size_t outside = 0, untouched = 0;
    for (int l = 0; l < kLayers; ++l)
      for (size_t i = 0; i < layers[size_t(l)].size(); ++i)
        if (!written[size_t(l)][i]) {
          ++outside;
          untouched += layers[size_t(l)][i] == 0xABCD;
        }
    EXPECT_EQ(untouched, outside) << "batch " << batch;
  }
  EXPECT_THROW(decoder.decodeAsync(surfaces.data(), 300, stream.get()), std::invalid_argument);
  EXPECT_THROW(decoder.decodeAsync(surfaces.data(), 1, stream.get()), std::invalid_argument);  // index 2 used
  for (int l = 0; l < kLayers; ++l) {
    CUDA_CHECK(cudaDestroySurfaceObject(surfaces[size_t(l)]));
    CUDA_CHECK(cudaFreeArray(arrays[size_t(l)]));
  }
}

}  // namespace
