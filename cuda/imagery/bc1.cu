// bc1.cu - BC1 encoders and tile mip levels on the GPU (src/gpu/imagery/bc1_encoder.h). The
// per-block arithmetic is bc1_core.cuh (shared with the CPU-side test); this file only maps it
// onto threads:
// - fast: one thread per 4x4 block; the single-colour tables in shared memory;
// - quality: one warp per block (kQualityWarps per thread block, each with its own shared
//   memory); the setup spread over the lanes, every lane evaluating every 32nd cluster split
//   (the splits listed once in the CPU's loop order, coefficients for 16 texels from a table),
//   then a warp-wide (error, index) minimum; the 565 refinement evaluates a round's 24 moves on
//   24 lanes. It is bound by instruction issue (H100: about 75% of the issue slots busy);
// - mips: one thread per output texel.
// Compiled with -fmad=false (src/gpu/imagery/CMakeLists.txt): no FMA contraction, so every
// float operation rounds as the CPU reference's does.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>

#include "gpu/cuda_util.h"
#include "gpu/imagery/bc1_encoder.h"
#include "imagery/bc1_core.cuh"

namespace hfgpu {

namespace {

// ---- tables: single-colour pairs, cluster splits and their coefficients ----

__device__ uint16_t gSingleColour[512];
__device__ uint32_t gSplits4[hfbc1::kSplits4];  // hfbc1::splitWord, bit 31: solvable for 16 texels
__device__ uint32_t gSplits3[hfbc1::kSplits3];  // i | j << 5, bit 31: solvable for 16 texels
__device__ float4 gCoef4[hfbc1::kSplits4];      // (A, B, C, 1 / det) for 16 texels
__device__ float4 gCoef3[hfbc1::kSplits3];
__device__ uint32_t gPairs[hfbc1::kSplits3];    // pair p = (a, b): a | b << 5

// The coefficients for 16 texels, computed on the device (so with this file's float rules,
// whatever the host compiler's) from the split words; marks the solvable splits.
__global__ void coefKernel() {
  const int s = int(blockIdx.x * blockDim.x + threadIdx.x);
  hfbc1::Coef cf;
  if (s < hfbc1::kSplits4) {
    const uint32_t w = gSplits4[s];
    const bool ok = hfbc1::splitCoef4(16, int(w & 31u), int((w >> 5) & 31u), int((w >> 10) & 31u), cf);
    gCoef4[s] = make_float4(cf.A, cf.B, cf.C, cf.id);
    gSplits4[s] = ok ? w | 0x80000000u : w;
  }
  if (s < hfbc1::kSplits3) {
    const uint32_t w = gSplits3[s];
    const bool ok = hfbc1::splitCoef3(16, int(w & 31u), int((w >> 5) & 31u), cf);
    gCoef3[s] = make_float4(cf.A, cf.B, cf.C, cf.id);
    gSplits3[s] = ok ? w | 0x80000000u : w;
  }
}

// Makes the tables once per process (the current device; this project uses one). Synchronises
// once, so that kernels on any stream (non-blocking ones too) see them.
void ensureTables() {
  static std::once_flag once;
  static std::string failure;
  std::call_once(once, [] {
    uint16_t single[512];
    hfbc1::makeSingleColourTables(single);
    uint32_t s4[hfbc1::kSplits4], s3[hfbc1::kSplits3], pairs[hfbc1::kSplits3];
    int n4 = 0, n3 = 0;
    for (int i = 0; i <= 16; ++i)
      for (int j = i; j <= 16; ++j) {
        s3[n3] = uint32_t(i) | uint32_t(j) << 5;
        pairs[n3++] = uint32_t(i) | uint32_t(j) << 5;
        for (int k = j; k <= 16; ++k) s4[n4++] = hfbc1::splitWord(i, j, k);
      }
    cudaError_t e = cudaMemcpyToSymbol(gSingleColour, single, sizeof single);
    if (e == cudaSuccess) e = cudaMemcpyToSymbol(gSplits4, s4, sizeof s4);
    if (e == cudaSuccess) e = cudaMemcpyToSymbol(gSplits3, s3, sizeof s3);
    if (e == cudaSuccess) e = cudaMemcpyToSymbol(gPairs, pairs, sizeof pairs);
    if (e == cudaSuccess) {
      coefKernel<<<(hfbc1::kSplits4 + 255) / 256, 256>>>();
      e = cudaGetLastError();
    }
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e != cudaSuccess) failure = std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
  });
  if (!failure.empty()) throw std::runtime_error("BC1 tables could not be made: " + failure);
}

// Where block (bx, BY) of a tall image of tiles goes: tiles of tileBlocksH block rows, each
// tile's blocks row-major at base + tile * tileStride.
struct BlockOut {
  uint8_t* base;
  int blocksW, blocksH, tileBlocksH;
  size_t tileStride;
  __device__ uint64_t* at(int bx, int by) const {
    const int tile = by / tileBlocksH, row = by - tile * tileBlocksH;
    return reinterpret_cast<uint64_t*>(base + size_t(tile) * tileStride + (size_t(row) * size_t(blocksW) + size_t(bx)) * 8);
  }
};

__device__ __forceinline__ void loadBlock(const uint8_t* rgba, int width, int bx, int by, uint32_t w[16]) {
  const uint4* rows = reinterpret_cast<const uint4*>(rgba);
  const size_t rowQuads = size_t(width) / 4;
  for (int y = 0; y < 4; ++y) {
    const uint4 q = __ldg(rows + (size_t(by) * 4 + size_t(y)) * rowQuads + size_t(bx));
    w[4 * y] = q.x;
    w[4 * y + 1] = q.y;
    w[4 * y + 2] = q.z;
    w[4 * y + 3] = q.w;
  }
}

__global__ void __launch_bounds__(256) fastKernel(const uint8_t* __restrict__ rgba, int width, BlockOut out) {
  __shared__ uint16_t table[512];
  for (int i = threadIdx.x; i < 512; i += blockDim.x) table[i] = gSingleColour[i];
  __syncthreads();
  const long long b = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= (long long)out.blocksW * out.blocksH) return;
  const int bx = int(b % out.blocksW), by = int(b / out.blocksW);
  uint32_t w[16];
  loadBlock(rgba, width, bx, by, w);
  *out.at(bx, by) = hfbc1::fastBlock(w, table);
}

