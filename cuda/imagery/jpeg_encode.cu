// jpeg_encode.cu - the CUDA JPEG tile encoder (src/gpu/imagery/jpeg_encoder.h). The arithmetic
// is jpeg_encode_core.cuh (shared with the CPU model and its test); this file maps it onto the
// device, as in "CUDA-based fast image compression":
// 1. transformKernel: one 128-thread block per strip of 8 MCUs (128 x 16 texels) of a tile:
//    coalesced 8-byte loads of 2x2 quads, grey for uncovered texels, YCbCr and 4:2:0 into
//    shared memory (rows padded to 9 words: conflict-free row and column passes), islow FDCT
//    (one thread per block row, then per block column), quantisation and zig-zag, stored as
//    int16 pairs (coalesced), MCU-major. The same pass builds the 1-bit coverage mask (warp
//    shuffles, one byte per 4 lanes) and a per-tile "partial" flag.
// 2. mcuKernel: one thread per MCU: Huffman coding of its 6 blocks (DC predictors read from the
//    previous MCU's coefficients, zero at an interval's start) as unstuffed bits, code tables
//    in shared memory; packKernel: one thread per restart interval (one MCU row): the MCUs'
//    bits concatenated 32 at a time, byte stuffing (a fast path for words without 0xFF), 1-bit
//    padding and the RST marker, into per-interval scratch of worst-case size; its byte length
//    to `lengths`. (One thread coding a whole interval was 3x slower: too few threads.)
// 3. an exclusive scan of the lengths (CUB) and copyKernel (one warp per interval) pack every
//    tile's intervals contiguously into one buffer: per tile exactly the bytes between SOS and
//    EOI of its stream.
// The host (finish) downloads lengths, flags, the packed data and the coverage masks of partial
// tiles, compresses those with zlib and adds the fixed headers (hfjenc::assembleStream), on
// host threads. Measured on an H100: 1024 tiles of 256^2 at quality 90 (synthetic mix, 0.23
// bytes per texel), 0.99 ms device to device = 68 Gpixel/s (transform 0.36 ms, MCU coding 0.33,
// packing 0.20, scan + copy 0.06); finish() 33 ms, mostly zlib for 768 partial tiles.
#include <cuda_runtime.h>

#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "gpu/cuda_util.h"
#include "gpu/imagery/jpeg_encoder.h"
#include "imagery/jpeg_encode_core.cuh"

