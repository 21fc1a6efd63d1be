// imagery_tiles.h - hfpack's imagery: colour rasters warped onto the archive's tile grid
// (docs/archive.md section 6), for `hfpack --imagery` and `hfpack verify --imagery`.
//
// The source: one or more GDAL rasters of Byte bands, 1 (grey, or a palette with colours),
// 2 (grey + alpha), 3 (RGB) or 4 (RGBA); several are mosaicked (GDALBuildVRT, in memory).
// Placement, against the heights' grid as the archive records it (Header geoTransform, crsWkt):
// - both georeferenced: a real warp (GDAL's warper: CRS, resolution and extent may differ);
// - the imagery not georeferenced: it is taken to cover the DEM's sample-centre extent exactly
//   (pixel (0, 0)'s corner on sample (0, 0), pixel (w, h)'s on sample (W-1, H-1)), with a
//   warning, and the archive says so (kImageryUnreferenced): the Puget Sound pair;
// - the imagery georeferenced but the DEM not: refused (nowhere to put it);
// - no overlap at all, a band that is not Byte, a palette without colours, another band count:
//   refused. Every refusal is one line naming the input.
//
// Texel (i, j) of tile (k, x, y) samples the source at its centre (imagery.h / archive.h give
// the rule); alpha is coverage, 255 or 0. Finer imagery-only levels (ImageryHeader::finerLevels)
// are added while the source is finer than the finest level holds, up to maxTexelsPerSample.
//
// Threads: an ImageryWarper is used by one thread; make one per worker (each opens its own
// GDAL datasets). Without GDAL (HF_WITH_GDAL=OFF, the GPU machine's build) the source is one
// PNG, JPEG or PNM image read by stb_image, always stretched as an unreferenced raster, sampled
// bilinearly at the texel centres (the synthetic terrain's relief, hfterrain --imagery); a
// mosaic, another resampling or a georeferenced archive's imagery is refused in one line.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "archive/archive.h"
#include "imagery/imagery.h"

namespace hfpack {

struct ImageryOptions {
  std::vector<std::string> inputs;  // empty = no imagery
  hfa::ImageryCodec codec = hfa::ImageryCodec::Jpeg;  // --imagery-codec jpeg|raw|bc1
  int quality = 90;                 // JPEG quality 1..100
  // --imagery-bc1 quality|fast: the BC1 encoder of bc1 tiles (offline: cluster fit by default).
  himg::Bc1Mode bc1 = himg::Bc1Mode::Quality;
  std::string resampling = "bilinear";  // bilinear | cubic | lanczos | average
  double maxTexelsPerSample = 8;    // caps the finer imagery-only levels
  // JPEG tiles encoded on the GPU (hfpack --device cuda; hfgpu::GpuJpegEncoder, the same
  // baseline streams): the warp stays on CPU threads, each batch is coded in one GPU call.
  // Without the GPU imagery codec or a device, writeImagery codes on the CPU and says so in
  // ImageryResult::deviceNote.
  bool gpuJpeg = false;
};

// What open() learns about the source, shared by every warper of a pack.
struct ImageryPlan {
  int width = 0, height = 0;       // the (mosaicked) source raster, pixels
  int bands = 0;                   // after palette expansion: 1..4
  bool unreferenced = false;       // stretched over the DEM's extent (kImageryUnreferenced)
  double texelsPerSample = 0;      // source pixels per level-0 DEM sample (along x)
  int finerLevels = 0;             // imagery-only levels below height level 0
  std::vector<std::string> warnings;  // one line each (e.g. the stretch), for the caller to print
};

// Checks the options (one-line error naming what is wrong).
bool checkImageryOptions(const ImageryOptions& options, std::string& error);

// finerLevels for `texelsPerSample` source texels per level-0 sample: the fewest extra levels
// whose finest holds at least texelsPerSample / sqrt(2) texels per sample, but not more than
// maxTexelsPerSample (and at most hfa::kMaxImageryFinerLevels). Level 0 already holds
// content / (p - 1) texels per sample (248 / 128 with the defaults).
int chooseFinerLevels(double texelsPerSample, int content, int tileLog, double maxTexelsPerSample);

class ImageryWarper {
 public:
  ImageryWarper();
  ~ImageryWarper();
  ImageryWarper(const ImageryWarper&) = delete;
  ImageryWarper& operator=(const ImageryWarper&) = delete;