// Warp-wide minimum of (err, index): the smaller error, the smaller index on ties.
template <typename E>
__device__ __forceinline__ void warpArgMin(E& err, int& index) {
  for (int d = 16; d > 0; d >>= 1) {
    const E e = __shfl_xor_sync(0xffffffffu, err, d);
    const int i = __shfl_xor_sync(0xffffffffu, index, d);
    if (e < err || (e == err && i < index)) {
      err = e;
      index = i;
    }
  }
}

constexpr int kQualityWarps = 4;  // blocks per thread block (shared memory: about 8.4 KB each)
constexpr unsigned kAll = 0xffffffffu;

// A warp's shared memory: the block, the ordered points, their prefix sums and the per-pair
// terms of the cluster fit (read by every lane, written once).
struct QualityShared {
  hfbc1::QTexel tex[16];  // texel t (for assignQ)
  int4 col[16];           // the opaque texels' colours, compacted, in texel order
  float4 pts[16];         // the opaque colours ordered along the axis (clusterFit's pts)
  float4 pre[17];         // their prefix sums
  float4 uz[hfbc1::kSplits3];  // pair (i, j): U[0..2], Z[0]
  float2 uz2[hfbc1::kSplits3];  //              Z[1..2]
  float4 tw[hfbc1::kSplits3];  // pair (j, k): T[0..2], W[0]
  float2 tw2[hfbc1::kSplits3];  //              W[1..2]
};

