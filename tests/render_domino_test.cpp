// Domino Tiling patterns (src/render/domino): coverage, triangle shape, winding, the edge rule
// (crack-freeness within and across pyramid levels) and the archive's diagonal rule.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "archive/archive.h"
#include "render/domino/domino.h"

using hfr::DominoPatterns;
using hfr::DominoTriangle;
using hfr::DominoVertex;

namespace {

struct Values {
  int c;
  int corner[4];
};

// Every valid (centre, corners) combination, or a deterministic sample of `limit` of them plus
// the uniform and the most extreme ones.
std::vector<Values> valueSpace(int n, size_t limit) {
  std::vector<Values> all;
  for (int c = 0; c <= n; ++c)
    for (int a = 0; a <= c; ++a)
      for (int b = 0; b <= c; ++b)
        for (int d = 0; d <= c; ++d)
          for (int e = 0; e <= c; ++e) all.push_back({c, {a, b, d, e}});
  if (limit == 0 || all.size() <= limit) return all;
  std::vector<Values> some;
  for (int c = 0; c <= n; ++c) {
    some.push_back({c, {c, c, c, c}});
    some.push_back({c, {0, 0, 0, 0}});
    some.push_back({c, {0, c, 0, c}});
    some.push_back({c, {0, c, c, c}});
  }
  std::mt19937 rng(12345);
  std::uniform_int_distribution<size_t> pick(0, all.size() - 1);
  while (some.size() < limit) some.push_back(all[pick(rng)]);
  return some;
}

bool rightIsosceles(const DominoTriangle& t) {
  for (int i = 0; i < 3; ++i) {
    const DominoVertex a = t[size_t(i)], b = t[size_t((i + 1) % 3)], c = t[size_t((i + 2) % 3)];
    const long ux = b.x - a.x, uy = b.y - a.y, vx = c.x - a.x, vy = c.y - a.y;
    if (ux * vx + uy * vy == 0 && ux * ux + uy * uy == vx * vx + vy * vy) return true;
  }
  return false;
}

// Checks one pattern: exact single coverage, shapes, winding, vertex grid, no T-junction
// inside, and the edge rule on all four edges. Returns false after the first failure.
void checkPattern(const DominoPatterns& P, const Values& v) {
  const int n = P.tileLog(), N = 1 << n;
  const auto tris = P.triangles(P.patternIndex(v.c, v.corner));
  ASSERT_FALSE(tris.empty());
  SCOPED_TRACE("n=" + std::to_string(n) + " c=" + std::to_string(v.c) + " corners " +
               std::to_string(v.corner[0]) + std::to_string(v.corner[1]) +
               std::to_string(v.corner[2]) + std::to_string(v.corner[3]));
  long long area2 = 0;
  int finest = std::min(std::min(v.c, n - 1), *std::min_element(v.corner, v.corner + 4));
  std::vector<uint8_t> isVertex(size_t(N + 1) * (N + 1), 0);
  for (const auto& t : tris) {
    const long long a2 = hfr::signedArea2(t[0], t[1], t[2]);
    ASSERT_GT(a2, 0) << "winding";
    ASSERT_TRUE(rightIsosceles(t));
    area2 += a2;
    for (const auto& p : t) {
      ASSERT_EQ(p.x % (1 << finest), 0);
      ASSERT_EQ(p.y % (1 << finest), 0);
      isVertex[size_t(p.y) * (N + 1) + p.x] = 1;
    }
  }
  ASSERT_EQ(area2, 2LL * N * N);
  // Coverage: 4 sample points per unit cell, one in each quarter cut by the cell's diagonals;
  // every triangle edge lies on x, y, x+y or x-y = integer, so no sample is ever on an edge.
  std::vector<uint8_t> hits(size_t(N) * N * 4, 0);
  static const int off[4][2] = {{1, 2}, {3, 2}, {2, 1}, {2, 3}};
  for (const auto& t : tris) {
    const int x0 = std::min({t[0].x, t[1].x, t[2].x}), x1 = std::max({t[0].x, t[1].x, t[2].x});
    const int y0 = std::min({t[0].y, t[1].y, t[2].y}), y1 = std::max({t[0].y, t[1].y, t[2].y});
    for (int cy = y0; cy < y1; ++cy)
      for (int cx = x0; cx < x1; ++cx)
        for (int q = 0; q < 4; ++q) {
          const long px = 4L * cx + off[q][0], py = 4L * cy + off[q][1];
          bool in = true;
          for (int e = 0; e < 3 && in; ++e) {
            const DominoVertex a = t[size_t(e)], b = t[size_t((e + 1) % 3)];
            in = (4L * b.x - 4L * a.x) * (py - 4L * a.y) - (4L * b.y - 4L * a.y) * (px - 4L * a.x) > 0;
          }
          if (in) ++hits[(size_t(cy) * size_t(N) + size_t(cx)) * 4 + size_t(q)];
        }
  }
  for (size_t i = 0; i < hits.size(); ++i) ASSERT_EQ(hits[i], 1) << "cell " << i / 4 % size_t(N) << "," << i / 4 / size_t(N);
  // No vertex in the interior of a triangle edge (conforming mesh, no internal T-junction).
  for (const auto& t : tris)
    for (int e = 0; e < 3; ++e) {
      const DominoVertex a = t[size_t(e)], b = t[size_t((e + 1) % 3)];
      const int dx = (b.x > a.x) - (b.x < a.x), dy = (b.y > a.y) - (b.y < a.y);
      for (int x = a.x + dx, y = a.y + dy; x != b.x || y != b.y; x += dx, y += dy)
        ASSERT_FALSE(isVertex[size_t(y) * (N + 1) + size_t(x)]) << "T-junction at " << x << "," << y;
    }
  // Edge rule.
  for (int e = 0; e < 4; ++e)
    for (int t = 0; t <= N; ++t) {
      const DominoVertex p = hfr::edgePoint(n, e, t);
      ASSERT_EQ(bool(isVertex[size_t(p.y) * (N + 1) + p.x]),
                hfr::edgeHasVertex(n, v.corner[e], v.corner[(e + 1) % 4], t))
          << "edge " << e << " t " << t;
    }
}

// The vertices of a pattern on the tile border, in tile-local coordinates.
std::set<std::pair<int, int>> borderVertices(const DominoPatterns& P, uint32_t index) {
  const int N = 1 << P.tileLog();
  std::set<std::pair<int, int>> out;
  for (const auto& t : P.triangles(index))
    for (const auto& p : t)
      if (p.x == 0 || p.y == 0 || p.x == N || p.y == N) out.insert({p.x, p.y});
  return out;
}

}  // namespace

