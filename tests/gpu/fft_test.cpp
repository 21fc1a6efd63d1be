// fft_test.cpp - the shared-memory GPU FFT (gpu/fft.h) against FFTW in double precision.
// GpuFftCore.* run everywhere (CI): the kernel's pass arithmetic (gpu/fft_core.h) run on the CPU,
// rows and interleaved columns, 1D and 2D. GpuFft.* need a device: the kernels themselves, every
// size from 2 to 16384, forward and inverse, batched, in place, and the argument checks.
#include <fftw3.h>
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdio>
#include <cstring>
#include <string>
#include <random>
#include <stdexcept>
#include <vector>

#include "gpu/cuda_util.h"
#include "gpu/fft.h"
#include "gpu/fft_core.h"
#include "gpu_test_util.h"

namespace {

using hfgpu::detail::Cpx;
using Z = std::complex<double>;

std::vector<Cpx> randomPoints(size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<Cpx> v(count);
  for (Cpx& c : v) c = Cpx{u(rng), u(rng)};
  return v;
}

// FFTW in double: `batch` 1D transforms of n points, or 2D ny x nx (row-major) when ny > 0.
std::vector<Z> fftwReference(const std::vector<Cpx>& in, int n, int ny, int batch, int sign) {
  std::vector<Z> data(in.size());
  for (size_t i = 0; i < in.size(); ++i) data[i] = Z(double(in[i].x), double(in[i].y));
  auto* p = reinterpret_cast<fftw_complex*>(data.data());
  const size_t each = size_t(n) * size_t(ny > 0 ? ny : 1);
  for (int b = 0; b < batch; ++b) {
    fftw_complex* a = p + size_t(b) * each;
    fftw_plan plan = ny > 0 ? fftw_plan_dft_2d(ny, n, a, a, sign, FFTW_ESTIMATE)
                            : fftw_plan_dft_1d(n, a, a, sign, FFTW_ESTIMATE);
    fftw_execute(plan);
    fftw_destroy_plan(plan);
  }
  return data;
}

// sqrt(sum |got - want|^2 / sum |want|^2).
double relativeRms(const std::vector<Cpx>& got, const std::vector<Z>& want) {
  double err = 0, ref = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    err += std::norm(Z(double(got[i].x), double(got[i].y)) - want[i]);
    ref += std::norm(want[i]);
  }
  return std::sqrt(err / ref);
}

// Single-precision FFTs lose about log2(n) ulps in the worst case and far less in RMS; a wrong
// twiddle, index or pass gives an error of order 1.
double tolerance(int points) { return 2e-7 * std::max(1.0, std::log2(double(points))); }

// ---- the pass arithmetic on the CPU (CI) ----

TEST(GpuFftCore, RowsMatchFftwEverySize) {
  for (int n = 2; n <= 16384; n *= 2)
    for (int sign : {-1, 1}) {
      SCOPED_TRACE("n " + std::to_string(n) + " sign " + std::to_string(sign));
      std::vector<Cpx> v = randomPoints(size_t(n), uint32_t(n + sign));
      const std::vector<Z> want = fftwReference(v, n, 0, 1, sign);
      hfgpu::detail::fftLineReference(hfgpu::detail::StridedLine{v.data(), 1}, uint32_t(n), sign);
      EXPECT_LT(relativeRms(v, want), tolerance(n));
    }
}

TEST(GpuFftCore, InterleavedColumnsAnd2dMatchFftw) {
  // 2D: rows, then the columns read interleaved (stride nx), as the column kernel holds them.
  for (auto [nx, ny] : {std::pair{8, 4}, std::pair{64, 64}, std::pair{256, 32}, std::pair{2, 512}}) {
    SCOPED_TRACE(std::to_string(nx) + " x " + std::to_string(ny));
    std::vector<Cpx> v = randomPoints(size_t(nx) * size_t(ny), uint32_t(nx * 7 + ny));
    const std::vector<Z> want = fftwReference(v, nx, ny, 1, 1);
    for (int y = 0; y < ny; ++y)
      hfgpu::detail::fftLineReference(hfgpu::detail::StridedLine{v.data() + size_t(y) * size_t(nx), 1}, uint32_t(nx), 1);
    for (int x = 0; x < nx; ++x)
      hfgpu::detail::fftLineReference(hfgpu::detail::StridedLine{v.data() + x, uint32_t(nx)}, uint32_t(ny), 1);
    EXPECT_LT(relativeRms(v, want), tolerance(nx * ny));
  }
}

