// test_util.h - deterministic patch generators and round-trip helpers shared by the codec tests.
//
// Everything here is deterministic across platforms (own PRNG, no <random> distributions), so
// the golden streams and the seeds of the robustness tests mean the same thing everywhere.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "codec/hfpac.h"

namespace hftest {

// Encoder options with the given segment size and bits (other fields at their defaults).
inline hfpac::EncodeOptions opts(int segment, int bits) {
  hfpac::EncodeOptions o;
  o.segment = segment;
  o.bits = bits;
  return o;
}

// The same with 2DRBUC residual coding.
inline hfpac::EncodeOptions rbucOpts(int segment) {
  hfpac::EncodeOptions o = opts(segment, -1);
  o.rbuc = true;
  return o;
}

// SplitMix64: tiny, fast, and identical on every platform.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint32_t u32() { return uint32_t(next() >> 32); }
  uint16_t u16() { return uint16_t(next() >> 48); }
  // Uniform in [0, n) (n > 0); the modulo bias is irrelevant for tests.
  uint32_t below(uint32_t n) { return uint32_t(next() % n); }
  // Uniform in [lo, hi].
  int range(int lo, int hi) { return lo + int(below(uint32_t(hi - lo + 1))); }

 private:
  uint64_t state_;
};

// A patch: row-major samples with a stride (>= width), in the codec's uint16 bit patterns.
struct Patch {
  std::string name;
  int width = 0, height = 0;
  size_t stride = 0;
  hfpac::SampleType type = hfpac::SampleType::UInt16;
  std::vector<uint16_t> samples;  // stride * height, padding filled with junk

  uint16_t at(int x, int y) const { return samples[size_t(y) * stride + size_t(x)]; }
  uint16_t& at(int x, int y) { return samples[size_t(y) * stride + size_t(x)]; }
  // The sample as a height: signed for Int16, unsigned for UInt16.
  int32_t height_at(int x, int y) const { return toHeight(at(x, y)); }
  int32_t toHeight(uint16_t v) const {
    return type == hfpac::SampleType::Int16 ? int32_t(int16_t(v)) : int32_t(v);
  }
  const uint16_t* data() const { return samples.data(); }
};

inline uint16_t fromHeight(hfpac::SampleType type, int32_t h) {
  if (type == hfpac::SampleType::Int16) {
    h = std::clamp(h, -32768, 32767);
    return uint16_t(int16_t(h));
  }
  return uint16_t(std::clamp(h, 0, 65535));
}

// Allocates a patch with `extra` junk samples of padding at the end of each row.
inline Patch makePatch(std::string name, int w, int h, hfpac::SampleType type, int extra = 0) {
  Patch p;
  p.name = std::move(name);
  p.width = w;
  p.height = h;
  p.stride = size_t(w) + size_t(extra);
  p.type = type;
  p.samples.assign(p.stride * size_t(h), 0);
  // Junk in the padding, so a codec reading past `width` gets caught by the round trip.
  Rng junk(0xBADC0FFEEull + uint64_t(w) * 131 + uint64_t(h));
  for (int y = 0; y < h; ++y)
    for (size_t x = size_t(w); x < p.stride; ++x) p.samples[size_t(y) * p.stride + x] = junk.u16();
  return p;
}

// Fills with f(x, y) -> height (clamped to the type's range).
template <class F>
inline Patch generate(std::string name, int w, int h, hfpac::SampleType type, F f, int extra = 0) {
  Patch p = makePatch(std::move(name), w, h, type, extra);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) p.at(x, y) = fromHeight(type, f(x, y));
  return p;
}

// ---- Patch kinds ----

// Smooth terrain: a few long-wavelength sinusoids around `mid` with amplitude `amp`.
inline Patch smooth(int w, int h, hfpac::SampleType type = hfpac::SampleType::UInt16,
                    uint64_t seed = 1, int mid = 20000, int amp = 3000, int extra = 0) {
  Rng rng(seed);
  double fx[3], fy[3], ph[3];
  for (int i = 0; i < 3; ++i) {
    // 0.002 .. 0.01 cycles per sample: wavelengths of 100 .. 500 samples.
    fx[i] = 0.002 + double(rng.below(1000)) * 0.000008;
    fy[i] = 0.002 + double(rng.below(1000)) * 0.000008;
    ph[i] = double(rng.below(6283)) * 0.001;
  }
  return generate("smooth", w, h, type,
                  [&](int x, int y) {
                    double v = 0;
                    for (int i = 0; i < 3; ++i) v += std::sin(fx[i] * x * 6.283 + fy[i] * y * 6.283 + ph[i]);
                    return int32_t(std::lround(mid + amp * v / 3.0));
                  },
                  extra);
}

