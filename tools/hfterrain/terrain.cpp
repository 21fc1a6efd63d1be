// terrain.cpp - spectral synthesis of the sample terrain. See terrain.h for the contract.
#include "terrain.h"

#include <fftw3.h>

#include "gpu/spectral_core.h"
#ifdef HFTERRAIN_CUDA
#include "gpu/cuda_util.h"
#include "gpu/spectral_field.h"
#endif

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <memory>
#include <queue>
#include <thread>
#include <utility>
#include <vector>

namespace hfterrain {
namespace {

constexpr double kPi = 3.14159265358979323846;

// splitmix64: tiny, fast, and the same sequence on every platform (std::normal_distribution
// is not specified bit-for-bit, so it would make the sample terrain differ between compilers).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    const uint64_t z = hfspectral::draw(state_, 0);  // the sequence the spectrum indexes
    state_ += hfspectral::kGamma;
    return z;
  }
  // Uniform in (0, 1), as the spectrum's draws (hfspectral::uniform).
  double uniform() { return hfspectral::uniform(next()); }
  // The generator as it will be after `draws` more calls of next(): the state only ever grows
  // by the same constant, so threads can each start at their own part of one sequence.
  void skip(uint64_t draws) { state_ += draws * hfspectral::kGamma; }
  uint64_t state() const { return state_; }  // draw i from here: hfspectral::draw(state(), i)

 private:
  uint64_t state_;
};

struct FftwFree {
  void operator()(void* p) const { fftw_free(p); }
};

// Runs f(i) for i in [0, n) on up to `threads` threads. Used only where every i writes its own
// outputs from inputs nobody writes, so the result is the same bits for any thread count.
template <class F>
void parallelFor(size_t n, int threads, F f) {
  const size_t t = std::min(n, static_cast<size_t>(std::max(1, threads)));
  if (t <= 1) {
    for (size_t i = 0; i < n; ++i) f(i);
    return;
  }
  std::vector<std::thread> pool;
  pool.reserve(t);
  for (size_t k = 0; k < t; ++k) {
    pool.emplace_back([&, k] {
      for (size_t i = k * n / t, end = (k + 1) * n / t; i < end; ++i) f(i);
    });
  }
  for (std::thread& th : pool) th.join();
}

// FFT size: the smallest 2^k or 3 * 2^k a little larger than the grid (FFTW is fastest on
// such radices); the field is periodic in it, and the wrap-around falls outside the grid.
int fftSize(int n) {
  const int need = n + n / 16;
  int m = 16;
  while (true) {
    if (m >= need) return m;
    if (m / 2 * 3 >= need) return m / 2 * 3;
    m *= 2;
  }
}

// Gaussian random fields with a power-law spectrum on a periodic m x m grid, cropped to
// tile x tile. Each field() allocates its FFTW buffers (spectrum and grid, 2 x 8 m^2 bytes) and
// frees them before it returns, so that they are never held together with the big arrays of
// the other steps (16385 x 16385: 4.8 GB each).
class SpectralSynth {
 public:
  SpectralSynth(int tile, int m, int threads, FieldDevice device)
      : tile_(tile), m_(m), half_(m / 2 + 1), threads_(threads), device_(device) {}

  // Draws of Rng::next() that one field() takes: one Gaussian pair (two draws) per bin.
  uint64_t draws() const { return 2ull * static_cast<uint64_t>(m_) * static_cast<uint64_t>(half_); }

