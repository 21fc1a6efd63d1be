// spectral.cu - the kernels of hfterrain's GPU fields (host API src/gpu/spectral_field.h): the
// weighted random spectrum, the radix-r step that splits lines too long for one block's shared
// memory, all in double precision. The FFT passes themselves, and the crop of the real part fused
// into the last one, are cuda/fft.cu's (their double instances).
#include <cuda_runtime.h>

#include <cstdint>

#include "gpu/cuda_util.h"
#include "gpu/spectral_core.h"
#include "gpu/spectral_launch.h"

namespace hfgpu::detail {
namespace {

constexpr unsigned kThreads = 256;

// The kernels run on 2D grids: x over the fast index (threads), y over the slow one (blocks),
// so that no thread divides a 64-bit index (a 64-bit division per point made these kernels
// compute-bound on the H100). Every dimension here is at most 65535 (m <= 49152).

// Bin (ky, kx) of the m x m array: the half spectrum's bin weighted for a c2c inverse whose real
// part equals FFTW's c2r (spectral_field.h), 0 above m / 2. x: kx, y: ky. In double, with the
// CPU's own formulas (hfspectral::bin).
__global__ void spectrumFill(double2* grid, hfspectral::FieldSpec spec) {
  const uint32_t kx = blockIdx.x * blockDim.x + threadIdx.x, ky = blockIdx.y;
  if (kx >= uint32_t(spec.m)) return;
  double2 v{0.0, 0.0};
  if (kx <= uint32_t(spec.m / 2)) {
    double re, im;
    hfspectral::bin(spec, int(ky), int(kx), re, im);
    const double w = (kx == 0 || kx == uint32_t(spec.m / 2)) ? 1.0 : 2.0;
    v = double2{w * re, w * im};
  }
  grid[uint64_t(ky) * uint64_t(spec.m) + kx] = v;
}

constexpr uint32_t kMaxRadix = 6;

// x: the fast index of (line, j2) (lines when they are adjacent in memory, else j2), y: the other.
__global__ void radixStep(double2* grid, uint32_t r, uint32_t n2, uint32_t lines, uint64_t lineStride,
                          uint64_t pointStride, int sign) {
  const bool lineFastest = lineStride < pointStride;  // columns: neighbouring threads, neighbouring lines
  const uint32_t f = blockIdx.x * blockDim.x + threadIdx.x, g = blockIdx.y;
  if (f >= (lineFastest ? lines : n2)) return;
  const uint32_t line = lineFastest ? f : g, j2 = lineFastest ? g : f;
  const uint32_t m = r * n2;
  double2* base = grid + uint64_t(line) * lineStride;
  double2 v[kMaxRadix];
  for (uint32_t j1 = 0; j1 < r; ++j1) v[j1] = base[(uint64_t(j1) * n2 + j2) * pointStride];
  // The r-point DFT's roots exp(sign 2 pi i q / r) and the twiddle exp(sign 2 pi i j2 k1 / m)
  // from sincospi of exact ratios (the products reduced mod r and mod m in integers first).
  double rootS[kMaxRadix], rootC[kMaxRadix];
  for (uint32_t q = 0; q < r; ++q) {
    sincospi(2.0 * double(q) / double(r), &rootS[q], &rootC[q]);
    if (sign < 0) rootS[q] = -rootS[q];
  }
  for (uint32_t k1 = 0; k1 < r; ++k1) {
    double re = 0, im = 0;
    for (uint32_t j1 = 0; j1 < r; ++j1) {
      const uint32_t q = (j1 * k1) % r;
      re += v[j1].x * rootC[q] - v[j1].y * rootS[q];
      im += v[j1].x * rootS[q] + v[j1].y * rootC[q];
    }
    double sn = 0.0, cs = 1.0;
    if (k1 > 0) {
      sincospi(2.0 * double((uint64_t(j2) * k1) % m) / double(m), &sn, &cs);
      if (sign < 0) sn = -sn;
    }
    base[(uint64_t(k1) * n2 + j2) * pointStride] = double2{re * cs - im * sn, re * sn + im * cs};
  }
}

}  // namespace

dim3 grid2d(uint64_t fast, uint64_t slow) {
  return dim3(unsigned((fast + kThreads - 1) / kThreads), unsigned(slow));
}

void launchSpectrumFill(void* grid, const hfspectral::FieldSpec& spec, void* stream) {
  spectrumFill<<<grid2d(uint64_t(spec.m), uint64_t(spec.m)), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<double2*>(grid), spec);
  CUDA_CHECK(cudaGetLastError());
}

void launchRadixStep(void* grid, uint32_t r, uint32_t n2, uint64_t lines, uint64_t lineStride, uint64_t pointStride,
                     int sign, void* stream) {
  const bool lineFastest = lineStride < pointStride;
  radixStep<<<lineFastest ? grid2d(lines, n2) : grid2d(n2, lines), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<double2*>(grid), r, n2, uint32_t(lines), lineStride, pointStride, sign);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace hfgpu::detail
