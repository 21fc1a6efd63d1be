// fft.cpp - argument checks of the GPU FFT (fft.h); the kernels are in cuda/fft.cu.
#include "gpu/fft.h"

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
  if (batch < 1) throw std::invalid_argument("hfgpu fft: batch " + std::to_string(batch) + " < 1");
}

}  // namespace

static_assert(sizeof(float2) == sizeof(detail::Cpx), "float2 and Cpx share a layout");

void fftC2CAsync(const float2* in, float2* out, int n, int batch, FftSign sign, cudaStream_t stream) {
  checkSize(n, "size");
  checkCommon(in, out, batch);
  detail::launchFftRows(in, out, uint32_t(n), uint64_t(batch), int(sign), stream);
}

void fft2dC2CAsync(const float2* in, float2* out, int nx, int ny, int batch, FftSign sign, cudaStream_t stream) {
  checkSize(nx, "width");
  checkSize(ny, "height");
  checkCommon(in, out, batch);
  detail::launchFftRows(in, out, uint32_t(nx), uint64_t(ny) * uint64_t(batch), int(sign), stream);
  detail::launchFftColumns(out, uint32_t(nx), uint32_t(ny), uint64_t(batch), int(sign), stream);
}

}  // namespace hfgpu
