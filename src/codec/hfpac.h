// hfpac.h - HFPaC (Height Field Parallel Compression), CPU reference codec.
//
// One compressed *patch* holds W x H 16-bit height samples (signed or unsigned) in three
// layers (the byte layout and the exact arithmetic are in docs/format.md):
//   layer 1  quadratic Bezier surfaces over segments of m x m samples (m = 5, 9, 17 or 33)
//            that share corners and edge control points, so the coarse surface has no seams;
//   layer 2  a sparse list of "prominent points": residuals too large for b bits, grouped by
//            16 x 16 areas, plus (optionally) the per-area bit width b;
//   layer 3  every point's low b bits at a fixed, computable bit position.
// Decoding layer 1 alone gives a smooth approximation, layers 1+2 are within 2^(b-1) of the
// original (b of the point's area), all three layers are lossless. Every point decodes
// independently of the others, which is what the GPU decoder (src/gpu/) relies on.
//
// Contract shared by every function here:
// - Sample buffers are row-major with a stride counted in samples (not bytes); stride >= width.
// - Samples of SampleType::Int16 are passed as their uint16_t bit patterns
//   (reinterpret_cast from int16_t is fine); the codec maps them to an unsigned range itself.
// - Functions that read compressed bytes accept untrusted input: any truncated, corrupted or
//   hostile stream yields a non-Ok Status, never a crash, an out-of-bounds access, a hang, or
//   an allocation larger than a small multiple of the stream's own size.
// - No function keeps global state; all functions may be called from many threads at once.
//   A PatchView is immutable after open() and may be shared between threads.
// - Nothing here throws except std::bad_alloc from the std::vector outputs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace hfpac {

// Format constants (docs/format.md, "Header").
constexpr uint32_t kMagic = 0x43504648u;  // bytes 'H','F','P','C' read as little-endian u32
constexpr uint8_t kVersion = 1;
constexpr int kHeaderBytes = 32;
constexpr int kMaxPatchSide = 16384;  // width and height are in 1..kMaxPatchSide
constexpr int kAreaSide = 16;         // layer-2/3 areas are 16 x 16 points
constexpr int kMaxBits = 16;          // b is in 0..kMaxBits

enum class SampleType : uint8_t { UInt16 = 0, Int16 = 1 };

// How much of the stream a decoder uses. All = lossless.
enum class Layers : uint8_t { L1 = 1, L12 = 2, All = 3 };

enum class Status : int {
  Ok = 0,
  InvalidArgument,     // bad width/height/stride/options or null pointer from the caller
  TruncatedHeader,     // fewer than kHeaderBytes bytes
  BadMagic,            // not an HFPaC patch stream
  UnsupportedVersion,  // version byte newer than this decoder
  InvalidHeader,       // header fields out of range or inconsistent
  TruncatedStream,     // the sections the header announces do not fit in the given bytes
  SizeMismatch,        // a section size disagrees with what its contents require
  InvalidAreaTable,    // a per-area bit width > 16 or a prominent count larger than its area
  InvalidProminent,    // a prominent-point position outside its area or not strictly increasing
  InvalidMask,         // a masked-area code other than 0, 1, 2
  InvalidBlock,        // a 2DRBUC block width, node width or block offset is inconsistent
  Unsupported,         // a valid stream using a feature this decoder lacks (e.g. a GPU path)
  OutOfRange,          // a decoded sample falls outside 0..65535 (corrupt stream); checked by
                       // decode() at Layers::All, see decode()
};

// A one-line, human-readable description of a status ("truncated stream: ..."), never null.
const char* statusMessage(Status s);

struct EncodeOptions {
  // Segment size m: 5, 9, 17 or 33 (m - 1 a power of two). 0 = try all four and keep the smallest.
  int segment = 9;
  // Residual bits b: 0..16 = the same b for the whole patch; -1 = "auto": b chosen per 16 x 16
  // area (or one b for the patch when that is smaller) to minimise the stream size.
  int bits = -1;
  // Masked value (docs/format.md, "Masked points"): points equal to it (nodata voids, flat sea)
  // are flagged per area and excluded from the surface fit, so their cliffs cost almost nothing.
  // With hasNodata, `nodata` (bit pattern as in the input) is a candidate; with autoMask, so is
  // the most frequent value when it covers at least 1/16 of the patch. Every candidate (and no
  // masking) is tried and the smallest stream kept; a masked point decodes exactly at every layer.
  bool hasNodata = false;
  uint16_t nodata = 0;
  bool autoMask = true;
  // 2DRBUC residual coding (docs/format.md section 5.2) instead of layers 2 + 3: zigzag residuals
  // in 32 x 32 blocks whose 4 x 4 nodes each get the bit width they need. Smaller streams on
  // most terrain; progressive decoding then has two levels (layer 1, lossless). `bits` is
  // ignored. Patches too large for 32-bit block offsets fall back to layers 2 + 3.
  bool rbuc = false;
};

