// ocean_compute.cpp - the ocean's fields made by GL compute shaders in the context that draws them
// (OceanFields "gl" in ocean_gl.h; issue 14; docs/rendering.md section 5). Four dispatches a
// frame: h(k, t) and the row FFTs (shaders/ocean_rows.comp), the column FFTs and level 0
// (ocean_columns.comp), mip levels 1..4 (ocean_mips.comp) and the levels below
// (ocean_mip_tail.comp). Why a third path beside the CPU worker and CUDA: any CUDA work in a
// frame, even a bare map and unmap of the texture, cost ~0.2 ms of frame time on the H100 (the
// GPU switching between the GL and CUDA contexts, session 23's probe); these dispatches stay in
// the GL context's own command stream, and nothing crosses PCIe per frame.
// The spectrum is the CPU's (makeOceanSpectrum), uploaded once per parameter set; a parameter
// change makes the new one on a helper thread and installs it when ready.
#include <glad/gl.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "render/gl/ocean_gl.h"
#include "render/gl/shader.h"

namespace hfr {

namespace {

class GlOceanFields final : public OceanFields {
 public:
  GlOceanFields(const std::string& shaderDir, const OceanParams& params,
                const OceanSpectrum& spectrum)
      : shaderDir_(shaderDir), updates_(params) {
    glCreateBuffers(4, buffers_);
    try {
      install(spectrum, params);  // throws std::runtime_error when the shaders do not build
    } catch (...) {
      release();
      throw;
    }
  }
  ~GlOceanFields() override {
    release();
  }
  const char* name() const override { return "gl"; }
  void setParams(const OceanParams& params) override { updates_.want(params); }
  std::string error() const override { return updates_.error(); }
  unsigned texture() const override { return texture_; }
  double patchMetres() const override { return patch_; }

  // GL orders the dispatches before the draw that samples the texture (the barrier in step()),
  // so every update shows exactly `seconds`, synchronous or not.
  bool update(double seconds, bool synchronous) override {
    updates_.adopt(synchronous, [this](const OceanSpectrum& s, const OceanParams& p) { install(s, p); });
    if (!(prepared_ && preparedSeconds_ == seconds)) step(seconds);
    prepared_ = false;
    return true;
  }

  // Early in the frame, before the terrain's draw calls: the step does not wait behind them.
  void prepare(double seconds) override {
    updates_.adopt(false, [this](const OceanSpectrum& s, const OceanParams& p) { install(s, p); });
    step(seconds);
    prepared_ = true;
    preparedSeconds_ = seconds;
  }

 private:
  enum Buffer { kAmplitudes, kWaves, kTwiddles, kPacked };

  void step(double seconds) {
    // The previous step's reads of the packed buffer and the texture come before these writes.
    glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT | GL_SHADER_IMAGE_ACCESS_BARRIER_BIT);
    for (int b = 0; b < 4; ++b) glBindBufferBase(GL_SHADER_STORAGE_BUFFER, GLuint(b), buffers_[b]);
    glProgramUniform1d(rows_, uSeconds_, seconds);
    glUseProgram(rows_);
    glDispatchCompute(GLuint(size_), 1, 1);
    glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT);
    glUseProgram(columns_);
    glBindImageTexture(0, texture_, 0, GL_FALSE, 0, GL_WRITE_ONLY, GL_RGBA32F);
    glDispatchCompute(GLuint(size_), 1, 1);
    glMemoryBarrier(GL_SHADER_IMAGE_ACCESS_BARRIER_BIT);
    glUseProgram(mips_);
    glBindImageTexture(0, texture_, 0, GL_FALSE, 0, GL_READ_ONLY, GL_RGBA32F);
    for (int l = 1; l <= 4; ++l)
      glBindImageTexture(GLuint(l), texture_, l, GL_FALSE, 0, GL_WRITE_ONLY, GL_RGBA32F);
    glDispatchCompute(GLuint(size_ / 16), GLuint(size_ / 16), 1);
    if (tail_) {
      glMemoryBarrier(GL_SHADER_IMAGE_ACCESS_BARRIER_BIT);
      glUseProgram(tail_);
      glBindImageTexture(0, texture_, 4, GL_FALSE, 0, GL_READ_ONLY, GL_RGBA32F);
      for (int l = 5; l < levels_; ++l)
        glBindImageTexture(GLuint(l - 4), texture_, l, GL_FALSE, 0, GL_WRITE_ONLY, GL_RGBA32F);
      glDispatchCompute(1, 1, 1);
    }
    glMemoryBarrier(GL_TEXTURE_FETCH_BARRIER_BIT | GL_SHADER_IMAGE_ACCESS_BARRIER_BIT);
    glUseProgram(0);
  }

