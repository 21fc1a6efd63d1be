// imagery_bench.h - `hfbench imagery`: the imagery codec (src/imagery, hf_imagery) against
// libjpeg-turbo (TurboJPEG API) and libsquish on real colour images.
//
// Per image (an RGBA8 copy of the whole raster; see readImageryRgba), in this order:
//   jpeg    TurboJPEG tjCompress2 / tjDecompress2 of the whole image (no crop: TurboJPEG codes
//           partial MCUs), 4:2:0, `quality`, default flags (accurate integer DCT, standard
//           Huffman tables). One thread: one handle, best time of the runs (see "Timing").
//           All cores: the image is split into `threads` horizontal strips of whole 16-row MCU
//           rows (the last strip takes the remainder rows), each strip coded as its own JPEG
//           by its own thread and handle; decode all cores decodes those strip JPEGs, each
//           strip on its thread. Rates count the whole image's texels over the wall time
//           from starting the threads to joining them. psnr: the one-thread decode of the
//           whole-image stream against the source RGB, every texel (alpha ignored). A source
//           that is itself a 4:2:0 JPEG of similar quality re-codes almost losslessly here
//           (same MCU grid, same quantisation): its jpeg psnr is then far above tiling.psnr,
//           whose tiles start 4 texels off that grid.
//   tiling  the image cut into tiles the way an archive level is: tile (tx, ty) spans the
//           content texels [248 tx, 248 tx + 248) x [248 ty, 248 ty + 248) of the image, and
//           its 256 x 256 texels are content plus a 4-texel border on each side taken from the
//           neighbouring content; every texel outside the image (border at the image edge,
//           and content past the right / bottom edge in the last column / row) repeats the
//           nearest image texel (clamp). Alpha 255 everywhere. ceil(W/248) x ceil(H/248)
//           tiles, each himg::encodeJpegTile at `quality`, plus one himg::makeJpegTables
//           stream. tile_bytes_total = tiles + tables; ratio = tile_bytes_total / the
//           whole-image tjCompress2 size above (the project's target: ratio <= 1.1). The tiles
//           are decoded back with himg::JpegTileDecoder (one thread) for a content PSNR.
//   bc1     a central window of at most bc1Window x bc1Window texels (the whole image when
//           bc1Window is 0), width and height cut down to multiples of 4, coded by all five
//           encoders: himg::encodeBc1 Fast and Quality, and libsquish kDxt1 with
//           kColourRangeFit, kColourClusterFit, kColourIterativeClusterFit and the uniform
//           metric {1, 1, 1} (PSNR weighs R, G, B alike; squish's default is perceptual).
//           libsquish is called block by block (squish::CompressMasked, mask 0xffff) on one
//           thread, gathering each 4x4 block as himg::encodeBc1 does: Debian's
//           squish::CompressImage runs OpenMP threads. The window bounds the run time of the
//           slow encoders (libsquish's cluster fits code about 0.4 - 2 Mtexel/s on one core)
//           and is the same for all five, so speeds and PSNRs compare like with like. psnr: ours decoded with
//           himg::decodeBc1, squish's with squish::DecompressImage, against the window's source
//           RGB over the texels whose source alpha is >= 128 (all of them for 1- and 3-band
//           images; texels below are BC1-transparent in both libraries). squish's blocks are
//           also decoded with himg::decodeBc1: squishDecodersAgree says the two decoders gave
//           the same texels.
//
// Timing: steady_clock wall time; each timed step runs at least once and is repeated while
// the runs so far took less than minSeconds in all (at most maxRuns runs); the best run
// counts. mpx_s / mtexels_s = texels / 1e6 / seconds.
//
// Nothing here prints; the caller reports. Functions never throw: std::bad_alloc and other
// exceptions become ImageryResult::error.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "host.h"
#include "imagery/imagery.h"

