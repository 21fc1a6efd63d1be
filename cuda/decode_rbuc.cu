// decode_rbuc.cu - the batched decode kernel for 2DRBUC streams (docs/format.md section 5.2;
// CPU reference: decoder.cpp's addRbucResiduals / PatchView::rbucResidual; host side:
// src/gpu/decoder.cpp, which launches it after decode.cu's layered kernel, on the same stream,
// for the 2DRBUC subset of the batch).
//
// One thread block per 16 x 16 area (AreaDesc -> PatchDesc; an area lies inside one 32 x 32
// 2DRBUC block, whose first bit the host put in AreaDesc::lowBit), one thread per point:
//   1. the control nets of the segments the area touches, into shared memory (as decode.cu);
//   2. residuals (L12, All, Refine: a 2DRBUC stream has no layer 2, so L12 is lossless): the
//      first 64 threads read the block's root width and one node width each, and prefix-sum the
//      node sizes (width x points) with warp shuffles into the first bit of every node;
//   3. every thread reads its zigzag residual from its node (raster order inside the node) and
//      adds it to the layer-1 prediction, range-checks the sum (OutOfRange like
//      hfpac::decode(), masked points included: the CPU checks before it masks), then applies
//      the mask and the signed flip and stores 16 bits.
// Refine: areas without a mask take the prediction from the destination (which holds this
// batch's L1 output); areas with a mask re-evaluate it, since masked points were overwritten
// with the masked value and still need their range check. The result equals Mode::All.
//
// The host validated every stream (codec/stream_index.h: every width <= the block's root
// <= 17, every block inside section D) before writing any AreaDesc.
//
// The device helpers shared with decode.cu are in decode_device.cuh.
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>

#include "codec/layout.h"
#include "gpu/cuda_util.h"
#include "gpu/decode_desc.h"
#include "decode_device.cuh"

