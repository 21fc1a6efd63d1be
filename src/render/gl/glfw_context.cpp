// glfw_context.cpp - GLFW window + OpenGL 4.5 core context (the window side of GlContext).
#include <glad/gl.h>
// glad first: GLFW must not pull in a system GL header.
#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>

#include <string>

#include "render/gl/window.h"

namespace hfr {
namespace {

// GLFW reports errors through a callback; keep the last one for the one-line message.
std::string g_lastGlfwError;
int g_lastGlfwCode = 0;
void onGlfwError(int code, const char* text) {
  g_lastGlfwCode = code;
  g_lastGlfwError = text ? text : "unknown GLFW error";
}

GLADapiproc loadProc(const char* name) {
  return reinterpret_cast<GLADapiproc>(glfwGetProcAddress(name));
}

class GlfwContext final : public WindowContext {
 public:
  explicit GlfwContext(GLFWwindow* w) : window_(w) {}
  ~GlfwContext() override {
    // Reverse order of creation: the window, then GLFW itself.
    glfwDestroyWindow(window_);
    glfwTerminate();
  }
  GlfwContext(const GlfwContext&) = delete;
  GlfwContext& operator=(const GlfwContext&) = delete;

  bool makeCurrent() override {
    glfwMakeContextCurrent(window_);
    return true;
  }
  std::string description() const override {
    const char* v = reinterpret_cast<const char*>(glGetString(GL_VERSION));
    const char* r = reinterpret_cast<const char*>(glGetString(GL_RENDERER));
    return std::string(v ? v : "?") + " | " + (r ? r : "?");
  }
  void* nativeWindow() const override { return window_; }
  void swapBuffers() override { glfwSwapBuffers(window_); }

 private:
  GLFWwindow* window_;
};

}  // namespace

std::unique_ptr<WindowContext> createWindowContext(const WindowOptions& options,
                                                   std::string& error, bool* noDisplay) {
  if (noDisplay) *noDisplay = false;
  glfwSetErrorCallback(onGlfwError);
  g_lastGlfwError.clear();
  if (!glfwInit()) {
    // Without a display GLFW 3.3 fails here (X11: DISPLAY missing / cannot open display).
    if (noDisplay) *noDisplay = true;
    error = "no display to open a window on (GLFW: " +
            (g_lastGlfwError.empty() ? std::string("glfwInit failed") : g_lastGlfwError) + ")";
    return nullptr;
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 4);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 5);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
  glfwWindowHint(GLFW_OPENGL_DEBUG_CONTEXT, options.debug ? GLFW_TRUE : GLFW_FALSE);
  glfwWindowHint(GLFW_DEPTH_BITS, 0);  // the renderer draws into its own FBO and blits
  GLFWwindow* w = glfwCreateWindow(options.width, options.height, options.title.c_str(), nullptr,
                                   nullptr);
  if (!w) {
    error = "cannot open a window with an OpenGL 4.5 core context (GLFW: " +
            (g_lastGlfwError.empty() ? std::string("glfwCreateWindow failed") : g_lastGlfwError) +
            ")";
    glfwTerminate();
    return nullptr;
  }
  glfwMakeContextCurrent(w);
  if (!gladLoadGL(loadProc)) {
    error = "cannot load the OpenGL 4.5 entry points for the window context";
    glfwDestroyWindow(w);
    glfwTerminate();
    return nullptr;
  }
  glfwSwapInterval(options.vsync ? 1 : 0);
  return std::make_unique<GlfwContext>(w);
}

}  // namespace hfr
