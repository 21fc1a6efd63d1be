// fft_launch.h - the launches of cuda/fft.cu (internal: src/gpu/fft.cpp calls them after checking
// the arguments; plain C++, streams as void*).
#pragma once

#include <cstdint>

namespace hfgpu::detail {

constexpr uint32_t kFftMaxBlockPoints = 16384;  // points one block holds (128 KiB of shared memory)
constexpr uint32_t kFftBlockPoints = 2048;      // rows shorter than this share a block
constexpr uint32_t kFftColumnGroup = 16;        // adjacent columns per block (128-byte segments)

// `rows` transforms of n contiguous complex floats (n a power of two, 2..kFftMaxBlockPoints),
// in -> out (may be equal). sign -1 forward, +1 inverse.
void launchFftRows(const void* in, void* out, uint32_t n, uint64_t rows, int sign, void* stream);
// The columns (length ny) of `arrays` row-major ny x nx arrays back to back, in place.
void launchFftColumns(void* data, uint32_t nx, uint32_t ny, uint64_t arrays, int sign, void* stream);

}  // namespace hfgpu::detail
