// lod.cpp - quadtree LOD selection, level balancing and Domino corner values.
#include "render/lod/lod.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>

namespace hfr {
namespace {

uint64_t key(int level, uint32_t x, uint32_t y) {
  return (uint64_t(uint32_t(level)) << 56) ^ (uint64_t(x) << 28) ^ uint64_t(y);
}

double distanceToBox(const std::array<double, 3>& e, const std::array<double, 6>& b) {
  double d2 = 0;
  for (int i = 0; i < 3; ++i) {
    const double lo = b[size_t(i)], hi = b[size_t(i + 3)];
    const double d = e[size_t(i)] < lo ? lo - e[size_t(i)] : (e[size_t(i)] > hi ? e[size_t(i)] - hi : 0.0);
    d2 += d * d;
  }
  return std::sqrt(d2);
}

// Gribb-Hartmann: plane i = row 3 +- row (i / 2); a box is outside when its vertex furthest
// along a plane's normal is behind it.
bool boxOutside(const std::array<double, 16>& m, const std::array<double, 6>& b) {
  auto row = [&](int r, int c) { return m[size_t(c * 4 + r)]; };
  for (int i = 0; i < 6; ++i) {
    const int r = i / 2;
    const double s = (i & 1) ? -1.0 : 1.0;
    double pl[4];
    for (int c = 0; c < 4; ++c) pl[c] = row(3, c) + s * row(r, c);
    double v = pl[3];
    for (int a = 0; a < 3; ++a) v += pl[a] * (pl[a] >= 0 ? b[size_t(a + 3)] : b[size_t(a)]);
    if (v < 0) return true;
  }
  return false;
}

}  // namespace

uint32_t LodPyramid::tilesX(int level) const {
  const uint64_t span = uint64_t(1) << (tileLog + level);
  return width <= 1 ? 1u : uint32_t(std::max<uint64_t>(1, (uint64_t(width) - 1 + span - 1) / span));
}
uint32_t LodPyramid::tilesY(int level) const {
  const uint64_t span = uint64_t(1) << (tileLog + level);
  return height <= 1 ? 1u : uint32_t(std::max<uint64_t>(1, (uint64_t(height) - 1 + span - 1) / span));
}

LodSelector::LodSelector(const LodPyramid& pyramid) : pyr_(pyramid) {
  const auto& t = tiles();
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i].lodError.size() != size_t(pyr_.tileLog) + 1)
      throw std::invalid_argument("lod: tile lodError must have tileLog + 1 values");
    index_[key(t[i].level, t[i].x, t[i].y)] = i;
  }
  // Deviation of each level from the finest data, bottom-up: a tile's ldr-0 surface is its
  // children's ldr-1 surface (same vertices, same diagonals), so drawing the parent at ldr 0
  // costs at most max(child lodError[1] + child deviation) (triangle inequality).
  deviation_.assign(t.size(), 0.0);
  std::vector<size_t> order(t.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return t[a].level < t[b].level; });
  for (size_t i : order) {
    if (t[i].level == 0) continue;
    double dev = 0;
    for (uint32_t c = 0; c < 4; ++c) {
      const long ch = find(t[i].level - 1, 2 * t[i].x + (c & 1), 2 * t[i].y + (c >> 1));
      if (ch >= 0) dev = std::max(dev, double(t[size_t(ch)].lodError[1]) + deviation_[size_t(ch)]);
    }
    deviation_[i] = dev;
  }
}

long LodSelector::find(int level, uint32_t x, uint32_t y) const {
  auto it = index_.find(key(level, x, y));
  return it == index_.end() ? -1 : long(it->second);
}

std::array<double, 6> LodSelector::bounds(size_t i) const {
  const LodTile& t = tiles()[i];
  const double span = double(uint64_t(1) << (pyr_.tileLog + t.level));
  const double x0 = pyr_.originX + double(t.x) * span * pyr_.spacingX;
  const double x1 = pyr_.originX + double(t.x + 1) * span * pyr_.spacingX;
  const double y0 = pyr_.originY + double(t.y) * span * pyr_.spacingY;
  const double y1 = pyr_.originY + double(t.y + 1) * span * pyr_.spacingY;
  return {std::min(x0, x1), std::min(y0, y1), double(t.minZ),
          std::max(x0, x1), std::max(y0, y1), double(t.maxZ)};
}

