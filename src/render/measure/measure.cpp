// measure.cpp - see measure.h.
#include "render/measure/measure.h"

#include <GeographicLib/Geodesic.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

namespace hfr {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}

GroundFrame::GroundFrame(const hfa::Header& h) {
  spacingX_ = h.spacingX > 0 ? h.spacingX : 1;
  spacingY_ = h.spacingY > 0 ? h.spacingY : 1;
  lastRow_ = h.height > 0 ? double(h.height - 1) : 0;
  std::copy(h.geoTransform, h.geoTransform + 6, gt_);
  geographic_ = (h.flags & hfa::kFlagGeographic) && (h.flags & hfa::kFlagGeoTransform);
}

void GroundFrame::toSample(double x, double y, double& col, double& row) const {
  col = x / spacingX_;
  row = lastRow_ - y / spacingY_;
}

void GroundFrame::toCrs(double x, double y, double& gx, double& gy) const {
  double col, row;
  toSample(x, y, col, row);
  gx = gt_[0] + (col + 0.5) * gt_[1] + (row + 0.5) * gt_[2];
  gy = gt_[3] + (col + 0.5) * gt_[4] + (row + 0.5) * gt_[5];
}

Measurement measure(const GroundFrame& frame, const std::array<double, 3>& a, const std::array<double, 3>& b) {
  Measurement m;
  m.dz = b[2] - a[2];
  if (frame.geographic()) {
    double lon1, lat1, lon2, lat2;
    frame.toCrs(a[0], a[1], lon1, lat1);
    frame.toCrs(b[0], b[1], lon2, lat2);
    if (std::abs(lat1) <= 90 && std::abs(lat2) <= 90) {
      GeographicLib::Geodesic::WGS84().Inverse(lat1, lon1, lat2, lon2, m.horizontal);
      m.ellipsoidal = true;
    }
  }
  if (!m.ellipsoidal) m.horizontal = std::hypot(b[0] - a[0], b[1] - a[1]);
  m.spatial = std::hypot(m.horizontal, m.dz);
  return m;
}

HeightSampler::HeightSampler(const hfa::ArchiveReader& archive, size_t cachedTiles)
    : archive_(archive), header_(archive.header()), frame_(archive.header()), capacity_(std::max<size_t>(cachedTiles, 4)) {}

const std::vector<uint16_t>* HeightSampler::tile(uint32_t tx, uint32_t ty) {
  const uint64_t key = (uint64_t(ty) << 32) | tx;
  auto it = tiles_.find(key);
  if (it != tiles_.end()) {
    order_.splice(order_.begin(), order_, it->second.second);
    return &it->second.first;
  }
  const long t = archive_.find(0, tx, ty);
  if (t < 0) return nullptr;
  const size_t p = size_t(header_.tileSize());
  std::vector<uint16_t> samples(p * p);
  std::string e;
  if (!archive_.decodeTile(size_t(t), samples.data(), e)) {
    error_ = e;
    return nullptr;
  }
  if (tiles_.size() >= capacity_) {
    tiles_.erase(order_.back());
    order_.pop_back();
  }
  order_.push_front(key);
  auto inserted = tiles_.emplace(key, std::make_pair(std::move(samples), order_.begin()));
  return &inserted.first->second.first;
}

double HeightSampler::sample(int64_t col, int64_t row) {
  if (col < 0 || row < 0 || col >= int64_t(header_.width) || row >= int64_t(header_.height)) return kNaN;
  const int64_t n = int64_t(header_.tileSize()) - 1;
  // The tile that holds (col, row); a sample on a tile edge is also in the tile before it (tiles
  // share their edges), which serves when the first is missing.
  const int64_t tx = std::min<int64_t>(col / n, int64_t(header_.tilesX(0)) - 1);
  const int64_t ty = std::min<int64_t>(row / n, int64_t(header_.tilesY(0)) - 1);
  const std::vector<uint16_t>* s = nullptr;
  int64_t i = 0, j = 0;
  for (int64_t dy = 0; dy <= 1 && !s; ++dy)
    for (int64_t dx = 0; dx <= 1 && !s; ++dx) {
      const int64_t x = tx - dx, y = ty - dy;
      i = col - x * n;
      j = row - y * n;
      if (x < 0 || y < 0 || i > n || j > n) continue;
      s = tile(uint32_t(x), uint32_t(y));
    }
  if (!s) return kNaN;
  const uint16_t v = (*s)[size_t(j) * size_t(n + 1) + size_t(i)];
  if ((header_.flags & hfa::kFlagNodataKept) && v == header_.nodata) return kNaN;
  const double raw = header_.sampleType == hfpac::SampleType::Int16 ? double(int16_t(v)) : double(v);
  return header_.verticalOffset + header_.verticalScale * raw;
}

double HeightSampler::at(double x, double y) {
  double col, row;
  frame_.toSample(x, y, col, row);
  if (!(col >= 0 && row >= 0 && col <= double(header_.width) - 1 && row <= double(header_.height) - 1)) return kNaN;
  const int64_t c0 = std::min<int64_t>(int64_t(col), int64_t(header_.width) - 2 < 0 ? 0 : int64_t(header_.width) - 2);
  const int64_t r0 = std::min<int64_t>(int64_t(row), int64_t(header_.height) - 2 < 0 ? 0 : int64_t(header_.height) - 2);
  const double fx = col - double(c0), fy = row - double(r0);
  // Corners with no weight are not read: a point on a sample line needs nothing beyond it.
  double h = 0;
  for (int dy = 0; dy <= 1; ++dy)
    for (int dx = 0; dx <= 1; ++dx) {
      const double w = (dx ? fx : 1 - fx) * (dy ? fy : 1 - fy);
      if (w > 0) h += w * sample(c0 + dx, r0 + dy);
    }
  return h;
}

Profile profile(HeightSampler& sampler, const GroundFrame& frame, const std::array<double, 3>& a,
                const std::array<double, 3>& b, int count) {
  Profile p;
  count = std::max(count, 2);
  bool any = false;
  for (int k = 0; k < count; ++k) {
    const double t = double(k) / double(count - 1);
    const std::array<double, 3> q{a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1]), 0.0};
    const double h = sampler.at(q[0], q[1]);
    p.distance.push_back(measure(frame, a, q).horizontal);
    p.height.push_back(h);
    if (std::isfinite(h)) {
      p.minHeight = any ? std::min(p.minHeight, h) : h;
      p.maxHeight = any ? std::max(p.maxHeight, h) : h;
      any = true;
    }
  }
  return p;
}

}  // namespace hfr
