// archive.h - the .hfa tile archive: header, tile index, payloads (spec: docs/archive.md).
//
// An archive holds a pyramid of square tiles of p x p 16-bit samples, p = 2^n + 1. Level 0 is
// the source grid; level L+1 keeps every second sample of level L. Tile (L, x, y) covers level-L
// samples [x (p-1), x (p-1) + p - 1] x [y (p-1), y (p-1) + p - 1]; neighbours share an edge.
//
// Contract:
// - ArchiveReader validates the header, the level table and the whole tile index (ranges,
//   order, payload bounds, checksums of header and index) in open(); after that, every
//   accessor is const and may be called from many threads at once. Payloads are checked
//   (CRC32) each time they are fetched: a corrupt or truncated archive gives a one-line error
//   naming the tile, never a crash.
// - ArchiveWriter writes to "<path>.tmp.XXXXXX" in the same folder and renames it onto <path>
//   only in finish(); any failure (or destruction before finish()) removes the temporary file,
//   so no file that looks valid is left behind by an interrupted or failed pack.
// - Nothing here throws except std::bad_alloc; errors are returned as one-line strings
//   (no "Error:" prefix, no trailing newline).
// - Imagery (version 2): an optional second tile set of colour tiles that follows the same
//   quadtree (ImageryHeader below, docs/archive.md section 6). Version-1 archives (no imagery)
//   open everywhere; the writer always writes version 2.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "archive/fault_injection.h"
#include "archive/http_source.h"
#include "archive/read_limit.h"
#include "codec/hfpac.h"

namespace hfa {

constexpr uint32_t kMagic = 0x52414648u;  // bytes 'H','F','A','R'
constexpr uint16_t kVersion = 2;   // written; 1 and 2 are read
constexpr uint32_t kHeaderBytes = 256;   // fixed header size (docs/archive.md, "Header")
constexpr uint32_t kEntryFixedBytes = 40;  // index entry without its error array
constexpr int kMinTileLog = 1, kMaxTileLog = 12;  // p = 3 .. 4097
constexpr int kMaxLevels = 32;

// Height codecs (docs/archive.md 2.4). Hfan is the entropy-coded stream of codec/ans.h
// (lossless only, no layers). Auto is a header value only: each tile is hfpac or hfan,
// whichever was smaller, and its index entry says which.
enum class Codec : uint8_t { Raw = 0, Hfpac = 1, HfpacRbuc = 2, Hfan = 3, Auto = 4 };
const char* codecName(Codec c);                   // "raw", "hfpac", "hfpac+rbuc", "hfan", "auto"
bool parseCodec(const std::string& s, Codec& c);  // accepts the names above
// True for the codecs whose payload is an HFPaC stream (hfpac, hfpac+rbuc).
inline bool isHfpacCodec(Codec c) { return c == Codec::Hfpac || c == Codec::HfpacRbuc; }
// Whether an archive of header codec `header` may hold a tile of codec `tile`: the header's
// own codec, or under auto hfpac or hfan (docs/archive.md 2.3). Readers refuse the rest, so a
// strategy can choose by the header codec alone.
inline bool tileCodecAllowed(Codec header, Codec tile) {
  return header == Codec::Auto ? (tile == Codec::Hfpac || tile == Codec::Hfan) : tile == header;
}

// Header flags.
enum : uint32_t {
  kFlagGeoTransform = 1u << 0,  // geoTransform is meaningful
  kFlagGeographic = 1u << 1,    // the CRS is geographic (degrees); spacing is metres at centre
  kFlagNodataKept = 1u << 2,    // nodata samples are stored as `nodata` (--nodata keep)
  kFlagNodataFilled = 1u << 3,  // nodata samples were filled by interpolation (--nodata fill)
  kFlagQuantised = 1u << 4,     // source was float/wide int, quantised with verticalScale
  kFlagSpacingKnown = 1u << 5,  // spacingX/Y are metres (else sample units)
};

// Tile flags (index entry).
enum : uint16_t {
  kTileFilled = 1u << 0,   // some samples of this tile were filled (not in the source)
  kTileHasNodata = 1u << 1,  // some samples equal the nodata value (--nodata keep)
};

struct Header {
  uint32_t flags = 0;
  int tileLog = 7;                  // n: p = 2^n + 1
  int levels = 1;
  Codec codec = Codec::Hfpac;
  hfpac::SampleType sampleType = hfpac::SampleType::Int16;
  uint32_t width = 0, height = 0;   // level-0 data extent in samples (before padding)
  uint16_t nodata = 0;              // nodata bit pattern (valid with kFlagNodataKept/Filled)
  double geoTransform[6] = {0, 1, 0, 0, 0, 1};  // GDAL order, level-0 pixel-is-area
  double spacingX = 1, spacingY = 1;  // level-0 sample spacing in metres (see kFlagSpacingKnown)
  double verticalScale = 1, verticalOffset = 0;  // height = offset + scale * sample
  double quantError = 0;            // bound on |height - source value| (0 = lossless)
  uint64_t filledSamples = 0;       // level-0 samples filled by --nodata fill
  uint64_t sourceValidSamples = 0;  // level-0 samples that were valid in the source
  std::string crsWkt;               // empty = unknown
  std::string verticalUnits;        // e.g. "m"; empty = unknown (assume metres)
  std::string codecOptions;         // free text, e.g. "segment=9 bits=auto" (informational)

