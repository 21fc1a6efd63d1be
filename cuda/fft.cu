// fft.cu - power-of-two complex FFTs with every radix pass of a line inside one thread block
// (issue 14; host API src/gpu/fft.h, the per-thread arithmetic and the plan in src/gpu/fft_core.h).
//
// One kernel template per line length N, sign and layout: a line's T = N / R threads each hold R
// points in registers; the first pass reads them straight from global memory (coalesced), each
// later pass goes through shared memory once, and the last pass writes straight to global memory
// (coalesced). Lines of at most 32 threads live inside one warp and synchronise with __syncwarp
// only. Rows: a block transforms L consecutive rows (threads t fastest). Columns of a row-major
// array: a block transforms L adjacent columns (threads column-fastest, so that a warp reads and
// writes L-point row segments: L >= 4 fills whole 32-byte sectors), kept interleaved in shared
// memory (column c, point e at (e + e >> kColumnShift) L + c).
//
// Every launch is a programmatic dependent launch (sm_90): a kernel waits for the previous grid of
// its stream before its first load and lets the next grid launch before its own last stores, so
// the row and column passes of a 2D transform (and the kernels around them) overlap their launch
// latency: -0.5 to -1.5 us per 2D transform of 128^2-512^2 on the H200, session 17.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <vector>

#include "gpu/cuda_util.h"
#include "gpu/fft_core.h"
#include "gpu/fft_launch.h"