namespace hfgpu {

namespace {

constexpr int kStripMcus = 8;                          // MCUs per transform block
constexpr int kStripBlocks = kStripMcus * hfjenc::kBlocksPerMcu;  // 48
constexpr int kTransformThreads = 128;
constexpr int kBlockStride = 72;                       // 8 rows of 9 words
constexpr int kMcuThreads = 128;
constexpr int kPackThreads = 32;

struct TransformParams {
  uint16_t quant[2][64];   // natural order
  uint8_t natural[64];     // zig-zag -> natural
};

__global__ void __launch_bounds__(kTransformThreads)
transformKernel(const uint8_t* __restrict__ rgba, int size, TransformParams params,
                int16_t* __restrict__ coefs, uint8_t* __restrict__ coverage,
                uint8_t* __restrict__ partialFlags) {
  __shared__ int32_t blk[kStripBlocks * kBlockStride];
  __shared__ uint16_t quant[2][64];
  __shared__ uint8_t natural[64];
  const int t = int(threadIdx.x);
  const int strip = int(blockIdx.x), mcuRow = int(blockIdx.y);
  const size_t tile = blockIdx.z;
  const int mcusPerRow = size >> 4;
  const int stripMcus = min(kStripMcus, mcusPerRow - strip * kStripMcus);
  if (t < 64) {
    quant[0][t] = params.quant[0][t];
    quant[1][t] = params.quant[1][t];
    natural[t] = params.natural[t];
  }

  // Phase A: 2x2 quads, 4 per thread; a warp covers 64 texels of two rows.
  const int lane = t & 31;
  const int qx = t & 63;
  const bool active = (qx >> 3) < stripMcus;
  const size_t tileTexels = size_t(size) * size_t(size);
  const uint8_t* tileRgba = rgba + tile * tileTexels * 4;
  bool uncovered = false;
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const int qy = (t >> 6) + 2 * k;
    const int px = strip * 128 + 2 * qx;
    const int py = mcuRow * 16 + 2 * qy;
    uint2 top = make_uint2(0, 0), bottom = make_uint2(0, 0);
    if (active) {
      top = *reinterpret_cast<const uint2*>(tileRgba + (size_t(py) * size_t(size) + size_t(px)) * 4);
      bottom = *reinterpret_cast<const uint2*>(tileRgba + (size_t(py + 1) * size_t(size) + size_t(px)) * 4);
    }
    const uint32_t texel[4] = {top.x, top.y, bottom.x, bottom.y};
    int cbSum = 0, crSum = 0;
    uint32_t covBits = 0;  // bit 3: top-left, 2: top-right, 1: bottom-left, 0: bottom-right
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint32_t v = texel[i];
      const bool covered = (v >> 24) >= 128u;
      covBits |= uint32_t(covered) << (3 - i);
      const int r = covered ? int(v & 0xffu) : 128;
      const int g = covered ? int((v >> 8) & 0xffu) : 128;
      const int b = covered ? int((v >> 16) & 0xffu) : 128;
      cbSum += hfjenc::rgbToCb(r, g, b);
      crSum += hfjenc::rgbToCr(r, g, b);
      const int lx = 2 * qx + (i & 1), ly = 2 * qy + (i >> 1);
      const int b6 = (lx >> 4) * 6 + (ly >> 3) * 2 + ((lx >> 3) & 1);
      blk[b6 * kBlockStride + (ly & 7) * 9 + (lx & 7)] = hfjenc::rgbToY(r, g, b) - 128;
    }
    uncovered |= active && covBits != 15u;
    {
      const int b6 = (qx >> 3) * 6 + 4;
      const int pos = qy * 9 + (qx & 7);
      // (sum + bias) >> 2 with the bias 1, 2 by output column: downsample2x2's arithmetic.
      blk[b6 * kBlockStride + pos] = ((cbSum + 1 + (qx & 1)) >> 2) - 128;
      blk[(b6 + 1) * kBlockStride + pos] = ((crSum + 1 + (qx & 1)) >> 2) - 128;
    }
    // Coverage bytes, MSB first: 4 lanes (8 texels) per byte, one byte row for each texel row.
    uint32_t topBits = covBits >> 2, bottomBits = covBits & 3u;
    topBits = (topBits << 2) | __shfl_down_sync(0xffffffffu, topBits, 1);
    bottomBits = (bottomBits << 2) | __shfl_down_sync(0xffffffffu, bottomBits, 1);
    topBits = (topBits << 4) | __shfl_down_sync(0xffffffffu, topBits, 2);
    bottomBits = (bottomBits << 4) | __shfl_down_sync(0xffffffffu, bottomBits, 2);
    if (active && (lane & 3) == 0) {
      const size_t bit = tile * tileTexels + size_t(py) * size_t(size) + size_t(px);
      coverage[bit >> 3] = uint8_t(topBits);
      coverage[(bit + size_t(size)) >> 3] = uint8_t(bottomBits);
    }
  }
  if (__syncthreads_or(uncovered) && t == 0) partialFlags[tile] = 1;

  // Phase B: FDCT rows, then columns (3 block rows / columns per thread).
  const int tasks = stripMcus * hfjenc::kBlocksPerMcu * 8;
  for (int task = t; task < tasks; task += kTransformThreads)
    hfjenc::fdct8<1>(&blk[(task >> 3) * kBlockStride + (task & 7) * 9], 1);
  __syncthreads();
  for (int task = t; task < tasks; task += kTransformThreads)
    hfjenc::fdct8<2>(&blk[(task >> 3) * kBlockStride + (task & 7)], 9);
  __syncthreads();