  void install(const OceanSpectrum& s, const OceanParams& p) {
    const int n = s.size;
    if (n != size_) {
      buildPrograms(n);  // throws; the old programs stay when the new ones do not build
      makeOceanFieldsTexture(texture_, n);
      size_ = n;
      levels_ = oceanFieldsLevels(n);
      std::vector<float> twiddles(static_cast<size_t>(n));
      for (int k = 0; k < n / 2; ++k) {
        const double a = 2 * 3.14159265358979323846 * k / n;
        twiddles[size_t(2 * k)] = float(std::cos(a));
        twiddles[size_t(2 * k + 1)] = float(std::sin(a));
      }
      glNamedBufferData(buffers_[kTwiddles], GLsizeiptr(twiddles.size() * sizeof(float)),
                        twiddles.data(), GL_STATIC_DRAW);
      glNamedBufferData(buffers_[kPacked],
                        GLsizeiptr(size_t(3) * size_t(n) * size_t(n) * 2 * sizeof(float)), nullptr,
                        GL_DYNAMIC_COPY);
    }
    const size_t count = size_t(n) * size_t(n);
    std::vector<float> waves(count * 4);
    for (size_t i = 0; i < count; ++i) {
      waves[4 * i + 0] = s.omega[i];
      waves[4 * i + 1] = s.kx[i];
      waves[4 * i + 2] = s.ky[i];
      waves[4 * i + 3] = 0;
    }
    glNamedBufferData(buffers_[kAmplitudes], GLsizeiptr(count * sizeof(s.h0[0])), s.h0.data(),
                      GL_STATIC_DRAW);
    glNamedBufferData(buffers_[kWaves], GLsizeiptr(waves.size() * sizeof(float)), waves.data(),
                      GL_STATIC_DRAW);
    glProgramUniform1f(rows_, uChoppiness_, float(p.choppiness));
    patch_ = p.patchMetres;
  }

  // The four programs for size n (compile-time sizes of the shared arrays and work groups).
  void buildPrograms(int n) {
    const int lg = oceanFieldsLevels(n) - 1;  // log2(n)
    const int threads = std::min(n / 2, 256);
    const std::string defines = "#define N " + std::to_string(n) + "u\n#define LOG2N " +
                                std::to_string(lg) + "u\n#define FFT_THREADS " +
                                std::to_string(threads) + "u\n#define TAIL_LEVELS " +
                                std::to_string(std::max(lg - 4, 1)) + "\n";
    std::string error;
    unsigned programs[4] = {};
    const char* files[4] = {"ocean_rows.comp", "ocean_columns.comp", "ocean_mips.comp",
                            "ocean_mip_tail.comp"};
    const int count = n >= 32 ? 4 : 3;  // N = 16: level 4 is the last, made by ocean_mips.comp
    for (int i = 0; i < count; ++i) {
      programs[i] = compileComputeProgram(shaderDir_, files[i], error, defines);
      if (!programs[i]) {
        for (unsigned q : programs)
          if (q) glDeleteProgram(q);
        throw std::runtime_error(error);
      }
    }
    deletePrograms();
    rows_ = programs[0];
    columns_ = programs[1];
    mips_ = programs[2];
    tail_ = programs[3];
    uSeconds_ = glGetUniformLocation(rows_, "uSeconds");
    uChoppiness_ = glGetUniformLocation(rows_, "uChoppiness");
  }

  void release() {
    deletePrograms();
    glDeleteBuffers(4, buffers_);
    if (texture_) glDeleteTextures(1, &texture_);
    texture_ = 0;
  }

  void deletePrograms() {
    for (unsigned* p : {&rows_, &columns_, &mips_, &tail_}) {
      if (*p) glDeleteProgram(*p);
      *p = 0;
    }
  }

  std::string shaderDir_;
  SpectrumUpdates updates_;
  unsigned buffers_[4] = {};
  unsigned rows_ = 0, columns_ = 0, mips_ = 0, tail_ = 0;
  int uSeconds_ = -1, uChoppiness_ = -1;
  unsigned texture_ = 0;
  int size_ = 0, levels_ = 0;
  double patch_ = 0;
  bool prepared_ = false;  // prepare() made the fields of preparedSeconds_ for this frame
  double preparedSeconds_ = 0;
};

}  // namespace

std::unique_ptr<OceanFields> makeGlOceanFields(const std::string& shaderDir,
                                               const OceanParams& params, std::string& note) {
  note.clear();
  const OceanSpectrum spectrum =
      makeOceanSpectrum(params);  // bad parameters throw invalid_argument
  try {
    return std::make_unique<GlOceanFields>(shaderDir, params, spectrum);
  } catch (const std::runtime_error& e) {
    note = std::string("the GL compute step does not build: ") + e.what();
    return nullptr;
  }
}

}  // namespace hfr
