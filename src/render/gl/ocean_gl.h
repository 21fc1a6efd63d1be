// ocean_gl.h - the animated ocean drawn on the terrain's water (issue 14; internal to hf_render,
// docs/rendering.md section 5). Built when hf_ocean exists (FFTW): HF_HAVE_OCEAN.
//
// Where the water is: a coarse grid of the whole DEM (the seabed: one archive level decoded at
// start-up, at most ~1024 samples a side) marks water where a sample is at or below the water
// level, or nodata; a distance transform gives each water texel its distance to land, which
// tints the water lighter towards coasts (the terrain's depth test hides it under land above
// the level, so the coastline itself stays the terrain's). What it looks like: one quad at the
// water level, shaded per pixel from the ocean fields (render/ocean/ocean.h) in one RGBA32F
// texture, computed by an OceanWorker thread on the CPU and uploaded when a new frame is ready, or
// with the cuda height strategy written there by the GPU (OceanFields below). Drawn after the
// terrain, opaque, where the terrain shader flagged its fragments at or below the water (uWater;
// alpha, Renderer::drawOcean), so a flat sea at 0 m under water at 0 m cannot z-fight and the
// coastline is the terrain's own contour at the water level.
#pragma once

#include <array>
#include <chrono>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "render/ocean/ocean.h"

namespace hfr {

// The DEM's heights on a coarse grid: width x height samples, row 0 the north edge; sample
// (c, r) at world (c * step, originY - r * step) (the renderer's world frame); NaN = nodata.
struct Seabed {
  int width = 0, height = 0;
  double stepX = 1, stepY = 1, originY = 0;
  std::vector<float> metres;
};

// Where the fields texture comes from (one per OceanLayer, render thread only): GL compute
// shaders in the drawing context (ocean_compute.cpp, the default: the FFT in shared memory, four
// dispatches a frame, nothing crosses PCIe), the CPU worker (every build: OceanWorker + an upload
// per new frame) or CUDA (ocean_cuda.cpp: the GPU step of gpu/ocean_step.h on its own stream,
// writing into the texture through CUDA-GL interop). All give the same fields for the same time
// up to float rounding (tests).
class OceanFields {
 public:
  virtual ~OceanFields() = default;
  virtual const char* name() const = 0;  // "gl" | "cpu" | "cuda"
  // Applied from the next update; a new spectrum is made off the render thread and replaces
  // the old one when ready (synchronous updates wait for it).
  virtual void setParams(const OceanParams& params) = 0;
  virtual std::string error() const = 0;  // the last parameter error ("" = none)
  // Brings the texture to `seconds`: exactly when `synchronous`, else the newest fields ready
  // (a frame late at most). False while there are none yet.
  virtual bool update(double seconds, bool synchronous) = 0;
  // Optional, early in a frame, before GL is given the frame's work: starts the fields of
  // `seconds` that this frame's update() then shows (not a frame late). The CUDA fields run
  // their step here, while the render thread plans the frame and the GPU has no GL work
  // queued to switch away from; the CPU worker ignores it.
  virtual void prepare(double /*seconds*/) {}
  virtual unsigned texture() const = 0;  // RGBA32F (dh/dx, dh/dy, Dx, Dy), mipmapped, repeating
  virtual double patchMetres() const = 0;
};

// The GPU fields' parameter changes (render thread only): a new spectrum is made on a helper
// thread (std::async) and installed when ready, while the old one animates on.
class SpectrumUpdates {
 public:
  explicit SpectrumUpdates(const OceanParams& params) : wanted_(params), built_(params) {}
  ~SpectrumUpdates() {
    if (pending_.valid()) pending_.wait();
  }
  SpectrumUpdates(const SpectrumUpdates&) = delete;
  SpectrumUpdates& operator=(const SpectrumUpdates&) = delete;
  void want(const OceanParams& params) { wanted_ = params; }
  const std::string& error() const { return error_; }  // the last bad parameter set ("" = none)
  // Calls install(spectrum, params) once the spectrum of the wanted parameters is ready (waiting
  // for it when `synchronous`). A bad set (std::invalid_argument from the spectrum or from
  // install) keeps the old spectrum, sets error() and is not retried until the parameters change.
  template <class Install>
  void adopt(bool synchronous, Install&& install) {
    if (!pending_.valid() && !sameOceanParams(wanted_, built_)) {
      pendingParams_ = wanted_;
      built_ = wanted_;
      pending_ = std::async(std::launch::async, [p = wanted_] { return makeOceanSpectrum(p); });
    }
    if (!pending_.valid()) return;
    if (!synchronous && pending_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return;
    try {
      const OceanSpectrum s = pending_.get();
      install(s, pendingParams_);
      error_.clear();
    } catch (const std::invalid_argument& e) {
      error_ = e.what();
    }
  }

 private:
  OceanParams wanted_, built_, pendingParams_;
  std::future<OceanSpectrum> pending_;
  std::string error_;
};

// Throws std::invalid_argument for bad parameters.
std::unique_ptr<OceanFields> makeCpuOceanFields(const OceanParams& params);
// Needs a current OpenGL 4.5 context. nullptr and a one-line `note` when the compute shaders
// (shaderDir's ocean_*.comp) do not build. Throws std::invalid_argument for bad parameters.
std::unique_ptr<OceanFields> makeGlOceanFields(const std::string& shaderDir,
                                               const OceanParams& params, std::string& note);
#ifdef HF_HAVE_CUDA_OCEAN
// nullptr and a one-line `note` when CUDA cannot serve this context (no device, no interop).
// Throws std::invalid_argument for bad parameters.
std::unique_ptr<OceanFields> makeCudaOceanFields(const OceanParams& params, std::string& note);
#endif
// Allocates (or reallocates) `texture` as an n x n RGBA32F mipmapped repeating texture with
// oceanFieldsLevels(n) levels (n a power of two: log2(n) + 1, down to 1 x 1).
void makeOceanFieldsTexture(unsigned& texture, int n);
int oceanFieldsLevels(int n);

struct OceanDraw {
  std::array<float, 16> viewProj{};
  std::array<float, 3> eye{}, fogColor{}, lightDir{};
  float fogDistance = 0;
  double extentX = 1, extentY = 1;
  double exaggeration = 1;
  double seconds = 0;
  bool synchronous = false;  // wait for the fields of `seconds` (tests, screenshots)
};

class OceanLayer {
 public:
  // Needs a current context. nullptr with an empty error when there is no water at `level`;
  // nullptr with an error when the shaders or the parameters are bad. `device` "gl" computes
  // the fields with GL compute shaders, "cuda" with CUDA where this build and machine can; when
  // that fails (a note says why), and for "cpu", they come from the CPU worker.
  static std::unique_ptr<OceanLayer> create(const std::string& shaderDir, const Seabed& seabed,
                                            const OceanParams& params, double level, const std::string& device,
                                            std::string& error, std::string& note);
  ~OceanLayer();
  OceanLayer(const OceanLayer&) = delete;
  OceanLayer& operator=(const OceanLayer&) = delete;