  int tileSize() const { return (1 << tileLog) + 1; }
  // Tiles per side of level L: max(1, ceil((extent - 1) / ((p - 1) 2^L))).
  uint32_t tilesX(int level) const;
  uint32_t tilesY(int level) const;
  // Levels until one tile covers everything, for this extent and tile size.
  static int naturalLevels(uint32_t width, uint32_t height, int tileLog);
};

// ---- imagery (docs/archive.md section 6) ----
// Imagery level k covers the region of height level L = k - finerLevels: tile (k, x, y) with
// L >= 0 spans the height tile (L, x, y) exactly; with L < 0 (imagery finer than the DEM) it is
// one of the 4^-L sub-tiles of a level-0 tile. A tile is tileSize^2 RGBA texels whose content
// (tileSize - 2 border) spans the region; the border repeats the neighbours (filtering).
// Texel i of a tile at level L with origin x: level-0 sample coordinate
//   X = x (p - 1) 2^L + (i + 0.5 - border) (p - 1) 2^L / content   (sample centres at integers).
//
// Codecs (docs/archive.md section 6): raw (RGBA8 texels), jpeg (abbreviated JPEG, shared tables),
// bc1 (the tile's BC1 mip chain as the GPU samples it: uploaded without decoding).
enum class ImageryCodec : uint8_t { Raw = 0, Jpeg = 1, Bc1 = 2 };
const char* imageryCodecName(ImageryCodec c);                   // "raw", "jpeg", "bc1"
bool parseImageryCodec(const std::string& s, ImageryCodec& c);  // accepts the names above

// A bc1 tile is the BC1 (DXT1) mip chain of the tile's texels: levels m = 0 .. n - 1 of
// (tileSize >> m)^2 texels, n = imageryBc1Levels(tileSize) (the levels down to 16 x 16 texels,
// at most kImageryBc1MaxLevels: 256 .. 16 for the default 256), one after another, level 0 first,
// each level's 4x4 blocks row-major, 8 bytes per block (himg::encodeBc1). Alpha (coverage) is
// BC1's punch-through alpha: uncovered texels are index 3 of 3-colour blocks. The chain is the
// renderer's own (himg::buildMipChain + himg::encodeBc1 per level), so it is uploaded as stored.
constexpr int kImageryBc1MaxLevels = 5;  // = himg::kTileMipLevels (checked where both are seen)
int imageryBc1Levels(int tileSize);
// Byte offset of level m in the chain (m = levels: the chain's size).
uint64_t imageryBc1LevelOffset(int tileSize, int level);
// Exact payload size of a bc1 tile (43648 bytes for 256 x 256 texels: 4 bits per texel + mips).
uint64_t imageryBc1ChainBytes(int tileSize);

enum : uint16_t {
  kImageryPartial = 1u << 0,  // some texels are not covered by the source (alpha 0)
};

constexpr uint32_t kImageryMagic = 0x4d494648u;  // bytes 'H','F','I','M'
constexpr uint32_t kImageryEntryBytes = 32;
constexpr int kMaxImageryFinerLevels = 8;

struct ImageryHeader {
  ImageryCodec codec = ImageryCodec::Jpeg;  // what the packer used (tiles say their own)
                                            // jpeg tiles need jpegTables (raw and bc1: empty)
  int tileSize = 256;           // texels per side, border included (multiple of 16, 16..4096)
  int border = 4;               // texels on each side (< tileSize / 4)
  int finerLevels = 0;          // imagery-only levels below height level 0 (0..8)
  int levels = 0;               // imagery levels = Header::levels + finerLevels (set by the writer)
  int quality = 0;              // JPEG quality 1..100 (0 for raw and bc1)
  uint32_t flags = 0;           // bit 0: the source was not georeferenced (stretched to the DEM)
  double texelsPerSample = 0;   // source texels per level-0 sample (informational)
  std::vector<uint8_t> jpegTables;  // tables-only JPEG stream shared by every jpeg tile

