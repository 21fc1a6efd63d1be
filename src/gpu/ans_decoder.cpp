// ans_decoder.cpp - see ans_decoder.h.
#include "gpu/ans_decoder.h"

#include <cuda_runtime_api.h>

#include <algorithm>

#include "codec/ans.h"
#include "gpu/ans_launch.h"
#include "gpu/cuda_util.h"

namespace hfgpu {

namespace {

// The batch as the kernel takes it: streams back to back (each 4-aligned), one descriptor each.
struct PackedBatch {
  std::vector<detail::AnsPatchDesc> descs;
  std::vector<size_t> which;  // index into the caller's streams
  std::vector<uint8_t> bytes;
  uint64_t samples = 0;
};

// Checks every header on the host: statuses[i] gets the result (Unsupported for lanes > 32).
PackedBatch pack(const std::vector<std::vector<uint8_t>>& streams, std::vector<hfpac::Status>& statuses,
                 std::vector<std::vector<uint16_t>>* outputs) {
  PackedBatch b;
  statuses.assign(streams.size(), hfpac::Status::Ok);
  for (size_t i = 0; i < streams.size(); ++i) {
    hfpac::AnsInfo info;
    statuses[i] = hfpac::ansReadInfo(streams[i].data(), streams[i].size(), info);
    if (statuses[i] != hfpac::Status::Ok) continue;
    if (info.lanes > kAnsGpuMaxLanes) {
      statuses[i] = hfpac::Status::Unsupported;
      continue;
    }
    detail::AnsPatchDesc d{};
    d.streamOffset = b.bytes.size();
    d.streamBytes = info.streamBytes;  // a multiple of 4: every stream starts 4-aligned
    d.outOffset = b.samples;
    b.bytes.insert(b.bytes.end(), streams[i].begin(), streams[i].begin() + std::ptrdiff_t(info.streamBytes));
    b.samples += uint64_t(info.width) * uint64_t(info.height);
    if (outputs) (*outputs)[i].assign(size_t(info.width) * size_t(info.height), 0);
    b.descs.push_back(d);
    b.which.push_back(i);
  }
  return b;
}

// The batch on the device, ready to launch.
struct DeviceBatch {
  DeviceBuffer<uint8_t> streams;
  DeviceBuffer<detail::AnsPatchDesc> descs;
  DeviceBuffer<uint16_t> out;
  DeviceBuffer<int32_t> scratch, status;
  DeviceBatch(const PackedBatch& b, const Stream& stream)
      : streams(b.bytes.size()), descs(b.descs.size()), out(b.samples), scratch(b.samples), status(b.descs.size()) {
    CUDA_CHECK(cudaMemcpyAsync(streams.get(), b.bytes.data(), b.bytes.size(), cudaMemcpyHostToDevice, stream));
    CUDA_CHECK(cudaMemcpyAsync(descs.get(), b.descs.data(), b.descs.size() * sizeof(detail::AnsPatchDesc),
                               cudaMemcpyHostToDevice, stream));
  }
  void launch(const Stream& stream) {
    detail::launchAnsDecode(streams.get(), descs.get(), uint32_t(descs.size()), out.get(), scratch.get(), status.get(),
                            stream.get());
    CUDA_CHECK(cudaGetLastError());
  }
};

}  // namespace

void ansDecodeBatch(const std::vector<std::vector<uint8_t>>& streams, std::vector<std::vector<uint16_t>>& outputs,
                    std::vector<hfpac::Status>& statuses) {
  outputs.assign(streams.size(), {});
  const PackedBatch b = pack(streams, statuses, &outputs);
  if (b.descs.empty()) return;
  Stream stream;
  DeviceBatch d(b, stream);
  d.launch(stream);
  std::vector<int32_t> status(b.descs.size());
  std::vector<uint16_t> out(b.samples);
  CUDA_CHECK(cudaMemcpyAsync(status.data(), d.status.get(), status.size() * sizeof(int32_t), cudaMemcpyDeviceToHost,
                             stream));
  CUDA_CHECK(cudaMemcpyAsync(out.data(), d.out.get(), out.size() * sizeof(uint16_t), cudaMemcpyDeviceToHost, stream));
  stream.synchronize();
  for (size_t k = 0; k < b.descs.size(); ++k) {
    const size_t i = b.which[k];
    statuses[i] = hfpac::Status(status[k]);
    std::copy_n(out.begin() + std::ptrdiff_t(b.descs[k].outOffset), outputs[i].size(), outputs[i].begin());
  }
}

AnsKernelTiming ansDecodeKernelTime(const std::vector<std::vector<uint8_t>>& streams, int repeat) {
  std::vector<hfpac::Status> statuses;
  const PackedBatch b = pack(streams, statuses, nullptr);
  AnsKernelTiming t;
  t.samples = b.samples;
  t.patches = b.descs.size();
  if (b.descs.empty()) return t;
  Stream stream;
  DeviceBatch d(b, stream);
  d.launch(stream);  // warm-up
  Event start, stop;
  for (int run = 0; run < std::max(1, repeat); ++run) {
    start.record(stream);
    d.launch(stream);
    stop.record(stream);
    stop.synchronize();
    const double seconds = double(stop.elapsedMsSince(start)) / 1000.0;
    if (run == 0 || seconds < t.seconds) t.seconds = seconds;
  }
  return t;
}

}  // namespace hfgpu