namespace hfgpu::detail {
namespace {

using hfpac::detail::SegmentControls;
using hfpac::detail::centreBase;
using hfpac::detail::edgeFromOffset;
using hfpac::detail::evalSegment;
using hfpac::detail::kBlockSide;
using hfpac::detail::kMaskAll;
using hfpac::detail::kMaskBitmap;
using hfpac::detail::kMaskNone;
using hfpac::detail::kNodeSide;
using hfpac::detail::kRbucRootBits;

constexpr int kArea = hfpac::kAreaSide;                        // 16
constexpr int kThreads = kArea * kArea;                        // one thread per point
constexpr int kMaxAreaSegments = 16;                           // 4 x 4 segments of m = 5
constexpr int kMaxNodes = (kBlockSide / kNodeSide) * (kBlockSide / kNodeSide);  // 64
static_assert(kMaxNodes == 64 && kThreads >= kMaxNodes, "two warps scan a block's nodes");
static_assert(kBlockSide == 2 * kArea, "an area is a quarter of a 2DRBUC block");

__device__ __forceinline__ int bitLengthDev(uint32_t v) { return 32 - __clz(int(v)); }

__device__ __forceinline__ int nodeSpanDev(int extent, int node) {
  const int rest = extent - node * kNodeSide;
  return rest < kNodeSide ? rest : kNodeSide;
}

template <bool kSurface>
__device__ __forceinline__ uint16_t loadDst(const PatchDesc& p, uint16_t* linear,
                                            const SurfaceParams& surf, int x, int y) {
  if constexpr (kSurface) {
    unsigned short v;
    surf2Dread(&v, surf.s[p.surface], (p.dstX + x) * int(sizeof(unsigned short)), p.dstY + y);
    return v;
  } else {
    return linear[p.dstOffset + uint64_t(y) * p.dstPitch + uint64_t(x)];
  }
}

template <bool kSurface>
__device__ __forceinline__ void storeDst(const PatchDesc& p, uint16_t* linear,
                                         const SurfaceParams& surf, int x, int y, uint16_t v) {
  if constexpr (kSurface) {
    surf2Dwrite(static_cast<unsigned short>(v), surf.s[p.surface],
                (p.dstX + x) * int(sizeof(unsigned short)), p.dstY + y);
  } else {
    linear[p.dstOffset + uint64_t(y) * p.dstPitch + uint64_t(x)] = v;
  }
}

template <Mode kMode, bool kSurface>
__global__ void __launch_bounds__(kThreads)
    decodeRbucAreas(const PatchDesc* __restrict__ patches, const AreaDesc* __restrict__ areas,
                    const uint32_t* __restrict__ words, uint32_t* __restrict__ flags,
                    uint16_t* __restrict__ linear, const __grid_constant__ SurfaceParams surf) {
  constexpr bool kResiduals = kMode != Mode::L1;

  __shared__ SegmentControls nets[kMaxAreaSegments];
  __shared__ uint32_t nodeBit[kMaxNodes];  // first bit of each node's points (from the stream start)
  __shared__ uint8_t nodeWidth[kMaxNodes];
  __shared__ uint32_t firstWarpTotal;

  const AreaDesc ad = areas[blockIdx.x];
  const PatchDesc p = patches[ad.patch];
  const uint32_t* __restrict__ s = words + p.streamWord;

  const int t = int(threadIdx.x);
  const int lx = t & (kArea - 1), ly = t >> 4;
  const int x0 = int(ad.ax) * kArea, y0 = int(ad.ay) * kArea;
  const int aw = min(kArea, int(p.width) - x0), ah = min(kArea, int(p.height) - y0);
  const bool inside = lx < aw && ly < ah;
  const int x = x0 + lx, y = y0 + ly;

  // Layer 1 of a fully masked area is the masked value (no residuals to range-check).
  if (kMode == Mode::L1 && ad.maskCode == kMaskAll) {
    if (inside) storeDst<kSurface>(p, linear, surf, x, y, p.maskOut);
    return;
  }

  // 1. control nets (Refine of an unmasked area reads the prediction from the destination).
  const bool predict = kMode != Mode::Refine || ad.maskCode != kMaskNone;
  const int segLog = p.segLog;
  const int sx0 = min(x0 >> segLog, int(p.segX) - 1);
  const int sx1 = min((x0 + aw - 1) >> segLog, int(p.segX) - 1);
  const int sy0 = min(y0 >> segLog, int(p.segY) - 1);
  const int sy1 = min((y0 + ah - 1) >> segLog, int(p.segY) - 1);
  const int nsx = sx1 - sx0 + 1;
  if (predict && t < nsx * (sy1 - sy0 + 1))
    loadSegmentDev(p, s, sx0 + t % nsx, sy0 + t / nsx, nets[t]);

  // 2. the block's node widths and the first bit of every node (exclusive prefix sum of the
  //    node sizes over the block's nodes in raster order).
  const int bx0 = (int(ad.ax) >> 1) * kBlockSide, by0 = (int(ad.ay) >> 1) * kBlockSide;
  const int bw = min(kBlockSide, int(p.width) - bx0), bh = min(kBlockSide, int(p.height) - by0);
  const int nodesX = (bw + kNodeSide - 1) / kNodeSide;
  uint32_t size = 0, inclusive = 0;
  int width = 0;
  uint32_t dataBit = 0;
  if (kResiduals && t < kMaxNodes) {
    const int nodes = nodesX * ((bh + kNodeSide - 1) / kNodeSide);
    const int widthBits = bitLengthDev(fieldAt(s, ad.lowBit, kRbucRootBits));
    dataBit = ad.lowBit + uint32_t(kRbucRootBits) + uint32_t(nodes * widthBits);
    if (t < nodes) {
      width = int(fieldAt(s, ad.lowBit + uint32_t(kRbucRootBits + t * widthBits), widthBits));
      size = uint32_t(width * nodeSpanDev(bw, t % nodesX) * nodeSpanDev(bh, t / nodesX));
    }
    inclusive = size;
    const int lane = t & 31;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const uint32_t other = __shfl_up_sync(0xffffffffu, inclusive, unsigned(d));
      if (lane >= d) inclusive += other;
    }
    if (t == 31) firstWarpTotal = inclusive;
  }
  __syncthreads();  // nets, firstWarpTotal
  if (kResiduals && t < kMaxNodes) {
    nodeBit[t] = dataBit + inclusive - size + (t >= 32 ? firstWarpTotal : 0u);
    nodeWidth[t] = uint8_t(width);
  }
  __syncthreads();  // nodeBit, nodeWidth
  if (!inside) return;

