// ocean.h - an animated ocean surface from an inverse FFT of a wind-driven wave spectrum
// (Tessendorf, "Simulating Ocean Water", 2001; issue 14). GL-free: the renderer uploads the
// fields into textures that tile the water (render/gl). This is the CPU path (FFTW, single
// precision) that every build has; the GPU path (gpu/fft.h) computes the same fields.
//
// Model: an N x N periodic patch of L x L metres. Phillips spectrum
//   P(k) = A exp(-1 / (k Lw)^2) / k^4 |k^ . w^|^2 exp(-k^2 (Lw / 1000)^2),  Lw = V^2 / g,
// waves travelling against the wind damped (x 0.07); h0(k) = (xi_r + i xi_i) sqrt(P(k) / 2) from
// a seeded Gaussian; h(k, t) = h0(k) e^{i w t} + conj(h0(-k)) e^{-i w t}, w = sqrt(g |k|). The
// fields at sample (x, y) = (i, j) L / N are inverse DFTs (sums, no 1/N^2):
//   height     h(x)  = sum h(k, t) e^{i k.x}
//   slopes     dh/dx, dh/dy = sum i k_x h, sum i k_y h
//   displacement D(x) = choppiness * sum -i (k / |k|) h     (horizontal: "choppy" crests)
// Each is real because its spectrum is Hermitian; pairs are packed into one complex inverse FFT
// (h + i dh/dx, dh/dy + i Dx, Dy), so a frame costs three N x N FFTs. The Nyquist row and column
// are zero (their conjugate partner is themselves), so the fields are exactly real.
// A is chosen so that the RMS height of the patch is amplitude * Hs / 4 with Hs = 0.21 V^2 / g,
// the significant wave height of a fully developed (Pierson-Moskowitz) sea at wind V: amplitude 1
// gives the sea state a sailor expects for that wind (10 m/s: Hs 2.1 m); it is the panel's
// "waves" slider.
#pragma once

#include <complex>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace hfr {

struct OceanParams {
  int size = 128;              // N: samples per side, a power of two (16..1024)
  double patchMetres = 256;    // L: the patch repeats every L metres
  double windSpeed = 10;       // V, metres per second (0.5..40)
  double windDirection = 45;   // degrees, direction the wind blows towards, counter-clockwise from +x
  double choppiness = 1.0;     // 0: pure heights; 1: Tessendorf's lambda = 1
  double amplitude = 1.0;      // wave height scale
  uint32_t seed = 1;
};

// One evaluated surface: N x N samples, row-major (row = y), metres.
struct OceanFrame {
  int size = 0;
  double patchMetres = 0, time = -1;
  std::vector<float> height, slopeX, slopeY, dispX, dispY;
};

// False and a one-line error (naming the parameter) when OceanSimulation would refuse `params`.
bool checkOceanParams(const OceanParams& params, std::string& error);
// Whether two parameter sets give the same spectrum.
bool sameOceanParams(const OceanParams& a, const OceanParams& b);

// The time-independent part of one OceanParams, N x N in FFT order (row = y wavenumber index):
// what OceanSimulation evaluates every frame on the CPU, and what the GPU path
// (gpu/ocean_step.h) uploads once and evaluates there.
struct OceanSpectrum {
  int size = 0;
  std::vector<std::complex<float>> h0;  // Nyquist row and column zero
  std::vector<float> omega, kx, ky;     // rad/s, rad/m
  double rms = 0;                       // see OceanSimulation::rmsHeight
};
// Throws std::invalid_argument for parameters out of range (the messages name them).
OceanSpectrum makeOceanSpectrum(const OceanParams& params);

// The spectrum of one OceanParams and its evaluation at any time (FFTW plans made once).
class OceanSimulation {
 public:
  // Throws std::invalid_argument for parameters out of range (the messages name them).
  explicit OceanSimulation(const OceanParams& params);
  ~OceanSimulation();
  OceanSimulation(const OceanSimulation&) = delete;
  OceanSimulation& operator=(const OceanSimulation&) = delete;

  const OceanParams& params() const { return params_; }
  // The fields at `seconds`; `frame` is resized as needed. Not thread-safe (one caller).
  void evaluate(double seconds, OceanFrame& frame);
  // RMS of the spectrum's heights (metres): sqrt(sum |h0|^2 + |h0(-k)|^2), time-independent.
  double rmsHeight() const;

 private:
  struct Impl;
  OceanParams params_;
  std::unique_ptr<Impl> impl_;
};

// OceanSimulation on a worker thread: the renderer asks for a time each frame and takes the
// newest finished frame without waiting (a frame late at most). Parameters may change at any
// time (the next evaluation uses them; a new spectrum is made when they differ).
class OceanWorker {
 public:
  explicit OceanWorker(const OceanParams& params);
  ~OceanWorker();
  OceanWorker(const OceanWorker&) = delete;
  OceanWorker& operator=(const OceanWorker&) = delete;

  void setParams(const OceanParams& params);
  void request(double seconds);  // the newest request wins
  // Moves the newest finished frame into `frame` when there is one newer than frame.time.
  bool take(OceanFrame& frame);
  // Waits until the last request has been evaluated (tests, screenshots).
  void wait();
  // The error of the last parameter change ("" when it was valid; the old spectrum is kept).
  std::string error() const;

 private:
  void run();
  mutable std::mutex mutex_;
  std::condition_variable wake_, done_;
  OceanParams params_, built_;
  std::unique_ptr<OceanSimulation> sim_;
  OceanFrame ready_;
  bool haveReady_ = false, stop_ = false, busy_ = false;
  double wanted_ = -1, lastDone_ = -1;
  std::string error_;
  std::thread thread_;
};

}  // namespace hfr
