// part.h - sharded packing (docs/sharded-packing.md; internal to hfpack_lib): which subtrees of
// the quadtree shard I of N packs, the part file it writes, and what `hfpack merge` reads back.
//
// The quadtree is cut at a split level S: the level-S tiles are the roots, numbered row-major,
// and shard I packs levels 0..S of a contiguous run of roots (balanced by the level-0 samples
// they cover), plus its share of the coarse grid: the level-0 samples at stride 2^(S+1) (and
// the last row and column), from which the merge builds levels S+1.. exactly as a single pack
// does. Payload order, index capacity and header are the merge's, computed from the plan every
// part carries, so the merged archive is byte-identical to a single-machine pack.
//
// Contract: PartReader::open validates the whole file (magic, version, checksums of the
// header, plan, tile table and coarse samples, every bound) and returns a one-line error for
// anything wrong; payload() checks each payload's CRC. PartWriter writes to PATH.tmp.XXXXXX
// and renames onto PATH only in finish(); a failure or destruction before finish() removes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "archive/archive.h"

namespace hfpack {

constexpr int kMaxShards = 65536;

// How N shards split the quadtree of an archive with header h.
struct ShardLayout {
  int split = 0;                    // S: the roots' level
  uint32_t rootsX = 0, rootsY = 0;  // level-S tiles per side
  uint64_t span = 0;                // level-0 samples per root side: (p - 1) 2^S
  uint64_t first = 0, end = 0;      // this shard's roots [first, end), row-major
  // The coarse grid (empty when S + 1 = levels): coarse sample (i, j) is level-0 sample
  // (min(i 2^(S+1), W - 1), min(j 2^(S+1), H - 1)); one more column (row) than the stride gives
  // when W - 1 (H - 1) is not a multiple of 2^(S+1), so that the last one is the clamp.
  bool coarse = false;
  uint64_t stride = 0;              // 2^(S+1)
  uint32_t coarseW = 0, coarseH = 0;
  uint32_t half = 0;                // coarse samples per root side: (p - 1) / 2

  bool empty() const { return first == end; }
  uint64_t roots() const { return uint64_t(rootsX) * rootsY; }
  // Level-0 rows this shard pushes: firstRow..lastRow (only when !empty()).
  uint64_t firstRow = 0, lastRow = 0;
  // The roots of root row ry that are this shard's: [x0, x1) (x0 == x1: none).
  void rootColumns(uint64_t ry, uint64_t& x0, uint64_t& x1) const;
  bool ownsTile(int level, uint32_t x, uint32_t y) const;  // level <= S
};

// shard 1..shards (1-based, as Slurm's --array=1-N); h is the archive's header (levels, extent,
// tile size).
ShardLayout shardLayout(const hfa::Header& h, int shard, int shards);

// The position of tile (level, x, y) in a single pack's payload order (docs/sharded-packing.md):
// the pyramid emits a tile row when its last level-0 row is pushed, levels in order, tiles
// left to right; the rows beyond the extent at the end.
struct PayloadKey {
  uint64_t row = 0;
  uint32_t level = 0, x = 0;
  bool operator<(const PayloadKey& o) const {
    if (row != o.row) return row < o.row;
    if (level != o.level) return level < o.level;
    return x < o.x;
  }
};
PayloadKey payloadKey(const hfa::Header& h, int level, uint32_t x, uint32_t y);

// The plan: everything a part's content depends on, as "key=value" lines, identical in every
// part of one pack (the merge compares them byte for byte): the archive header as pack computes
// it before any tile (exact: doubles in C99 hex), the encoder's options, the shard count and
// split level, and `extra` lines the merge only compares (the inputs, by canonical path, size
// and modification time, and the pack options that shape the samples).
struct Plan {
  hfa::Header header;  // filledSamples and sourceValidSamples 0 (the parts' sums)
  int shards = 0, split = 0;
  int segment = 9, bits = -1;
  bool keepNodata = false;
  uint16_t nodataSample = 0;
  double bandScale = 1, quantMaxError = 0;  // quantError = bandScale max(quantMaxError, measured)
  std::vector<std::pair<std::string, std::string>> extra;
};
std::string planText(const Plan& plan);
bool parsePlan(const std::string& text, Plan& plan, std::string& error);
// The key of the first line where two plans differ ("" when equal), for error messages.
std::string planDifference(const std::string& a, const std::string& b);

// The fixed fields of a part (everything but the tiles and the coarse samples).
struct PartInfo {
  int shard = 0, shards = 0, split = 0;
  int tileLog = 0;
  uint64_t first = 0, end = 0;  // roots
  uint64_t validSamples = 0, filledSamples = 0;  // counted over the shard's roots
  double measuredQuantError = 0;                 // demio::DemSource::measuredQuantError
  std::string plan;  // "key=value" lines, identical in every part of one pack
};

// A run of coarse samples: row j, columns i0 .. i0 + samples.size() - 1.
struct CoarseRun {
  uint32_t j = 0, i0 = 0;
  std::vector<uint16_t> samples;
  std::vector<uint8_t> states;  // pyramid.h: kNodata, kValid, kFilled
};

class PartWriter {
 public:
  PartWriter() = default;
  ~PartWriter();  // abort()s an unfinished part
  PartWriter(const PartWriter&) = delete;
  PartWriter& operator=(const PartWriter&) = delete;
  bool open(const std::string& path, int tileLog, std::string& error);
  // Appends a payload; entry.offset, size and crc are filled here.
  bool addTile(hfa::TileEntry entry, const uint8_t* payload, size_t size, std::string& error);
  void addCoarse(CoarseRun run) { coarse_.push_back(std::move(run)); }
  uint64_t tiles() const { return entries_.size(); }
  uint64_t payloadBytes() const { return end_ - kPayloadStart; }
  // Writes plan, tile table, coarse samples and header, fsyncs, renames onto the path.
  bool finish(const PartInfo& info, std::string& error);
  void abort();
  static constexpr uint64_t kPayloadStart = 256;

 private:
  bool writeAt(uint64_t offset, const void* data, size_t size, std::string& error);
  std::string path_, tmp_;
  int fd_ = -1, tileLog_ = 0;
  uint64_t end_ = kPayloadStart;
  std::vector<hfa::TileEntry> entries_;
  std::vector<CoarseRun> coarse_;
};

class PartReader {
 public:
  PartReader() = default;
  ~PartReader();
  PartReader(const PartReader&) = delete;
  PartReader& operator=(const PartReader&) = delete;
  bool open(const std::string& path, std::string& error);
  const PartInfo& info() const { return info_; }
  const std::vector<hfa::TileEntry>& tiles() const { return tiles_; }  // in the shard's order
  const std::vector<CoarseRun>& coarse() const { return coarse_; }
  // Tile i's payload (a pointer into the mapping), after its CRC check.
  bool payload(size_t i, const uint8_t*& data, size_t& size, std::string& error) const;

 private:
  const uint8_t* map_ = nullptr;
  uint64_t size_ = 0;
  PartInfo info_;
  std::vector<hfa::TileEntry> tiles_;
  std::vector<CoarseRun> coarse_;
};

}  // namespace hfpack
