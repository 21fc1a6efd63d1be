// lod.cpp - quadtree LOD selection, level balancing and Domino corner values.
#include "render/lod/lod.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace hfr {
namespace {

uint64_t key(int level, uint32_t x, uint32_t y) {
  return (uint64_t(uint32_t(level)) << 56) ^ (uint64_t(x) << 28) ^ uint64_t(y);
}

// Open addressing (linear probing, backward-shift erase) from a 64-bit key to a value: the
// selection's scratch tables, without an allocation per entry (select() runs several times a
// frame on the render thread). The key ~0 is reserved.
template <class V>
class FlatMap {
 public:
  explicit FlatMap(size_t expected) { rehash(expected * 2); }
  V* find(uint64_t k) {
    for (size_t i = slot(k);; i = (i + 1) & mask_) {
      if (keys_[i] == k) return &vals_[i];
      if (keys_[i] == kEmpty) return nullptr;
    }
  }
  V& operator[](uint64_t k) {
    if (2 * (size_ + 1) > keys_.size()) rehash(keys_.size() * 2);
    size_t i = slot(k);
    for (; keys_[i] != kEmpty; i = (i + 1) & mask_)
      if (keys_[i] == k) return vals_[i];
    keys_[i] = k;
    vals_[i] = V();
    ++size_;
    return vals_[i];
  }
  void erase(uint64_t k) {
    size_t i = slot(k);
    while (keys_[i] != k) {
      if (keys_[i] == kEmpty) return;
      i = (i + 1) & mask_;
    }
    // Move later entries of the probe run back into the hole when their home is not in (i, j].
    for (size_t j = (i + 1) & mask_; keys_[j] != kEmpty; j = (j + 1) & mask_) {
      const size_t h = slot(keys_[j]);
      const bool stays = i < j ? (h > i && h <= j) : (h > i || h <= j);
      if (stays) continue;
      keys_[i] = keys_[j];
      vals_[i] = vals_[j];
      i = j;
    }
    keys_[i] = kEmpty;
    --size_;
  }
  template <class F>
  void forEach(F f) const {
    for (size_t i = 0; i < keys_.size(); ++i)
      if (keys_[i] != kEmpty) f(keys_[i], vals_[i]);
  }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t(0);
  size_t slot(uint64_t k) const {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return size_t(k) & mask_;
  }
  void rehash(size_t want) {
    size_t cap = 16;
    while (cap < want) cap <<= 1;
    std::vector<uint64_t> keys(cap, kEmpty);
    std::vector<V> vals(cap);
    keys.swap(keys_);
    vals.swap(vals_);
    mask_ = cap - 1;
    size_ = 0;
    for (size_t i = 0; i < keys.size(); ++i)
      if (keys[i] != kEmpty) (*this)[keys[i]] = vals[i];
  }
  std::vector<uint64_t> keys_;
  std::vector<V> vals_;
  size_t mask_ = 0, size_ = 0;
};

}  // namespace

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
  parent_.assign(t.size(), -1);
  children_.assign(t.size(), {-1, -1, -1, -1});
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i].level == 0) continue;
    for (uint32_t c = 0; c < 4; ++c) {
      const long ch = find(t[i].level - 1, 2 * t[i].x + (c & 1), 2 * t[i].y + (c >> 1));
      if (ch < 0) continue;
      children_[i][c] = int32_t(ch);
      parent_[size_t(ch)] = int32_t(i);
    }
  }
}

void LodHistory::clear() {
  for (size_t t : marked_) {
    refined_[t] = 0;
    centre_[t] = -1;
  }
  marked_.clear();
}

