// decode.cu - the batched HFPaC decode kernel (docs/format.md; host side: src/gpu/decoder.cpp).
//
// One thread block per 16 x 16 area of any patch in the batch (AreaDesc -> PatchDesc), one
// thread per point. Per block:
//   1. the (at most 4 x 4) segments the area touches: their 3 x 3 control nets are built once
//      into shared memory by the first threads (the same formulas as layout.h's loadSegment);
//   2. layers 2+: the area's prominent entries are scattered into a 16 x 16 table of
//      corrections in shared memory (no per-point search);
//   3. layer 3: the area's low fields are one contiguous run of words; the block loads them
//      coalesced into shared memory and every thread cuts its b-bit field out of (at most) two
//      words.
// Then every thread evaluates its point with layout.h's evalSegment (the exact integer
// arithmetic the CPU decoder uses), adds the residual, applies the mask / clamp / signed flip
// and stores 16 bits (coalesced rows of 16 samples).
//
// The host validated every stream (codec/stream_index.h) before any AreaDesc was written, so
// every field read here lies inside its section. Values outside 0..65535 at the lossless layer
// (only corrupt streams produce them) are clamped and flagged per patch (kFlagOutOfRange);
// the host turns the flag into hfpac::Status::OutOfRange.
#include <cuda_runtime.h>

#include <cstdint>

#include "codec/layout.h"
#include "gpu/cuda_util.h"
#include "gpu/decode_desc.h"