// Everything the header says, plus sizes derived from it. Filled by readInfo() in O(1).
struct PatchInfo {
  int width = 0, height = 0;
  SampleType type = SampleType::UInt16;
  bool flat = false;         // all samples equal: the stream is just the header
  bool stored = false;       // incompressible: kept as 16-bit samples (layer 3 only)
  bool perAreaBits = false;  // b varies per 16 x 16 area (layer 2 holds the table)
  bool masked = false;       // some points equal the masked value (layer 2 holds the mask)
  bool rbuc = false;         // residuals coded with 2DRBUC (no layer-2 list; L12 = lossless)
  uint16_t maskValue = 0;    // the masked value (bit pattern as in the output), if masked
  int segment = 0;           // m (5, 9, 17, 33); 0 for flat patches
  int uniformBits = 0;       // b when !perAreaBits
  uint32_t layer1Bytes = 0;  // header + layer-1 section
  uint32_t layer2Bytes = 0;  // area table + prominent list
  uint32_t layer3Bytes = 0;  // fixed-width low parts
  uint32_t streamBytes = 0;  // total = layer1Bytes + layer2Bytes + layer3Bytes
};

// What the encoder chose; for statistics and benchmarks.
struct EncodeStats {
  PatchInfo info;
  uint32_t prominentPoints = 0;      // entries in the layer-2 list
  uint32_t bitsHistogram[kMaxBits + 1] = {};  // number of *points* coded with each b
};

// Upper bound on the size of any stream encode() can produce for a width x height patch.
size_t maxEncodedSize(int width, int height);

// Encodes one patch. `out` is replaced by the stream (its size is a multiple of 4 bytes).
// Returns InvalidArgument for a null pointer, width/height outside 1..kMaxPatchSide,
// stride < width, or bad options. Deterministic: the same input and options always give the
// same bytes (the GPU encoder produces identical streams).
Status encode(const uint16_t* samples, size_t stride, int width, int height, SampleType type,
              const EncodeOptions& options, std::vector<uint8_t>& out,
              EncodeStats* stats = nullptr);

// Lays one patch out as a stored stream: its 16-bit samples as they are (no layers 1 and 2), the
// form encode() falls back to for incompressible data. For samples already decoded by other
// means that must travel in this stream format (the gl streaming strategy's compute decoder
// copies stored streams into the atlas). Same argument checks as encode(); decode() returns the
// samples exactly.
Status encodeStored(const uint16_t* samples, size_t stride, int width, int height, SampleType type,
                    std::vector<uint8_t>& out);

// Reads and checks the fixed header only (magic, version, field ranges, that the stream is at
// least as long as the header says). O(1); does not validate the tables (decode() does).
Status readInfo(const uint8_t* data, size_t size, PatchInfo& info);

// Decodes a whole patch into dst (info.width x info.height samples, stride in samples) using
// the given layers. Validates everything it reads; on error dst may be partly written.
// At Layers::All a sample outside 0..65535 means the stream is corrupt: OutOfRange. At L1 and
// L12 samples are clamped to the valid range (approximations may overshoot).
// `dstCapacity` is the number of samples dst can hold; it must cover
// (height - 1) * dstStride + width, else BufferTooSmall-style InvalidArgument.
Status decode(const uint8_t* data, size_t size, uint16_t* dst, size_t dstStride,
              size_t dstCapacity, Layers layers = Layers::All);

// A validated, parsed view of one stream for random access. open() does all validation
// (O(number of areas + number of prominent points)) and keeps pointers into `data`, which must
// outlive the view. After that, sample() decodes one point in O(1): 9 control points, one
// fixed-position field and a binary search among at most 256 entries of its area.
class PatchView {
 public:
  static Status open(const uint8_t* data, size_t size, PatchView& view);
  const PatchInfo& info() const { return info_; }
  // x in 0..width-1, y in 0..height-1 (unchecked beyond a debug assert: callers validate).
  uint16_t sample(int x, int y, Layers layers = Layers::All) const;

 private:
  friend struct ViewAccess;
  int32_t rbucResidual(const uint8_t* index, const uint8_t* sectionD, int x, int y) const;
  PatchInfo info_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::vector<uint32_t> areaLow_;        // bit offset of each area's first layer-3 field
  std::vector<uint32_t> areaFirst_;      // index of each area's first prominent entry (+1 sentinel)
  std::vector<uint8_t> areaBits_;        // b per area
  std::vector<uint32_t> areaMask_;       // bit offset of each area's mask bitmap (masked only)
  uint32_t maskBytes_ = 0;               // size of the mask part at the start of section B
};

// Convenience: open a view and decode one point. O(areas) for the validation.
Status decodePoint(const uint8_t* data, size_t size, int x, int y, uint16_t& value,
                   Layers layers = Layers::All);

// ---- Many patches at once, on CPU threads ----

struct PatchIn {
  const uint16_t* samples = nullptr;
  size_t stride = 0;
  int width = 0, height = 0;
  SampleType type = SampleType::UInt16;
};

struct PatchOut {
  const uint8_t* data = nullptr;
  size_t size = 0;
  uint16_t* dst = nullptr;
  size_t dstStride = 0;
  size_t dstCapacity = 0;
};

// Encodes count patches on `threads` threads (0 = std::thread::hardware_concurrency()).
// out and statuses (and stats if non-null) are resized to count. Returns Ok if every patch
// encoded, else the first failing patch's status (the others are still encoded).
Status encodeBatch(const PatchIn* patches, size_t count, const EncodeOptions& options,
                   std::vector<std::vector<uint8_t>>& out, std::vector<Status>& statuses,
                   int threads = 0, std::vector<EncodeStats>* stats = nullptr);

// Decodes count patches on `threads` threads. statuses is resized to count. Returns Ok if every
// patch decoded, else the first failing patch's status.
Status decodeBatch(const PatchOut* patches, size_t count, Layers layers,
                   std::vector<Status>& statuses, int threads = 0);

}  // namespace hfpac
