// measure.h - distances, height differences and height profiles between two points on an
// archive's terrain (issue 15: the viewer's measure tool; GL-free, unit-tested).
//
// Points are in the renderer's world frame: x east and y north in metres from the south-west
// sample (level-0 sample (col, row) at x = col spacingX, y = (height - 1 - row) spacingY), z the
// terrain height in metres (vertical exaggeration removed). For archives in a geographic CRS
// (kFlagGeographic with a geotransform) that frame is a local approximation, so horizontal
// distances are geodesics on the WGS84 ellipsoid (GeographicLib, Karney's algorithm) between the
// points' longitudes and latitudes; for projected archives they are planar distances in the
// world frame (the CRS's own metres).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <list>
#include <string>
#include <unordered_map>
#include <vector>

#include "archive/archive.h"

namespace hfr {

// World <-> level-0 samples <-> the archive's CRS (its geotransform, pixel-is-area: a sample's
// centre is at +0.5).
class GroundFrame {
 public:
  explicit GroundFrame(const hfa::Header& header);
  void toSample(double x, double y, double& col, double& row) const;
  // CRS coordinates (x, y; for geographic archives longitude, latitude in degrees).
  void toCrs(double x, double y, double& gx, double& gy) const;
  bool geographic() const { return geographic_; }

 private:
  double spacingX_ = 1, spacingY_ = 1, lastRow_ = 0;
  double gt_[6] = {0, 1, 0, 0, 0, 1};
  bool geographic_ = false;
};

struct Measurement {
  double horizontal = 0;  // metres over the ground (ellipsoidal or planar, see above)
  double spatial = 0;     // metres in 3D: sqrt(horizontal^2 + dz^2)
  double dz = 0;          // metres, b.z - a.z
  bool ellipsoidal = false;
};
Measurement measure(const GroundFrame& frame, const std::array<double, 3>& a, const std::array<double, 3>& b);

// Terrain heights at any world (x, y): bilinear between the finest level's samples, decoding
// the tiles it needs (the last `cachedTiles` kept). NaN outside the data, on nodata and where a
// tile is missing or corrupt (error() then says which). Not thread-safe.
class HeightSampler {
 public:
  explicit HeightSampler(const hfa::ArchiveReader& archive, size_t cachedTiles = 64);
  double at(double x, double y);
  const std::string& error() const { return error_; }

 private:
  double sample(int64_t col, int64_t row);  // one level-0 sample, NaN if none
  const std::vector<uint16_t>* tile(uint32_t tx, uint32_t ty);
  const hfa::ArchiveReader& archive_;
  const hfa::Header& header_;
  GroundFrame frame_;
  size_t capacity_;
  std::list<uint64_t> order_;  // most recently used first
  std::unordered_map<uint64_t, std::pair<std::vector<uint16_t>, std::list<uint64_t>::iterator>> tiles_;
  std::string error_;
};

// `count` (>= 2) points evenly spaced from a to b: their distance from a (metres, as measure()
// counts it) and the terrain height there (NaN where there is none).
struct Profile {
  std::vector<double> distance, height;
  double minHeight = 0, maxHeight = 0;  // over the finite heights (0, 0 when none)
};
Profile profile(HeightSampler& sampler, const GroundFrame& frame, const std::array<double, 3>& a,
                const std::array<double, 3>& b, int count);

}  // namespace hfr
