// ans_decoder.h - the entropy-coded patches of codec/ans.h (HFAN) decoded on the GPU: one warp
// per patch, the patch's rANS lanes in lockstep (a ballot and a prefix count place each lane's
// refill in the shared word stream), then each row rebuilt from its residuals by warp scans.
// Output equals hfpac::ansDecode's sample for sample; a stream the CPU decoder refuses is
// refused here too (per-patch status).
//
// Limits: lanes <= 32 (one warp: the encoder picks 32, 16 or 8). Streams are checked on the host
// first (ansReadInfo); a patch the GPU cannot take gets Status::Unsupported.
#pragma once

#include <cstdint>
#include <vector>

#include "codec/hfpac.h"

namespace hfgpu {

constexpr int kAnsGpuMaxLanes = 32;

// Decodes every stream into outputs[i] (width * height samples, stride = width), statuses[i]
// its result. Synchronous (its own CUDA stream); throws std::runtime_error on a CUDA error.
void ansDecodeBatch(const std::vector<std::vector<uint8_t>>& streams, std::vector<std::vector<uint16_t>>& outputs,
                    std::vector<hfpac::Status>& statuses);

// The decode kernel alone on a device-resident batch (CUDA events): the best of `repeat` runs,
// in seconds, and the samples one run decodes. Streams the GPU cannot take are left out.
struct AnsKernelTiming {
  double seconds = 0;
  uint64_t samples = 0, patches = 0;
};
AnsKernelTiming ansDecodeKernelTime(const std::vector<std::vector<uint8_t>>& streams, int repeat);

}  // namespace hfgpu