  int content() const { return tileSize - 2 * border; }
  int heightLevel(int k) const { return k - finerLevels; }
};
enum : uint32_t { kImageryUnreferenced = 1u << 0 };

struct ImageryEntry {
  uint8_t level = 0;            // imagery level k
  ImageryCodec codec = ImageryCodec::Jpeg;
  uint16_t flags = 0;           // kImageryPartial
  uint32_t x = 0, y = 0;
  uint32_t size = 0;            // payload bytes (raw: tileSize^2 * 4, RGBA8 row-major;
                                // bc1: imageryBc1ChainBytes(tileSize))
  uint64_t offset = 0;
  uint32_t crc = 0;
};

// Tiles per side of imagery level k (the height level's, times 2^(finerLevels - k) below 0).
uint32_t imageryTilesX(const Header& h, const ImageryHeader& im, int k);
uint32_t imageryTilesY(const Header& h, const ImageryHeader& im, int k);

struct TileEntry {
  uint8_t level = 0;
  Codec codec = Codec::Hfpac;
  uint16_t flags = 0;
  uint32_t x = 0, y = 0;
  uint32_t size = 0;        // payload bytes
  uint64_t offset = 0;      // payload position in the file
  uint32_t crc = 0;         // CRC-32 (zlib) of the payload
  int32_t minSample = 0, maxSample = 0;  // sample values (signed for Int16), nodata excluded
  uint32_t filled = 0;      // samples of this tile that were filled
  std::vector<float> lodError;  // n + 1 values, in sample units (docs/archive.md, "LOD error")
};

// Per-tile statistics computed from the tile's samples (what the index stores besides the
// payload fields). `samples` is p x p, stride p, bit patterns of `type`.
struct TileStats {
  int32_t minSample = 0, maxSample = 0;
  bool hasNodata = false;
  std::vector<float> lodError;
};
void computeTileStats(const uint16_t* samples, int tileLog, hfpac::SampleType type,
                      bool hasNodata, uint16_t nodata, TileStats& out);

// The LOD error of one reduction step k (docs/archive.md): max |h - interpolation over the
// 2^k grid's 4-8 triangles| over all samples of the tile. Exposed for tests and the renderer.
float lodErrorAtStep(const uint16_t* samples, int tileLog, hfpac::SampleType type, int k);

uint32_t crc32(const uint8_t* data, size_t size);

class ArchiveWriter {
 public:
  ArchiveWriter() = default;
  ~ArchiveWriter();  // abort()s an unfinished archive
  ArchiveWriter(const ArchiveWriter&) = delete;
  ArchiveWriter& operator=(const ArchiveWriter&) = delete;

