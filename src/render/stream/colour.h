// colour.h - GL-free imagery (colour) streaming for the renderer (issue 11, docs/rendering.md
// section 4): which imagery tiles each drawn height tile shows, the cell grids the fragment
// shader reads them through, and the worker strategy that turns the archive's imagery tiles
// into colour-atlas layers. Unit tests drive all of it without a GL context.
//
// Colour is decoupled from the height LOD: a height tile drawn coarse (flat sea, a plain) may
// still be close to the camera and need imagery several levels finer than its own, and imagery
// is often finer than the DEM (the archive's imagery-only levels). So each drawn height tile is
// split into a grid of n x n cells (n = 2^d, d <= maxDepth); each cell shows the imagery tile
// whose texels project to about texelPixels on screen (refined per cell from the eye distance),
// or, until that tile is resident, its nearest resident ancestor through a scale and offset.
// The shader samples cell (floor(u n), floor(v n)) of the tile's entry list (ColourCell).
//
// - ColourPlanner: the per-tile cell recursion, for two uses: want() lists the imagery tiles a
//   set of height tiles needs (with their ancestors, coarse levels first, so the view refines
//   progressively and a fallback always exists), cells() builds the drawn tile's cell entries
//   from the tiles resident now.
// - ColourStrategy: worker threads read imagery payloads, decode them (libjpeg-turbo, or raw
//   RGBA8), build the mip levels inside the tile and, for ColourFormat::Bc1, encode every mip
//   with this project's BC1 encoder; deliver() hands finished tiles to a ColourSink (the GL
//   colour atlas) and never waits. Tiles stored as bc1 (the BC1 mip chain itself) skip all of
//   that: a BC1 atlas gets the stored levels as they are, an RGBA8 atlas their decoding. "raw" uploads RGBA8 (for comparison, and where S3TC is
//   missing), "cpu" uploads BC1 (4 bits per texel in video memory).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "imagery/imagery.h"
#include "render/lod/lod.h"

namespace hfa {
class ArchiveReader;
}

namespace hfr {

// One cell of a drawn tile's grid (std430 vec4): the colour-atlas layer (-1: no imagery here,
// shade the terrain), and where the cell lies inside that layer's tile region: region uv =
// offset + cell uv * scale (1, 0, 0 when the cell's own tile is resident).
struct ColourCell {
  float layer = -1, scale = 1, offsetU = 0, offsetV = 0;
};

class ColourPlanner {
 public:
  // The archive must have imagery (its index is read here, not kept); `selector` (the height
  // selector over the same archive's tiles: its pyramid gives the tiles' world boxes) must
  // outlive the planner.
  ColourPlanner(const hfa::ArchiveReader& archive, const LodSelector& selector);

  int maxDepth = 3;          // cells per side at most 2^maxDepth
  double texelPixels = 1.0;  // refine a cell while its texels project larger than this

  // Appends to `out` the imagery tiles needed to colour `heightTiles` (indices into the
  // selector's pyramid) seen by `camera`: each cell's tile and all its ancestors, once each
  // (marks persist across calls until clearWanted()), coarse levels first within this call.
  // `keepLeaves`: remember each tile's cells for cells() with the same camera (the render
  // thread's frame: planned once, drawn from the same cells) until clearWanted().
  void want(const std::vector<size_t>& heightTiles, const LodCamera& camera,
            std::vector<size_t>& out, bool keepLeaves = false);
  void clearWanted();
  // Appends to `out` the tiles of `tiles` not wanted yet (and marks them): a list want() made
  // in an earlier frame, reused (the renderer's refinement prefetch, planned every few frames).
  void wantAgain(const std::vector<size_t>& tiles, std::vector<size_t>& out);
  // The cells of drawn tile `tile` (n x n, row-major, north row first) appended to `cells`;
  // `layerOf` (one entry per imagery tile): the resident tile's atlas layer or -1. Returns n
  // (1 when the tile needs no refinement; cells of a tile without any imagery have layer -1).
  // Uses the cells kept by want(..., keepLeaves) for this tile when there are any (the caller
  // passes the same camera), else computes them.
  // `coarser` (optional): appended with the imagery tiles the cells want that are not resident
  // (shown from an ancestor for now), for tiles whose cells want() kept: a drawn tile that is
  // itself a stand-in for missing height tiles is not the imagery's fault.
  int cells(const DrawTile& tile, const LodCamera& camera, const std::vector<long>& layerOf,
            std::vector<ColourCell>& cells, std::vector<size_t>* coarser = nullptr) const;