namespace hfgpu::detail {
namespace {

__device__ Cpx gFftTwiddles[kFftTwiddles];          // fftTwiddleTable(), per device
__device__ CpxD gFftTwiddlesD[kFftTwiddles];        // fftTwiddleTable<double>(), per device
__device__ Cpx gFftHalfTwiddles[kFftHalfTwiddles];  // fftHalfTwiddleTable(), per device

// The pass twiddles in the precision of the points C (Cpx or CpxD).
template <class C>
__device__ __forceinline__ const C* twiddlesFor() {
  if constexpr (sizeof(C) == sizeof(Cpx))
    return gFftTwiddles;
  else
    return gFftTwiddlesD;
}

constexpr unsigned kMaxThreads = 1024;
constexpr unsigned kRowThreads = 128;  // threads of a block of short rows (measured: 128 > 256)

constexpr size_t kColumnBlockBytes = 140 * 1024;  // shared memory of a block of columns, at most

// The most columns a block of P's columns (points C) holds: 16 (128-byte row segments of floats)
// where shared memory and 1024 threads allow, fewer for long lines.
template <class P, class C>
constexpr uint32_t maxColumnsPerBlock() {
  const size_t lineBytes = P::kPasses == 1 ? 0 : size_t(P::kColumnPadded) * sizeof(C);
  uint32_t L = 16;
  while (L > 1 && (L * lineBytes > kColumnBlockBytes || L * P::T > kMaxThreads)) L /= 2;
  return L;
}

// The launch bound: rows T x L with T L <= kRowThreads unless one line alone needs more; float
// columns 1024 (64 registers a thread: the measured configuration); double columns the largest
// block they get (512 threads for the long ones: 128 registers instead of 64, which spilled 1 KiB
// a thread).
template <class P, bool kColumns, class C>
constexpr unsigned maxThreadsFor() {
  if constexpr (kColumns)
    return sizeof(C) == sizeof(Cpx) ? kMaxThreads : maxColumnsPerBlock<P, C>() * P::T;
  else
    return P::T > kRowThreads ? P::T : kRowThreads;
}

// What a row kernel does besides the complex FFT of its N points (fft_core.h, "real transforms").
enum Mode : int {
  kComplex = 0,
  kRealForward = 1,  // rows of 2N reals in, N + 1 complex out (forward)
  kRealInverse = 2,  // rows of N + 1 complex in, 2N reals out (inverse)
  kColumnsTwiddled = 3,  // columns, each output multiplied by a four-step twiddle (see launchFft2dC2R)
  kRowsCroppedReal = 4,  // rows whose real parts go straight into a crop (CroppedReal)
};

// Where kRowsCroppedReal rows put their outputs: the m x m array's rows were split r x n2 (a line
// of the launch is sub-line k1 of stored row s: line = s r + k1, its output k2 is column
// x = k1 + r k2) and its columns rc x nc (stored row s is row y = (s mod nc) rc + s / nc); the real
// part of (y, x) goes to out[y tile + x] when both are below tile (gpu/spectral_field.h's crop).
struct CroppedReal {
  double* out = nullptr;
  uint32_t tile = 0, r = 1, rc = 1, nc = 1;
};

// Programmatic dependent launch (sm_90): a kernel waits for the grid before it in the stream
// (its results visible) before its first load, and lets the next grid be launched at once so
// that its launch latency hides behind this one. No-ops where the launch had no such dependency.
__device__ __forceinline__ void waitForPreviousGrid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void allowNextGrid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Lines [first, first + L) of a launch, one per lineInBlock, thread t of each: every pass of the
// line, from `in` to `out` (may alias: every load of a line comes before its first store). Lines
// at or past `lines` take part in the barriers only. Shared memory: L lines of P::kPadded points
// (columns: P::kColumnPadded).
template <class P, int S, bool kColumns, int kMode, class C>
__device__ __forceinline__ void transformLines(const C* in, C* out, uint64_t lines, uint32_t nx, uint32_t split,
                                               const CroppedReal& crop, uint64_t first, uint32_t t,
                                               uint32_t lineInBlock, uint32_t L, C* smem) {
  static_assert(kMode == kComplex || kMode == kRowsCroppedReal || sizeof(C) == sizeof(Cpx),
                "real transforms in float only");
  static_assert(kMode != kRowsCroppedReal || (!kColumns && sizeof(C) == sizeof(CpxD)), "cropped rows: double rows");
  static_assert(kMode == kComplex || (kMode == kColumnsTwiddled) == kColumns, "real transforms are row transforms");
  constexpr uint32_t N = P::T * uint32_t(P::R);
  constexpr int R = P::R;
  constexpr uint32_t T = P::T;
  const uint64_t line = first + lineInBlock;
  const bool active = line < lines;
  // kRowsCroppedReal: output k2 of this line goes to crop.out[cropRow + r k2] (cropRow < 0: the
  // line is past the end or its row outside the crop).
  int64_t cropRow = -1;
  uint32_t cropK1 = 0;
  if constexpr (kMode == kRowsCroppedReal) {
    if (active) {
      const uint64_t stored = line / crop.r;
      cropK1 = uint32_t(line - stored * crop.r);
      const uint64_t y = (stored % crop.nc) * crop.rc + stored / crop.nc;
      if (y < crop.tile) cropRow = int64_t(y * crop.tile + cropK1);
    }
  }
  auto storeCropped = [&](uint32_t k2, const C& value) {
    const uint32_t x = cropK1 + crop.r * k2;
    if (cropRow >= 0 && x < crop.tile) crop.out[uint64_t(cropRow) + uint64_t(crop.r) * k2] = value.x;
  };
  uint64_t inBase, outBase, stride;
  if constexpr (kColumns) {  // column c of array a (each thread finds its own)
    // Plain columns: split != 0 transforms only the first `split` columns of each array.
    const uint32_t perArray = (kMode == kComplex && split != 0) ? split : nx;
    const uint64_t array = line / perArray;
    inBase = outBase = array * nx * N + (line - array * perArray);
    stride = nx;
  } else {
    // Real inverse rows after a four-step column pass (split = N1 of ny = N1 N2 rows per array,
    // nx = ny): row y of an array is stored at row N2 (y mod N1) + y / N1.
    uint64_t source = line;
    if (kMode == kRealInverse && split != 0 && active) {
      const uint64_t array = line / nx;
      const uint32_t y = uint32_t(line - array * nx);
      source = array * nx + uint64_t(nx / split) * (y % split) + y / split;
    }
    inBase = source * (kMode == kRealInverse ? N + 1 : N);
    outBase = line * (kMode == kRealForward ? N + 1 : N);
    stride = 1;
  }
  // Columns: L interleaved lines, point e of line c at columnSlot(e) L + c (see P::kColumnShift).
  auto shared = [&](uint32_t e) -> C& {
    return kColumns ? smem[(e + (e >> P::kColumnShift)) * L + lineInBlock] : smem[lineInBlock * P::kPadded + padded(e)];
  };
  auto barrier = [] {
    if constexpr (!kColumns && T <= 32)
      __syncwarp();  // the line's threads are part of one warp
    else
      __syncthreads();
  };

  C v[R];
#pragma unroll
  for (int m = 0; m < R; ++m) {
    const uint32_t e = t + T * uint32_t(m);
    if (!active) {
      v[m] = C{0, 0};
    } else if constexpr (kMode == kRealInverse) {
      v[m] = realInverseInput(in[inBase + e], in[inBase + N - e], e, N, gFftHalfTwiddles);
    } else {
      v[m] = in[inBase + e * stride];
    }
  }
  passInRegisters<R, P::r0, S>(v, t, T, 1, twiddlesFor<C>());
  if constexpr (P::kPasses == 1) {
    // T == 1, ns == 1: the outputs are in order in the registers.
    if (active) {
      if constexpr (kMode == kRealForward) {
#pragma unroll
        for (int m = 0; m < R; ++m)
          out[outBase + m] = realForwardOutput(v[m], v[(R - m) & (R - 1)], uint32_t(m), N, gFftHalfTwiddles);
        out[outBase + N] = Cpx{v[0].x - v[0].y, 0.0f};
      } else if constexpr (kMode == kRowsCroppedReal) {
#pragma unroll
        for (int m = 0; m < R; ++m) storeCropped(uint32_t(m), v[m]);
      } else {
#pragma unroll
        for (int m = 0; m < R; ++m) out[outBase + uint64_t(m) * stride] = v[m];
      }
    }
  } else {
#pragma unroll
    for (int m = 0; m < R; ++m) shared(passDestination<R, P::r0>(t, T, 1, m)) = v[m];
    uint32_t ns = uint32_t(P::r0);
#pragma unroll
    for (int p = 1; p < P::kPasses; ++p) {
      barrier();
#pragma unroll
      for (int m = 0; m < R; ++m) v[m] = shared(t + T * uint32_t(m));
      passInRegisters<R, R, S>(v, t, T, ns, twiddlesFor<C>());
      if (p == P::kPasses - 1) {
        allowNextGrid();  // this grid's last stores follow: the next one may be launched now
        // ns == T: output m of the thread's butterfly goes to t + T m.
        if constexpr (kMode == kRealForward) {
          // X[k] needs Z[N - k], which another thread holds: through shared memory once more.
          barrier();
#pragma unroll
          for (int m = 0; m < R; ++m) shared(t + T * uint32_t(m)) = v[m];
          barrier();
          if (active) {
#pragma unroll
            for (int m = 0; m < R; ++m) {
              const uint32_t k = t + T * uint32_t(m);
              out[outBase + k] = realForwardOutput(v[m], shared((N - k) & (N - 1)), k, N, gFftHalfTwiddles);
            }
            if (t == 0) out[outBase + N] = Cpx{v[0].x - v[0].y, 0.0f};
          }
        } else if (active) {
          if constexpr (kMode == kColumnsTwiddled) {
            // Four-step: output k1 of sub-column n2 times exp(S 2 pi i n2 k1 / (N N2)), where the
            // wide row of nx = N2 split points holds the N2 sub-columns of each column.
            // exp(2 pi i p / full) = exp(i pi p / M) with M = full / 2 <= 8192: the real rows' table
            // (p < M), or minus its entry for p - M.
            const uint32_t n2 = uint32_t((line % nx) / split), half = N * (nx / split) / 2;
#pragma unroll
            for (int m = 0; m < R; ++m) {
              const uint32_t p = n2 * (t + T * uint32_t(m));
              const bool negate = p >= half;
              Cpx w = halfTwiddle(S, negate ? p - half : p, half, gFftHalfTwiddles);
              if (negate) w = Cpx{-w.x, -w.y};
              v[m] = cmul(v[m], w);
            }
          }
          if constexpr (kMode == kRowsCroppedReal) {
#pragma unroll
            for (int m = 0; m < R; ++m) storeCropped(t + T * uint32_t(m), v[m]);
          } else {
#pragma unroll
            for (int m = 0; m < R; ++m) out[outBase + (t + T * uint32_t(m)) * stride] = v[m];
          }
        }
      } else {
        barrier();
#pragma unroll
        for (int m = 0; m < R; ++m) shared(passDestination<R, R>(t, T, ns, m)) = v[m];
      }
      ns *= uint32_t(R);
    }
  }
}

template <class P, int S, bool kColumns, int kMode, class C>
__global__ void __launch_bounds__(maxThreadsFor<P, kColumns, C>())
    fftLines(const C* in, C* out, uint64_t lines, uint32_t nx, uint32_t split, const CroppedReal crop) {
  extern __shared__ __align__(16) unsigned char smemBytes[];
  C* smem = reinterpret_cast<C*>(smemBytes);
  waitForPreviousGrid();
  const uint32_t L = kColumns ? blockDim.x : blockDim.y;
  transformLines<P, S, kColumns, kMode, C>(in, out, lines, nx, split, crop, uint64_t(blockIdx.x) * L,
                                        kColumns ? threadIdx.y : threadIdx.x, kColumns ? threadIdx.x : threadIdx.y, L,
                                        smem);
}

void allowSharedMemory(const void* kernel, size_t bytes) {
  // > 48 KiB of dynamic shared memory must be asked for per kernel.
  if (bytes > 48 * 1024)
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
}

int multiprocessors() {
  static const int count = [] {
    int device = 0, value = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&value, cudaDevAttrMultiProcessorCount, device));
    return std::max(value, 1);
  }();
  return count;
}

