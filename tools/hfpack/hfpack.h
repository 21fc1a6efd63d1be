// hfpack.h - the packer as a library: pack GDAL rasters into a .hfa archive, describe an
// archive, verify one (optionally against its source), transcode one to another codec. The
// command line (main.cpp) is a thin wrapper; tests call these functions directly.
//
// Contract: every function returns false with a one-line `error` (no "Error:" prefix) on
// failure and never leaves an output file behind (see hfa::ArchiveWriter). Text reports go to
// the `out` stream given in the options (stdout by default); nothing else is printed.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "archive/archive.h"
#include "imagery_tiles.h"

namespace hfpack {

// Progress: fraction 0..1 and a short message; return false to cancel.
using Progress = std::function<bool(double, const char*)>;

struct PackOptions {
  std::vector<std::string> inputs;
  std::string output;
  int patch = 129;             // p = 2^n + 1
  int segment = 9;             // codec segment m (5, 9, 17, 33; 0 = try all)
  int bits = -1;               // -1 = auto, else 0..16
  hfa::Codec codec = hfa::Codec::Hfpac;
  int levels = 0;              // 0 = until one tile covers everything
  // Heights (docs/archive.md 1, "Heights"): the archive stores height = offset + scale x sample.
  // Integer sources (samples stored as they are, lossless): scale = M bandScale, offset = O +
  //   M bandOffset, with M = verticalScale (1 when 0) and O = verticalOffset, i.e. height =
  //   O + M (GDAL's unscaled value): M converts source units to metres (0.1 for decimetres).
  // Float / wide sources (quantised): verticalScale is the quantisation step in source units
  //   (0 = the finest that fits), scale = bandScale step, offset = O + bandOffset + bandScale q0
  //   (q0 the smallest valid value): O shifts the heights, M does not multiply them.
  double verticalScale = 0;
  double verticalOffset = 0;   // added to every height, metres
  // Level-0 sample spacing in metres for a raster without georeferencing (0 = not given: sample
  // units; spacingY 0 = spacingX). Sets Header::spacingX/Y and kFlagSpacingKnown; no geotransform
  // is written (the raster stays unreferenced). Refused for a georeferenced input.
  double spacingX = 0, spacingY = 0;
  // gdal_translate -a_srs / -a_ullr: assign a CRS / pixel-is-area bounds (ulx uly lrx lry) to the
  // (mosaicked) input, replacing what it has, before --t_srs.
  std::string aSrs;
  bool aUllr = false;
  double ullr[4] = {0, 0, 0, 0};
  bool fillNodata = true;      // --nodata fill (default) or keep
  int threads = 0;             // 0 = all cores
  std::string device = "cpu";  // cpu | cuda (falls back to cpu with a note: PackResult::deviceNote)
  int gpuBatch = 2048;         // --device cuda: tiles per GPU encode call (over rows and levels)
  std::string tSrs;            // reproject with GDAL's warper
  int band = 1;
  // --max-size N: the input read downsampled so that its longer side has at most N samples
  // (0 = as it is; demio::SourceOptions::maxSide): a quick preview of a large DEM (hfview).
  int maxSide = 0;
  ImageryOptions imagery;      // --imagery RASTER... (empty = heights only): imagery_tiles.h
  // --shard I/N (docs/sharded-packing.md): write part I (1..N) of a sharded pack to `output`
  // instead of an archive; merge() assembles the parts. 0/0 = not sharded. Refused with imagery.
  int shard = 0, shards = 0;
  Progress progress;           // may be empty
  FILE* out = stdout;          // summary (nullptr = silent)
};

struct LevelSummary {
  uint64_t tiles = 0, rawBytes = 0, payloadBytes = 0;
};

struct PackResult {
  int width = 0, height = 0, levels = 0, tileSize = 0;
  // PackOptions::maxSide read the input downsampled from sourceWidth x sourceHeight (else the
  // same as width x height).
  bool downsampled = false;
  int sourceWidth = 0, sourceHeight = 0;
  uint64_t tiles = 0, rawBytes = 0, payloadBytes = 0, fileBytes = 0;
  uint64_t layerBytes[3] = {0, 0, 0};  // hfpac layer 1/2/3 bytes over all tiles
  uint64_t hfanTiles = 0;              // tiles stored as hfan (codec hfan, or auto's choice)
  uint64_t filledSamples = 0, validSamples = 0, sourceSamples = 0;
  double seconds = 0;
  long peakRssKiB = 0;
  double quantError = 0;
  std::vector<LevelSummary> perLevel;
  std::string device = "cpu";  // where the tiles were encoded: "cpu" or "cuda"
  std::string deviceNote;      // why --device cuda fell back to the CPU (empty when it did not)
  uint64_t gpuBatches = 0;     // GPU encode calls
  double encodeSeconds = 0;    // wall time of tile statistics + encoding + adding (both devices)
  bool hasImagery = false;
  ImageryPlan imageryPlan;
  ImageryResult imagery;
};

bool pack(const PackOptions& options, PackResult& result, std::string& error);

// `hfpack merge PART... -o OUT.hfa` (docs/sharded-packing.md): the archive of a sharded pack,
// byte-identical to `hfpack INPUT... -o OUT.hfa` with the parts' inputs and options. Every part
// 1..N exactly once, all of one pack (the same plan); anything else, or a corrupt part, is a
// one-line error and no output file. The coarse levels above the parts' are encoded here.
struct MergeOptions {
  std::vector<std::string> parts;
  std::string output;
  int threads = 0;             // 0 = all cores (coarse levels)
  Progress progress;           // may be empty
  FILE* out = stdout;          // summary (nullptr = silent)
};

struct MergeResult {
  int shards = 0, split = 0, levels = 0;
  uint64_t tiles = 0, partTiles = 0, coarseTiles = 0, payloadBytes = 0, fileBytes = 0;
  double seconds = 0;
};

bool merge(const MergeOptions& options, MergeResult& result, std::string& error);

// `hfpack info`: header, levels, tile counts, ratios, b histogram.
bool info(const std::string& archive, FILE* out, std::string& error);

struct VerifyOptions {
  std::string archive;
  std::vector<std::string> sources;  // empty = checksums and decoding only
  std::string tSrs;
  std::string aSrs;                  // as PackOptions (what the pack was given)
  bool aUllr = false;
  double ullr[4] = {0, 0, 0, 0};
  int band = 1;
  // --imagery RASTER... [--imagery-resampling R]: compare every imagery tile with the rasters
  // warped again as the pack did (PSNR). Without it only checksums and decoding are checked.
  ImageryOptions imagery;
  int threads = 0;
  Progress progress;
  FILE* out = stdout;
};

struct VerifyResult {
  uint64_t tiles = 0, badTiles = 0, comparedSamples = 0, mismatches = 0;
  uint64_t missingTiles = 0, extraTiles = 0;
  double maxHeightError = 0;  // quantised sources: largest |height - source value|
  // Imagery: every tile's checksum and decoding; with VerifyOptions::imagery, every tile against
  // the rasters warped again: a mismatch is a coverage (alpha) difference or an RGB PSNR below
  // kMinImageryPsnr (misplaced imagery, far below what coding loses: JPEG quality 90 gives
  // 35-45 dB; raw tiles must be identical).
  uint64_t imageryTiles = 0, imageryBadTiles = 0, imageryCompared = 0, imageryMismatches = 0;
  double imageryMinPsnr = double(INFINITY);  // over the compared tiles (dB)
  double imageryPsnr = double(INFINITY);     // over all compared texels (dB)
};
constexpr double kMinImageryPsnr = 20.0;

// Returns false with an error for an archive that cannot be opened or a source that cannot be
// read; a readable archive with bad tiles or mismatches returns true with counts in `result`
// (the caller decides the exit status: ok() below).
bool verify(const VerifyOptions& options, VerifyResult& result, std::string& error);
inline bool ok(const VerifyResult& r) {
  return r.badTiles == 0 && r.mismatches == 0 && r.missingTiles == 0 && r.extraTiles == 0 &&
         r.imageryBadTiles == 0 && r.imageryMismatches == 0;
}

// `hfpack transcode`: the same archive with every tile re-encoded in another codec (or the same
// codec with other options). Everything else is kept: levels, tile set, georeferencing, flags,
// nodata, vertical scale/offset, quantisation bound, filled counts, CRS and units, and per tile
// its flags, min/max, filled count and LOD errors; payloads keep the input's order in the file
// and the index the input's capacity, so transcoding back with the input's options gives the
// input byte for byte. Decoding is exact for every codec (the only loss an archive records,
// kFlagQuantised / quantError, is the source's quantisation to samples, which the unchanged
// samples keep), so any archive transcodes to any codec. An archive with header flags this
// build does not know is refused, as it may mean something transcoding cannot keep.
// Imagery is copied as it is, unless recodeImagery: then every imagery tile is decoded (raw;
// jpeg; bc1: level 0 of its chain) and coded again as imageryCodec (encodeImageryTile), keeping
// its level, position and flags (a lossy codec loses again: jpeg -> bc1 -> jpeg is not the input).
// With recodeHeights false the height payloads are copied as they are (codec, segment, bits
// and device unused): `hfpack transcode IN OUT --imagery-codec bc1` makes an imagery twin.
struct TranscodeOptions {
  std::string input, output;   // different files
  bool recodeHeights = true;   // false: copy the height payloads (and the header's codec, options)
  hfa::Codec codec = hfa::Codec::Hfpac;
  int segment = 9;             // as PackOptions (ignored for raw)
  int bits = -1;
  int threads = 0;             // 0 = all cores
  std::string device = "cpu";  // cpu | cuda (falls back to cpu with a note, like pack)
  int gpuBatch = 2048;         // tiles per batch (fewer for large tiles: at most ~128 MiB of samples)
  bool verify = false;         // afterwards, decode both archives and compare every tile and the index
  bool recodeImagery = false;  // --imagery-codec given: re-code the imagery tiles (the input must have imagery)
  hfa::ImageryCodec imageryCodec = hfa::ImageryCodec::Jpeg;
  int imageryQuality = 0;      // jpeg: 1..100; 0 = the input's quality when its imagery is jpeg, else 90
  himg::Bc1Mode imageryBc1 = himg::Bc1Mode::Quality;  // bc1: the encoder
  Progress progress;           // may be empty
  FILE* out = stdout;          // summary (nullptr = silent)
};

struct TranscodeResult {
  uint64_t tiles = 0, rawBytes = 0, inputPayloadBytes = 0, payloadBytes = 0, fileBytes = 0;
  uint64_t layerBytes[3] = {0, 0, 0};  // hfpac layer 1/2/3 bytes over the re-encoded tiles
  uint64_t hfanTiles = 0;              // re-encoded tiles stored as hfan
  hfa::Codec inputCodec = hfa::Codec::Hfpac;
  double seconds = 0;
  long peakRssKiB = 0;
  std::string device = "cpu";
  std::string deviceNote;
  uint64_t gpuBatches = 0;
  bool verified = false;       // --verify ran and every tile and index entry matched
  // Imagery (when the input has some): tiles, payload bytes in and out, codecs in and out.
  uint64_t imageryTiles = 0, imageryInputBytes = 0, imageryBytes = 0;
  hfa::ImageryCodec inputImageryCodec = hfa::ImageryCodec::Jpeg, imageryCodec = hfa::ImageryCodec::Jpeg;
  bool imageryRecoded = false;
};

bool transcode(const TranscodeOptions& options, TranscodeResult& result, std::string& error);

// Compares two archives as transcode promises: the same header except codec and codecOptions,
// the same index except codec, offsets, sizes and checksums, and every tile decoding to the
// same samples. The imagery: the same geometry and tile set (level, position, flags), and with
// sameImageryPayloads also the same codec, quality, tables and payloads (CRC and size); without
// it (re-coded imagery) codecs and payloads may differ. False with a one-line error naming the
// first difference.
bool sameContent(const hfa::ArchiveReader& a, const hfa::ArchiveReader& b, int threads, std::string& error,
                 bool sameImageryPayloads = true);

}  // namespace hfpack
