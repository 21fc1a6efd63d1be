// spectral_field.h - hfterrain's fBm fields synthesised on the GPU (issue 14): the random
// spectrum (gpu/spectral_core.h, the same numbers as the CPU's), one inverse 2D FFT in the
// project's own shared-memory kernels (cuda/fft.cu) and the crop, all in device memory.
//
// The CPU reference (tools/hfterrain/terrain.cpp) fills an m x (m/2 + 1) half spectrum and runs
// FFTW's complex-to-real inverse in double. Here the same half spectrum is laid into an m x m
// complex array with the weights that make a complex-to-complex inverse's real part equal to
// that c2r (1 on the columns kx = 0 and m/2, whose imaginary parts c2r ignores; 2 on the others;
// 0 above m/2), transformed, and the real part of the top-left tile x tile corner is copied back.
// Everything is in double precision, like FFTW's path: hfterrain's sea level is a threshold on
// this field, and a float field (2e-7 relative error) put a few of 268 M samples of the 16385^2
// terrain on the other side of the coastline than the CPU's (3-10 m apart after erosion). m may
// be a power of two up to 8192 (the double FFT's longest line) or r times one (r = 2..6), at
// most 65535 (the kernels' 2D grids): such lines run as a radix-r step over global memory and r
// shared-memory transforms of m / r points (the "four-step" split), whose output order the crop
// reads through.
//
// Memory: 16 m^2 bytes of device memory for the array plus 8 tile^2 for the crop (m = 49152, the
// 32769^2 terrain's grid: 38.7 GB + 13.4 GB).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gpu/spectral_core.h"

namespace hfgpu {

// The longest line transformed in shared memory (the double FFT's); longer ones are split.
constexpr int kSpectralFieldMaxLine = 8192;

// Whether m is a grid size spectralField() takes (see above), m >= 16.
bool spectralGridSupported(int m);

// Fills `out` with tile x tile floats, row-major: the inverse transform of `spec`'s spectrum
// (unnormalised, as FFTW's c2r), rows and columns 0 .. tile - 1 of the m x m period. False with
// a one-line error when there is no CUDA device, the sizes are not supported (tile > m) or the
// device has too little memory.
// maxLinePoints (tests): split lines longer than this (a power of two, 16..8192) instead of
// 8192, so that the radix-r steps run at small sizes too. computeSeconds (benchmarks): the
// device time of the spectrum, the transforms and the crop (CUDA events; no allocation, no copy).
bool spectralField(const hfspectral::FieldSpec& spec, int tile, std::vector<double>& out, std::string& error,
                   int maxLinePoints = 8192, double* computeSeconds = nullptr);

}  // namespace hfgpu