// The twiddle table on the current device, once: copied on the caller's stream and waited for, so
// that a kernel on any other stream sees it afterwards.
void ensureTwiddles(cudaStream_t stream) {
  static std::mutex mutex;
  static std::vector<int> ready;
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(mutex);
  if (std::find(ready.begin(), ready.end(), device) != ready.end()) return;
  const std::vector<Cpx>& table = fftTwiddleTable();
  CUDA_CHECK(cudaMemcpyToSymbolAsync(gFftTwiddles, table.data(), table.size() * sizeof(Cpx), 0, cudaMemcpyHostToDevice,
                                     stream));
  const std::vector<CpxD>& tableD = fftTwiddleTable<double>();
  CUDA_CHECK(cudaMemcpyToSymbolAsync(gFftTwiddlesD, tableD.data(), tableD.size() * sizeof(CpxD), 0,
                                     cudaMemcpyHostToDevice, stream));
  const std::vector<Cpx>& half = fftHalfTwiddleTable();
  CUDA_CHECK(cudaMemcpyToSymbolAsync(gFftHalfTwiddles, half.data(), half.size() * sizeof(Cpx), 0,
                                     cudaMemcpyHostToDevice, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  ready.push_back(device);
}

constexpr uint32_t kFourStepColumns = 8192;  // C2R columns from this length on: launchFft2dC2R

// Lines per block: rows fill kRowThreads threads (whole warps at least); columns 16 (128-byte row
// segments) where shared memory allows, fewer (down to 8) when that would leave SMs idle.
template <class P, bool kColumns, class C>
uint32_t linesPerBlock(uint64_t lines) {
  const uint64_t busy = 2 * uint64_t(multiprocessors());
  uint32_t L;
  if constexpr (kColumns) {
    // Measured on the H100 (hfbench fft): wider row segments beat more blocks per SM, down to 8.
    L = maxColumnsPerBlock<P, C>();
    while (L > 8 && (lines + L - 1) / L < busy) L /= 2;
  } else {
    const uint32_t minimum = P::T >= 32 ? 1 : 32 / P::T;
    L = P::T >= kRowThreads ? 1 : kRowThreads / P::T;
    while (L > minimum && (lines + L - 1) / L < busy) L /= 2;
  }
  return L;
}


bool programmaticLaunchAvailable() {
  static const bool available = [] {
    int device = 0, major = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    return major >= 9;
  }();
  return available;
}

// A launch with programmatic stream serialisation (waitForPreviousGrid above) where `programmatic`
// (the device and the kernel's code have it: sm_90 on); otherwise a plain launch.
template <class... Params, class... Args>
void launchAfterPreviousGrid(void (*kernel)(Params...), dim3 grid, dim3 block, size_t bytes, cudaStream_t stream,
                             bool programmatic, Args... args) {
  cudaLaunchAttribute attribute;
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = bytes;
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = programmatic ? 1 : 0;
  CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, Params(args)...));
}

