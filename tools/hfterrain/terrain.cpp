// terrain.cpp - spectral synthesis of the sample terrain. See terrain.h for the contract.
#include "terrain.h"

#include <fftw3.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cstddef>
#include <limits>
#include <memory>
#include <queue>
#include <utility>

namespace hfterrain {
namespace {

constexpr double kPi = 3.14159265358979323846;

// splitmix64: tiny, fast, and the same sequence on every platform (std::normal_distribution
// is not specified bit-for-bit, so it would make the sample terrain differ between compilers).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in (0, 1): never 0, so log() below is finite.
  double uniform() { return (static_cast<double>(next() >> 11) + 0.5) * 0x1.0p-53; }
  // Standard normal pair by Box-Muller.
  std::pair<double, double> gaussianPair() {
    const double r = std::sqrt(-2.0 * std::log(uniform()));
    const double a = 2.0 * kPi * uniform();
    return {r * std::cos(a), r * std::sin(a)};
  }

 private:
  uint64_t state_;
};

struct FftwFree {
  void operator()(void* p) const { fftw_free(p); }
};

// FFT size: the smallest 2^k or 3 * 2^k that is at least 1.25 x the tile, so the periodic
// field never shows its wrap-around inside the tile and FFTW stays on fast radices.
int fftSize(int n) {
  const int need = n + n / 4;
  int m = 16;
  while (true) {
    if (m >= need) return m;
    if (m / 2 * 3 >= need) return m / 2 * 3;
    m *= 2;
  }
}

// Gaussian random fields with a power-law spectrum, all sharing one FFTW plan.
class SpectralSynth {
 public:
  SpectralSynth(int tile, int m) : tile_(tile), m_(m), half_(m / 2 + 1) {
    spectrum_.reset(static_cast<fftw_complex*>(
        fftw_malloc(sizeof(fftw_complex) * static_cast<size_t>(m_) * static_cast<size_t>(half_))));
    field_.reset(static_cast<double*>(
        fftw_malloc(sizeof(double) * static_cast<size_t>(m_) * static_cast<size_t>(m_))));
    if (spectrum_ && field_) {
      plan_ = fftw_plan_dft_c2r_2d(m_, m_, spectrum_.get(), field_.get(), FFTW_ESTIMATE);
    }
  }
  ~SpectralSynth() {
    if (plan_) fftw_destroy_plan(plan_);
  }
  SpectralSynth(const SpectralSynth&) = delete;
  SpectralSynth& operator=(const SpectralSynth&) = delete;

  bool ok() const { return plan_ != nullptr; }

  // A tile x tile field, zero mean and unit standard deviation, whose 1-D profiles have a
  // power spectrum ~ 1/f^beta (so the 2-D amplitude spectrum is f^(-(beta+1)/2)) between a soft high-pass at fLow and a soft low-pass at fHigh (both in cycles
  // per tile; fLow = 0 and fHigh = 0 mean "no cut"). Gaussian real and imaginary parts give
  // Rayleigh-distributed amplitudes with uniformly random phases.
  std::vector<double> field(Rng& rng, double beta, double fLow, double fHigh) {
    const double per_tile = static_cast<double>(tile_) / m_;  // cycles per M -> per tile
    for (int ky = 0; ky < m_; ++ky) {
      const int fy = ky <= m_ / 2 ? ky : ky - m_;
      for (int kx = 0; kx < half_; ++kx) {
        const auto g = rng.gaussianPair();  // drawn for every bin: the sequence stays fixed
        const double f = std::hypot(static_cast<double>(kx), static_cast<double>(fy)) * per_tile;
        double amp = 0.0;
        if (f > 0.0) {
          amp = std::pow(f, -0.5 * (beta + 1.0));
          if (fLow > 0.0) amp *= 1.0 - std::exp(-(f / fLow) * (f / fLow));
          if (fHigh > 0.0) amp *= std::exp(-(f / fHigh) * (f / fHigh));
        }
        fftw_complex& c = spectrum_.get()[static_cast<size_t>(ky) * half_ + kx];
        c[0] = amp * g.first;
        c[1] = amp * g.second;
      }
    }
    fftw_execute(plan_);
    std::vector<double> out(static_cast<size_t>(tile_) * tile_);
    double sum = 0.0, sum2 = 0.0;
    for (int y = 0; y < tile_; ++y) {
      const double* row = field_.get() + static_cast<size_t>(y) * m_;
      for (int x = 0; x < tile_; ++x) {
        const double v = row[x];
        out[static_cast<size_t>(y) * tile_ + x] = v;
        sum += v;
        sum2 += v * v;
      }
    }
    const double count = static_cast<double>(out.size());
    const double mean = sum / count;
    const double sd = std::sqrt(std::max(sum2 / count - mean * mean, 1e-300));
    for (double& v : out) v = (v - mean) / sd;
    return out;
  }