void LodHistory::assign(const LodHistory& other) {
  if (refined_.size() != other.refined_.size()) {
    refined_ = other.refined_;
    centre_ = other.centre_;
    marked_ = other.marked_;
    return;
  }
  clear();
  for (size_t t : other.marked_) {
    refined_[t] = other.refined_[t];
    centre_[t] = other.centre_[t];
  }
  marked_ = other.marked_;
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
                                          LodStats* stats, const LodSelectOptions& opt) const {
  const std::vector<uint8_t>* usable = opt.usable;
  if (usable && usable->size() != tiles().size())
    throw std::invalid_argument("lod: usable must have one entry per tile");
  auto isUsable = [&](size_t t) { return !usable || (*usable)[t] != 0; };
  if (patterns.tileLog() != pyr_.tileLog)
    throw std::invalid_argument("lod: patterns and pyramid have different tile sizes");
  LodHistory* hist = opt.history;
  // The previous selection counts only when it was made on these tiles.
  const bool useHist = hist && hist->refined_.size() == tiles().size();
  const double keepTau = cam.tau * (hist ? std::clamp(hist->factor, 0.0, 1.0) : 1.0);
  LodStats st;
  const int n = pyr_.tileLog;
  const int top = pyr_.levels - 1;
  const double ppu = pixelsPerUnit(cam);
  const double inf = std::numeric_limits<double>::infinity();

  // Leaves live in `pool` (dead ones flagged); `nodes` maps a key to its pool index (a leaf) or
  // to kInternal - tile (a refined node). A key in neither is culled, absent or covered by a
  // coarser leaf. Lookups walk up from a position until they meet a leaf or a refined node.
  // Sized for the pyramid (a key per tile at most), not for the largest one: zeroing and touching
  // 64 KB of table and 70 KB of pool per call cost more than the selection of a small archive.
  const size_t expected = std::min<size_t>(tiles().size(), 1024);
  std::vector<DrawTile> pool;
  std::vector<uint8_t> alive;
  FlatMap<long> nodes(2 * expected);
  pool.reserve(expected);
  alive.reserve(expected);
  constexpr long kInternal = -2;  // nodes[k] = kInternal - tile for a refined node
  auto keyOf = [&](size_t t) { return key(tiles()[t].level, tiles()[t].x, tiles()[t].y); };

  // Projected error at eye-to-box distance `dist` (one distance serves every ldr of a tile);
  // makeLeaf computes exactly the same, so "refine" and "forced" agree at the threshold.
  auto projected = [ppu, inf](double dist, double error) {
    return error <= 0 ? 0.0 : error * (dist > 0 ? ppu / dist : inf);
  };
  auto distance = [&](size_t tile) { return distanceToBox(cam.eye, bounds(tile)); };
  // Frustum test; `dist` gets the eye-to-box distance of a visible tile.
  auto visible = [&](size_t tile, double& dist) {
    ++st.visited;
    const auto box = bounds(tile);
    if (cam.cull && boxOutside(cam.viewProj, box)) {
      ++st.culled;
      return false;
    }
    dist = distanceToBox(cam.eye, box);
    return true;
  };
  // The drawn ldr: the coarsest k whose projected error is within tau (0 when even that fails).
  // Hysteresis: coarser than the previous selection's ldr only when below h * tau.
  auto makeLeaf = [&](size_t tile, double dist) {
    const LodTile& t = tiles()[tile];
    const double scale = dist > 0 ? ppu / dist : inf;  // one division, not one per ldr
    const auto px = [scale](double e) { return e <= 0 ? 0.0 : e * scale; };
    const int prev = useHist ? hist->centre_[tile] : -1;
    DrawTile d;
    d.tile = tile;
    d.level = t.level;
    d.x = t.x;
    d.y = t.y;
    d.centre = 0;
    for (int k = n; k >= 0; --k) {
      const double p = px(error(tile, k));
      if (p <= cam.tau && (prev < 0 || k <= prev || p < keepTau)) {
        d.centre = k;
        break;
      }
    }
    d.error = error(tile, d.centre);
    d.pixels = px(d.error);
    d.forced = d.pixels > cam.tau;
    return d;
  };
  auto addLeaf = [&](const DrawTile& d) {
    nodes[key(d.level, d.x, d.y)] = long(pool.size());
    pool.push_back(d);
    alive.push_back(1);
    return pool.size() - 1;
  };
  auto kill = [&](size_t i) {
    alive[i] = 0;
    nodes.erase(key(pool[i].level, pool[i].x, pool[i].y));
  };
  // All existing children, only if every one is usable (a partial set would leave holes).
  // `missing` collects the unusable ones.
  auto children = [&](size_t tile, std::vector<size_t>& out, std::vector<size_t>* missing) {
    out.clear();
    bool ok = true;
    for (int c = 0; c < 4; ++c) {
      const long ch = child(tile, c);
      if (ch < 0) continue;
      out.push_back(size_t(ch));
      if (!isUsable(size_t(ch))) {
        ok = false;
        if (missing) missing->push_back(size_t(ch));
      }
    }
    if (!ok) {
      out.clear();
      ++st.blockedSplits;
    }
  };
  // The leaf covering tile position (level, x, y) at that level or coarser: its pool index, or
  // -1 when that region is refined finer, culled, absent or outside.
  auto covering = [&](int level, long x, long y) -> long {
    if (x < 0 || y < 0 || x >= long(pyr_.tilesX(level)) || y >= long(pyr_.tilesY(level))) return -1;
    for (int l = level; l <= top; ++l) {
      const long* v = nodes.find(key(l, uint32_t(x >> (l - level)), uint32_t(y >> (l - level))));
      if (v) return *v >= 0 ? *v : -1;
    }
    return -1;
  };

  // 1. Quadtree from the top level: refine while the level itself is too coarse (even ldr 0
  //    exceeds tau) and finer tiles exist; with hysteresis, a node refined last time stays
  //    refined while its ldr 0 exceeds h * tau.
  std::vector<size_t> todo, kids;
  for (uint32_t y = 0; y < pyr_.tilesY(top); ++y)
    for (uint32_t x = 0; x < pyr_.tilesX(top); ++x) {
      const long t = find(top, x, y);
      if (t >= 0 && isUsable(size_t(t))) todo.push_back(size_t(t));
    }
  while (!todo.empty()) {
    const size_t t = todo.back();
    todo.pop_back();
    double dist = 0;
    if (!visible(t, dist)) continue;
    const double p0 = projected(dist, error(t, 0));
    const bool kept = useHist && hist->refined_[t] && p0 >= keepTau;
    if (p0 > cam.tau || kept) {
      children(t, kids, nullptr);
      if (!kids.empty()) {
        if (p0 <= cam.tau) ++st.keptRefined;
        nodes[keyOf(t)] = kInternal - long(t);
        todo.insert(todo.end(), kids.begin(), kids.end());
        continue;
      }
    }
    addLeaf(makeLeaf(t, dist));
  }

  // 2. Balance: tiles sharing a point differ by at most one level, and where levels L and L+1
  //    meet the level-L tile has centre >= 1 (its corner there will be 1). Otherwise split the
  //    coarser tile; its children are acceptable too (smaller boxes are never nearer). A
  //    worklist: a split only makes tiles finer, so only the new children (and the tile that
  //    asked) need another look.
  std::vector<size_t> blocked;
  auto violates = [&](const DrawTile& a, const DrawTile& b) {
    return b.level > a.level + 1 || (b.level == a.level + 1 && a.centre < 1);
  };
  std::vector<size_t> work(pool.size());
  for (size_t i = 0; i < work.size(); ++i) work[i] = pool.size() - 1 - i;
  bool anyBlocked = false;
  while (!work.empty()) {
    const size_t i = work.back();
    work.pop_back();
    if (!alive[i]) continue;
    const DrawTile a = pool[i];
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx) {
        if ((!dx && !dy) || !alive[i]) continue;
        const long j = covering(a.level, long(a.x) + dx, long(a.y) + dy);
        if (j < 0 || !violates(a, pool[size_t(j)])) continue;
        const DrawTile b = pool[size_t(j)];
        children(b.tile, kids, &blocked);
        if (kids.empty()) {
          anyBlocked = true;
          continue;  // resolved in steps 3 and 4
        }
        kill(size_t(j));
        nodes[key(b.level, b.x, b.y)] = kInternal - long(b.tile);
        ++st.balanceSplits;
        for (size_t c : kids) {
          double dist = 0;
          if (visible(c, dist)) work.push_back(addLeaf(makeLeaf(c, dist)));
        }
        work.push_back(i);  // look again: the children may still be too coarse
        dx = dy = 2;        // leave both loops
      }
  }

  // 3. A balance split that needed an unusable tile: coarsen the finer side instead. A leaf A
  //    next to a leaf B more than one level coarser is merged into its ancestor one level finer
  //    than B (drawn from that ancestor, which is usable: every ancestor of a leaf is). That can
  //    unbalance other, finer neighbours of the merged tile: repeat until nothing changes (it
  //    ends: every merge removes refined nodes and nothing refines here).
  auto removeBelow = [&](size_t tile) {  // the leaves and refined nodes under a refined node
    std::vector<size_t> stack{tile};
    while (!stack.empty()) {
      const size_t t = stack.back();
      stack.pop_back();
      for (int c = 0; c < 4; ++c) {
        const long ch = child(t, c);
        if (ch < 0) continue;
        const uint64_t k = keyOf(size_t(ch));
        const long* v = nodes.find(k);
        if (!v) continue;
        if (*v >= 0) {
          alive[size_t(*v)] = 0;
        } else {
          stack.push_back(size_t(ch));
        }
        nodes.erase(k);
      }
    }
  };
  for (bool changed = anyBlocked; changed;) {
    changed = false;
    for (size_t i = 0; i < pool.size(); ++i) {
      if (!alive[i]) continue;
      const DrawTile a = pool[i];
      for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
          if (!dx && !dy) continue;
          const long j = covering(a.level, long(a.x) + dx, long(a.y) + dy);
          if (j < 0 || pool[size_t(j)].level <= a.level + 1) continue;
          long q = long(a.tile);
          while (q >= 0 && tiles()[size_t(q)].level < pool[size_t(j)].level - 1) q = parent(size_t(q));
          if (q < 0) continue;  // cannot happen: a leaf's ancestors exist
          removeBelow(size_t(q));
          addLeaf(makeLeaf(size_t(q), distance(size_t(q))));
          ++st.coarsened;
          changed = true;
          dx = dy = 2;
        }
    }
  }

  // 4. "Centre >= 1 next to a coarser tile" where the coarser tile could not be split: draw the
  //    finer tile at ldr 1, which on that tile is its parent's ldr 0 (the coarser neighbour's
  //    finest), instead of merging its siblings too. Levels do not change, so 1-3 still hold.
  if (anyBlocked) {
    for (size_t i = 0; i < pool.size(); ++i) {
      if (!alive[i] || pool[i].centre >= 1) continue;
      DrawTile& a = pool[i];
      bool raise = false;
      for (int dy = -1; dy <= 1 && !raise; ++dy)
        for (int dx = -1; dx <= 1 && !raise; ++dx) {
          if (!dx && !dy) continue;
          const long j = covering(a.level, long(a.x) + dx, long(a.y) + dy);
          raise = j >= 0 && pool[size_t(j)].level == a.level + 1;
        }
      if (!raise) continue;
      a.centre = 1;
      a.error = error(a.tile, 1);
      a.pixels = projected(distance(a.tile), a.error);
      a.forced = a.pixels > cam.tau;
      ++st.raisedCentres;
    }
  }

  // Deterministic output order: by level, then x, then y.
  std::vector<DrawTile> out;
  std::vector<std::pair<uint64_t, size_t>> order;
  for (size_t i = 0; i < pool.size(); ++i)
    if (alive[i]) order.push_back({key(pool[i].level, pool[i].x, pool[i].y), i});
  std::sort(order.begin(), order.end());
  out.reserve(order.size());
  for (const auto& o : order) out.push_back(pool[o.second]);

  // 5. Corner values per level-0 point: corners register (centre in global units, level);
  //    edge midpoints register their level only (they are the T-points of finer neighbours).
  struct Acc {
    int minGlobal = std::numeric_limits<int>::max();
    int minLevel = std::numeric_limits<int>::max(), maxLevel = -1;
  };
  FlatMap<Acc> points(out.size() * 3);
  const int64_t N = int64_t(1) << n;
  auto pointKey = [](int64_t X, int64_t Y) { return (uint64_t(X) << 32) | uint64_t(Y); };
  auto cornerXY = [&](const DrawTile& d, int c, int64_t& X, int64_t& Y) {
    const int64_t span = N << d.level;
    X = int64_t(d.x) * span + ((c == 1 || c == 2) ? span : 0);
    Y = int64_t(d.y) * span + ((c >= 2) ? span : 0);
  };
  for (const DrawTile& d : out) {
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
  for (const DrawTile& d : out) {
    const int64_t span = N << d.level;
    const int64_t x0 = int64_t(d.x) * span, y0 = int64_t(d.y) * span;
    const int64_t mids[4][2] = {{x0 + span / 2, y0}, {x0 + span, y0 + span / 2},
                                {x0 + span / 2, y0 + span}, {x0, y0 + span / 2}};
    for (const auto& m : mids) {
      Acc* a = points.find(pointKey(m[0], m[1]));
      if (a) a->maxLevel = std::max(a->maxLevel, d.level);
    }
  }
  for (DrawTile& d : out) {
    for (int c = 0; c < 4; ++c) {
      int64_t X, Y;
      cornerXY(d, c, X, Y);
      const Acc& a = points[pointKey(X, Y)];  // registered above
      const int global = a.minLevel != a.maxLevel ? a.maxLevel : a.minGlobal;
      int local = global - d.level;
      if (local < 0 || local > d.centre) {
        ++st.cornerClamps;
        local = std::clamp(local, 0, d.centre);
      }
      d.corner[size_t(c)] = local;
    }
    d.pattern = patterns.patternIndex(d.centre, d.corner.data());
  }

  // 6. This selection becomes the history: refined nodes and drawn centres.
  if (hist) {
    if (hist->refined_.size() != tiles().size()) {
      hist->refined_.assign(tiles().size(), 0);
      hist->centre_.assign(tiles().size(), -1);
      hist->marked_.clear();
    } else {
      hist->clear();
    }
    nodes.forEach([&](uint64_t, long v) {
      if (v >= 0) return;
      const size_t t = size_t(kInternal - v);
      hist->refined_[t] = 1;
      hist->marked_.push_back(t);
    });
    for (const DrawTile& d : out) {
      if (hist->refined_[d.tile] == 0 && hist->centre_[d.tile] < 0) hist->marked_.push_back(d.tile);
      hist->centre_[d.tile] = int8_t(d.centre);
    }
  }
  if (opt.blocked && !blocked.empty()) {
    std::sort(blocked.begin(), blocked.end());
    blocked.erase(std::unique(blocked.begin(), blocked.end()), blocked.end());
    opt.blocked->insert(opt.blocked->end(), blocked.begin(), blocked.end());
    std::sort(opt.blocked->begin(), opt.blocked->end());
    opt.blocked->erase(std::unique(opt.blocked->begin(), opt.blocked->end()), opt.blocked->end());
  }
  if (stats) *stats = st;
  return out;
}

}  // namespace hfr
