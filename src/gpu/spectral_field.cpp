// spectral_field.cpp - hfterrain's fields on the GPU (spectral_field.h): sizes, memory, the
// launches in order (spectrum, columns, rows into the crop) on one stream, and the copy back.
#include "gpu/spectral_field.h"

#include <algorithm>
#include <stdexcept>

#include "gpu/cuda_util.h"
#include "gpu/fft.h"
#include "gpu/fft_launch.h"
#include "gpu/spectral_launch.h"

namespace hfgpu {

namespace {

constexpr int kMaxLine = kSpectralFieldMaxLine;
static_assert(kMaxLine == detail::kFftMaxDoubleSize, "the double FFT's longest line");
constexpr int kColumnLine = 4096;

// m = r n2 with n2 the largest power of two <= maxLine dividing m; false when r is not 1..6.
bool split(int m, uint32_t& r, uint32_t& n2, int maxLine = kMaxLine) {
  // m <= 65535: the kernels' 2D grids have a row of blocks per line (cuda/spectral.cu).
  if (m < 16 || m > 65535 || maxLine < 16 || maxLine > kMaxLine || (maxLine & (maxLine - 1)) != 0) return false;
  uint32_t p = 1;
  while (p < uint32_t(maxLine) && uint32_t(m) % (p * 2) == 0) p *= 2;
  r = uint32_t(m) / p;
  n2 = p;
  return r >= 1 && r <= 6 && uint64_t(r) * p == uint64_t(m) && p >= 16;  // columns in groups of 16
}

// The m x m array's transforms, columns first. The rows last, their real parts stored straight into the crop (rows of the array are the crop's
// rows through the columns' split rc x nc).
void transformRowsIntoCrop(double2* grid, uint32_t m, uint32_t r, uint32_t n2, uint32_t rc, uint32_t nc, int sign,
                           double* crop, uint32_t tile, cudaStream_t s) {
  if (r > 1) detail::launchRadixStep(grid, r, n2, m, m, 1, sign, s);
  detail::launchFftRowsDoubleToCroppedReal(grid, n2, uint64_t(m) * r, sign, crop, tile, r, rc, nc, s);
}
// Only the first `columns` columns: the spectrum is 0 right of m / 2, and so are those columns'
// transforms.
void transformColumns(double2* grid, uint32_t m, uint32_t r, uint32_t n2, uint32_t columns, int sign, cudaStream_t s) {
  if (r > 1) detail::launchRadixStep(grid, r, n2, columns, 1, m, sign, s);
  detail::launchFftColumnsDouble(grid, m, n2, r, sign, s, columns);
}

}  // namespace

bool spectralGridSupported(int m) {
  uint32_t r = 0, n2 = 0;
  return split(m, r, n2);
}

bool spectralField(const hfspectral::FieldSpec& spec, int tile, std::vector<double>& out, std::string& error,
                   int maxLinePoints, double* computeSeconds) {
  uint32_t r = 0, n2 = 0;
  if (!split(spec.m, r, n2, maxLinePoints)) {
    error = "GPU field: grid " + std::to_string(spec.m) + " is not r x 2^k (r = 1..6, 16 <= 2^k <= " +
            std::to_string(kMaxLine) + ", at most 65535)";
    return false;
  }
  if (tile < 1 || tile > spec.m) {
    error = "GPU field: tile " + std::to_string(tile) + " is not in 1.." + std::to_string(spec.m);
    return false;
  }
  if (cudaDeviceCountOrZero() == 0) {
    error = "no CUDA device";
    return false;
  }
  // Columns in lines of at most 4096 points where a split of m allows it: two double columns per
  // block then (32-byte row segments); one 8192-point column per block read 16 of every 32 bytes
  // (19 of the 24576^2 field's 55 ms on the H100, session 17).
  uint32_t rc = r, nc = n2;
  if (nc > kColumnLine) {
    uint32_t r2 = 0, n22 = 0;
    if (split(spec.m, r2, n22, kColumnLine)) rc = r2, nc = n22;
  }
  try {
    const uint64_t m = uint64_t(spec.m), cells = m * m, crop = uint64_t(tile) * uint64_t(tile);
    size_t freeBytes = 0, totalBytes = 0;
    CUDA_CHECK(cudaMemGetInfo(&freeBytes, &totalBytes));
    const uint64_t need = cells * sizeof(double2) + crop * sizeof(double);
    if (need > freeBytes) {
      error = "GPU field: needs " + std::to_string(need >> 20) + " MiB of device memory, " +
              std::to_string(freeBytes >> 20) + " MiB free";
      return false;
    }
    DeviceBuffer<double2> grid(cells);
    DeviceBuffer<double> cropped(crop);
    Stream stream;
    const int inverse = int(FftSign::Inverse);
    Event start, done;
    start.record(stream);
    detail::launchSpectrumFill(grid.get(), spec, stream.get());
    // Columns first, where the zero right half of the spectrum needs no transform; then rows.
    // m / 2 + 1 columns, rounded up to 16 (m is a multiple of 16): groups of L columns then start on
    // whole sectors in every array; the extra columns are zero, and so are their transforms.
    const uint32_t columns = std::min(uint32_t(m), (uint32_t(m / 2 + 1) + 15u) & ~15u);
    transformColumns(grid.get(), uint32_t(m), rc, nc, columns, inverse, stream);
    transformRowsIntoCrop(grid.get(), uint32_t(m), r, n2, rc, nc, inverse, cropped.get(), uint32_t(tile), stream);
    done.record(stream);
    out.resize(crop);
    CUDA_CHECK(cudaMemcpyAsync(out.data(), cropped.get(), crop * sizeof(double), cudaMemcpyDeviceToHost, stream));
    stream.synchronize();
    if (computeSeconds) *computeSeconds = double(done.elapsedMsSince(start)) * 1e-3;
    return true;
  } catch (const std::exception& e) {
    error = std::string("GPU field: ") + e.what();
    return false;
  }
}

}  // namespace hfgpu