 private:
  int tile_, m_, half_;
  std::unique_ptr<fftw_complex, FftwFree> spectrum_;
  std::unique_ptr<double, FftwFree> field_;
  fftw_plan plan_ = nullptr;
};

double smoothstep(double e0, double e1, double x) {
  const double t = std::clamp((x - e0) / (e1 - e0), 0.0, 1.0);
  return t * t * (3.0 - 2.0 * t);
}

double quantile(const std::vector<double>& v, double q) {
  std::vector<double> tmp(v);
  const size_t k = std::min(tmp.size() - 1, static_cast<size_t>(q * static_cast<double>(tmp.size())));
  std::nth_element(tmp.begin(), tmp.begin() + static_cast<std::ptrdiff_t>(k), tmp.end());
  return tmp[k];
}

// 8-neighbourhood offsets and their lengths in cells.
constexpr int kDx[8] = {1, -1, 0, 0, 1, 1, -1, -1};
constexpr int kDy[8] = {0, 0, 1, -1, 1, -1, 1, -1};
constexpr double kDist[8] = {1, 1, 1, 1, 1.41421356237, 1.41421356237, 1.41421356237,
                             1.41421356237};

// Sea = cells below `level` that are 4-connected to the tile border (the open ocean).
// Cells below `level` elsewhere are land depressions; the drainage step fills them.
std::vector<uint8_t> seaMask(const std::vector<double>& h, int n, double level) {
  std::vector<uint8_t> sea(h.size(), 0);
  std::vector<int> stack;
  auto visit = [&](int x, int y) {
    const size_t i = static_cast<size_t>(y) * n + x;
    if (!sea[i] && h[i] < level) {
      sea[i] = 1;
      stack.push_back(static_cast<int>(i));
    }
  };
  for (int k = 0; k < n; ++k) {
    visit(k, 0);
    visit(k, n - 1);
    visit(0, k);
    visit(n - 1, k);
  }
  while (!stack.empty()) {
    const int i = stack.back();
    stack.pop_back();
    const int x = i % n, y = i / n;
    if (x > 0) visit(x - 1, y);
    if (x < n - 1) visit(x + 1, y);
    if (y > 0) visit(x, y - 1);
    if (y < n - 1) visit(x, y + 1);
  }
  return sea;
}

// Thermal erosion: wherever a cell is higher than a neighbour by more than the talus
// difference, a share of the excess slides down. Removes the spiky single-pixel peaks that pure
// noise has and that real rock cannot hold. Sea cells are fixed.
void thermalErosion(std::vector<double>& h, const std::vector<uint8_t>& sea, int n, double talus,
                    int iterations) {
  std::vector<double> delta(h.size());
  for (int it = 0; it < iterations; ++it) {
    std::fill(delta.begin(), delta.end(), 0.0);
    for (int y = 1; y < n - 1; ++y) {
      for (int x = 1; x < n - 1; ++x) {
        const size_t i = static_cast<size_t>(y) * n + x;
        if (sea[i]) continue;
        for (int k = 0; k < 4; ++k) {
          const size_t j = static_cast<size_t>(y + kDy[k]) * n + (x + kDx[k]);
          const double d = h[i] - h[j];
          if (d > talus) {
            const double moved = 0.12 * (d - talus);
            delta[i] -= moved;
            if (!sea[j]) delta[j] += moved;  // what slides into the sea is gone
          }
        }
      }
    }
    for (size_t i = 0; i < h.size(); ++i) h[i] += delta[i];
  }
}

// Drainage: priority-flood (Barnes et al. 2014) from the sea and the tile border gives every
// land cell a receiver (the neighbour it was reached from) and an order in which each cell comes
// after its receiver. Depressions are filled to their spill height on the way, so every cell
// drains to the sea or off the tile.
struct Drainage {
  std::vector<int> order;     // cells in flood order (receivers first)
  std::vector<int> receiver;  // -1 for outlets
  std::vector<uint8_t> dir;   // index into kDx/kDy of the receiver
};

// With fill = false, h is left as it is: the flood runs on a filled copy, so depressions keep
// their floors and the stream-power step below fills them from upstream instead.
void drain(std::vector<double>& h, const std::vector<uint8_t>& sea, int n, Drainage& d,
           bool fill) {
  const size_t count = h.size();
  std::vector<double> copy;
  if (!fill) copy = h;
  std::vector<double>& w = fill ? h : copy;
  d.order.clear();
  d.order.reserve(count);
  d.receiver.assign(count, -1);
  d.dir.assign(count, 0);
  std::vector<uint8_t> done(count, 0);
  using Item = std::pair<double, int>;
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> open;
  for (size_t i = 0; i < count; ++i) {
    const int x = static_cast<int>(i % n), y = static_cast<int>(i / n);
    const bool border = x == 0 || y == 0 || x == n - 1 || y == n - 1;
    if (sea[i] || border) {
      done[i] = 1;
      open.emplace(w[i], static_cast<int>(i));
    }
  }
  while (!open.empty()) {
    const int i = open.top().second;
    open.pop();
    d.order.push_back(i);
    const int x = i % n, y = i / n;
    for (int k = 0; k < 8; ++k) {
      const int nx = x + kDx[k], ny = y + kDy[k];
      if (nx < 0 || ny < 0 || nx >= n || ny >= n) continue;
      const size_t j = static_cast<size_t>(ny) * n + nx;
      if (done[j]) continue;
      done[j] = 1;
      // Fill pits to just above their spill point so that water still flows.
      w[j] = std::max(w[j], w[static_cast<size_t>(i)] + 1e-3);
      d.receiver[j] = i;
      d.dir[j] = static_cast<uint8_t>(k ^ 1);  // direction from j back to i
      open.emplace(w[j], static_cast<int>(j));
    }
  }
}

// Stream-power incision, dh/dt = -K A^m S, with the implicit O(n) scheme of Braun & Willett
// (2013): visiting cells after their receivers, h_i = (h_i + F h_r) / (1 + F),
// F = K dt A^m / distance. This carves the branching valley networks that make a height field
// read as real terrain rather than noise.
void streamPower(std::vector<double>& h, const Drainage& d, double cell_m, double k_dt,
                 double m_exp) {
  std::vector<double> area(h.size(), 1.0);
  for (auto it = d.order.rbegin(); it != d.order.rend(); ++it) {
    const int r = d.receiver[static_cast<size_t>(*it)];
    if (r >= 0) area[static_cast<size_t>(r)] += area[static_cast<size_t>(*it)];
  }
  const double cell_area = cell_m * cell_m;
  for (const int i : d.order) {
    const size_t ui = static_cast<size_t>(i);
    const int r = d.receiver[ui];
    if (r < 0) continue;
    const double dist = kDist[d.dir[ui]] * cell_m;
    const double f = k_dt * std::pow(area[ui] * cell_area, m_exp) / dist;
    h[ui] = (h[ui] + f * h[static_cast<size_t>(r)]) / (1.0 + f);
  }
}

}  // namespace

