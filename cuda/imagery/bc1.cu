// bc1.cu - BC1 encoders and tile mip levels on the GPU (src/gpu/imagery/bc1_encoder.h). The
// per-block arithmetic is bc1_core.cuh (shared with the CPU-side test); this file only maps it
// onto threads:
// - fast: one thread per 4x4 block; the single-colour tables in shared memory;
// - quality: one warp per block; every lane evaluates every 32nd cluster split (the splits
//   listed once in lexicographic order, the CPU's loop order), then a warp-wide (error, index)
//   minimum; the 565 refinement evaluates a round's 24 moves on 24 lanes;
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

// ---- constant data: single-colour tables and the cluster splits ----

constexpr int kSplits4 = 969;  // (i, j, k), 0 <= i <= j <= k <= 16, lexicographic
constexpr int kSplits3 = 153;  // (i, j), 0 <= i <= j <= 16

__device__ uint16_t gSingleColour[512];
__device__ uint32_t gSplits4[kSplits4];  // i | j << 8 | k << 16
__device__ uint32_t gSplits3[kSplits3];  // i | j << 8

// Uploads the tables once per process (the current device; this project uses one).
void ensureTables() {
  static std::once_flag once;
  static std::string failure;
  std::call_once(once, [] {
    uint16_t single[512];
    hfbc1::makeSingleColourTables(single);
    uint32_t s4[kSplits4], s3[kSplits3];
    int n4 = 0, n3 = 0;
    for (uint32_t i = 0; i <= 16; ++i)
      for (uint32_t j = i; j <= 16; ++j) {
        s3[n3++] = i | j << 8;
        for (uint32_t k = j; k <= 16; ++k) s4[n4++] = i | j << 8 | k << 16;
      }
    cudaError_t e = cudaMemcpyToSymbol(gSingleColour, single, sizeof single);
    if (e == cudaSuccess) e = cudaMemcpyToSymbol(gSplits4, s4, sizeof s4);
    if (e == cudaSuccess) e = cudaMemcpyToSymbol(gSplits3, s3, sizeof s3);
    if (e != cudaSuccess) failure = std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
  });
  if (!failure.empty()) throw std::runtime_error("BC1 tables could not be uploaded: " + failure);
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

constexpr int kQualityWarps = 4;  // blocks per thread block

__global__ void __launch_bounds__(32 * kQualityWarps) qualityKernel(const uint8_t* __restrict__ rgba, int width,
                                                                   BlockOut out) {
  // The block's texels and the cluster fit's prefix sums once per warp in shared memory (per
  // lane they would be 32 copies in local memory); lane 0 writes them, the warp reads them.
  __shared__ hfbc1::QBlock blocks[kQualityWarps];
  __shared__ hfbc1::ClusterSetup setups[kQualityWarps];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const long long b = (long long)blockIdx.x * kQualityWarps + warp;
  if (b >= (long long)out.blocksW * out.blocksH) return;  // whole warps leave together
  const int bx = int(b % out.blocksW), by = int(b / out.blocksW);
  hfbc1::QBlock& blk = blocks[warp];
  if (lane == 0) {
    uint32_t w[16];
    loadBlock(rgba, width, bx, by, w);
    hfbc1::gather(w, blk);
  }
  __syncwarp();
  if (blk.n == 0) {
    if (lane == 0) *out.at(bx, by) = hfbc1::block64(0, 0, 0xffffffffu);
    return;
  }
  float mean[3], axis[3];
  hfbc1::principalAxis(blk, mean, axis);
  bool solid = true;
  for (int t = 1; t < blk.n; ++t)
    solid = solid && blk.rgb[t][0] == blk.rgb[0][0] && blk.rgb[t][1] == blk.rgb[0][1] && blk.rgb[t][2] == blk.rgb[0][2];

  // The first candidates, in the CPU's order: pairs (a, c) expanded by considerPair.
  uint16_t pa[3], pc[3];
  int pairs = 0;
  if (solid) {
    const float f[3] = {float(blk.rgb[0][0]), float(blk.rgb[0][1]), float(blk.rgb[0][2])};
    pa[0] = pc[0] = hfbc1::pack565f(f);
    pairs = 1;
  } else {
    hfbc1::axisEndpoints(blk, mean, axis, pa[0], pc[0]);
    pairs = 1;
    hfbc1::ClusterSetup& setup = setups[warp];
    if (lane == 0) hfbc1::clusterSetup(blk, axis, setup);
    __syncwarp();
    // 4 clusters: every 32nd split per lane.
    float bestErr = INFINITY;
    int bestIndex = 0x7fffffff;
    float a4[3] = {0, 0, 0}, c4[3] = {0, 0, 0};
    for (int s = lane; s < kSplits4; s += 32) {
      const uint32_t v = gSplits4[s];
      const int i = int(v & 255u), j = int((v >> 8) & 255u), k = int(v >> 16);
      if (k > blk.n) continue;
      float err, a[3], c[3];
      if (!hfbc1::cluster4(setup, i, j, k, err, a, c)) continue;
      if (err < bestErr) {  // indices rise with s: the earliest wins a tie
        bestErr = err;
        bestIndex = s;
        for (int q = 0; q < 3; ++q) {
          a4[q] = a[q];
          c4[q] = c[q];
        }
      }
    }
    int winner = bestIndex;
    float winErr = bestErr;
    warpArgMin(winErr, winner);
    if (winErr < 3.4e38f) {  // the CPU's initial best4: a fit must beat it
      const int from = winner & 31;
      float a[3], c[3];
      for (int q = 0; q < 3; ++q) {
        a[q] = __shfl_sync(0xffffffffu, a4[q], from);
        c[q] = __shfl_sync(0xffffffffu, c4[q], from);
      }
      pa[pairs] = hfbc1::pack565f(a);
      pc[pairs] = hfbc1::pack565f(c);
      ++pairs;
    }
    // 3 clusters.
    bestErr = INFINITY;
    bestIndex = 0x7fffffff;
    for (int s = lane; s < kSplits3; s += 32) {
      const uint32_t v = gSplits3[s];
      const int i = int(v & 255u), j = int(v >> 8);
      if (j > blk.n) continue;
      float err, a[3], c[3];
      if (!hfbc1::cluster3(setup, i, j, err, a, c)) continue;
      if (err < bestErr) {
        bestErr = err;
        bestIndex = s;
        for (int q = 0; q < 3; ++q) {
          a4[q] = a[q];
          c4[q] = c[q];
        }
      }
    }
    winner = bestIndex;
    winErr = bestErr;
    warpArgMin(winErr, winner);
    if (winErr < 3.4e38f) {
      const int from = winner & 31;
      float a[3], c[3];
      for (int q = 0; q < 3; ++q) {
        a[q] = __shfl_sync(0xffffffffu, a4[q], from);
        c[q] = __shfl_sync(0xffffffffu, c4[q], from);
      }
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
    int err = 0x7fffffff, order = lane;
    uint16_t e0 = 0, e1 = 0;
    uint32_t ind = 0;
    int slot = 0;
    for (int p = 0; p < pairs; ++p) {
      uint16_t o0[2], o1[2];
      const int count = hfbc1::pairCandidates(blk, pa[p], pc[p], o0, o1);
      for (int q = 0; q < count; ++q, ++slot)
        if (slot == lane) {
          e0 = o0[q];
          e1 = o1[q];
          err = hfbc1::assign(blk, e0, e1, ind);
        }
    }
    int winner = order;
    warpArgMin(err, winner);
    if (err < bestErr) {
      bestErr = err;
      best0 = uint16_t(__shfl_sync(0xffffffffu, int(e0), winner));
      best1 = uint16_t(__shfl_sync(0xffffffffu, int(e1), winner));
      bestIndices = __shfl_sync(0xffffffffu, ind, winner);
    }
  }
  // Refinement: at most 8 rounds of the 12 moves x 2 orders from the round's start.
  for (int round = 0; round < 8; ++round) {
    int err = 0x7fffffff;
    uint16_t e0 = 0, e1 = 0;
    uint32_t ind = 0;
    if (lane < 24) {
      uint16_t a, c;
      if (hfbc1::refineMove(best0, best1, lane >> 1, a, c)) {
        uint16_t o0[2], o1[2];
        const int count = hfbc1::pairCandidates(blk, a, c, o0, o1);
        const int q = lane & 1;
        if (q < count) {
          e0 = o0[q];
          e1 = o1[q];
          err = hfbc1::assign(blk, e0, e1, ind);
        }
      }
    }
    int winner = lane;
    warpArgMin(err, winner);
    if (!(err < bestErr)) break;
    bestErr = err;
    best0 = uint16_t(__shfl_sync(0xffffffffu, int(e0), winner));
    best1 = uint16_t(__shfl_sync(0xffffffffu, int(e1), winner));
    bestIndices = __shfl_sync(0xffffffffu, ind, winner);
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
