// imagery.h - the imagery codec (CPU): colour tiles of the archive's imagery section, coded as
// baseline JPEG with libjpeg-turbo, and this project's BC1/DXT1 encoders (the CPU reference
// that the CUDA encoders of src/gpu/ must match bit for bit). No GL, no GDAL, no CUDA.
//
// Tile geometry (docs/archive.md, "Imagery"): an imagery tile is kTileSize x kTileSize RGBA8
// texels; a border of kTileBorder texels on each side repeats the neighbouring tiles' content
// so that filtered sampling (bilinear, and the mip levels inside a tile) shows no seams; the
// content, kTileContent texels, spans the tile's region exactly. Alpha is coverage: 255 where
// the source imagery covers the texel, 0 where it does not (never anything else in a tile;
// mip levels below the first may be built with other rules, see buildMipChain).
//
// Contract shared by every function here:
// - RGBA8 buffers are row-major, top row first, 4 bytes per texel, tightly packed.
// - Functions that read outside bytes (decoders) accept untrusted input: a truncated, corrupt
//   or hostile stream gives false and a one-line error (no "Error:" prefix), never a crash,
//   a hang, or an allocation far larger than the output.
// - No global state; every function may be called from many threads at once. A JpegTileDecoder
//   object is used by one thread at a time (keep one per worker thread).
// - Nothing throws except std::bad_alloc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace himg {

constexpr int kTileSize = 256;                          // stored texels per side
constexpr int kTileBorder = 4;                          // border texels on each side
constexpr int kTileContent = kTileSize - 2 * kTileBorder;  // 248: texels spanning the region
constexpr int kTileMipLevels = 5;                       // 256, 128, 64, 32, 16 (BC1: >= 4 blocks)
constexpr int kDefaultJpegQuality = 90;

// ---- JPEG tiles ----
//
// A tile is an *abbreviated* baseline JPEG stream (no DQT/DHT: the quantisation and Huffman
// tables are shared by all tiles of an archive and stored once, as a tables-only stream, in the
// archive's imagery section): SOI, [APP9 "HFCOV" coverage], SOF0 (3 components, YCbCr 4:2:0,
// 8-bit), DRI (restart interval = one MCU row: kTileSize / 16 MCUs), SOS, entropy-coded data
// with RSTn markers, EOI. The coverage segment is present only when some texel has alpha 0: it
// holds the zlib-compressed alpha bitmap (1 bit per texel, row-major, MSB first); absent means
// every texel is covered. Decoders that ignore APP segments (any JPEG decoder) see the colour.
//
// The standard Annex K Huffman tables are used (not per-tile optimised tables: shared tables must
// serve every tile, and fixed tables are what the GPU decoder of the next issue expects).

// The tables-only stream for `quality` (1..100): SOI, DQT (luma, chroma), DHT (4 tables), EOI.
std::vector<uint8_t> makeJpegTables(int quality);

// Encodes one size x size RGBA8 tile (size a multiple of 16) at `quality` as an abbreviated
// stream (above). Alpha must be 0 or 255; the colour of alpha-0 texels is irrelevant (the
// encoder may replace it to save bytes). False with an error only for bad arguments.
bool encodeJpegTile(const uint8_t* rgba, int size, int quality, std::vector<uint8_t>& out,
                    std::string& error);

// A complete, standalone JPEG (tables spliced in): what any JPEG decoder or viewer opens.
// False when either input is not what makeJpegTables / encodeJpegTile produce.
bool completeJpegStream(const uint8_t* tables, size_t tablesSize, const uint8_t* tile,
                        size_t tileSize, std::vector<uint8_t>& out, std::string& error);

// Decodes tiles with the shared tables loaded once. One object per thread.
class JpegTileDecoder {
 public:
  JpegTileDecoder();
  ~JpegTileDecoder();
  JpegTileDecoder(const JpegTileDecoder&) = delete;
  JpegTileDecoder& operator=(const JpegTileDecoder&) = delete;

