// pyramid.h - streaming construction of the tile pyramid from level-0 rows (bounded memory),
// and the void fill. Used by pack (encode the tiles) and verify (compare them).
//
// Level L sample (i, j) = level-0 sample (min(i 2^L, W - 1), min(j 2^L, H - 1)): level L+1 keeps
// every second sample of level L, and samples beyond the data extent repeat the last row or
// column (docs/archive.md, "Pyramid"). Each level keeps only one row of tiles (p rows of its
// padded width), so memory is O(p * W) whatever the height.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "demio/dem_source.h"
#include "hfpack.h"

namespace hfpack {

enum : uint8_t { kNodata = 0, kValid = 1, kFilled = 2 };

struct Tile {
  int level = 0;
  uint32_t x = 0, y = 0;
  std::vector<uint16_t> samples;  // p x p
  std::vector<uint8_t> state;     // p x p: kNodata / kValid / kFilled
  uint32_t filled = 0;
  bool hasNodata = false;
};

class Pyramid {
 public:
  // emit receives each completed row of tiles of one level (only tiles with a valid sample);
  // it may move from the vector. Returning false stops the build.
  using Emit = std::function<bool(std::vector<Tile>&)>;
  Pyramid(uint32_t width, uint32_t height, int tileLog, int levels, Emit emit);
  bool pushRow(const uint16_t* row, const uint8_t* state);  // rows in order 0..H-1
  bool finish();                                            // after row H-1
  uint64_t maxTiles() const;                                // tiles of all complete grids
  // Sharded packing: the next pushRow() is level-0 row y0 (a multiple of (p - 1) 2^(levels-1),
  // so that every level starts a tile row there). Call before the first pushRow(). A pyramid
  // that stops before row H - 1 emits every tile row that ends at or before its last row; it
  // must not finish().
  void startAt(uint32_t y0);

 private:
  struct Level {
    uint32_t tilesX = 0, tilesY = 0, paddedWidth = 0;
    uint32_t tileRow = 0;  // tile row being filled
    int nextSlot = 0;      // next buffer row to fill
    std::vector<uint16_t> samples;
    std::vector<uint8_t> state;
  };
  void levelRow(int level, const uint16_t* row, const uint8_t* state, int slot);
  bool emitRow(int level);
  uint32_t width_, height_;
  int p_;
  std::vector<Level> levels_;
  Emit emit_;
  uint32_t y_ = 0;
  std::vector<uint16_t> lastRow_;
  std::vector<uint8_t> lastState_;
};

// The index entry pack stores for an encoded tile (level, position, flags, statistics, codec);
// offset, size and crc are the writer's.
hfa::TileEntry tileEntry(const Tile& t, hfa::TileStats& stats, hfa::Codec codec);

// Fills the voids (state kNodata) of a w x h window in place by push-pull interpolation
// (an averaging pyramid of the valid samples, pulled back down bilinearly) and marks them
// kFilled. Returns false when the window has no valid sample (nothing is changed then).
bool fillVoids(uint16_t* samples, uint8_t* state, int w, int h, hfpac::SampleType type, bool quantised);

struct StreamStats {
  uint64_t valid = 0, filled = 0;
};

// A part of the rows for sharded packing (docs/sharded-packing.md). The default is everything.
struct StreamRange {
  int first = 0, last = -1;  // level-0 rows pushed: first..last (-1: H - 1); finish() only at H - 1
  // The columns [c0, c1) of row y whose samples StreamStats counts (empty: every column).
  std::function<void(int y, int& c0, int& c1)> counted;
  // Sees every row pushed, after the void fill (empty: none).
  std::function<void(int y, const uint16_t* row, const uint8_t* state)> tap;
};

// Reads the whole source in bands of rows, fills voids if asked (each band with a halo of
// rows around it, so voids are interpolated from both sides), and pushes every row. With a
// range, reads the same bands (with the same halos) as the whole stream does for those rows,
// so every pushed row is the one the whole stream pushes; a band with no valid sample near it
// takes the last valid sample above it as the whole stream does (read back if needed).
bool streamSource(demio::DemSource& source, bool fill, Pyramid& pyramid, const Progress& progress,
                  StreamStats& stats, std::string& error, const StreamRange& range = StreamRange());

}  // namespace hfpack
