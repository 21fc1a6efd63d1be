// decode_ans_test.cpp - HFAN patches (codec/ans.h) decoded on the GPU (gpu/ans_decoder.h) give
// exactly the CPU decoder's samples, and the GPU refuses exactly the streams the CPU refuses.
#include <gtest/gtest.h>

#include <vector>

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

}  // namespace
