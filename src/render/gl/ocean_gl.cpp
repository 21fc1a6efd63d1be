// ocean_gl.cpp - see ocean_gl.h.
#include "render/gl/ocean_gl.h"

#include <glad/gl.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <limits>

#include "render/gl/shader.h"

namespace hfr {

std::vector<float> shoreDistance(const Seabed& s, double level) {
  const int w = s.width, h = s.height;
  const float far = std::numeric_limits<float>::max() / 4;
  std::vector<float> d(size_t(w) * size_t(h), 0.0f);
  bool anyWater = false;
  for (size_t i = 0; i < d.size(); ++i) {
    const float m = s.metres[i];
    const bool water = std::isnan(m) || double(m) <= level;
    d[i] = water ? far : 0.0f;
    anyWater |= water;
  }
  if (!anyWater) return {};
  // Chamfer 3-4 in two passes (distances in thirds of a texel, then scaled).
  auto at = [&](int x, int y) -> float& { return d[size_t(y) * size_t(w) + size_t(x)]; };
  auto relax = [&](int x, int y, int dx, int dy, float cost) {
    const int nx = x + dx, ny = y + dy;
    if (nx < 0 || ny < 0 || nx >= w || ny >= h) return;
    at(x, y) = std::min(at(x, y), at(nx, ny) + cost);
  };
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      relax(x, y, -1, 0, 3);
      relax(x, y, 0, -1, 3);
      relax(x, y, -1, -1, 4);
      relax(x, y, 1, -1, 4);
    }
  for (int y = h - 1; y >= 0; --y)
    for (int x = w - 1; x >= 0; --x) {
      relax(x, y, 1, 0, 3);
      relax(x, y, 0, 1, 3);
      relax(x, y, 1, 1, 4);
      relax(x, y, -1, 1, 4);
    }
  // A sea without any land at all is "far" everywhere: clamp to a large distance.
  for (float& v : d) v = std::min(v / 3.0f, 1e6f);
  return d;
}

int oceanFieldsLevels(int n) {
  int levels = 1;
  while ((n >> levels) > 0) ++levels;
  return levels;
}

void makeOceanFieldsTexture(unsigned& texture, int n) {
  if (texture) glDeleteTextures(1, &texture);
  glCreateTextures(GL_TEXTURE_2D, 1, &texture);
  const int levels = oceanFieldsLevels(n);
  // Mipmapped: far away, many waves fall into a pixel and their slopes average out (without
  // mipmaps the distant sea is noise).
  glTextureStorage2D(texture, levels, GL_RGBA32F, n, n);
  glTextureParameteri(texture, GL_TEXTURE_MIN_FILTER, GL_LINEAR_MIPMAP_LINEAR);
  glTextureParameteri(texture, GL_TEXTURE_MAG_FILTER, GL_LINEAR);
  glTextureParameteri(texture, GL_TEXTURE_WRAP_S, GL_REPEAT);
  glTextureParameteri(texture, GL_TEXTURE_WRAP_T, GL_REPEAT);
}

namespace {

// The CPU worker's frames, uploaded when a new one is ready.
class CpuOceanFields final : public OceanFields {
 public:
  explicit CpuOceanFields(const OceanParams& params) : worker_(params) {}
  ~CpuOceanFields() override {
    if (texture_) glDeleteTextures(1, &texture_);
  }
  const char* name() const override { return "cpu"; }
  void setParams(const OceanParams& params) override { worker_.setParams(params); }
  std::string error() const override { return worker_.error(); }
  unsigned texture() const override { return texture_; }
  double patchMetres() const override { return frame_.patchMetres; }

  bool update(double seconds, bool synchronous) override {
    worker_.request(seconds);
    if (synchronous || frame_.time < 0) worker_.wait();  // the first frame always has fields
    if (worker_.take(frame_)) {
      const int n = frame_.size;
      if (n != size_) {
        makeOceanFieldsTexture(texture_, n);
        size_ = n;
      }
      upload_.resize(size_t(n) * size_t(n) * 4);
      for (size_t i = 0; i < size_t(n) * size_t(n); ++i) {
        upload_[4 * i + 0] = frame_.slopeX[i];
        upload_[4 * i + 1] = frame_.slopeY[i];
        upload_[4 * i + 2] = frame_.dispX[i];
        upload_[4 * i + 3] = frame_.dispY[i];
      }
      glTextureSubImage2D(texture_, 0, 0, 0, n, n, GL_RGBA, GL_FLOAT, upload_.data());
      glGenerateTextureMipmap(texture_);
    }
    return texture_ != 0;
  }

 private:
  OceanWorker worker_;
  OceanFrame frame_;
  std::vector<float> upload_;  // the fields interleaved for the texture (kept between frames)
  unsigned texture_ = 0;
  int size_ = 0;
};

}  // namespace

std::unique_ptr<OceanFields> makeCpuOceanFields(const OceanParams& params) {
  return std::make_unique<CpuOceanFields>(params);
}

