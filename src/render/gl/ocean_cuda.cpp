// ocean_cuda.cpp - the ocean's fields computed by CUDA straight into the GL texture (OceanFields
// in ocean_gl.h; issue 14): the GPU step of gpu/ocean_step.h on the layer's own CUDA stream,
// written through CUDA-GL interop (the texture is mapped for the step and unmapped before GL
// samples it, so the driver orders the two), every mip level in the step's last launch (no GL
// mipmap pass); two textures, so that CUDA writes one while GL draws from the other. Nothing
// crosses PCIe per frame. A parameter change makes the new spectrum on a helper thread
// (std::async) and installs it when ready; the old one animates meanwhile. Built with the cuda strategy (HF_HAVE_CUDA_OCEAN).
#include <glad/gl.h>
// After glad (which defines __gl_h_): cuda_gl_interop.h then does not pull in GL/gl.h.
#include <cuda_gl_interop.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

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
  CudaOceanFields(const OceanParams& params, const OceanSpectrum& spectrum) : updates_(params) {
    install(spectrum, params);  // CUDA errors throw std::runtime_error (the factory says why)
  }
  ~CudaOceanFields() override {
    CUDA_LOG(cudaStreamSynchronize(stream_.get()));
    for (Slot& slot : slots_) release(slot);
  }
  const char* name() const override { return "cuda"; }
  void setParams(const OceanParams& params) override { updates_.want(params); }
  std::string error() const override { return updates_.error(); }
  unsigned texture() const override { return slots_[front_].texture; }
  double patchMetres() const override { return patch_; }

  // Synchronous (tests, screenshots, the first frame): the front texture gets the fields of
  // `seconds` and is drawn at once. After a prepare() in this frame, the slot it wrote becomes
  // the front one: GL's draw waits for that step (ordered by the unmap), which ran
  // before GL had any of the frame's work. Without one, the texture written during the previous
  // frame becomes the front one (a frame late, like the CPU worker's) and the other one is
  // written for `seconds` while GL draws. CUDA never writes a texture GL has yet to sample.
  bool update(double seconds, bool synchronous) override {
    updates_.adopt(synchronous, [this](const OceanSpectrum& s, const OceanParams& p) { install(s, p); });
    if (synchronous || !slots_[front_].written) {
      write(slots_[front_], seconds);
      slots_[1 - front_].written = false;
      prepared_ = false;
      return true;
    }
    Slot& back = slots_[1 - front_];
    if (back.written) front_ = 1 - front_;
    slots_[1 - front_].written = false;
    if (!prepared_) write(slots_[1 - front_], seconds);
    prepared_ = false;
    return true;
  }

  // A frame whose ocean is not drawn (nothing of the terrain to draw) calls prepare() again
  // without update(): the back slot is simply written again.
  void prepare(double seconds) override {
    prepared_ = false;
    updates_.adopt(false, [this](const OceanSpectrum& s, const OceanParams& p) { install(s, p); });
    if (!slots_[front_].written) return;  // the first update() writes synchronously
    write(slots_[1 - front_], seconds);
    prepared_ = true;
  }

 private:
  struct Slot {
    unsigned texture = 0;
    cudaGraphicsResource_t resource = nullptr;
    cudaMipmappedArray_t mipArray = nullptr;  // the mapped texture's, for which `levels` were made
    std::vector<cudaSurfaceObject_t> levels;  // one surface per mip level
    bool written = false;  // holds fields not yet drawn from
  };

  // Maps the slot's texture, runs the step into it (every mip level), unmaps. A CUDA failure
  // leaves the slot not written and not mapped (GL may use it again), and throws.
  void write(Slot& slot, double seconds) {
    slot.written = false;
    CUDA_CHECK(cudaGraphicsMapResources(1, &slot.resource, stream_.get()));
    try {
      cudaMipmappedArray_t mip = nullptr;
      CUDA_CHECK(cudaGraphicsResourceGetMappedMipmappedArray(&mip, slot.resource));
      if (mip != slot.mipArray) {  // the same array map after map in practice: surfaces made once
        if (!slot.levels.empty()) CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
        destroySurfaces(slot);
        for (int l = 0; l < levels_; ++l) {
          cudaArray_t array = nullptr;
          CUDA_CHECK(cudaGetMipmappedArrayLevel(&array, mip, unsigned(l)));
          cudaResourceDesc r{};
          r.resType = cudaResourceTypeArray;
          r.res.array.array = array;
          cudaSurfaceObject_t surface = 0;
          CUDA_CHECK(cudaCreateSurfaceObject(&surface, &r));
          slot.levels.push_back(surface);
        }
        slot.mipArray = mip;
      }
      step_->writeSurfaceMips(seconds, slot.levels.data(), levels_, 0, stream_.get());
    } catch (...) {
      CUDA_LOG(cudaGraphicsUnmapResources(1, &slot.resource, stream_.get()));
      throw;
    }
    CUDA_CHECK(cudaGraphicsUnmapResources(1, &slot.resource, stream_.get()));
    slot.written = true;
  }

  static void destroySurfaces(Slot& slot) {
    for (cudaSurfaceObject_t s : slot.levels) CUDA_LOG(cudaDestroySurfaceObject(s));
    slot.levels.clear();
    slot.mipArray = nullptr;
  }

  static void release(Slot& slot) {
    destroySurfaces(slot);
    if (slot.resource) CUDA_LOG(cudaGraphicsUnregisterResource(slot.resource));
    if (slot.texture) glDeleteTextures(1, &slot.texture);
    slot = Slot{};
  }

  void install(const OceanSpectrum& s, const OceanParams& p) {
    if (step_) CUDA_CHECK(cudaStreamSynchronize(stream_.get()));  // the old step's work is done
    step_ = std::make_unique<hfgpu::OceanStep>(view(s), float(p.choppiness));
    patch_ = p.patchMetres;
    if (s.size == size_) return;
    for (Slot& slot : slots_) {
      release(slot);
      makeOceanFieldsTexture(slot.texture, s.size);
      const cudaError_t e = cudaGraphicsGLRegisterImage(&slot.resource, slot.texture, GL_TEXTURE_2D,
                                                        cudaGraphicsRegisterFlagsSurfaceLoadStore);
      if (e != cudaSuccess) {
        (void)cudaGetLastError();
        slot.resource = nullptr;
        throw std::runtime_error(std::string("cannot register the ocean texture with CUDA (") + cudaGetErrorName(e) +
                                 "; is the GL context on the CUDA device?)");
      }
    }
    size_ = s.size;
    levels_ = oceanFieldsLevels(size_);
    front_ = 0;
  }

  SpectrumUpdates updates_;
  hfgpu::Stream stream_;  // the layer's own stream
  std::unique_ptr<hfgpu::OceanStep> step_;
  Slot slots_[2];
  int front_ = 0;  // the slot GL draws from
  bool prepared_ = false;  // prepare() wrote the back slot for this frame's update()
  int levels_ = 0;         // the fields texture's mip levels
  int size_ = 0;
  double patch_ = 0;
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