// ---- the kernels (device) ----

struct DeviceArray {
  hfgpu::DeviceBuffer<float2> buffer;
  explicit DeviceArray(const std::vector<Cpx>& host) : buffer(host.size()) {
    CUDA_CHECK(cudaMemcpy(buffer.get(), host.data(), host.size() * sizeof(Cpx), cudaMemcpyHostToDevice));
  }
  std::vector<Cpx> read() const {
    std::vector<Cpx> host(buffer.size());
    CUDA_CHECK(cudaMemcpy(host.data(), buffer.get(), host.size() * sizeof(Cpx), cudaMemcpyDeviceToHost));
    return host;
  }
};

// The worst error / tolerance of a test, printed so a device run shows the margin.
struct Margin {
  double worst = 0;
  std::string where;
  void add(double err, double tol, const std::string& what) {
    if (err / tol > worst) {
      worst = err / tol;
      where = what + ": relative RMS " + std::to_string(err);
    }
  }
  ~Margin() { std::printf("[ margin   ] worst error / tolerance %.3f (%s)\n", worst, where.c_str()); }
};

TEST(GpuFft, OneDimensionalEverySizeBatchedBothSigns) {
  HF_REQUIRE_CUDA_DEVICE();
  Margin margin;
  for (int n = 2; n <= 16384; n *= 2)
    for (int batch : {1, 7})
      for (int sign : {-1, 1}) {
        SCOPED_TRACE("n " + std::to_string(n) + " batch " + std::to_string(batch) + " sign " + std::to_string(sign));
        const std::vector<Cpx> host = randomPoints(size_t(n) * size_t(batch), uint32_t(n * 3 + batch + sign));
        DeviceArray in(host), out(std::vector<Cpx>(host.size()));
        hfgpu::fftC2CAsync(in.buffer.get(), out.buffer.get(), n, batch, hfgpu::FftSign(sign), nullptr);
        CUDA_CHECK(cudaDeviceSynchronize());
        const double err = relativeRms(out.read(), fftwReference(host, n, 0, batch, sign));
        EXPECT_LT(err, tolerance(n));
        margin.add(err, tolerance(n), "n " + std::to_string(n));
        const std::vector<Cpx> after = in.read();  // out of place: the input is only read
        EXPECT_EQ(std::memcmp(after.data(), host.data(), host.size() * sizeof(Cpx)), 0);
      }
}