  // Opens the source for the heights' grid `h` (its width, height, tileLog, geoTransform,
  // crsWkt, kFlagGeoTransform) and the tile geometry (tileSize, border, finerLevels: -1 = choose
  // here with chooseFinerLevels; verify passes the archive's). `unreferenced`: -1 = decide here
  // (pack), else how the archive placed it (verify). Fills `plan`.
  bool open(const ImageryOptions& options, const hfa::Header& h, const hfa::ImageryHeader& geometry,
            int unreferenced, ImageryPlan& plan, std::string& error);
  // Warps imagery tile (k, x, y) of the geometry given to open() (tileSize, border,
  // finerLevels) into rgba (tileSize^2 * 4 bytes; alpha 0 or 255). False with an error.
  bool warpTile(int k, uint32_t x, uint32_t y, uint8_t* rgba, std::string& error);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct TileKey {
  int level = 0;
  uint32_t x = 0, y = 0;
};

struct ImageryLevelSummary {
  uint64_t tiles = 0, bytes = 0, partialTiles = 0;
};

struct ImageryResult {
  int levels = 0, finerLevels = 0, tileSize = 0;
  uint64_t tiles = 0, bytes = 0, texels = 0;  // texels: tiles x tileSize^2
  std::vector<ImageryLevelSummary> perLevel;  // by imagery level k
  double seconds = 0;
  double encodeSeconds = 0;    // of which coding the tiles (CPU threads or the GPU calls)
  std::string device = "cpu";  // where JPEG tiles were coded: "cpu" or "cuda"
  std::string deviceNote;      // why gpuJpeg fell back to the CPU (empty when it did not)
};

// Codes one tileSize^2 RGBA8 tile (alpha 0 or 255) as `codec` (docs/archive.md section 6): raw
// copies it; jpeg encodes it at `quality` (abbreviated stream, himg::makeJpegTables(quality) are
// its tables); bc1 builds the tile's mip chain (himg::buildMipChain, hfa::imageryBc1Levels
// levels) and encodes every level with `bc1Mode` (himg::encodeBc1), level 0 first. False with a
// one-line error only for bad arguments.
bool encodeImageryTile(const uint8_t* rgba, int tileSize, hfa::ImageryCodec codec, int quality,
                       himg::Bc1Mode bc1Mode, std::vector<uint8_t>& out, std::string& error);

// Decodes an imagery payload of `codec` into rgba (tileSize^2 * 4 bytes): raw copies, jpeg
// decodes with `jpeg` (its tables set; may be null when there are none: then a jpeg tile is an
// error), bc1 decodes level 0 of the chain (himg::decodeBc1). The size is checked (raw, bc1).
// False with a one-line error (without the tile's name).
bool decodeImageryTile(const uint8_t* data, size_t size, hfa::ImageryCodec codec, int tileSize,
                       himg::JpegTileDecoder* jpeg, uint8_t* rgba, std::string& error);

// Imagery tiles per height tile: 1, and for a level-0 height tile 4^d more on each finer level d.
size_t imageryTilesFor(const std::vector<TileKey>& heightTiles, int finerLevels);

// Warps, codes (im.codec, options.quality, options.bc1: encodeImageryTile) and adds to `writer` (opened with `im`) the imagery
// tile of every height tile in `heightTiles` and the finer tiles below level 0, coarsest level
// first, row by row; `threads` workers (one ImageryWarper each) code batches in parallel and
// the tiles are added in order. `progress` gets 0..1 (false cancels: error "interrupted").
bool writeImagery(const ImageryOptions& options, const hfa::Header& h, const hfa::ImageryHeader& im,
                  const ImageryPlan& plan, const std::vector<TileKey>& heightTiles, int threads,
                  hfa::ArchiveWriter& writer, const std::function<bool(double)>& progress, ImageryResult& result,
                  std::string& error);

}  // namespace hfpack
