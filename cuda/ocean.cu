// ocean.cu - the ocean's per-frame kernels (issue 14; host API src/gpu/ocean_step.h): the
// time-dependent spectrum h(k, t) packed for three inverse FFTs, and the fields written out.
// The arithmetic is hfr::OceanSimulation::evaluate's (render/ocean/ocean.cpp), line by line.
#include <cuda_runtime.h>

#include <cstdint>

#include "gpu/cuda_util.h"
#include "gpu/ocean_launch.h"

namespace hfgpu::detail {
namespace {

constexpr unsigned kThreads = 256;

__device__ inline float2 cmul(float2 a, float2 b) { return make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }
__device__ inline float2 conjugate(float2 a) { return make_float2(a.x, -a.y); }

// One wavenumber per thread: h = h0(k) e^{i w t} + conj(h0(-k)) e^{-i w t}; slopes i k h;
// displacement -i (k / |k|) h choppiness; packed as a = h + i sx, b = sy + i dx, c = dy.
__global__ void __launch_bounds__(kThreads) oceanSpectrum(OceanSpectrumDevice s, double seconds, float2* packed) {
  const uint32_t n = s.n, count = n * n;
  const uint32_t at = blockIdx.x * blockDim.x + threadIdx.x;
  if (at >= count) return;
  const uint32_t i = at % n, j = at / n;
  const uint32_t neg = ((n - j) % n) * n + (n - i) % n;
  // w t in double, reduced to whole turns before the float sine (t grows without bound).
  double turns = double(s.omega[at]) * seconds * 0.15915494309189533577;
  turns -= floor(turns);
  float sine, cosine;
  sincospif(2.0f * float(turns), &sine, &cosine);
  const float2 e = make_float2(cosine, sine);
  const float2 h0 = s.h0[at], h0neg = s.h0[neg];
  const float2 p = cmul(h0, e), q = cmul(conjugate(h0neg), conjugate(e));
  const float2 h = make_float2(p.x + q.x, p.y + q.y);
  const float kx = s.kx[at], ky = s.ky[at];
  const float k = sqrtf(kx * kx + ky * ky);
  // i kx h = (-kx h.y, kx h.x); -i u h = (u h.y, -u h.x).
  const float2 sx = make_float2(-kx * h.y, kx * h.x), sy = make_float2(-ky * h.y, ky * h.x);
  float2 dx = make_float2(0.0f, 0.0f), dy = dx;
  if (k > 0) {
    const float ux = kx / k * s.choppiness, uy = ky / k * s.choppiness;
    dx = make_float2(ux * h.y, -ux * h.x);
    dy = make_float2(uy * h.y, -uy * h.x);
  }
  // a = h + i sx, b = sy + i dx (i z = (-z.y, z.x)), c = dy.
  packed[at] = make_float2(h.x - sx.y, h.y + sx.x);
  packed[count + at] = make_float2(sy.x - dx.y, sy.y + dx.x);
  packed[2 * count + at] = dy;
}

// After the inverse FFTs: a = h + i dh/dx, b = dh/dy + i Dx, c = Dy (+ 0 i).
template <bool kSurfaces>
__global__ void __launch_bounds__(kThreads) oceanWrite(const float2* __restrict__ packed, uint32_t n,
                                                       cudaSurfaceObject_t fieldsSurface,
                                                       cudaSurfaceObject_t heightSurface, float4* fields,
                                                       float* height) {
  const uint32_t x = blockIdx.x * 32 + threadIdx.x % 32, y = blockIdx.y * (kThreads / 32) + threadIdx.x / 32;
  if (x >= n || y >= n) return;
  const uint32_t count = n * n, at = y * n + x;
  const float2 a = packed[at], b = packed[count + at], c = packed[2 * count + at];
  const float4 f = make_float4(a.y, b.x, b.y, c.x);
  if constexpr (kSurfaces) {
    surf2Dwrite(f, fieldsSurface, int(x * sizeof(float4)), int(y));
    if (heightSurface) surf2Dwrite(a.x, heightSurface, int(x * sizeof(float)), int(y));
  } else {
    fields[at] = f;
    if (height) height[at] = a.x;
  }
}

dim3 writeGrid(uint32_t n) { return dim3((n + 31) / 32, (n + kThreads / 32 - 1) / (kThreads / 32)); }

}  // namespace

void launchOceanSpectrum(const OceanSpectrumDevice& s, double seconds, float2* packed, cudaStream_t stream) {
  const uint32_t count = s.n * s.n;
  oceanSpectrum<<<(count + kThreads - 1) / kThreads, kThreads, 0, stream>>>(s, seconds, packed);
  CUDA_CHECK(cudaGetLastError());
}

void launchOceanWriteSurfaces(const float2* packed, uint32_t n, cudaSurfaceObject_t fields, cudaSurfaceObject_t height,
                              cudaStream_t stream) {
  oceanWrite<true><<<writeGrid(n), kThreads, 0, stream>>>(packed, n, fields, height, nullptr, nullptr);
  CUDA_CHECK(cudaGetLastError());
}

void launchOceanWriteArrays(const float2* packed, uint32_t n, float4* fields, float* height, cudaStream_t stream) {
  oceanWrite<false><<<writeGrid(n), kThreads, 0, stream>>>(packed, n, 0, 0, fields, height);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace hfgpu::detail
