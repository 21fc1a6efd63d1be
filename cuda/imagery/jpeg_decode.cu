// jpeg_decode.cu - the kernels of hfgpu::GpuJpegDecoder (src/gpu/imagery/jpeg_decoder.h). The
// per-thread arithmetic lives in jpeg_decode_core.cuh (shared with the CPU test); this file
// distributes it:
// 1. scanKernel, one warp per tile: walks the entropy-coded bytes 128 at a time (4 per lane),
//    drops the 0x00 after each data 0xFF and the RSTn markers (ballots and warp prefix sums
//    place the kept bytes), checks the RST sequence and records where each restart interval
//    starts in the unstuffed bytes. The Huffman decoder then reads plain bytes.
// 2. huffmanKernel, one thread per restart interval (= one MCU row): decodes its MCUs with the
//    tables in shared memory into a per-thread 64-coefficient scratch block in shared memory and
//    copies every block out (8 x 16 bytes) to the coefficient buffer. This stage bounds small
//    batches: its time is that of the longest interval decoded serially by one thread, and the
//    32 intervals of a warp take different branches (refill, DC, slow codes, block ends) in
//    nearly every step (measured on an H100: ~6.5 of 32 lanes active per instruction).
// 3. pixelKernel, one 256-thread block per region of up to 4 MCU rows x 16 MCUs of a tile: one
//    thread per 8x8 block runs the IDCT in registers into shared memory (Y of the region, chroma
//    of the region plus the one block row / column around it that the triangle filter reaches),
//    then each thread converts 4 adjacent texels at a time (upsampling, colour, coverage alpha)
//    and writes them as one 16-byte store: a warp writes 512 contiguous bytes.
// A tile whose flag is set by an earlier stage is skipped by the later ones; a tile that failed
// the host checks (valid == 0) is never touched.
#include <cuda_runtime.h>

#include <cstdint>

#include "gpu/cuda_util.h"
#include "imagery/jpeg_decode_core.cuh"

