// terrain.h - the project's own sample terrain: spectral synthesis (FFT) plus a coast.
//
// synthesizeTerrain() builds a size x size height field in metres that looks like a coastal
// mountain tile (think an SRTM tile of Hawaii or a fjord coast): a flat sea of exactly 0 m
// covering about `seaFraction` of the area and connected to the tile border, land rising from a
// few metres at the shore to about `maxHeight` metres, sharp ridges, and valleys that drain to
// the sea. It needs no input data, so every checkout can build it (the real DEMs live outside
// the repository).
//
// Method, in order (terrain.cpp says why for each step):
//   1. fBm by spectral synthesis: Gaussian amplitudes scaled by 1/f^(beta/2), random phases,
//      one inverse real FFT (FFTW) on a grid larger than the tile, so the tile does not wrap;
//   2. a gentle tilt in a seed-chosen direction, so that the sea is mostly on one side;
//   3. sea level at the seaFraction quantile; land height = (elevation above sea)^p;
//   4. ridged detail (1 - |band|)^2 from two band-limited spectral fields, stronger up high;
//   5. thermal erosion (talus slope relaxation), then stream-power valley carving along D8
//      flow accumulation on the depression-filled surface;
//   6. sea = below-sea cells connected to the border, set to exactly 0; everything else >= 1 m.
//
// Deterministic: the same options give the same heights on the same platform (the random
// numbers come from a fixed splitmix64 + Box-Muller, not from <random>'s distributions).
// No GDAL here: writing the GeoTIFF is main.cpp's job.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace hfterrain {

struct TerrainOptions {
  int size = 2049;            // width = height in samples; 33..16385
  uint64_t seed = 1;          // any value; the same seed gives the same terrain
  double maxHeight = 4000.0;  // metres: the highest land sample
  double seaFraction = 0.2;   // share of the area that is sea (0 m); 0..0.9
  double beta = 2.2;          // spectral exponent of the base fBm: the power spectrum of its 1-D
                              // profiles falls as 1/f^beta (Hurst H = (beta-1)/2)
};

// Called with the fraction done (0..1) and a short stage name; return false to cancel.
using ProgressFn = std::function<bool(double fraction, const char* stage)>;

// Fills `heights` with size*size samples, row-major (row 0 = north), metres, 0..maxHeight.
// Returns false and sets *error (if non-null) on bad options, cancellation or an FFTW failure.
bool synthesizeTerrain(const TerrainOptions& options, std::vector<uint16_t>& heights,
                       std::string* error = nullptr, const ProgressFn& progress = nullptr);

}  // namespace hfterrain