// A quadratic polynomial surface (layer 1 can represent it exactly up to rounding).
inline Patch quadratic(int w, int h, hfpac::SampleType type = hfpac::SampleType::UInt16) {
  return generate("quadratic", w, h, type, [&](int x, int y) {
    const double u = double(x) / std::max(1, w - 1), v = double(y) / std::max(1, h - 1);
    const double base = type == hfpac::SampleType::Int16 ? -3000.0 : 30000.0;
    return int32_t(std::lround(base + 4000.0 * u * u - 2500.0 * v * v + 1500.0 * u * v + 800.0 * u -
                               300.0 * v));
  });
}

// Ramp + bumps: smooth large-scale shape with some local features and a little noise.
inline Patch rampBumps(int w, int h, hfpac::SampleType type, uint64_t seed, int extra = 0) {
  Rng noise(seed);
  return generate("rampBumps", w, h, type,
                  [&](int x, int y) {
                    const double r2a = double((x - w / 3) * (x - w / 3) + (y - h / 2) * (y - h / 2));
                    const double r2b = double((x - 2 * w / 3) * (x - 2 * w / 3) + (y - h / 4) * (y - h / 4));
                    const double v = 100.0 + 7.0 * x - 3.0 * y + 400.0 * std::exp(-r2a / 20.0) -
                                     250.0 * std::exp(-r2b / 8.0);
                    return int32_t(std::lround(v)) + noise.range(-2, 2);
                  },
                  extra);
}

// Uniform white noise over the whole 16-bit range.
inline Patch noise(int w, int h, hfpac::SampleType type = hfpac::SampleType::UInt16,
                   uint64_t seed = 7, int extra = 0) {
  Patch p = makePatch("noise", w, h, type, extra);
  Rng rng(seed);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) p.at(x, y) = rng.u16();
  return p;
}

// Noise in [lo, hi] (as heights).
inline Patch boundedNoise(int w, int h, hfpac::SampleType type, int lo, int hi, uint64_t seed) {
  Rng rng(seed);
  return generate("boundedNoise", w, h, type, [&](int, int) { return rng.range(lo, hi); });
}

// Cliffs between the lowest and the highest height of the type (0 / 65535 for UInt16,
// -32768 / 32767 for Int16), in slanted stripes.
inline Patch cliffs(int w, int h, hfpac::SampleType type = hfpac::SampleType::UInt16) {
  Patch p = makePatch("cliffs", w, h, type);
  const uint16_t lo = type == hfpac::SampleType::Int16 ? 0x8000 : 0;  // lowest height
  const uint16_t hi = type == hfpac::SampleType::Int16 ? 0x7FFF : 0xFFFF;  // highest height
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) p.at(x, y) = ((x / 3 + y / 7) % 2) ? hi : lo;
  return p;
}

// Checkerboard of lowest / highest heights with square cells of side `cell`.
inline Patch checkerboard(int w, int h, int cell, hfpac::SampleType type = hfpac::SampleType::UInt16) {
  Patch p = makePatch("checker" + std::to_string(cell), w, h, type);
  const uint16_t lo = type == hfpac::SampleType::Int16 ? 0x8000 : 0;
  const uint16_t hi = type == hfpac::SampleType::Int16 ? 0x7FFF : 0xFFFF;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) p.at(x, y) = ((x / cell + y / cell) % 2) ? hi : lo;
  return p;
}

inline Patch constant(int w, int h, uint16_t value, hfpac::SampleType type = hfpac::SampleType::UInt16,
                      int extra = 0) {
  Patch p = makePatch("constant", w, h, type, extra);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) p.at(x, y) = value;
  return p;
}

// Left half flat sea (0), right half a mountain with detail.
inline Patch seaMountain(int w, int h, hfpac::SampleType type = hfpac::SampleType::Int16, uint64_t seed = 3) {
  Rng rng(seed);
  return generate("seaMountain", w, h, type, [&](int x, int y) {
    if (x < w / 2) return 0;
    const double dx = x - 0.75 * w, dy = y - 0.5 * h;
    const double m = 2500.0 * std::exp(-(dx * dx + dy * dy) / (0.05 * w * w + 1.0));
    return int32_t(1 + std::lround(m + 30.0 * std::sin(x * 0.7) * std::cos(y * 0.3))) + rng.range(0, 5);
  });
}

