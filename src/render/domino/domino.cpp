// domino.cpp - builds the Domino Tiling pattern set (docs/rendering.md).
//
// Every pattern is generated the same way, so that conformity is a property of the generator
// rather than of hand-made cases:
//  1. demand: the vertices of the uniform ldr-c grid, plus for every edge the edge rule's vertices;
//  2. closure: a 4-8 mesh is conforming exactly when every active vertex has its two "parents"
//     (the apexes of the two triangles whose common hypotenuse it bisects) active; we add
//     parents until nothing changes (this is what grades a fine edge into a coarse interior);
//  3. emission: bisect the two root triangles recursively, splitting a triangle when its
//     hypotenuse midpoint is active; leaves come out in Sierpinski order, so consecutive
//     triangles usually share an edge and the strip needs few joins.
// The edge rule is defined as "what the closure of an edge's own demand leaves on that edge",
// so step 2 can never add an edge vertex that the edge's two corner values did not ask for; the
// constructor checks that for every pattern and throws if it were ever violated.
#include "render/domino/domino.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

namespace hfr {
namespace {

struct Grid {
  int n, N, W;
  explicit Grid(int tileLog) : n(tileLog), N(1 << tileLog), W((1 << tileLog) + 1) {}
  int id(int x, int y) const { return y * W + x; }
  bool inside(int x, int y) const { return x >= 0 && y >= 0 && x <= N && y <= N; }