TEST(Domino, Counts) {
  const DominoPatterns P(7);
  EXPECT_EQ(P.tileSize(), 129);
  EXPECT_EQ(P.validPatterns(), 8772u);   // sum over c = 0..7 of (c + 1)^4
  EXPECT_EQ(P.storedPatterns(), 4676u);  // c = 7 shares the c = 6 geometry
  EXPECT_EQ(P.tableSize(), 32768u);      // 8^5
  for (int k = 0; k < 7; ++k)  // a uniform ldr-k pattern has 2 (128 / 2^k)^2 triangles
    EXPECT_EQ(P.triangles(P.basicPattern(k)).size(), size_t(2) << (2 * (7 - k)));
  EXPECT_EQ(P.triangles(P.basicPattern(7)).size(), 8u);  // = ldr 6 (edges keep midpoints)
  RecordProperty("vertices", int(P.vertices().size()));
  RecordProperty("vertex_bytes", int(P.vertexBytes()));
  std::printf("p=129: %zu valid, %zu stored patterns, %zu vertices, %zu vertex bytes, %zu table bytes\n",
              P.validPatterns(), P.storedPatterns(), P.vertices().size(), P.vertexBytes(), P.tableBytes());
  EXPECT_THROW(DominoPatterns(1), std::invalid_argument);
  EXPECT_THROW(DominoPatterns(9), std::invalid_argument);
}

TEST(Domino, EveryPatternTilesExactlyOnceSmallSizes) {
  for (int n : {2, 3, 4, 5}) {
    const DominoPatterns P(n);
    for (const Values& v : valueSpace(n, 0)) {
      checkPattern(P, v);
      if (HasFatalFailure()) return;
    }
  }
}

