// encode_test.cpp - GPU encoder parity on the device: hfgpu::BatchEncoder's streams must be the
// bytes hfpac::encode produces, and decode losslessly with hfpac::decode. Every patch kind and
// shape of encode_cases.h is encoded in ONE batch per option set (mixed sizes, signed and
// unsigned, flat, stored, masked), for every segment size and b in -1..16, with mask variants.
// Skips cleanly without a CUDA device (encode_emu_test.cpp covers the kernels on the CPU).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "encode_cases.h"
#include "gpu/cuda_util.h"
#include "gpu/encoder.h"
#include "gpu_test_util.h"
#include "test_util.h"

namespace {

using hftest::Patch;

std::vector<hfpac::PatchIn> patchIns(const std::vector<Patch>& patches) {
  std::vector<hfpac::PatchIn> in(patches.size());
  for (size_t i = 0; i < patches.size(); ++i) {
    in[i].samples = patches[i].data();
    in[i].stride = patches[i].stride;
    in[i].width = patches[i].width;
    in[i].height = patches[i].height;
    in[i].type = patches[i].type;
  }
  return in;
}

std::string firstDifference(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i)
    if (a[i] != b[i])
      return "byte " + std::to_string(i) + ": cpu " + std::to_string(a[i]) + " gpu " + std::to_string(b[i]);
  return "sizes cpu " + std::to_string(a.size()) + " gpu " + std::to_string(b.size());
}

void expectParity(hfgpu::BatchEncoder& encoder, cudaStream_t stream, const std::vector<Patch>& patches,
                  const hftest::OptionCase& oc) {
  const std::vector<hfpac::PatchIn> in = patchIns(patches);
  std::vector<std::vector<uint8_t>> gpu;
  ASSERT_EQ(encoder.encodeHost(in.data(), in.size(), oc.options, stream, gpu), hfpac::Status::Ok) << oc.name;
  ASSERT_EQ(gpu.size(), patches.size());
  for (size_t i = 0; i < patches.size(); ++i) {
    const Patch& p = patches[i];
    const std::vector<uint8_t> cpu = hftest::encodeOrDie(p, oc.options);
    EXPECT_TRUE(cpu == gpu[i]) << oc.name << " " << p.name << ": " << firstDifference(cpu, gpu[i]);
    std::vector<uint16_t> decoded;
    ASSERT_EQ(hftest::decodeTo(gpu[i], p.width, p.height, decoded), hfpac::Status::Ok) << oc.name << " " << p.name;
    bool lossless = true;
    for (int y = 0; y < p.height && lossless; ++y)
      for (int x = 0; x < p.width && lossless; ++x)
        lossless = decoded[size_t(y) * size_t(p.width) + size_t(x)] == p.at(x, y);
    EXPECT_TRUE(lossless) << oc.name << " " << p.name;
  }
}

TEST(GpuEncode, ParityEveryOptionOneBatchEach) {
  HF_REQUIRE_CUDA_DEVICE();
  const std::vector<Patch> patches = hftest::encodeParityPatches(false);
  hfgpu::Stream stream;
  hfgpu::BatchEncoder encoder;
  for (const hftest::OptionCase& oc : hftest::encodeParityOptions(false)) {
    SCOPED_TRACE(oc.name);
    expectParity(encoder, stream, patches, oc);
    if (HasFatalFailure()) return;
  }
}