__device__ __forceinline__ void load3(const float4& v, float out[3]) {
  out[0] = v.x;
  out[1] = v.y;
  out[2] = v.z;
}
__device__ __forceinline__ float pick3(int i, float a, float b, float c) { return i == 0 ? a : i == 1 ? b : c; }
__device__ __forceinline__ int pick3(int i, int a, int b, int c) { return i == 0 ? a : i == 1 ? b : c; }

// The best of the lanes' candidates (err, order): every lane gets the winner's endpoints and indices.
__device__ __forceinline__ bool takeBest(int err, int order, uint16_t e0, uint16_t e1, uint32_t ind, int& bestErr,
                                         uint16_t& best0, uint16_t& best1, uint32_t& bestIndices) {
  int winner = order;
  warpArgMin(err, winner);
  if (!(err < bestErr)) return false;
  const int from = winner & 31;
  bestErr = err;
  best0 = uint16_t(__shfl_sync(kAll, int(e0), from));
  best1 = uint16_t(__shfl_sync(kAll, int(e1), from));
  bestIndices = __shfl_sync(kAll, ind, from);
  return true;
}

__global__ void __launch_bounds__(32 * kQualityWarps) qualityKernel(const uint8_t* __restrict__ rgba, int width,
                                                                   BlockOut out) {
  __shared__ QualityShared shared[kQualityWarps];
  const int lane = int(threadIdx.x & 31), warp = int(threadIdx.x >> 5);
  const long long b = (long long)blockIdx.x * kQualityWarps + warp;
  if (b >= (long long)out.blocksW * out.blocksH) return;  // whole warps leave together
  const int bx = int(b % out.blocksW), by = int(b / out.blocksW);
  QualityShared& S = shared[warp];

  // The block: lane t < 16 holds texel t (gather()).
  uint32_t w = 0;
  if (lane < 16)
    w = __ldg(reinterpret_cast<const uint32_t*>(rgba) + (size_t(by) * 4 + size_t(lane >> 2)) * size_t(width) +
              size_t(bx) * 4 + size_t(lane & 3));
  const bool opaque = lane < 16 && (w >> 24) >= 128u;
  const uint32_t omask = __ballot_sync(kAll, opaque);
  const int n = __popc(omask);
  if (n == 0) {  // fully transparent: 3-colour mode, every index 3
    if (lane == 0) *out.at(bx, by) = hfbc1::block64(0, 0, 0xffffffffu);
    return;
  }
  const bool transparent = n < 16;
  const int r = int(w & 255u), g = int((w >> 8) & 255u), bl = int((w >> 16) & 255u);
  if (lane < 16) S.tex[lane] = hfbc1::QTexel{r, g, bl, opaque ? -1 : 0};
  if (opaque) S.col[__popc(omask & ((1u << lane) - 1u))] = make_int4(r, g, bl, 0);
  // Integer sums: exact in any order (the CPU's float sums of integers below 2^24 too).
  const int sum_r = __reduce_add_sync(kAll, opaque ? r : 0), sum_g = __reduce_add_sync(kAll, opaque ? g : 0),
            sum_b = __reduce_add_sync(kAll, opaque ? bl : 0);
  const int sumsq = __reduce_add_sync(kAll, opaque ? r * r + g * g + bl * bl : 0);
  __syncwarp();

  // principalAxis(): mean, then lane c < 6 sums the covariance entry c in texel order.
  const float inv = 1.0f / float(n);
  const float mean[3] = {float(sum_r) * inv, float(sum_g) * inv, float(sum_b) * inv};
  float axis[3];
  {
    const int c = lane % 6, ca = hfbc1::covFirst(c), cb = hfbc1::covSecond(c);
    const float ma = pick3(ca, mean[0], mean[1], mean[2]), mb = pick3(cb, mean[0], mean[1], mean[2]);
    float acc = 0.0f;
    for (int t = 0; t < n; ++t) {
      const int4 x = S.col[t];
      acc += (float(pick3(ca, x.x, x.y, x.z)) - ma) * (float(pick3(cb, x.x, x.y, x.z)) - mb);
    }
    float cov[6];
    for (int q = 0; q < 6; ++q) cov[q] = __shfl_sync(kAll, acc, q);
    hfbc1::axisFromCov(cov, axis);
  }
  const int first = __ffs(int(omask)) - 1;
  const uint32_t w_first = __shfl_sync(kAll, w, first);
  const bool solid = !__any_sync(kAll, opaque && ((w ^ w_first) & 0x00ffffffu) != 0);

  // The first candidates, in the CPU's order: pairs (a, c) that considerPair expands.
  uint16_t pa[3], pc[3];
  int pairs = 1;
  if (solid) {
    const float f[3] = {float(w_first & 255u), float((w_first >> 8) & 255u), float((w_first >> 16) & 255u)};
    pa[0] = pc[0] = hfbc1::pack565f(f);
  } else {
    // Lane t < n: compacted texel t.
    const int4 mine = S.col[lane & 15];
    const int rgb[3] = {mine.x, mine.y, mine.z};
    // axisEndpoints(): the extremes in texel order (the CPU's comparisons, one after another).
    const float d = hfbc1::axisOffset(rgb, mean, axis);
    float lo = 0.0f, hi = 0.0f;
    for (int t = 0; t < n; ++t) {
      const float v = __shfl_sync(kAll, d, t);
      if (t == 0 || v < lo) lo = v;
      if (t == 0 || v > hi) hi = v;
    }
    hfbc1::axisEndpointsFrom(lo, hi, mean, axis, pa[0], pc[0]);

    // clusterFit()'s order: the insertion sort is stable, so texel t goes to the number of
    // texels before it in (projection, texel) order.
    const float proj = hfbc1::clusterProj(rgb, axis);
    int rank = 0;
    for (int u = 0; u < n; ++u) {
      const float pu = __shfl_sync(kAll, proj, u);
      rank += (pu < proj || (pu == proj && u < lane)) ? 1 : 0;
    }
    if (lane < n) S.pts[rank] = make_float4(float(rgb[0]), float(rgb[1]), float(rgb[2]), 0.0f);
    __syncwarp();
    // Prefix sums: lane i repeats the CPU's chain of additions up to point i; xx the CPU's chain.
    float acc[3] = {0.0f, 0.0f, 0.0f};
    float term = 0.0f;
    for (int i = 0; i < n; ++i) {
      float p[3];
      load3(S.pts[i], p);
      if (i <= lane)
        for (int q = 0; q < 3; ++q) acc[q] += p[q];
      if (i == lane) term = p[0] * p[0] + p[1] * p[1] + p[2] * p[2];
    }
    if (lane < n) S.pre[lane + 1] = make_float4(acc[0], acc[1], acc[2], 0.0f);
    if (lane == 0) S.pre[0] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    float xx = 0.0f;
    for (int i = 0; i < n; ++i) xx += __shfl_sync(kAll, term, i);
    __syncwarp();
    float pre_n[3];
    load3(S.pre[n], pre_n);
    // The per-pair terms of the 4-cluster fit.
    for (int p = lane; p < hfbc1::kSplits3; p += 32) {
      const uint32_t ab = __ldg(gPairs + p);
      const int pa_ = int(ab & 31u), pb_ = int(ab >> 5);
      if (pb_ > n) continue;
      float pre_a[3], pre_b[3], U[3], Z[3], T[3], W[3];
      load3(S.pre[pa_], pre_a);
      load3(S.pre[pb_], pre_b);
      hfbc1::pairTermsIJ(pre_a, pre_b, U, Z);
      hfbc1::pairTermsJK(pre_a, pre_b, pre_n, T, W);
      S.uz[p] = make_float4(U[0], U[1], U[2], Z[0]);
      S.uz2[p] = make_float2(Z[1], Z[2]);
      S.tw[p] = make_float4(T[0], T[1], T[2], W[0]);
      S.tw2[p] = make_float2(W[1], W[2]);
    }
    __syncwarp();

    // 4 clusters: lane l evaluates splits l, l + 32, ...; then the (error, split) minimum.
    float bestErr = hfbc1::kNoFit;
    int bestSplit = 0x7fffffff;
    for (int s = lane; s < hfbc1::kSplits4; s += 32) {
      const uint32_t sw = __ldg(gSplits4 + s);
      const int k = int((sw >> 10) & 31u);
      if (k > n) continue;
      hfbc1::Coef cf;
      if (n == 16) {
        if (!(sw >> 31)) continue;
        const float4 c4 = __ldg(gCoef4 + s);
        cf = hfbc1::Coef{c4.x, c4.y, c4.z, c4.w};
      } else if (!hfbc1::splitCoef4(n, int(sw & 31u), int((sw >> 5) & 31u), k, cf)) {
        continue;
      }
      const int pij = int((sw >> 15) & 255u), pjk = int(sw >> 23) & 255;
      const float4 u = S.uz[pij], t = S.tw[pjk];
      const float2 u2 = S.uz2[pij], t2 = S.tw2[pjk];
      const float X[3] = {u.x + t.x, u.y + t.y, u.z + t.z};  // U + T
      const float Y[3] = {t.w + u.w, t2.x + u2.x, t2.y + u2.y};  // W + Z
      float a[3], c[3];
      const float err = hfbc1::solveSplit(cf, X, Y, xx, a, c);
      if (err < bestErr) {  // splits rise with s: the earliest wins a tie
        bestErr = err;
        bestSplit = s;
      }
    }
    warpArgMin(bestErr, bestSplit);
    if (bestErr < hfbc1::kNoFit) {  // the winner again, on every lane (uniform)
      const uint32_t sw = __ldg(gSplits4 + bestSplit);
      hfbc1::Coef cf;
      hfbc1::splitCoef4(n, int(sw & 31u), int((sw >> 5) & 31u), int((sw >> 10) & 31u), cf);
      const int pij = int((sw >> 15) & 255u), pjk = int(sw >> 23) & 255;
      const float4 u = S.uz[pij], t = S.tw[pjk];
      const float2 u2 = S.uz2[pij], t2 = S.tw2[pjk];
      const float X[3] = {u.x + t.x, u.y + t.y, u.z + t.z};
      const float Y[3] = {t.w + u.w, t2.x + u2.x, t2.y + u2.y};
      float a[3], c[3];
      hfbc1::solveSplit(cf, X, Y, xx, a, c);
      pa[pairs] = hfbc1::pack565f(a);
      pc[pairs] = hfbc1::pack565f(c);
      ++pairs;
    }
    // 3 clusters.
    bestErr = hfbc1::kNoFit;
    bestSplit = 0x7fffffff;
    for (int s = lane; s < hfbc1::kSplits3; s += 32) {
      const uint32_t sw = __ldg(gSplits3 + s);
      const int i = int(sw & 31u), j = int((sw >> 5) & 31u);
      if (j > n) continue;
      hfbc1::Coef cf;
      if (n == 16) {
        if (!(sw >> 31)) continue;
        const float4 c4 = __ldg(gCoef3 + s);
        cf = hfbc1::Coef{c4.x, c4.y, c4.z, c4.w};
      } else if (!hfbc1::splitCoef3(n, i, j, cf)) {
        continue;
      }
      float pre_i[3], pre_j[3], X[3], Y[3], a[3], c[3];
      load3(S.pre[i], pre_i);
      load3(S.pre[j], pre_j);
      hfbc1::cluster3XY(pre_i, pre_j, pre_n, X, Y);
      const float err = hfbc1::solveSplit(cf, X, Y, xx, a, c);
      if (err < bestErr) {
        bestErr = err;
        bestSplit = s;
      }
    }
    warpArgMin(bestErr, bestSplit);
    if (bestErr < hfbc1::kNoFit) {
      const uint32_t sw = __ldg(gSplits3 + bestSplit);
      const int i = int(sw & 31u), j = int((sw >> 5) & 31u);
      hfbc1::Coef cf;
      hfbc1::splitCoef3(n, i, j, cf);
      float pre_i[3], pre_j[3], X[3], Y[3], a[3], c[3];
      load3(S.pre[i], pre_i);
      load3(S.pre[j], pre_j);
      hfbc1::cluster3XY(pre_i, pre_j, pre_n, X, Y);
      hfbc1::solveSplit(cf, X, Y, xx, a, c);
      pa[pairs] = hfbc1::pack565f(a);
      pc[pairs] = hfbc1::pack565f(c);
      ++pairs;
    }
  }

  // Their considerPair candidates (at most 6), one per lane, then the (error, order) minimum.
  int bestErr = 1 << 30;
  uint16_t best0 = 0, best1 = 0;
  uint32_t bestIndices = 0;
  {
    int err = 0x7fffffff;
    uint16_t e0 = 0, e1 = 0;
    uint32_t ind = 0;
    int slot = 0;
    for (int p = 0; p < pairs; ++p) {
      uint16_t o0[2], o1[2];
      const int count = hfbc1::pairCandidates(transparent, pa[p], pc[p], o0, o1);
      for (int q = 0; q < count; ++q, ++slot)
        if (slot == lane) {
          e0 = o0[q];
          e1 = o1[q];
        }
    }
    if (lane < slot) err = hfbc1::assignQ(S.tex, sumsq, e0, e1, ind);
    takeBest(err, lane, e0, e1, ind, bestErr, best0, best1, bestIndices);
  }
  // refine(): at most 8 rounds of the 12 moves x 2 orders from the round's start, lane 2m + q
  // taking move m's q-th pair.
  for (int round = 0; round < 8; ++round) {
    int err = 0x7fffffff;
    uint16_t e0 = 0, e1 = 0;
    uint32_t ind = 0;
    uint16_t a = 0, c = 0;
    if (lane < 24 && hfbc1::refineMove(best0, best1, lane >> 1, a, c)) {
      uint16_t o0[2], o1[2];
      const int count = hfbc1::pairCandidates(transparent, a, c, o0, o1);
      const int q = lane & 1;
      if (q < count) {
        e0 = o0[q];
        e1 = o1[q];
        err = hfbc1::assignQ(S.tex, sumsq, e0, e1, ind);
      }
    }
    if (!takeBest(err, lane, e0, e1, ind, bestErr, best0, best1, bestIndices)) break;
  }
  if (lane == 0) *out.at(bx, by) = hfbc1::block64(best0, best1, bestIndices);
}