TEST(Domino, SampledPatternsTileExactlyOnce129) {
  const DominoPatterns P(7);
  for (const Values& v : valueSpace(7, 160)) {
    checkPattern(P, v);
    if (HasFatalFailure()) return;
  }
}

// (b) Both tiles of a shared edge see the same two corner values; the edge's vertices must then
// be the same from both sides: collect every edge of every pattern by (axis, value at the lower
// end, value at the upper end) and require one vertex set per key.
TEST(Domino, SharedEdgesAgreeFromBothSides) {
  for (int n : {4, 5, 7}) {
    const DominoPatterns P(n);
    const int N = 1 << n;
    std::map<std::tuple<int, int, int>, std::vector<int>> seen;
    size_t compared = 0;
    for (const Values& v : valueSpace(n, n == 7 ? 400 : 0)) {
      const auto border = borderVertices(P, P.patternIndex(v.c, v.corner));
      // (axis, lower-end corner, upper-end corner, fixed coordinate)
      const int edges[4][4] = {{0, v.corner[0], v.corner[1], 0}, {0, v.corner[3], v.corner[2], N},
                               {1, v.corner[0], v.corner[3], 0}, {1, v.corner[1], v.corner[2], N}};
      for (const auto& e : edges) {
        std::vector<int> pos;
        for (const auto& p : border)
          if (e[0] == 0 ? p.second == e[3] : p.first == e[3]) pos.push_back(e[0] == 0 ? p.first : p.second);
        std::sort(pos.begin(), pos.end());
        auto it = seen.find({0, e[1], e[2]});  // horizontal and vertical edges must agree too
        if (it == seen.end()) {
          seen[{0, e[1], e[2]}] = pos;
        } else {
          ++compared;
          ASSERT_EQ(it->second, pos) << "n=" << n << " c=" << v.c << " ends " << e[1] << "," << e[2];
        }
      }
    }
    // Reversal symmetry (a tile's top edge is its upper neighbour's bottom edge read the other way).
    for (const auto& kv : seen) {
      auto rev = seen.find({0, std::get<2>(kv.first), std::get<1>(kv.first)});
      if (rev == seen.end()) continue;
      std::vector<int> mirrored;
      for (int t : rev->second) mirrored.push_back(N - t);
      std::sort(mirrored.begin(), mirrored.end());
      EXPECT_EQ(kv.second, mirrored);
    }
    EXPECT_GT(compared, 0u);
  }
}

// (c) A coarse tile (level 1) next to two fine tiles (level 0): where levels meet, the corner
// values are the coarse tile's ldr 0 = the fine tiles' ldr 1 (LodSelector's rule); every other
// value is free. The fine tiles' vertices on the shared edge, in level-0 units, must be exactly
// the coarse tile's, for every side.
TEST(Domino, CoarseTileMeetsFineTiles) {
  for (int n : {2, 4, 5}) {
    const DominoPatterns P(n);
    const int N = 1 << n;
    std::mt19937 rng(7u + unsigned(n));
    for (int side = 0; side < 4; ++side)
      for (int iter = 0; iter < 300; ++iter) {
        // Coarse tile B covers level-0 [N*2, N*4]^2 (level 1, position (1, 1)).
        std::uniform_int_distribution<int> val(0, n);
        int cB = val(rng);
        int cornerB[4];
        for (int& x : cornerB) x = std::uniform_int_distribution<int>(0, cB)(rng);
        cornerB[side] = cornerB[(side + 1) % 4] = 0;
        const auto borderB = borderVertices(P, P.patternIndex(cB, cornerB));
        std::set<std::pair<int, int>> coarse, fine;
        const DominoVertex e0 = hfr::edgePoint(n, side, 0), e1 = hfr::edgePoint(n, side, N);
        for (const auto& p : borderB) {
          const bool onSide = (e0.x == e1.x) ? p.first == e0.x : p.second == e0.y;
          if (onSide) coarse.insert({2 * N + 2 * p.first, 2 * N + 2 * p.second});
        }
        // The two fine tiles across that side (level 0), each with its corners on the shared
        // side set to 1 and the others free.
        const int ox = side == 1 ? 4 : side == 3 ? 1 : 2, oy = side == 2 ? 4 : side == 0 ? 1 : 2;
        for (int k = 0; k < 2; ++k) {
          const int fx = (side == 0 || side == 2) ? ox + k : ox;
          const int fy = (side == 1 || side == 3) ? oy + k : oy;
          const int cA = std::uniform_int_distribution<int>(1, n)(rng);
          int cornerA[4];
          for (int& x : cornerA) x = std::uniform_int_distribution<int>(0, cA)(rng);
          const int opposite = (side + 2) % 4;  // the fine tile's edge facing B
          cornerA[opposite] = cornerA[(opposite + 1) % 4] = 1;
          for (const auto& p : borderVertices(P, P.patternIndex(cA, cornerA))) {
            const int X = fx * N + p.first, Y = fy * N + p.second;
            const bool onSide = (e0.x == e1.x) ? X == 2 * N + 2 * e0.x : Y == 2 * N + 2 * e0.y;
            if (onSide) fine.insert({X, Y});
          }
        }
        ASSERT_EQ(coarse, fine) << "n=" << n << " side " << side;
      }
  }
}