  // A tile x tile field in `out`, zero mean and unit standard deviation, whose 1-D profiles have
  // a power spectrum ~ 1/f^beta (so the 2-D amplitude spectrum is f^(-(beta+1)/2)) between a
  // soft high-pass at fLow and a soft low-pass at fHigh (both in cycles per tile; fLow = 0 and
  // fHigh = 0 mean "no cut"). Gaussian real and imaginary parts give Rayleigh-distributed
  // amplitudes with uniformly random phases (hfspectral::bin, shared with the GPU). Advances rng
  // by draws(). False with *error when FFTW cannot allocate or plan, or the GPU fails.
  bool field(Rng& rng, double beta, double fLow, double fHigh, std::vector<double>& out, std::string& error) {
    hfspectral::FieldSpec spec;
    spec.m = m_;
    spec.perTile = static_cast<double>(tile_) / m_;  // cycles per M -> per tile
    spec.beta = beta;
    spec.fLow = fLow;
    spec.fHigh = fHigh;
    spec.state = rng.state();
    rng.skip(draws());
    if (device_ == FieldDevice::Cuda) {
#ifdef HFTERRAIN_CUDA
      if (!hfgpu::spectralField(spec, tile_, out, error)) return false;  // double, as FFTW's
      normalise(out);
      return true;
#else
      error = "this hfterrain was built without CUDA";
      return false;
#endif
    }
    error = "FFTW could not allocate or plan the transform";
    const size_t bins = static_cast<size_t>(m_) * static_cast<size_t>(half_);
    std::unique_ptr<fftw_complex, FftwFree> spectrum(
        static_cast<fftw_complex*>(fftw_malloc(sizeof(fftw_complex) * bins)));
    std::unique_ptr<double, FftwFree> grid(static_cast<double*>(
        fftw_malloc(sizeof(double) * static_cast<size_t>(m_) * static_cast<size_t>(m_))));
    if (!spectrum || !grid) return false;
    fftw_plan plan = fftw_plan_dft_c2r_2d(m_, m_, spectrum.get(), grid.get(), FFTW_ESTIMATE);
    if (!plan) return false;

    // Every bin is a function of its index alone (hfspectral::bin): rows are filled in parallel
    // with the same numbers (hence the same field) as one pass in order.
    parallelFor(static_cast<size_t>(m_), threads_, [&](size_t row) {
      for (int kx = 0; kx < half_; ++kx) {
        fftw_complex& c = spectrum.get()[row * static_cast<size_t>(half_) + static_cast<size_t>(kx)];
        hfspectral::bin(spec, static_cast<int>(row), kx, c[0], c[1]);
      }
    });
    fftw_execute(plan);
    fftw_destroy_plan(plan);
    spectrum.reset();

    out.assign(static_cast<size_t>(tile_) * tile_, 0.0);
    for (int y = 0; y < tile_; ++y) {
      const double* row = grid.get() + static_cast<size_t>(y) * m_;
      std::copy(row, row + tile_, out.begin() + static_cast<ptrdiff_t>(static_cast<size_t>(y) * tile_));
    }
    grid.reset();
    normalise(out);
    error.clear();
    return true;
  }

 private:
  // Zero mean, unit standard deviation (sums in order: the same for any thread count).
  static void normalise(std::vector<double>& out) {
    double sum = 0.0, sum2 = 0.0;
    for (const double v : out) {
      sum += v;
      sum2 += v * v;
    }
    const double count = static_cast<double>(out.size());
    const double mean = sum / count;
    const double sd = std::sqrt(std::max(sum2 / count - mean * mean, 1e-300));
    for (double& v : out) v = (v - mean) / sd;
  }

  int tile_, m_, half_, threads_;
  FieldDevice device_;
};

// The q-quantile of v (0 <= q <= 1).
double quantile(std::vector<double> v, double q) {
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

// 8-neighbourhood offsets and their lengths in cells.
constexpr int kDx[8] = {1, -1, 0, 0, 1, -1, 1, -1};
constexpr int kDy[8] = {0, 0, 1, -1, 1, -1, -1, 1};
constexpr double kDist[8] = {
    1, 1, 1, 1, 1.41421356237, 1.41421356237, 1.41421356237, 1.41421356237};

// Sea = cells below `level` that are 4-connected to the grid border (the open ocean).
// Cells below `level` elsewhere are inland basins, which stay land.
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

// Thermal erosion: wherever a cell is higher than a 4-neighbour by more than `talus`, a share
// of the excess slides down. Removes the single-pixel spikes that noise has and rock has not.
// Sea cells are fixed, and what slides into the sea is gone.
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
            if (!sea[j]) delta[j] += moved;
          }
        }
      }
    }
    for (size_t i = 0; i < h.size(); ++i) h[i] += delta[i];
  }
}

