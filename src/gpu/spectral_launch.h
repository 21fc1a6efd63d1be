// spectral_launch.h - the launches of cuda/spectral.cu (internal: gpu/spectral_field.cpp).
#pragma once

#include <cstdint>

#include "gpu/spectral_core.h"

namespace hfgpu::detail {

// Every array here is double precision: `grid` holds m x m double2.
// The weighted half spectrum of `spec` into the m x m complex array `grid` (zeros elsewhere).
void launchSpectrumFill(void* grid, const hfspectral::FieldSpec& spec, void* stream);
// The radix-r step (r = 2..6) of the four-step split of lines of m = r n2 points: `lines` lines, point j
// of line l at grid[l * lineStride + j * pointStride]; in place: the r-point DFTs over
// j2, n2 + j2, ..., times the twiddles exp(sign 2 pi i j2 k1 / m), stored at k1 n2 + j2.
void launchRadixStep(void* grid, uint32_t r, uint32_t n2, uint64_t lines, uint64_t lineStride, uint64_t pointStride,
                     int sign, void* stream);

}  // namespace hfgpu::detail