  // The vertices a vertex depends on (docs/rendering.md, "closure"). g = the largest power of
  // two dividing both coordinates. Both x/g and y/g odd: v is the centre of a square of side 2g
  // and bisects its union-jack diagonal; the parents are the square's two other corners. One
  // odd: v bisects a square side (a "diamond" hypotenuse); the parents are the centres of the
  // squares on both sides of it (one at the tile border). Tile corners have no parents.
  int parents(int x, int y, int px[2], int py[2]) const {
    const int m = x | y;
    if (m == 0) return 0;
    const int g = m & -m;
    if (g >= N) return 0;
    int k = 0;
    auto add = [&](int a, int b) {
      if (inside(a, b)) {
        px[k] = a;
        py[k] = b;
        ++k;
      }
    };
    const bool xo = ((x / g) & 1) != 0, yo = ((y / g) & 1) != 0;
    if (xo && yo) {
      const int i = (x - g) / (2 * g), j = (y - g) / (2 * g);
      if (((i + j) & 1) == 0) {  // diagonal (x-g, y-g)-(x+g, y+g): the archive's even squares
        add(x + g, y - g);
        add(x - g, y + g);
      } else {
        add(x - g, y - g);
        add(x + g, y + g);
      }
    } else if (xo) {  // midpoint of a horizontal square side
      add(x, y - g);
      add(x, y + g);
    } else {  // midpoint of a vertical square side
      add(x - g, y);
      add(x + g, y);
    }
    return k;
  }
};

DominoVertex pointOnEdge(const Grid& g, int edge, int t) {
  switch (edge & 3) {
    case 0: return {uint16_t(t), 0};
    case 1: return {uint16_t(g.N), uint16_t(t)};
    case 2: return {uint16_t(g.N - t), uint16_t(g.N)};
    default: return {0, uint16_t(g.N - t)};
  }
}

// Marks v and everything it depends on; `mark` is a stamp array (== stamp means active).
void closeFrom(const Grid& g, int x, int y, std::vector<uint32_t>& mark, uint32_t stamp,
               std::vector<int>& stack, std::vector<int>* added) {
  const int v0 = g.id(x, y);
  if (mark[size_t(v0)] == stamp) return;
  mark[size_t(v0)] = stamp;
  if (added) added->push_back(v0);
  stack.push_back(v0);
  while (!stack.empty()) {
    const int v = stack.back();
    stack.pop_back();
    int px[2], py[2];
    const int k = g.parents(v % g.W, v / g.W, px, py);
    for (int i = 0; i < k; ++i) {
      const int u = g.id(px[i], py[i]);
      if (mark[size_t(u)] != stamp) {
        mark[size_t(u)] = stamp;
        if (added) added->push_back(u);
        stack.push_back(u);
      }
    }
  }
}

// The demand of an edge before closure: the half next to corner a keeps multiples of 2^a, the
// half next to corner b multiples of 2^b; values are clamped to n-1 so the midpoint is always
// there (without it a coarse edge could be forced to split by the closure of another edge).
bool edgeDemand(const Grid& g, int a, int b, int t) {
  a = std::min(a, g.n - 1);
  b = std::min(b, g.n - 1);
  if (t == 0 || t == g.N) return true;
  return (2 * t <= g.N && t % (1 << a) == 0) || (2 * t >= g.N && t % (1 << b) == 0);
}

// Per tile size: the edge rule (trace) and, per edge and corner pair, the closure of the edge's
// demand (the vertex ids a pattern activates for that edge).
struct EdgeTables {
  Grid g;
  std::vector<std::vector<uint8_t>> trace;              // [a (n+1) + b][t]
  std::vector<std::vector<int>> closure;                // [(edge (n+1) + a) (n+1) + b]
  explicit EdgeTables(int tileLog) : g(tileLog) {
    const int V = g.n + 1;
    std::vector<uint32_t> mark(size_t(g.W) * g.W, 0);
    std::vector<int> stack;
    uint32_t stamp = 0;
    closure.resize(size_t(4 * V * V));
    trace.assign(size_t(V * V), std::vector<uint8_t>(size_t(g.W), 0));
    for (int e = 0; e < 4; ++e)
      for (int a = 0; a < V; ++a)
        for (int b = 0; b < V; ++b) {
          auto& list = closure[size_t((e * V + a) * V + b)];
          ++stamp;
          for (int t = 0; t <= g.N; ++t) {
            if (!edgeDemand(g, a, b, t)) continue;
            const DominoVertex p = pointOnEdge(g, e, t);
            closeFrom(g, p.x, p.y, mark, stamp, stack, &list);
          }
          std::sort(list.begin(), list.end());
          if (e == 0)
            for (int t = 0; t <= g.N; ++t) trace[size_t(a * V + b)][size_t(t)] = mark[size_t(g.id(t, 0))] == stamp;
        }
  }
  bool has(int a, int b, int t) const { return trace[size_t(a * (g.n + 1) + b)][size_t(t)] != 0; }
};

const EdgeTables& edgeTables(int tileLog) {
  if (tileLog < kDominoMinTileLog || tileLog > kDominoMaxTileLog)
    throw std::invalid_argument("domino: tile log " + std::to_string(tileLog) + " outside 2..8");
  static std::unique_ptr<EdgeTables> tables[kDominoMaxTileLog + 1];
  static std::once_flag once[kDominoMaxTileLog + 1];
  std::call_once(once[tileLog], [&] { tables[tileLog] = std::make_unique<EdgeTables>(tileLog); });
  return *tables[tileLog];
}

// Appends triangles to a GL triangle strip, joining with the shortest sequence of repeated
// vertices that makes the next drawn triangle exactly the wanted one, with the wanted winding.
class StripBuilder {
 public:
  explicit StripBuilder(std::vector<DominoVertex>& out) : s_(out), start_(out.size()) {}

