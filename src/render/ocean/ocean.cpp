// ocean.cpp - see ocean.h.
#include "render/ocean/ocean.h"

#include <fftw3.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <random>
#include <stdexcept>
#include <string>

namespace hfr {

namespace {

constexpr double kGravity = 9.81;
constexpr double kPi = 3.14159265358979323846;
using C = std::complex<float>;

// FFTW's planner is not thread-safe: plans are made under one lock (execution is).
std::mutex& plannerMutex() {
  static std::mutex m;
  return m;
}

void check(const OceanParams& p) {
  if (p.size < 16 || p.size > 1024 || (p.size & (p.size - 1)) != 0)
    throw std::invalid_argument("ocean size " + std::to_string(p.size) + " is not a power of two in 16..1024");
  if (!(p.patchMetres >= 1 && p.patchMetres <= 1e5))
    throw std::invalid_argument("ocean patch must be 1..100000 metres");
  if (!(p.windSpeed >= 0.5 && p.windSpeed <= 40)) throw std::invalid_argument("wind speed must be 0.5..40 m/s");
  if (!std::isfinite(p.windDirection)) throw std::invalid_argument("wind direction must be a number of degrees");
  if (!(p.choppiness >= 0 && p.choppiness <= 4)) throw std::invalid_argument("choppiness must be 0..4");
  if (!(p.amplitude >= 0 && p.amplitude <= 10)) throw std::invalid_argument("wave amplitude must be 0..10");
}

// Wavenumber of FFT index i (natural frequency order: 0..N/2-1, then -N/2..-1).
double wavenumber(int i, int n, double patch) { return 2 * kPi * double(i < n / 2 ? i : i - n) / patch; }

}  // namespace

bool checkOceanParams(const OceanParams& params, std::string& error) {
  try {
    check(params);
  } catch (const std::invalid_argument& e) {
    error = e.what();
    return false;
  }
  error.clear();
  return true;
}

OceanSpectrum makeOceanSpectrum(const OceanParams& params) {
  check(params);
  OceanSpectrum m;
  const int n = params.size;
  m.size = n;
  const size_t count = size_t(n) * size_t(n);
  m.h0.assign(count, C(0, 0));
  m.omega.assign(count, 0);
  m.kx.assign(count, 0);
  m.ky.assign(count, 0);
  const double lw = params.windSpeed * params.windSpeed / kGravity;
  const double small = lw / 1000;
  const double dir = params.windDirection * kPi / 180;
  const double wx = std::cos(dir), wy = std::sin(dir);
  std::mt19937 rng(params.seed);
  std::normal_distribution<double> gauss(0, 1);
  double energy = 0;
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) {
      const size_t at = size_t(j) * size_t(n) + size_t(i);
      const double kx = wavenumber(i, n, params.patchMetres), ky = wavenumber(j, n, params.patchMetres);
      m.kx[at] = float(kx);
      m.ky[at] = float(ky);
      const double k = std::hypot(kx, ky);
      m.omega[at] = float(std::sqrt(kGravity * k));
      // Draw for every index (the spectrum does not depend on which entries are kept).
      const double xr = gauss(rng), xi = gauss(rng);
      if (k == 0 || i == n / 2 || j == n / 2) continue;
      const double cosine = (kx * wx + ky * wy) / k;
      double p = std::exp(-1 / (k * lw * k * lw)) / (k * k * k * k) * cosine * cosine * std::exp(-k * k * small * small);
      if (cosine < 0) p *= 0.07;
      m.h0[at] = C(float(xr * std::sqrt(p / 2)), float(xi * std::sqrt(p / 2)));
    }
  // Heights are real: h(k) + conj(h(-k)) terms; the patch's variance is sum |h0(k)|^2 + |h0(-k)|^2.
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) {
      const size_t at = size_t(j) * size_t(n) + size_t(i);
      const size_t neg = size_t((n - j) % n) * size_t(n) + size_t((n - i) % n);
      energy += double(std::norm(m.h0[at])) + double(std::norm(m.h0[neg]));
    }
  const double target = params.amplitude * 0.21 * params.windSpeed * params.windSpeed / kGravity / 4;
  const double scale = energy > 0 ? target / std::sqrt(energy) : 0;
  for (C& v : m.h0) v *= float(scale);
  m.rms = energy > 0 ? target : 0;
  return m;
}

struct OceanSimulation::Impl {
  int n = 0;
  OceanSpectrum spectrum;
  fftwf_complex *a = nullptr, *b = nullptr, *c = nullptr;
  fftwf_plan pa = nullptr, pb = nullptr, pc = nullptr;

  ~Impl() {
    std::lock_guard<std::mutex> lock(plannerMutex());
    for (fftwf_plan p : {pa, pb, pc})
      if (p) fftwf_destroy_plan(p);
    for (fftwf_complex* x : {a, b, c})
      if (x) fftwf_free(x);
  }
};

