// fft.cpp - argument checks of the GPU FFT (fft.h); the kernels are in cuda/fft.cu.
#include "gpu/fft.h"

#include <cstdint>
#include <stdexcept>
#include <string>

#include "gpu/fft_core.h"
#include "gpu/fft_launch.h"

namespace hfgpu {

namespace {

void checkSize(int n, const char* what) {
  if (n < kFftMinSize || n > kFftMaxSize || (n & (n - 1)) != 0)
    throw std::invalid_argument(std::string("hfgpu fft: ") + what + " " + std::to_string(n) +
                                " is not a power of two in 2.." + std::to_string(kFftMaxSize));
}
void checkCommon(const float2* in, const float2* out, int batch) {
  if (!in || !out) throw std::invalid_argument("hfgpu fft: null data pointer");
  // The kernels move whole points (8 bytes) per access; real arrays are read and written as pairs.
  if (reinterpret_cast<uintptr_t>(in) % 8 != 0 || reinterpret_cast<uintptr_t>(out) % 8 != 0)
    throw std::invalid_argument("hfgpu fft: data pointers must be 8-byte aligned (cudaMalloc's are)");
  if (batch < 1) throw std::invalid_argument("hfgpu fft: batch " + std::to_string(batch) + " < 1");
}

}  // namespace

static_assert(sizeof(float2) == sizeof(detail::Cpx), "float2 and Cpx share a layout");

void fftC2CAsync(const float2* in, float2* out, int n, int batch, FftSign sign, cudaStream_t stream) {
  checkSize(n, "size");
  checkCommon(in, out, batch);
  detail::launchFftRows(in, out, uint32_t(n), uint64_t(batch), int(sign), stream);
}

namespace {

void checkRealSize(int n, const char* what) {
  if (n < 4 || n > kFftMaxSize || (n & (n - 1)) != 0)
    throw std::invalid_argument(std::string("hfgpu fft: real ") + what + " " + std::to_string(n) +
                                " is not a power of two in 4.." + std::to_string(kFftMaxSize));
}
void checkApart(const void* in, size_t inBytes, const void* out, size_t outBytes) {
  const auto a = reinterpret_cast<uintptr_t>(in), b = reinterpret_cast<uintptr_t>(out);
  if (a < b + outBytes && b < a + inBytes) throw std::invalid_argument("hfgpu fft: real transforms need in and out apart");
}

}  // namespace

void fftR2CAsync(const float* in, float2* out, int n, int batch, cudaStream_t stream) {
  checkRealSize(n, "size");
  checkCommon(reinterpret_cast<const float2*>(in), out, batch);
  const uint64_t rows = uint64_t(batch);
  checkApart(in, rows * uint64_t(n) * sizeof(float), out, rows * uint64_t(n / 2 + 1) * sizeof(float2));
  detail::launchFftRealRows(in, out, uint32_t(n), rows, -1, stream);
}

void fftC2RAsync(const float2* in, float* out, int n, int batch, cudaStream_t stream) {
  checkRealSize(n, "size");
  checkCommon(in, reinterpret_cast<const float2*>(out), batch);
  const uint64_t rows = uint64_t(batch);
  checkApart(in, rows * uint64_t(n / 2 + 1) * sizeof(float2), out, rows * uint64_t(n) * sizeof(float));
  detail::launchFftRealRows(in, out, uint32_t(n), rows, 1, stream);
}

void fft2dR2CAsync(const float* in, float2* out, int nx, int ny, int batch, cudaStream_t stream) {
  checkRealSize(nx, "width");
  checkSize(ny, "height");
  checkCommon(reinterpret_cast<const float2*>(in), out, batch);
  const uint64_t rows = uint64_t(ny) * uint64_t(batch);
  checkApart(in, rows * uint64_t(nx) * sizeof(float), out, rows * uint64_t(nx / 2 + 1) * sizeof(float2));
  detail::launchFftRealRows(in, out, uint32_t(nx), rows, -1, stream);
  detail::launchFftColumns(out, uint32_t(nx / 2 + 1), uint32_t(ny), uint64_t(batch), -1, stream);
}

void fft2dC2RAsync(float2* in, float* out, int nx, int ny, int batch, cudaStream_t stream) {
  checkRealSize(nx, "width");
  checkSize(ny, "height");
  checkCommon(in, reinterpret_cast<const float2*>(out), batch);
  const uint64_t rows = uint64_t(ny) * uint64_t(batch);
  checkApart(in, rows * uint64_t(nx / 2 + 1) * sizeof(float2), out, rows * uint64_t(nx) * sizeof(float));
  detail::launchFft2dC2R(in, out, uint32_t(nx), uint32_t(ny), uint64_t(batch), stream);
}

void fft2dC2CAsync(const float2* in, float2* out, int nx, int ny, int batch, FftSign sign, cudaStream_t stream) {
  checkSize(nx, "width");
  checkSize(ny, "height");
  checkCommon(in, out, batch);
  detail::launchFftRows(in, out, uint32_t(nx), uint64_t(ny) * uint64_t(batch), int(sign), stream);
  detail::launchFftColumns(out, uint32_t(nx), uint32_t(ny), uint64_t(batch), int(sign), stream);
}

}  // namespace hfgpu