template <class P, int S, bool kColumns, int kMode, class C>
void launchLines(const C* in, C* out, uint64_t lines, uint32_t nx, uint32_t split, cudaStream_t stream,
                 const CroppedReal& crop = {}) {
  const uint32_t L = linesPerBlock<P, kColumns, C>(lines);
  const dim3 block = kColumns ? dim3(L, P::T) : dim3(P::T, L);
  const size_t bytes = P::kPasses == 1 ? 0 : size_t(L) * (kColumns ? P::kColumnPadded : P::kPadded) * sizeof(C);
  const uint64_t blocks = (lines + L - 1) / L;
  auto* kernel = &fftLines<P, S, kColumns, kMode, C>;
  allowSharedMemory(reinterpret_cast<const void*>(kernel), bytes);
  // Programmatic only where the kernel's code has the griddepcontrol instructions (built for sm_90
  // on; a JIT of older PTX on an H100 would not wait): per kernel, once.
  static const bool programmatic = [&] {
    cudaFuncAttributes attributes{};
    CUDA_CHECK(cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(kernel)));
    return programmaticLaunchAvailable() && attributes.ptxVersion >= 90 && attributes.binaryVersion >= 90;
  }();
  launchAfterPreviousGrid(kernel, dim3(unsigned(blocks)), block, bytes, stream, programmatic, in, out, lines, nx, split,
                          crop);
}