  void setParams(const OceanParams& params);  // applied from the next fields
  std::string error() const;                  // the last parameter error ("" = none)
  double level() const { return level_; }
  const char* device() const { return fields_->name(); }
  // OceanFields::prepare, early in a frame (not with synchronous draws). A CUDA failure hands
  // the fields to the CPU worker at once, with a note, as draw() does.
  void prepare(double seconds);
  void draw(const OceanDraw& d);

 private:
  OceanLayer() = default;
  void fallBackToCpu(const std::runtime_error& e);  // a CUDA failure mid-flight
  std::unique_ptr<OceanFields> fields_;
  OceanParams params_;
  double level_ = 0;
  int seabedW_ = 0, seabedH_ = 0;
  double stepX_ = 1, stepY_ = 1, originY_ = 0;
  unsigned program_ = 0, vao_ = 0, shore_ = 0;
  int uViewProj_ = -1, uPlane_ = -1, uEye_ = -1, uFields_ = -1, uShore_ = -1, uShoreXform_ = -1,
      uShoreFade_ = -1, uPatch_ = -1, uChop_ = -1, uFogColor_ = -1, uFogDistance_ = -1, uLightDir_ = -1;
};

// The shore distances of a seabed at `level` (texels to the nearest land sample; 0 on land;
// chamfer 3-4 transform). Empty when no sample is water. GL-free (tests).
std::vector<float> shoreDistance(const Seabed& seabed, double level);

}  // namespace hfr
