// colour.cpp - ColourPlanner (cells per drawn tile, wanted imagery tiles) and ColourStrategy
// (worker threads: payload -> RGBA8 -> mips -> BC1 or RGBA8).
#include "render/stream/colour.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "archive/archive.h"
#include "render/stream/stream.h"

namespace hfr {

// ---- ColourPlanner ----

ColourPlanner::ColourPlanner(const hfa::ArchiveReader& archive, const LodSelector& selector)
    : selector_(selector) {
  const hfa::ImageryHeader& im = archive.imagery();
  finer_ = im.finerLevels;
  levels_ = im.levels;
  content_ = std::max(1, im.content());
  const auto& tiles = archive.imageryTiles();
  levelOf_.resize(tiles.size());
  parent_.assign(tiles.size(), -1);
  for (size_t i = 0; i < tiles.size(); ++i) {
    levelOf_[i] = tiles[i].level;
    if (tiles[i].level + 1 < levels_)
      parent_[i] = archive.findImagery(tiles[i].level + 1, tiles[i].x / 2, tiles[i].y / 2);
  }
  marked_.assign(tiles.size(), 0);
  const hfa::Header& h = archive.header();
  gridFirst_.resize(size_t(levels_));
  gridW_.resize(size_t(levels_));
  gridH_.resize(size_t(levels_));
  uint64_t cells = 0;
  for (int k = 0; k < levels_; ++k) {
    gridFirst_[size_t(k)] = cells;
    gridW_[size_t(k)] = hfa::imageryTilesX(h, im, k);
    gridH_[size_t(k)] = hfa::imageryTilesY(h, im, k);
    cells += gridW_[size_t(k)] * gridH_[size_t(k)];
  }
  grid_.assign(size_t(cells), -1);
  for (size_t i = 0; i < tiles.size(); ++i) {
    const size_t k = tiles[i].level;
    if (k < size_t(levels_) && tiles[i].x < gridW_[k] && tiles[i].y < gridH_[k])
      grid_[size_t(gridFirst_[k] + tiles[i].y * gridW_[k] + tiles[i].x)] = int32_t(i);
  }
  hasChild_.assign(tiles.size(), 0);
  for (size_t i = 0; i < tiles.size(); ++i)
    if (parent_[i] >= 0) hasChild_[size_t(parent_[i])] = 1;
  const LodPyramid& pyr = selector.pyramid();
  uint64_t hcells = 0;
  for (int l = 0; l < pyr.levels; ++l) {
    heightFirst_.push_back(hcells);
    heightW_.push_back(pyr.tilesX(l));
    heightH_.push_back(pyr.tilesY(l));
    hcells += heightW_.back() * heightH_.back();
  }
  heightGrid_.assign(size_t(hcells), -1);
  for (size_t i = 0; i < pyr.tiles.size(); ++i) {
    const LodTile& t = pyr.tiles[i];
    if (t.level >= 0 && t.level < pyr.levels && t.x < heightW_[size_t(t.level)] && t.y < heightH_[size_t(t.level)])
      heightGrid_[size_t(heightFirst_[size_t(t.level)] + t.y * heightW_[size_t(t.level)] + t.x)] = int32_t(i);
  }
  keptFirst_.assign(selector.pyramid().tiles.size(), 0);
  keptCount_.assign(selector.pyramid().tiles.size(), 0);
}

long ColourPlanner::finestExisting(int level, uint64_t X, uint64_t Y) const {
  for (; level < levels_; ++level, X >>= 1, Y >>= 1) {
    const long t = find(level, X, Y);
    if (t >= 0) return t;
  }
  return -1;
}

void ColourPlanner::cellHeights(const LodTile& t, int depth, uint32_t cx, uint32_t cy, double& minZ,
                                double& maxZ) const {
  // The height tile the cell is (level t.level - depth), or lies in (level 0).
  const int d = std::min(depth, t.level);
  const int level = t.level - d;
  const uint64_t X = (uint64_t(t.x) << d) + (cx >> (depth - d)), Y = (uint64_t(t.y) << d) + (cy >> (depth - d));
  if (size_t(level) < heightW_.size() && X < heightW_[size_t(level)] && Y < heightH_[size_t(level)]) {
    const int32_t i = heightGrid_[size_t(heightFirst_[size_t(level)] + Y * heightW_[size_t(level)] + X)];
    if (i >= 0) {
      const LodTile& h = selector_.pyramid().tiles[size_t(i)];
      minZ = double(h.minZ);
      maxZ = double(h.maxZ);
      return;
    }
  }
  minZ = double(t.minZ);  // not in the pyramid: the drawn tile's range
  maxZ = double(t.maxZ);
}

void ColourPlanner::leaves(size_t heightTile, const LodCamera& camera, std::vector<Leaf>& out) const {
  const LodTile& t = selector_.pyramid().tiles[heightTile];
  const std::array<double, 6> box = selector_.bounds(heightTile);
  const double spanX = box[3] - box[0], spanY = box[4] - box[1];
  const double span = std::max(spanX, spanY);
  const int k0 = t.level + finer_;
  const double ppu = LodSelector::pixelsPerUnit(camera);
  const double inf = std::numeric_limits<double>::infinity();
  // Depth-first over cells; an explicit stack keeps it allocation-light on the render thread.
  struct Cell {
    int depth;
    uint32_t cx, cy;
  };
  Cell stack[64];
  int top = 0;
  stack[top++] = Cell{0, 0, 0};
  while (top > 0) {
    const Cell c = stack[--top];
    const int k = k0 - c.depth;
    const uint64_t X = (uint64_t(t.x) << c.depth) + c.cx, Y = (uint64_t(t.y) << c.depth) + c.cy;
    bool refine = false;
    if (c.depth < maxDepth && k > 0) {
      const double cells = double(1u << c.depth);
      double z0 = box[2], z1 = box[5];
      if (c.depth > 0) cellHeights(t, c.depth, c.cx, c.cy, z0, z1);
      const std::array<double, 6> cb = {box[0] + spanX * c.cx / cells, box[4] - spanY * (c.cy + 1) / cells,
                                        z0, box[0] + spanX * (c.cx + 1) / cells,
                                        box[4] - spanY * c.cy / cells, z1};
      const double dist = distanceToBox(camera.eye, cb);
      const double texel = span / cells / content_;
      const double px = dist > 0 ? texel * ppu / dist : inf;
      if (px > texelPixels) {
        const long self = find(k, X, Y);
        bool child = self >= 0 && hasChild_[size_t(self)];
        for (int q = 0; q < 4 && self < 0 && !child; ++q)
          child = find(k - 1, 2 * X + uint64_t(q & 1), 2 * Y + uint64_t(q >> 1)) >= 0;
        refine = child && !(camera.cull && boxOutside(camera.viewProj, cb));
      }
    }
    if (refine && top + 4 <= 64) {
      for (int q = 3; q >= 0; --q)
        stack[top++] = Cell{c.depth + 1, 2 * c.cx + uint32_t(q & 1), 2 * c.cy + uint32_t(q >> 1)};
    } else if (c.depth == 0) {
      // The whole tile is one cell: it may not even need its own level. A tile drawn fine for
      // its relief but far away shows a coarser imagery tile (an ancestor, through the cell's
      // scale and offset) while a texel of that level stays within texelPixels: fewer tiles
      // wanted, and a view always fits an atlas that holds a few tiles per drawn tile.
      const double dist = distanceToBox(camera.eye, box);
      double px = dist > 0 ? span / content_ * ppu / dist : inf;
      int up = 0;
      while (k + up + 1 < levels_ && 2 * px <= texelPixels && !(dist <= 0)) {
        ++up;
        px *= 2;
      }
      out.push_back(Leaf{0, 0, 0, finestExisting(k + up, X >> up, Y >> up)});
    } else {
      out.push_back(Leaf{c.depth, c.cx, c.cy, finestExisting(k, X, Y)});
    }
  }
}

void ColourPlanner::want(const std::vector<size_t>& heightTiles, const LodCamera& camera,
                         std::vector<size_t>& out, bool keepLeaves) {
  const size_t first = out.size();
  std::vector<Leaf>& ls = scratchLeaves_;
  for (size_t h : heightTiles) {
    ls.clear();
    leaves(h, camera, ls);
    if (keepLeaves && keptCount_[h] == 0) {
      keptFirst_[h] = uint32_t(keptLeaves_.size());
      keptCount_[h] = uint32_t(ls.size());
      keptTiles_.push_back(h);
      keptLeaves_.insert(keptLeaves_.end(), ls.begin(), ls.end());
    }
    for (const Leaf& l : ls)
      for (long t = l.tile; t >= 0 && !marked_[size_t(t)]; t = parent_[size_t(t)]) {
        marked_[size_t(t)] = 1;
        markedList_.push_back(size_t(t));
        out.push_back(size_t(t));
      }
  }
  // Coarse levels first, stable within a level: a counting sort (levels <= 64), no allocation
  // once the buffers have grown.
  const size_t n = out.size() - first;
  if (n > 1) {
    levelCount_.assign(size_t(levels_) + 1, 0);
    for (size_t i = first; i < out.size(); ++i) ++levelCount_[size_t(levels_ - 1 - levelOf_[out[i]])];
    size_t sum = 0;
    for (size_t& c : levelCount_) {
      const size_t k = c;
      c = sum;
      sum += k;
    }
    sortBuffer_.resize(n);
    for (size_t i = first; i < out.size(); ++i)
      sortBuffer_[levelCount_[size_t(levels_ - 1 - levelOf_[out[i]])]++] = out[i];
    std::copy(sortBuffer_.begin(), sortBuffer_.end(), out.begin() + long(first));
  }
}

void ColourPlanner::wantAgain(const std::vector<size_t>& tiles, std::vector<size_t>& out) {
  for (size_t t : tiles)
    if (t < marked_.size() && !marked_[t]) {
      marked_[t] = 1;
      markedList_.push_back(t);
      out.push_back(t);
    }
}

void ColourPlanner::clearWanted() {
  for (size_t t : markedList_) marked_[t] = 0;
  markedList_.clear();
  for (size_t h : keptTiles_) keptCount_[h] = 0;
  keptTiles_.clear();
  keptLeaves_.clear();
}

int ColourPlanner::cells(const DrawTile& tile, const LodCamera& camera, const std::vector<long>& layerOf,
                         std::vector<ColourCell>& out, std::vector<size_t>* coarser) const {
  std::vector<Leaf> computed;
  const Leaf* lb = nullptr;
  size_t ln = 0;
  if (tile.tile < keptCount_.size() && keptCount_[tile.tile] > 0) {
    lb = keptLeaves_.data() + keptFirst_[tile.tile];
    ln = keptCount_[tile.tile];
  } else {
    leaves(tile.tile, camera, computed);
    lb = computed.data();
    ln = computed.size();
  }
  struct {
    const Leaf *b, *e;
    const Leaf* begin() const { return b; }
    const Leaf* end() const { return e; }
  } ls{lb, lb + ln};
  int D = 0;
  for (const Leaf& l : ls) D = std::max(D, l.depth);
  const uint32_t n = 1u << D;
  const size_t base = out.size();
  out.resize(base + size_t(n) * n);
  const LodTile& t = selector_.pyramid().tiles[tile.tile];
  const int kD = t.level + finer_ - D;  // the level of one grid cell's own region
  for (const Leaf& l : ls) {
    const uint32_t w = 1u << (D - l.depth);
    // The resident tile this leaf shows: its own (finest existing) tile or an ancestor.
    long r = l.tile;
    if (coarser && lb != computed.data() && r >= 0 && layerOf[size_t(r)] < 0) coarser->push_back(size_t(r));
    while (r >= 0 && layerOf[size_t(r)] < 0) r = parent_[size_t(r)];
    for (uint32_t gy = l.cy * w; gy < (l.cy + 1) * w; ++gy)
      for (uint32_t gx = l.cx * w; gx < (l.cx + 1) * w; ++gx) {
        ColourCell& c = out[base + size_t(gy) * n + gx];
        if (r < 0) {
          c = ColourCell();
          continue;
        }
        const int up = levelOf_[size_t(r)] - kD;  // >= 0: r covers the cell
        const uint64_t X = (uint64_t(t.x) << D) + gx, Y = (uint64_t(t.y) << D) + gy;
        const uint64_t mask = (uint64_t(1) << up) - 1;
        const float scale = float(std::ldexp(1.0, -up));
        c.layer = float(layerOf[size_t(r)]);
        c.scale = scale;
        c.offsetU = float(X & mask) * scale;
        c.offsetV = float(Y & mask) * scale;
      }
  }
  return int(n);
}

// ---- ColourStrategy ----

const char* colourFormatName(ColourFormat f) { return f == ColourFormat::Bc1 ? "bc1" : "rgba8"; }

ColourStrategy::ColourStrategy(const hfa::ArchiveReader& archive, ColourFormat format,
                               himg::Bc1Mode mode, int threads)
    : archive_(archive), format_(format), mode_(mode) {
  int n = threads > 0 ? threads : int(std::thread::hardware_concurrency()) - 1;
  n = std::max(1, n);
  for (int i = 0; i < n; ++i) threads_.emplace_back([this] { worker(); });
}

ColourStrategy::~ColourStrategy() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

bool ColourStrategy::makeTile(const hfa::ArchiveReader& archive, size_t tile, ColourFormat format,
                              himg::Bc1Mode mode, himg::JpegTileDecoder& decoder, ColourTile& out,
                              uint64_t& bytesRead) {
  out.tile = tile;
  out.mips.clear();
  out.error.clear();
  thread_local std::vector<uint8_t> bytes;  // out of the mapping: a file changed on disk is an error
  if (!archive.copyImageryPayload(tile, bytes, out.error)) return false;
  const uint8_t* data = bytes.data();
  const size_t size = bytes.size();
  bytesRead += size;
  const hfa::ImageryHeader& im = archive.imagery();
  const int T = im.tileSize;
  const hfa::ImageryEntry& e = archive.imageryTiles()[tile];
  if (e.codec == hfa::ImageryCodec::Bc1) {
    // The stored chain is this function's own output for ColourFormat::Bc1 (buildMipChain, then
    // encodeBc1 per level): uploaded as it is. RGBA8 atlases decode each level.
    static_assert(hfa::kImageryBc1MaxLevels == himg::kTileMipLevels, "a bc1 tile holds the atlas's mip levels");
    const int levels = hfa::imageryBc1Levels(T);
    if (uint64_t(size) != hfa::imageryBc1ChainBytes(T)) {  // open() checked it; never trust a size twice removed
      out.error = archive.imageryTileName(tile) + ": bc1 payload of " + std::to_string(size) + " bytes, not a " +
                  std::to_string(T) + " x " + std::to_string(T) + " BC1 mip chain";
      return false;
    }
    out.mips.resize(size_t(levels));
    for (int m = 0; m < levels; ++m) {
      const uint8_t* level = data + hfa::imageryBc1LevelOffset(T, m);
      const uint8_t* end = data + hfa::imageryBc1LevelOffset(T, m + 1);
      if (format == ColourFormat::Bc1) {
        out.mips[size_t(m)].assign(level, end);
      } else {
        const int s = T >> m;
        out.mips[size_t(m)].resize(size_t(s) * size_t(s) * 4);
        himg::decodeBc1(level, s, s, out.mips[size_t(m)].data());
      }
    }
    return true;
  }
  std::vector<uint8_t> rgba(size_t(T) * size_t(T) * 4);
  if (e.codec == hfa::ImageryCodec::Raw) {
    std::copy(data, data + std::min(size, rgba.size()), rgba.begin());  // size checked by open()
  } else if (!decoder.decode(data, size, T, rgba.data(), out.error)) {
    out.error = archive.imageryTileName(tile) + ": " + out.error;
    return false;
  }
  int count = 1;
  while (count < himg::kTileMipLevels && (T >> count) >= 16) ++count;
  himg::buildMipChain(rgba.data(), T, count, out.mips);
  if (format == ColourFormat::Bc1) {
    for (size_t m = 0; m < out.mips.size(); ++m) {
      const int s = T >> m;
      std::vector<uint8_t> blocks(size_t(s) * size_t(s) / 2);
      himg::encodeBc1(out.mips[m].data(), s, s, mode, blocks.data());
      out.mips[m].swap(blocks);
    }
  }
  return true;
}

void ColourStrategy::worker() {
  himg::JpegTileDecoder decoder;
  std::string tables_error;
  const bool tables_ok = archive_.imagery().jpegTables.empty() ||
                         decoder.setTables(archive_.imagery().jpegTables.data(),
                                           archive_.imagery().jpegTables.size(), tables_error);
  for (;;) {
    size_t tile;
    ReadAhead ahead;  // this tile and the ones queued behind it (stream.h)
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      tile = queue_.front();
      queue_.pop_front();
      ahead.take(tile, queue_);
    }
    archive_.willNeedImagery(ahead.tiles, ahead.count);
    const auto t0 = std::chrono::steady_clock::now();
    ColourTile done;
    uint64_t bytes = 0;
    if (!tables_ok) {
      done.tile = tile;
      done.error = "the archive's JPEG tables: " + tables_error;
    } else {
      makeTile(archive_, tile, format_, mode_, decoder, done, bytes);
    }
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.bytesRead += bytes;
    stats_.workerMs += ms;
    done_.push_back(std::move(done));
  }
}