// One 2x2 reduction (buildMipChain's rule) for `count` tiles of size x size one after another.
__global__ void reduceKernel(const uint8_t* __restrict__ src, int size, long long texels, uint8_t* __restrict__ dst) {
  const long long o = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (o >= texels) return;
  const int half = size / 2;
  const long long per = (long long)half * half;
  const long long tile = o / per;
  const int rest = int(o - tile * per), y = rest / half, x = rest - y * half;
  const uint32_t* in = reinterpret_cast<const uint32_t*>(src) + tile * (long long)size * size;
  int sum[3] = {0, 0, 0}, covered = 0;
  for (int q = 0; q < 4; ++q) {
    const uint32_t v = __ldg(in + (size_t(2 * y + (q >> 1)) * size_t(size) + size_t(2 * x + (q & 1))));
    if ((v >> 24) < 128u) continue;
    ++covered;
    for (int k = 0; k < 3; ++k) sum[k] += int((v >> (8 * k)) & 255u);
  }
  uint32_t out = 0;
  if (covered >= 2) {
    for (int k = 0; k < 3; ++k) out |= uint32_t((sum[k] + covered / 2) / covered) << (8 * k);
    out |= 255u << 24;
  }
  reinterpret_cast<uint32_t*>(dst)[o] = out;
}

