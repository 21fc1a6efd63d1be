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

double quantile(const std::vector<double>& v, double q) {
  std::vector<double> tmp(v);
  const size_t k = std::min(tmp.size() - 1, static_cast<size_t>(q * static_cast<double>(tmp.size())));
  std::nth_element(tmp.begin(), tmp.begin() + static_cast<std::ptrdiff_t>(k), tmp.end());
  return tmp[k];
}

// 8-neighbourhood offsets and their lengths in cells.
constexpr int kDx[8] = {1, -1, 0, 0, 1, -1, 1, -1};
constexpr int kDy[8] = {0, 0, 1, -1, 1, -1, -1, 1};
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
  // Water takes the steepest way down the filled surface, not the way the flood came: flood
  // paths are straight lines on flat ground and would carve straight, parallel valleys.
  for (int y = 1; y < n - 1; ++y) {
    for (int x = 1; x < n - 1; ++x) {
      const size_t i = static_cast<size_t>(y) * n + x;
      if (d.receiver[i] < 0) continue;
      double best = 0.0;
      for (int k = 0; k < 8; ++k) {
        const size_t j = static_cast<size_t>(y + kDy[k]) * n + (x + kDx[k]);
        const double slope = (w[i] - w[j]) / kDist[k];
        if (slope > best) {
          best = slope;
          d.receiver[i] = static_cast<int>(j);
          d.dir[i] = static_cast<uint8_t>(k);
        }
      }
    }
  }
}

// Stream-power incision with uplift, dh/dt = U - K A^m S, with the implicit O(n) scheme of
// Braun & Willett (2013): visiting cells after their receivers,
// h_i = (h_i + U_i dt + F h_r) / (1 + F), F = K dt A^m / distance (A in cells, distance in
// cells). Run to near steady state it carves the branching valley networks and sharp ridges
// that make a height field read as real terrain rather than noise.
void streamPower(std::vector<double>& h, const Drainage& d, const std::vector<double>* uplift,
                 double dt, double k, double m_exp) {
  std::vector<double> area(h.size(), 1.0);
  for (auto it = d.order.rbegin(); it != d.order.rend(); ++it) {
    const int r = d.receiver[static_cast<size_t>(*it)];
    if (r >= 0) area[static_cast<size_t>(r)] += area[static_cast<size_t>(*it)];
  }
  for (const int i : d.order) {
    const size_t ui = static_cast<size_t>(i);
    const int r = d.receiver[ui];
    if (r < 0) continue;
    const double f = k * dt * std::pow(area[ui], m_exp) / kDist[d.dir[ui]];
    const double u = uplift ? (*uplift)[ui] * dt : 0.0;
    h[ui] = (h[ui] + u + f * h[static_cast<size_t>(r)]) / (1.0 + f);
  }
}

