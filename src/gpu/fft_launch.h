// fft_launch.h - the launches of cuda/fft.cu (internal: src/gpu/fft.cpp calls them after checking
// the arguments; plain C++, streams as void*).
#pragma once

#include <cstdint>

namespace hfgpu::detail {

// `rows` transforms of n contiguous complex floats (n a power of two, 2..16384), in -> out (may
// be equal). sign -1 forward, +1 inverse.
void launchFftRows(const void* in, void* out, uint32_t n, uint64_t rows, int sign, void* stream);
// `rows` real transforms of n points (n a power of two, 4..16384; the complex side has n / 2 + 1
// points per row): sign -1 forward (n floats in, n / 2 + 1 complex out), +1 inverse (the reverse,
// unnormalised). in and out must not overlap.
void launchFftRealRows(const void* in, void* out, uint32_t n, uint64_t rows, int sign, void* stream);
// The columns (length ny, a power of two 2..16384) of `arrays` row-major ny x nx arrays back to
// back, in place; nx is any row length.
void launchFftColumns(void* data, uint32_t nx, uint32_t ny, uint64_t arrays, int sign, void* stream);
// The same in double precision (double2 points), lines of 2..8192 points: hfterrain's fields, whose
// sea level must fall where FFTW's double field puts it (gpu/spectral_field.h).
void launchFftRowsDouble(const void* in, void* out, uint32_t n, uint64_t rows, int sign, void* stream);
// columns != 0: only the first `columns` columns of each array (the rest is left as it is).
void launchFftColumnsDouble(void* data, uint32_t nx, uint32_t ny, uint64_t arrays, int sign, void* stream,
                            uint32_t columns = 0);
constexpr int kFftMaxDoubleSize = 8192;
// Double rows whose results are only wanted as the real parts of a crop (spectral_field.cpp):
// `rows` lines of n points of `grid` (a row of m = r n points split r ways: line s r + k1 holds
// columns k1 + r k2), the lines' stored rows s being rows (s mod nc) rc + s / nc; the real part of
// every (row, column) below `tile` goes to out[row tile + column]. `grid` is left undefined.
void launchFftRowsDoubleToCroppedReal(void* grid, uint32_t n, uint64_t rows, int sign, double* out, uint32_t tile,
                                      uint32_t r, uint32_t rc, uint32_t nc, void* stream);
// fft.h's fft2dC2RAsync: the columns of `in` (ny x (nx / 2 + 1) complex, `arrays` of them) in
// place, then the real rows into `out`; columns of 8192 points or more in two passes of shorter
// ones (four-step), read back in order by the row pass.
void launchFft2dC2R(void* in, void* out, uint32_t nx, uint32_t ny, uint64_t arrays, void* stream);

}  // namespace hfgpu::detail
