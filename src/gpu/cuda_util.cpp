// cuda_util.cpp - error reporting and the out-of-line parts of the RAII owners.
#include "gpu/cuda_util.h"

namespace hfgpu {

void throwCudaError(cudaError_t code, const char* what, const char* file, int line) {
  throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " +
                           cudaGetErrorName(code) + ": " + cudaGetErrorString(code) + " (" +
                           what + ")");
}

void logCudaError(cudaError_t code, const char* what, const char* file, int line) noexcept {
  std::fprintf(stderr, "hfgpu: %s:%d: %s: %s (%s)\n", file, line, cudaGetErrorName(code),
               cudaGetErrorString(code), what);
}

int cudaDeviceCountOrZero() noexcept {
  int count = 0;
  const cudaError_t st = cudaGetDeviceCount(&count);
  if (st != cudaSuccess) {
    (void)cudaGetLastError();  // clear the error so it is not reported by a later call
    return 0;
  }
  return count;
}

SurfaceArray16::SurfaceArray16(int width, int height) : width_(width), height_(height) {
  const cudaChannelFormatDesc desc = cudaCreateChannelDesc(16, 0, 0, 0, cudaChannelFormatKindUnsigned);
  CUDA_CHECK(cudaMallocArray(&array_, &desc, size_t(width), size_t(height),
                             cudaArraySurfaceLoadStore));
  cudaResourceDesc res{};
  res.resType = cudaResourceTypeArray;
  res.res.array.array = array_;
  const cudaError_t st = cudaCreateSurfaceObject(&surface_, &res);
  if (st != cudaSuccess) {
    CUDA_LOG(cudaFreeArray(array_));
    array_ = nullptr;
    throwCudaError(st, "cudaCreateSurfaceObject", __FILE__, __LINE__);
  }
}

void SurfaceArray16::release() noexcept {
  if (surface_) CUDA_LOG(cudaDestroySurfaceObject(surface_));
  if (array_) CUDA_LOG(cudaFreeArray(array_));
  surface_ = 0;
  array_ = nullptr;
}

void SurfaceArray16::uploadAsync(const uint16_t* host, size_t pitch, cudaStream_t stream) const {
  CUDA_CHECK(cudaMemcpy2DToArrayAsync(array_, 0, 0, host, pitch * 2, size_t(width_) * 2,
                                      size_t(height_), cudaMemcpyHostToDevice, stream));
}

void SurfaceArray16::downloadAsync(uint16_t* host, size_t pitch, cudaStream_t stream) const {
  CUDA_CHECK(cudaMemcpy2DFromArrayAsync(host, pitch * 2, array_, 0, 0, size_t(width_) * 2,
                                        size_t(height_), cudaMemcpyDeviceToHost, stream));
}

}  // namespace hfgpu