// Catmull-Rom sample of a coarse nc x nc grid at coarse coordinates (u, v).
double bicubic(const std::vector<double>& g, int nc, double u, double v) {
  const int iu = std::min(static_cast<int>(u), nc - 2), iv = std::min(static_cast<int>(v), nc - 2);
  const double fu = u - iu, fv = v - iv;
  auto weights = [](double t, double w[4]) {
    const double t2 = t * t, t3 = t2 * t;
    w[0] = 0.5 * (-t3 + 2 * t2 - t);
    w[1] = 0.5 * (3 * t3 - 5 * t2 + 2);
    w[2] = 0.5 * (-3 * t3 + 4 * t2 + t);
    w[3] = 0.5 * (t3 - t2);
  };
  double wu[4], wv[4];
  weights(fu, wu);
  weights(fv, wv);
  double sum = 0.0;
  for (int j = 0; j < 4; ++j) {
    const int y = std::clamp(iv - 1 + j, 0, nc - 1);
    double row = 0.0;
    for (int i = 0; i < 4; ++i) {
      const int x = std::clamp(iu - 1 + i, 0, nc - 1);
      row += wu[i] * g[static_cast<size_t>(y) * nc + x];
    }
    sum += wv[j] * row;
  }
  return sum;
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
  auto P = [](const char* name, double def) { const char* v = std::getenv(name); return v ? std::atof(v) : def; };

  const int n = o.size;
  const size_t count = static_cast<size_t>(n) * n;
  const double cell_m = 30.0;
  Rng rng(o.seed ^ 0x6866746572726169ull);  // "hfterrai": seed 0 is as good as any other

  if (!step(0.0, "spectrum")) return fail("cancelled");
  SpectralSynth synth(n, fftSize(n));
  if (!synth.ok()) return fail("FFTW could not allocate or plan the transform");

  // Coarse grid for the landscape evolution: about 513 x 513 whatever the tile size.
  const int s = std::max(1, (n - 1) / static_cast<int>(P("HFT_NC", 512)));
  const int nc = (n - 2) / s + 2;

  // 1. Base: fBm over all scales; its largest waves set where the mountains and the sea are.
  std::vector<double> base = synth.field(rng, o.beta, 0.0, 0.0);
  // Detail below the coarse grid's resolution, added after the evolution.
  std::vector<double> detail = synth.field(rng, P("HFT_DBETA", 2.4), 0.25 * nc, 0.0);
  if (!step(0.3, "shape")) return fail("cancelled");

  // 2. Tilt towards a seed-chosen side so that the sea is one coherent ocean, not lakes.
  const double angle = 2.0 * kPi * rng.uniform();
  const double cx = std::cos(angle), cy = std::sin(angle);
  const double tilt = P("HFT_TILT", 2.2);
  for (int y = 0; y < n; ++y) {
    for (int x = 0; x < n; ++x) {
      const double u = (x + 0.5) / n - 0.5, v = (y + 0.5) / n - 0.5;
      base[static_cast<size_t>(y) * n + x] += tilt * (u * cx + v * cy);
    }
  }

  // 3. Sea level at the wanted quantile; elevation above it, normalised to 0..1.
  const double sea_level = quantile(base, o.seaFraction);
  const std::vector<uint8_t> sea = seaMask(base, n, sea_level);
  double top = 0.0;
  for (size_t i = 0; i < count; ++i) top = std::max(top, base[i] - sea_level);
  if (!(top > 0.0)) return fail("degenerate field");

  // 4. Landscape evolution on the coarse grid: uplift where the base field is high, rivers
  // cutting down to the sea. Coarse point (i, j) sits on full-resolution sample (i*s, j*s).
  const size_t ccount = static_cast<size_t>(nc) * nc;
  std::vector<double> uplift(ccount, 0.0), hc(ccount, 0.0);
  std::vector<uint8_t> sea_c(ccount, 0);
  const double up_exp = P("HFT_UEXP", 1.0), h0 = P("HFT_H0", 1.0);
  for (int j = 0; j < nc; ++j) {
    for (int i = 0; i < nc; ++i) {
      const int x = std::min(i * s, n - 1), y = std::min(j * s, n - 1);
      const size_t ci = static_cast<size_t>(j) * nc + i;
      if (sea[static_cast<size_t>(y) * n + x]) {
        sea_c[ci] = 1;
        continue;
      }
      double sum = 0.0;
      int cnt = 0;
      for (int yy = std::max(0, y - s / 2); yy <= std::min(n - 1, y + s / 2); ++yy)
        for (int xx = std::max(0, x - s / 2); xx <= std::min(n - 1, x + s / 2); ++xx, ++cnt)
          sum += base[static_cast<size_t>(yy) * n + xx];
      const double e = std::max(sum / cnt - sea_level, 0.0) / top;
      uplift[ci] = std::pow(e, up_exp);
      hc[ci] = h0 * uplift[ci] + P("HFT_NOISE", 0.01) * rng.uniform();
    }
  }
  base.clear();
  base.shrink_to_fit();

  Drainage d;
  const int iterations = static_cast<int>(P("HFT_IT", 30));
  const double dt = P("HFT_DT", 0.05), kk = P("HFT_K", 1.0), mexp = P("HFT_M", 0.5);
  for (int it = 0; it < iterations; ++it) {
    drain(hc, sea_c, nc, d, true);
    streamPower(hc, d, &uplift, dt, kk, mexp);
    if (it % 8 == 7 && !step(0.35 + 0.4 * it / iterations, "erosion")) return fail("cancelled");
  }
  double hc_max = 0.0;
  for (double v : hc) hc_max = std::max(hc_max, v);
  if (!(hc_max > 0.0)) return fail("degenerate field");
  for (double& v : hc) v *= o.maxHeight / hc_max;
  if (!step(0.75, "detail")) return fail("cancelled");

  // 5. Back to full resolution (Catmull-Rom), plus fine detail that grows with height.
  std::vector<double> h(count, 0.0);
  const double damp = P("HFT_DAMP", 60.0);
  for (int y = 0; y < n; ++y) {
    for (int x = 0; x < n; ++x) {
      const size_t i = static_cast<size_t>(y) * n + x;
      if (sea[i]) continue;
      const double v = bicubic(hc, nc, static_cast<double>(x) / s, static_cast<double>(y) / s);
      const double rel = std::clamp(v / o.maxHeight, 0.0, 1.0);
      h[i] = std::max(v + damp * std::sqrt(rel) * detail[i], 0.0);
    }
  }
  detail.clear();

  // 6. Full-resolution finish: scree slopes, one light river pass, no closed depressions.
  const double talus = P("HFT_TALUS", 0.9) * cell_m;  // ~42 degrees: steeper rock does not stay
  thermalErosion(h, sea, n, talus, static_cast<int>(P("HFT_TH", 4)));
  if (P("HFT_FSP", 1) > 0) {
    drain(h, sea, n, d, true);
    streamPower(h, d, nullptr, 1.0, P("HFT_FK", 0.01), 0.5);
  }
  if (P("HFT_FILL", 1) > 0) drain(h, sea, n, d, true);  // lakes are flat and spill to the sea
  if (!step(0.95, "quantise")) return fail("cancelled");

  // 7. Scale land to maxHeight; the shore starts at 1 m so that land never reads as sea.
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