namespace hfjdec {
namespace {

constexpr int kScanWarps = 4;        // tiles per block of the scan kernel
constexpr int kHuffThreads = 128;    // intervals per block of the Huffman kernel
constexpr int kPixThreads = 256;

__device__ __forceinline__ const TileDesc& descOf(const uint8_t* staged, uint64_t descs, size_t tile) {
  return reinterpret_cast<const TileDesc*>(staged + descs)[tile];
}

__device__ __forceinline__ int warpInclusiveSum(int v, int lane) {
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const int o = __shfl_up_sync(0xFFFFFFFFu, v, d);
    if (lane >= d) v += o;
  }
  return v;
}

__global__ void __launch_bounds__(32 * kScanWarps) scanKernel(LaunchArgs a) {
  const int lane = threadIdx.x & 31;
  const size_t tile = size_t(blockIdx.x) * kScanWarps + (threadIdx.x >> 5);
  if (tile >= a.count) return;
  const TileDesc& d = descOf(a.staged, a.descs, tile);
  if (!d.valid) return;
  const int rows = a.size / 16;
  const uint8_t* data = a.staged + d.data;
  uint8_t* out = a.unstuffed + d.data;
  uint32_t* st = a.starts + tile * size_t(rows + 1);
  const uint32_t n = d.bytes;
  int carry = -1;          // last byte of the previous step
  uint32_t out_base = 0;   // unstuffed bytes so far
  int markers = 0;         // RST markers so far
  uint32_t fail = 0;
  for (uint32_t base = 0; base < n; base += 128) {
    const uint32_t pos = base + 4u * uint32_t(lane);
    // Word loads stay inside the tile's data rounded up to 16 bytes (staged, zero-padded).
    const uint32_t w = pos < n ? *reinterpret_cast<const uint32_t*>(data + pos) : 0u;
    const uint8_t b[4] = {uint8_t(w), uint8_t(w >> 8), uint8_t(w >> 16), uint8_t(w >> 24)};
    const int valid = pos >= n ? 0 : (n - pos >= 4u ? 4 : int(n - pos));
    const int up = __shfl_up_sync(0xFFFFFFFFu, int(b[3]), 1);
    const int down = __shfl_down_sync(0xFFFFFFFFu, int(b[0]), 1);
    const int prev = lane == 0 ? carry : up;
    const int next = pos + 4u >= n ? -1 : (lane == 31 ? int(data[pos + 4u]) : down);
    const LaneScan s = scanLane(prev, b, next, valid);
    const int kc = __popc(s.keep), mc = __popc(s.marker);
    const int kin = warpInclusiveSum(kc, lane), min_ = warpInclusiveSum(mc, lane);
    uint32_t lane_fail =
        placeLane(s, b, markers + min_ - mc, out_base + uint32_t(kin - kc), rows, st, out);
    // Every lane reaches the reductions: the loop bounds are uniform across the warp.
#pragma unroll
    for (int dd = 16; dd > 0; dd >>= 1) lane_fail |= __shfl_xor_sync(0xFFFFFFFFu, lane_fail, dd);
    fail |= lane_fail;
    if (fail) break;
    out_base += uint32_t(__shfl_sync(0xFFFFFFFFu, kin, 31));
    markers += __shfl_sync(0xFFFFFFFFu, min_, 31);
    carry = __shfl_sync(0xFFFFFFFFu, int(b[3]), 31);
  }
  if (!fail && markers != rows - 1) fail |= kFailRstCount;
  if (lane == 0) {
    if (fail) {
      atomicOr(a.flags + tile, fail);
    } else {
      st[0] = 0;
      st[rows] = out_base;
    }
  }
}

struct GlobalSink {
  int16_t* dst;  // the interval's first block
  __device__ __forceinline__ void operator()(int index, int16_t* blk) const {
    uint4* s = reinterpret_cast<uint4*>(blk);
    uint4* g = reinterpret_cast<uint4*>(dst + size_t(index) * 64);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      g[i] = s[i];
      s[i] = make_uint4(0u, 0u, 0u, 0u);
    }
  }
};

__global__ void __launch_bounds__(kHuffThreads) huffmanKernel(LaunchArgs a) {
  __shared__ Tables tables;
  __shared__ __align__(16) int16_t blocks[kHuffThreads * 64];
  {
    const uint4* src = reinterpret_cast<const uint4*>(a.tables);
    uint4* dst = reinterpret_cast<uint4*>(&tables);
    for (int i = threadIdx.x; i < int(sizeof(Tables) / 16); i += kHuffThreads) dst[i] = src[i];
  }
  {
    uint4* z = reinterpret_cast<uint4*>(blocks + threadIdx.x * 64);
    for (int i = 0; i < 8; ++i) z[i] = make_uint4(0u, 0u, 0u, 0u);
  }
  __syncthreads();
  const int rows = a.size / 16, cols = rows;
  const size_t id = size_t(blockIdx.x) * kHuffThreads + threadIdx.x;
  if (id >= a.count * size_t(rows)) return;
  const size_t tile = id / size_t(rows);
  const int r = int(id % size_t(rows));
  const TileDesc& d = descOf(a.staged, a.descs, tile);
  if (!d.valid || a.flags[tile]) return;
  const uint32_t* st = a.starts + tile * size_t(rows + 1);
  const uint32_t begin = st[r], end = st[r + 1];
  if (end < begin) {  // cannot happen after a successful scan; never read out of bounds
    atomicOr(a.flags + tile, uint32_t(kFailRstCount));
    return;
  }
  Selectors sel;
  for (int c = 0; c < 3; ++c) {
    sel.quant[c] = d.quant[c];
    sel.dc[c] = d.dc[c];
    sel.ac[c] = d.ac[c];
  }
  GlobalSink sink{a.coef + (tile * size_t(rows) + size_t(r)) * size_t(cols) * 6u * 64u};
  const uint32_t f = decodeInterval(a.unstuffed + d.data + begin, end - begin, cols, tables, sel,
                                    blocks + threadIdx.x * 64, sink);
  if (f) atomicOr(a.flags + tile, f);
}