double LodSelector::pixelsPerUnit(const LodCamera& cam) {
  const auto& m = cam.viewProj;
  auto len3 = [&](int r) {
    return std::sqrt(m[size_t(r)] * m[size_t(r)] + m[size_t(4 + r)] * m[size_t(4 + r)] +
                     m[size_t(8 + r)] * m[size_t(8 + r)]);
  };
  const double w = len3(3);
  return w > 0 ? 0.5 * cam.viewportHeight * len3(1) / w : 0.0;
}

std::vector<DrawTile> LodSelector::select(const LodCamera& cam, const DominoPatterns& patterns,
                                          LodStats* stats,
                                          const std::vector<uint8_t>* usable) const {
  if (usable && usable->size() != tiles().size())
    throw std::invalid_argument("lod: usable must have one entry per tile");
  auto isUsable = [&](size_t t) { return !usable || (*usable)[t] != 0; };
  if (patterns.tileLog() != pyr_.tileLog)
    throw std::invalid_argument("lod: patterns and pyramid have different tile sizes");
  LodStats st;
  const int n = pyr_.tileLog;
  const double ppu = pixelsPerUnit(cam);
  const double inf = std::numeric_limits<double>::infinity();

  // Screen-space error of `error` world units drawn at the tile's nearest point.
  auto project = [&](size_t tile, double error) {
    if (error <= 0) return 0.0;
    const double d = distanceToBox(cam.eye, bounds(tile));
    return d > 0 ? error * ppu / d : inf;
  };
  auto visible = [&](size_t tile) {
    ++st.visited;
    if (cam.cull && boxOutside(cam.viewProj, bounds(tile))) {
      ++st.culled;
      return false;
    }
    return true;
  };
  // The drawn ldr: the coarsest k whose projected error is within tau (0 when even that fails).
  auto makeLeaf = [&](size_t tile) {
    const LodTile& t = tiles()[tile];
    DrawTile d;
    d.tile = tile;
    d.level = t.level;
    d.x = t.x;
    d.y = t.y;
    d.centre = 0;
    for (int k = n; k >= 0; --k)
      if (project(tile, error(tile, k)) <= cam.tau) {
        d.centre = k;
        break;
      }
    d.error = error(tile, d.centre);
    d.pixels = project(tile, d.error);
    d.forced = d.pixels > cam.tau;
    return d;
  };
  auto children = [&](const DrawTile& d, std::vector<size_t>& out) {
    out.clear();
    if (d.level == 0) return;
    for (uint32_t c = 0; c < 4; ++c) {
      const long ch = find(d.level - 1, 2 * d.x + (c & 1), 2 * d.y + (c >> 1));
      if (ch >= 0) out.push_back(size_t(ch));
    }
    // All or nothing: refining into a partial set of children would leave holes.
    for (size_t ch : out)
      if (!isUsable(ch)) {
        out.clear();
        ++st.blockedSplits;
        return;
      }
  };
  auto splittable = [&](const DrawTile& d) {
    std::vector<size_t> k;
    children(d, k);
    return !k.empty();
  };

  // 1. Quadtree from the top level: refine while the level itself is too coarse (even ldr 0
  //    exceeds tau) and finer tiles exist.
  std::map<uint64_t, DrawTile> leaves;  // ordered: deterministic output
  std::vector<size_t> todo, kids;
  const int top = pyr_.levels - 1;
  for (uint32_t y = 0; y < pyr_.tilesY(top); ++y)
    for (uint32_t x = 0; x < pyr_.tilesX(top); ++x) {
      const long t = find(top, x, y);
      if (t >= 0 && isUsable(size_t(t))) todo.push_back(size_t(t));
    }
  while (!todo.empty()) {
    const size_t t = todo.back();
    todo.pop_back();
    if (!visible(t)) continue;
    DrawTile d = makeLeaf(t);
    if (d.forced) {
      children(d, kids);
      if (!kids.empty()) {
        todo.insert(todo.end(), kids.begin(), kids.end());
        continue;
      }
    }
    leaves[key(d.level, d.x, d.y)] = d;
  }

  // 2. Balance: tiles sharing a point differ by at most one level, and where levels L and L+1
  //    meet the level-L tile has centre >= 1 (its corner there will be 1). Otherwise split the
  //    coarser tile; its children are acceptable too (smaller boxes are never nearer).
  auto coveringLeaf = [&](int level, long x, long y) -> const DrawTile* {
    if (x < 0 || y < 0) return nullptr;
    for (int l = level; l <= top; ++l) {
      auto it = leaves.find(key(l, uint32_t(x >> (l - level)), uint32_t(y >> (l - level))));
      if (it != leaves.end()) return &it->second;
    }
    return nullptr;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& kv : leaves) {
      const DrawTile& a = kv.second;
      const DrawTile* split = nullptr;
      for (int dy = -1; dy <= 1 && !split; ++dy)
        for (int dx = -1; dx <= 1 && !split; ++dx) {
          if (!dx && !dy) continue;
          const DrawTile* b = coveringLeaf(a.level, long(a.x) + dx, long(a.y) + dy);
          if (b && (b->level > a.level + 1 || (b->level == a.level + 1 && a.centre < 1)) &&
              splittable(*b))
            split = b;
        }
      if (!split) continue;
      const DrawTile b = *split;
      leaves.erase(key(b.level, b.x, b.y));
      ++st.balanceSplits;
      children(b, kids);
      for (size_t c : kids)
        if (visible(c)) {
          const DrawTile d = makeLeaf(c);
          leaves[key(d.level, d.x, d.y)] = d;
        }
      changed = true;
      break;  // the map changed under the loop
    }
  }

  // 3. Corner values per level-0 point: corners register (centre in global units, level);
  //    edge midpoints register their level only (they are the T-points of finer neighbours).
  struct Acc {
    int minGlobal = std::numeric_limits<int>::max();
    int minLevel = std::numeric_limits<int>::max(), maxLevel = -1;
  };
  std::unordered_map<uint64_t, Acc> points;
  const int64_t N = int64_t(1) << n;
  auto pointKey = [](int64_t X, int64_t Y) { return (uint64_t(X) << 32) | uint64_t(Y); };
  auto cornerXY = [&](const DrawTile& d, int c, int64_t& X, int64_t& Y) {
    const int64_t span = N << d.level;
    X = int64_t(d.x) * span + ((c == 1 || c == 2) ? span : 0);
    Y = int64_t(d.y) * span + ((c >= 2) ? span : 0);
  };
  for (const auto& kv : leaves) {
    const DrawTile& d = kv.second;
    for (int c = 0; c < 4; ++c) {
      int64_t X, Y;
      cornerXY(d, c, X, Y);
      Acc& a = points[pointKey(X, Y)];
      a.minGlobal = std::min(a.minGlobal, d.level + d.centre);
      a.minLevel = std::min(a.minLevel, d.level);
      a.maxLevel = std::max(a.maxLevel, d.level);
    }
  }
  // Edge midpoints where finer corners lie (T-points): the coarser tile's level counts there.
  for (const auto& kv : leaves) {
    const DrawTile& d = kv.second;
    const int64_t span = N << d.level;
    const int64_t x0 = int64_t(d.x) * span, y0 = int64_t(d.y) * span;
    const int64_t mids[4][2] = {{x0 + span / 2, y0}, {x0 + span, y0 + span / 2},
                                {x0 + span / 2, y0 + span}, {x0, y0 + span / 2}};
    for (const auto& m : mids) {
      auto it = points.find(pointKey(m[0], m[1]));
      if (it == points.end()) continue;
      it->second.maxLevel = std::max(it->second.maxLevel, d.level);
    }
  }

  std::vector<DrawTile> out;
  out.reserve(leaves.size());
  for (auto& kv : leaves) {
    DrawTile d = kv.second;
    for (int c = 0; c < 4; ++c) {
      int64_t X, Y;
      cornerXY(d, c, X, Y);
      const Acc& a = points.at(pointKey(X, Y));
      const int global = a.minLevel != a.maxLevel ? a.maxLevel : a.minGlobal;
      int local = global - d.level;
      if (local < 0 || local > d.centre) {
        ++st.cornerClamps;
        local = std::clamp(local, 0, d.centre);
      }
      d.corner[size_t(c)] = local;
    }
    d.pattern = patterns.patternIndex(d.centre, d.corner.data());
    out.push_back(d);
  }
  if (stats) *stats = st;
  return out;
}

}  // namespace hfr
