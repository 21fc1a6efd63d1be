// domino.h - Domino Tiling: data-independent triangle-strip patterns for one square tile
// (design and crack-freeness argument: docs/rendering.md). Pure C++17, no GL.
//
// A tile has p x p samples, p = 2^n + 1 (2 <= n <= 8), local integer grid coordinates
// (x, y) in [0, N]^2 with N = 2^n (x = column, y = row, as in docs/archive.md). Every pattern is
// a conforming 4-8 (longest-edge bisection) mesh of right isosceles triangles whose square-level
// diagonals follow the archive's rule (square (i, j) of side s uses (i s, j s)-((i+1) s, (j+1) s)
// when i + j is even, else the other diagonal), so lodError[k] describes it.
//
// A pattern is selected by 5 "level of detail reduction" values (ldr; ldr k keeps the vertices
// whose coordinates are multiples of 2^k): the centre value c and the corner values
// corner[0..3] at (0,0), (N,0), (N,N), (0,N), each 0 <= corner[i] <= c <= n. Edge e runs from
// corner e to corner (e+1) % 4. Contract (checked when the set is built; a violation throws
// std::logic_error, it is a bug):
// - the vertices on edge e are exactly edgeHasVertex(n, corner[e], corner[(e+1)%4], t) for the
//   edge parameter t (distance from corner e), a function of the edge's two corner values only,
//   symmetric under reversal (edgeHasVertex(n, a, b, t) == edgeHasVertex(n, b, a, N - t)), and
//   edgeHasVertex(n, k, k, t) is "t is a multiple of 2^min(k, n-1)";
// - the interior is at least as fine as the uniform ldr-c mesh (every triangle belongs to the
//   4-8 hierarchy at or below step c, so lodError[c] bounds the pattern's error);
// - every edge keeps its midpoint (corner values are clamped to n-1 on edges): ldr n therefore
//   draws the same geometry as ldr n-1 and shares its pattern storage.
// - triangles have positive signed area in (x, y) (x right, y down: clockwise on screen when
//   y points down, counter-clockwise in a y-up frame); the strip is read with GL's rule (odd
//   triangles swap their first two vertices) and joined with repeated-vertex degenerates.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace hfr {

constexpr int kDominoMinTileLog = 2, kDominoMaxTileLog = 8;

struct DominoVertex {
  uint16_t x = 0, y = 0;  // tile-local grid coordinates, 0..N
};
inline bool operator==(DominoVertex a, DominoVertex b) { return a.x == b.x && a.y == b.y; }
inline bool operator!=(DominoVertex a, DominoVertex b) { return !(a == b); }

// One glDrawArrays(GL_TRIANGLE_STRIP, first, count) range of DominoPatterns::vertices().
struct PatternRange {
  uint32_t first = 0, count = 0;
};

using DominoTriangle = std::array<DominoVertex, 3>;

// Point (x, y) of edge e at parameter t (distance from corner e along the edge).
DominoVertex edgePoint(int tileLog, int edge, int t);

// The edge rule (see the contract above). Precomputed tables; any tileLog in range.
bool edgeHasVertex(int tileLog, int a, int b, int t);

class DominoPatterns {
 public:
  // Builds every pattern of a tile with p = 2^tileLog + 1. Throws std::invalid_argument for a
  // tileLog outside [kDominoMinTileLog, kDominoMaxTileLog].
  explicit DominoPatterns(int tileLog = 7);

  int tileLog() const { return n_; }
  int tileSize() const { return (1 << n_) + 1; }
  int maxLdr() const { return n_; }

  // Dense index over (c, corner[0..3]) in [0, n]^5 (mixed radix n+1, c most significant).
  // Entries with a corner above c are unused (count 0); requires 0 <= corner <= c <= n.
  uint32_t patternIndex(int centre, const int corner[4]) const;
  uint32_t basicPattern(int ldr) const;  // uniform: all corners == centre == ldr
  size_t tableSize() const { return table_.size(); }
  size_t validPatterns() const { return valid_; }    // entries with corner <= c
  size_t storedPatterns() const { return stored_; }  // distinct geometries in vertices()

  const std::vector<DominoVertex>& vertices() const { return vertices_; }
  const std::vector<PatternRange>& table() const { return table_; }
  PatternRange range(uint32_t index) const { return table_.at(index); }
  size_t vertexBytes() const { return vertices_.size() * sizeof(DominoVertex); }
  size_t tableBytes() const { return table_.size() * sizeof(PatternRange); }

  // The triangles of one pattern, in strip order, decoded from its strip (degenerates dropped,
  // orientation restored): what the GPU draws. For tests and tools.
  std::vector<DominoTriangle> triangles(uint32_t index) const;

 private:
  int n_;
  size_t valid_ = 0, stored_ = 0;
  std::vector<DominoVertex> vertices_;
  std::vector<PatternRange> table_;
};

// Decodes GL_TRIANGLE_STRIP vertices into triangles with GL's orientation rule, dropping
// triangles with a repeated vertex.
std::vector<DominoTriangle> decodeStrip(const DominoVertex* v, size_t count);

// Twice the signed area of (a, b, c) in (x, y): > 0 for the patterns' winding.
inline long long signedArea2(DominoVertex a, DominoVertex b, DominoVertex c) {
  return (long long)(b.x - a.x) * (c.y - a.y) - (long long)(b.y - a.y) * (c.x - a.x);
}

}  // namespace hfr