  // Phase C: quantise, zig-zag, store pairs of coefficients (the strip's MCUs are contiguous).
  uint32_t* out = reinterpret_cast<uint32_t*>(
      coefs + ((tile * size_t(mcusPerRow) + size_t(mcuRow)) * size_t(mcusPerRow) +
               size_t(strip * kStripMcus)) * hfjenc::kCoefsPerMcu);
  const int pairs = stripMcus * hfjenc::kCoefsPerMcu / 2;
  for (int p = t; p < pairs; p += kTransformThreads) {
    const int b6 = p >> 5, z = (p & 31) * 2;
    const int comp = (b6 % 6) < 4 ? 0 : 1;
    const int n0 = natural[z], n1 = natural[z + 1];
    const int32_t* src = &blk[b6 * kBlockStride];
    const int c0 = hfjenc::quantise(src[(n0 >> 3) * 9 + (n0 & 7)], quant[comp][n0]);
    const int c1 = hfjenc::quantise(src[(n1 >> 3) * 9 + (n1 & 7)], quant[comp][n1]);
    out[p] = (uint32_t(c0) & 0xffffu) | (uint32_t(c1) << 16);
  }
}

// Pass 1: one thread per MCU, its unstuffed bits to `bits` (kMcuBitWords per MCU).
__global__ void __launch_bounds__(kMcuThreads)
mcuKernel(const int16_t* __restrict__ coefs, int mcusPerRow, int mcus, hfjenc::HuffCodes codesIn,
          uint32_t* __restrict__ bits, uint32_t* __restrict__ bitCounts) {
  __shared__ hfjenc::HuffCodes codes;
  const uint32_t* src = reinterpret_cast<const uint32_t*>(&codesIn);
  uint32_t* dst = reinterpret_cast<uint32_t*>(&codes);
  for (int i = int(threadIdx.x); i < int(sizeof(hfjenc::HuffCodes) / 4); i += kMcuThreads) dst[i] = src[i];
  __syncthreads();
  const int g = int(blockIdx.x) * kMcuThreads + int(threadIdx.x);
  if (g >= mcus) return;
  const int16_t* mcu = coefs + size_t(g) * hfjenc::kCoefsPerMcu;
  int pred[3];
  hfjenc::mcuPredictors(mcu, g % mcusPerRow, pred);
  bitCounts[g] = hfjenc::encodeMcuBits(mcu, pred, codes, bits + size_t(g) * hfjenc::kMcuBitWords);
}

// Pass 2: one thread per restart interval: its MCUs' bits concatenated and byte-stuffed, with
// the padding and RST marker, into `scratch` (intervalWords per interval); the byte count to
// `lengths`.
__global__ void __launch_bounds__(kPackThreads)
packKernel(const uint32_t* __restrict__ bits, const uint32_t* __restrict__ bitCounts, int mcusPerRow,
           int intervals, uint32_t intervalWords, uint32_t* __restrict__ scratch,
           uint32_t* __restrict__ lengths) {
  const int g = int(blockIdx.x) * kPackThreads + int(threadIdx.x);
  if (g >= intervals) return;
  const int row = g % mcusPerRow;  // the interval's MCU row in its tile
  const size_t first = size_t(g) * size_t(mcusPerRow);
  lengths[g] = hfjenc::packInterval(bits + first * hfjenc::kMcuBitWords, hfjenc::kMcuBitWords, bitCounts + first,
                                    mcusPerRow, row + 1 < mcusPerRow ? row : -1,
                                    scratch + size_t(g) * intervalWords);
}

