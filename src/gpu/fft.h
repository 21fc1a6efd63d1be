// fft.h - complex FFTs on the GPU with every radix pass of a row or column in on-chip shared
// memory (issue 14; kernels in cuda/fft.cu, pass arithmetic in gpu/fft_core.h). The building
// block of the spectral terrain synthesis and the animated ocean.
//
//   hfgpu::fftC2CAsync(dIn, dOut, 1024, 64, hfgpu::FftSign::Forward, stream);     // 64 rows of 1024
//   hfgpu::fft2dC2CAsync(dIn, dOut, 512, 512, 1, hfgpu::FftSign::Inverse, stream); // one 512 x 512
//
// Contract:
// - Single-precision complex (float2) data in device memory; sizes are powers of two from 2 to
//   16384 per dimension; `in` may equal `out`. Every call only enqueues work on `stream`.
// - Conventions of FFTW and cuFFT: forward exp(-2 pi i jk / n), inverse exp(+2 pi i jk / n), both
//   unnormalised (an inverse after a forward gives n (or nx ny) times the input).
// - 2D arrays are row-major, ny rows of nx points, `batch` arrays back to back: the rows are
//   transformed (several short rows per block), then the columns in place (one block per 8 or
//   16 adjacent columns where they fit in shared memory, fewer for tall arrays).
// - Each line is one block: 16 points per thread in registers (8 for lines of 128-512 points),
//   radix-16 (radix-8) passes, the first one smaller, exchanged through shared memory; twiddles
//   from a table made once per device (the first call on a device copies 368 KiB and waits for
//   it on `stream`). Each kernel waits for the previous grid of `stream` before its first load
//   (programmatic dependent launch), so work before it in the stream is seen as usual.
// - Bad arguments (a size that is not a power of two in range, a null or not 8-byte-aligned
//   pointer, a batch < 1) throw std::invalid_argument; CUDA errors throw std::runtime_error (CUDA_CHECK).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace hfgpu {

enum class FftSign : int { Forward = -1, Inverse = 1 };

constexpr int kFftMinSize = 2;
constexpr int kFftMaxSize = 16384;

// `batch` 1D transforms of n contiguous points each.
void fftC2CAsync(const float2* in, float2* out, int n, int batch, FftSign sign, cudaStream_t stream);
// `batch` 2D transforms of row-major ny x nx arrays.
void fft2dC2CAsync(const float2* in, float2* out, int nx, int ny, int batch, FftSign sign, cudaStream_t stream);

// Real transforms, FFTW's and cuFFT's layout: a real row of n points (n a power of two 4..16384)
// has n / 2 + 1 complex points, the rest being their conjugates; forward R2C, inverse C2R
// (unnormalised: C2R after R2C gives n (or nx ny) times the input; the imaginary parts of the
// first and last complex point of a row are ignored). `in` and `out` must not overlap.
// 1D: `batch` rows back to back; `in` is only read.
void fftR2CAsync(const float* in, float2* out, int n, int batch, cudaStream_t stream);
void fftC2RAsync(const float2* in, float* out, int n, int batch, cudaStream_t stream);
// 2D: row-major ny x nx reals <-> ny x (nx / 2 + 1) complex, `batch` arrays back to back. R2C
// only reads `in`; C2R transforms the columns of `in` in place first (it is overwritten, as
// cuFFT's C2R may overwrite its input).
void fft2dR2CAsync(const float* in, float2* out, int nx, int ny, int batch, cudaStream_t stream);
void fft2dC2RAsync(float2* in, float* out, int nx, int ny, int batch, cudaStream_t stream);

}  // namespace hfgpu
