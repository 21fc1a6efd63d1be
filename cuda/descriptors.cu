// descriptors.cu - decode descriptors built on the device from the tile records and the streams
// (gpu/desc_build.h has the logic and its sequential reference). One thread block per tile:
// thread 0 reads the header; block-wide reductions give the bitmap and prominent totals that
// place the area table and the prominent lists; one chunked pass of block-wide exclusive scans
// gives every area its offsets, and each thread writes the AreaDescs of its areas.
#include <cuda_runtime.h>

#include <cstdint>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "gpu/cuda_util.h"
#include "gpu/desc_build.h"

namespace hfgpu::detail {
namespace {

constexpr int kThreads = 128;  // a 129 x 129 tile has 81 areas; larger tiles loop

// The three offsets an area gets from the scans, summed as one value per thread.
struct Offsets {
  unsigned long long maskBit, lowBit, first;
};
struct AddOffsets {
  __device__ Offsets operator()(const Offsets& a, const Offsets& b) const {
    return Offsets{a.maskBit + b.maskBit, a.lowBit + b.lowBit, a.first + b.first};
  }
};

__global__ void __launch_bounds__(kThreads)
    buildDescriptors(const TileRecord* __restrict__ records, const uint32_t* __restrict__ words,
                     PatchDesc* __restrict__ patches, AreaDesc* __restrict__ areas, uint64_t layeredAreas) {
  using Reduce = cub::BlockReduce<unsigned long long, kThreads>;
  using Scan = cub::BlockScan<Offsets, kThreads>;
  __shared__ union {
    typename Reduce::TempStorage reduce;
    typename Scan::TempStorage scan;
  } temp;
  // TileLayout has default member initialisers, which __shared__ variables may not have.
  __shared__ alignas(TileLayout) unsigned char layoutBytes[sizeof(TileLayout)];
  TileLayout& t = *reinterpret_cast<TileLayout*>(layoutBytes);
  __shared__ unsigned long long total;

  const uint32_t index = blockIdx.x;
  const TileRecord r = records[index];
  const int tid = int(threadIdx.x);
  if (r.areas == 0) {
    if (tid == 0) patches[index] = PatchDesc{};
    return;
  }
  const uint32_t* s = words + r.streamByte / 4;
  if (tid == 0) {
    t = tileLayout(s);
    patches[index] = patchDescriptor(t, r);
  }
  __syncthreads();
  const uint64_t n = t.g.areas;

  // (2) Bitmap bits of all areas -> where the area table or block index starts.
  if (t.h.isMasked()) {
    unsigned long long mine = 0;
    for (uint64_t k = uint64_t(tid); k < n; k += kThreads) mine += areaBitmapBits(t, areaMaskCode(t, s, k), k);
    const unsigned long long sum = Reduce(temp.reduce).Sum(mine);
    if (tid == 0) total = sum;
    __syncthreads();
  }
  if (tid == 0) finishMask(t, s, t.h.isMasked() ? total : 0);
  __syncthreads();
  // (3) Prominent entries of all areas -> where the positions and high parts start.
  if (t.kind == kKindCoded) {
    unsigned long long mine = 0;
    for (uint64_t k = uint64_t(tid); k < n; k += kThreads) mine += areaCount(t, s, k);
    const unsigned long long sum = Reduce(temp.reduce).Sum(mine);
    if (tid == 0) {
      total = sum;
      finishTable(t, sum);
    }
  } else if (tid == 0) {
    finishTable(t, 0);
  }
  __syncthreads();

  // (4) Chunks of kThreads areas: scan their offsets, carry the chunk totals.
  AreaDesc* out = areas + (r.rbuc ? layeredAreas : 0) + r.areaStart;
  Offsets carry{0, 0, 0};
  for (uint64_t base = 0; base < n; base += kThreads) {
    const uint64_t k = base + uint64_t(tid);
    AreaScan a;
    Offsets mine{0, 0, 0};
    if (k < n) {
      a = areaValues(t, s, k);
      mine = Offsets{areaBitmapBits(t, a.maskCode, k), areaLowBits(t, k, a), a.count};
    }
    Offsets before, chunk;
    Scan(temp.scan).ExclusiveScan(mine, before, Offsets{0, 0, 0}, AddOffsets(), chunk);
    if (k < n) {
      a.maskBit = carry.maskBit + before.maskBit;
      a.lowBit = carry.lowBit + before.lowBit;
      a.first = carry.first + before.first;
      out[k] = areaDescriptor(t, s, index, k, a);
    }
    carry = AddOffsets()(carry, chunk);
    __syncthreads();  // temp.scan is reused by the next chunk
  }
}

}  // namespace

void launchBuildDescriptors(const DescriptorLaunch& l, void* streamPtr) {
  if (l.recordCount == 0) return;
  const cudaStream_t stream = static_cast<cudaStream_t>(streamPtr);
  // Grid x is limited to 2^31 - 1 blocks; a batch has at most a few thousand tiles.
  buildDescriptors<<<unsigned(l.recordCount), kThreads, 0, stream>>>(l.records, l.words, l.patches, l.areas,
                                                                       l.layeredAreas);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace hfgpu::detail
