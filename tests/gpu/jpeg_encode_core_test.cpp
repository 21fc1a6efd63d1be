// jpeg_encode_core_test.cpp - the CUDA JPEG encoder's __host__ __device__ core
// (cuda/imagery/jpeg_encode_core.cuh), driven on the CPU the way the kernels drive it
// (hfjenc::encodeTileModel: transform per MCU, one Huffman pass per restart interval, stream
// assembly), against himg::encodeJpegTile (libjpeg-turbo): byte-identical streams for synthetic
// and real tiles at qualities 50..100. Runs everywhere (no GPU needed).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "imagery/imagery.h"
#include "imagery/jpeg_encode_core.cuh"

#if __has_include(<stb/stb_image.h>)
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Weverything"
#elif defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wall"
#pragma GCC diagnostic ignored "-Wextra"
#pragma GCC diagnostic ignored "-Wdouble-promotion"
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wconversion"
#pragma GCC diagnostic ignored "-Wsign-conversion"
#pragma GCC diagnostic ignored "-Wcast-align"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wuseless-cast"
#pragma GCC diagnostic ignored "-Wold-style-cast"
#endif
#include <stb/stb_image.h>
#if defined(__clang__)
#pragma clang diagnostic pop
#elif defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
#define HF_HAVE_STB 1
#endif

