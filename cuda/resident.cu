// resident.cu - the device half of a resident batch (src/gpu/resident_decoder.h): copy the
// batch's misses into the pool. (The descriptors are then built from the pool by
// cuda/descriptors.cu, as for any batch.)
#include <cuda_runtime.h>

#include <cstdint>

#include "gpu/cuda_util.h"
#include "gpu/decode_desc.h"

namespace hfgpu::detail {
namespace {

constexpr int kThreads = 256;

// One block per miss: 16-byte copies (entries are 16-byte aligned and sized).
__global__ void copyEntries(const ResidentCopy* __restrict__ copies, const uint8_t* __restrict__ batch,
                            uint8_t* __restrict__ pool) {
  const ResidentCopy c = copies[blockIdx.x];
  const uint4* src = reinterpret_cast<const uint4*>(batch + c.srcByte);
  uint4* dst = reinterpret_cast<uint4*>(pool + c.dstByte);
  const uint64_t n = c.bytes / 16;
  for (uint64_t i = threadIdx.x; i < n; i += blockDim.x) dst[i] = src[i];
}

}  // namespace

void launchResidentCopies(const ResidentCopy* copies, uint64_t count, const uint8_t* batch, uint8_t* pool,
                          void* streamPtr) {
  if (count == 0) return;
  const cudaStream_t stream = static_cast<cudaStream_t>(streamPtr);
  // Grid x is limited to 2^31 - 1 blocks; a batch has at most a few thousand tiles.
  copyEntries<<<unsigned(count), kThreads, 0, stream>>>(copies, batch, pool);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace hfgpu::detail