// Smooth terrain with nodata holes: -32768 for Int16, 65535 for UInt16.
inline Patch withHoles(int w, int h, hfpac::SampleType type, uint64_t seed = 11) {
  Patch p = smooth(w, h, type, seed, type == hfpac::SampleType::Int16 ? 1500 : 1500, 800);
  p.name = "holes";
  const uint16_t nodata = type == hfpac::SampleType::Int16 ? uint16_t(0x8000) : uint16_t(0xFFFF);
  Rng rng(seed * 31 + 1);
  // A few blobs plus scattered single voids.
  for (int k = 0; k < 4; ++k) {
    const int cx = rng.range(0, w - 1), cy = rng.range(0, h - 1), r = rng.range(1, 6);
    for (int y = std::max(0, cy - r); y <= std::min(h - 1, cy + r); ++y)
      for (int x = std::max(0, cx - r); x <= std::min(w - 1, cx + r); ++x)
        if ((x - cx) * (x - cx) + (y - cy) * (y - cy) <= r * r) p.at(x, y) = nodata;
  }
  for (int k = 0; k < (w * h) / 50 + 1; ++k) p.at(rng.range(0, w - 1), rng.range(0, h - 1)) = nodata;
  return p;
}

// Signed terrain with negative heights (Dead-Sea-like depression next to hills).
inline Patch negative(int w, int h, uint64_t seed = 5) {
  Rng rng(seed);
  return generate("negative", w, h, hfpac::SampleType::Int16, [&](int x, int y) {
    return int32_t(std::lround(-420.0 + 3.0 * x - 2.0 * y + 150.0 * std::sin(x * 0.1) * std::cos(y * 0.13))) +
           rng.range(-3, 3);
  });
}

// Lidar quantised finer than its own step: a random walk on multiples of 13, plus 0 or 1 (HFAN's
// residuals then have a fine structure that its large token set, d = 8, codes better).
inline Patch lattice(int w, int h, uint64_t seed = 18) {
  Patch p = makePatch("lattice", w, h, hfpac::SampleType::UInt16);
  Rng rng(seed);
  for (int y = 0; y < h; ++y) {
    int32_t v = 30000 + int32_t(rng.below(200)) * 13;
    for (int x = 0; x < w; ++x) {
      v += (int32_t(rng.below(9)) - 4) * 13 + int32_t(rng.below(2));
      p.at(x, y) = uint16_t(std::clamp(v, 0, 65535));
    }
  }
  return p;
}

// The whole Int16 range: random extremes mixed with -32768 / 32767 rows.
inline Patch extremes(int w, int h, uint64_t seed = 9) {
  Rng rng(seed);
  return generate("extremes", w, h, hfpac::SampleType::Int16, [&](int x, int y) {
    if (y % 5 == 0) return (x % 2) ? 32767 : -32768;
    if (x % 7 == 0) return -32768;
    return rng.range(-32768, 32767);
  });
}

// ---- Helpers ----

inline std::vector<uint8_t> encodeOrDie(const Patch& p, const hfpac::EncodeOptions& o,
                                        hfpac::Status* status = nullptr,
                                        hfpac::EncodeStats* stats = nullptr) {
  std::vector<uint8_t> out;
  const hfpac::Status s = hfpac::encode(p.data(), p.stride, p.width, p.height, p.type, o, out, stats);
  if (status) *status = s;
  return out;
}

// Decodes into a fresh width x height buffer (stride = width). Returns the status.
inline hfpac::Status decodeTo(const std::vector<uint8_t>& stream, int w, int h, std::vector<uint16_t>& out,
                              hfpac::Layers layers = hfpac::Layers::All) {
  out.assign(size_t(w) * size_t(h), 0);
  return hfpac::decode(stream.data(), stream.size(), out.data(), size_t(w), out.size(), layers);
}

inline std::string optionsName(const hfpac::EncodeOptions& o) {
  return "seg" + std::to_string(o.segment) + "_bits" +
         (o.bits < 0 ? std::string("auto") : std::to_string(o.bits)) + (o.rbuc ? "_rbuc" : "");
}

inline std::string statusName(hfpac::Status s) {
  const char* m = hfpac::statusMessage(s);
  return std::to_string(int(s)) + " (" + (m ? m : "null") + ")";
}

}  // namespace hftest