template <int S, bool kColumns, int kMode = kComplex, class C = Cpx>
void launchAnySize(uint32_t n, const C* in, C* out, uint64_t lines, uint32_t nx, cudaStream_t stream,
                   uint32_t split = 0, const CroppedReal& crop = {}) {
  switch (n) {
    case 2: return launchLines<FftPlan<2>, S, kColumns, kMode, C>(in, out, lines, nx, split, stream, crop);
    case 4: return launchLines<FftPlan<4>, S, kColumns, kMode, C>(in, out, lines, nx, split, stream, crop);
    case 8: return launchLines<FftPlan<8>, S, kColumns, kMode, C>(in, out, lines, nx, split, stream, crop);
    case 16: return launchLines<FftPlan<16>, S, kColumns, kMode, C>(in, out, lines, nx, split, stream, crop);
    case 32: return launchLines<FftPlan<32>, S, kColumns, kMode, C>(in, out, lines, nx, split, stream, crop);
    case 64: return launchLines<FftPlan<64>, S, kColumns, kMode, C>(in, out, lines, nx, split, stream, crop);
    case 128: return launchLines<FftPlan<128>, S, kColumns, kMode, C>(in, out, lines, nx, split, stream, crop);
    case 256: return launchLines<FftPlan<256>, S, kColumns, kMode, C>(in, out, lines, nx, split, stream, crop);
    case 512: return launchLines<FftPlan<512>, S, kColumns, kMode, C>(in, out, lines, nx, split, stream, crop);
    case 1024: return launchLines<FftPlan<1024>, S, kColumns, kMode, C>(in, out, lines, nx, split, stream, crop);
    case 2048: return launchLines<FftPlan<2048>, S, kColumns, kMode, C>(in, out, lines, nx, split, stream, crop);
    case 4096: return launchLines<FftPlan<4096>, S, kColumns, kMode, C>(in, out, lines, nx, split, stream, crop);
    case 8192: return launchLines<FftPlan<8192>, S, kColumns, kMode, C>(in, out, lines, nx, split, stream, crop);
    case 16384:
      // A 16384-point line of doubles would need 278 KiB of shared memory.
      if constexpr (kMode == kComplex && sizeof(C) == sizeof(Cpx))
        return launchLines<FftPlan<16384>, S, kColumns, kMode, C>(in, out, lines, nx, split, stream, crop);
      return;
    default: return;  // fft.cpp has checked the size
  }
}

template <bool kColumns, class C = Cpx>
void launchSigned(int sign, uint32_t n, const C* in, C* out, uint64_t lines, uint32_t nx, cudaStream_t stream,
                  uint32_t split = 0) {
  ensureTwiddles(stream);
  if (sign > 0)
    launchAnySize<1, kColumns, kComplex, C>(n, in, out, lines, nx, stream, split);
  else
    launchAnySize<-1, kColumns, kComplex, C>(n, in, out, lines, nx, stream, split);
}

}  // namespace

void launchFftRows(const void* in, void* out, uint32_t n, uint64_t rows, int sign, void* streamPtr) {
  if (rows == 0) return;
  launchSigned<false>(sign, n, static_cast<const Cpx*>(in), static_cast<Cpx*>(out), rows, n,
                      static_cast<cudaStream_t>(streamPtr));
}

void launchFftRealRows(const void* in, void* out, uint32_t n, uint64_t rows, int sign, void* streamPtr) {
  if (rows == 0) return;
  const cudaStream_t stream = static_cast<cudaStream_t>(streamPtr);
  ensureTwiddles(stream);
  if (sign < 0)
    launchAnySize<-1, false, kRealForward>(n / 2, static_cast<const Cpx*>(in), static_cast<Cpx*>(out), rows, 0, stream);
  else
    launchAnySize<1, false, kRealInverse>(n / 2, static_cast<const Cpx*>(in), static_cast<Cpx*>(out), rows, 0, stream);
}