// One warp per interval: its bytes from scratch to offsets[g] in the packed buffer (skipped when
// the buffer is too small: finish() grows it and runs this again).
__global__ void copyKernel(const uint32_t* __restrict__ scratch, uint32_t intervalWords,
                           const uint32_t* __restrict__ lengths, const uint64_t* __restrict__ offsets,
                           int intervals, uint8_t* __restrict__ packed, uint64_t capacity) {
  const int g = int((blockIdx.x * blockDim.x + threadIdx.x) >> 5);
  const int lane = int(threadIdx.x & 31);
  if (g >= intervals) return;
  const uint32_t len = lengths[g];
  const uint64_t at = offsets[g];
  if (at + len > capacity) return;
  const uint8_t* s = reinterpret_cast<const uint8_t*>(scratch + size_t(g) * intervalWords);
  for (uint32_t i = uint32_t(lane); i < len; i += 32) packed[at + i] = s[i];
}

}  // namespace

struct GpuJpegEncoder::Impl {
  int quality = 0;
  hfjenc::Tables tables;
  TransformParams transform;
  // Last encodeAsync's geometry.
  size_t count = 0;
  int size = 0;
  cudaStream_t stream = nullptr;
  bool pending = false;
  // Device buffers (grown, never shrunk).
  DeviceBuffer<int16_t> coefs;
  DeviceBuffer<uint8_t> coverage;
  DeviceBuffer<uint8_t> flags;
  DeviceBuffer<uint32_t> bits;       // pass 1: unstuffed bits per MCU
  DeviceBuffer<uint32_t> bitCounts;
  DeviceBuffer<uint32_t> scratch;    // pass 2: stuffed bytes per interval
  DeviceBuffer<uint32_t> lengths;
  DeviceBuffer<uint64_t> offsets;
  DeviceBuffer<uint64_t> lengths64;
  DeviceBuffer<uint8_t> scanTemp;
  DeviceBuffer<uint8_t> packed;
  DeviceBuffer<uint8_t> upload;
  // Host staging.
  PinnedBuffer<uint32_t> hostLengths;
  PinnedBuffer<uint8_t> hostFlags;
  PinnedBuffer<uint8_t> hostPacked;
  PinnedBuffer<uint8_t> hostCoverage;

  void copy(int intervals, uint32_t words) {
    copyKernel<<<unsigned((intervals + 7) / 8), 256, 0, stream>>>(
        scratch.get(), words, lengths.get(), offsets.get(), intervals, packed.get(), packed.size());
    CUDA_CHECK(cudaGetLastError());
  }
};

namespace {

// Widening of the lengths before the scan (64-bit offsets: batches over 4 GiB of data).
__global__ void widenKernel(const uint32_t* __restrict__ in, uint64_t* __restrict__ out, int n) {
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) out[i] = in[i];
}

}  // namespace

GpuJpegEncoder::GpuJpegEncoder(int quality) : impl_(new Impl) {
  if (quality < 1 || quality > 100)
    throw std::invalid_argument("GpuJpegEncoder: quality " + std::to_string(quality) + " not in 1..100");
  Impl& m = *impl_;
  m.quality = quality;
  if (!hfjenc::makeTables(quality, m.tables))
    throw std::runtime_error("GpuJpegEncoder: the JPEG tables of quality " + std::to_string(quality) +
                             " could not be read");
  std::memcpy(m.transform.quant, m.tables.quant, sizeof m.transform.quant);
  std::memcpy(m.transform.natural, hfjenc::kZigzagToNatural, sizeof m.transform.natural);
}

GpuJpegEncoder::~GpuJpegEncoder() = default;

int GpuJpegEncoder::quality() const { return impl_->quality; }

