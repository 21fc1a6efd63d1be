// ocean_step.h - the animated ocean's per-frame fields on the GPU (issue 14): the evaluation of
// hfr::OceanSimulation::evaluate (render/ocean/ocean.h, the CPU reference) - h(k, t) from the
// spectrum, the five real fields packed into three complex inverse 2D FFTs (gpu/fft.h) - with the
// results written as the texels the ocean shader samples. Kernels in cuda/ocean.cu.
//
//   hfr::OceanSpectrum s = hfr::makeOceanSpectrum(params);           // CPU, once per parameters
//   hfgpu::OceanStep step({s.size, (const float2*)s.h0.data(), s.omega.data(), s.kx.data(),
//                          s.ky.data()}, float(params.choppiness));  // uploads
//   step.writeSurfaces(seconds, fieldsSurface, heightSurface, stream); // every frame
//
// Contract:
// - size a power of two in 16..1024; the host arrays hold size^2 entries in FFT order (row = y
//   wavenumber index) and are only read by the constructor (a synchronous upload).
// - Per texel (x, y), row-major like OceanFrame: `fields` = (dh/dx, dh/dy, Dx, Dy) as float4,
//   `height` = h as float, in metres; the same values as the CPU path up to float rounding
//   (the time phase is reduced in double on both).
// - writeSurfaces writes 2D surfaces of size x size texels (RGBA32F, R32F; a 0 height surface
//   skips the height); writeSurfaceMips also the fields' mip levels below; writeArrays writes
//   device arrays (tests). Both only enqueue on `stream`;
//   one OceanStep serves one stream at a time (its FFT buffers are its own).
// - Bad arguments throw std::invalid_argument; CUDA errors std::runtime_error.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "gpu/cuda_util.h"

namespace hfgpu {

struct OceanSpectrumHost {
  int size = 0;
  const float2* h0 = nullptr;
  const float* omega = nullptr;
  const float* kx = nullptr;
  const float* ky = nullptr;
};

class OceanStep {
 public:
  OceanStep(const OceanSpectrumHost& spectrum, float choppiness);
  int size() const { return size_; }
  void writeSurfaces(double seconds, cudaSurfaceObject_t fields, cudaSurfaceObject_t height, cudaStream_t stream);
  // Like writeSurfaces, with the fields' whole mip chain: fieldLevels[l] is level l (size >> l
  // texels a side, levelCount = log2(size) + 1), each texel the mean of the 2 x 2 below it (GL's
  // box filter), made in the same launch: no mipmap pass is needed after it.
  void writeSurfaceMips(double seconds, const cudaSurfaceObject_t* fieldLevels, int levelCount,
                        cudaSurfaceObject_t height, cudaStream_t stream);
  void writeArrays(double seconds, float4* fields, float* height, cudaStream_t stream);

 private:
  void evaluate(double seconds, cudaStream_t stream);  // h(k, t) and the three inverse FFTs
  int size_ = 0;
  float choppiness_ = 1;
  DeviceBuffer<float2> h0_;
  DeviceBuffer<float> omega_, kx_, ky_;
  DeviceBuffer<float2> packed_;  // three size^2 arrays: h + i dh/dx, dh/dy + i Dx, Dy
  DeviceBuffer<float4> mipScratch_;     // writeSurfaceMips: the tiles' means
  DeviceBuffer<uint32_t> mipCounter_;   // writeSurfaceMips: blocks done (0 between launches)
};

}  // namespace hfgpu
