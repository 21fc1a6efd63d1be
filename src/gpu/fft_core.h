// fft_core.h - the arithmetic of the shared-memory FFT (internal; __host__ __device__): the pass
// plan of a power-of-two line, one thread's share of a Stockham pass with its DFT held in
// registers, and the twiddle table. cuda/fft.cu runs every pass of a line inside one thread
// block (issue 14: "a whole row in shared memory, all radix passes there, with barriers");
// fftLineReference() below runs the very same per-thread code on the CPU for every thread in
// turn, which is what the CI tests check against FFTW in double precision.
//
// Stockham autosort (Govindaraju et al., "High performance discrete Fourier transforms on
// graphics processors", SC 2008): pass p with sub-transform size Ns reads butterfly j's inputs
// x[j + i n / r] (i < r), twiddles them by w^(i k) with k = j mod Ns and w = exp(sign 2 pi i /
// (Ns r)), takes the r-point DFT and writes it to y[(j / Ns) Ns r + k + i Ns]. After the passes y
// is the DFT in natural order: no bit reversal.
//
// How the work is split (the plan): a line of n points has T = n / R threads, each holding R
// points in registers (R = 16; 8 from 128 to 512 points; n below 16 points: defaultPointsPerThread
// below). The first pass has the small radix r0 = n /
// R^(passes - 1) (each thread does R / r0 butterflies of it, with no twiddles since Ns = 1); every
// later pass has radix R, one butterfly per thread, its R-point DFT unrolled in registers with
// constant twiddles. Thread t holds the points t + T m (m < R) of each pass's input, so the first
// pass reads the line from global memory coalesced, and the last pass (Ns = n / R) writes its
// outputs to t + T m too: straight to global memory, coalesced. Between passes the points go
// through shared memory once (a store, a barrier, a load), with a padding of one point in 16 (rows;
// columns: FftPlan::kColumnShift) so that the strided stores of the first pass meet no bank
// conflicts.
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
#ifdef __CUDA_ARCH__  // the device pass only: host compilers warn about the pragma
#define HF_FFT_UNROLL _Pragma("unroll")
#else
#define HF_FFT_UNROLL
#endif