void GpuJpegEncoder::encodeAsync(const uint8_t* rgba, size_t count, int size, cudaStream_t stream) {
  if (size < 16 || size > 4096 || size % 16)
    throw std::invalid_argument("GpuJpegEncoder: tile size " + std::to_string(size) +
                                " is not a multiple of 16 in 16..4096");
  if (count > 0 && (!rgba || reinterpret_cast<uintptr_t>(rgba) % 8 != 0))
    throw std::invalid_argument("GpuJpegEncoder: tiles must be in device memory, 8-byte aligned");
  const int mcusPerRow = size / 16;
  const size_t intervals = count * size_t(mcusPerRow);
  if (count > 65535 || intervals > size_t(1) << 30)
    throw std::invalid_argument("GpuJpegEncoder: at most 65535 tiles per batch");
  Impl& m = *impl_;
  m.count = count;
  m.size = size;
  m.stream = stream;
  m.pending = true;
  if (count == 0) return;
  const size_t tileTexels = size_t(size) * size_t(size);
  const uint32_t words = hfjenc::intervalWords(mcusPerRow);
  m.coefs.reserve(count * tileTexels * 3 / 2);
  m.coverage.reserve(count * tileTexels / 8);
  m.flags.reserve(count);
  m.bits.reserve(intervals * size_t(mcusPerRow) * hfjenc::kMcuBitWords);
  m.bitCounts.reserve(intervals * size_t(mcusPerRow));
  m.scratch.reserve(intervals * words);
  m.lengths.reserve(intervals);
  m.lengths64.reserve(intervals);
  m.offsets.reserve(intervals);
  // Packed data: half a byte per texel to start with (finish() grows it when a batch needs
  // more; typical imagery at quality 90 takes about 0.2).
  m.packed.reserve(count * tileTexels / 2);
  size_t tempBytes = 0;
  CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, tempBytes, m.lengths64.get(), m.offsets.get(),
                                           int(intervals), stream));
  m.scanTemp.reserve(tempBytes);

  CUDA_CHECK(cudaMemsetAsync(m.flags.get(), 0, count, stream));
  const dim3 grid(unsigned((mcusPerRow + kStripMcus - 1) / kStripMcus), unsigned(mcusPerRow), unsigned(count));
  transformKernel<<<grid, kTransformThreads, 0, stream>>>(rgba, size, m.transform, m.coefs.get(),
                                                          m.coverage.get(), m.flags.get());
  CUDA_CHECK(cudaGetLastError());
  const size_t mcus = intervals * size_t(mcusPerRow);
  mcuKernel<<<unsigned((mcus + kMcuThreads - 1) / kMcuThreads), kMcuThreads, 0, stream>>>(
      m.coefs.get(), mcusPerRow, int(mcus), m.tables.codes, m.bits.get(), m.bitCounts.get());
  CUDA_CHECK(cudaGetLastError());
  packKernel<<<unsigned((intervals + kPackThreads - 1) / kPackThreads), kPackThreads, 0, stream>>>(
      m.bits.get(), m.bitCounts.get(), mcusPerRow, int(intervals), words, m.scratch.get(), m.lengths.get());
  CUDA_CHECK(cudaGetLastError());
  widenKernel<<<unsigned((intervals + 255) / 256), 256, 0, stream>>>(m.lengths.get(), m.lengths64.get(),
                                                                     int(intervals));
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cub::DeviceScan::ExclusiveSum(m.scanTemp.get(), tempBytes, m.lengths64.get(), m.offsets.get(),
                                           int(intervals), stream));
  m.copy(int(intervals), words);
}