  // Creates the temporary file and reserves room for at most maxTiles index entries (and, with
  // imagery, maxImageryTiles imagery entries; imagery->levels is set from header.levels).
  // The temporary file (PATH.tmp.XXXXXX) stays locked (flock) until finish() renames it; stale
  // ones that writers killed before finishing left behind (unlocked, at least 2 s old) are
  // removed here.
  bool open(const std::string& path, const Header& header, size_t maxTiles, std::string& error,
            const ImageryHeader* imagery = nullptr, size_t maxImageryTiles = 0);
  // Appends one payload. Not thread-safe: callers serialise. entry.offset/size/crc are filled
  // here; the other fields are the caller's (codec: raw, hfpac, hfpac+rbuc or hfan; an auto
  // archive's tiles each say theirs).
  bool addTile(TileEntry entry, const uint8_t* payload, size_t size, std::string& error);
  // Appends one imagery payload (open() with imagery). Same rules as addTile.
  bool addImageryTile(ImageryEntry entry, const uint8_t* payload, size_t size, std::string& error);
  // Header fields that are only known at the end (filled counts, quantError) may be updated.
  Header& header() { return header_; }
  // Sorts and writes the index, the header, fsyncs and renames onto the final path.
  bool finish(std::string& error);
  // Removes the temporary file (idempotent).
  void abort();
  uint64_t payloadBytes() const { return payloadEnd_ - payloadStart_; }

 private:
  bool writeAt(uint64_t offset, const void* data, size_t size, std::string& error);
  // Writes a payload after the last one; fills its offset, size and CRC.
  bool appendPayload(const uint8_t* payload, size_t size, const char* what, uint64_t& offset,
                     uint32_t& storedSize, uint32_t& crc, std::string& error);
  std::string path_, tmpPath_;
  int fd_ = -1;
  Header header_;
  size_t maxTiles_ = 0;
  uint64_t payloadStart_ = 0, payloadEnd_ = 0;
  std::vector<TileEntry> entries_;
  bool hasImagery_ = false;
  ImageryHeader imagery_;
  size_t maxImageryTiles_ = 0;
  uint64_t imageryOffset_ = 0;
  std::vector<ImageryEntry> imageryEntries_;
};

class ArchiveReader {
 public:
  ArchiveReader() = default;
  ~ArchiveReader();
  ArchiveReader(const ArchiveReader&) = delete;
  ArchiveReader& operator=(const ArchiveReader&) = delete;

  // Maps the file and validates header, strings, level table and index. `path` may be an
  // http:// or https:// URL (http_source.h): the archive is then read by range requests into a
  // local cache, with HttpOptions::fromEnvironment() unless `http` is given; every accessor
  // below works the same, reads block until the bytes have arrived, and a network failure is a
  // one-line error for the tile (the same tile may succeed when asked again).
  bool open(const std::string& path, std::string& error, const HttpOptions* http = nullptr);
  void close();

  const Header& header() const { return header_; }
  const std::vector<TileEntry>& tiles() const { return entries_; }  // sorted by (level, y, x)
  // Index of tile (level, x, y) in tiles(), or -1 when absent. O(log tiles of that level).
  long find(int level, uint32_t x, uint32_t y) const;
  // First index and count of the level's tiles in tiles().
  void levelRange(int level, size_t& first, size_t& count) const;
  uint64_t fileSize() const { return size_; }
  const std::string& path() const { return path_; }
  // True for an archive opened from a URL; its source's figures (requests, bytes, cache).
  bool remote() const { return source_ != nullptr; }
  SourceStats sourceStats() const { return source_ ? source_->stats() : SourceStats(); }
  // A URL archive: distinct height and imagery tiles read since open() or dropPageCache() (with
  // a cold cache, the tiles that came over the network; benchmarks divide requests by it).
  uint64_t remoteTilesRead() const { return remoteRead_.load(std::memory_order_relaxed); }
  // Index entries the file has room for (>= tiles().size(); the writer's maxTiles).
  uint32_t indexCapacity() const { return capacity_; }