namespace hfgpu::detail {

// A complex point in float (Cpx, the FFT's) or double (CpxD, hfterrain's fields), aligned to its
// size like float2 / double2, so that a point is one 8- or 16-byte load or store (global and
// shared): with 4-byte alignment every float access split into two 32-bit ones, each touching
// twice the sectors.
template <class T>
struct alignas(2 * sizeof(T)) CpxT {
  T x, y;
};
using Cpx = CpxT<float>;
using CpxD = CpxT<double>;

template <class T>
HF_FFT_HD inline CpxT<T> cadd(CpxT<T> a, CpxT<T> b) { return CpxT<T>{a.x + b.x, a.y + b.y}; }
template <class T>
HF_FFT_HD inline CpxT<T> csub(CpxT<T> a, CpxT<T> b) { return CpxT<T>{a.x - b.x, a.y - b.y}; }
template <class T>
HF_FFT_HD inline CpxT<T> cmul(CpxT<T> a, CpxT<T> b) {
  return CpxT<T>{a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x};
}
// a * (sign i): multiplies by +i (sign > 0) or -i.
template <class T>
HF_FFT_HD inline CpxT<T> cmulI(CpxT<T> a, int sign) {
  return sign > 0 ? CpxT<T>{-a.y, a.x} : CpxT<T>{a.y, -a.x};
}

// ---- twiddles ----

// Every pass with twiddles has radix kFftRadix and a sub-transform size ns, a power of two from 2
// to kFftMaxNs; its twiddle for input i (1 <= i < kFftRadix) of butterfly k (k < ns) is
// exp(sign 2 pi i i k / (ns kFftRadix)). They are tabulated per ns, i-major, so that a warp's
// threads (consecutive k) read consecutive entries, computed in double and rounded once: as
// accurate as a float twiddle can be, and one cached load instead of a sincos. The table does not
// depend on the line length: every plan's passes share it.
constexpr int kFftRadixLog2 = 4;
constexpr int kFftRadix = 1 << kFftRadixLog2;
constexpr uint32_t kFftMaxNs = 16384 / kFftRadix;
constexpr uint32_t kFftTwiddles = uint32_t(kFftRadix - 1) * (2 * kFftMaxNs - 2);

// Blocks of (kFftRadix - 1) ns entries for ns = 2, 4, ... back to back: ns's block starts at
// (kFftRadix - 1) (2 + 4 + ... + ns / 2) = (kFftRadix - 1) (ns - 2).
HF_FFT_HD constexpr uint32_t twiddleIndex(uint32_t ns, int i, uint32_t k) {
  return uint32_t(kFftRadix - 1) * (ns - 2) + uint32_t(i - 1) * ns + k;
}

template <class T = float>
inline const std::vector<CpxT<T>>& fftTwiddleTable() {
  static const std::vector<CpxT<T>> table = [] {
    std::vector<CpxT<T>> t(kFftTwiddles);
    for (uint32_t ns = 2; ns <= kFftMaxNs; ns *= 2)
      for (int i = 1; i < kFftRadix; ++i)
        for (uint32_t k = 0; k < ns; ++k) {
          const double a = 2.0 * 3.14159265358979323846 * double(uint32_t(i) * k) / double(ns * kFftRadix);
          t[twiddleIndex(ns, i, k)] = CpxT<T>{T(std::cos(a)), T(std::sin(a))};
        }
    return t;
  }();
  return table;
}

// cos(2 pi m / 32) and the roots exp(S 2 pi i m / 32) for the DFTs in registers: m is known at
// compile time once the loops are unrolled, so the switch folds into a constant (a table would be
// put in local memory).
template <class T = float>
HF_FFT_HD inline T cos32(int m) {
  switch (m & 31) {
    case 0:
      return T(1.00000000000000000000);
    case 1:
      return T(0.98078528040323043058);
    case 2:
      return T(0.92387953251128673848);
    case 3:
      return T(0.83146961230254523567);
    case 4:
      return T(0.70710678118654757274);
    case 5:
      return T(0.55557023301960228867);
    case 6:
      return T(0.38268343236508983729);
    case 7:
      return T(0.19509032201612833135);
    case 8:
      return T(0.0);
    case 9:
      return T(-0.19509032201612819257);
    case 10:
      return T(-0.38268343236508972627);
    case 11:
      return T(-0.55557023301960195560);
    case 12:
      return T(-0.70710678118654746172);
    case 13:
      return T(-0.83146961230254534669);
    case 14:
      return T(-0.92387953251128673848);
    case 15:
      return T(-0.98078528040323043058);
    case 16:
      return T(-1.00000000000000000000);
    case 17:
      return T(-0.98078528040323043058);
    case 18:
      return T(-0.92387953251128684951);
    case 19:
      return T(-0.83146961230254545772);
    case 20:
      return T(-0.70710678118654768376);
    case 21:
      return T(-0.55557023301960217765);
    case 22:
      return T(-0.38268343236509033689);
    case 23:
      return T(-0.19509032201612866442);
    case 24:
      return T(0.0);
    case 25:
      return T(0.19509032201612830359);
    case 26:
      return T(0.38268343236509000382);
    case 27:
      return T(0.55557023301960184458);
    case 28:
      return T(0.70710678118654735069);
    case 29:
      return T(0.83146961230254523567);
    case 30:
      return T(0.92387953251128651644);
    case 31:
      return T(0.98078528040323031956);
    default:
      return T(0.0);
  }
}
template <int S, class T = float>
HF_FFT_HD inline CpxT<T> root32(int m) {
  const T s = cos32<T>(m + 24);  // sin(a) = cos(a - pi / 2)
  return CpxT<T>{cos32<T>(m), S > 0 ? s : -s};
}

// a * exp(S 2 pi i m / 32), with the multiplications by 1, +-i and -1 done as moves.
template <int S, class T>
HF_FFT_HD inline CpxT<T> mulRoot32(CpxT<T> a, int m) {
  switch (m & 31) {
    case 0:
      return a;
    case 8:
      return cmulI(a, S);
    case 16:
      return CpxT<T>{-a.x, -a.y};
    case 24:
      return cmulI(a, -S);
    default:
      return cmul(a, root32<S, T>(m));
  }
}

// The R-point DFT of v in place (R a power of two <= 32): radix-2 decimation in frequency, then
// the bit-reversed outputs put in order (register renaming once unrolled).
template <int R, int S, class T>
HF_FFT_HD inline void dftInRegisters(CpxT<T> (&v)[R]) {
  static_assert(R >= 1 && R <= 32 && (R & (R - 1)) == 0, "radix: a power of two up to 32");
  if constexpr (R > 1) {
    constexpr int kStages = R == 2 ? 1 : R == 4 ? 2 : R == 8 ? 3 : R == 16 ? 4 : 5;
    HF_FFT_UNROLL
    for (int s = 0; s < kStages; ++s) {
      const int h = R >> (s + 1);  // half the sub-transform
      HF_FFT_UNROLL
      for (int b = 0; b < R; b += 2 * h) {
        HF_FFT_UNROLL
        for (int k = 0; k < h; ++k) {
          const CpxT<T> a = v[b + k], c = v[b + k + h];
          v[b + k] = cadd(a, c);
          v[b + k + h] = mulRoot32<S>(csub(a, c), k * (16 / h));  // exp(S 2 pi i k / (2 h))
        }
      }
    }
    CpxT<T> ordered[R];
    HF_FFT_UNROLL
    for (int i = 0; i < R; ++i) {
      int rev = 0;
      for (int bit = 0; bit < kStages; ++bit) rev |= ((i >> bit) & 1) << (kStages - 1 - bit);
      ordered[i] = v[rev];
    }
    HF_FFT_UNROLL
    for (int i = 0; i < R; ++i) v[i] = ordered[i];
  }
}

// ---- the plan of a line ----

constexpr int log2Exact(uint32_t n) {
  int l = 0;
  while ((1u << l) < n) ++l;
  return l;
}

// The plan of a line of N points with R points per thread (R a power of two <= kFftRadix; by
// default kFftRadix, or N for shorter lines). Passes with twiddles have radix R and read the
// radix-kFftRadix table at every (kFftRadix / R)-th input, so the table covers every plan whose
// last pass has ns = N / R <= kFftMaxNs.
// Points per thread by default: the whole line below 16 points; 8 from 128 to 512 points (twice
// the threads of 16, so twice the loads in flight and half the registers, with as many passes
// apart from 256: measured on the H200 against cuFFT, hfbench fft, session 17); otherwise 16.
constexpr int defaultPointsPerThread(uint32_t n) {
  return n < uint32_t(kFftRadix) ? int(n) : (n >= 128 && n <= 512) ? 8 : kFftRadix;
}

template <uint32_t N, int kPointsPerThread = defaultPointsPerThread(N)>
struct FftPlan {
  static_assert(N >= 2 && N <= 16384 && (N & (N - 1)) == 0, "n: a power of two in 2..16384");
  static constexpr int R = kPointsPerThread;  // points per thread, the radix of every pass but the first
  static_assert(R >= 2 && R <= kFftRadix && (R & (R - 1)) == 0 && uint32_t(R) <= N, "points per thread");
  static constexpr int kRadixLog2 = log2Exact(uint32_t(R));
  static constexpr uint32_t T = N / uint32_t(R);  // threads per line
  static_assert(T <= kFftMaxNs, "the twiddle table ends at ns = kFftMaxNs");
  static constexpr int kPasses = (log2Exact(N) + kRadixLog2 - 1) / kRadixLog2;
  static constexpr int r0 = int(N >> (kRadixLog2 * (kPasses - 1)));  // the first pass's radix
  static constexpr uint32_t kPadded = N + N / 16;                    // a line's points in shared memory
  static_assert(r0 >= 2 && r0 <= R, "plan");
  // Columns of a 2D array are kept interleaved in shared memory (point e of the block's L columns
  // side by side), so one row of them covers 8 L bytes of the banks' 128: the first pass's stores
  // at stride r0 would all meet in the same banks. One pad point every max(r0, 4) points makes the
  // stride odd (r0 + 1) and keeps consecutive points consecutive (16 from 8192 points on, where a
  // block holds one or two columns and the shared memory is short).
  static constexpr int kColumnShift = N >= 8192 ? 4 : log2Exact(uint32_t(r0 < 4 ? 4 : r0));
  static constexpr uint32_t kColumnPadded = N + (N >> kColumnShift);
};

// Where point e of a line sits in shared memory: one pad point every 16 (see the file comment).
HF_FFT_HD inline uint32_t padded(uint32_t e) { return e + (e >> 4); }

// Thread t's share of pass (ns, r) of a line of N = T R points: v[q + i R / r] holds input i of
// butterfly j = t + q T on entry, its output i on return; passDestination() says where output
// slot m goes. Only the first pass (ns = 1) may have r < R, so twiddles always have r = R.
// `twiddles` is fftTwiddleTable() (its device copy in a kernel).
template <int R, int r, int S, class F>
HF_FFT_HD inline void passInRegisters(CpxT<F> (&v)[R], uint32_t t, uint32_t T, uint32_t ns,
                                      const CpxT<F>* __restrict__ twiddles) {
  constexpr int kGroups = R / r;
  HF_FFT_UNROLL
  for (int q = 0; q < kGroups; ++q) {
    CpxT<F> u[r];
    HF_FFT_UNROLL
    for (int i = 0; i < r; ++i) u[i] = v[q + i * kGroups];
    if constexpr (r == R) {
      if (ns > 1) {
        const uint32_t k = (t + uint32_t(q) * T) & (ns - 1);
        HF_FFT_UNROLL
        for (int i = 1; i < r; ++i) {
          const uint32_t index = twiddleIndex(ns, i * (kFftRadix / R), k);
#ifdef __CUDA_ARCH__
          CpxT<F> w;
          if constexpr (sizeof(F) == 4) {
            const float2 f = __ldg(reinterpret_cast<const float2*>(twiddles) + index);  // read-only cache
            w = CpxT<F>{f.x, f.y};
          } else {
            const double2 f = __ldg(reinterpret_cast<const double2*>(twiddles) + index);
            w = CpxT<F>{f.x, f.y};
          }
#else
          CpxT<F> w = twiddles[index];
#endif
          if (S < 0) w.y = -w.y;
          u[i] = cmul(u[i], w);
        }
      }
    }
    dftInRegisters<r, S, F>(u);
    HF_FFT_UNROLL
    for (int i = 0; i < r; ++i) v[q + i * kGroups] = u[i];
  }
}

// The index in the pass's output of slot m of thread t (see passInRegisters).
template <int R, int r>
HF_FFT_HD inline uint32_t passDestination(uint32_t t, uint32_t T, uint32_t ns, int m) {
  constexpr int kGroups = R / r;
  const uint32_t j = t + uint32_t(m % kGroups) * T, i = uint32_t(m / kGroups);
  return (j & ~(ns - 1)) * uint32_t(r) + (j & (ns - 1)) + i * ns;
}

// ---- real transforms ----

// A real line of n = 2N points is transformed through one N-point complex FFT of
// z[j] = x[2j] + i x[2j+1] (the real array read as complex), with one extra step that separates
// the spectra of the even and odd samples (Numerical Recipes 12.3; FFTW's and cuFFT's layout:
// n / 2 + 1 complex outputs, the rest being their conjugates).

// exp(i pi k / N) for every complex line length N = 1, 2, 4, .., 8192 of a real line and k < N, at
// index N + k (computed in double, rounded once): one coalesced cached load per point on the device
// instead of a sincospi (the real rows' largest extra cost, session 17).
constexpr uint32_t kFftHalfTwiddles = 16384;

inline const std::vector<Cpx>& fftHalfTwiddleTable() {
  static const std::vector<Cpx> table = [] {
    std::vector<Cpx> t(kFftHalfTwiddles, Cpx{1.0f, 0.0f});
    for (uint32_t n = 1; n < kFftHalfTwiddles; n *= 2)
      for (uint32_t k = 0; k < n; ++k) {
        const double a = 3.14159265358979323846 * double(k) / double(n);
        t[n + k] = Cpx{float(std::cos(a)), float(std::sin(a))};
      }
    return t;
  }();
  return table;
}

// exp(sign pi i k / N) = exp(sign 2 pi i k / n), k < N <= 8192: on the device from `table` (the
// device copy of fftHalfTwiddleTable()), on the host the same double-precision value computed.
HF_FFT_HD inline Cpx halfTwiddle(int sign, uint32_t k, uint32_t N, const Cpx* __restrict__ table) {
#ifdef __CUDA_ARCH__
  const float2 f = __ldg(reinterpret_cast<const float2*>(table) + N + k);
  return Cpx{f.x, sign > 0 ? f.y : -f.y};
#else
  (void)table;
  const double a = 3.14159265358979323846 * double(k) / double(N);
  return Cpx{float(std::cos(a)), float(sign > 0 ? std::sin(a) : -std::sin(a))};
#endif
}

// Forward (real to complex): X[k], k < N, from Z = FFT(z) at k and (N - k) mod N; X[N] is
// (Re Z[0] - Im Z[0], 0).
HF_FFT_HD inline Cpx realForwardOutput(Cpx zk, Cpx zn, uint32_t k, uint32_t N, const Cpx* halfTwiddles) {
  const Cpx a = Cpx{zk.x + zn.x, zk.y - zn.y}, b = Cpx{zk.x - zn.x, zk.y + zn.y};  // zk +- conj(zn)
  const Cpx wb = cmul(halfTwiddle(-1, k, N, halfTwiddles), b);
  return Cpx{0.5f * (a.x + wb.y), 0.5f * (a.y - wb.x)};  // (a - i w b) / 2
}

// Inverse (complex to real, unnormalised like FFTW's c2r): the input of the N-point inverse FFT
// at k < N from X[k] and X[N - k]; its output z[j] is (x[2j], x[2j+1]). The imaginary parts of
// X[0] and X[N] are ignored, as FFTW does.
HF_FFT_HD inline Cpx realInverseInput(Cpx xk, Cpx xn, uint32_t k, uint32_t N, const Cpx* halfTwiddles) {
  if (k == 0) xk.y = xn.y = 0.0f;
  const Cpx a = Cpx{xk.x + xn.x, xk.y - xn.y}, b = Cpx{xk.x - xn.x, xk.y + xn.y};  // xk +- conj(xn)
  const Cpx wb = cmul(halfTwiddle(1, k, N, halfTwiddles), b);
  return Cpx{a.x - wb.y, a.y + wb.x};  // a + i w b
}

// ---- the CPU reference ----

// A line of points `stride` apart from `base` (a row: stride 1; a column of a row-major array:
// stride = the row length).
struct StridedLine {
  Cpx* base;
  uint32_t stride;
  HF_FFT_HD Cpx& operator()(uint32_t i) const { return base[size_t(i) * stride]; }
};

template <uint32_t N, int S>
void fftLineReferenceN(const StridedLine& line) {
  using P = FftPlan<N>;
  constexpr int R = P::R;
  const Cpx* twiddles = fftTwiddleTable().data();
  std::vector<Cpx> in(N), out(N);
  for (uint32_t e = 0; e < N; ++e) in[e] = line(e);
  uint32_t ns = 1;
  for (int p = 0; p < P::kPasses; ++p) {
    // Every thread's loads before any thread's stores (the kernel's barrier).
    for (uint32_t t = 0; t < P::T; ++t) {
      Cpx v[R];
      for (int m = 0; m < R; ++m) v[m] = in[t + P::T * uint32_t(m)];
      if (p == 0) {
        passInRegisters<R, P::r0, S>(v, t, P::T, ns, twiddles);
        for (int m = 0; m < R; ++m) out[passDestination<R, P::r0>(t, P::T, ns, m)] = v[m];
      } else {
        passInRegisters<R, R, S>(v, t, P::T, ns, twiddles);
        for (int m = 0; m < R; ++m) out[passDestination<R, R>(t, P::T, ns, m)] = v[m];
      }
    }
    in.swap(out);
    const int r = p == 0 ? P::r0 : R;
    ns *= uint32_t(r);
  }
  for (uint32_t e = 0; e < N; ++e) line(e) = in[e];
}

template <int S>
inline void fftLineReferenceSigned(const StridedLine& line, uint32_t n) {
  switch (n) {
    case 2: return fftLineReferenceN<2, S>(line);
    case 4: return fftLineReferenceN<4, S>(line);
    case 8: return fftLineReferenceN<8, S>(line);
    case 16: return fftLineReferenceN<16, S>(line);
    case 32: return fftLineReferenceN<32, S>(line);
    case 64: return fftLineReferenceN<64, S>(line);
    case 128: return fftLineReferenceN<128, S>(line);
    case 256: return fftLineReferenceN<256, S>(line);
    case 512: return fftLineReferenceN<512, S>(line);
    case 1024: return fftLineReferenceN<1024, S>(line);
    case 2048: return fftLineReferenceN<2048, S>(line);
    case 4096: return fftLineReferenceN<4096, S>(line);
    case 8192: return fftLineReferenceN<8192, S>(line);
    case 16384: return fftLineReferenceN<16384, S>(line);
    default: return;
  }
}

// Every pass of one line of n = 2^m points (2..16384), in place, with the kernel's per-thread
// code run for each thread in turn: the kernel's reference.
inline void fftLineReference(const StridedLine& line, uint32_t n, int sign) {
  if (sign > 0)
    fftLineReferenceSigned<1>(line, n);
  else
    fftLineReferenceSigned<-1>(line, n);
}

}  // namespace hfgpu::detail

