// cuda_util.h - CUDA error checking and move-only RAII owners of CUDA resources.
//
// Rules (DESIGN.md, "GPU codec"): every CUDA runtime call is checked; CUDA_CHECK throws
// std::runtime_error("file:line: cudaErrorName: message (expression)"). No raw
// cudaMalloc/cudaFree/cudaMallocHost/cudaStreamCreate/... outside the types below. Destructors
// never throw: a failing release is logged to stderr and ignored.
//
// This header needs only the CUDA runtime *API* header (plain C++, no nvcc): host code in
// src/gpu/*.cpp, tests and tools include it directly.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <utility>

namespace hfgpu {

// Throws std::runtime_error for a non-success code. `what` is the expression that failed.
[[noreturn]] void throwCudaError(cudaError_t code, const char* what, const char* file, int line);
// Logs (stderr, one line) a failure in a destructor or other no-throw context.
void logCudaError(cudaError_t code, const char* what, const char* file, int line) noexcept;

#define CUDA_CHECK(expr)                                                       \
  do {                                                                         \
    const cudaError_t hf_cuda_check_status_ = (expr);                          \
    if (hf_cuda_check_status_ != cudaSuccess)                                  \
      ::hfgpu::throwCudaError(hf_cuda_check_status_, #expr, __FILE__, __LINE__); \
  } while (0)

#define CUDA_LOG(expr)                                                         \
  do {                                                                         \
    const cudaError_t hf_cuda_log_status_ = (expr);                            \
    if (hf_cuda_log_status_ != cudaSuccess)                                    \
      ::hfgpu::logCudaError(hf_cuda_log_status_, #expr, __FILE__, __LINE__);   \
  } while (0)

// Number of CUDA devices, 0 when there is no driver, no device, or the query fails (never
// throws). Clears the sticky "no device" error so later calls are not confused by it.
int cudaDeviceCountOrZero() noexcept;

// Where a CudaBuffer's memory comes from: device memory or page-locked host memory.
struct DeviceMemory {
  static void* allocate(size_t bytes) {
    void* p = nullptr;
    CUDA_CHECK(cudaMalloc(&p, bytes));
    return p;
  }
  static void free(void* p) noexcept { CUDA_LOG(cudaFree(p)); }
};
struct PinnedMemory {
  static void* allocate(size_t bytes) {
    void* p = nullptr;
    CUDA_CHECK(cudaMallocHost(&p, bytes));
    return p;
  }
  static void free(void* p) noexcept { CUDA_LOG(cudaFreeHost(p)); }
};

// `count` uninitialised elements of T from Memory. Move-only; the destructor only logs errors.
template <typename T, typename Memory>
class CudaBuffer {
 public:
  CudaBuffer() = default;
  explicit CudaBuffer(size_t count) { allocate(count); }
  ~CudaBuffer() { release(); }
  CudaBuffer(const CudaBuffer&) = delete;
  CudaBuffer& operator=(const CudaBuffer&) = delete;
  CudaBuffer(CudaBuffer&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), count_(std::exchange(o.count_, 0)) {}
  CudaBuffer& operator=(CudaBuffer&& o) noexcept {
    if (this != &o) {
      release();
      ptr_ = std::exchange(o.ptr_, nullptr);
      count_ = std::exchange(o.count_, 0);
    }
    return *this;
  }

  // Replaces the contents with `count` uninitialised elements (frees the old memory first).
  void allocate(size_t count) {
    release();
    if (count == 0) return;
    ptr_ = static_cast<T*>(Memory::allocate(count * sizeof(T)));
    count_ = count;
  }
  // Grows to at least `count` elements (contents are not kept); never shrinks.
  void reserve(size_t count) {
    if (count > count_) allocate(count);
  }
  void release() noexcept {
    if (ptr_) Memory::free(ptr_);
    ptr_ = nullptr;
    count_ = 0;
  }

  T* get() const { return ptr_; }
  T& operator[](size_t i) const { return ptr_[i]; }  // host-accessible memory only
  size_t size() const { return count_; }
  size_t bytes() const { return count_ * sizeof(T); }
  explicit operator bool() const { return ptr_ != nullptr; }

 private:
  T* ptr_ = nullptr;
  size_t count_ = 0;
};

// Device memory for `count` elements of T.
template <typename T>
using DeviceBuffer = CudaBuffer<T, DeviceMemory>;
// Page-locked host memory for `count` elements of T (fast, asynchronous copies).
template <typename T>
using PinnedBuffer = CudaBuffer<T, PinnedMemory>;

// A non-blocking CUDA stream. Move-only.
class Stream {
 public:
  Stream() { CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() {
    if (s_) CUDA_LOG(cudaStreamDestroy(s_));
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  Stream(Stream&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  Stream& operator=(Stream&& o) noexcept {
    if (this != &o) {
      if (s_) CUDA_LOG(cudaStreamDestroy(s_));
      s_ = std::exchange(o.s_, nullptr);
    }
    return *this;
  }
  cudaStream_t get() const { return s_; }
  operator cudaStream_t() const { return s_; }  // NOLINT: used as a cudaStream_t everywhere
  void synchronize() const { CUDA_CHECK(cudaStreamSynchronize(s_)); }

 private:
  cudaStream_t s_ = nullptr;
};

// A CUDA event (timing enabled unless `timing` is false). Move-only.
class Event {
 public:
  explicit Event(bool timing = true) {
    CUDA_CHECK(cudaEventCreateWithFlags(&e_, timing ? cudaEventDefault : cudaEventDisableTiming));
  }
  ~Event() {
    if (e_) CUDA_LOG(cudaEventDestroy(e_));
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  Event(Event&& o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
  Event& operator=(Event&& o) noexcept {
    if (this != &o) {
      if (e_) CUDA_LOG(cudaEventDestroy(e_));
      e_ = std::exchange(o.e_, nullptr);
    }
    return *this;
  }
  cudaEvent_t get() const { return e_; }
  operator cudaEvent_t() const { return e_; }  // NOLINT
  void record(cudaStream_t stream) const { CUDA_CHECK(cudaEventRecord(e_, stream)); }
  void synchronize() const { CUDA_CHECK(cudaEventSynchronize(e_)); }
  bool ready() const {
    const cudaError_t st = cudaEventQuery(e_);
    if (st == cudaErrorNotReady) return false;
    CUDA_CHECK(st);
    return true;
  }
  // Milliseconds from `start` to this event (both recorded and complete).
  float elapsedMsSince(const Event& start) const {
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start.e_, e_));
    return ms;
  }

 private:
  cudaEvent_t e_ = nullptr;
};

// A 2D CUDA array of 16-bit unsigned texels usable as a surface (cudaArraySurfaceLoadStore), and
// its surface object. For tests and benchmarks: the viewer's atlas comes from GL interop instead
// (DEVICE.md: one plain 2D array per texture layer, one surface object per layer).
class SurfaceArray16 {
 public:
  SurfaceArray16() = default;
  SurfaceArray16(int width, int height);
  ~SurfaceArray16() { release(); }
  SurfaceArray16(const SurfaceArray16&) = delete;
  SurfaceArray16& operator=(const SurfaceArray16&) = delete;
  SurfaceArray16(SurfaceArray16&& o) noexcept
      : array_(std::exchange(o.array_, nullptr)),
        surface_(std::exchange(o.surface_, 0)),
        width_(o.width_),
        height_(o.height_) {}
  SurfaceArray16& operator=(SurfaceArray16&& o) noexcept {
    if (this != &o) {
      release();
      array_ = std::exchange(o.array_, nullptr);
      surface_ = std::exchange(o.surface_, 0);
      width_ = o.width_;
      height_ = o.height_;
    }
    return *this;
  }
  void release() noexcept;

  cudaArray_t array() const { return array_; }
  cudaSurfaceObject_t surface() const { return surface_; }
  int width() const { return width_; }
  int height() const { return height_; }
  // Whole-array copies (synchronous on `stream`'s order; pitch in samples).
  void uploadAsync(const uint16_t* host, size_t pitch, cudaStream_t stream) const;
  void downloadAsync(uint16_t* host, size_t pitch, cudaStream_t stream) const;

 private:
  cudaArray_t array_ = nullptr;
  cudaSurfaceObject_t surface_ = 0;
  int width_ = 0, height_ = 0;
};

}  // namespace hfgpu