TEST(GpuEncode, ManyPatchesOfOneSizeAndDevicePointers) {
  HF_REQUIRE_CUDA_DEVICE();
  // 300 patches of 129 x 129 cut from one larger terrain (the benchmark's shape), samples
  // already on the device with a stride: the encodeAsync path.
  const int side = 129, cols = 20, rows = 15;
  const int w = cols * (side - 1) + 1, h = rows * (side - 1) + 1;
  Patch big = hftest::rampBumps(w, h, hfpac::SampleType::Int16, 17);
  for (int y = 0; y < h; y += 97)
    for (int x = 0; x < w; x += 3) big.at(x, y) = 0x8000;  // some nodata lines
  hfgpu::Stream stream;
  hfgpu::DeviceBuffer<uint16_t> device(big.samples.size());
  CUDA_CHECK(cudaMemcpyAsync(device.get(), big.samples.data(), big.samples.size() * 2, cudaMemcpyHostToDevice, stream));
  std::vector<hfgpu::DevicePatch> dev;
  std::vector<hfpac::PatchIn> host;
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      const size_t offset = size_t(r) * (side - 1) * big.stride + size_t(c) * (side - 1);
      hfgpu::DevicePatch d;
      d.samples = device.get() + offset;
      d.stride = big.stride;
      d.width = d.height = side;
      d.type = big.type;
      dev.push_back(d);
      hfpac::PatchIn in;
      in.samples = big.samples.data() + offset;
      in.stride = big.stride;
      in.width = in.height = side;
      in.type = big.type;
      host.push_back(in);
    }
  hfgpu::BatchEncoder encoder;
  for (int bits : {-1, 4}) {
    hfpac::EncodeOptions o = hftest::opts(9, bits);
    o.hasNodata = true;
    o.nodata = 0x8000;
    std::vector<std::vector<uint8_t>> gpu;
    ASSERT_EQ(encoder.encode(dev.data(), dev.size(), o, stream, gpu), hfpac::Status::Ok);
    size_t mismatches = 0;
    for (size_t i = 0; i < host.size(); ++i) {
      std::vector<uint8_t> cpu;
      ASSERT_EQ(hfpac::encode(host[i].samples, host[i].stride, side, side, host[i].type, o, cpu), hfpac::Status::Ok);
      if (cpu != gpu[i] && mismatches++ == 0)
        ADD_FAILURE() << "bits " << bits << " patch " << i << ": " << firstDifference(cpu, gpu[i]);
    }
    EXPECT_EQ(mismatches, 0u) << "bits " << bits;
    // The contiguous device output agrees with the per-patch copies.
    const uint64_t* offsets = encoder.hostOffsets();
    EXPECT_EQ(offsets[0], 0u);
    for (size_t i = 0; i < gpu.size(); ++i) EXPECT_EQ(offsets[i + 1] - offsets[i], gpu[i].size());
  }
}

TEST(GpuEncode, EmptyBatchAndInvalidArguments) {
  HF_REQUIRE_CUDA_DEVICE();
  hfgpu::Stream stream;
  hfgpu::BatchEncoder encoder;
  std::vector<std::vector<uint8_t>> out(3);
  EXPECT_EQ(encoder.encode(nullptr, 0, hfpac::EncodeOptions{}, stream, out), hfpac::Status::Ok);
  EXPECT_TRUE(out.empty());
  hfgpu::DevicePatch bad;
  bad.width = 10;
  bad.height = 10;
  bad.stride = 10;
  EXPECT_EQ(encoder.encodeAsync(&bad, 1, hfpac::EncodeOptions{}, stream), hfpac::Status::InvalidArgument);
  hfgpu::DeviceBuffer<uint16_t> buf(100);
  bad.samples = buf.get();
  bad.stride = 9;
  EXPECT_EQ(encoder.encodeAsync(&bad, 1, hfpac::EncodeOptions{}, stream), hfpac::Status::InvalidArgument);
  bad.stride = 10;
  hfpac::EncodeOptions o;
  o.segment = 7;
  EXPECT_EQ(encoder.encodeAsync(&bad, 1, o, stream), hfpac::Status::InvalidArgument);
  o.segment = 9;
  o.bits = 17;
  EXPECT_EQ(encoder.encodeAsync(&bad, 1, o, stream), hfpac::Status::InvalidArgument);
  o.bits = -1;
  o.rbuc = true;  // 2DRBUC: not implemented on the GPU
  EXPECT_EQ(encoder.encodeAsync(&bad, 1, o, stream), hfpac::Status::InvalidArgument);
}

TEST(GpuEncode, BenchHookMatchesReference) {
  HF_REQUIRE_CUDA_DEVICE();
  std::vector<Patch> patches;
  for (int i = 0; i < 16; ++i) patches.push_back(hftest::smooth(129, 129, hfpac::SampleType::UInt16, uint64_t(i + 1)));
  const std::vector<hfpac::PatchIn> in = patchIns(patches);
  std::vector<std::vector<uint8_t>> cpu;
  for (const Patch& p : patches) cpu.push_back(hftest::encodeOrDie(p, hfpac::EncodeOptions{}));
  hfgpu::GpuEncodeBench r;
  std::string error;
  ASSERT_TRUE(hfgpu::benchGpuEncode(in.data(), in.size(), hfpac::EncodeOptions{}, 3, &cpu, r, error)) << error;
  EXPECT_EQ(r.patches, 16u);
  EXPECT_EQ(r.points, 16u * 129u * 129u);
  EXPECT_EQ(r.mismatches, 0u);
  EXPECT_GT(r.pointsPerSecond, 0.0);
}

}  // namespace