// Hillslope creep, dh/dt = D laplacian(h), explicit (rate <= 0.25 keeps it stable): rounds the
// ridge crests and valley sides that pure stream power leaves as sharp facets.
void diffuse(std::vector<double>& h, const std::vector<uint8_t>& sea, int n, double rate,
             int steps) {
  std::vector<double> next(h);
  for (int step = 0; step < steps; ++step) {
    for (int y = 1; y < n - 1; ++y) {
      for (int x = 1; x < n - 1; ++x) {
        const size_t i = static_cast<size_t>(y) * n + x;
        if (sea[i]) continue;
        const double lap = h[i - 1] + h[i + 1] + h[i - n] + h[i + n] - 4.0 * h[i];
        next[i] = h[i] + rate * lap;
      }
    }
    h.swap(next);
  }
}

// Where water goes. `order` lists cells so that each comes after its receiver.
struct Drainage {
  std::vector<int> order;
  std::vector<int> receiver;  // -1 for outlets (sea, grid border)
  std::vector<uint8_t> dir;   // index into kDx/kDy/kDist of the receiver
};

// Priority-flood (Barnes et al. 2014) from the sea and the grid border fills every closed
// depression of h to just above its spill height, so all water reaches the sea or leaves the
// grid; the flood pops cells in non-decreasing height, which is the order. Each cell's receiver
// is then its steepest downhill neighbour: following the flood's own paths instead would carve
// straight, parallel valleys across flat ground.
void drain(std::vector<double>& h, const std::vector<uint8_t>& sea, int n, Drainage& d) {
  const size_t count = h.size();
  d.order.clear();
  d.order.reserve(count);
  d.receiver.assign(count, -1);
  d.dir.assign(count, 0);
  std::vector<uint8_t> done(count, 0);
  using Item = std::pair<double, int>;
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> open;
  for (size_t i = 0; i < count; ++i) {
    const int x = static_cast<int>(i % n), y = static_cast<int>(i / n);
    if (sea[i] || x == 0 || y == 0 || x == n - 1 || y == n - 1) {
      done[i] = 1;
      open.emplace(h[i], static_cast<int>(i));
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
      h[j] = std::max(h[j], h[static_cast<size_t>(i)] + 1e-6);
      open.emplace(h[j], static_cast<int>(j));
    }
  }
  for (int y = 1; y < n - 1; ++y) {
    for (int x = 1; x < n - 1; ++x) {
      const size_t i = static_cast<size_t>(y) * n + x;
      if (sea[i]) continue;
      double best = 0.0;
      for (int k = 0; k < 8; ++k) {
        const size_t j = static_cast<size_t>(y + kDy[k]) * n + (x + kDx[k]);
        const double slope = (h[i] - h[j]) / kDist[k];
        if (slope > best) {
          best = slope;
          d.receiver[i] = static_cast<int>(j);
          d.dir[i] = static_cast<uint8_t>(k);
        }
      }
    }
  }
}

// Uplift and stream-power incision, dh/dt = U - K A^m S (n = 1), with the implicit O(cells)
// scheme of Braun & Willett (2013): visiting cells after their receivers,
// h_i = (h_i + U_i dt + F h_r) / (1 + F), F = K dt A^m / distance, A and distance in cells.
// Unconditionally stable, and a few dozen steps carve the branching valley networks and sharp
// divides that make a height field read as real terrain rather than noise.
void streamPower(std::vector<double>& h, const Drainage& d, const std::vector<double>& uplift,
                 double dt, double k, double m) {
  std::vector<double> area(h.size(), 1.0);
  for (auto it = d.order.rbegin(); it != d.order.rend(); ++it) {
    const int r = d.receiver[static_cast<size_t>(*it)];
    if (r >= 0) area[static_cast<size_t>(r)] += area[static_cast<size_t>(*it)];
  }
  for (const int i : d.order) {
    const size_t ui = static_cast<size_t>(i);
    const int r = d.receiver[ui];
    if (r < 0) continue;
    const double f = k * dt * std::pow(area[ui], m) / kDist[d.dir[ui]];
    h[ui] = (h[ui] + uplift[ui] * dt + f * h[static_cast<size_t>(r)]) / (1.0 + f);
  }
}

