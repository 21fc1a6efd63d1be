// fft_real_test.cpp - the real transforms of the GPU FFT (gpu/fft.h: R2C and C2R, 1D and 2D)
// against FFTW's r2c / c2r in double precision. GpuFftRealCore.* run everywhere (CI): the
// kernels' extra step (gpu/fft_core.h, "real transforms") run on the CPU around the reference
// complex FFT. GpuFftReal.* need a device: the kernels, every size 4..16384, batched, 1D and 2D.
#include <fftw3.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpu/cuda_util.h"
#include "gpu/fft.h"
#include "gpu/fft_core.h"
#include "gpu_test_util.h"

namespace {

using hfgpu::detail::Cpx;
using Z = std::complex<double>;

std::vector<float> randomReals(size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(count);
  for (float& x : v) x = u(rng);
  return v;
}

// FFTW double r2c of `batch` arrays of ny x nx reals (ny = 1: rows): ny x (nx / 2 + 1) each.
std::vector<Z> fftwForward(const std::vector<float>& in, int nx, int ny, int batch) {
  const size_t real = size_t(nx) * size_t(ny), half = size_t(nx / 2 + 1) * size_t(ny);
  std::vector<double> x(in.begin(), in.end());
  std::vector<Z> out(half * size_t(batch));
  for (int b = 0; b < batch; ++b) {
    fftw_plan plan =
        fftw_plan_dft_r2c_2d(ny, nx, x.data() + size_t(b) * real,
                             reinterpret_cast<fftw_complex*>(out.data() + size_t(b) * half), FFTW_ESTIMATE);
    fftw_execute(plan);
    fftw_destroy_plan(plan);
  }
  return out;
}

// FFTW double c2r (unnormalised) of `batch` arrays of ny x (nx / 2 + 1) complex.
std::vector<double> fftwInverse(const std::vector<Z>& in, int nx, int ny, int batch) {
  const size_t real = size_t(nx) * size_t(ny), half = size_t(nx / 2 + 1) * size_t(ny);
  std::vector<Z> c(in);  // c2r destroys its input
  std::vector<double> out(real * size_t(batch));
  for (int b = 0; b < batch; ++b) {
    fftw_plan plan = fftw_plan_dft_c2r_2d(ny, nx, reinterpret_cast<fftw_complex*>(c.data() + size_t(b) * half),
                                          out.data() + size_t(b) * real, FFTW_ESTIMATE);
    fftw_execute(plan);
    fftw_destroy_plan(plan);
  }
  return out;
}

std::vector<Cpx> toCpx(const std::vector<Z>& v) {
  std::vector<Cpx> c(v.size());
  for (size_t i = 0; i < v.size(); ++i) c[i] = Cpx{float(v[i].real()), float(v[i].imag())};
  return c;
}

double relativeRms(const std::vector<Cpx>& got, const std::vector<Z>& want) {
  double err = 0, ref = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    err += std::norm(Z(double(got[i].x), double(got[i].y)) - want[i]);
    ref += std::norm(want[i]);
  }
  return std::sqrt(err / ref);
}
double relativeRms(const std::vector<float>& got, const std::vector<double>& want) {
  double err = 0, ref = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    err += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    ref += want[i] * want[i];
  }
  return std::sqrt(err / ref);
}

double tolerance(int points) { return 2e-7 * std::max(1.0, std::log2(double(points))); }

// ---- the extra step on the CPU (CI) ----

TEST(GpuFftRealCore, ForwardAndInverseMatchFftwEverySize) {
  for (int n = 4; n <= 16384; n *= 2) {
    SCOPED_TRACE("n " + std::to_string(n));
    const std::vector<float> x = randomReals(size_t(n), uint32_t(n));
    const std::vector<Z> want = fftwForward(x, n, 1, 1);
    std::vector<Cpx> got(static_cast<size_t>(n / 2 + 1));
    hfgpu::detail::fftRealForwardReference(x.data(), got.data(), uint32_t(n));
    EXPECT_LT(relativeRms(got, want), tolerance(n));
    const std::vector<double> back = fftwInverse(want, n, 1, 1);
    std::vector<float> gotBack(static_cast<size_t>(n));
    hfgpu::detail::fftRealInverseReference(toCpx(want).data(), gotBack.data(), uint32_t(n));
    EXPECT_LT(relativeRms(gotBack, back), tolerance(n));
  }
}

// ---- the kernels (device) ----