namespace hfbench {

struct ImageryBenchOptions {
  int quality = himg::kDefaultJpegQuality;  // JPEG quality 1..100, for tjCompress2 and the tiles
  int threads = 0;         // threads of the all-cores JPEG figures; 0 = hardware concurrency
  int bc1Window = 1024;    // side of the central BC1 window (>= 4); 0 = the whole image
  double minSeconds = 0.5; // timing: repeat a step while its runs took less than this in all
  int maxRuns = 20;        // timing: at most this many runs of a step
  // Tiles per batch of the tile-throughput figures (cpu_all_cores, gpu JPEG): the image's tiles
  // repeated cyclically up to this count, so that small images still give the GPU (and all CPU
  // cores) a batch as large as a busy frame's streaming or a packer's chunk would.
  int batchTiles = 1024;
  bool gpu = true;         // measure the gpu figures when built with CUDA and a device exists
};

// An RGBA8 image, row-major, top row first (imagery.h's convention).
struct RgbaImage {
  int width = 0, height = 0;
  int bands = 0;  // of the source raster: 1 (grey, expanded to RGB), 3, or 4 (alpha kept)
  std::vector<uint8_t> rgba;  // width * height * 4 bytes
};

// Without GDAL (HF_WITH_GDAL=OFF, the GPU machine's build): PNG or JPEG files only, through
// stb_image. With GDAL:
// Reads any GDAL raster whose band count is 1, 3 or 4 and whose bands are all Byte: grey is
// copied to R, G and B; alpha is 255 unless the raster has a 4th band. False with a one-line
// error that starts with the path (e.g. "x.tif: band 1 is Int16, not Byte") otherwise,
// including when hfbench was built without GDAL (HF_WITH_GDAL=OFF).
bool readImageryRgba(const std::string& path, RgbaImage& image, std::string& error);

struct JpegFigures {
  int quality = 0;
  uint64_t bytes = 0;              // whole-image tjCompress2 stream
  double bitsPerTexel = 0;         // bytes * 8 / texels
  double encodeMpxS = 0, decodeMpxS = 0;                  // one thread
  double encodeMpxSAllCores = 0, decodeMpxSAllCores = 0;  // `threads` strips
  int threads = 0;                 // threads asked for (resolved)
  int strips = 0;                  // strips coded (min(threads, MCU rows))
  uint64_t stripBytes = 0;         // all strip streams together
  double psnr = 0;                 // dB, one-thread decode against the source RGB
};

struct TilingFigures {
  int tilesX = 0, tilesY = 0;
  uint64_t tiles = 0;
  uint64_t tablesBytes = 0;        // the makeJpegTables stream
  uint64_t tileBytes = 0;          // the tile streams alone
  uint64_t tileBytesTotal = 0;     // tileBytes + tablesBytes
  // The level as one image: the tiles' content mosaic (tilesX * 248 x tilesY * 248 texels, the
  // image padded by repeating its last row and column as the edge tiles are), one tjCompress2
  // JPEG at the same quality. The target "tiles of a level <= 1.1x the level as one image" is
  // about borders, headers and restart markers, not about the padding both share.
  uint64_t wholeImageBytes = 0;
  uint64_t unpaddedImageBytes = 0; // the image itself as one JPEG (= JpegFigures::bytes)
  double ratio = 0;                // tileBytesTotal / wholeImageBytes
  double psnr = 0;                 // decoded tile content (the image's texels) against the source
  double encodeMtexelsS = 0, decodeMtexelsS = 0;  // stored texels (tiles * 256 * 256), one thread
};

struct Bc1Figure {
  double psnr = 0;                 // dB
  double mtexelsS = 0;             // one thread, the window's texels
  double seconds = 0;              // the best run
};

struct Bc1Figures {
  int windowX = 0, windowY = 0, windowWidth = 0, windowHeight = 0;  // in the image
  Bc1Figure fast, quality, squishRange, squishCluster, squishIterative;
  bool squishDecodersAgree = false;  // himg::decodeBc1 == squish::DecompressImage on squish's blocks
  uint64_t windowTexels() const { return uint64_t(windowWidth) * uint64_t(windowHeight); }
  double qualityMinusSquishClusterDb() const { return quality.psnr - squishCluster.psnr; }
  double fastMinusSquishRangeDb() const { return fast.psnr - squishRange.psnr; }
  double fastSpeedupVsSquishRange() const {
    return squishRange.mtexelsS > 0 ? fast.mtexelsS / squishRange.mtexelsS : 0.0;
  }
};

// The archive's tiles on all CPU cores: `tiles` tiles (the image's tiles repeated up to
// batchTiles) split into `threads` equal runs, each thread with its own himg::JpegTileDecoder
// (decode) or encodeJpegTile calls (encode); Mpixels/s of stored texels (256 x 256 per tile)
// over the wall time from starting the threads to joining them.
struct CpuAllCoresFigures {
  int threads = 0;
  uint64_t tiles = 0;
  double jpegDecodeMpxS = 0, jpegEncodeMpxS = 0;
};

// The GPU columns (imagery_gpu_bench.cpp; only in builds with the GPU imagery codec, on a
// machine with a CUDA device). Timings are CUDA events around the device work alone, device
// memory to device memory, best run (the options' repeat rule); *_end_to_end adds the host
// work and the PCIe copies of the compressed bytes.
struct GpuBc1Figure {
  double psnr = 0;          // dB on the bc1 window (same texels as the CPU figures)
  double gtexelsS = 0;      // G texels/s over `texels`
  uint64_t texels = 0;      // the image repeated until at least 2^26 texels (a tall image)
  bool identicalToCpu = false;  // the window's blocks equal himg::encodeBc1's, byte for byte
};
struct GpuImageryFigures {
  bool measured = false;
  std::string note;         // why not measured, or remarks
  std::string device;       // cudaGetDeviceProperties name
  GpuBc1Figure bc1Fast, bc1Quality;
  uint64_t batchTiles = 0;
  double jpegDecodeMpxS = 0;           // GpuJpegDecoder::decodeAsync of the uploaded batch
  double jpegDecodeEndToEndMpxS = 0;   // prepare (host) + upload + decode
  int jpegDecodeMaxDiff = -1;          // largest |GPU - JpegTileDecoder| per channel over the tiles
  uint64_t jpegDecodeFailed = 0;       // tiles the GPU reported failed (expected 0)
  double jpegEncodeMpxS = 0;           // GpuJpegEncoder::encodeAsync of device-resident tiles
  double jpegEncodeEndToEndMpxS = 0;   // upload RGBA + encode + finish (host streams)
  uint64_t jpegEncodeIdenticalTiles = 0;  // tiles whose stream equals encodeJpegTile's
  double jpegEncodeSizeRatio = 0;      // GPU stream bytes / encodeJpegTile bytes over the tiles
  double jpegEncodePsnrDelta = 0;      // PSNR(GPU streams) - PSNR(encodeJpegTile streams), dB
  bool nvjpegAvailable = false;
  double nvjpegDecodeMpxS = 0;         // nvjpegDecodeBatched of the complete tile streams
  std::string nvjpegBackend;           // "hardware" or "default"
};

struct ImageryResult {
  std::string input;
  bool ok = false;        // measured; false: `error` says why (the figures may be partial)
  std::string error;      // one line, starting with the input's path
  int width = 0, height = 0, bands = 0;
  uint64_t texels = 0;    // width * height
  double readSeconds = 0, totalSeconds = 0;
  JpegFigures jpeg;
  TilingFigures tiling;
  Bc1Figures bc1;
  CpuAllCoresFigures cpuAllCores;
  GpuImageryFigures gpu;
};

// The image cut into archive tiles as TilingFigures describes: tiles row-major, each 256 x 256
// RGBA8, one after another.
std::vector<uint8_t> cutTiles(const RgbaImage& image, int& tilesX, int& tilesY);

// Progress messages ("read", "jpeg", ...); may be empty.
using ImageryLogFn = std::function<void(const std::string&)>;

// Reads `path` (readImageryRgba) and benchmarks it.
ImageryResult benchImageryInput(const std::string& path, const ImageryBenchOptions& options,
                                const ImageryLogFn& log = {});

// Benchmarks an image already in memory; `name` becomes ImageryResult::input. The image must
// be at least 4 x 4 texels (else an error).
ImageryResult benchImageryRgba(const std::string& name, const RgbaImage& image,
                               const ImageryBenchOptions& options, const ImageryLogFn& log = {});

// The whole report: {"benchmark": "imagery", "host": {...}, "command": ..., "options": {...},
// "images": [{input, ok, width, height, bands, texels, bc1_window{...}, jpeg{...},
// tiling{...}, bc1{...}}, ...]}; an image that failed is {input, ok: false, error}.
// `options.threads` is written as given (0 = all cores) and as resolved ("threads_used").
std::string imageryJson(const HostInfo& host, const std::string& command,
                        const ImageryBenchOptions& options, int threads_used,
                        const std::vector<ImageryResult>& results);

// A few lines per image for people: size, JPEG, tiling, BC1.
void printImagerySummary(std::FILE* out, const ImageryResult& result);

}  // namespace hfbench