// Catmull-Rom sample of an nc x nc grid at grid coordinates (u, v).
double bicubic(const std::vector<double>& g, int nc, double u, double v) {
  const int iu = std::min(static_cast<int>(u), nc - 2), iv = std::min(static_cast<int>(v), nc - 2);
  auto weights = [](double t, double w[4]) {
    const double t2 = t * t, t3 = t2 * t;
    w[0] = 0.5 * (-t3 + 2.0 * t2 - t);
    w[1] = 0.5 * (3.0 * t3 - 5.0 * t2 + 2.0);
    w[2] = 0.5 * (-3.0 * t3 + 4.0 * t2 + t);
    w[3] = 0.5 * (t3 - t2);
  };
  double wu[4], wv[4];
  weights(u - iu, wu);
  weights(v - iv, wv);
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

// Tuning, chosen by eye against SRTM coast tiles (hillshades of the result).
constexpr double kTilt = 2.2;           // planar trend (in base-field sigmas) that gathers the sea
constexpr double kBasinUplift = 0.5;    // inland below-sea-level ground becomes low hills
constexpr double kUpliftExp = 0.6;      // < 1 widens the highlands around the main divides
constexpr double kInitialNoise = 0.3;   // starting roughness that seeds the river network
constexpr int kCoarseCells = 512;       // the evolution grid has about this many cells a side
constexpr int kSteps = 30;              // evolution steps
constexpr double kDt = 0.5;             // step length (uplift 1 = the highest base ground)
constexpr double kErodibility = 1.0;    // K
constexpr double kAreaExp = 0.5;        // m (concavity m/n of real rivers is about 0.4..0.6)
constexpr double kCreep = 0.05;         // hillslope creep rate (2 explicit substeps a step)
constexpr double kDetailBeta = 2.4;     // spectrum of the sub-grid detail
constexpr double kDetailMetres = 20.0;  // its amplitude at the highest ground
constexpr double kTalus = 0.9;          // talus slope (rise over run), about 42 degrees
constexpr double kCellMetres = 30.0;    // pixel size of the written GeoTIFF

}  // namespace

bool cudaFieldsAvailable() {
#ifdef HFTERRAIN_CUDA
  return hfgpu::cudaDeviceCountOrZero() > 0;
#else
  return false;
#endif
}