void checkSizes(int width, int height) {
  if (width <= 0 || height <= 0 || width % 4 || height % 4 ||
      (long long)(width / 4) * (long long)(height / 4) > (1LL << 31))
    throw std::invalid_argument("BC1: image of " + std::to_string(width) + " x " + std::to_string(height) +
                                " texels (positive multiples of 4, at most 2^31 blocks)");
}

void launchBc1(const uint8_t* rgba, int width, int height, himg::Bc1Mode mode, const BlockOut& out,
               cudaStream_t stream) {
  ensureTables();
  const long long blocks = (long long)out.blocksW * out.blocksH;
  if (blocks == 0) return;
  if (mode == himg::Bc1Mode::Fast) {
    fastKernel<<<unsigned((blocks + 255) / 256), 256, 0, stream>>>(rgba, width, out);
  } else {
    qualityKernel<<<unsigned((blocks + kQualityWarps - 1) / kQualityWarps), 32 * kQualityWarps, 0, stream>>>(
        rgba, width, out);
  }
  CUDA_CHECK(cudaGetLastError());
  (void)height;
}

}  // namespace

void encodeBc1Async(const uint8_t* rgba, int width, int height, himg::Bc1Mode mode, uint8_t* blocks,
                    cudaStream_t stream) {
  checkSizes(width, height);
  const BlockOut out{blocks, width / 4, height / 4, height / 4, 0};
  launchBc1(rgba, width, height, mode, out, stream);
}

