// ocean_step.cpp - see ocean_step.h; kernels in cuda/ocean.cu.
#include "gpu/ocean_step.h"

#include <stdexcept>
#include <string>

#include "gpu/fft.h"
#include "gpu/ocean_launch.h"

namespace hfgpu {

namespace {

template <typename T>
void upload(DeviceBuffer<T>& buffer, const T* host, size_t count) {
  buffer.allocate(count);
  CUDA_CHECK(cudaMemcpy(buffer.get(), host, count * sizeof(T), cudaMemcpyHostToDevice));
}

}  // namespace

OceanStep::OceanStep(const OceanSpectrumHost& s, float choppiness) : size_(s.size), choppiness_(choppiness) {
  if (s.size < 16 || s.size > 1024 || (s.size & (s.size - 1)) != 0)
    throw std::invalid_argument("hfgpu ocean: size " + std::to_string(s.size) + " is not a power of two in 16..1024");
  if (!s.h0 || !s.omega || !s.kx || !s.ky) throw std::invalid_argument("hfgpu ocean: null spectrum array");
  if (!(choppiness >= 0.0f && choppiness <= 4.0f)) throw std::invalid_argument("hfgpu ocean: choppiness must be 0..4");
  const size_t count = size_t(s.size) * size_t(s.size);
  upload(h0_, s.h0, count);
  upload(omega_, s.omega, count);
  upload(kx_, s.kx, count);
  upload(ky_, s.ky, count);
  packed_.allocate(3 * count);
  mipScratch_.allocate(detail::kOceanMipScratch);
  mipCounter_.allocate(1);
  CUDA_CHECK(cudaMemset(mipCounter_.get(), 0, sizeof(uint32_t)));
  // The uploads (pageable copies, maybe still under way when cudaMemcpy returns) and the zeroing
  // run on the legacy stream; the steps on the caller's (maybe non-blocking) one: finish them.
  CUDA_CHECK(cudaStreamSynchronize(nullptr));
}

void OceanStep::evaluate(double seconds, cudaStream_t stream) {
  const detail::OceanSpectrumDevice d{h0_.get(), omega_.get(), kx_.get(), ky_.get(), uint32_t(size_), choppiness_};
  detail::launchOceanSpectrum(d, seconds, packed_.get(), stream);
  fft2dC2CAsync(packed_.get(), packed_.get(), size_, size_, 3, FftSign::Inverse, stream);
}

void OceanStep::writeSurfaces(double seconds, cudaSurfaceObject_t fields, cudaSurfaceObject_t height,
                              cudaStream_t stream) {
  if (!fields) throw std::invalid_argument("hfgpu ocean: no fields surface");
  evaluate(seconds, stream);
  detail::launchOceanWriteSurfaces(packed_.get(), uint32_t(size_), fields, height, stream);
}

void OceanStep::writeSurfaceMips(double seconds, const cudaSurfaceObject_t* fieldLevels, int levelCount,
                                 cudaSurfaceObject_t height, cudaStream_t stream) {
  int levels = 1;
  while ((size_ >> levels) > 0) ++levels;
  if (!fieldLevels || levelCount != levels)
    throw std::invalid_argument("hfgpu ocean: " + std::to_string(levelCount) + " field levels for size " +
                                std::to_string(size_) + " (it has " + std::to_string(levels) + ")");
  detail::OceanMipSurfaces surfaces{};
  for (int l = 0; l < levels; ++l) {
    if (!fieldLevels[l]) throw std::invalid_argument("hfgpu ocean: no surface for field level " + std::to_string(l));
    surfaces.level[l] = fieldLevels[l];
  }
  surfaces.count = levels;
  evaluate(seconds, stream);
  detail::launchOceanWriteMips(packed_.get(), uint32_t(size_), surfaces, height, mipScratch_.get(), mipCounter_.get(),
                               stream);
}

void OceanStep::writeArrays(double seconds, float4* fields, float* height, cudaStream_t stream) {
  if (!fields) throw std::invalid_argument("hfgpu ocean: null fields array");
  evaluate(seconds, stream);
  detail::launchOceanWriteArrays(packed_.get(), uint32_t(size_), fields, height, stream);
}

}  // namespace hfgpu
