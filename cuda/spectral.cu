// spectral.cu - the kernels of hfterrain's GPU fields (host API src/gpu/spectral_field.h): the
// weighted random spectrum, the radix-r step that splits lines too long for one block's shared
// memory, and the crop of the real part. The FFT passes themselves are cuda/fft.cu's.
#include <cuda_runtime.h>

#include <cstdint>

#include "gpu/cuda_util.h"
#include "gpu/spectral_core.h"
#include "gpu/spectral_launch.h"

namespace hfgpu::detail {
namespace {

constexpr unsigned kThreads = 256;

unsigned blocksFor(uint64_t work) {
  const uint64_t b = (work + kThreads - 1) / kThreads;
  return unsigned(b < (1u << 30) ? b : (1u << 30));  // the kernels loop over the rest
}

// Bin (ky, kx) of the m x m array: the half spectrum's bin weighted for a c2c inverse whose real
// part equals FFTW's c2r (spectral_field.h), 0 above m / 2.
__global__ void spectrumFill(float2* grid, hfspectral::FieldSpec spec) {
  const uint64_t m = uint64_t(spec.m), total = m * m;
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < total; i += uint64_t(gridDim.x) * blockDim.x) {
    const int ky = int(i / m), kx = int(i % m);
    float2 v{0.0f, 0.0f};
    if (kx <= spec.m / 2) {
      float re, im;
      hfspectral::binFloat(spec, ky, kx, re, im);
      const float w = (kx == 0 || kx == spec.m / 2) ? 1.0f : 2.0f;
      v = float2{w * re, w * im};
    }
    grid[i] = v;
  }
}

__global__ void radixStep(float2* grid, uint32_t r, uint32_t n2, uint64_t lines, uint64_t lineStride,
                          uint64_t pointStride, int sign) {
  const uint64_t total = lines * n2, m = uint64_t(r) * n2;
  const bool lineFastest = lineStride < pointStride;  // columns: neighbouring threads, neighbouring lines
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < total; i += uint64_t(gridDim.x) * blockDim.x) {
    const uint64_t line = lineFastest ? i % lines : i / n2, j2 = lineFastest ? i / lines : i % n2;
    float2* base = grid + line * lineStride;
    float2 v[4];
    for (uint32_t j1 = 0; j1 < r; ++j1) v[j1] = base[(uint64_t(j1) * n2 + j2) * pointStride];
    // In float, like the FFT passes around it: the r-point DFT's roots exp(sign 2 pi i q / r) and
    // the twiddle exp(sign 2 pi i j2 k1 / m) from sincospif of exact ratios (the products are
    // reduced mod r and mod m in integers first), about 1 ulp each. (Double sincospi per point
    // made this step compute-bound: 19 ms of the 24576^2 field's 56 on the H100.)
    float rootS[4], rootC[4];
    for (uint32_t q = 0; q < r; ++q) {
      sincospif(2.0f * float(q) / float(r), &rootS[q], &rootC[q]);
      if (sign < 0) rootS[q] = -rootS[q];
    }
    for (uint32_t k1 = 0; k1 < r; ++k1) {
      float re = 0, im = 0;
      for (uint32_t j1 = 0; j1 < r; ++j1) {
        const uint32_t q = (j1 * k1) % r;
        re += v[j1].x * rootC[q] - v[j1].y * rootS[q];
        im += v[j1].x * rootS[q] + v[j1].y * rootC[q];
      }
      float s, c;
      sincospif(2.0f * float((j2 * k1) % m) / float(m), &s, &c);
      if (sign < 0) s = -s;
      base[(uint64_t(k1) * n2 + j2) * pointStride] = float2{re * c - im * s, re * s + im * c};
    }
  }
}

__device__ inline uint64_t fourStepPos(uint64_t i, uint32_t r, uint32_t n2) {
  return r == 1 ? i : (i % r) * n2 + i / r;
}

__global__ void cropReal(const float2* grid, float* out, uint32_t m, uint32_t r, uint32_t n2, uint32_t tile) {
  const uint64_t total = uint64_t(tile) * tile;
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < total; i += uint64_t(gridDim.x) * blockDim.x) {
    const uint64_t y = i / tile, x = i % tile;
    out[i] = grid[fourStepPos(y, r, n2) * m + fourStepPos(x, r, n2)].x;
  }
}

}  // namespace

void launchSpectrumFill(void* grid, const hfspectral::FieldSpec& spec, void* stream) {
  const uint64_t total = uint64_t(spec.m) * uint64_t(spec.m);
  spectrumFill<<<blocksFor(total), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(static_cast<float2*>(grid), spec);
  CUDA_CHECK(cudaGetLastError());
}

void launchRadixStep(void* grid, uint32_t r, uint32_t n2, uint64_t lines, uint64_t lineStride, uint64_t pointStride,
                     int sign, void* stream) {
  radixStep<<<blocksFor(lines * n2), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<float2*>(grid), r, n2, lines, lineStride, pointStride, sign);
  CUDA_CHECK(cudaGetLastError());
}

void launchCropReal(const void* grid, float* out, uint32_t m, uint32_t r, uint32_t n2, uint32_t tile, void* stream) {
  cropReal<<<blocksFor(uint64_t(tile) * tile), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float2*>(grid), out, m, r, n2, tile);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace hfgpu::detail
