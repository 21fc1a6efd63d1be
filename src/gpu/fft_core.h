// fft_core.h - one Stockham radix-4 (or radix-2) pass of a power-of-two complex FFT over lines
// held in on-chip memory (internal; __host__ __device__). cuda/fft.cu runs every pass of a line
// in shared memory with one thread block (issue 14: "a whole row in shared memory, all radix
// passes there, with barriers"); fftLineReference() below runs the same passes on the CPU, which
// is what the CI tests check against FFTW in double precision.
//
// Stockham autosort (Govindaraju et al., "High performance discrete Fourier transforms on
// graphics processors", SC 2008): pass p with sub-transform size Ns = r^p reads butterfly j's
// inputs x[j + i n / r] (i < r), twiddles them by w^(i k) with k = j mod Ns and w =
// exp(sign 2 pi i / (Ns r)), takes the r-point DFT and writes it to y[(j / Ns) Ns r + k + i Ns].
// After log_r(n) passes y is the DFT in natural order: no bit reversal. A pass reads all its
// inputs before any output is written (the kernel has a barrier between them), so one buffer
// per line is enough.
//
// Sign convention as FFTW and cuFFT: forward = exp(-2 pi i jk / n), inverse = exp(+...), both
// unnormalised.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#ifdef __CUDACC__
#define HF_FFT_HD __host__ __device__
#else
#define HF_FFT_HD
#endif

namespace hfgpu::detail {

struct Cpx {
  float x, y;
};

HF_FFT_HD inline Cpx cadd(Cpx a, Cpx b) { return Cpx{a.x + b.x, a.y + b.y}; }
HF_FFT_HD inline Cpx csub(Cpx a, Cpx b) { return Cpx{a.x - b.x, a.y - b.y}; }
HF_FFT_HD inline Cpx cmul(Cpx a, Cpx b) { return Cpx{a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x}; }
// a * (sign i): multiplies by +i (sign > 0) or -i.
HF_FFT_HD inline Cpx cmulI(Cpx a, int sign) { return sign > 0 ? Cpx{-a.y, a.x} : Cpx{a.y, -a.x}; }

// exp(sign * 2 pi i * num / den), num < den: sincospi on the device (exact argument reduction:
// the argument is a ratio, never a large float), double on the host.
HF_FFT_HD inline Cpx twiddle(int sign, uint32_t num, uint32_t den) {
#ifdef __CUDA_ARCH__
  float s, c;
  sincospif(2.0f * float(num) / float(den), &s, &c);
  return Cpx{c, sign > 0 ? s : -s};
#else
  const double a = 2.0 * 3.14159265358979323846 * double(num) / double(den);
  return Cpx{float(std::cos(a)), float(sign > 0 ? std::sin(a) : -std::sin(a))};
#endif
}

// The largest radix of the next pass: 4 while at least two factors of 2 remain, else 2.
HF_FFT_HD inline int passRadix(uint32_t n, uint32_t ns) { return (n / ns) % 4 == 0 ? 4 : 2; }

// Butterfly j of the pass (Ns, r) over a line of n points: loads its r inputs (`line` indexes
// with a stride, so columns in shared memory work too), twiddles them and takes the DFT in v.
template <typename Line>
HF_FFT_HD inline void passLoad(const Line& line, uint32_t n, uint32_t ns, int r, uint32_t j, int sign, Cpx v[4]) {
  const uint32_t m = n / uint32_t(r);
  for (int i = 0; i < r; ++i) v[i] = line(j + uint32_t(i) * m);
  const uint32_t k = j % ns;
  if (ns > 1)
    for (int i = 1; i < r; ++i) v[i] = cmul(v[i], twiddle(sign, uint32_t(i) * k, ns * uint32_t(r)));
  if (r == 2) {
    const Cpx a = v[0], b = v[1];
    v[0] = cadd(a, b);
    v[1] = csub(a, b);
    return;
  }
  // 4-point DFT: X0 = a + b + c + d, X1 = a + s i b - c - s i d, X2 = a - b + c - d, X3 = a - s i b - c + s i d
  // (inputs a = v0, b = v1, c = v2, d = v3; s = sign).
  const Cpx a0 = cadd(v[0], v[2]), a1 = csub(v[0], v[2]);
  const Cpx b0 = cadd(v[1], v[3]), b1 = cmulI(csub(v[1], v[3]), sign);
  v[0] = cadd(a0, b0);
  v[2] = csub(a0, b0);
  v[1] = cadd(a1, b1);
  v[3] = csub(a1, b1);
}
// Writes butterfly j's outputs to their Stockham positions.
template <typename Line>
HF_FFT_HD inline void passStore(const Line& line, uint32_t ns, int r, uint32_t j, const Cpx v[4]) {
  const uint32_t k = j % ns;
  const uint32_t base = (j / ns) * ns * uint32_t(r) + k;
  for (int i = 0; i < r; ++i) line(base + uint32_t(i) * ns) = v[i];
}

// A line of points `stride` apart from `base` (a row: stride 1; a column interleaved with others:
// stride = the number of lines).
struct StridedLine {
  Cpx* base;
  uint32_t stride;
  HF_FFT_HD Cpx& operator()(uint32_t i) const { return base[size_t(i) * stride]; }
};

// Every pass of one line of n = 2^m points, in place, sequentially: the kernel's reference.
inline void fftLineReference(const StridedLine& line, uint32_t n, int sign) {
  std::vector<Cpx> outputs;
  Cpx v[4];
  for (uint32_t ns = 1; ns < n;) {
    const int r = passRadix(n, ns);
    const uint32_t butterflies = n / uint32_t(r);
    outputs.resize(size_t(butterflies) * 4);
    // All inputs of the pass before any output (the kernel's barrier).
    for (uint32_t j = 0; j < butterflies; ++j) {
      passLoad(line, n, ns, r, j, sign, v);
      for (int i = 0; i < r; ++i) outputs[size_t(j) * 4 + size_t(i)] = v[i];
    }
    for (uint32_t j = 0; j < butterflies; ++j) passStore(line, ns, r, j, outputs.data() + size_t(j) * 4);
    ns *= uint32_t(r);
  }
}

}  // namespace hfgpu::detail