  // Payload bytes of a tile after checking bounds and CRC. Pointers stay valid until close();
  // for a URL archive, until this thread's next payload() (a copy).
  // With a read limiter set, waits for the payload's transfer first (as imageryPayload does).
  // `alreadyRead`: bytes at the payload's start read before (decodeTileLossy), not charged to
  // the read limiter again.
  bool payload(size_t tile, const uint8_t*& data, size_t& size, std::string& error,
               uint32_t alreadyRead = 0) const;
  // Decodes a tile into dst (p * p samples, stride p). Thread-safe. `alreadyRead` as payload().
  bool decodeTile(size_t tile, uint16_t* dst, std::string& error,
                  hfpac::Layers layers = hfpac::Layers::All, uint32_t alreadyRead = 0) const;
  // Progressive loading (hfview --progressive): only the first part of a tile's payload, the
  // stream header with layers 1 and 2 (hfpac::PatchInfo layer1Bytes + layer2Bytes, typically a
  // fraction of the payload), decoded at Layers::L12, i.e. within 2^(b-1) of the exact heights.
  // Nothing past that part is read (the decoder does not touch layer 3 at L12) and the read
  // limiter is charged for it alone; `bytesRead` says how much it was. The part cannot be
  // checksummed (the CRC covers the whole payload): a corrupt one fails here or decodes to
  // wrong heights, and the exact decode that replaces them (decodeTile with alreadyRead =
  // bytesRead) checks the CRC. Tiles with no such part (raw, 2DRBUC, stored and flat patches)
  // are decoded whole and checked as decodeTile does, with `exact` true. Thread-safe.
  bool decodeTileLossy(size_t tile, uint16_t* dst, bool& exact, uint32_t& bytesRead,
                       std::string& error) const;
  // Copies out of the mapping, for readers that keep running while other programs may change
  // the file (the viewer): the bytes are read under a SIGBUS guard, so a file truncated or
  // rewritten under the reader gives a false return with "the archive file changed on disk"
  // (or a checksum mismatch) instead of a crash; decodeTile and decodeTileLossy read this way.
  // The payload() / imageryPayload() pointers above read the mapping directly (offline tools).
  // copyPayload: the whole payload, CRC checked on the copy (`alreadyRead` as payload()).
  bool copyPayload(size_t tile, std::vector<uint8_t>& out, std::string& error, uint32_t alreadyRead = 0) const;
  // copyLossyPayload: what decodeTileLossy reads, for decoders of their own (the GPU): `out` is
  // the payload's size with only the header and layers 1 + 2 copied (prefixBytes; layer 3
  // zero), or the whole checked payload (prefixBytes = its size) when the tile has no such part.
  bool copyLossyPayload(size_t tile, std::vector<uint8_t>& out, uint32_t& prefixBytes, std::string& error) const;
  bool copyImageryPayload(size_t tile, std::vector<uint8_t>& out, std::string& error) const;
  // "tile (L2, x3, y5)" for messages.
  std::string tileName(size_t tile) const;
  // Asks the kernel to start reading these tiles' payload pages now (madvise MADV_WILLNEED):
  // a loader calls it for the tiles queued behind the one it reads, so that reads from a cold
  // disk overlap instead of faulting in one after another. Each tile is advised once until
  // dropPageCache(); out-of-range indices are ignored. Thread-safe, no effect on the data.
  void willNeed(const size_t* tiles, size_t count) const;
  // The same for imagery tiles (the colour loaders' read-ahead); no once-only bookkeeping.
  void willNeedImagery(const size_t* tiles, size_t count) const;

