// spectral_core.h - the random spectrum of hfterrain's fBm fields, bin by bin, shared by the CPU
// synthesis (tools/hfterrain/terrain.cpp, FFTW) and the GPU one (gpu/spectral_field.h,
// cuda/spectral.cu), so that both draw the same numbers and shape them with the same formulas:
// the same seed gives the same terrain up to rounding on either.
//
// The random numbers are splitmix64's sequence: draw i (0-based) after a generator state s is a
// pure function of (s, i), so any bin can be computed alone (a GPU thread per bin, or a CPU
// thread per row). Bin (ky, kx) of an m x (m/2 + 1) half spectrum takes draws 2 (ky (m/2+1) + kx)
// and the next one: a Box-Muller pair, scaled by a power law in the frequency.
// bin() is in double on both (device double precision is exact IEEE arithmetic; only log, sqrt,
// sin, cos and pow may differ from glibc's in the last place).
#pragma once

#include <cmath>
#include <cstdint>

#ifdef __CUDACC__
#define HF_SPECTRAL_HD __host__ __device__
#else
#define HF_SPECTRAL_HD
#endif

namespace hfspectral {

constexpr uint64_t kGamma = 0x9E3779B97F4A7C15ull;  // splitmix64's increment

// Draw i after state s (what the i + 1-th call of next() returns).
HF_SPECTRAL_HD inline uint64_t draw(uint64_t state, uint64_t i) {
  uint64_t z = state + (i + 1) * kGamma;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Uniform in (0, 1) from a draw: never 0, so log() is finite.
HF_SPECTRAL_HD inline double uniform(uint64_t bits) { return (double(bits >> 11) + 0.5) * 0x1.0p-53; }

// A standard normal pair by Box-Muller from two uniforms.
HF_SPECTRAL_HD inline void gaussianPair(double u1, double u2, double& g1, double& g2) {
  const double r = sqrt(-2.0 * log(u1));
  const double a = 2.0 * 3.14159265358979323846 * u2;
  g1 = r * cos(a);
  g2 = r * sin(a);
}

// The amplitude of frequency f (cycles per tile): f^(-(beta+1)/2) (1-D profiles with a power
// spectrum ~ 1/f^beta), a soft high-pass at fLow and low-pass at fHigh (0 = no cut); 0 at f = 0.
HF_SPECTRAL_HD inline double amplitude(double f, double beta, double fLow, double fHigh) {
  if (!(f > 0.0)) return 0.0;
  double amp = pow(f, -0.5 * (beta + 1.0));
  if (fLow > 0.0) amp *= 1.0 - exp(-(f / fLow) * (f / fLow));
  if (fHigh > 0.0) amp *= exp(-(f / fHigh) * (f / fHigh));
  return amp;
}

struct FieldSpec {
  int m = 0;              // the periodic grid (m x m); the spectrum is m x (m / 2 + 1)
  double perTile = 1.0;   // cycles per grid -> cycles per tile (tile / m)
  double beta = 2.0, fLow = 0.0, fHigh = 0.0;
  uint64_t state = 0;     // the generator's state before the field's first draw
};

// Bin (ky, kx), kx <= m / 2: the complex coefficient (re, im).
HF_SPECTRAL_HD inline void bin(const FieldSpec& s, int ky, int kx, double& re, double& im) {
  const uint64_t half = uint64_t(s.m / 2 + 1);
  const uint64_t d = 2 * (uint64_t(ky) * half + uint64_t(kx));
  double g1, g2;
  gaussianPair(uniform(draw(s.state, d)), uniform(draw(s.state, d + 1)), g1, g2);
  const int fy = ky <= s.m / 2 ? ky : ky - s.m;
  const double f = sqrt(double(kx) * double(kx) + double(fy) * double(fy)) * s.perTile;
  const double amp = amplitude(f, s.beta, s.fLow, s.fHigh);
  re = amp * g1;
  im = amp * g2;
}

}  // namespace hfspectral
