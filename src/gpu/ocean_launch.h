// ocean_launch.h - the launches of cuda/ocean.cu (internal: gpu/ocean_step.cpp).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace hfgpu::detail {

struct OceanSpectrumDevice {
  const float2* h0;
  const float *omega, *kx, *ky;
  uint32_t n;
  float choppiness;
};

// h(k, t) of every wavenumber, packed into the three inverse-FFT inputs (packed: 3 n^2 points).
void launchOceanSpectrum(const OceanSpectrumDevice& s, double seconds, float2* packed, cudaStream_t stream);
// The fields from the transformed arrays: surfaces (height may be 0) or device arrays.
void launchOceanWriteSurfaces(const float2* packed, uint32_t n, cudaSurfaceObject_t fields, cudaSurfaceObject_t height,
                              cudaStream_t stream);
void launchOceanWriteArrays(const float2* packed, uint32_t n, float4* fields, float* height, cudaStream_t stream);

// The fields' whole mip chain in one launch: levels[0] gets what launchOceanWriteSurfaces writes,
// level l (n >> l texels a side) the mean of each 2 x 2 texels of level l - 1, down to 1 x 1
// (levelCount = log2(n) + 1, n in 16..1024). `scratch` holds kOceanMipScratch float4 and
// `counter` one zeroed uint32 (left zeroed): the blocks' means of their 16 x 16 tiles, reduced
// by the block that finishes last.
constexpr int kOceanMaxLevels = 11;
constexpr size_t kOceanMipScratch = 64 * 64 + 32 * 32;
struct OceanMipSurfaces {
  cudaSurfaceObject_t level[kOceanMaxLevels];
  int count;
};
void launchOceanWriteMips(const float2* packed, uint32_t n, const OceanMipSurfaces& levels, cudaSurfaceObject_t height,
                          float4* scratch, uint32_t* counter, cudaStream_t stream);

}  // namespace hfgpu::detail
