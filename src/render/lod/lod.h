// lod.h - GL-free LOD selection for the Domino Tiling renderer (docs/rendering.md, "LOD").
//
// Input: the tile pyramid as plain structs (no archive dependency: the viewer copies what it
// needs from hfa::ArchiveReader: level, x, y, min/max height and lodError scaled to world units)
// and a camera (eye, view-projection, viewport height, tau in pixels).
// Output: the tiles to draw, each with its centre ldr, its four corner ldrs (tile-local units)
// and its Domino pattern index. Contract, for every select() result (tests check each point):
// - projected error of every drawn tile <= tau, unless the tile is a leaf of the pyramid that is
//   still too coarse (no finer tile exists; `forced` is set);
// - tiles sharing a point differ by at most one pyramid level;
// - corner values: at a point where all tiles have the same level, min over those tiles of their
//   centre ldr (in units of that level); at a point where levels L and L+1 meet, the
//   finest value the coarser tile can draw (its ldr 0, i.e. the finer tile's ldr 1). Always
//   0 <= corner <= centre, so every value selects an existing pattern;
// - together with the Domino edge rule this makes every shared edge identical from both sides
//   (no cracks, no T-junctions), also between levels.
// World frame: level-0 sample (X, Y) (column, row) lies at (originX + X spacingX, originY +
// Y spacingY, height); z is up. Matrices are column-major (GL / GLM): clip = M * (x, y, z, 1),
// clip z in [-w, w].
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "render/domino/domino.h"

namespace hfr {

struct LodTile {
  int level = 0;
  uint32_t x = 0, y = 0;
  float minZ = 0, maxZ = 0;      // world heights (offset + scale * min/max sample)
  std::vector<float> lodError;  // n + 1 values in world units (archive lodError * scale)
};

struct LodPyramid {
  int tileLog = 7;                 // n: p = 2^n + 1
  int levels = 1;
  uint32_t width = 0, height = 0;  // level-0 extent in samples (tilesX/Y as in the archive)
  double originX = 0, originY = 0, spacingX = 1, spacingY = 1;
  std::vector<LodTile> tiles;      // any order; absent positions simply have no entry

  uint32_t tilesX(int level) const;
  uint32_t tilesY(int level) const;
};

struct LodCamera {
  std::array<double, 3> eye{0, 0, 0};
  std::array<double, 16> viewProj{};  // column-major
  double viewportHeight = 1080;       // pixels
  double tau = 1.0;                   // screen-space error bound, pixels
  bool cull = true;                   // frustum culling with min/max heights
};

struct DrawTile {
  size_t tile = 0;  // index into LodPyramid::tiles
  int level = 0;
  uint32_t x = 0, y = 0;
  int centre = 0;                 // ldr, tile-local
  std::array<int, 4> corner{};    // (0,0), (N,0), (N,N), (0,N); tile-local ldr
  uint32_t pattern = 0;           // DominoPatterns::patternIndex(centre, corner)
  double error = 0;               // world error of the drawn centre ldr (lodError + finer levels)
  double pixels = 0;              // that error projected at the tile's nearest distance
  bool forced = false;            // pixels > tau, but no finer tile exists
};

struct LodStats {
  size_t visited = 0, culled = 0, balanceSplits = 0;
  size_t cornerClamps = 0;  // corners outside [0, centre] that had to be clamped (must stay 0)
  size_t blockedSplits = 0;  // refinements or balance splits skipped for unusable children
};

class LodSelector {
 public:
  // Keeps a reference to `pyramid` (it must outlive the selector). O(tiles).
  explicit LodSelector(const LodPyramid& pyramid);

  // `usable` (optional, one entry per tile): tiles with usable[i] == 0 are treated as absent
  // (not resident in the atlas yet). A node is refined only when all its existing children are
  // usable, so a missing tile is drawn as its usable ancestor; top-level tiles must be usable
  // to be drawn. A balance split that would need an unusable child is skipped (the selection
  // is then transiently unbalanced and LodStats::cornerClamps may be > 0 until the children
  // arrive); with every tile usable (or usable == nullptr) the result is the full selection.
  std::vector<DrawTile> select(const LodCamera& camera, const DominoPatterns& patterns,
                               LodStats* stats = nullptr,
                               const std::vector<uint8_t>* usable = nullptr) const;

  // Pixels per world unit of error at distance 1 (viewport height / 2 times the projection's
  // y scale, recovered from the view-projection as |row 1| / |row 3| of its 3x3 part).
  static double pixelsPerUnit(const LodCamera& camera);
  // World bounding box of a tile: min x, min y, min z, max x, max y, max z.
  std::array<double, 6> bounds(size_t tile) const;
  // Error (world units) of drawing tile at centre ldr k: lodError[k] plus the deviation of its
  // level from the finest data below it (max over children of their lodError[1] + deviation).
  double error(size_t tile, int k) const {
    return double(tiles()[tile].lodError[size_t(k)]) + deviation_[tile];
  }
  long find(int level, uint32_t x, uint32_t y) const;  // index in tiles or -1

 private:
  const std::vector<LodTile>& tiles() const { return pyr_.tiles; }
  const LodPyramid& pyr_;
  std::unordered_map<uint64_t, size_t> index_;
  std::vector<double> deviation_;
};

}  // namespace hfr