namespace hfgpu::detail {

// n real points (n = 2N, 4..16384) -> n / 2 + 1 complex, forward, as the kernel computes it.
inline void fftRealForwardReference(const float* x, Cpx* out, uint32_t n) {
  const uint32_t N = n / 2;
  std::vector<Cpx> z(N);
  for (uint32_t j = 0; j < N; ++j) z[j] = Cpx{x[2 * j], x[2 * j + 1]};
  fftLineReference(StridedLine{z.data(), 1}, N, -1);
  for (uint32_t k = 0; k < N; ++k) out[k] = realForwardOutput(z[k], z[(N - k) & (N - 1)], k, N, nullptr);
  out[N] = Cpx{z[0].x - z[0].y, 0.0f};
}

// n / 2 + 1 complex -> n real points, inverse, unnormalised, as the kernel computes it.
inline void fftRealInverseReference(const Cpx* in, float* x, uint32_t n) {
  const uint32_t N = n / 2;
  std::vector<Cpx> z(N);
  for (uint32_t k = 0; k < N; ++k) z[k] = realInverseInput(in[k], in[N - k], k, N, nullptr);
  fftLineReference(StridedLine{z.data(), 1}, N, 1);
  for (uint32_t j = 0; j < N; ++j) {
    x[2 * j] = z[j].x;
    x[2 * j + 1] = z[j].y;
  }
}

}  // namespace hfgpu::detail