void launchFftColumns(void* data, uint32_t nx, uint32_t ny, uint64_t arrays, int sign, void* streamPtr) {
  if (arrays == 0 || nx == 0) return;
  launchSigned<true>(sign, ny, static_cast<const Cpx*>(data), static_cast<Cpx*>(data), arrays * nx, nx,
                     static_cast<cudaStream_t>(streamPtr));
}

void launchFftRowsDouble(const void* in, void* out, uint32_t n, uint64_t rows, int sign, void* streamPtr) {
  if (rows == 0) return;
  launchSigned<false, CpxD>(sign, n, static_cast<const CpxD*>(in), static_cast<CpxD*>(out), rows, n,
                            static_cast<cudaStream_t>(streamPtr));
}

void launchFftColumnsDouble(void* data, uint32_t nx, uint32_t ny, uint64_t arrays, int sign, void* streamPtr,
                            uint32_t columns) {
  if (arrays == 0 || nx == 0) return;
  const uint32_t perArray = columns == 0 || columns > nx ? nx : columns;
  launchSigned<true, CpxD>(sign, ny, static_cast<const CpxD*>(data), static_cast<CpxD*>(data), arrays * perArray, nx,
                           static_cast<cudaStream_t>(streamPtr), perArray == nx ? 0 : perArray);
}

void launchFftRowsDoubleToCroppedReal(void* grid, uint32_t n, uint64_t rows, int sign, double* out, uint32_t tile,
                                      uint32_t r, uint32_t rc, uint32_t nc, void* streamPtr) {
  if (rows == 0) return;
  const cudaStream_t stream = static_cast<cudaStream_t>(streamPtr);
  ensureTwiddles(stream);
  CroppedReal crop;
  crop.out = out;
  crop.tile = tile;
  crop.r = r;
  crop.rc = rc;
  crop.nc = nc;
  auto* g = static_cast<CpxD*>(grid);
  if (sign > 0)
    launchAnySize<1, false, kRowsCroppedReal, CpxD>(n, g, g, rows, n, stream, 0, crop);
  else
    launchAnySize<-1, false, kRowsCroppedReal, CpxD>(n, g, g, rows, n, stream, 0, crop);
}

void launchFft2dC2R(void* inPtr, void* outPtr, uint32_t nx, uint32_t ny, uint64_t arrays, void* streamPtr) {
  const cudaStream_t stream = static_cast<cudaStream_t>(streamPtr);
  auto* in = static_cast<Cpx*>(inPtr);
  auto* out = static_cast<Cpx*>(outPtr);
  const uint32_t columns = nx / 2 + 1;
  ensureTwiddles(stream);
  if (ny < kFourStepColumns) {
    launchAnySize<1, true>(ny, in, in, arrays * columns, columns, stream);
    launchAnySize<1, false, kRealInverse>(nx / 2, in, out, arrays * ny, ny, stream);
    return;
  }
  // Columns of 8192 or more points leave room for one or two per block (8 or 16 bytes of every
  // 32-byte sector read): split them ny = N1 N2 (four-step). Step 1: the N1-point transforms of
  // the N2 sub-columns n2 (points n2, n2 + N2, ...) of each column, which are the columns of a
  // N1 x (N2 columns) array, twiddled by exp(2 pi i n2 k1 / ny) on the way out; step 2: the
  // N2-point transforms of each run of N2 rows. Output row k1 + N1 k2 then sits at N2 k1 + k2,
  // which the row pass reads through.
  constexpr uint32_t N2 = 128;
  const uint32_t N1 = ny / N2;
  const uint64_t wide = uint64_t(N2) * columns;
  if (N1 == 64)
    launchLines<FftPlan<64>, 1, true, kColumnsTwiddled, Cpx>(in, in, arrays * wide, uint32_t(wide), columns, stream);
  else
    launchLines<FftPlan<128>, 1, true, kColumnsTwiddled, Cpx>(in, in, arrays * wide, uint32_t(wide), columns, stream);
  launchLines<FftPlan<N2>, 1, true, kComplex, Cpx>(in, in, arrays * N1 * columns, columns, 0, stream);
  launchAnySize<1, false, kRealInverse>(nx / 2, in, out, arrays * ny, ny, stream, N1);
}

}  // namespace hfgpu::detail