 private:
  // Leaf cells of height tile `t` for `camera`: (depth, cx, cy) with the finest existing
  // imagery tile for each (or -1).
  struct Leaf {
    int depth;
    uint32_t cx, cy;
    long tile;
  };
  void leaves(size_t heightTile, const LodCamera& camera, std::vector<Leaf>& out) const;
  long finestExisting(int level, uint64_t X, uint64_t Y) const;
  // Imagery tile (level, X, Y) or -1 in O(1): a dense grid per level (the archive's index
  // is a binary search; the render thread asks this thousands of times a frame).
  long find(int level, uint64_t X, uint64_t Y) const {
    if (level < 0 || level >= levels_ || X >= gridW_[size_t(level)] || Y >= gridH_[size_t(level)]) return -1;
    return grid_[size_t(gridFirst_[size_t(level)] + Y * gridW_[size_t(level)] + X)];
  }

  const LodSelector& selector_;
  int finer_ = 0, levels_ = 0, content_ = 248;
  std::vector<int> levelOf_;
  std::vector<long> parent_;
  std::vector<uint8_t> marked_;
  std::vector<size_t> markedList_;
  std::vector<int32_t> grid_;                   // per level, row-major: tile index or -1
  std::vector<uint64_t> gridFirst_, gridW_, gridH_;
  std::vector<uint8_t> hasChild_;               // per imagery tile: some child exists
  // Height tiles by (level, x, y), dense per level: a cell's box takes the height range of the
  // height tile it covers (its own, or the level-0 tile it lies in), not its drawn tile's,
  // whose range (a peak elsewhere in the tile) would bring every cell close to the camera.
  std::vector<int32_t> heightGrid_;
  std::vector<uint64_t> heightFirst_, heightW_, heightH_;
  void cellHeights(const LodTile& t, int depth, uint32_t cx, uint32_t cy, double& minZ, double& maxZ) const;
  // Leaves kept by want(..., true): per height tile, where its leaves start in keptLeaves_
  // (keptCount_ 0: none kept).
  std::vector<Leaf> keptLeaves_;
  std::vector<uint32_t> keptFirst_, keptCount_;
  std::vector<size_t> keptTiles_;
  std::vector<Leaf> scratchLeaves_;             // want()'s per-tile leaves (reused)
  std::vector<size_t> levelCount_, sortBuffer_;  // want()'s counting sort (reused)
};

enum class ColourFormat : uint8_t { Bc1 = 0, Rgba8 = 1 };
const char* colourFormatName(ColourFormat f);  // "bc1", "rgba8"

// A finished tile: its mip levels (himg::kTileMipLevels) in the atlas's format.
struct ColourTile {
  size_t tile = 0;
  std::vector<std::vector<uint8_t>> mips;
  std::string error;  // non-empty: failed (corrupt payload)
};

// Where a colour strategy puts finished tiles (the GL colour atlas; a fake in unit tests).
class ColourSink {
 public:
  virtual ~ColourSink() = default;
  // A layer for `tile` (evicting the least recently used); false when none is free this frame.
  virtual bool reserveColour(size_t tile, uint32_t& layer) = 0;
  virtual void uploadColour(const ColourTile& tile, uint32_t layer) = 0;
  // The tile cannot be loaded: it stays absent and is drawn from an ancestor.
  virtual void colourFailed(size_t tile, const std::string& error) = 0;
  // For strategies that make BC1 on the GPU ("cuda"): the tile's whole BC1 mip chain (levels
  // one after another, level 0 first, as hfgpu::encodeTileChainsAsync writes it) lies in GL
  // buffer object `buffer` at byte `offset`, written by work the GL queue already follows;
  // the sink copies it into `layer` without a round trip through host memory.
  virtual bool supportsChainUpload() const { return false; }
  virtual void uploadColourChainFromBuffer(uint32_t layer, unsigned buffer, size_t offset) {
    (void)layer;
    (void)buffer;
    (void)offset;
  }
};

struct ColourStats {
  size_t requested = 0, delivered = 0, failed = 0, dropped = 0;
  uint64_t bytesRead = 0;      // archive payload bytes read
  uint64_t bytesToDevice = 0;  // mip bytes handed to the sink (what crosses to the GPU)
  double workerMs = 0;         // worker time decoding + encoding, summed over threads
  // The VRAM cache of the cuda strategy (--cache vram): tiles copied into the atlas from the
  // BC1 chains kept in video memory (no decode, nothing over PCIe), the bytes kept, the pool's
  // capacity, and how long finishPrefetch() took to fill it (0 when not called).
  uint64_t cacheHits = 0, cacheBytes = 0, cacheCapacity = 0;
  double preloadMs = 0;
};

// What the renderer streams imagery through: ColourStrategy (CPU workers: "cpu", "raw") or the
// CUDA strategy of src/render/gl ("cuda"). Called from the render thread only.
class ColourStream {
 public:
  virtual ~ColourStream() = default;
  virtual const char* name() const = 0;
  virtual ColourFormat format() const = 0;
  // The tiles wanted now, most important first; replaces the queue of tiles not yet started.
  virtual void request(const std::vector<size_t>& tiles) = 0;
  // Hands at most about maxTiles finished tiles to the sink; never waits for work in flight.
  virtual size_t deliver(ColourSink& sink, size_t maxTiles) = 0;
  // Loads one tile synchronously (start-up: the top level).
  virtual bool loadNow(size_t tile, ColourSink& sink, std::string& error) = 0;
  virtual size_t pending() const = 0;
  virtual ColourStats stats() const = 0;
  // Strategies with a VRAM cache that holds the whole imagery: returns once every tile is in
  // it (the render thread drives the GPU work). Others return at once.
  virtual void finishPrefetch(ColourSink& sink) { (void)sink; }
};

class ColourStrategy final : public ColourStream {
 public:
  // "cpu" (Bc1, `mode`) or "raw" (Rgba8). threads: 0 = hardware concurrency - 1, at least 1.
  ColourStrategy(const hfa::ArchiveReader& archive, ColourFormat format,
                 himg::Bc1Mode mode = himg::Bc1Mode::Fast, int threads = 0);
  ~ColourStrategy() override;
  ColourStrategy(const ColourStrategy&) = delete;
  ColourStrategy& operator=(const ColourStrategy&) = delete;

  const char* name() const override { return format_ == ColourFormat::Bc1 ? "cpu" : "raw"; }
  ColourFormat format() const override { return format_; }
  void request(const std::vector<size_t>& tiles) override;
  size_t deliver(ColourSink& sink, size_t maxTiles) override;  // at most maxTiles
  bool loadNow(size_t tile, ColourSink& sink, std::string& error) override;
  size_t pending() const override;
  ColourStats stats() const override;

  // The work of one tile (also what loadNow and tests use): payload -> RGBA8 -> mips -> format;
  // a bc1 payload's levels are the mips (Bc1: copied as stored, Rgba8: himg::decodeBc1 each).
  // bytesRead grows by the payload's size.
  static bool makeTile(const hfa::ArchiveReader& archive, size_t tile, ColourFormat format,
                       himg::Bc1Mode mode, himg::JpegTileDecoder& decoder, ColourTile& out,
                       uint64_t& bytesRead);

 private:
  void worker();
  const hfa::ArchiveReader& archive_;
  const ColourFormat format_;
  const himg::Bc1Mode mode_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<size_t> queue_;
  std::unordered_set<size_t> active_;
  std::deque<ColourTile> done_;
  ColourStats stats_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace hfr
