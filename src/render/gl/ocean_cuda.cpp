// ocean_cuda.cpp - the ocean's fields computed by CUDA straight into the GL texture (OceanFields
// in ocean_gl.h; issue 14): the GPU step of gpu/ocean_step.h on the layer's own CUDA stream,
// written through CUDA-GL interop (the texture is mapped for the step and unmapped before GL
// samples it, so the driver orders the two), then mipmapped by GL. Nothing crosses PCIe per
// frame. A parameter change makes the new spectrum on a helper thread (std::async) and installs
// it when ready; the old one animates meanwhile. Built with the cuda strategy (HF_HAVE_CUDA_OCEAN).
#include <glad/gl.h>
// After glad (which defines __gl_h_): cuda_gl_interop.h then does not pull in GL/gl.h.
#include <cuda_gl_interop.h>

#include <chrono>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>

#include "gpu/cuda_util.h"
#include "gpu/ocean_step.h"
#include "render/gl/ocean_gl.h"

namespace hfr {

namespace {

hfgpu::OceanSpectrumHost view(const OceanSpectrum& s) {
  return {s.size, reinterpret_cast<const float2*>(s.h0.data()), s.omega.data(), s.kx.data(), s.ky.data()};
}

class CudaOceanFields final : public OceanFields {
 public:
  CudaOceanFields(const OceanParams& params, const OceanSpectrum& spectrum) : wanted_(params), built_(params) {
    install(spectrum, params);  // CUDA errors throw std::runtime_error (the factory says why)
  }
  ~CudaOceanFields() override {
    if (pending_.valid()) pending_.wait();
    CUDA_LOG(cudaStreamSynchronize(stream_.get()));
    if (surface_) CUDA_LOG(cudaDestroySurfaceObject(surface_));
    if (resource_) CUDA_LOG(cudaGraphicsUnregisterResource(resource_));
    if (texture_) glDeleteTextures(1, &texture_);
  }
  const char* name() const override { return "cuda"; }
  void setParams(const OceanParams& params) override { wanted_ = params; }
  std::string error() const override { return error_; }
  unsigned texture() const override { return texture_; }
  double patchMetres() const override { return patch_; }

  bool update(double seconds, bool synchronous) override {
    adoptSpectrum(synchronous);
    CUDA_CHECK(cudaGraphicsMapResources(1, &resource_, stream_.get()));
    cudaArray_t array = nullptr;
    CUDA_CHECK(cudaGraphicsSubResourceGetMappedArray(&array, resource_, 0, 0));
    if (array != surfaceArray_) {  // the same array map after map in practice: one surface object
      if (surface_) {
        CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
        CUDA_CHECK(cudaDestroySurfaceObject(surface_));
      }
      cudaResourceDesc r{};
      r.resType = cudaResourceTypeArray;
      r.res.array.array = array;
      CUDA_CHECK(cudaCreateSurfaceObject(&surface_, &r));
      surfaceArray_ = array;
    }
    step_->writeSurfaces(seconds, surface_, 0, stream_.get());
    CUDA_CHECK(cudaGraphicsUnmapResources(1, &resource_, stream_.get()));
    glGenerateTextureMipmap(texture_);
    return true;
  }

 private:
  // A new spectrum for changed parameters: made off the render thread, installed when ready (or
  // at once when the update is synchronous).
  void adoptSpectrum(bool synchronous) {
    if (!pending_.valid() && !sameOceanParams(wanted_, built_)) {
      pendingParams_ = wanted_;
      built_ = wanted_;  // a bad set is not retried until the parameters change again
      pending_ = std::async(std::launch::async, [p = wanted_] { return makeOceanSpectrum(p); });
    }
    if (!pending_.valid()) return;
    if (!synchronous && pending_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return;
    try {
      const OceanSpectrum s = pending_.get();
      install(s, pendingParams_);
      error_.clear();
    } catch (const std::invalid_argument& e) {
      error_ = e.what();  // the previous spectrum stays
    }
  }

  void install(const OceanSpectrum& s, const OceanParams& p) {
    if (step_) CUDA_CHECK(cudaStreamSynchronize(stream_.get()));  // the old step's work is done
    step_ = std::make_unique<hfgpu::OceanStep>(view(s), float(p.choppiness));
    patch_ = p.patchMetres;
    if (s.size == size_) return;
    if (surface_) CUDA_CHECK(cudaDestroySurfaceObject(surface_));
    surface_ = 0;
    surfaceArray_ = nullptr;
    if (resource_) CUDA_CHECK(cudaGraphicsUnregisterResource(resource_));
    resource_ = nullptr;
    makeOceanFieldsTexture(texture_, s.size);
    size_ = s.size;
    const cudaError_t e =
        cudaGraphicsGLRegisterImage(&resource_, texture_, GL_TEXTURE_2D, cudaGraphicsRegisterFlagsSurfaceLoadStore);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      resource_ = nullptr;
      throw std::runtime_error(std::string("cannot register the ocean texture with CUDA (") + cudaGetErrorName(e) +
                               "; is the GL context on the CUDA device?)");
    }
  }

  OceanParams wanted_, built_, pendingParams_;
  std::future<OceanSpectrum> pending_;
  std::string error_;
  hfgpu::Stream stream_;  // the layer's own stream
  std::unique_ptr<hfgpu::OceanStep> step_;
  unsigned texture_ = 0;
  int size_ = 0;
  double patch_ = 0;
  cudaGraphicsResource_t resource_ = nullptr;
  cudaArray_t surfaceArray_ = nullptr;
  cudaSurfaceObject_t surface_ = 0;
};

}  // namespace

std::unique_ptr<OceanFields> makeCudaOceanFields(const OceanParams& params, std::string& note) {
  note.clear();
  const OceanSpectrum spectrum = makeOceanSpectrum(params);  // bad parameters throw invalid_argument
  if (hfgpu::cudaDeviceCountOrZero() == 0) {
    note = "no CUDA device";
    return nullptr;
  }
  try {
    return std::make_unique<CudaOceanFields>(params, spectrum);
  } catch (const std::runtime_error& e) {
    note = e.what();
    return nullptr;
  }
}

}  // namespace hfr