namespace hfgpu::detail {
namespace {

using hfpac::detail::SegmentControls;
using hfpac::detail::centreBase;
using hfpac::detail::edgeFromOffset;
using hfpac::detail::evalSegment;
using hfpac::detail::halfStep;

constexpr int kArea = hfpac::kAreaSide;       // 16
constexpr int kThreads = kArea * kArea;       // one thread per point of an area
constexpr int kMaxAreaSegments = 16;          // 4 x 4 segments of m = 5 touch one area
constexpr int kMaxLowWords = (kThreads * hfpac::kMaxBits) / 32 + 1;  // 129

struct SurfaceParams {
  cudaSurfaceObject_t s[kMaxSurfaces];
};

__device__ __forceinline__ int32_t unzigzag(uint32_t z) { return int32_t(z >> 1) ^ -int32_t(z & 1); }

// A field of `bits` (0..20) bits at bit `bit` of `w`: one aligned 32-bit load, two when the
// field crosses a word boundary (the second word then exists: the field ends inside it).
__device__ __forceinline__ uint32_t fieldAt(const uint32_t* __restrict__ w, uint64_t bit, int bits) {
  if (bits == 0) return 0;
  const uint64_t i = bit >> 5;
  const int sh = int(bit & 31);
  uint32_t v = __ldg(w + i) >> sh;
  if (sh + bits > 32) v |= __ldg(w + i + 1) << (32 - sh);
  return v & ((1u << bits) - 1u);
}

// The same, from a block's shared copy of a word run.
__device__ __forceinline__ uint32_t sharedField(const uint32_t* w, uint32_t bit, int bits) {
  const uint32_t i = bit >> 5;
  const int sh = int(bit & 31);
  uint32_t v = w[i] >> sh;
  if (sh + bits > 32) v |= w[i + 1] << (32 - sh);
  return v & ((1u << bits) - 1u);
}

// layout.h's loadSegment, reading the stream's words directly (section A starts at bit 256).
__device__ void loadSegmentDev(const PatchDesc& p, const uint32_t* __restrict__ s, int sx, int sy,
                               SegmentControls& c) {
  const int cb = p.cornerBits, eb = p.edgeBits, zb = p.centreBits;
  const uint64_t cw = uint64_t(p.segX) + 1;
  const uint64_t a0 = uint64_t(hfpac::kHeaderBytes) * 8;
  auto corner = [&](int i, int j) {
    return int32_t(p.base) + int32_t(fieldAt(s, a0 + (uint64_t(j) * cw + i) * cb, cb));
  };
  c.p[0][0] = corner(sx, sy);
  c.p[0][2] = corner(sx + 1, sy);
  c.p[2][0] = corner(sx, sy + 1);
  c.p[2][2] = corner(sx + 1, sy + 1);
  auto hedge = [&](int i, int j) {
    return unzigzag(fieldAt(s, p.hedgeBit + (uint64_t(j) * p.segX + i) * eb, eb));
  };
  auto vedge = [&](int i, int j) {
    return unzigzag(fieldAt(s, p.vedgeBit + (uint64_t(j) * cw + i) * eb, eb));
  };
  c.p[0][1] = edgeFromOffset(c.p[0][0], c.p[0][2], hedge(sx, sy));
  c.p[2][1] = edgeFromOffset(c.p[2][0], c.p[2][2], hedge(sx, sy + 1));
  c.p[1][0] = edgeFromOffset(c.p[0][0], c.p[2][0], vedge(sx, sy));
  c.p[1][2] = edgeFromOffset(c.p[0][2], c.p[2][2], vedge(sx + 1, sy));
  c.p[1][1] = centreBase(c) +
              unzigzag(fieldAt(s, p.centreBit + (uint64_t(sy) * p.segX + sx) * zb, zb));
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
    decodeAreas(const PatchDesc* __restrict__ patches, const AreaDesc* __restrict__ areas,
                const uint32_t* __restrict__ words, uint32_t* __restrict__ flags,
                uint16_t* __restrict__ linear, const __grid_constant__ SurfaceParams surf) {
  constexpr bool kResiduals = kMode != Mode::L1;
  constexpr bool kLows = kMode == Mode::All || kMode == Mode::Refine;

  __shared__ SegmentControls nets[kMaxAreaSegments];
  __shared__ int32_t corr[kThreads];
  __shared__ uint32_t lows[kMaxLowWords + 1];

  const AreaDesc ad = areas[blockIdx.x];
  const PatchDesc& pg = patches[ad.patch];
  const PatchDesc p = pg;
  const uint32_t* __restrict__ s = words + p.streamWord;

  const int t = int(threadIdx.x);
  const int lx = t & (kArea - 1), ly = t >> 4;
  const int x0 = int(ad.ax) * kArea, y0 = int(ad.ay) * kArea;
  const int aw = min(kArea, int(p.width) - x0), ah = min(kArea, int(p.height) - y0);
  const bool inside = lx < aw && ly < ah;
  const int x = x0 + lx, y = y0 + ly;

  if (p.kind == kKindFlat) {
    if (inside) storeDst<kSurface>(p, linear, surf, x, y, uint16_t(p.base ^ p.flip));
    return;
  }
  if (p.kind == kKindStored) {
    // Every layer of a stored patch is exact (refine rewrites the same values).
    if (inside) {
      const uint64_t bit = ad.lowBit + (uint64_t(y) * p.width + uint64_t(x)) * hfpac::kMaxBits;
      storeDst<kSurface>(p, linear, surf, x, y, uint16_t(fieldAt(s, bit, hfpac::kMaxBits) ^ p.flip));
    }
    return;
  }
  if (ad.maskCode == hfpac::detail::kMaskAll) {
    if (inside) storeDst<kSurface>(p, linear, surf, x, y, p.maskOut);
    return;
  }

  const int segLog = p.segLog;
  const int sx0 = min(x0 >> segLog, int(p.segX) - 1), sx1 = min((x0 + aw - 1) >> segLog, int(p.segX) - 1);
  const int sy0 = min(y0 >> segLog, int(p.segY) - 1), sy1 = min((y0 + ah - 1) >> segLog, int(p.segY) - 1);
  const int nsx = sx1 - sx0 + 1;
  const int b = ad.bits;
  const int points = aw * ah;

  // 1. control nets (not needed for refine: the destination holds the layer-1 prediction).
  if constexpr (kMode != Mode::Refine) {
    if (t < nsx * (sy1 - sy0 + 1)) loadSegmentDev(p, s, sx0 + t % nsx, sy0 + t / nsx, nets[t]);
  }
  // 2. prominent corrections, saturated to +-2^18: a valid stream has |high * 2^b| <= 2^17, and
  //    with |P|, |low - half| < 2^16 the clamped result is the same as with the exact value.
  const bool hasCorr = kResiduals && ad.count > 0;
  if (hasCorr) {
    corr[t] = 0;
    __syncthreads();
    if (t < ad.count) {
      const uint8_t pos = reinterpret_cast<const uint8_t*>(s)[ad.posByte + uint32_t(t)];
      const int32_t high =
          unzigzag(fieldAt(s, uint64_t(ad.highBit) + uint64_t(t) * p.highBits, p.highBits) + 1u);
      int64_t c = int64_t(high) * (int64_t(1) << b);
      constexpr int64_t kSat = int64_t(1) << 18;
      c = c < -kSat ? -kSat : (c > kSat ? kSat : c);
      corr[pos] = int32_t(c);
    }
  }
  // 3. the area's low fields, one coalesced run of words.
  uint32_t lowShift = 0;
  if (kLows && b > 0) {
    const uint32_t firstWord = ad.lowBit >> 5;
    const uint32_t lastWord = (ad.lowBit + uint32_t(points * b) - 1u) >> 5;
    lowShift = ad.lowBit & 31u;
    for (uint32_t w = uint32_t(t); w <= lastWord - firstWord; w += kThreads)
      lows[w] = __ldg(s + firstWord + w);
  }
  __syncthreads();
  if (!inside) return;

  const int index = ly * aw + lx;  // raster order inside the area (layer 3, mask bitmap)
  if (ad.maskCode == hfpac::detail::kMaskBitmap && fieldAt(s, uint64_t(ad.maskBit) + index, 1)) {
    storeDst<kSurface>(p, linear, surf, x, y, p.maskOut);
    return;
  }
  int32_t v;
  if constexpr (kMode == Mode::Refine) {
    v = int32_t(loadDst<kSurface>(p, linear, surf, x, y) ^ p.flip);
  } else {
    const int i = min(x >> segLog, int(p.segX) - 1), j = min(y >> segLog, int(p.segY) - 1);
    v = evalSegment(nets[(j - sy0) * nsx + (i - sx0)], x - (i << segLog), y - (j << segLog), segLog);
  }
  if (hasCorr) v += corr[ly * kArea + lx];
  if constexpr (kLows) {
    if (b > 0) v += int32_t(sharedField(lows, lowShift + uint32_t(index * b), b)) - halfStep(b);
  }
  if (v < 0 || v > 65535) {
    if constexpr (kLows) atomicOr(flags + ad.patch, kFlagOutOfRange);
    v = v < 0 ? 0 : 65535;
  }
  storeDst<kSurface>(p, linear, surf, x, y, uint16_t(uint16_t(v) ^ p.flip));
}

template <Mode kMode>
void launchMode(const DecodeLaunch& l, const SurfaceParams& surf, cudaStream_t stream) {
  // Grid x holds up to 2^31 - 1 blocks; larger batches go in pieces.
  constexpr uint64_t kMaxGrid = 0x7fffffffull;
  for (uint64_t first = 0; first < l.areaCount; first += kMaxGrid) {
    const unsigned blocks = unsigned(l.areaCount - first < kMaxGrid ? l.areaCount - first : kMaxGrid);
    if (l.linear)
      decodeAreas<kMode, false><<<blocks, kThreads, 0, stream>>>(l.patches, l.areas + first, l.words,
                                                                 l.flags, l.linear, surf);
    else
      decodeAreas<kMode, true><<<blocks, kThreads, 0, stream>>>(l.patches, l.areas + first, l.words,
                                                                l.flags, nullptr, surf);
    CUDA_CHECK(cudaGetLastError());
  }
}

}  // namespace

void launchDecode(const DecodeLaunch& l, void* streamPtr) {
  if (l.areaCount == 0) return;
  const cudaStream_t stream = static_cast<cudaStream_t>(streamPtr);
  SurfaceParams surf{};
  if (!l.linear) {
    if (l.surfaceCount < 0 || l.surfaceCount > kMaxSurfaces)
      throw std::invalid_argument("hfgpu: too many surfaces for one decode launch");
    for (int i = 0; i < l.surfaceCount; ++i) surf.s[i] = l.surfaces[i];
  }
  switch (l.mode) {
    case Mode::L1: launchMode<Mode::L1>(l, surf, stream); break;
    case Mode::L12: launchMode<Mode::L12>(l, surf, stream); break;
    case Mode::All: launchMode<Mode::All>(l, surf, stream); break;
    case Mode::Refine: launchMode<Mode::Refine>(l, surf, stream); break;
  }
}

}  // namespace hfgpu::detail
