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

// The mean of four texels as GL's box filter takes it, in a fixed order (no contraction): the
// CPU reference in the tests does the same operations.
__device__ inline float4 mean4(float4 a, float4 b, float4 c, float4 d) {
  auto m = [](float p, float q, float r, float s) {
    return __fmul_rn(__fadd_rn(__fadd_rn(p, q), __fadd_rn(r, s)), 0.25f);
  };
  return make_float4(m(a.x, b.x, c.x, d.x), m(a.y, b.y, c.y, d.y), m(a.z, b.z, c.z, d.z), m(a.w, b.w, c.w, d.w));
}

constexpr uint32_t kTile = 16;  // texels of level 0 a block reduces, a side

// One block per 16 x 16 tile of level 0: writes the tile, then its levels 1..4 from shared
// memory, and its 1-texel mean to scratch; the block that finishes last makes the levels below
// from the tile means (a (n / 16)^2 image), ping-ponging through scratch.
__global__ void __launch_bounds__(kTile * kTile) oceanWriteMips(const float2* __restrict__ packed, uint32_t n,
                                                                OceanMipSurfaces levels, cudaSurfaceObject_t heightSurface,
                                                                float4* scratch, uint32_t* counter) {
  __shared__ float4 tile[kTile][kTile];
  __shared__ bool last;
  const uint32_t tx = threadIdx.x % kTile, ty = threadIdx.x / kTile;
  const uint32_t x = blockIdx.x * kTile + tx, y = blockIdx.y * kTile + ty;
  const uint32_t count = n * n, at = y * n + x;
  const float2 a = packed[at], b = packed[count + at], c = packed[2 * count + at];
  const float4 f = make_float4(a.y, b.x, b.y, c.x);
  surf2Dwrite(f, levels.level[0], int(x * sizeof(float4)), int(y));
  if (heightSurface) surf2Dwrite(a.x, heightSurface, int(x * sizeof(float)), int(y));
  tile[ty][tx] = f;
  // Levels 1..4 of this tile: side 8, 4, 2, 1.
  for (uint32_t side = kTile / 2, level = 1; side >= 1; side /= 2, ++level) {
    __syncthreads();
    float4 m{};
    const bool active = tx < side && ty < side;
    if (active) {
      m = mean4(tile[2 * ty][2 * tx], tile[2 * ty][2 * tx + 1], tile[2 * ty + 1][2 * tx], tile[2 * ty + 1][2 * tx + 1]);
      surf2Dwrite(m, levels.level[level], int((blockIdx.x * side + tx) * sizeof(float4)), int(blockIdx.y * side + ty));
    }
    __syncthreads();
    if (active) tile[ty][tx] = m;
  }
  const uint32_t tiles = n / kTile;  // tile means a side: level 4's side
  if (tiles == 1) return;            // n = 16: level 4 is the last
  if (threadIdx.x == 0) {
    scratch[blockIdx.y * tiles + blockIdx.x] = tile[0][0];
    __threadfence();
    last = atomicAdd(counter, 1u) == tiles * tiles - 1;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  // Levels 5..: from side `tiles` down to 1, each from the previous one in scratch.
  float4* from = scratch;
  float4* to = scratch + 64 * 64;
  for (uint32_t side = tiles / 2, level = 5; side >= 1; side /= 2, ++level) {
    for (uint32_t i = threadIdx.x; i < side * side; i += blockDim.x) {
      const uint32_t cx = i % side, cy = i / side, w = 2 * side;
      const volatile float4* v = from;
      auto load = [&](uint32_t px, uint32_t py) {
        const volatile float4& q = v[py * w + px];
        return make_float4(q.x, q.y, q.z, q.w);
      };
      const float4 m = mean4(load(2 * cx, 2 * cy), load(2 * cx + 1, 2 * cy), load(2 * cx, 2 * cy + 1),
                             load(2 * cx + 1, 2 * cy + 1));
      surf2Dwrite(m, levels.level[level], int(cx * sizeof(float4)), int(cy));
      to[i] = m;
    }
    __syncthreads();
    float4* t = from;
    from = to;
    to = t;
  }
  if (threadIdx.x == 0) *counter = 0;
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

void launchOceanWriteMips(const float2* packed, uint32_t n, const OceanMipSurfaces& levels, cudaSurfaceObject_t height,
                          float4* scratch, uint32_t* counter, cudaStream_t stream) {
  oceanWriteMips<<<dim3(n / kTile, n / kTile), kTile * kTile, 0, stream>>>(packed, n, levels, height, scratch, counter);
  CUDA_CHECK(cudaGetLastError());
}

void launchOceanWriteArrays(const float2* packed, uint32_t n, float4* fields, float* height, cudaStream_t stream) {
  oceanWrite<false><<<writeGrid(n), kThreads, 0, stream>>>(packed, n, 0, 0, fields, height);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace hfgpu::detail