// (e) A uniform pattern is the archive's step-k mesh: legs of 2^k along the axes, and the
// diagonal of square (i, j) runs (i, j)-(i+1, j+1) when i + j is even. Cross-checked against
// hfa::lodErrorAtStep on random heights (a different diagonal would change the maximum).
TEST(Domino, UniformPatternsUseTheArchiveDiagonals) {
  for (int n : {3, 5, 7}) {
    const DominoPatterns P(n);
    const int N = 1 << n, p = N + 1;
    std::mt19937 rng(99u + unsigned(n));
    std::vector<uint16_t> samples(size_t(p) * p);
    for (auto& s : samples) s = uint16_t(int16_t(std::uniform_int_distribution<int>(-3000, 3000)(rng)));
    for (int k = 0; k < n; ++k) {
      const int s = 1 << k;
      double worst = 0;
      for (const auto& t : P.triangles(P.basicPattern(k))) {
        int x0 = std::min({t[0].x, t[1].x, t[2].x}), y0 = std::min({t[0].y, t[1].y, t[2].y});
        ASSERT_EQ(std::max({t[0].x, t[1].x, t[2].x}) - x0, s);
        ASSERT_EQ(std::max({t[0].y, t[1].y, t[2].y}) - y0, s);
        const int i = x0 / s, j = y0 / s;
        // The hypotenuse is the edge whose endpoints differ in both coordinates.
        for (int e = 0; e < 3; ++e) {
          const DominoVertex a = t[size_t(e)], b = t[size_t((e + 1) % 3)];
          if (a.x == b.x || a.y == b.y) continue;
          const bool mainDiag = (b.x - a.x) * (b.y - a.y) > 0;
          ASSERT_EQ(mainDiag, ((i + j) & 1) == 0) << "k=" << k << " square " << i << "," << j;
        }
        // Interpolate over the triangle at every sample inside or on it.
        const double ax = t[0].x, ay = t[0].y;
        const double det = double(hfr::signedArea2(t[0], t[1], t[2]));
        auto h = [&](int x, int y) { return double(int16_t(samples[size_t(y) * p + x])); };
        for (int y = y0; y <= y0 + s; ++y)
          for (int x = x0; x <= x0 + s; ++x) {
            const double l1 = ((x - ax) * (t[2].y - ay) - (y - ay) * (t[2].x - ax)) / det;
            const double l2 = ((t[1].x - ax) * (y - ay) - (t[1].y - ay) * (x - ax)) / det;
            const double l0 = 1 - l1 - l2;
            if (l0 < -1e-12 || l1 < -1e-12 || l2 < -1e-12) continue;
            const double interp = l0 * h(t[0].x, t[0].y) + l1 * h(t[1].x, t[1].y) + l2 * h(t[2].x, t[2].y);
            worst = std::max(worst, std::fabs(h(x, y) - interp));
          }
      }
      const double archive =
          double(hfa::lodErrorAtStep(samples.data(), n, hfpac::SampleType::Int16, k));
      EXPECT_NEAR(worst, archive, 1e-3 * (1 + archive)) << "n=" << n << " k=" << k;
    }
  }
}