TEST(GpuFft, TwoDimensionalSizesBatchesAndInPlace) {
  HF_REQUIRE_CUDA_DEVICE();
  struct Case {
    int nx, ny, batch;
  };
  Margin margin;
  // 64^2 .. 512^2 run as one kernel per array (thread-block clusters) where the device allows.
  for (const Case c : {Case{2, 2, 1}, Case{64, 64, 3}, Case{128, 128, 2}, Case{256, 256, 1}, Case{512, 512, 5}, Case{1024, 1024, 1},
                       Case{4096, 4096, 1}, Case{16384, 8, 2}, Case{8, 16384, 1}, Case{2048, 32, 4}})
    for (int sign : {-1, 1}) {
      SCOPED_TRACE(std::to_string(c.nx) + " x " + std::to_string(c.ny) + " batch " + std::to_string(c.batch) +
                   " sign " + std::to_string(sign));
      const std::vector<Cpx> host = randomPoints(size_t(c.nx) * size_t(c.ny) * size_t(c.batch), uint32_t(c.nx + c.ny));
      const std::vector<Z> want = fftwReference(host, c.nx, c.ny, c.batch, sign);
      DeviceArray in(host), out(std::vector<Cpx>(host.size()));
      hfgpu::fft2dC2CAsync(in.buffer.get(), out.buffer.get(), c.nx, c.ny, c.batch, hfgpu::FftSign(sign), nullptr);
      CUDA_CHECK(cudaDeviceSynchronize());
      const double err = relativeRms(out.read(), want);
      EXPECT_LT(err, tolerance(c.nx * c.ny));
      margin.add(err, tolerance(c.nx * c.ny), std::to_string(c.nx) + " x " + std::to_string(c.ny));
      // In place: the same result.
      hfgpu::fft2dC2CAsync(in.buffer.get(), in.buffer.get(), c.nx, c.ny, c.batch, hfgpu::FftSign(sign), nullptr);
      CUDA_CHECK(cudaDeviceSynchronize());
      EXPECT_LT(relativeRms(in.read(), want), tolerance(c.nx * c.ny));
    }
}

TEST(GpuFft, ForwardThenInverseGivesTheInputTimesN) {
  HF_REQUIRE_CUDA_DEVICE();
  const int nx = 512, ny = 256;
  const std::vector<Cpx> host = randomPoints(size_t(nx) * ny, 5);
  DeviceArray a(host);
  hfgpu::fft2dC2CAsync(a.buffer.get(), a.buffer.get(), nx, ny, 1, hfgpu::FftSign::Forward, nullptr);
  hfgpu::fft2dC2CAsync(a.buffer.get(), a.buffer.get(), nx, ny, 1, hfgpu::FftSign::Inverse, nullptr);
  std::vector<Cpx> back = a.read();
  std::vector<Z> want(host.size());
  for (size_t i = 0; i < host.size(); ++i) want[i] = Z(double(host[i].x), double(host[i].y)) * double(nx * ny);
  EXPECT_LT(relativeRms(back, want), 2 * tolerance(nx * ny));
}

TEST(GpuFft, BadArgumentsAreRefused) {
  float2* p = reinterpret_cast<float2*>(uintptr_t(256));  // never dereferenced: checks come first
  EXPECT_THROW(hfgpu::fftC2CAsync(p, p, 3, 1, hfgpu::FftSign::Forward, nullptr), std::invalid_argument);
  EXPECT_THROW(hfgpu::fftC2CAsync(p, p, 1, 1, hfgpu::FftSign::Forward, nullptr), std::invalid_argument);
  EXPECT_THROW(hfgpu::fftC2CAsync(p, p, 32768, 1, hfgpu::FftSign::Forward, nullptr), std::invalid_argument);
  EXPECT_THROW(hfgpu::fftC2CAsync(p, p, 64, 0, hfgpu::FftSign::Forward, nullptr), std::invalid_argument);
  EXPECT_THROW(hfgpu::fftC2CAsync(nullptr, p, 64, 1, hfgpu::FftSign::Forward, nullptr), std::invalid_argument);
  EXPECT_THROW(hfgpu::fft2dC2CAsync(p, p, 64, 48, 1, hfgpu::FftSign::Inverse, nullptr), std::invalid_argument);
  EXPECT_THROW(hfgpu::fft2dC2CAsync(p, nullptr, 64, 64, 1, hfgpu::FftSign::Inverse, nullptr), std::invalid_argument);
  // Points move as 8-byte words: a real array starting on an odd float is refused, not misread.
  float* odd = reinterpret_cast<float*>(uintptr_t(256 + 4));
  float2* far = reinterpret_cast<float2*>(uintptr_t(1) << 40);
  EXPECT_THROW(hfgpu::fft2dR2CAsync(odd, far, 64, 64, 1, nullptr), std::invalid_argument);
  EXPECT_THROW(hfgpu::fftC2RAsync(far, odd, 64, 1, nullptr), std::invalid_argument);
}

}  // namespace
