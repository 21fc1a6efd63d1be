// egl_context.cpp - headless GL 4.5 core context on EGL's device platform (DEVICE.md): the same
// code path on Mesa llvmpipe (CI) and the NVIDIA driver (GPU machine). No window, no surface.
#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <glad/gl.h>

#include <string>
#include <vector>

#include "render/gl/renderer.h"

namespace hfr {
namespace {

class EglContext final : public GlContext {
 public:
  EglContext(EGLDisplay d, EGLContext c) : display_(d), context_(c) {}
  ~EglContext() override {
    eglMakeCurrent(display_, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
    eglDestroyContext(display_, context_);
    eglTerminate(display_);
    eglReleaseThread();
  }
  EglContext(const EglContext&) = delete;
  EglContext& operator=(const EglContext&) = delete;
  bool makeCurrent() override {
    return eglMakeCurrent(display_, EGL_NO_SURFACE, EGL_NO_SURFACE, context_) == EGL_TRUE;
  }
  std::string description() const override {
    const char* v = reinterpret_cast<const char*>(glGetString(GL_VERSION));
    const char* r = reinterpret_cast<const char*>(glGetString(GL_RENDERER));
    return std::string(v ? v : "?") + " | " + (r ? r : "?");
  }

 private:
  EGLDisplay display_;
  EGLContext context_;
};

GLADapiproc loadProc(const char* name) {
  return reinterpret_cast<GLADapiproc>(eglGetProcAddress(name));
}

std::string eglErrorName(EGLint e) {
  char buf[32];
  snprintf(buf, sizeof buf, "0x%04x", unsigned(e));
  return buf;
}

}  // namespace

std::unique_ptr<GlContext> createHeadlessContext(std::string& error) {
  auto queryDevices =
      reinterpret_cast<PFNEGLQUERYDEVICESEXTPROC>(eglGetProcAddress("eglQueryDevicesEXT"));
  auto getPlatformDisplay = reinterpret_cast<PFNEGLGETPLATFORMDISPLAYEXTPROC>(
      eglGetProcAddress("eglGetPlatformDisplayEXT"));
  if (!queryDevices || !getPlatformDisplay) {
    error = "EGL: no EGL_EXT_device_enumeration / EGL_EXT_platform_device (install libegl-mesa0)";
    return nullptr;
  }
  EGLDeviceEXT devices[16];
  EGLint count = 0;
  if (!queryDevices(16, devices, &count) || count <= 0) {
    error = "EGL: no EGL device found";
    return nullptr;
  }
  std::string last = "no usable device";
  for (EGLint i = 0; i < count; ++i) {
    EGLDisplay d = getPlatformDisplay(EGL_PLATFORM_DEVICE_EXT, devices[i], nullptr);
    EGLint major = 0, minor = 0;
    if (d == EGL_NO_DISPLAY || !eglInitialize(d, &major, &minor)) {
      last = "device " + std::to_string(i) + ": eglInitialize failed " + eglErrorName(eglGetError());
      continue;
    }
    // EGL_SURFACE_TYPE defaults to EGL_WINDOW_BIT, which the device platform has no config
    // for: ask for pbuffer configs (we never make a surface; rendering goes to an FBO).
    const EGLint configAttribs[] = {EGL_SURFACE_TYPE, EGL_PBUFFER_BIT, EGL_RENDERABLE_TYPE,
                                    EGL_OPENGL_BIT, EGL_NONE};
    EGLConfig config = nullptr;
    EGLint n = 0;
    if (!eglBindAPI(EGL_OPENGL_API) || !eglChooseConfig(d, configAttribs, &config, 1, &n) ||
        n < 1) {
      last = "device " + std::to_string(i) + ": no OpenGL config";
      eglTerminate(d);
      continue;
    }
    const EGLint ctxAttribs[] = {EGL_CONTEXT_MAJOR_VERSION, 4, EGL_CONTEXT_MINOR_VERSION, 5,
                                 EGL_CONTEXT_OPENGL_PROFILE_MASK,
                                 EGL_CONTEXT_OPENGL_CORE_PROFILE_BIT, EGL_NONE};
    EGLContext c = eglCreateContext(d, config, EGL_NO_CONTEXT, ctxAttribs);
    if (c == EGL_NO_CONTEXT) {
      last = "device " + std::to_string(i) + ": no 4.5 core context " + eglErrorName(eglGetError());
      eglTerminate(d);
      continue;
    }
    if (!eglMakeCurrent(d, EGL_NO_SURFACE, EGL_NO_SURFACE, c)) {
      last = "device " + std::to_string(i) + ": eglMakeCurrent without surface failed " +
             eglErrorName(eglGetError());
      eglDestroyContext(d, c);
      eglTerminate(d);
      continue;
    }
    if (!gladLoadGL(loadProc)) {
      last = "device " + std::to_string(i) + ": cannot load GL 4.5 entry points";
      eglMakeCurrent(d, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
      eglDestroyContext(d, c);
      eglTerminate(d);
      continue;
    }
    return std::make_unique<EglContext>(d, c);
  }
  error = "EGL: cannot create a headless OpenGL 4.5 core context (" + last + ")";
  return nullptr;
}

}  // namespace hfr
