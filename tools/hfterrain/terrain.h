// terrain.h - the project's own sample terrain: spectral synthesis (FFT) plus a coast.
//
// synthesizeTerrain() builds a size x size height field in metres that looks like a coastal
// mountain tile (think of an SRTM tile of Hawaii or of a fjord coast): a flat sea of exactly 0 m
// covering about `seaFraction` of the area and connected to the tile border, land rising from
// 1 m at the shore to exactly `maxHeight` at the highest peak, branching valleys and sharp
// divides. It needs no input data, so every checkout can build it (the real DEMs live outside
// the repository).
//
// Method, in order (terrain.cpp says why for each step); all of it runs on the tile plus a
// margin of size/8 on each side, cropped at the end:
//   1. fBm by spectral synthesis: complex Gaussian spectrum (Rayleigh amplitudes, uniform
//      phases) scaled so that 1-D profiles have a power spectrum ~ 1/f^beta, then one inverse
//      real FFT (FFTW) on a grid a little larger than the field;
//   2. a planar tilt in a seed-chosen direction, so that the sea gathers on one side;
//   3. sea level found by bisection so that the sea connected to the border covers seaFraction;
//   4. landscape evolution on a ~640 x 640 grid: rock uplift ~ (height of the fBm)^0.6,
//      stream-power river incision (implicit Braun-Willett scheme on priority-flood drainage)
//      and hillslope creep, 30 steps;
//   5. Catmull-Rom back to full resolution, high-passed fBm detail, a few talus (thermal
//      erosion) steps; the sea is set to 0 and land to >= 1 m.
// About 3 s for the default 2049 x 2049 on one core. The largest, 16385 x 16385, needs about
// 10 GB (one field's FFT buffers at a time) and a few minutes; the spectrum fill and the
// resampling run on all cores, each output written by one thread, so the heights are the same
// for any thread count.
//
// Deterministic: the same options give the same heights with the same build on the same
// machine (random numbers come from a fixed splitmix64 + Box-Muller, not from <random>'s
// distributions). Another FFTW build or CPU may round differently, and the river network can
// amplify that: do not compare the output against golden bytes across machines.
// No GDAL here: writing the GeoTIFF or .hfr is main.cpp's job.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace hfterrain {

// Where the two spectral fields (step 1 and the detail of step 5) are synthesised: FFTW on the
// CPU (the reference), or the GPU (gpu/spectral_field.h: the same spectrum, double-precision
// FFTs, so the same heights; builds with CUDA only). The rest runs on the CPU either way.
enum class FieldDevice { Cpu, Cuda };

// Whether this build can synthesise fields on the GPU (HFTERRAIN_CUDA) and a device is there.
bool cudaFieldsAvailable();

struct TerrainOptions {
  int size = 2049;            // width = height in samples; 33..32769
  uint64_t seed = 1;          // any value; the same seed gives the same terrain
  double maxHeight = 4000.0;  // metres: the highest land sample
  double seaFraction = 0.2;   // share of the area that is sea (0 m); 0..0.9
  double beta = 2.2;          // spectral exponent of the base fBm: the power spectrum of its 1-D
                              // profiles falls as 1/f^beta (Hurst H = (beta-1)/2)
  FieldDevice device = FieldDevice::Cpu;
};

// Called with the fraction done (0..1) and a short stage name; return false to cancel.
using ProgressFn = std::function<bool(double fraction, const char* stage)>;

// Fills `heights` with size*size samples, row-major (row 0 = north), metres, 0..maxHeight.
// Returns false and sets *error (if non-null) on bad options, cancellation, an FFTW failure or,
// with FieldDevice::Cuda, a GPU failure (no device, too little device memory).
bool synthesizeTerrain(const TerrainOptions& options, std::vector<uint16_t>& heights,
                       std::string* error = nullptr, const ProgressFn& progress = nullptr);

}  // namespace hfterrain
