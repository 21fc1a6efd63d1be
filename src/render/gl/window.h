// window.h - the interactive GlContext: a GLFW window with an OpenGL 4.5 core context (issue 5).
// Library hf_window (links GLFW); the headless EGL context stays in hf_render, so tests and
// --headless never touch GLFW. Used by tools/hfview's window mode only.
#pragma once

#include <memory>
#include <string>

#include "render/gl/renderer.h"

namespace hfr {

struct WindowOptions {
  int width = 1280, height = 720;  // window size in screen coordinates
  bool vsync = true;               // swap interval 1 (else 0)
  std::string title = "hfview";
  bool debug = false;              // a debug context (KHR_debug messages; hfview --gl-debug)
};

class WindowContext : public GlContext {
 public:
  // The GLFWwindow* (opaque here so that this header does not need GLFW's).
  virtual void* nativeWindow() const = 0;
  virtual void swapBuffers() = 0;
};

// Opens the window, makes its 4.5 core context current and loads the GL entry points (glad).
// nullptr and a one-line error (GLFW's own words, e.g. "X11: The DISPLAY environment variable
// is missing") when there is no display or no such context; `noDisplay` is then true when
// GLFW could not reach a display at all (as opposed to a display without GL 4.5).
std::unique_ptr<WindowContext> createWindowContext(const WindowOptions& options,
                                                   std::string& error, bool* noDisplay = nullptr);

}  // namespace hfr