void GpuJpegEncoder::finish(std::vector<std::vector<uint8_t>>& streams) {
  Impl& m = *impl_;
  if (!m.pending) throw std::logic_error("GpuJpegEncoder::finish without encodeAsync");
  m.pending = false;
  streams.assign(m.count, {});
  if (m.count == 0) return;
  const int mcusPerRow = m.size / 16;
  const size_t intervals = m.count * size_t(mcusPerRow);
  const size_t tileTexels = size_t(m.size) * size_t(m.size);
  m.hostLengths.reserve(intervals);
  m.hostFlags.reserve(m.count);
  CUDA_CHECK(cudaMemcpyAsync(m.hostLengths.get(), m.lengths.get(), intervals * 4, cudaMemcpyDeviceToHost, m.stream));
  CUDA_CHECK(cudaMemcpyAsync(m.hostFlags.get(), m.flags.get(), m.count, cudaMemcpyDeviceToHost, m.stream));
  CUDA_CHECK(cudaStreamSynchronize(m.stream));
  uint64_t total = 0;
  for (size_t i = 0; i < intervals; ++i) total += m.hostLengths[i];
  if (total > m.packed.size()) {  // the packed buffer was too small: grow it, copy again
    m.packed.reserve(total + total / 4);
    m.copy(int(intervals), hfjenc::intervalWords(mcusPerRow));
  }
  m.hostPacked.reserve(total);
  if (total) CUDA_CHECK(cudaMemcpyAsync(m.hostPacked.get(), m.packed.get(), total, cudaMemcpyDeviceToHost, m.stream));
  size_t partial = 0;
  for (size_t i = 0; i < m.count; ++i) partial += m.hostFlags[i] ? 1 : 0;
  m.hostCoverage.reserve(partial * tileTexels / 8);
  size_t slot = 0;
  for (size_t i = 0; i < m.count; ++i)
    if (m.hostFlags[i])
      CUDA_CHECK(cudaMemcpyAsync(m.hostCoverage.get() + slot++ * tileTexels / 8, m.coverage.get() + i * tileTexels / 8,
                                 tileTexels / 8, cudaMemcpyDeviceToHost, m.stream));
  CUDA_CHECK(cudaStreamSynchronize(m.stream));
  // Per tile: its data's offset and coverage slot; then the streams assembled on host threads
  // (zlib level 9 of the coverage bitmaps dominates).
  std::vector<size_t> at(m.count + 1, 0), covSlot(m.count, 0);
  slot = 0;
  for (size_t i = 0; i < m.count; ++i) {
    size_t bytes = 0;
    for (int r = 0; r < mcusPerRow; ++r) bytes += m.hostLengths[i * size_t(mcusPerRow) + size_t(r)];
    at[i + 1] = at[i] + bytes;
    covSlot[i] = m.hostFlags[i] ? slot++ : SIZE_MAX;
  }
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < m.count;) {
      const uint8_t* cov = covSlot[i] != SIZE_MAX ? m.hostCoverage.get() + covSlot[i] * tileTexels / 8 : nullptr;
      if (!hfjenc::assembleStream(m.size, cov, m.hostPacked.get() + at[i], at[i + 1] - at[i], streams[i]))
        failed = true;
    }
  };
  const size_t threads = std::min<size_t>(std::max(1u, std::thread::hardware_concurrency()), partial / 8 + 1);
  std::vector<std::thread> pool;
  for (size_t k = 1; k < threads; ++k) pool.emplace_back(work);
  work();
  for (auto& th : pool) th.join();
  if (failed) throw std::runtime_error("GpuJpegEncoder: a tile's coverage bitmap does not fit one JPEG marker");
}

void GpuJpegEncoder::encode(const uint8_t* hostRgba, size_t count, int size,
                            std::vector<std::vector<uint8_t>>& streams, cudaStream_t stream) {
  Impl& m = *impl_;
  if (size < 16 || size > 4096 || size % 16)
    throw std::invalid_argument("GpuJpegEncoder: tile size " + std::to_string(size) +
                                " is not a multiple of 16 in 16..4096");
  const size_t bytes = count * size_t(size) * size_t(size) * 4;
  if (count > 0 && bytes > 0) {
    if (!hostRgba) throw std::invalid_argument("GpuJpegEncoder::encode: no input");
    m.upload.reserve(bytes);
    CUDA_CHECK(cudaMemcpyAsync(m.upload.get(), hostRgba, bytes, cudaMemcpyHostToDevice, stream));
  }
  encodeAsync(m.upload.get(), count, size, stream);
  finish(streams);
}

}  // namespace hfgpu
