// measure_tool.h - the viewer's measure tool (issue 15): M (or the panel's checkbox) turns it on;
// two clicks on the terrain set the ends of a line (a third starts a new one); the panel shows
// the horizontal and 3D distances, the height difference and a height profile along the line,
// and the line is drawn over the view. The arithmetic is render/measure/measure.h's (geodesics on
// the ellipsoid for geographic archives); the clicked points come from the renderer's picking.
#pragma once

#include <array>
#include <memory>
#include <string>

#include "archive/archive.h"
#include "render/gl/renderer.h"
#include "render/measure/measure.h"

class MeasureTool {
 public:
  explicit MeasureTool(const hfa::ArchiveReader& archive);
  bool active = false;
  // A click on the terrain at `picked` (world, z exaggerated as Renderer::pick returns it).
  // True when it completed a measurement (summary() then describes it).
  bool click(const std::array<double, 3>& picked, double exaggeration);
  std::string summary() const;  // "measured 1.234 km horizontal, ..." (one line)
  void clear() { ends_ = 0; }
  // The panel's section (inside the current ImGui window).
  void panel();
  // The line and its ends over the view (ImGui's background draw list); `toWindow` scales
  // framebuffer pixels to window coordinates (HiDPI).
  void overlay(const hfr::Renderer& renderer, double exaggeration, double toWindowX, double toWindowY) const;

 private:
  hfr::GroundFrame frame_;
  hfr::HeightSampler sampler_;
  int ends_ = 0;                       // 0, 1 or 2 ends set
  std::array<double, 3> a_{}, b_{};    // world, z in metres (no exaggeration)
  hfr::Measurement result_;
  hfr::Profile profile_;
};
