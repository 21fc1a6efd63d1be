// decode_device.cuh - device helpers shared by the decode kernels (decode.cu: layered
// coding, decode_rbuc.cu: 2DRBUC), and the host-side packing of surface objects into a launch.
// Bit offsets are 32-bit: decoder.cpp refuses streams of 512 MiB or more.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>

#include "codec/layout.h"
#include "gpu/decode_desc.h"

namespace hfgpu::detail {

// Surface objects of one launch, passed by value as a __grid_constant__ kernel parameter.
struct SurfaceParams {
  cudaSurfaceObject_t s[kMaxSurfaces];
};

// The launch's surfaces (linear launches leave them empty).
inline SurfaceParams surfaceParamsFor(const DecodeLaunch& l) {
  SurfaceParams surf{};
  if (!l.linear) {
    if (l.surfaceCount < 0 || l.surfaceCount > kMaxSurfaces)
      throw std::invalid_argument("hfgpu: too many surfaces for one decode launch");
    for (int i = 0; i < l.surfaceCount; ++i) surf.s[i] = l.surfaces[i];
  }
  return surf;
}

using hfpac::detail::SegmentControls;
using hfpac::detail::centreBase;
using hfpac::detail::edgeFromOffset;

__device__ __forceinline__ int32_t unzigzag(uint32_t z) { return int32_t(z >> 1) ^ -int32_t(z & 1); }

// A field of `bits` (0..20) bits at bit `bit` of `w`: one aligned 32-bit load, two when the
// field crosses a word boundary (the second word then exists: the field ends inside it). Bit
// offsets inside one stream fit in 32 bits (streams are below 512 MiB, decoder.cpp).
__device__ __forceinline__ uint32_t fieldAt(const uint32_t* __restrict__ w, uint32_t bit, int bits) {
  if (bits == 0) return 0;
  const uint32_t i = bit >> 5;
  const int sh = int(bit & 31);
  uint32_t v = __ldg(w + i) >> sh;
  if (sh + bits > 32) v |= __ldg(w + i + 1) << (32 - sh);
  return v & ((1u << bits) - 1u);
}

// The same from a shared copy of a word run whose word after the last field exists (it may hold
// anything: the mask drops its bits). `mask` = 2^bits - 1.
__device__ __forceinline__ uint32_t sharedField(const uint32_t* w, uint32_t bit, uint32_t mask) {
  const uint32_t i = bit >> 5;
  return __funnelshift_r(w[i], w[i + 1], bit & 31u) & mask;
}

// layout.h's loadSegment, reading the stream's words directly (section A starts at bit 256).
inline __device__ void loadSegmentDev(const PatchDesc& p, const uint32_t* __restrict__ s, int sx, int sy,
                               SegmentControls& c) {
  const int cb = p.cornerBits, eb = p.edgeBits, zb = p.centreBits;
  const uint32_t cw = uint32_t(p.segX) + 1;
  constexpr uint32_t a0 = uint32_t(hfpac::kHeaderBytes) * 8;
  auto corner = [&](int i, int j) {
    return int32_t(p.base) + int32_t(fieldAt(s, a0 + (uint32_t(j) * cw + uint32_t(i)) * uint32_t(cb), cb));
  };
  c.p[0][0] = corner(sx, sy);
  c.p[0][2] = corner(sx + 1, sy);
  c.p[2][0] = corner(sx, sy + 1);
  c.p[2][2] = corner(sx + 1, sy + 1);
  auto hedge = [&](int i, int j) {
    return unzigzag(fieldAt(s, p.hedgeBit + (uint32_t(j) * p.segX + uint32_t(i)) * uint32_t(eb), eb));
  };
  auto vedge = [&](int i, int j) {
    return unzigzag(fieldAt(s, p.vedgeBit + (uint32_t(j) * cw + uint32_t(i)) * uint32_t(eb), eb));
  };
  c.p[0][1] = edgeFromOffset(c.p[0][0], c.p[0][2], hedge(sx, sy));
  c.p[2][1] = edgeFromOffset(c.p[2][0], c.p[2][2], hedge(sx, sy + 1));
  c.p[1][0] = edgeFromOffset(c.p[0][0], c.p[2][0], vedge(sx, sy));
  c.p[1][2] = edgeFromOffset(c.p[0][2], c.p[2][2], vedge(sx + 1, sy));
  c.p[1][1] = centreBase(c) +
              unzigzag(fieldAt(s, p.centreBit + (uint32_t(sy) * p.segX + uint32_t(sx)) * uint32_t(zb), zb));
}

}  // namespace hfgpu::detail