void ColourStrategy::request(const std::vector<size_t>& tiles) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t t : queue_) active_.erase(t);
  queue_.clear();
  for (size_t t : tiles) {
    if (t >= archive_.imageryTiles().size() || !active_.insert(t).second) continue;
    queue_.push_back(t);
  }
  stats_.requested = active_.size();
  if (!queue_.empty()) wake_.notify_all();
}

size_t ColourStrategy::deliver(ColourSink& sink, size_t maxTiles) {
  size_t n = 0;
  while (n < maxTiles) {
    ColourTile t;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (done_.empty()) break;
      t = std::move(done_.front());
      done_.pop_front();
    }
    if (!t.error.empty()) {
      sink.colourFailed(t.tile, t.error);
      std::lock_guard<std::mutex> lock(mutex_);
      active_.erase(t.tile);
      ++stats_.failed;
      continue;
    }
    uint32_t layer = 0;
    const bool reserved = sink.reserveColour(t.tile, layer);
    if (reserved) sink.uploadColour(t, layer);
    uint64_t bytes = 0;
    for (const auto& m : t.mips) bytes += m.size();
    std::lock_guard<std::mutex> lock(mutex_);
    active_.erase(t.tile);
    if (reserved) {
      ++stats_.delivered;
      stats_.bytesToDevice += bytes;
      ++n;
    } else {
      ++stats_.dropped;  // asked again by a later request
    }
  }
  return n;
}

bool ColourStrategy::loadNow(size_t tile, ColourSink& sink, std::string& error) {
  himg::JpegTileDecoder decoder;
  const auto& tables = archive_.imagery().jpegTables;
  if (!tables.empty() && !decoder.setTables(tables.data(), tables.size(), error)) {
    error = "the archive's JPEG tables: " + error;
    return false;
  }
  ColourTile t;
  uint64_t bytes = 0;
  if (!makeTile(archive_, tile, format_, mode_, decoder, t, bytes)) {
    error = t.error;
    sink.colourFailed(tile, error);
    return false;
  }
  uint32_t layer = 0;
  if (!sink.reserveColour(tile, layer)) {
    error = "no colour atlas layer for " + archive_.imageryTileName(tile);
    return false;
  }
  sink.uploadColour(t, layer);
  uint64_t up = 0;
  for (const auto& m : t.mips) up += m.size();
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.bytesRead += bytes;
  stats_.bytesToDevice += up;
  ++stats_.delivered;
  return true;
}

size_t ColourStrategy::pending() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return active_.size();
}

ColourStats ColourStrategy::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  ColourStats s = stats_;
  s.requested = active_.size();
  return s;
}

}  // namespace hfr
