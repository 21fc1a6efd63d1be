// viewer.h - hfview's interactive mode: GLFW window + Dear ImGui panel over hfr::Renderer.
// A fixed init / frame / shutdown loop (imgui/bgfx examples); the UI edits a settings struct
// and sets dirty flags that the frame applies; the camera ignores input while ImGui wants it.
#pragma once

#include <memory>
#include <string>

#include "render/gl/renderer.h"
#include "render/gl/stream_gl.h"
#include "render/gl/window.h"
#include "dem_cache.h"

namespace hfa {
class ArchiveReader;
}

namespace hfview {

struct ViewerOptions {
  std::string archivePath;     // the archive given (empty when a PackJob makes it)
  std::string stream = "cpu";  // the strategy for archives the window opens (drops, packs)
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
// printed as one "Error: ..." line. The viewer owns the archive and its strategy (made with
// hfr::makeRenderStreamStrategy from `streamOptions`): the panel's Apply replaces the strategy
// and the renderer (strategy, CUDA stream count, atlas budget) and restores them when the new
// ones fail. `archive` and `strategy` may be null while `job` packs the DEMs given: the window
// then shows the pack's progress, opens its preview, then the full archive. Files dropped on
// the window open the same way (one archive at once; DEMs through a new PackJob).
int runViewer(hfr::WindowContext& window, std::unique_ptr<hfa::ArchiveReader> archive,
              std::unique_ptr<hfr::StreamStrategy> strategy, std::unique_ptr<PackJob> job,
              const hfr::StreamOptions& streamOptions, const hfr::RenderSettings& settings,
              const ViewerOptions& options);

}  // namespace hfview