OceanSimulation::OceanSimulation(const OceanParams& params) : params_(params), impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.spectrum = makeOceanSpectrum(params);  // throws for bad parameters
  const int n = params.size;
  m.n = n;
  const size_t count = size_t(n) * size_t(n);
  std::lock_guard<std::mutex> lock(plannerMutex());
  for (fftwf_complex** x : {&m.a, &m.b, &m.c}) *x = fftwf_alloc_complex(count);
  m.pa = fftwf_plan_dft_2d(n, n, m.a, m.a, FFTW_BACKWARD, FFTW_ESTIMATE);
  m.pb = fftwf_plan_dft_2d(n, n, m.b, m.b, FFTW_BACKWARD, FFTW_ESTIMATE);
  m.pc = fftwf_plan_dft_2d(n, n, m.c, m.c, FFTW_BACKWARD, FFTW_ESTIMATE);
  if (!m.pa || !m.pb || !m.pc) throw std::runtime_error("ocean: FFTW could not plan a " + std::to_string(n) + "^2 FFT");
}

OceanSimulation::~OceanSimulation() = default;

double OceanSimulation::rmsHeight() const { return impl_->spectrum.rms; }

void OceanSimulation::evaluate(double seconds, OceanFrame& frame) {
  Impl& m = *impl_;
  const OceanSpectrum& sp = m.spectrum;
  const int n = m.n;
  const size_t count = size_t(n) * size_t(n);
  const float chop = float(params_.choppiness);
  auto* a = reinterpret_cast<C*>(m.a);
  auto* b = reinterpret_cast<C*>(m.b);
  auto* c = reinterpret_cast<C*>(m.c);
  const C i1(0, 1);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) {
      const size_t at = size_t(j) * size_t(n) + size_t(i);
      const size_t neg = size_t((n - j) % n) * size_t(n) + size_t((n - i) % n);
      // w t in double, reduced before the float sine (t grows without bound).
      const double phase = std::fmod(double(sp.omega[at]) * seconds, 2 * kPi);
      const C e(float(std::cos(phase)), float(std::sin(phase)));
      const C h = sp.h0[at] * e + std::conj(sp.h0[neg]) * std::conj(e);
      const float kx = sp.kx[at], ky = sp.ky[at];
      const float k = std::sqrt(kx * kx + ky * ky);
      const C sx = i1 * kx * h, sy = i1 * ky * h;
      const C dx = k > 0 ? -i1 * (kx / k) * h * chop : C(0, 0);
      const C dy = k > 0 ? -i1 * (ky / k) * h * chop : C(0, 0);
      a[at] = h + i1 * sx;
      b[at] = sy + i1 * dx;
      c[at] = dy;
    }
  fftwf_execute(m.pa);
  fftwf_execute(m.pb);
  fftwf_execute(m.pc);
  frame.size = n;
  frame.patchMetres = params_.patchMetres;
  frame.time = seconds;
  for (std::vector<float>* v : {&frame.height, &frame.slopeX, &frame.slopeY, &frame.dispX, &frame.dispY})
    v->resize(count);
  for (size_t k = 0; k < count; ++k) {
    frame.height[k] = a[k].real();
    frame.slopeX[k] = a[k].imag();
    frame.slopeY[k] = b[k].real();
    frame.dispX[k] = b[k].imag();
    frame.dispY[k] = c[k].real();
  }
}

// ---------------------------------------------------------------- OceanWorker

OceanWorker::OceanWorker(const OceanParams& params) : params_(params), built_(params) {
  sim_ = std::make_unique<OceanSimulation>(params);  // throws for bad parameters
  thread_ = std::thread([this] { run(); });
}

OceanWorker::~OceanWorker() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void OceanWorker::setParams(const OceanParams& params) {
  std::lock_guard<std::mutex> lock(mutex_);
  params_ = params;
}

void OceanWorker::request(double seconds) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    wanted_ = seconds;
  }
  wake_.notify_all();
}

bool OceanWorker::take(OceanFrame& frame) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!haveReady_) return false;
  std::swap(frame, ready_);
  haveReady_ = false;
  return true;
}

void OceanWorker::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return stop_ || (!busy_ && (wanted_ < 0 || lastDone_ == wanted_)); });
}

std::string OceanWorker::error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

bool sameOceanParams(const OceanParams& a, const OceanParams& b) {
  return a.size == b.size && a.patchMetres == b.patchMetres && a.windSpeed == b.windSpeed &&
         a.windDirection == b.windDirection && a.choppiness == b.choppiness && a.amplitude == b.amplitude &&
         a.seed == b.seed;
}

void OceanWorker::run() {
  OceanFrame frame;
  for (;;) {
    double t;
    OceanParams p;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || (wanted_ >= 0 && wanted_ != lastDone_); });
      if (stop_) return;
      t = wanted_;
      p = params_;
      busy_ = true;
    }
    const bool rebuild = !sameOceanParams(p, built_);
    std::string why;
    if (rebuild) {
      try {
        sim_ = std::make_unique<OceanSimulation>(p);
      } catch (const std::exception& e) {
        why = e.what();  // keep the previous spectrum
      }
      built_ = p;  // a bad set is not retried until the parameters change again
    }
    sim_->evaluate(t, frame);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (rebuild) error_ = why;
      std::swap(ready_, frame);
      haveReady_ = true;
      lastDone_ = t;
      busy_ = false;
    }
    done_.notify_all();
  }
}

}  // namespace hfr
