// ocean_gl.h - the animated ocean drawn on the terrain's water (issue 14; internal to hf_render,
// docs/rendering.md section 5). Built when hf_ocean exists (FFTW): HF_HAVE_OCEAN.
//
// Where the water is: a coarse grid of the whole DEM (the seabed: one archive level decoded at
// start-up, at most ~1024 samples a side) marks water where a sample is at or below the water
// level, or nodata; a distance transform gives each water texel its distance to land, which
// tints the water lighter towards coasts (the terrain's depth test hides it under land above
// the level, so the coastline itself stays the terrain's). What it looks like: one quad at the water
// level, shaded per pixel from the ocean fields (render/ocean/ocean.h, computed by an
// OceanWorker thread on the CPU, uploaded as one RGBA32F texture when a new frame is ready).
// Drawn after the terrain, opaque; the terrain shader leaves out every fragment at or below the
// water (uWater), so a flat sea at 0 m under water at 0 m cannot z-fight and the coastline is
// the terrain's own contour at the water level.
#pragma once

#include <array>
#include <memory>
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
  // nullptr with an error when the shaders or the parameters are bad.
  static std::unique_ptr<OceanLayer> create(const std::string& shaderDir, const Seabed& seabed,
                                            const OceanParams& params, double level, std::string& error);
  ~OceanLayer();
  OceanLayer(const OceanLayer&) = delete;
  OceanLayer& operator=(const OceanLayer&) = delete;

  void setParams(const OceanParams& params);  // applied by the worker from its next frame
  std::string error() const;                  // the worker's last parameter error ("" = none)
  double level() const { return level_; }
  void draw(const OceanDraw& d);

 private:
  OceanLayer() = default;
  std::unique_ptr<OceanWorker> worker_;
  OceanFrame frame_;
  std::vector<float> upload_;  // the fields interleaved for the texture (kept between frames)
  OceanParams params_;
  double level_ = 0;
  int seabedW_ = 0, seabedH_ = 0;
  double stepX_ = 1, stepY_ = 1, originY_ = 0;
  unsigned program_ = 0, vao_ = 0, fields_ = 0, shore_ = 0;
  int fieldsSize_ = 0;
  int uViewProj_ = -1, uPlane_ = -1, uEye_ = -1, uFields_ = -1, uShore_ = -1, uShoreXform_ = -1,
      uShoreFade_ = -1, uPatch_ = -1, uChop_ = -1, uFogColor_ = -1, uFogDistance_ = -1, uLightDir_ = -1;
};

// The shore distances of a seabed at `level` (texels to the nearest land sample; 0 on land;
// chamfer 3-4 transform). Empty when no sample is water. GL-free (tests).
std::vector<float> shoreDistance(const Seabed& seabed, double level);

}  // namespace hfr