  void add(DominoVertex a, DominoVertex b, DominoVertex c) {
    if (signedArea2(a, b, c) < 0) std::swap(b, c);
    const size_t len = s_.size() - start_;
    if (len == 0) {
      s_.insert(s_.end(), {a, b, c});
      return;
    }
    const DominoVertex p = s_[s_.size() - 2], q = s_.back();
    const DominoVertex alphabet[5] = {p, q, a, b, c};
    // len >= 3 always (the strip starts with a whole triangle), so p is a real strip vertex.
    for (int L = 1; L <= 3; ++L) {
      int total = 1;
      for (int i = 0; i < L; ++i) total *= 5;
      for (int code = 0; code < total; ++code) {
        DominoVertex ext[5] = {p, q};
        int c2 = code;
        for (int i = 0; i < L; ++i, c2 /= 5) ext[2 + i] = alphabet[c2 % 5];
        if (fits(ext, L, len - 2, a, b, c)) {
          s_.insert(s_.end(), ext + 2, ext + 2 + L);
          return;
        }
      }
    }
    // Restart: q a a b c (or q a a c b): four degenerates, then the triangle.
    const size_t idx = len - 2 + 4;
    const bool odd = (idx & 1) != 0;
    if (odd) std::swap(b, c);  // GL swaps the first two of an odd triangle: (a,b,c) -> (a,c,b)
    s_.insert(s_.end(), {q, a, a, b, c});
  }