__global__ void __launch_bounds__(kPixThreads) pixelKernel(LaunchArgs a, int bands, int chunks) {
  __shared__ uint16_t quant[2][64];
  __shared__ __align__(16) uint8_t ybuf[kYBytes];
  __shared__ __align__(16) uint8_t cbuf[2][kCBytes];
  const size_t tile = blockIdx.x / unsigned(bands * chunks);
  const int in_tile = int(blockIdx.x % unsigned(bands * chunks));
  const TileDesc& d = descOf(a.staged, a.descs, tile);
  if (!d.valid || a.flags[tile]) return;  // the same for every thread of the block
  {
    const Tables* t = a.tables;
    for (int i = threadIdx.x; i < 128; i += kPixThreads) quant[i >> 6][i & 63] = t->quant[i >> 6][i & 63];
  }
  __syncthreads();
  const int size = a.size, mcus = size / 16;
  const Region g = makeRegion(size, in_tile / chunks, in_tile % chunks);
  const int16_t* tile_coef = a.coef + tile * size_t(mcus) * size_t(mcus) * 6u * 64u;
  const int blocks = regionBlocks(g);
  for (int item = threadIdx.x; item < blocks; item += kPixThreads) {
    const BlockJob j = blockJob(g, item);
    const uint4* src = reinterpret_cast<const uint4*>(tile_coef + ((size_t(j.mr) * mcus + j.mc) * 6u + j.blk) * 64u);
    uint32_t cw[32];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const uint4 v = __ldg(src + i);
      cw[4 * i] = v.x;
      cw[4 * i + 1] = v.y;
      cw[4 * i + 2] = v.z;
      cw[4 * i + 3] = v.w;
    }
    uint32_t px[16];
    idctBlock(cw, quant[d.quant[j.comp]], px);
    uint8_t* dst = (j.comp == 0 ? ybuf : cbuf[j.comp - 1]) + j.offset;
#pragma unroll
    for (int r = 0; r < 8; ++r) *reinterpret_cast<uint2*>(dst + r * j.stride) = make_uint2(px[2 * r], px[2 * r + 1]);
  }
  __syncthreads();
  const uint8_t* mask = d.mask == kNoMask ? nullptr : a.staged + d.mask;
  uint8_t* out = a.rgba + tile * size_t(size) * size_t(size) * 4u;
  const int quads = regionQuads(g);
  for (int q = threadIdx.x; q < quads; q += kPixThreads) {
    uint32_t px[4];
    int gx, gy;
    pixelQuad(g, q, ybuf, cbuf[0], cbuf[1], mask, d.mask_kind, px, gx, gy);
    *reinterpret_cast<uint4*>(out + (size_t(gy) * size_t(size) + size_t(gx)) * 4u) =
        make_uint4(px[0], px[1], px[2], px[3]);
  }
}

}  // namespace

void launchDecodeKernels(const LaunchArgs& a, cudaStream_t stream) {
  if (a.count == 0) return;
  const int rows = a.size / 16;
  const size_t scan_blocks = (a.count + kScanWarps - 1) / kScanWarps;
  scanKernel<<<unsigned(scan_blocks), 32 * kScanWarps, 0, stream>>>(a);
  CUDA_CHECK(cudaGetLastError());
  const size_t intervals = a.count * size_t(rows);
  huffmanKernel<<<unsigned((intervals + kHuffThreads - 1) / kHuffThreads), kHuffThreads, 0, stream>>>(a);
  CUDA_CHECK(cudaGetLastError());
  const int bands = regionBands(a.size), chunks = regionChunks(a.size);
  pixelKernel<<<unsigned(a.count * size_t(bands) * size_t(chunks)), kPixThreads, 0, stream>>>(a, bands, chunks);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace hfjdec
