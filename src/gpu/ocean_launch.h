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

}  // namespace hfgpu::detail
