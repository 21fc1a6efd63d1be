// fft.cu - power-of-two complex FFTs with every radix pass of a line in shared memory (issue 14;
// host API src/gpu/fft.h, the pass arithmetic in src/gpu/fft_core.h).
//
// fftRows: one block transforms L consecutive rows of n points (L n <= kMaxBlockPoints): a
// coalesced load of L n contiguous points into shared memory, log4(n) Stockham passes with a
// barrier between reading and writing each, a coalesced store. fftColumns: one block transforms L
// adjacent columns of a row-major array: the block loads rows of L points (coalesced), keeping
// the columns interleaved in shared memory (column c, point y at y L + c), and assigns butterflies
// column-fastest so that a warp touches consecutive words (no bank conflicts in the passes).
#include <cuda_runtime.h>

#include <cstdint>

#include "gpu/cuda_util.h"
#include "gpu/fft_core.h"
#include "gpu/fft_launch.h"

namespace hfgpu::detail {
namespace {

constexpr int kMaxQ = 8;           // butterflies per thread and pass at most (see threadsFor)
constexpr unsigned kMaxThreads = 512;  // x 96 registers: two blocks' worth of an SM's registers

// All passes over `lines` lines in shared memory. Butterfly b of a pass belongs to line
// (interleaved ? b % lines : b / bf) and is butterfly (interleaved ? b / lines : b % bf) there.
__device__ void fftLines(Cpx* smem, uint32_t n, uint32_t lines, bool interleaved, int sign) {
  const uint32_t threads = blockDim.x, tid = threadIdx.x;
  for (uint32_t ns = 1; ns < n;) {
    const int r = passRadix(n, ns);
    const uint32_t bf = n / uint32_t(r), total = bf * lines;
    Cpx v[kMaxQ][4];
#pragma unroll
    for (int q = 0; q < kMaxQ; ++q) {
      const uint32_t b = tid + uint32_t(q) * threads;
      if (b < total) {
        const uint32_t line = interleaved ? b % lines : b / bf, j = interleaved ? b / lines : b % bf;
        const StridedLine l = interleaved ? StridedLine{smem + line, lines} : StridedLine{smem + size_t(line) * n, 1};
        passLoad(l, n, ns, r, j, sign, v[q]);
      }
    }
    __syncthreads();
#pragma unroll
    for (int q = 0; q < kMaxQ; ++q) {
      const uint32_t b = tid + uint32_t(q) * threads;
      if (b < total) {
        const uint32_t line = interleaved ? b % lines : b / bf, j = interleaved ? b / lines : b % bf;
        const StridedLine l = interleaved ? StridedLine{smem + line, lines} : StridedLine{smem + size_t(line) * n, 1};
        passStore(l, ns, r, j, v[q]);
      }
    }
    __syncthreads();
    ns *= uint32_t(r);
  }
}

__global__ void __launch_bounds__(kMaxThreads) fftRows(const Cpx* in, Cpx* out,  // may alias: a block reads its rows whole first
                        uint32_t n, uint64_t rows,
                        uint32_t linesPerBlock, int sign) {
  extern __shared__ Cpx smem[];
  const uint64_t row0 = uint64_t(blockIdx.x) * linesPerBlock;
  const uint32_t lines = uint32_t(rows - row0 < linesPerBlock ? rows - row0 : linesPerBlock);
  const uint64_t points = uint64_t(lines) * n;
  const Cpx* src = in + row0 * n;
  for (uint64_t i = threadIdx.x; i < points; i += blockDim.x) smem[i] = src[i];
  __syncthreads();
  fftLines(smem, n, lines, false, sign);
  Cpx* dst = out + row0 * n;
  for (uint64_t i = threadIdx.x; i < points; i += blockDim.x) dst[i] = smem[i];
}

// Columns x0 .. x0 + L - 1 of `arrays` arrays of ny rows x nx columns (in place: a block owns
// its columns and reads them whole before writing).
__global__ void __launch_bounds__(kMaxThreads) fftColumns(Cpx* __restrict__ data, uint32_t nx, uint32_t ny, uint32_t linesPerBlock, int sign) {
  extern __shared__ Cpx smem[];
  const uint32_t blocksPerArray = nx / linesPerBlock;
  const uint64_t array = blockIdx.x / blocksPerArray;
  const uint32_t x0 = (blockIdx.x % blocksPerArray) * linesPerBlock;
  const uint32_t lines = linesPerBlock;
  Cpx* base = data + array * uint64_t(nx) * ny + x0;
  const uint32_t points = lines * ny;
  for (uint32_t i = threadIdx.x; i < points; i += blockDim.x) smem[i] = base[uint64_t(i / lines) * nx + i % lines];
  __syncthreads();
  fftLines(smem, ny, lines, true, sign);
  for (uint32_t i = threadIdx.x; i < points; i += blockDim.x) base[uint64_t(i / lines) * nx + i % lines] = smem[i];
}

// Threads per block: one per radix-4 butterfly of the block's points, at most kMaxThreads. A
// thread then holds at most 8 butterflies of a pass (kMaxQ): radix-4 passes have points / 4
// butterflies (<= 16384 / 4 / 512), and a radix-2 pass, which only lines of an odd power of two
// have, points / 2 with points <= 8192 (maxBlockPoints).
unsigned threadsFor(uint32_t points) {
  const uint32_t t = points / 4;
  return t < 32 ? 32u : (t > kMaxThreads ? kMaxThreads : t);
}
uint32_t maxBlockPoints(uint32_t n) {
  int log2n = 0;
  while ((1u << log2n) < n) ++log2n;
  return log2n % 2 ? kFftMaxBlockPoints / 2 : kFftMaxBlockPoints;
}

void allowSharedMemory(const void* kernel, size_t bytes) {
  // > 48 KiB of dynamic shared memory must be asked for per kernel.
  if (bytes > 48 * 1024)
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
}

}  // namespace

void launchFftRows(const void* in, void* out, uint32_t n, uint64_t rows, int sign, void* streamPtr) {
  if (rows == 0) return;
  const cudaStream_t stream = static_cast<cudaStream_t>(streamPtr);
  const uint32_t lines = n >= kFftBlockPoints ? 1u : kFftBlockPoints / n;
  const uint64_t blocks = (rows + lines - 1) / lines;
  const size_t bytes = size_t(lines) * n * sizeof(Cpx);
  allowSharedMemory(reinterpret_cast<const void*>(&fftRows), bytes);
  fftRows<<<unsigned(blocks), threadsFor(lines * n), bytes, stream>>>(static_cast<const Cpx*>(in),
                                                                         static_cast<Cpx*>(out), n, rows, lines, sign);
  CUDA_CHECK(cudaGetLastError());
}

void launchFftColumns(void* data, uint32_t nx, uint32_t ny, uint64_t arrays, int sign, void* streamPtr) {
  if (arrays == 0) return;
  const cudaStream_t stream = static_cast<cudaStream_t>(streamPtr);
  // Adjacent columns per block: 16 (128-byte row segments) when they fit in shared memory.
  uint32_t lines = kFftColumnGroup;
  while (lines > 1 && uint64_t(lines) * ny > maxBlockPoints(ny)) lines /= 2;
  if (lines > nx) lines = nx;
  const uint64_t blocks = arrays * (nx / lines);
  const size_t bytes = size_t(lines) * ny * sizeof(Cpx);
  allowSharedMemory(reinterpret_cast<const void*>(&fftColumns), bytes);
  fftColumns<<<unsigned(blocks), threadsFor(lines * ny), bytes, stream>>>(static_cast<Cpx*>(data), nx, ny, lines,
                                                                             sign);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace hfgpu::detail
