// fft_bench.cpp - see fft_bench.h.
#include "fft_bench.h"

#include <cuda_runtime_api.h>
#include <cufft.h>
#include <dlfcn.h>
#include <fftw3.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cli.h"
#include "gpu/cuda_util.h"
#include "gpu/fft.h"
#include "gpu/spectral_field.h"
#ifdef HF_BENCH_OCEAN
#include "gpu/ocean_step.h"
#include "render/ocean/ocean.h"
#endif
#include "json.h"
#include "timer.h"

namespace hfbench {

namespace {

const char* kUsage =
    "The shared-memory GPU FFT against cuFFT (same device, sizes, batches) and FFTW (single precision, "
    "N threads): complex-to-complex, 1D batched and 2D, and the real kinds (r2c forward, c2r inverse); the "
    "ocean step at 512^2; hfterrain's 16385^2 field on the GPU and the CPU; accuracy of both GPU results "
    "against FFTW in double precision.";

// hfterrain's base field for the 16385^2 terrain (tile + 2 x tile / 8 = 20481 samples on its
// 24576 grid), as tools/hfterrain/terrain.cpp makes it, in double precision on both sides: the
// GPU path (gpu/spectral_field.h: spectrum, inverse FFT, crop; `gpuS` without and `gpuCopyS` with
// the copy of the 3.4 GB field to host memory) against the CPU on all cores (the same spectrum
// filled by `threads` threads, FFTW's double c2r with `threads` threads - hfterrain's CPU path,
// there on one FFTW thread - and the crop). Seconds, each the best of two runs after a warm-up
// of the GPU path.
struct TerrainTiming {
  double gpuS = 0, gpuCopyS = 0, cpuS = 0;
  int tile = 20481, m = 24576;
};

TerrainTiming terrainCase(int threads, bool quick) {
  TerrainTiming t;
  if (quick) t.tile = 1000, t.m = 1536;
  hfspectral::FieldSpec spec;
  spec.m = t.m;
  spec.perTile = double(t.tile) / t.m;
  spec.beta = 2.2;
  spec.state = 0x6866746572726169ull;
  std::string error;
  std::vector<double> out;
  if (!hfgpu::spectralField(spec, t.tile, out, error)) throw std::runtime_error(error);  // warm-up
  t.gpuS = t.gpuCopyS = t.cpuS = 1e30;
  for (int rep = 0; rep < 2; ++rep) {
    Stopwatch timer;
    double s = 0;
    if (!hfgpu::spectralField(spec, t.tile, out, error, hfgpu::kSpectralFieldMaxLine, &s))
      throw std::runtime_error(error);
    t.gpuCopyS = std::min(t.gpuCopyS, timer.seconds());
    t.gpuS = std::min(t.gpuS, s);
  }
  const size_t half = size_t(t.m / 2 + 1), m = size_t(t.m);
  fftw_complex* spectrum = fftw_alloc_complex(m * half);
  double* grid = fftw_alloc_real(m * m);
  if (!spectrum || !grid) throw std::runtime_error("cannot allocate the CPU field");
  fftw_plan_with_nthreads(threads);
  fftw_plan plan = fftw_plan_dft_c2r_2d(t.m, t.m, spectrum, grid, FFTW_ESTIMATE);
  std::vector<double> crop(size_t(t.tile) * size_t(t.tile));
  for (int rep = 0; rep < 2; ++rep) {
    Stopwatch timer;
    std::vector<std::thread> pool;
    for (int k = 0; k < threads; ++k)
      pool.emplace_back([&, k] {
        for (size_t ky = size_t(k); ky < m; ky += size_t(threads))
          for (size_t kx = 0; kx < half; ++kx) {
            hfspectral::bin(spec, int(ky), int(kx), spectrum[ky * half + kx][0], spectrum[ky * half + kx][1]);
          }
      });
    for (auto& th : pool) th.join();
    fftw_execute(plan);
    for (size_t y = 0; y < size_t(t.tile); ++y)
      std::copy(grid + y * m, grid + y * m + size_t(t.tile), crop.begin() + ptrdiff_t(y * size_t(t.tile)));
    t.cpuS = std::min(t.cpuS, timer.seconds());
  }
  fftw_destroy_plan(plan);
  fftw_free(spectrum);
  fftw_free(grid);
  return t;
}

int fail(const std::string& message) {
  std::fprintf(stderr, "Error: %s (hfbench fft --help)\n", message.c_str());
  return 2;
}

// cuFFT through dlopen, so that hfbench builds and runs where the library is missing.
class CuFft {
 public:
  CuFft() {
    for (const char* name : {"libcufft.so.12", "libcufft.so.11", "libcufft.so"})
      if ((lib_ = dlopen(name, RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
    if (!lib_) return;
    planMany_ = reinterpret_cast<decltype(planMany_)>(dlsym(lib_, "cufftPlanMany"));
    setStream_ = reinterpret_cast<decltype(setStream_)>(dlsym(lib_, "cufftSetStream"));
    execC2C_ = reinterpret_cast<decltype(execC2C_)>(dlsym(lib_, "cufftExecC2C"));
    execR2C_ = reinterpret_cast<decltype(execR2C_)>(dlsym(lib_, "cufftExecR2C"));
    execC2R_ = reinterpret_cast<decltype(execC2R_)>(dlsym(lib_, "cufftExecC2R"));
    destroy_ = reinterpret_cast<decltype(destroy_)>(dlsym(lib_, "cufftDestroy"));
    if (!planMany_ || !setStream_ || !execC2C_ || !execR2C_ || !execC2R_ || !destroy_) {
      dlclose(lib_);
      lib_ = nullptr;
    }
  }
  ~CuFft() {
    if (lib_) dlclose(lib_);
  }
  bool available() const { return lib_ != nullptr; }

  // A plan for `batch` transforms of dims (1 or 2 of them, slowest first), or 0 on failure.
  cufftHandle plan(const std::vector<int>& dims, int batch, cudaStream_t stream, cufftType type = CUFFT_C2C) const {
    cufftHandle h = 0;
    std::vector<int> n = dims;
    if (planMany_(&h, int(n.size()), n.data(), nullptr, 1, 0, nullptr, 1, 0, type, batch) != CUFFT_SUCCESS)
      return 0;
    setStream_(h, stream);
    return h;
  }
  bool exec(cufftHandle h, float2* in, float2* out, int sign) const {
    return execC2C_(h, reinterpret_cast<cufftComplex*>(in), reinterpret_cast<cufftComplex*>(out),
                    sign < 0 ? CUFFT_FORWARD : CUFFT_INVERSE) == CUFFT_SUCCESS;
  }
  bool execR2C(cufftHandle h, float* in, float2* out) const {
    return execR2C_(h, in, reinterpret_cast<cufftComplex*>(out)) == CUFFT_SUCCESS;
  }
  bool execC2R(cufftHandle h, float2* in, float* out) const {
    return execC2R_(h, reinterpret_cast<cufftComplex*>(in), out) == CUFFT_SUCCESS;
  }
  void destroy(cufftHandle h) const { destroy_(h); }

 private:
  void* lib_ = nullptr;
  cufftResult (*planMany_)(cufftHandle*, int, int*, int*, int, int, int*, int, int, cufftType, int) = nullptr;
  cufftResult (*setStream_)(cufftHandle, cudaStream_t) = nullptr;
  cufftResult (*execC2C_)(cufftHandle, cufftComplex*, cufftComplex*, int) = nullptr;
  cufftResult (*execR2C_)(cufftHandle, cufftReal*, cufftComplex*) = nullptr;
  cufftResult (*execC2R_)(cufftHandle, cufftComplex*, cufftReal*) = nullptr;
  cufftResult (*destroy_)(cufftHandle) = nullptr;
};

enum class Kind { C2C, R2C, C2R };
const char* kindName(Kind k) { return k == Kind::C2C ? "c2c" : k == Kind::R2C ? "r2c" : "c2r"; }

struct Case {
  std::vector<int> dims;  // [n] or [ny, nx]
  int batch = 1;
  Kind kind = Kind::C2C;
};

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kOceanBenchSize = 512;  // the viewer's ocean at its largest common size

struct Result {
  double ownMs = 0, cufftMs = kNaN, fftwMs = 0, relOwn = 0, relCufft = kNaN;
  double ownGpuMs = 0, cufftGpuMs = kNaN;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Median device time of `repeat` runs of f() (after 3 warm-up runs), by CUDA events.
template <class F>
double deviceMs(int repeat, cudaStream_t stream, F&& f) {
  hfgpu::Event start(true), stop(true);
  for (int i = 0; i < 3; ++i) f();
  std::vector<double> ms;
  for (int r = 0; r < repeat; ++r) {
    start.record(stream);
    f();
    stop.record(stream);
    stop.synchronize();
    ms.push_back(double(stop.elapsedMsSince(start)));
  }
  return median(ms);
}

// Device time per call with the host out of the way: 20 calls captured as one CUDA graph,
// launched after a warm-up; the median of 5 launches over 20. One call from an idle stream
// (deviceMs) also waits for the host to submit its first kernel (about 4 us here), which at
// the small sizes is a third of what deviceMs reports for ours and cuFFT's alike.
template <class F>
double deviceBackToBackMs(cudaStream_t stream, F&& f) {
  constexpr int kCalls = 20;
  cudaGraph_t graph = nullptr;
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < kCalls; ++i) f();
  CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec = nullptr;
  CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  hfgpu::Event start(true), stop(true);
  CUDA_CHECK(cudaGraphLaunch(exec, stream));
  std::vector<double> ms;
  for (int r = 0; r < 5; ++r) {
    start.record(stream);
    CUDA_CHECK(cudaGraphLaunch(exec, stream));
    stop.record(stream);
    stop.synchronize();
    ms.push_back(double(stop.elapsedMsSince(start)) / kCalls);
  }
  CUDA_CHECK(cudaGraphExecDestroy(exec));
  CUDA_CHECK(cudaGraphDestroy(graph));
  return median(ms);
}

// Median wall time of an FFTW plan (after one warm-up run; at most 5 runs for 4 M points or
// more), then the plan destroyed.
double fftwMedianMs(fftwf_plan plan, int repeat, size_t points) {
  fftwf_execute(plan);
  std::vector<double> ms;
  const int runs = std::max(1, std::min(repeat, points >= (size_t(1) << 22) ? 5 : repeat));
  for (int i = 0; i < runs; ++i) {
    Stopwatch watch;
    fftwf_execute(plan);
    ms.push_back(watch.seconds() * 1e3);
  }
  fftwf_destroy_plan(plan);
  return median(ms);
}

double relativeRms(const std::vector<float2>& got, const std::vector<std::complex<double>>& want) {
  double err = 0, ref = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    err += std::norm(std::complex<double>(double(got[i].x), double(got[i].y)) - want[i]);
    ref += std::norm(want[i]);
  }
  return ref > 0 ? std::sqrt(err / ref) : 0;
}

Result runCase(const Case& c, int repeat, int threads, bool withFftw, const CuFft& cufft, cudaStream_t stream) {
  const size_t each = c.dims.size() == 1 ? size_t(c.dims[0]) : size_t(c.dims[0]) * size_t(c.dims[1]);
  const size_t count = each * size_t(c.batch);
  std::vector<float2> host(count);
  std::mt19937 rng{uint32_t(count)};
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float2& v : host) v = float2{u(rng), u(rng)};
  Result r;

  // Reference: FFTW double, forward.
  std::vector<std::complex<double>> ref(count);
  for (size_t i = 0; i < count; ++i) ref[i] = {double(host[i].x), double(host[i].y)};
  {
    auto* p = reinterpret_cast<fftw_complex*>(ref.data());
    std::vector<int> n = c.dims;
    fftw_plan plan = fftw_plan_many_dft(int(n.size()), n.data(), c.batch, p, nullptr, 1, int(each), p, nullptr, 1,
                                        int(each), FFTW_FORWARD, FFTW_ESTIMATE);
    fftw_execute(plan);
    fftw_destroy_plan(plan);
  }

  hfgpu::DeviceBuffer<float2> in(count), out(count);
  CUDA_CHECK(cudaMemcpyAsync(in.get(), host.data(), count * sizeof(float2), cudaMemcpyHostToDevice, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));  // the kernels run on a non-blocking stream
  std::vector<float2> result(count);
  auto own = [&] {
    if (c.dims.size() == 1)
      hfgpu::fftC2CAsync(in.get(), out.get(), c.dims[0], c.batch, hfgpu::FftSign::Forward, stream);
    else
      hfgpu::fft2dC2CAsync(in.get(), out.get(), c.dims[1], c.dims[0], c.batch, hfgpu::FftSign::Forward, stream);
  };
  r.ownMs = deviceMs(repeat, stream, own);
  r.ownGpuMs = deviceBackToBackMs(stream, own);
  CUDA_CHECK(cudaMemcpy(result.data(), out.get(), count * sizeof(float2), cudaMemcpyDeviceToHost));
  r.relOwn = relativeRms(result, ref);

  if (cufft.available()) {
    const cufftHandle h = cufft.plan(c.dims, c.batch, stream);
    if (h) {
      bool ok = true;
      auto run = [&] { ok = cufft.exec(h, in.get(), out.get(), -1) && ok; };
      r.cufftMs = deviceMs(repeat, stream, run);
      r.cufftGpuMs = deviceBackToBackMs(stream, run);
      CUDA_CHECK(cudaMemcpy(result.data(), out.get(), count * sizeof(float2), cudaMemcpyDeviceToHost));
      if (ok) r.relCufft = relativeRms(result, ref);
      else r.cufftMs = r.cufftGpuMs = kNaN;
      cufft.destroy(h);
    }
  }

  if (!withFftw) {
    r.fftwMs = kNaN;
    return r;
  }
  // FFTW single precision, all threads, measured plan (planning time bounded).
  fftwf_plan_with_nthreads(threads);
  fftwf_set_timelimit(5.0);
  fftwf_complex* a = fftwf_alloc_complex(count);
  fftwf_complex* b = fftwf_alloc_complex(count);
  std::vector<int> n = c.dims;
  fftwf_plan plan = fftwf_plan_many_dft(int(n.size()), n.data(), c.batch, a, nullptr, 1, int(each), b, nullptr, 1,
                                        int(each), FFTW_FORWARD, FFTW_MEASURE);
  std::memcpy(a, host.data(), count * sizeof(float2));  // MEASURE overwrote the arrays
  r.fftwMs = fftwMedianMs(plan, repeat, count);
  fftwf_free(a);
  fftwf_free(b);
  return r;
}

double relativeRms(const std::vector<float>& got, const std::vector<double>& want) {
  double err = 0, ref = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    err += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    ref += want[i] * want[i];
  }
  return ref > 0 ? std::sqrt(err / ref) : 0;
}

// R2C (forward) or C2R (inverse, unnormalised) of `batch` arrays of dims (reals: the last
// dimension n, complex: n / 2 + 1). C2R's input is the exact spectrum of random reals (FFTW
// double r2c), so that the inputs are Hermitian as real data gives; 2D C2R overwrites its input
// (ours and cuFFT's), so the accuracy run gets a fresh copy and the timed runs transform what is
// left there.
Result runRealCase(const Case& c, int repeat, int threads, bool withFftw, const CuFft& cufft, cudaStream_t stream) {
  const bool forward = c.kind == Kind::R2C;
  const int nx = c.dims.back(), ny = c.dims.size() == 2 ? c.dims[0] : 1;
  const size_t realEach = size_t(nx) * size_t(ny), cpxEach = size_t(nx / 2 + 1) * size_t(ny);
  const size_t realCount = realEach * size_t(c.batch), cpxCount = cpxEach * size_t(c.batch);
  std::vector<double> x(realCount);
  std::mt19937 rng{uint32_t(realCount + 7)};
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (double& v : x) v = u(rng);
  std::vector<int> n = c.dims;
  // Reference spectrum (double) and, for C2R, the reference output (double c2r of it).
  std::vector<std::complex<double>> spectrum(cpxCount);
  {
    std::vector<double> copy = x;
    fftw_plan plan = fftw_plan_many_dft_r2c(int(n.size()), n.data(), c.batch, copy.data(), nullptr, 1, int(realEach),
                                            reinterpret_cast<fftw_complex*>(spectrum.data()), nullptr, 1,
                                            int(cpxEach), FFTW_ESTIMATE);
    fftw_execute(plan);
    fftw_destroy_plan(plan);
  }
  std::vector<double> inverse;
  if (!forward) {
    inverse.resize(realCount);
    std::vector<std::complex<double>> copy = spectrum;
    fftw_plan plan = fftw_plan_many_dft_c2r(int(n.size()), n.data(), c.batch, reinterpret_cast<fftw_complex*>(copy.data()),
                                            nullptr, 1, int(cpxEach), inverse.data(), nullptr, 1, int(realEach),
                                            FFTW_ESTIMATE);
    fftw_execute(plan);
    fftw_destroy_plan(plan);
  }
  std::vector<float> realHost(realCount);
  std::vector<float2> cpxHost(cpxCount);
  for (size_t i = 0; i < realCount; ++i) realHost[i] = float(x[i]);
  for (size_t i = 0; i < cpxCount; ++i) cpxHost[i] = float2{float(spectrum[i].real()), float(spectrum[i].imag())};
  hfgpu::DeviceBuffer<float> real(realCount);
  hfgpu::DeviceBuffer<float2> cpx(cpxCount);
  // On the timing stream and waited for: a pageable cudaMemcpy may return before its DMA ends,
  // and the non-blocking stream would not wait for it.
  auto upload = [&] {
    if (forward)
      CUDA_CHECK(cudaMemcpyAsync(real.get(), realHost.data(), realCount * sizeof(float), cudaMemcpyHostToDevice, stream));
    else
      CUDA_CHECK(cudaMemcpyAsync(cpx.get(), cpxHost.data(), cpxCount * sizeof(float2), cudaMemcpyHostToDevice, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
  };
  auto accuracy = [&] {
    if (forward) {
      std::vector<float2> got(cpxCount);
      CUDA_CHECK(cudaMemcpy(got.data(), cpx.get(), cpxCount * sizeof(float2), cudaMemcpyDeviceToHost));
      return relativeRms(got, spectrum);
    }
    std::vector<float> got(realCount);
    CUDA_CHECK(cudaMemcpy(got.data(), real.get(), realCount * sizeof(float), cudaMemcpyDeviceToHost));
    return relativeRms(got, inverse);
  };
  Result r;
  auto own = [&] {
    if (forward) {
      if (ny > 1 || c.dims.size() == 2) hfgpu::fft2dR2CAsync(real.get(), cpx.get(), nx, ny, c.batch, stream);
      else hfgpu::fftR2CAsync(real.get(), cpx.get(), nx, c.batch, stream);
    } else {
      if (c.dims.size() == 2) hfgpu::fft2dC2RAsync(cpx.get(), real.get(), nx, ny, c.batch, stream);
      else hfgpu::fftC2RAsync(cpx.get(), real.get(), nx, c.batch, stream);
    }
  };
  upload();
  own();
  CUDA_CHECK(cudaStreamSynchronize(stream));
  r.relOwn = accuracy();
  r.ownMs = deviceMs(repeat, stream, own);
  r.ownGpuMs = deviceBackToBackMs(stream, own);
  if (cufft.available()) {
    const cufftHandle h = cufft.plan(c.dims, c.batch, stream, forward ? CUFFT_R2C : CUFFT_C2R);
    if (h) {
      bool ok = true;
      auto run = [&] {
        ok = (forward ? cufft.execR2C(h, real.get(), cpx.get()) : cufft.execC2R(h, cpx.get(), real.get())) && ok;
      };
      upload();
      run();
      CUDA_CHECK(cudaStreamSynchronize(stream));
      if (ok) r.relCufft = accuracy();
      r.cufftMs = deviceMs(repeat, stream, run);
      r.cufftGpuMs = deviceBackToBackMs(stream, run);
      if (!ok) r.cufftMs = r.cufftGpuMs = r.relCufft = kNaN;
      cufft.destroy(h);
    }
  }
  if (!withFftw) {
    r.fftwMs = kNaN;
    return r;
  }
  fftwf_plan_with_nthreads(threads);
  fftwf_set_timelimit(5.0);
  float* a = fftwf_alloc_real(realCount);
  fftwf_complex* b = fftwf_alloc_complex(cpxCount);
  fftwf_plan plan =
      forward ? fftwf_plan_many_dft_r2c(int(n.size()), n.data(), c.batch, a, nullptr, 1, int(realEach), b, nullptr, 1,
                                        int(cpxEach), FFTW_MEASURE)
              : fftwf_plan_many_dft_c2r(int(n.size()), n.data(), c.batch, b, nullptr, 1, int(cpxEach), a, nullptr, 1,
                                        int(realEach), FFTW_MEASURE);
  std::memcpy(a, realHost.data(), realCount * sizeof(float));
  std::memcpy(b, cpxHost.data(), cpxCount * sizeof(float2));
  r.fftwMs = fftwMedianMs(plan, repeat, realCount);
  fftwf_free(a);
  fftwf_free(b);
  return r;
}

// One ocean step as the viewer runs it (gpu/ocean_step.h): h(k, t) at 512^2, the three packed
// inverse FFTs, the fields and the height written into RGBA32F / R32F surfaces; NaN without the
// ocean (no hf_ocean in this build).
double oceanStepMs(int repeat, cudaStream_t stream) {
#ifdef HF_BENCH_OCEAN
  hfr::OceanParams p;
  p.size = kOceanBenchSize;
  const hfr::OceanSpectrum s = hfr::makeOceanSpectrum(p);
  hfgpu::OceanStep step({s.size, reinterpret_cast<const float2*>(s.h0.data()), s.omega.data(), s.kx.data(),
                         s.ky.data()},
                        float(p.choppiness));
  const cudaChannelFormatDesc f4 = cudaCreateChannelDesc(32, 32, 32, 32, cudaChannelFormatKindFloat);
  const cudaChannelFormatDesc f1 = cudaCreateChannelDesc(32, 0, 0, 0, cudaChannelFormatKindFloat);
  cudaArray_t arrays[2] = {nullptr, nullptr};
  cudaSurfaceObject_t surfaces[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    CUDA_CHECK(cudaMallocArray(&arrays[i], i ? &f1 : &f4, size_t(p.size), size_t(p.size), cudaArraySurfaceLoadStore));
    cudaResourceDesc r{};
    r.resType = cudaResourceTypeArray;
    r.res.array.array = arrays[i];
    CUDA_CHECK(cudaCreateSurfaceObject(&surfaces[i], &r));
  }
  double t = 0;
  const double ms = deviceMs(repeat, stream, [&] {
    step.writeSurfaces(t, surfaces[0], surfaces[1], stream);
    t += 1.0 / 60;
  });
  for (int i = 0; i < 2; ++i) {
    CUDA_CHECK(cudaDestroySurfaceObject(surfaces[i]));
    CUDA_CHECK(cudaFreeArray(arrays[i]));
  }
  return ms;
#else
  (void)repeat;
  (void)stream;
  return kNaN;
#endif
}

std::string dimsText(const std::vector<int>& d) {
  return d.size() == 1 ? std::to_string(d[0]) : std::to_string(d[1]) + "x" + std::to_string(d[0]);
}

}  // namespace

int runFftCommand(int argc, char** argv) {
  std::string jsonPath, note;
  int repeat = 20, threads = int(std::max(1u, std::thread::hardware_concurrency()));
  bool quick = false, quiet = false, gpuOnly = false, terrainOnly = false;
  CLI::App app{kUsage, "hfbench fft"};
  app.add_option("--json", jsonPath, "the results file (OUT.json)")->required()->check(
      [](const std::string& v) { return v.empty() ? std::string("needs a file name") : std::string(); });
  app.add_option("--repeat", repeat, "timed runs per case (median)")->check(CLI::Range(1, 1000))->default_val(repeat);
  app.add_option("--threads", threads, "FFTW threads (default: all cores)")->check(CLI::Range(1, 1000))->default_val(threads);
  app.add_flag("--quick", quick, "tiny cases only (tests)");
  app.add_flag("--gpu-only", gpuOnly, "own kernels and cuFFT only: no FFTW, no terrain (tuning)");
  app.add_flag("--terrain-only", terrainOnly, "the terrain field only: no transform cases, no ocean step (tuning)")
      ->excludes("--gpu-only");
  app.add_option("--note", note, "a note for the results file (e.g. the commit)");
  app.add_flag("-q", quiet, "no table on stdout");
  int status = 0;
  if (!hfcli::parse(app, argc - 1, argv + 1, status, 2)) return status;
  std::FILE* f = std::fopen(jsonPath.c_str(), "w");
  if (!f) return fail("cannot write " + jsonPath + ": " + std::strerror(errno));
  if (hfgpu::cudaDeviceCountOrZero() == 0) {
    std::fclose(f);
    std::remove(jsonPath.c_str());
    std::fprintf(stderr, "Error: hfbench fft needs a CUDA device (none found)\n");
    return 1;
  }

  std::vector<Case> cases;
  if (terrainOnly) {
    // no transform cases
  } else if (quick) {
    cases.push_back(Case{{64}, 4});
    cases.push_back(Case{{32, 32}, 2});
    cases.push_back(Case{{64}, 4, Kind::R2C});
    cases.push_back(Case{{32, 32}, 2, Kind::C2R});
  } else {
    for (int n : {256, 1024, 4096, 16384}) cases.push_back(Case{{n}, (1 << 22) / n});
    cases.push_back(Case{{128, 128}, 1});
    cases.push_back(Case{{128, 128}, 3});  // the ocean's default: 5 real fields in 3 complex FFTs
    cases.push_back(Case{{256, 256}, 1});
    cases.push_back(Case{{512, 512}, 1});
    cases.push_back(Case{{512, 512}, 3});  // the ocean at 512^2
    cases.push_back(Case{{1024, 1024}, 1});
    cases.push_back(Case{{2048, 2048}, 1});
    cases.push_back(Case{{4096, 4096}, 1});
    cases.push_back(Case{{1024}, 4096, Kind::R2C});
    for (int n : {256, 1024, 4096}) cases.push_back(Case{{n, n}, 1, Kind::R2C});
    cases.push_back(Case{{1024}, 4096, Kind::C2R});
    for (int n : {256, 512, 1024, 2048, 4096, 16384}) cases.push_back(Case{{n, n}, 1, Kind::C2R});
  }
  fftwf_init_threads();
  fftw_init_threads();
  const CuFft cufft;
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  hfgpu::Stream stream;
  if (!quiet)
    std::printf("hfbench fft on %s, cuFFT %s, FFTW %d threads (gpu: device time per call, 20 calls in a graph)\n"
                "    %-12s %6s %10s %10s %10s %8s %8s %11s %11s\n",
                prop.name, cufft.available() ? "loaded" : "not found", threads, "dims", "batch", "own ms", "cuFFT ms",
                "FFTW ms", "cuFFT/own", "gpu c/o", "rms own", "rms cuFFT");
  std::string out;
  JsonWriter j(out);
  j.beginObject();
  std::string command;
  for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
  j.field("benchmark", "fft").field("device", prop.name).field("command", command).field("note", note);
  j.field("fftw_threads", threads).field("repeat", repeat).field("cufft_available", cufft.available());
  j.key("cases").beginArray();
  for (const Case& c : cases) {
    const Result r = c.kind == Kind::C2C ? runCase(c, repeat, threads, !gpuOnly, cufft, stream.get())
                                         : runRealCase(c, repeat, threads, !gpuOnly, cufft, stream.get());
    if (!quiet)
      std::printf("%s %-12s %6d %10.4f %10.4f %10.3f %8.2f %8.2f %11.3g %11.3g\n", kindName(c.kind),
                  dimsText(c.dims).c_str(), c.batch, r.ownMs, r.cufftMs, r.fftwMs, r.cufftMs / r.ownMs,
                  r.cufftGpuMs / r.ownGpuMs, r.relOwn, r.relCufft);
    j.beginObject();
    j.field("kind", kindName(c.kind));
    j.key("dims").beginArray(true);
    for (int d : c.dims) j.value(d);
    j.endArray();
    j.field("batch", c.batch).field("own_ms", r.ownMs).field("cufft_ms", r.cufftMs).field("fftw_ms", r.fftwMs);
    j.field("rel_rms_own", r.relOwn).field("rel_rms_cufft", r.relCufft);
    j.field("own_gpu_ms", r.ownGpuMs).field("cufft_gpu_ms", r.cufftGpuMs);
    j.endObject();
  }
  j.endArray();
  const double oceanMs = terrainOnly ? kNaN : oceanStepMs(repeat, stream.get());
  if (!quiet && !terrainOnly)
    std::printf("ocean step %d^2 (spectrum, 3 inverse 2D FFTs, surfaces): %.4f ms\n", kOceanBenchSize, oceanMs);
  if (std::isnan(oceanMs))
    j.key("ocean_step_ms").null();
  else
    j.field("ocean_step_ms", oceanMs);
  j.field("ocean_step_size", kOceanBenchSize);
  if (gpuOnly) {
    j.endObject();
    out += "\n";
    const bool written = std::fwrite(out.data(), 1, out.size(), f) == out.size();
    return std::fclose(f) == 0 && written ? 0 : 1;
  }
  const TerrainTiming tt = terrainCase(threads, quick);
  if (!quiet)
    std::printf("terrain field %d^2 (grid %d^2): GPU %.3f s (%.3f s with the copy to host), CPU %d threads %.3f s: "
                "%.0fx (%.0fx)\n",
                tt.tile, tt.m, tt.gpuS, tt.gpuCopyS, threads, tt.cpuS, tt.cpuS / tt.gpuS, tt.cpuS / tt.gpuCopyS);
  j.key(quick ? "terrain_quick" : "terrain_16385").beginObject();
  j.field("gpu_s", tt.gpuS).field("gpu_with_copy_s", tt.gpuCopyS).field("cpu_s", tt.cpuS).field("cpu_threads", threads);
  j.field("field_samples", tt.tile).field("grid", tt.m);
  j.field("what", "the base fBm field of hfterrain --size 16385: spectrum, inverse FFT, crop (GPU: device memory; "
                  "gpu_with_copy_s adds the copy to host); CPU: the same spectrum on all threads + FFTW double c2r on all "
                  "threads; both in double precision, as hfterrain");
  j.endObject();
  j.endObject();
  out += "\n";
  const bool written = std::fwrite(out.data(), 1, out.size(), f) == out.size();
  if (std::fclose(f) != 0 || !written) {
    std::fprintf(stderr, "Error: cannot write %s\n", jsonPath.c_str());
    return 1;
  }
  fftwf_cleanup_threads();
  fftw_cleanup_threads();
  return 0;
}

}  // namespace hfbench