  // Loads the tables-only stream. False (with error) when it is not one.
  bool setTables(const uint8_t* tables, size_t size, std::string& error);
  // Decodes an abbreviated tile stream of size x size texels into rgba (size * size * 4
  // bytes; alpha from the coverage segment, 255 without one). False on any error, including
  // a stream whose dimensions are not size x size; rgba is then unspecified.
  bool decode(const uint8_t* tile, size_t tileSize, int size, uint8_t* rgba, std::string& error);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// ---- BC1 (DXT1) ----
//
// A block is 8 bytes: colour0, colour1 (RGB565, little-endian), then 16 2-bit indices (texel
// (x, y) of the 4x4 block at bits 2 (4 y + x)), as in EXT_texture_compression_s3tc. When
// colour0 > colour1 the block has 4 colours (c0, c1, (2 c0 + c1) / 3, (c0 + 2 c1) / 3); else 3
// colours (c0, c1, (c0 + c1) / 2) and index 3 = transparent black (punch-through alpha).
//
// Texels with alpha < 128 are transparent: a block that has any uses the 3-colour mode with
// index 3 on exactly those texels (upload as GL_COMPRESSED_RGBA_S3TC_DXT1_EXT); a block of only
// opaque texels never uses index 3 in 3-colour mode. A fully transparent block is all index 3.
//
// Bit-exactness: the CUDA encoders reproduce these functions bit for bit, so the fast mode's
// arithmetic is integer (specified step by step in the .cpp), the quality mode's plain float (no
// fused multiply-add: the library is compiled with -ffp-contract=off), integer rounding is
// explicit, and ties are broken by a fixed order (documented in the .cpp).
enum class Bc1Mode : uint8_t {
  Fast = 0,     // one pass, integer: colour bounding box inset by 3/32 of its range, diagonal by
                // covariance signs, indices by projection; one colour via optimal 4-colour tables
  Quality = 1,  // cluster fit (Castano): all ordered 3- and 4-colour clusterings along the
                // principal axis, least-squares endpoints, then endpoint refinement in 565
};
const char* bc1ModeName(Bc1Mode m);  // "fast", "quality"

constexpr size_t kBc1BlockBytes = 8;

// Encodes one 4x4 block (64 bytes RGBA8, row-major) into 8 bytes.
void encodeBc1Block(const uint8_t rgba[64], Bc1Mode mode, uint8_t out[8]);
// Encodes a width x height RGBA8 image (both multiples of 4) into (width/4) x (height/4)
// blocks, row-major, 8 bytes each (out: width * height / 2 bytes).
void encodeBc1(const uint8_t* rgba, int width, int height, Bc1Mode mode, uint8_t* out);
// The reference decoder (4 or 3 colours as above; the 3-colour average rounds down, the
// 4-colour thirds as (2 a + b) / 3 with integer division of the 8-bit expanded values).
void decodeBc1Block(const uint8_t in[8], uint8_t rgba[64]);
void decodeBc1(const uint8_t* blocks, int width, int height, uint8_t* rgba);

// ---- mip levels inside a tile ----
//
// levels[0] = the tile itself; levels[i] = 2x2 reduction of levels[i-1]: the colour is the
// mean of the covered texels of the 2x2 (uncovered texels do not darken the mean), alpha is 255
// when at least two of the four are covered, else 0 (with colour 0). `count` levels, size a
// power of two >= 2^(count-1) * 4.
void buildMipChain(const uint8_t* rgba, int size, int count,
                   std::vector<std::vector<uint8_t>>& levels);

// ---- measures ----
// RGB PSNR in dB over the texels where `mask` alpha (of a, if maskAlpha) is >= 128; +inf when
// identical, 0 texels -> +inf.
double psnrRgb(const uint8_t* a, const uint8_t* b, size_t texels, bool maskAlpha = true);

}  // namespace himg