template <typename T>
hfgpu::DeviceBuffer<T> upload(const std::vector<T>& host) {
  hfgpu::DeviceBuffer<T> d(host.size());
  CUDA_CHECK(cudaMemcpy(d.get(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}
template <typename T>
std::vector<T> download(const hfgpu::DeviceBuffer<T>& d) {
  std::vector<T> host(d.size());
  CUDA_CHECK(cudaMemcpy(host.data(), d.get(), d.size() * sizeof(T), cudaMemcpyDeviceToHost));
  return host;
}

struct Case {
  int nx, ny, batch;  // ny 0: 1D rows
};

TEST(GpuFftReal, ForwardAndInverseMatchFftw) {
  HF_REQUIRE_CUDA_DEVICE();
  double worst = 0;
  std::string where;
  std::vector<Case> cases;
  for (int n = 4; n <= 16384; n *= 2) cases.push_back(Case{n, 0, n <= 1024 ? 7 : 2});
  for (const Case c : {Case{4, 2, 1}, Case{8, 16, 3}, Case{64, 64, 1}, Case{256, 256, 2}, Case{512, 512, 3},
                       Case{1024, 1024, 1}, Case{4096, 4096, 1}, Case{16384, 4, 1}, Case{4, 16384, 1},
                       Case{2048, 64, 2},
                       // C2R columns of 8192 and 16384 points take the four-step path (64 x 128, 128 x 128)
                       Case{8, 8192, 2}, Case{32, 16384, 1}})
    cases.push_back(c);
  for (const Case& c : cases) {
    const int ny = c.ny > 0 ? c.ny : 1, arrays = c.ny > 0 ? c.batch : 1, rows = c.ny > 0 ? c.ny : c.batch;
    const std::string what = std::to_string(c.nx) + (c.ny > 0 ? " x " + std::to_string(c.ny) : " (1D)") + " batch " +
                             std::to_string(c.batch);
    SCOPED_TRACE(what);
    const size_t real = size_t(c.nx) * size_t(rows) * size_t(arrays);
    const std::vector<float> x = randomReals(real, uint32_t(c.nx * 3 + c.ny));
    // FFTW: 1D cases are `batch` rows, i.e. 2D arrays of 1 x nx.
    const std::vector<Z> want = fftwForward(x, c.nx, ny, c.ny > 0 ? c.batch : c.batch);
    hfgpu::DeviceBuffer<float> in = upload(x);
    hfgpu::DeviceBuffer<float2> spectrum(want.size());
    if (c.ny > 0) hfgpu::fft2dR2CAsync(in.get(), spectrum.get(), c.nx, c.ny, c.batch, nullptr);
    else hfgpu::fftR2CAsync(in.get(), spectrum.get(), c.nx, c.batch, nullptr);
    CUDA_CHECK(cudaDeviceSynchronize());
    const std::vector<float2> got = download(spectrum);
    std::vector<Cpx> gotCpx(got.size());
    for (size_t i = 0; i < got.size(); ++i) gotCpx[i] = Cpx{got[i].x, got[i].y};
    const double tol = tolerance(c.nx * ny);
    const double errForward = relativeRms(gotCpx, want);
    EXPECT_LT(errForward, tol) << "r2c";
    EXPECT_EQ(download(in), x) << "r2c changed its input";
    // C2R of FFTW's spectrum against FFTW's c2r of it.
    const std::vector<double> back = fftwInverse(want, c.nx, ny, c.batch);
    const std::vector<Cpx> wantCpx = toCpx(want);
    std::vector<float2> spec(wantCpx.size());
    for (size_t i = 0; i < spec.size(); ++i) spec[i] = float2{wantCpx[i].x, wantCpx[i].y};
    hfgpu::DeviceBuffer<float2> specIn = upload(spec);
    hfgpu::DeviceBuffer<float> outReal(real);
    if (c.ny > 0) hfgpu::fft2dC2RAsync(specIn.get(), outReal.get(), c.nx, c.ny, c.batch, nullptr);
    else hfgpu::fftC2RAsync(specIn.get(), outReal.get(), c.nx, c.batch, nullptr);
    CUDA_CHECK(cudaDeviceSynchronize());
    const double errInverse = relativeRms(download(outReal), back);
    EXPECT_LT(errInverse, tol) << "c2r";
    for (double e : {errForward, errInverse})
      if (e / tol > worst) {
        worst = e / tol;
        where = what;
      }
  }
  std::printf("[ margin   ] worst error / tolerance %.3f (%s)\n", worst, where.c_str());
}

TEST(GpuFftReal, BadArgumentsAreRefused) {
  float* r = reinterpret_cast<float*>(uintptr_t(256));  // never dereferenced: checks come first
  float2* c = reinterpret_cast<float2*>(uintptr_t(1 << 20));
  EXPECT_THROW(hfgpu::fftR2CAsync(r, c, 2, 1, nullptr), std::invalid_argument);
  EXPECT_THROW(hfgpu::fftR2CAsync(r, c, 48, 1, nullptr), std::invalid_argument);
  EXPECT_THROW(hfgpu::fftR2CAsync(r, c, 32768, 1, nullptr), std::invalid_argument);
  EXPECT_THROW(hfgpu::fftC2RAsync(c, r, 64, 0, nullptr), std::invalid_argument);
  EXPECT_THROW(hfgpu::fftR2CAsync(r, reinterpret_cast<float2*>(r), 64, 1, nullptr), std::invalid_argument);  // overlap
  EXPECT_THROW(hfgpu::fft2dR2CAsync(r, c, 64, 48, 1, nullptr), std::invalid_argument);
  EXPECT_THROW(hfgpu::fft2dC2RAsync(c, nullptr, 64, 64, 1, nullptr), std::invalid_argument);
}

}  // namespace