namespace {

enum class Pattern { Gradient, Noise, Flat, Saturated, Edges, Mixed };

// A size x size RGBA8 tile of one pattern; coverage: 0 full, 1 a disc covered (partial), 2 none.
std::vector<uint8_t> makeTile(int size, Pattern p, int coverage, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> img(size_t(size) * size_t(size) * 4);
  for (int y = 0; y < size; ++y)
    for (int x = 0; x < size; ++x) {
      uint8_t* px = &img[(size_t(y) * size_t(size) + size_t(x)) * 4];
      for (int k = 0; k < 3; ++k) {
        int v = 0;
        switch (p) {
          case Pattern::Gradient: v = (x * (k + 1) + y * (3 - k)) * 255 / (4 * size); break;
          case Pattern::Noise: v = int(rng() % 256); break;
          case Pattern::Flat: v = 37 + 80 * k; break;
          case Pattern::Saturated: v = ((x / 8 + y / 8 + k) % 3 == 0) ? 255 : 0; break;
          case Pattern::Edges: v = ((x / 3 + y / 5 + k) % 2) ? 250 : 3; break;
          case Pattern::Mixed: {
            const int region = (x / 32 + 3 * (y / 32)) % 4;
            v = region == 0   ? (x * (k + 1) + y) % 256
                : region == 1 ? int(rng() % 256)
                : region == 2 ? 128 + int(rng() % 9) - 4
                              : ((x / 2 + y) % 7 < 3 ? 255 : 0);
            break;
          }
        }
        px[k] = uint8_t(std::clamp(v, 0, 255));
      }
      const int dx = x - size / 2, dy = y - size / 3, r = size / 3;
      px[3] = coverage == 0 ? 255 : coverage == 2 ? 0 : (dx * dx + dy * dy < r * r ? 255 : 0);
    }
  return img;
}

void expectSameAsLibjpeg(const uint8_t* rgba, int size, int quality, const std::string& what) {
  std::vector<uint8_t> ref, got;
  std::string err;
  ASSERT_TRUE(himg::encodeJpegTile(rgba, size, quality, ref, err)) << err;
  ASSERT_TRUE(hfjenc::encodeTileModel(rgba, size, quality, got)) << what;
  if (ref == got) return;
  size_t first = 0;
  while (first < std::min(ref.size(), got.size()) && ref[first] == got[first]) ++first;
  // Not identical: report how far off, and whether the stream still decodes as well.
  himg::JpegTileDecoder dec;
  const std::vector<uint8_t> tables = himg::makeJpegTables(quality);
  ASSERT_TRUE(dec.setTables(tables.data(), tables.size(), err)) << err;
  std::vector<uint8_t> a(size_t(size) * size_t(size) * 4), b(a.size());
  const bool refOk = dec.decode(ref.data(), ref.size(), size, a.data(), err);
  const bool gotOk = dec.decode(got.data(), got.size(), size, b.data(), err);
  ADD_FAILURE() << what << " q" << quality << ": streams differ at byte " << first << " (sizes "
                << ref.size() << " libjpeg, " << got.size() << " core; ratio "
                << double(got.size()) / double(ref.size()) << "); decodes: " << refOk << " " << gotOk
                << (gotOk ? "" : " (" + err + ")") << "; PSNR libjpeg "
                << himg::psnrRgb(rgba, a.data(), size_t(size) * size_t(size)) << " core "
                << himg::psnrRgb(rgba, b.data(), size_t(size) * size_t(size));
}

const int kQualities[] = {50, 75, 90, 95, 100};

TEST(JpegEncodeCore, ColourConversionMatchesLibjpegFormulas) {
  // Spot checks of the fixed-point formulas (jccolor.c): extremes and grey.
  EXPECT_EQ(hfjenc::rgbToY(0, 0, 0), 0);
  EXPECT_EQ(hfjenc::rgbToY(255, 255, 255), 255);
  EXPECT_EQ(hfjenc::rgbToCb(128, 128, 128), 128);
  EXPECT_EQ(hfjenc::rgbToCr(128, 128, 128), 128);
  EXPECT_EQ(hfjenc::rgbToCb(0, 0, 255), 255);
  EXPECT_EQ(hfjenc::rgbToCr(255, 0, 0), 255);
  for (int v = 0; v < 256; ++v) EXPECT_EQ(hfjenc::rgbToY(v, v, v), v);
}

TEST(JpegEncodeCore, TablesMatchTheArchiveTables) {
  hfjenc::Tables t;
  for (int q : {1, 10, 50, 75, 90, 100}) {
    ASSERT_TRUE(hfjenc::makeTables(q, t)) << q;
    // jpeg_quality_scaling + force_baseline clamping of Annex K's first luma entry (16).
    const int scale = q < 50 ? 5000 / q : 200 - 2 * q;
    EXPECT_EQ(t.quant[0][0], std::clamp((16 * scale + 50) / 100, 1, 255)) << q;
  }
  // Annex K luma DC: category 0 = "00", 11 = "111111110".
  EXPECT_EQ(t.codes.dc[0][0], 2u << 16 | 0u);
  EXPECT_EQ(t.codes.dc[0][11], 9u << 16 | 0x1feu);
  EXPECT_EQ(t.codes.ac[0][0x00], 4u << 16 | 0xau);    // EOB 1010
  EXPECT_EQ(t.codes.ac[0][0xf0], 11u << 16 | 0x7f9u);  // ZRL 11111111001
}

// The kernels' two passes (every MCU's bits alone, then each interval concatenated and stuffed)
// give what one serial pass over the interval gives.
TEST(JpegEncodeCore, TwoPassCodingEqualsSerialCoding) {
  hfjenc::Tables t;
  ASSERT_TRUE(hfjenc::makeTables(100, t));
  const int size = 128, n = size / 16;
  for (Pattern p : {Pattern::Noise, Pattern::Mixed, Pattern::Saturated, Pattern::Flat}) {
    const std::vector<uint8_t> img = makeTile(size, p, 1, 3);
    std::vector<int16_t> coefs(size_t(n) * n * hfjenc::kCoefsPerMcu);
    std::vector<uint8_t> coverage(size_t(size) * size / 8);
    hfjenc::transformTile(img.data(), size, t, coefs.data(), coverage.data());
    std::vector<uint32_t> bits(size_t(n) * hfjenc::kMcuBitWords);
    std::vector<uint32_t> counts(static_cast<size_t>(n));
    std::vector<uint32_t> serial(hfjenc::intervalWords(n)), packed(hfjenc::intervalWords(n));
    for (int row = 0; row < n; ++row) {
      const int16_t* first = coefs.data() + size_t(row) * n * hfjenc::kCoefsPerMcu;
      for (int c = 0; c < n; ++c) {
        int pred[3];
        hfjenc::mcuPredictors(first + size_t(c) * hfjenc::kCoefsPerMcu, c, pred);
        counts[size_t(c)] = hfjenc::encodeMcuBits(first + size_t(c) * hfjenc::kCoefsPerMcu, pred, t.codes,
                                                  bits.data() + size_t(c) * hfjenc::kMcuBitWords);
      }
      const uint32_t a = hfjenc::encodeInterval(first, n, t.codes, row, serial.data());
      const uint32_t b = hfjenc::packInterval(bits.data(), hfjenc::kMcuBitWords, counts.data(), n, row, packed.data());
      ASSERT_EQ(a, b) << "row " << row;
      ASSERT_EQ(0, std::memcmp(serial.data(), packed.data(), a)) << "row " << row;
    }
  }
}

TEST(JpegEncodeCore, SyntheticTilesByteIdentical) {
  const Pattern patterns[] = {Pattern::Gradient, Pattern::Noise,  Pattern::Flat,
                              Pattern::Saturated, Pattern::Edges, Pattern::Mixed};
  const char* names[] = {"gradient", "noise", "flat", "saturated", "edges", "mixed"};
  unsigned seed = 1;
  for (int size : {16, 64, 256}) {
    for (int pi = 0; pi < 6; ++pi)
      for (int cov : {0, 1, 2}) {
        if (size != 256 && cov != 1) continue;
        const std::vector<uint8_t> img = makeTile(size, patterns[pi], cov, seed++);
        for (int q : kQualities)
          expectSameAsLibjpeg(img.data(), size, q,
                              std::string(names[pi]) + " " + std::to_string(size) + " cov" + std::to_string(cov));
      }
  }
}

TEST(JpegEncodeCore, OtherQualitiesAndSizes) {
  const std::vector<uint8_t> img = makeTile(128, Pattern::Mixed, 1, 99);
  for (int q : {1, 5, 25, 49, 51, 99}) expectSameAsLibjpeg(img.data(), 128, q, "mixed 128");
  const std::vector<uint8_t> big = makeTile(1024, Pattern::Mixed, 0, 7);
  expectSameAsLibjpeg(big.data(), 1024, 90, "mixed 1024");
}

#if HF_HAVE_STB
// Real imagery: 256 x 256 tiles cut from the shared images (skipped when they are absent).
TEST(JpegEncodeCore, RealImageryByteIdentical) {
  const std::string dir = std::string(HF_SHARED_DEM_DIR) + "/../imagery/";
  int tested = 0;
  for (const char* name : {"ps_texture_1k.png", "world.topo.200412.3x5400x2700.jpg"}) {
    int w = 0, h = 0, n = 0;
    unsigned char* data = stbi_load((dir + name).c_str(), &w, &h, &n, 4);
    if (!data) continue;
    const int size = 256;
    int tiles = 0;
    for (int ty = 0; ty + size <= h && tiles < 12; ty += h / 3)
      for (int tx = 0; tx + size <= w && tiles < 12; tx += w / 4) {
        std::vector<uint8_t> tile(size_t(size) * size_t(size) * 4);
        for (int y = 0; y < size; ++y)
          std::memcpy(&tile[size_t(y) * size_t(size) * 4],
                      data + (size_t(ty + y) * size_t(w) + size_t(tx)) * 4, size_t(size) * 4);
        if (tiles % 3 == 2)  // partial coverage: a diagonal cut, as at a raster's edge
          for (int y = 0; y < size; ++y)
            for (int x = 0; x < size; ++x)
              if (x + y < size / 2) tile[(size_t(y) * size_t(size) + size_t(x)) * 4 + 3] = 0;
        for (int q : kQualities)
          expectSameAsLibjpeg(tile.data(), size, q, std::string(name) + " @" + std::to_string(tx) + "," + std::to_string(ty));
        ++tiles;
      }
    stbi_image_free(data);
    tested += tiles;
  }
  if (tested == 0) GTEST_SKIP() << "no shared imagery in " << dir;
}
#endif

}  // namespace
