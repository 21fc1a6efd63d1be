// pyramid.cpp - streaming pyramid, push-pull void fill, banded source reading.
#include "pyramid.h"

#include <algorithm>
#include <cmath>

namespace hfpack {

Pyramid::Pyramid(uint32_t width, uint32_t height, int tileLog, int levels, Emit emit)
    : width_(width), height_(height), p_((1 << tileLog) + 1), emit_(std::move(emit)) {
  hfa::Header h;
  h.width = width;
  h.height = height;
  h.tileLog = tileLog;
  levels_.resize(size_t(levels));
  for (int l = 0; l < levels; ++l) {
    Level& lv = levels_[size_t(l)];
    lv.tilesX = h.tilesX(l);
    lv.tilesY = h.tilesY(l);
    lv.paddedWidth = lv.tilesX * uint32_t(p_ - 1) + 1;
    lv.samples.assign(size_t(p_) * lv.paddedWidth, 0);
    lv.state.assign(size_t(p_) * lv.paddedWidth, 0);
  }
}

void Pyramid::startAt(uint32_t y0) {
  y_ = y0;
  for (int l = 0; l < int(levels_.size()); ++l) {
    Level& lv = levels_[size_t(l)];
    lv.tileRow = uint32_t(uint64_t(y0) / (uint64_t(p_ - 1) << l));
    lv.nextSlot = 0;
  }
}

hfa::TileEntry tileEntry(const Tile& t, hfa::TileStats& stats, hfa::Codec codec) {
  hfa::TileEntry e;
  e.level = uint8_t(t.level);
  e.codec = codec;
  e.x = t.x;
  e.y = t.y;
  e.flags = uint16_t((t.filled ? hfa::kTileFilled : 0) | (stats.hasNodata ? hfa::kTileHasNodata : 0));
  e.minSample = stats.minSample;
  e.maxSample = stats.maxSample;
  e.filled = t.filled;
  e.lodError = std::move(stats.lodError);
  return e;
}

uint64_t Pyramid::maxTiles() const {
  uint64_t n = 0;
  for (const Level& lv : levels_) n += uint64_t(lv.tilesX) * lv.tilesY;
  return n;
}

void Pyramid::levelRow(int level, const uint16_t* row, const uint8_t* state, int slot) {
  Level& lv = levels_[size_t(level)];
  uint16_t* s = lv.samples.data() + size_t(slot) * lv.paddedWidth;
  uint8_t* st = lv.state.data() + size_t(slot) * lv.paddedWidth;
  for (uint32_t i = 0; i < lv.paddedWidth; ++i) {
    const uint32_t x = std::min<uint64_t>(uint64_t(i) << level, width_ - 1);
    s[i] = row[x];
    st[i] = state[x];
  }
}

bool Pyramid::emitRow(int level) {
  Level& lv = levels_[size_t(level)];
  std::vector<Tile> tiles;
  const int p = p_;
  for (uint32_t tx = 0; tx < lv.tilesX; ++tx) {
    Tile t;
    t.level = level;
    t.x = tx;
    t.y = lv.tileRow;
    t.samples.resize(size_t(p) * p);
    t.state.resize(size_t(p) * p);
    bool any_valid = false;
    for (int r = 0; r < p; ++r) {
      const size_t src = size_t(r) * lv.paddedWidth + size_t(tx) * (p - 1);
      std::copy_n(lv.samples.data() + src, p, t.samples.data() + size_t(r) * p);
      std::copy_n(lv.state.data() + src, p, t.state.data() + size_t(r) * p);
    }
    for (uint8_t s : t.state) {
      any_valid = any_valid || s == kValid;
      t.filled += s == kFilled;
      t.hasNodata = t.hasNodata || s == kNodata;
    }
    if (any_valid) tiles.push_back(std::move(t));
  }
  // The last row becomes the first row of the next tile row (shared edge).
  std::copy_n(lv.samples.data() + size_t(p - 1) * lv.paddedWidth, lv.paddedWidth, lv.samples.data());
  std::copy_n(lv.state.data() + size_t(p - 1) * lv.paddedWidth, lv.paddedWidth, lv.state.data());
  lv.nextSlot = 1;
  ++lv.tileRow;
  return tiles.empty() || emit_(tiles);
}

bool Pyramid::pushRow(const uint16_t* row, const uint8_t* state) {
  const uint32_t y = y_++;
  for (int l = 0; l < int(levels_.size()); ++l) {
    Level& lv = levels_[size_t(l)];
    if (lv.tileRow >= lv.tilesY || (y & ((1u << l) - 1)) != 0) continue;
    levelRow(l, row, state, lv.nextSlot++);
    if (lv.nextSlot == p_ && !emitRow(l)) return false;
  }
  if (y + 1 == height_) {
    lastRow_.assign(row, row + width_);
    lastState_.assign(state, state + width_);
  }
  return true;
}

bool Pyramid::finish() {
  for (int l = 0; l < int(levels_.size()); ++l) {
    Level& lv = levels_[size_t(l)];
    if (lv.tileRow >= lv.tilesY) continue;
    // Rows beyond the extent repeat level-0 row H-1 (clamp).
    while (lv.nextSlot < p_) levelRow(l, lastRow_.data(), lastState_.data(), lv.nextSlot++);
    if (!emitRow(l)) return false;
  }
  return true;
}

bool fillVoids(uint16_t* samples, uint8_t* state, int w, int h, hfpac::SampleType type, bool quantised) {
  // Level 0 of the pyramid: values and weights (1 valid, 0 void).
  struct Grid {
    int w, h;
    std::vector<double> v, wt;
  };
  std::vector<Grid> pyr(1);
  pyr.reserve(40);  // log2(2^30) + slack: no reallocation, so references stay valid
  Grid& g0 = pyr[0];
  g0.w = w;
  g0.h = h;
  g0.v.resize(size_t(w) * h);
  g0.wt.resize(size_t(w) * h);
  bool any = false;
  for (size_t i = 0; i < g0.v.size(); ++i) {
    const bool valid = state[i] != kNodata;
    g0.wt[i] = valid ? 1.0 : 0.0;
    g0.v[i] = valid ? (type == hfpac::SampleType::Int16 ? double(int16_t(samples[i])) : double(samples[i])) : 0.0;
    any = any || valid;
  }
  if (!any) return false;
  // Push: average the valid samples of 2 x 2 blocks; weight = min(1, sum of weights).
  while (pyr.back().w > 1 || pyr.back().h > 1) {
    const Grid& f = pyr.back();
    Grid c;
    c.w = (f.w + 1) / 2;
    c.h = (f.h + 1) / 2;
    c.v.assign(size_t(c.w) * c.h, 0.0);
    c.wt.assign(size_t(c.w) * c.h, 0.0);
    for (int y = 0; y < c.h; ++y)
      for (int x = 0; x < c.w; ++x) {
        double sv = 0, sw = 0;
        for (int dy = 0; dy < 2; ++dy)
          for (int dx = 0; dx < 2; ++dx) {
            const int fx = 2 * x + dx, fy = 2 * y + dy;
            if (fx >= f.w || fy >= f.h) continue;
            const size_t i = size_t(fy) * f.w + fx;
            sv += f.v[i] * f.wt[i];
            sw += f.wt[i];
          }
        const size_t o = size_t(y) * c.w + x;
        c.v[o] = sw > 0 ? sv / sw : 0.0;
        c.wt[o] = std::min(1.0, sw);
      }
    pyr.push_back(std::move(c));
  }
  // Pull: blend each level with the bilinear upsampling of the (already complete) coarser one.
  for (size_t l = pyr.size() - 1; l-- > 0;) {
    Grid& f = pyr[l];
    const Grid& c = pyr[l + 1];
    for (int y = 0; y < f.h; ++y)
      for (int x = 0; x < f.w; ++x) {
        const size_t i = size_t(y) * f.w + x;
        if (f.wt[i] >= 1.0) continue;
        const double cx = std::min(std::max((x - 0.5) / 2.0, 0.0), double(c.w - 1));
        const double cy = std::min(std::max((y - 0.5) / 2.0, 0.0), double(c.h - 1));
        const int x0 = int(cx), y0 = int(cy);
        const int x1 = std::min(x0 + 1, c.w - 1), y1 = std::min(y0 + 1, c.h - 1);
        const double fx = cx - x0, fy = cy - y0;
        const double up = (c.v[size_t(y0) * c.w + x0] * (1 - fx) + c.v[size_t(y0) * c.w + x1] * fx) * (1 - fy) +
                          (c.v[size_t(y1) * c.w + x0] * (1 - fx) + c.v[size_t(y1) * c.w + x1] * fx) * fy;
        f.v[i] = f.wt[i] * f.v[i] + (1.0 - f.wt[i]) * up;
        f.wt[i] = 1.0;
      }
  }
  const double lo = type == hfpac::SampleType::Int16 ? -32767.0 : 0.0;  // never the usual nodata
  const double hi = type == hfpac::SampleType::Int16 ? 32767.0 : (quantised ? 65534.0 : 65535.0);
  for (size_t i = 0; i < g0.v.size(); ++i) {
    if (state[i] != kNodata) continue;
    const double v = std::min(std::max(std::nearbyint(g0.v[i]), lo), hi);
    samples[i] = type == hfpac::SampleType::Int16 ? uint16_t(int16_t(v)) : uint16_t(v);
    state[i] = kFilled;
  }
  return true;
}

bool streamSource(demio::DemSource& source, bool fill, Pyramid& pyramid, const Progress& progress,
                  StreamStats& stats, std::string& error, const StreamRange& range) {
  const int w = source.width(), h = source.height();
  const int band_rows = std::max(16, std::min(256, int((size_t(8) << 20) / size_t(w))));
  const int halo = fill ? band_rows / 2 : 0;
  const int first = range.first, last = range.last < 0 ? h - 1 : range.last;
  std::vector<uint16_t> rows(size_t(band_rows + 2 * halo) * size_t(w));
  std::vector<uint8_t> state(rows.size());
  const hfpac::SampleType type = source.info().type;
  const bool quantised = source.info().quant.applied;
  uint16_t last_valid = 0;
  bool have_last = false;
  const int band0 = first / band_rows * band_rows;  // the first band read (0 for the whole stream)
  bool looked_back = band0 == 0;
  // Samples of rows [y0, y0 + n) in `st` (stride w) that StreamStats counts and equal `what`.
  auto countRows = [&](const uint8_t* st, int y0, int n, uint8_t what) {
    uint64_t c = 0;
    for (int r = 0; r < n; ++r) {
      int c0 = 0, c1 = w;
      if (range.counted) range.counted(y0 + r, c0, c1);
      const uint8_t* s = st + size_t(r) * size_t(w);
      for (int x = c0; x < c1; ++x) c += s[x] == what;
    }
    return c;
  };
  for (int y0 = band0; y0 <= last; y0 += band_rows) {
    const int n = std::min(band_rows, h - y0);
    const size_t count = size_t(n) * size_t(w);
    if (!source.readRows(y0, n, rows.data(), state.data(), error)) return false;
    uint16_t* band = rows.data();
    uint8_t* band_state = state.data();
    const uint64_t valid = uint64_t(std::count(state.begin(), state.begin() + long(count), uint8_t(kValid)));
    stats.valid += range.counted ? countRows(state.data(), y0, n, kValid) : valid;
    if (fill && valid < count) {
      // Re-read the band with a halo of rows on both sides and fill the window.
      const int a = std::max(0, y0 - halo), b = std::min(h, y0 + n + halo);
      if (!source.readRows(a, b - a, rows.data(), state.data(), error)) return false;
      band = rows.data() + size_t(y0 - a) * size_t(w);
      band_state = state.data() + size_t(y0 - a) * size_t(w);
      if (!fillVoids(rows.data(), state.data(), w, b - a, type, quantised)) {
        // No valid sample anywhere near: use the last valid value seen (such tiles are usually
        // absent anyway: a tile needs a valid sample to exist). A range that starts below row 0
        // reads the bands above it back, last first, until it finds that value.
        if (!have_last && !looked_back) {
          looked_back = true;
          std::vector<uint16_t> back(size_t(band_rows) * size_t(w));
          std::vector<uint8_t> back_state(back.size());
          for (int b0 = band0 - band_rows; b0 >= 0 && !have_last; b0 -= band_rows) {
            if (!source.readRows(b0, band_rows, back.data(), back_state.data(), error)) return false;
            for (size_t i = back.size(); i-- > 0;)
              if (back_state[i] == kValid) {
                last_valid = back[i];
                have_last = true;
                break;
              }
          }
        }
        for (size_t i = 0; i < count; ++i) {
          band[i] = have_last ? last_valid : (type == hfpac::SampleType::Int16 ? 0x0000 : 0);
          band_state[i] = kFilled;
        }
      }
      if (range.counted) stats.filled += countRows(band_state, y0, n, kFilled);
      else
        for (size_t i = 0; i < count; ++i) stats.filled += band_state[i] == kFilled;
    }
    for (size_t i = count; i-- > 0;)
      if (band_state[i] == kValid) {
        last_valid = band[i];
        have_last = true;
        break;
      }
    for (int r = std::max(0, first - y0); r < n && y0 + r <= last; ++r) {
      const uint16_t* row = band + size_t(r) * size_t(w);
      const uint8_t* row_state = band_state + size_t(r) * size_t(w);
      if (range.tap) range.tap(y0 + r, row, row_state);
      if (!pyramid.pushRow(row, row_state)) {
        if (error.empty()) error = "interrupted";
        return false;
      }
    }
    if (progress && !progress(double(std::min(y0 + n, last + 1) - band0) / (last + 1 - band0), "")) {
      error = "interrupted";
      return false;
    }
  }
  if (last == h - 1 && !pyramid.finish()) {
    if (error.empty()) error = "interrupted";
    return false;
  }
  return true;
}

}  // namespace hfpack