 private:
  static bool degenerate(DominoVertex x, DominoVertex y, DominoVertex z) {
    return x == y || y == z || x == z;
  }
  // ext = {p, q, appended...}: triangles j = 0..L-1 are (ext[j], ext[j+1], ext[j+2]) with strip
  // index first + j. All but the last must be degenerate; the last must be the wanted triangle.
  static bool fits(const DominoVertex* ext, int L, size_t first, DominoVertex a, DominoVertex b,
                   DominoVertex c) {
    for (int j = 0; j < L; ++j) {
      DominoVertex x = ext[j], y = ext[j + 1], z = ext[j + 2];
      if (j < L - 1) {
        if (!degenerate(x, y, z)) return false;
        continue;
      }
      if (degenerate(x, y, z)) return false;
      if (((first + size_t(j)) & 1) != 0) std::swap(x, y);
      auto in = [&](DominoVertex v) { return v == a || v == b || v == c; };
      if (!in(x) || !in(y) || !in(z)) return false;
      return signedArea2(x, y, z) > 0;
    }
    return false;
  }
  std::vector<DominoVertex>& s_;
  size_t start_;
};

}  // namespace

DominoVertex edgePoint(int tileLog, int edge, int t) { return pointOnEdge(Grid(tileLog), edge, t); }

bool edgeHasVertex(int tileLog, int a, int b, int t) {
  const EdgeTables& et = edgeTables(tileLog);
  if (a < 0 || b < 0 || a > tileLog || b > tileLog || t < 0 || t > et.g.N) return false;
  return et.has(a, b, t);
}

std::vector<DominoTriangle> decodeStrip(const DominoVertex* v, size_t count) {
  std::vector<DominoTriangle> tris;
  for (size_t i = 0; i + 2 < count; ++i) {
    DominoVertex a = v[i], b = v[i + 1], c = v[i + 2];
    if (a == b || b == c || a == c) continue;
    if (i & 1) std::swap(a, b);
    tris.push_back({a, b, c});
  }
  return tris;
}

DominoPatterns::DominoPatterns(int tileLog) : n_(tileLog) {
  const EdgeTables& et = edgeTables(tileLog);  // validates tileLog
  const Grid& g = et.g;
  const int V = n_ + 1;
  table_.assign(size_t(V) * V * V * V * V, PatternRange{});
  std::vector<uint32_t> mark(size_t(g.W) * g.W, 0);
  uint32_t stamp = 0;
  struct Tri {
    DominoVertex apex, l, r;
  };
  std::vector<Tri> stack;

  // Geometry is built for c <= n-1 only: with edge values clamped to n-1 the closure of the
  // edges' midpoints already contains the ldr n-1 grid, so (c = n, corners) draws exactly what
  // (n-1, min(corners, n-1)) draws and the table points both at one range.
  for (int c = 0; c < n_; ++c) {
    const int step = 1 << c;
    int cs[4];
    for (cs[0] = 0; cs[0] <= c; ++cs[0])
      for (cs[1] = 0; cs[1] <= c; ++cs[1])
        for (cs[2] = 0; cs[2] <= c; ++cs[2])
          for (cs[3] = 0; cs[3] <= c; ++cs[3]) {
            ++stamp;
            for (int e = 0; e < 4; ++e)
              for (int v : et.closure[size_t((e * V + cs[e]) * V + cs[(e + 1) & 3])])
                mark[size_t(v)] = stamp;
            auto active = [&](int x, int y) {
              return ((x | y) & (step - 1)) == 0 || mark[size_t(g.id(x, y))] == stamp;
            };
            // The contract: each edge carries exactly its rule's vertices.
            for (int e = 0; e < 4; ++e)
              for (int t = 0; t <= g.N; ++t) {
                const DominoVertex p = pointOnEdge(g, e, t);
                if (active(p.x, p.y) != et.has(cs[e], cs[(e + 1) & 3], t))
                  throw std::logic_error("domino: edge " + std::to_string(e) + " of pattern c=" +
                                         std::to_string(c) + " breaks the edge rule at t=" +
                                         std::to_string(t));
              }
            const uint32_t first = uint32_t(vertices_.size());
            StripBuilder strip(vertices_);
            const DominoVertex c00{0, 0}, cN0{uint16_t(g.N), 0}, cNN{uint16_t(g.N), uint16_t(g.N)},
                c0N{0, uint16_t(g.N)};
            // Root: the tile's main diagonal (0,0)-(N,N) (archive rule at k = n). The second root
            // is pushed first so that the first one is emitted first (Sierpinski order).
            stack.clear();
            stack.push_back({c0N, cNN, c00});
            stack.push_back({cN0, c00, cNN});
            while (!stack.empty()) {
              const Tri t = stack.back();
              stack.pop_back();
              const int sx = t.l.x + t.r.x, sy = t.l.y + t.r.y;
              if ((sx & 1) == 0 && (sy & 1) == 0 && active(sx / 2, sy / 2)) {
                const DominoVertex m{uint16_t(sx / 2), uint16_t(sy / 2)};
                stack.push_back({m, t.apex, t.r});  // second child, emitted after the first
                stack.push_back({m, t.l, t.apex});
              } else {
                strip.add(t.apex, t.l, t.r);
              }
            }
            const PatternRange range{first, uint32_t(vertices_.size()) - first};
            table_[patternIndex(c, cs)] = range;
            ++stored_;
          }
  }
  // c = n: share the clamped geometry.
  int cs[4];
  for (cs[0] = 0; cs[0] <= n_; ++cs[0])
    for (cs[1] = 0; cs[1] <= n_; ++cs[1])
      for (cs[2] = 0; cs[2] <= n_; ++cs[2])
        for (cs[3] = 0; cs[3] <= n_; ++cs[3]) {
          int clamped[4];
          for (int i = 0; i < 4; ++i) clamped[i] = std::min(cs[i], n_ - 1);
          table_[patternIndex(n_, cs)] = table_[patternIndex(n_ - 1, clamped)];
        }
  for (int c = 0; c <= n_; ++c) valid_ += size_t(c + 1) * (c + 1) * (c + 1) * (c + 1);
}

uint32_t DominoPatterns::patternIndex(int centre, const int corner[4]) const {
  const uint32_t V = uint32_t(n_ + 1);
  uint32_t idx = uint32_t(centre);
  for (int i = 0; i < 4; ++i) idx = idx * V + uint32_t(corner[i]);
  return idx;
}

uint32_t DominoPatterns::basicPattern(int ldr) const {
  const int cs[4] = {ldr, ldr, ldr, ldr};
  return patternIndex(ldr, cs);
}

std::vector<DominoTriangle> DominoPatterns::triangles(uint32_t index) const {
  const PatternRange r = range(index);
  return decodeStrip(vertices_.data() + r.first, r.count);
}

}  // namespace hfr