std::unique_ptr<OceanLayer> OceanLayer::create(const std::string& shaderDir, const Seabed& seabed,
                                               const OceanParams& params, double level, const std::string& device,
                                               std::string& error, std::string& note) {
  error.clear();
  note.clear();
  if (seabed.width < 2 || seabed.height < 2 || seabed.metres.size() != size_t(seabed.width) * size_t(seabed.height))
    return nullptr;
  const std::vector<float> shore = shoreDistance(seabed, level);
  if (shore.empty()) return nullptr;  // no water at this level
  std::unique_ptr<OceanLayer> o(new OceanLayer());
  try {
    if (device == "gl") o->fields_ = makeGlOceanFields(shaderDir, params, note);
#ifdef HF_HAVE_CUDA_OCEAN
    if (device == "cuda") o->fields_ = makeCudaOceanFields(params, note);
#else
    if (device == "cuda") note = "this build has no CUDA ocean";
#endif
    if (!o->fields_) o->fields_ = makeCpuOceanFields(params);
  } catch (const std::exception& e) {
    error = std::string("ocean: ") + e.what();
    return nullptr;
  }
  o->params_ = params;
  o->level_ = level;
  o->seabedW_ = seabed.width;
  o->seabedH_ = seabed.height;
  o->stepX_ = seabed.stepX;
  o->stepY_ = seabed.stepY;
  o->originY_ = seabed.originY;
  o->program_ = compileProgram(shaderDir, "ocean.vert", "ocean.frag", error);
  if (!o->program_) return nullptr;
  const GLuint p = o->program_;
  o->uViewProj_ = glGetUniformLocation(p, "uViewProj");
  o->uPlane_ = glGetUniformLocation(p, "uPlane");
  o->uEye_ = glGetUniformLocation(p, "uEye");
  o->uFields_ = glGetUniformLocation(p, "uFields");
  o->uShore_ = glGetUniformLocation(p, "uShore");
  o->uShoreXform_ = glGetUniformLocation(p, "uShoreXform");
  o->uShoreFade_ = glGetUniformLocation(p, "uShoreFade");
  o->uPatch_ = glGetUniformLocation(p, "uPatch");
  o->uChop_ = glGetUniformLocation(p, "uChop");
  o->uFogColor_ = glGetUniformLocation(p, "uFogColor");
  o->uFogDistance_ = glGetUniformLocation(p, "uFogDistance");
  o->uLightDir_ = glGetUniformLocation(p, "uLightDir");
  glCreateVertexArrays(1, &o->vao_);
  glCreateTextures(GL_TEXTURE_2D, 1, &o->shore_);
  glTextureStorage2D(o->shore_, 1, GL_R32F, seabed.width, seabed.height);
  glTextureSubImage2D(o->shore_, 0, 0, 0, seabed.width, seabed.height, GL_RED, GL_FLOAT, shore.data());
  glTextureParameteri(o->shore_, GL_TEXTURE_MIN_FILTER, GL_LINEAR);
  glTextureParameteri(o->shore_, GL_TEXTURE_MAG_FILTER, GL_LINEAR);
  glTextureParameteri(o->shore_, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
  glTextureParameteri(o->shore_, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
  if (glGetError() != GL_NO_ERROR) {
    error = "ocean: OpenGL error while setting up the water";
    return nullptr;
  }
  return o;
}

OceanLayer::~OceanLayer() {
  fields_.reset();
  if (program_) glDeleteProgram(program_);
  if (vao_) glDeleteVertexArrays(1, &vao_);
  if (shore_) glDeleteTextures(1, &shore_);
}

void OceanLayer::setParams(const OceanParams& params) {
  params_ = params;
  fields_->setParams(params);
}

std::string OceanLayer::error() const { return fields_->error(); }

void OceanLayer::fallBackToCpu(const std::runtime_error& e) {
  std::fprintf(stderr, "Note: ocean %s: %s; the fields come from the CPU\n", fields_->name(), e.what());
  fields_ = makeCpuOceanFields(params_);
}

void OceanLayer::prepare(double seconds) {
  try {
    fields_->prepare(seconds);
  } catch (const std::runtime_error& e) {
    fallBackToCpu(e);
  }
}

void OceanLayer::draw(const OceanDraw& d) {
  bool ready = false;
  try {
    ready = fields_->update(d.seconds, d.synchronous);
  } catch (const std::runtime_error& e) {  // a CUDA failure mid-flight: the CPU takes over
    fallBackToCpu(e);
    ready = fields_->update(d.seconds, d.synchronous);
  }
  if (!ready) return;
  glUseProgram(program_);
  glUniformMatrix4fv(uViewProj_, 1, GL_FALSE, d.viewProj.data());
  glUniform4f(uPlane_, float(d.extentX), float(d.extentY), float(level_ * d.exaggeration), 0.0f);
  glUniform3f(uEye_, d.eye[0], d.eye[1], d.eye[2]);
  // World -> shore uv: texel centres at grid samples (column c at x = c step, row r at
  // y = originY - r step, row 0 first in the texture).
  glUniform4f(uShoreXform_, float(1.0 / (stepX_ * seabedW_)), float(0.5 / seabedW_),
              float(-1.0 / (stepY_ * seabedH_)), float((originY_ / stepY_ + 0.5) / seabedH_));
  glUniform1f(uShoreFade_, 3.0f);
  glUniform1f(uPatch_, float(fields_->patchMetres()));
  glUniform1f(uChop_, 1.0f);
  glUniform3f(uFogColor_, d.fogColor[0], d.fogColor[1], d.fogColor[2]);
  glUniform1f(uFogDistance_, d.fogDistance);
  glUniform3f(uLightDir_, d.lightDir[0], d.lightDir[1], d.lightDir[2]);
  glUniform1i(uFields_, 2);
  glUniform1i(uShore_, 3);
  glBindTextureUnit(2, fields_->texture());
  glBindTextureUnit(3, shore_);
  glBindVertexArray(vao_);
  // Opaque where the terrain flagged water (the blend and depth state: Renderer::drawOcean).
  glDrawArrays(GL_TRIANGLE_STRIP, 0, 4);
  glBindVertexArray(0);
}

}  // namespace hfr
