// viewer.h - hfview's interactive mode: GLFW window + Dear ImGui panel over hfr::Renderer.
// A fixed init / frame / shutdown loop (imgui/bgfx examples); the UI edits a settings struct
// and sets dirty flags that the frame applies; the camera ignores input while ImGui wants it.
#pragma once

#include <memory>
#include <string>

#include "render/gl/renderer.h"
#include "render/gl/stream_gl.h"
#include "render/gl/window.h"

namespace hfa {
class ArchiveReader;
}

namespace hfview {

struct ViewerOptions {
  std::string archivePath;
  std::string screenshot;      // non-empty: render until settled, write it and exit
  int maxFrames = 2000;        // with screenshot: give up waiting for "settled" after this
  bool haveCamera = false;
  hfr::Camera camera;
  bool quiet = false;
  // F9 records the camera into this camera path file (render/camera/camera_path.h format;
  // hfview --record PATH), written when recording stops and on exit.
  std::string recordPath = "hfview-path.txt";
  // hfview --gl-debug (the window was made with a debug context): KHR_debug messages are
  // collected; the errors are printed (the first few) and counted, and the exit status is 3
  // when there was one (the window test in CI).
  bool glDebug = false;
};

// Runs the window loop until the window is closed (or Esc). Returns the exit status; errors are
// printed as one "Error: ..." line. The viewer owns the strategy (made with
// hfr::makeRenderStreamStrategy from `streamOptions`): the panel's Apply replaces it and the
// renderer (strategy, CUDA stream count, atlas budget) and restores them when the new ones fail.
int runViewer(hfr::WindowContext& window, const hfa::ArchiveReader& archive,
              std::unique_ptr<hfr::StreamStrategy> strategy,
              const hfr::StreamOptions& streamOptions, const hfr::RenderSettings& settings,
              const ViewerOptions& options);

}  // namespace hfview