void reduceMipAsync(const uint8_t* src, int size, size_t count, uint8_t* dst, cudaStream_t stream) {
  if (size < 2 || size % 2 || size > 65536 || count > (size_t(1) << 31) / (size_t(size) * size_t(size)))
    throw std::invalid_argument("reduceMipAsync: tile size " + std::to_string(size) + " x " + std::to_string(count));
  const long long texels = (long long)(size / 2) * (size / 2) * (long long)count;
  if (texels == 0) return;
  reduceKernel<<<unsigned((texels + 255) / 256), 256, 0, stream>>>(src, size, texels, dst);
  CUDA_CHECK(cudaGetLastError());
}

size_t bc1ChainLevelOffset(int size, int level) {
  size_t offset = 0;
  for (int l = 0; l < level; ++l) offset += size_t(size >> l) * size_t(size >> l) / 2;
  return offset;
}

size_t bc1ChainBytes(int size, int levels) { return bc1ChainLevelOffset(size, levels); }

size_t mipScratchBytes(int size, int levels, size_t count) {
  size_t bytes = 0;
  for (int l = 1; l < levels; ++l) bytes += size_t(size >> l) * size_t(size >> l) * 4 * count;
  return bytes;
}

void encodeTileChainsAsync(const uint8_t* tiles, int size, int levels, size_t count, himg::Bc1Mode mode,
                           uint8_t* scratch, uint8_t* chains, cudaStream_t stream) {
  if (levels < 1 || size < 4 || (size >> (levels - 1)) < 4 || (size >> (levels - 1)) % 4 || size % (1 << (levels - 1)))
    throw std::invalid_argument("encodeTileChainsAsync: " + std::to_string(levels) + " levels of a " +
                                std::to_string(size) + " texel tile");
  if (count == 0) return;
  const size_t chain = bc1ChainBytes(size, levels);
  const uint8_t* level = tiles;
  uint8_t* next = scratch;
  for (int l = 0; l < levels; ++l) {
    const int s = size >> l;
    if ((long long)(s / 4) * (long long)(s / 4) * (long long)count > (1LL << 31))
      throw std::invalid_argument("encodeTileChainsAsync: too many tiles in one call");
    const BlockOut out{chains + bc1ChainLevelOffset(size, l), s / 4, int(size_t(s / 4) * count), s / 4, chain};
    launchBc1(level, s, int(size_t(s) * count), mode, out, stream);
    if (l + 1 < levels) {
      reduceMipAsync(level, s, count, next, stream);
      level = next;
      next += size_t(s / 2) * size_t(s / 2) * 4 * count;
    }
  }
}

}  // namespace hfgpu
