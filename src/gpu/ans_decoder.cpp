// ans_decoder.cpp - see ans_decoder.h.
#include "gpu/ans_decoder.h"

#include <cuda_runtime_api.h>

#include <algorithm>

#include "codec/ans.h"
#include "gpu/ans_launch.h"
#include "gpu/cuda_util.h"

namespace hfgpu {

void ansDecodeBatch(const std::vector<std::vector<uint8_t>>& streams, std::vector<std::vector<uint16_t>>& outputs,
                    std::vector<hfpac::Status>& statuses) {
  const size_t count = streams.size();
  outputs.assign(count, {});
  statuses.assign(count, hfpac::Status::Ok);
  // Headers on the host: what the kernel may trust, and where everything goes.
  std::vector<detail::AnsPatchDesc> descs;
  std::vector<size_t> which;
  std::vector<uint8_t> packed;
  uint64_t samples = 0;
  for (size_t i = 0; i < count; ++i) {
    hfpac::AnsInfo info;
    statuses[i] = hfpac::ansReadInfo(streams[i].data(), streams[i].size(), info);
    if (statuses[i] != hfpac::Status::Ok) continue;
    if (info.lanes > kAnsGpuMaxLanes) {
      statuses[i] = hfpac::Status::Unsupported;
      continue;
    }
    detail::AnsPatchDesc d{};
    d.streamOffset = packed.size();
    d.streamBytes = info.streamBytes;  // a multiple of 4: every stream starts 4-aligned
    d.outOffset = samples;
    packed.insert(packed.end(), streams[i].begin(), streams[i].begin() + std::ptrdiff_t(info.streamBytes));
    samples += uint64_t(info.width) * uint64_t(info.height);
    outputs[i].assign(size_t(info.width) * size_t(info.height), 0);
    descs.push_back(d);
    which.push_back(i);
  }
  if (descs.empty()) return;

  Stream stream;
  DeviceBuffer<uint8_t> dStreams(packed.size());
  DeviceBuffer<detail::AnsPatchDesc> dDescs(descs.size());
  DeviceBuffer<uint16_t> dOut(samples);
  DeviceBuffer<int32_t> dScratch(samples), dStatus(descs.size());
  CUDA_CHECK(cudaMemcpyAsync(dStreams.get(), packed.data(), packed.size(), cudaMemcpyHostToDevice, stream));
  CUDA_CHECK(cudaMemcpyAsync(dDescs.get(), descs.data(), descs.size() * sizeof(detail::AnsPatchDesc),
                             cudaMemcpyHostToDevice, stream));
  detail::launchAnsDecode(dStreams.get(), dDescs.get(), uint32_t(descs.size()), dOut.get(), dScratch.get(),
                          dStatus.get(), stream.get());
  CUDA_CHECK(cudaGetLastError());
  std::vector<int32_t> status(descs.size());
  std::vector<uint16_t> out(samples);
  CUDA_CHECK(cudaMemcpyAsync(status.data(), dStatus.get(), status.size() * sizeof(int32_t), cudaMemcpyDeviceToHost,
                             stream));
  CUDA_CHECK(cudaMemcpyAsync(out.data(), dOut.get(), out.size() * sizeof(uint16_t), cudaMemcpyDeviceToHost, stream));
  stream.synchronize();
  for (size_t k = 0; k < descs.size(); ++k) {
    const size_t i = which[k];
    statuses[i] = hfpac::Status(status[k]);
    std::copy_n(out.begin() + std::ptrdiff_t(descs[k].outOffset), outputs[i].size(), outputs[i].begin());
  }
}

}  // namespace hfgpu
