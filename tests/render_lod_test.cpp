// LOD selection (src/render/lod) on a synthetic pyramid whose per-tile errors come from the
// archive's own computeTileStats: error bound, balancing, corner values and crack-freeness of
// the whole selected mesh in level-0 coordinates.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "archive/archive.h"
#include "render/domino/domino.h"
#include "render/lod/lod.h"

namespace {

using Mat = std::array<double, 16>;  // column-major

Mat mul(const Mat& a, const Mat& b) {
  Mat r{};
  for (int c = 0; c < 4; ++c)
    for (int rr = 0; rr < 4; ++rr)
      for (int k = 0; k < 4; ++k) r[size_t(c * 4 + rr)] += a[size_t(k * 4 + rr)] * b[size_t(c * 4 + k)];
  return r;
}

Mat perspective(double fovy, double aspect, double zn, double zf) {
  const double f = 1.0 / std::tan(fovy / 2);
  Mat m{};
  m[0] = f / aspect;
  m[5] = f;
  m[10] = (zf + zn) / (zn - zf);
  m[11] = -1;
  m[14] = 2 * zf * zn / (zn - zf);
  return m;
}

Mat lookAt(std::array<double, 3> eye, std::array<double, 3> at, std::array<double, 3> up) {
  auto sub = [](auto a, auto b) { return std::array<double, 3>{a[0] - b[0], a[1] - b[1], a[2] - b[2]}; };
  auto norm = [](std::array<double, 3> v) {
    const double l = std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    return std::array<double, 3>{v[0] / l, v[1] / l, v[2] / l};
  };
  auto cross = [](auto a, auto b) {
    return std::array<double, 3>{a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
  };
  auto dot = [](auto a, auto b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; };
  const auto f = norm(sub(at, eye)), s = norm(cross(f, up)), u = cross(s, f);
  Mat m{};
  for (int i = 0; i < 3; ++i) {
    m[size_t(i * 4 + 0)] = s[size_t(i)];
    m[size_t(i * 4 + 1)] = u[size_t(i)];
    m[size_t(i * 4 + 2)] = -f[size_t(i)];
  }
  m[12] = -dot(s, eye);
  m[13] = -dot(u, eye);
  m[14] = dot(f, eye);
  m[15] = 1;
  return m;
}

// A 4-level pyramid of 17 x 17 tiles over 129 x 129 level-0 samples (hills + noise), with
// min/max and lodError from hfa::computeTileStats, 10 m spacing, heights in metres.
hfr::LodPyramid makePyramid() {
  const int n = 4, N = 1 << n, W = 8 * N + 1;
  std::vector<uint16_t> h0(size_t(W) * W);
  uint32_t lcg = 1;
  for (int y = 0; y < W; ++y)
    for (int x = 0; x < W; ++x) {
      lcg = lcg * 1664525u + 1013904223u;
      const double v = 150 * std::sin(x * 0.05) * std::cos(y * 0.07) + 8 * std::sin((x + 2 * y) * 0.13) +
                       double(lcg >> 31);  // a little roughness
      h0[size_t(y) * W + x] = uint16_t(int16_t(std::lround(v)));
    }
  hfr::LodPyramid pyr;
  pyr.tileLog = n;
  pyr.levels = 4;
  pyr.width = pyr.height = uint32_t(W);
  pyr.spacingX = pyr.spacingY = 10;
  std::vector<uint16_t> tile(size_t(N + 1) * (N + 1));
  for (int L = 0; L < pyr.levels; ++L)
    for (uint32_t ty = 0; ty < pyr.tilesY(L); ++ty)
      for (uint32_t tx = 0; tx < pyr.tilesX(L); ++tx) {
        for (int j = 0; j <= N; ++j)
          for (int i = 0; i <= N; ++i) {
            const int X = std::min(int(tx * N + uint32_t(i)) << L, W - 1);
            const int Y = std::min(int(ty * N + uint32_t(j)) << L, W - 1);
            tile[size_t(j) * (N + 1) + i] = h0[size_t(Y) * W + X];
          }
        hfa::TileStats st;
        hfa::computeTileStats(tile.data(), n, hfpac::SampleType::Int16, false, 0, st);
        hfr::LodTile t;
        t.level = L;
        t.x = tx;
        t.y = ty;
        t.minZ = float(st.minSample);
        t.maxZ = float(st.maxSample);
        t.lodError = st.lodError;
        pyr.tiles.push_back(t);
      }
  return pyr;
}

struct Box {
  long x0, y0, x1, y1;  // level-0 sample units
};
Box boxOf(const hfr::DrawTile& d, int n) {
  const long span = long(1) << (n + d.level);
  return {long(d.x) * span, long(d.y) * span, long(d.x + 1) * span, long(d.y + 1) * span};
}
bool onBorder(const Box& b, long X, long Y) {
  const bool inX = X >= b.x0 && X <= b.x1, inY = Y >= b.y0 && Y <= b.y1;
  return inX && inY && (X == b.x0 || X == b.x1 || Y == b.y0 || Y == b.y1);
}

}  // namespace

TEST(Lod, SelectionRespectsTauAndIsCrackFree) {
  const hfr::LodPyramid pyr = makePyramid();
  const int n = pyr.tileLog;
  const hfr::DominoPatterns patterns(n);
  const hfr::LodSelector selector(pyr);
  const double ext = 128 * 10.0;
  struct View {
    std::array<double, 3> eye, at;
    double tau;
  };
  const View views[] = {
      {{ext / 2, ext / 2, 20000}, {ext / 2, ext / 2 + 1, 0}, 1.0},  // top-down, high
      {{-200, -200, 1500}, {ext / 2, ext / 2, 0}, 1.0},             // oblique from a corner
      {{100, 600, 1200}, {ext, 600, 0}, 4.0},                       // low, across the terrain
      {{ext / 2, ext / 2, 1300}, {ext, ext, 0}, 4.0},               // inside the height range
      {{-6000, ext / 2, 6000}, {ext / 2, ext / 2, 0}, 2.0},         // far, oblique
      {{-200, 300, 1100}, {ext, ext, 0}, 16.0},                     // coarse, near the ground
      {{300, 300, 1000}, {900, 900, 0}, 0.25},
      {{40, 40, 220}, {ext, ext, 0}, 8.0},                          // near the ground: all levels
      {{40, 40, 220}, {ext, ext, 0}, 24.0},
      {{-100, ext / 2, 300}, {ext, ext / 2, 0}, 12.0},
      {{-100, ext / 2, 300}, {ext, ext / 2, 0}, 0.5},
      {{ext / 2, -50, 250}, {ext / 2, ext, -100}, 2.0},
  };
  std::set<int> levelsSeen, centresSeen;
  size_t transitions = 0, mixedCorners = 0;
  for (const View& v : views) {
    hfr::LodCamera cam;
    cam.eye = v.eye;
    cam.viewProj = mul(perspective(1.0, 16.0 / 9, 1, 1e5), lookAt(v.eye, v.at, {0, 0, 1}));
    cam.viewportHeight = 1080;
    cam.tau = v.tau;
    hfr::LodStats stats;
    const auto draw = selector.select(cam, patterns, &stats);
    ASSERT_FALSE(draw.empty());
    EXPECT_EQ(stats.cornerClamps, 0u);
    const double ppu = hfr::LodSelector::pixelsPerUnit(cam);
    EXPECT_NEAR(ppu, 540.0 / std::tan(0.5), 1e-6);

    // Error bound, recomputed here: lodError + deviation at the nearest box point.
    for (const auto& d : draw) {
      levelsSeen.insert(d.level);
      centresSeen.insert(d.centre);
      const auto b = selector.bounds(d.tile);
      double d2 = 0;
      for (int i = 0; i < 3; ++i) {
        const double lo = b[size_t(i)], hi = b[size_t(i + 3)], e = v.eye[size_t(i)];
        const double dd = e < lo ? lo - e : e > hi ? e - hi : 0;
        d2 += dd * dd;
      }
      const double err = selector.error(d.tile, d.centre);
      const double px = err == 0 ? 0 : err * ppu / std::sqrt(d2);
      EXPECT_FALSE(d.forced);
      EXPECT_LE(px, v.tau) << "tile L" << d.level << " " << d.x << "," << d.y;
      if (d.centre < n) {  // the coarsest acceptable: one step coarser would exceed tau
        const double coarser = selector.error(d.tile, d.centre + 1);
        if (coarser > 0 && d2 > 0) {
          EXPECT_GT(coarser * ppu / std::sqrt(d2), v.tau);
        }
      }
      EXPECT_EQ(d.pattern, patterns.patternIndex(d.centre, d.corner.data()));
      for (int c : d.corner) {
        EXPECT_GE(c, 0);
        EXPECT_LE(c, d.centre);
        if (c < d.centre) ++transitions;
      }
    }

    // Corner values, balance, no overlaps.
    for (size_t i = 0; i < draw.size(); ++i) {
      const Box bi = boxOf(draw[i], n);
      for (int c = 0; c < 4; ++c) {
        const long X = (c == 1 || c == 2) ? bi.x1 : bi.x0, Y = c >= 2 ? bi.y1 : bi.y0;
        int minGlobal = 1 << 20, minL = 99, maxL = -1;
        for (const auto& o : draw) {
          const Box bo = boxOf(o, n);
          if (!onBorder(bo, X, Y)) continue;
          minL = std::min(minL, o.level);
          maxL = std::max(maxL, o.level);
          const bool isCorner = (X == bo.x0 || X == bo.x1) && (Y == bo.y0 || Y == bo.y1);
          if (isCorner) minGlobal = std::min(minGlobal, o.level + o.centre);
        }
        ASSERT_LE(maxL - minL, 1) << "unbalanced at " << X << "," << Y;
        const int global = draw[i].level + draw[i].corner[size_t(c)];
        if (minL == maxL) {
          EXPECT_EQ(global, minGlobal) << "corner = min over the tiles sharing it";
        } else {
          ++mixedCorners;
          EXPECT_EQ(global, maxL) << "level boundary: the coarser tile's ldr 0";
          EXPECT_LE(global, minGlobal);
        }
      }
      for (size_t j = i + 1; j < draw.size(); ++j) {
        const Box bj = boxOf(draw[j], n);
        const bool overlap = bi.x0 < bj.x1 && bj.x0 < bi.x1 && bi.y0 < bj.y1 && bj.y0 < bi.y1;
        ASSERT_FALSE(overlap);
      }
    }

    // Crack-freeness: every border vertex of a tile that lies on another tile's border is a
    // border vertex of that tile too (no gap, no T-junction), in level-0 coordinates.
    std::vector<std::set<std::pair<long, long>>> border(draw.size());
    const int N = 1 << n;
    for (size_t i = 0; i < draw.size(); ++i) {
      const Box b = boxOf(draw[i], n);
      for (const auto& t : patterns.triangles(draw[i].pattern))
        for (const auto& p : t)
          if (p.x == 0 || p.y == 0 || p.x == N || p.y == N)
            border[i].insert({b.x0 + (long(p.x) << draw[i].level), b.y0 + (long(p.y) << draw[i].level)});
    }
    size_t shared = 0;
    for (size_t i = 0; i < draw.size(); ++i)
      for (size_t j = 0; j < draw.size(); ++j) {
        if (i == j) continue;
        const Box bj = boxOf(draw[j], n);
        for (const auto& v2 : border[i])
          if (onBorder(bj, v2.first, v2.second)) {
            ++shared;
            ASSERT_TRUE(border[j].count(v2)) << "crack: vertex " << v2.first << "," << v2.second
                                             << " of L" << draw[i].level << " tile missing on L"
                                             << draw[j].level << " tile " << draw[j].x << "," << draw[j].y;
          }
      }
    EXPECT_GT(shared, 0u);
  }
  // The views must exercise what is being tested.
  EXPECT_GE(levelsSeen.size(), 3u);
  EXPECT_GE(centresSeen.size(), 3u);
  EXPECT_GT(transitions, 0u);
  EXPECT_GT(mixedCorners, 0u);
}

TEST(Lod, CullingDropsTilesBehindTheCamera) {
  const hfr::LodPyramid pyr = makePyramid();
  const hfr::DominoPatterns patterns(pyr.tileLog);
  const hfr::LodSelector selector(pyr);
  hfr::LodCamera cam;
  cam.eye = {640, 640, 3000};
  cam.viewProj = mul(perspective(0.6, 1.0, 1, 1e5), lookAt(cam.eye, {640, 640 + 1e4, 2500}, {0, 0, 1}));
  hfr::LodStats stats;
  const auto draw = selector.select(cam, patterns, &stats);
  EXPECT_GT(stats.culled, 0u);
  for (const auto& d : draw) EXPECT_GE(selector.bounds(d.tile)[4], 640.0);  // nothing behind
  cam.cull = false;
  EXPECT_GT(selector.select(cam, patterns).size(), draw.size());
}