  // 3. the point.
  int32_t v;
  if (predict) {
    const int i = min(x >> segLog, int(p.segX) - 1), j = min(y >> segLog, int(p.segY) - 1);
    v = evalSegment(nets[(j - sy0) * nsx + (i - sx0)], x - (i << segLog), y - (j << segLog), segLog);
  } else {
    v = int32_t(loadDst<kSurface>(p, linear, surf, x, y) ^ p.flip);
  }
  if constexpr (kResiduals) {
    const int bx = x - bx0, by = y - by0;
    const int ni = bx / kNodeSide, nj = by / kNodeSide;
    const int n = nj * nodesX + ni;
    const int w = nodeWidth[n];
    const uint32_t local = uint32_t((by % kNodeSide) * nodeSpanDev(bw, ni) + bx % kNodeSide);
    v += unzigzag(fieldAt(s, nodeBit[n] + uint32_t(local) * uint32_t(w), w));
    if (v < 0 || v > 65535) {
      atomicOr(flags + ad.patch, kFlagOutOfRange);
      v = v < 0 ? 0 : 65535;
    }
  }
  if (ad.maskCode == kMaskAll ||
      (ad.maskCode == kMaskBitmap && fieldAt(s, uint32_t(ad.maskBit) + uint32_t(ly * aw + lx), 1))) {
    storeDst<kSurface>(p, linear, surf, x, y, p.maskOut);
    return;
  }
  storeDst<kSurface>(p, linear, surf, x, y, uint16_t(uint16_t(v) ^ p.flip));
}

template <Mode kMode>
void launchRbucMode(const DecodeLaunch& l, const SurfaceParams& surf, cudaStream_t stream) {
  constexpr uint64_t kMaxGrid = 0x7fffffffull;  // grid x limit; larger batches go in pieces
  for (uint64_t first = 0; first < l.rbucAreaCount; first += kMaxGrid) {
    const uint64_t left = l.rbucAreaCount - first;
    const unsigned blocks = unsigned(left < kMaxGrid ? left : kMaxGrid);
    if (l.linear)
      decodeRbucAreas<kMode, false><<<blocks, kThreads, 0, stream>>>(
          l.patches, l.rbucAreas + first, l.words, l.flags, l.linear, surf);
    else
      decodeRbucAreas<kMode, true><<<blocks, kThreads, 0, stream>>>(
          l.patches, l.rbucAreas + first, l.words, l.flags, nullptr, surf);
    CUDA_CHECK(cudaGetLastError());
  }
}

}  // namespace

void launchDecodeRbuc(const DecodeLaunch& l, void* streamPtr) {
  if (l.rbucAreaCount == 0) return;
  const cudaStream_t stream = static_cast<cudaStream_t>(streamPtr);
  const SurfaceParams surf = surfaceParamsFor(l);
  switch (l.mode) {
    case Mode::L1: launchRbucMode<Mode::L1>(l, surf, stream); break;
    case Mode::L12: launchRbucMode<Mode::L12>(l, surf, stream); break;
    case Mode::All: launchRbucMode<Mode::All>(l, surf, stream); break;
    case Mode::Refine: launchRbucMode<Mode::Refine>(l, surf, stream); break;
  }
}

}  // namespace hfgpu::detail