bool synthesizeTerrain(const TerrainOptions& o, std::vector<uint16_t>& heights, std::string* error,
                       const ProgressFn& progress) {
  auto fail = [&](const std::string& why) {
    if (error) *error = why;
    return false;
  };
  if (o.size < 33 || o.size > 16385) return fail("size must be in 33..16385");
  if (!(o.maxHeight >= 10.0 && o.maxHeight <= 65535.0)) return fail("max height must be in 10..65535");
  if (!(o.seaFraction >= 0.0 && o.seaFraction <= 0.9)) return fail("sea fraction must be in 0..0.9");
  if (!(o.beta >= 1.0 && o.beta <= 3.5)) return fail("beta must be in 1..3.5");
  auto t0 = std::chrono::steady_clock::now();
  auto step = [&](double f, const char* stage) {
    if (std::getenv("HFT_TIME")) std::fprintf(stderr, "%.2f %s\n", std::chrono::duration<double>(std::chrono::steady_clock::now()-t0).count(), stage);
    return !progress || progress(f, stage); };

  const int n = o.size;
  const size_t count = static_cast<size_t>(n) * n;
  const double scale = static_cast<double>(n) / 2049.0;  // feature sizes follow the tile size
  const double cell_m = 30.0;
  Rng rng(o.seed ^ 0x6866746572726169ull);  // "hfterrai": seed 0 is as good as any other

  if (!step(0.0, "spectrum")) return fail("cancelled");
  SpectralSynth synth(n, fftSize(n));
  if (!synth.ok()) return fail("FFTW could not allocate or plan the transform");

  // 1. Base: fBm over all scales; its largest waves set where the mountains and the sea are.
  std::vector<double> base = synth.field(rng, o.beta, 0.0, 0.0);
  if (!step(0.25, "ridges")) return fail("cancelled");
  // 4. (drawn now to keep the random sequence in one place) two bands for ridges.
  std::vector<double> band1 = synth.field(rng, 2.0, 4.0 * scale, 40.0 * scale);
  std::vector<double> band2 = synth.field(rng, 2.0, 30.0 * scale, 300.0 * scale);
  if (!step(0.5, "shape")) return fail("cancelled");

  // 2. Tilt towards a seed-chosen side so that the sea is one coherent ocean, not lakes.
  const double angle = 2.0 * kPi * rng.uniform();
  const double cx = std::cos(angle), cy = std::sin(angle);
  std::vector<double> c(count);
  for (int y = 0; y < n; ++y) {
    for (int x = 0; x < n; ++x) {
      const size_t i = static_cast<size_t>(y) * n + x;
      const double u = (x + 0.5) / n - 0.5, v = (y + 0.5) / n - 0.5;
      c[i] = base[i] + 2.2 * (u * cx + v * cy);
    }
  }

  // 3. Sea level at the wanted quantile; elevation above it, normalised to 0..1.
  const double sea_level = quantile(c, o.seaFraction);
  const std::vector<uint8_t> sea = seaMask(c, n, sea_level);
  double top = 0.0;
  for (size_t i = 0; i < count; ++i) top = std::max(top, c[i] - sea_level);
  if (!(top > 0.0)) return fail("degenerate field");

  auto P = [](const char* name, double def) { const char* v = std::getenv(name); return v ? std::atof(v) : def; };
  const double w1 = P("HFT_R1", 0.35), w2 = P("HFT_R2", 0.1), ex = P("HFT_EXP", 1.4);
  std::vector<double> h(count, 0.0);
  for (size_t i = 0; i < count; ++i) {
    if (sea[i]) continue;
    const double e = std::max(c[i] - sea_level, 0.0) / top;
    const double r1 = 1.0 - std::min(std::abs(band1[i]) * 0.6, 1.0);
    const double r2 = 1.0 - std::min(std::abs(band2[i]) * 0.6, 1.0);
    const double mountains = smoothstep(0.05, 0.6, e);
    h[i] = o.maxHeight * (std::pow(e, ex) + mountains * (0.3 + e) * (w1 * r1 * r1 + w2 * r2 * r2));
  }
  base.clear();
  band1.clear();
  band2.clear();
  c.clear();

  // 5. Erosion: scree slopes, then rivers, then scree again to widen the cut valleys.
  if (!step(0.6, "erosion")) return fail("cancelled");
  const double talus = P("HFT_TALUS", 0.9) * cell_m;  // ~42 degrees: steeper rock does not stay
  thermalErosion(h, sea, n, talus, 4);
  Drainage d;
  const int passes = static_cast<int>(P("HFT_PASSES", 3));
  const double kdt = P("HFT_K", 2e-2);
  for (int pass = 0; pass < passes; ++pass) {
    drain(h, sea, n, d, false);
    streamPower(h, d, cell_m, kdt / scale, 0.5);
    thermalErosion(h, sea, n, talus, static_cast<int>(P("HFT_TH", 4)));
    if (!step(0.7 + 0.25 * pass / passes, "erosion")) return fail("cancelled");
  }
  if (P("HFT_FILL", 1) > 0) drain(h, sea, n, d, true);  // leaves no closed depressions: lakes are flat and spill to the sea

  // 6. Scale land to maxHeight; the shore starts at 1 m so that land never reads as sea.
  double land_max = 0.0;
  for (size_t i = 0; i < count; ++i)
    if (!sea[i]) land_max = std::max(land_max, h[i]);
  if (!(land_max > 0.0)) return fail("degenerate field");
  const double k = o.maxHeight / land_max;
  heights.assign(count, 0);
  for (size_t i = 0; i < count; ++i) {
    if (sea[i]) continue;
    const double v = std::clamp(std::round(h[i] * k), 1.0, o.maxHeight);
    heights[i] = static_cast<uint16_t>(v);
  }
  step(1.0, "done");
  return true;
}

}  // namespace hfterrain
