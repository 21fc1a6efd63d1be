// lod.h - GL-free LOD selection for the Domino Tiling renderer (docs/rendering.md, "LOD").
//
// Input: the tile pyramid as plain structs (no archive dependency: the viewer copies what it
// needs from hfa::ArchiveReader: level, x, y, min/max height and lodError scaled to world units)
// and a camera (eye, view-projection, viewport height, tau in pixels).
// Output: the tiles to draw, each with its centre ldr, its four corner ldrs (tile-local units)
// and its Domino pattern index. Contract, for every select() result (tests check each point):
// - projected error of every drawn tile <= tau, unless `forced` is set: the tile is a leaf of
//   the pyramid that is still too coarse, or (with `usable`) a finer tile it would need is not
//   usable yet, so it is drawn coarser than tau asks;
// - tiles sharing a point differ by at most one pyramid level, also while tiles are missing
//   (then the finer side is coarsened, never the balance skipped);
// - corner values: at a point where all tiles have the same level, min over those tiles of their
//   centre ldr (in units of that level); at a point where levels L and L+1 meet, the
//   finest value the coarser tile can draw (its ldr 0, i.e. the finer tile's ldr 1). Always
//   0 <= corner <= centre, so every value selects an existing pattern (cornerClamps == 0);
// - together with the Domino edge rule this makes every shared edge identical from both sides
//   (no cracks, no T-junctions), also between levels.
// Hysteresis (optional LodHistory): a node refined in the previous selection stays refined, and
// a tile keeps its finer centre ldr, until the projected error falls below factor * tau. It only
// ever keeps tiles finer than tau needs, so the bound above is unchanged.
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
  bool forced = false;            // pixels > tau: no finer tile exists, or it is not usable
};

struct LodStats {
  size_t visited = 0, culled = 0, balanceSplits = 0;
  size_t cornerClamps = 0;  // corners outside [0, centre] that had to be clamped (must stay 0)
  size_t blockedSplits = 0;  // refinements or balance splits skipped for unusable children
  // Balance with unusable tiles (0 on the full pyramid): finer tiles merged into an ancestor
  // because the coarser neighbour could not be split, and centre ldrs raised to 1 next to a
  // coarser neighbour that could not be split.
  size_t coarsened = 0, raisedCentres = 0;
  size_t keptRefined = 0;    // nodes refined only by hysteresis (error between h * tau and tau)
};

// The previous selection, for hysteresis between frames: which nodes were refined and the centre
// ldr each drawn tile had. select() reads it and replaces it with the new selection. One history
// per stream of selections (the renderer keeps one for the wanted and one for the drawn
// selection). Indexed by tile: valid for selectors over the same pyramid tiles.
class LodHistory {
 public:
  explicit LodHistory(double h = 0.8) : factor(h) {}
  // h in (0, 1]: unrefine (or coarsen the centre ldr) only when the projected error is below
  // h * tau. 1 = no hysteresis.
  double factor = 0.8;

  void clear();
  // Makes this history `other`'s (the factor stays): O(entries) when both already have entries
  // for the same tiles, so a caller can save and restore one every frame.
  void assign(const LodHistory& other);
  bool empty() const { return marked_.empty(); }
  bool refined(size_t tile) const { return tile < refined_.size() && refined_[tile]; }
  int centre(size_t tile) const { return tile < centre_.size() ? centre_[tile] : -1; }  // -1: not drawn

 private:
  friend class LodSelector;
  std::vector<uint8_t> refined_;  // per tile
  std::vector<int8_t> centre_;    // per tile, -1 when not drawn
  std::vector<size_t> marked_;    // tiles with an entry (clear() resets only those)
};

struct LodSelectOptions {
  // One entry per tile: tiles with usable[i] == 0 are treated as absent (not resident yet).
  const std::vector<uint8_t>* usable = nullptr;
  LodHistory* history = nullptr;  // read and rewritten: hysteresis against the previous call
  // Out (appended, sorted, unique): unusable tiles whose absence blocked a balance split, so
  // that the selection had to be coarsened (the renderer requests them first).
  std::vector<size_t>* blocked = nullptr;
};

// Eye-to-box distance (0 inside); box = min x, y, z, max x, y, z.
double distanceToBox(const std::array<double, 3>& eye, const std::array<double, 6>& box);
// True when the box is entirely outside the frustum of the column-major view-projection m.
bool boxOutside(const std::array<double, 16>& m, const std::array<double, 6>& box);

class LodSelector {
 public:
  // Keeps a reference to `pyramid` (it must outlive the selector). O(tiles).
  explicit LodSelector(const LodPyramid& pyramid);

  // `usable` (optional, one entry per tile): tiles with usable[i] == 0 are treated as absent
  // (not resident in the atlas yet). A node is refined only when all its existing children are
  // usable, so a missing tile is drawn as its usable ancestor; top-level tiles must be usable
  // to be drawn. A balance split that would need an unusable child is replaced by coarsening
  // the finer side (merging it into its ancestor one level finer than the unsplittable tile,
  // iterated to a fixed point), or, for the "centre >= 1" rule, by raising the finer tile's
  // centre to 1; such tiles are `forced` when that exceeds tau. So the result is always
  // balanced and crack-free; with every tile usable (or usable == nullptr) it is the full
  // selection.
  std::vector<DrawTile> select(const LodCamera& camera, const DominoPatterns& patterns,
                               LodStats* stats, const LodSelectOptions& options) const;
  std::vector<DrawTile> select(const LodCamera& camera, const DominoPatterns& patterns,
                               LodStats* stats = nullptr,
                               const std::vector<uint8_t>* usable = nullptr) const {
    LodSelectOptions o;
    o.usable = usable;
    return select(camera, patterns, stats, o);
  }

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
  const LodPyramid& pyramid() const { return pyr_; }
  long parent(size_t tile) const { return parent_[tile]; }  // -1 for the top level
  // Child c (x + (c & 1), y + (c >> 1) one level finer) or -1 when absent.
  long child(size_t tile, int c) const { return children_[tile][size_t(c)]; }

 private:
  const std::vector<LodTile>& tiles() const { return pyr_.tiles; }
  const LodPyramid& pyr_;
  std::unordered_map<uint64_t, size_t> index_;
  std::vector<double> deviation_;
  std::vector<int32_t> parent_;
  std::vector<std::array<int32_t, 4>> children_;
};

}  // namespace hfr
