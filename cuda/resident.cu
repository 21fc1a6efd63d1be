// resident.cu - the device half of a resident batch (src/gpu/resident_decoder.h): copy the
// batch's misses into the pool, then expand every tile's descriptors from its pool entry into
// the arrays the decode kernels (decode.cu, decode_rbuc.cu) read. Both are plain copies: the
// entries were validated and laid out on the host (DecodePlan::writeEntry), so nothing here
// parses a stream.
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

// One block per tile: its PatchDesc with the pool position and destination of this batch, and
// its AreaDescs pointing at the batch's patch index.
__global__ void expandDescriptors(const ResidentRecord* __restrict__ records, const uint8_t* __restrict__ pool,
                                  PatchDesc* __restrict__ patches, AreaDesc* __restrict__ areas,
                                  uint64_t layeredAreas) {
  const uint32_t i = blockIdx.x;
  const ResidentRecord r = records[i];
  const uint8_t* entry = pool + r.entryByte;
  if (threadIdx.x == 0) {
    PatchDesc d = *reinterpret_cast<const PatchDesc*>(entry);
    d.streamWord = (r.entryByte + residentWordsOffset(r.areas)) / 4;
    d.dstOffset = r.dstOffset;
    d.dstPitch = r.dstPitch;
    d.surface = r.surface;
    d.dstX = r.dstX;
    d.dstY = r.dstY;
    patches[i] = d;
  }
  const AreaDesc* src = reinterpret_cast<const AreaDesc*>(entry + sizeof(PatchDesc));
  AreaDesc* dst = areas + (r.rbuc ? layeredAreas : 0) + r.areaStart;
  for (uint32_t a = threadIdx.x; a < r.areas; a += blockDim.x) {
    AreaDesc d = src[a];
    d.patch = i;
    dst[a] = d;
  }
}

}  // namespace

void launchResidentPrepare(const ResidentLaunch& l, void* streamPtr) {
  const cudaStream_t stream = static_cast<cudaStream_t>(streamPtr);
  // Grid x is limited to 2^31 - 1 blocks; a batch has at most a few thousand tiles.
  if (l.copyCount > 0) {
    copyEntries<<<unsigned(l.copyCount), kThreads, 0, stream>>>(l.copies, l.batch, l.pool);
    CUDA_CHECK(cudaGetLastError());
  }
  if (l.recordCount > 0) {
    expandDescriptors<<<unsigned(l.recordCount), 128, 0, stream>>>(l.records, l.pool, l.patches, l.areas,
                                                                     l.layeredAreas);
    CUDA_CHECK(cudaGetLastError());
  }
}

}  // namespace hfgpu::detail