  // ---- imagery (empty / false for archives without it) ----
  bool hasImagery() const { return hasImagery_; }
  const ImageryHeader& imagery() const { return imagery_; }
  const std::vector<ImageryEntry>& imageryTiles() const { return imageryEntries_; }  // by (k, y, x)
  long findImagery(int level, uint32_t x, uint32_t y) const;
  void imageryLevelRange(int level, size_t& first, size_t& count) const;
  // Payload bytes of an imagery tile after the CRC check (as payload()).
  bool imageryPayload(size_t tile, const uint8_t*& data, size_t& size, std::string& error) const;
  std::string imageryTileName(size_t tile) const;  // "imagery tile (k3, x1, y0)"
  uint32_t imageryIndexCapacity() const { return imageryCapacity_; }

  // ---- I/O for benchmarks (hfbench flythrough --io cold, --io-limit) ----
  // Every payload()/imageryPayload() then passes its bytes through `limiter` (shared by the
  // archives of one simulated disk; nullptr: none). Set it while no other thread reads.
  // A URL archive passes the bytes it receives from the server through it instead (the link).
  void setReadLimiter(std::shared_ptr<ReadLimiter> limiter);
  // Faults injected into the copy functions' height reads (fault_injection.h; nullptr: none).
  // Set it while no other thread reads.
  void setFaultInjector(std::shared_ptr<FaultInjector> faults) { faults_ = std::move(faults); }
  FaultInjector* faultInjector() const { return faults_.get(); }
  // Evicts the file's pages from this process's mapping and from the page cache
  // (madvise MADV_DONTNEED + posix_fadvise POSIX_FADV_DONTNEED), so that the next payload reads
  // come from the disk (a URL archive: its local cache is emptied). Best effort: a file system that keeps files in memory (tmpfs) keeps
  // them; residentFraction() tells. False with an error only when the file cannot be reopened.
  // Payload pointers stay valid (the pages are read again on access); call it while no other
  // thread reads, or those reads simply go to the disk.
  bool dropPageCache(std::string& error) const;
  // Share of the file's pages in the page cache now (mincore), 0..1; -1 when unknown.
  double residentFraction() const;

 private:
  bool decodeBytes(size_t tile, const std::vector<uint8_t>& bytes, uint16_t* dst, hfpac::Layers layers,
                   std::string& error) const;
  // Reads [offset, offset + n) of the mapping under a SIGBUS guard, after the source (if any)
  // has the bytes; false with a one-line error naming `what`.
  bool copyOut(uint8_t* dst, uint64_t offset, uint64_t n, const std::string& what, std::string& error) const;
  std::shared_ptr<ReadLimiter> limiter_;
  std::shared_ptr<FaultInjector> faults_;
  std::unique_ptr<ByteSource> source_;  // URL archives: map_ is its mirror
  std::string path_;
  const uint8_t* map_ = nullptr;
  uint64_t size_ = 0;
  uint32_t capacity_ = 0;
  Header header_;
  std::vector<TileEntry> entries_;
  std::unique_ptr<std::atomic<uint8_t>[]> advised_;  // willNeed() given, per tile
  // URL archives: read since the last cache drop, per height tile then per imagery tile.
  std::unique_ptr<std::atomic<uint8_t>[]> readOnce_;
  mutable std::atomic<uint64_t> remoteRead_{0};
  void countRemoteRead(size_t slot) const {
    if (readOnce_ && !readOnce_[slot].exchange(1, std::memory_order_relaxed))
      remoteRead_.fetch_add(1, std::memory_order_relaxed);
  }
  std::vector<size_t> levelFirst_;  // levels + 1 entries
  bool hasImagery_ = false;
  ImageryHeader imagery_;
  std::vector<ImageryEntry> imageryEntries_;
  std::vector<size_t> imageryLevelFirst_;  // imagery levels + 1 entries
  uint32_t imageryCapacity_ = 0;
  bool validate(std::string& error);  // open()'s checks of the mapped bytes
  bool openImagery(uint64_t offset, uint32_t bytes, uint32_t crc, uint64_t payloadOffset,
                   uint64_t fileSize, std::string& error);
};

}  // namespace hfa