bool synthesizeTerrain(const TerrainOptions& o, std::vector<uint16_t>& heights, std::string* error,
                       const ProgressFn& progress) {
  auto fail = [&](const std::string& why) {
    if (error) *error = why;
    return false;
  };
  if (o.size < 33 || o.size > 32769) return fail("size must be in 33..32769");
  if (!(o.maxHeight >= 10.0 && o.maxHeight <= 65535.0)) {
    return fail("max height must be in 10..65535");
  }
  if (!(o.seaFraction >= 0.0 && o.seaFraction <= 0.9))
    return fail("sea fraction must be in 0..0.9");
  if (!(o.beta >= 1.0 && o.beta <= 3.5)) return fail("beta must be in 1..3.5");
  auto step = [&](double f, const char* stage) { return !progress || progress(f, stage); };
  if (!step(0.0, "spectrum")) return fail("cancelled");

  // Everything runs on the tile plus a margin on each side and is cropped at the end: rivers
  // then leave the tile as they would leave a real one, instead of taking its edge for the sea.
  const int tile = o.size;
  const int margin = tile / 8;
  const int n = tile + 2 * margin;
  const size_t count = static_cast<size_t>(n) * n;
  Rng rng(o.seed ^ 0x6866746572726169ull);  // "hfterrai": seed 0 is as good as any other

  // Coarse grid of the landscape evolution: point (i, j) sits on sample (i * s, j * s).
  const int s = std::max(1, (n - 1) / kCoarseCells);
  const int nc = (n - 2) / s + 2;
  const size_t ccount = static_cast<size_t>(nc) * nc;

  // 1. Base: fBm over all scales. Its largest waves decide where mountains and sea are.
  //    Detail: the same kind of field, high-passed, for what the coarse grid cannot hold. Its
  //    random numbers follow the base's in the sequence, but it is only synthesised in step 5,
  //    from a copy of the generator taken here: the peak memory is then one field's FFT buffers
  //    (10 GB at 16385 x 16385, not 16 GB), and the heights are the same.
  const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  SpectralSynth synth(n, fftSize(n), threads, o.device);  // the same grid on both devices
  std::vector<double> base;
  std::string why;
  if (!synth.field(rng, o.beta, 0.0, 0.0, base, why)) return fail(why);
  Rng detail_rng = rng;
  rng.skip(synth.draws());
  if (!step(0.3, "coast")) return fail("cancelled");

  // 2. Tilt towards a seed-chosen side so that the sea is one ocean, not scattered lakes.
  const double angle = 2.0 * kPi * rng.uniform();
  const double cx = std::cos(angle), cy = std::sin(angle);
  for (int y = 0; y < n; ++y) {
    for (int x = 0; x < n; ++x) {
      const double u = (x + 0.5) / n - 0.5, v = (y + 0.5) / n - 0.5;
      base[static_cast<size_t>(y) * n + x] += kTilt * (u * cx + v * cy);
    }
  }

  // 3. Sea level: the open sea (connected to the border) covers seaFraction of the tile. Basins
  //    below it inside the land do not count, so bisect on the level.
  std::vector<uint8_t> sea(count, 0);
  double sea_level = -std::numeric_limits<double>::infinity();
  if (o.seaFraction > 0.0) {
    std::vector<double> inner;
    inner.reserve(static_cast<size_t>(tile) * tile);
    for (int y = margin; y < margin + tile; ++y) {
      for (int x = margin; x < margin + tile; ++x) {
        inner.push_back(base[static_cast<size_t>(y) * n + x]);
      }
    }
    auto seaShare = [&](double level) {
      sea = seaMask(base, n, level);
      size_t wet = 0;
      for (int y = margin; y < margin + tile; ++y) {
        for (int x = margin; x < margin + tile; ++x) wet += sea[static_cast<size_t>(y) * n + x];
      }
      return static_cast<double>(wet) / static_cast<double>(inner.size());
    };
    double lo = quantile(inner, o.seaFraction);
    double hi = quantile(inner, std::min(0.99, o.seaFraction + 0.3));
    for (int it = 0; it < 12; ++it) {
      const double mid = 0.5 * (lo + hi);
      (seaShare(mid) < o.seaFraction ? lo : hi) = mid;
    }
    sea_level =
        std::abs(seaShare(lo) - o.seaFraction) < std::abs(seaShare(hi) - o.seaFraction) ? lo : hi;
    seaShare(sea_level);
  }
  double top = 0.0;
  for (size_t i = 0; i < count; ++i) top = std::max(top, base[i] - sea_level);
  if (!(top > 0.0) || !std::isfinite(top)) {
    // No sea at all: measure heights from the lowest ground instead.
    sea_level = *std::min_element(base.begin(), base.end());
    top = *std::max_element(base.begin(), base.end()) - sea_level;
    if (!(top > 0.0)) return fail("degenerate field");
  }
  if (!step(0.4, "erosion")) return fail("cancelled");

  // 4. Landscape evolution on the coarse grid: rock uplift where the base field is high, rivers
  //    cutting down towards the sea, creep on the slopes.
  std::vector<double> uplift(ccount, 0.0), hc(ccount, 0.0);
  std::vector<uint8_t> sea_c(ccount, 0);
  for (int j = 0; j < nc; ++j) {
    for (int i = 0; i < nc; ++i) {
      const int x = std::min(i * s, n - 1), y = std::min(j * s, n - 1);
      const size_t ci = static_cast<size_t>(j) * nc + i;
      if (sea[static_cast<size_t>(y) * n + x]) {
        sea_c[ci] = 1;
        continue;
      }
      double sum = 0.0;
      int cells = 0;
      for (int yy = std::max(0, y - s / 2); yy <= std::min(n - 1, y + s / 2); ++yy) {
        for (int xx = std::max(0, x - s / 2); xx <= std::min(n - 1, x + s / 2); ++xx, ++cells) {
          sum += base[static_cast<size_t>(yy) * n + xx];
        }
      }
      const double above = sum / cells - sea_level;
      const double e = (above >= 0.0 ? above : -kBasinUplift * above) / top;
      uplift[ci] = std::pow(e, kUpliftExp);
      hc[ci] = uplift[ci] + kInitialNoise * rng.uniform();
    }
  }
  base = std::vector<double>();

  Drainage d;
  for (int it = 0; it < kSteps; ++it) {
    drain(hc, sea_c, nc, d);
    streamPower(hc, d, uplift, kDt, kErodibility, kAreaExp);
    diffuse(hc, sea_c, nc, kCreep, 2);
    if (!step(0.4 + 0.45 * (it + 1) / kSteps, "erosion")) return fail("cancelled");
  }
  double hc_max = 0.0;
  for (const double v : hc) hc_max = std::max(hc_max, v);
  if (!(hc_max > 0.0)) return fail("degenerate field");

  // 5. Back to full resolution (Catmull-Rom) in metres, plus detail that grows with height,
  //    then scree slopes.
  if (!step(0.85, "detail")) return fail("cancelled");
  std::vector<double> detail;
  if (!synth.field(detail_rng, kDetailBeta, 0.25 * nc, 0.0, detail, why)) return fail(why);
  if (!step(0.9, "resample")) return fail("cancelled");
  std::vector<double> h(count, 0.0);
  parallelFor(static_cast<size_t>(n), threads, [&](size_t row) {
    const int y = static_cast<int>(row);
    for (int x = 0; x < n; ++x) {
      const size_t i = static_cast<size_t>(y) * n + x;
      if (sea[i]) continue;
      const double v = bicubic(hc, nc, static_cast<double>(x) / s, static_cast<double>(y) / s) *
                       (o.maxHeight / hc_max);
      const double rel = std::clamp(v / o.maxHeight, 0.0, 1.0);
      h[i] = std::max(v + kDetailMetres * (0.3 + std::sqrt(rel)) * detail[i], 0.0);
    }
  });
  detail = std::vector<double>();
  thermalErosion(h, sea, n, kTalus * kCellMetres, 4);
  if (!step(0.95, "quantise")) return fail("cancelled");

  // 6. Crop, scale the highest land to maxHeight; the shore starts at 1 m so that land never
  //    reads as sea. The sea is exactly 0.
  double land_max = 0.0;
  for (int y = margin; y < margin + tile; ++y) {
    for (int x = margin; x < margin + tile; ++x) {
      land_max = std::max(land_max, h[static_cast<size_t>(y) * n + x]);
    }
  }
  if (!(land_max > 0.0)) return fail("degenerate field: no land");
  const double k = o.maxHeight / land_max;
  heights.assign(static_cast<size_t>(tile) * tile, 0);
  for (int y = 0; y < tile; ++y) {
    for (int x = 0; x < tile; ++x) {
      const size_t i = static_cast<size_t>(y + margin) * n + (x + margin);
      if (sea[i]) continue;
      heights[static_cast<size_t>(y) * tile + x] =
          static_cast<uint16_t>(std::clamp(std::round(h[i] * k), 1.0, o.maxHeight));
    }
  }
  step(1.0, "done");
  return true;
}

}  // namespace hfterrain
