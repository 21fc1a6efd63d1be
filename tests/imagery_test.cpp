// imagery_test.cpp - the CPU imagery codec (src/imagery): JPEG tiles (abbreviated streams,
// coverage, standalone splice decoded by plain TurboJPEG, hostile bytes), BC1 (round trips,
// punch-through, solid colours, quality against libsquish's cluster fit on the shared images),
// mip levels. Label "imagery"; runs under ASan+UBSan.
#include <gtest/gtest.h>
#include <squish.h>
#include <turbojpeg.h>

#include <cmath>
#include <string>
#include <vector>

#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#include <stb/stb_image.h>

#include "imagery/imagery.h"
#include "test_util.h"

namespace {

constexpr int kT = himg::kTileSize;

std::string imageryDir() { return std::string(HF_SHARED_DEM_DIR) + "/../imagery"; }

struct Image {
  int w = 0, h = 0;
  std::vector<uint8_t> rgba;
};

bool loadImage(const std::string& path, Image& im) {
  int n = 0;
  unsigned char* p = stbi_load(path.c_str(), &im.w, &im.h, &n, 4);
  if (!p) return false;
  im.rgba.assign(p, p + size_t(im.w) * size_t(im.h) * 4);
  stbi_image_free(p);
  return true;
}

// A size x size crop (clamped at the image edge).
std::vector<uint8_t> crop(const Image& im, int x0, int y0, int size) {
  std::vector<uint8_t> out(size_t(size) * size_t(size) * 4);
  for (int y = 0; y < size; ++y)
    for (int x = 0; x < size; ++x) {
      const int sx = std::min(im.w - 1, x0 + x), sy = std::min(im.h - 1, y0 + y);
      for (int k = 0; k < 4; ++k)
        out[(size_t(y) * size_t(size) + size_t(x)) * 4 + size_t(k)] = im.rgba[(size_t(sy) * size_t(im.w) + size_t(sx)) * 4 + size_t(k)];
    }
  return out;
}

// A smooth synthetic tile with some texture (deterministic), alpha 255.
std::vector<uint8_t> synthetic(int size, uint64_t seed) {
  hftest::Rng rng(seed);
  std::vector<uint8_t> t(size_t(size) * size_t(size) * 4);
  for (int y = 0; y < size; ++y)
    for (int x = 0; x < size; ++x) {
      uint8_t* p = &t[(size_t(y) * size_t(size) + size_t(x)) * 4];
      p[0] = uint8_t(std::clamp(120.0 + 80.0 * std::sin(x * 0.05) + double(rng.below(9)), 0.0, 255.0));
      p[1] = uint8_t(std::clamp(100.0 + 60.0 * std::cos(y * 0.07) + double(rng.below(9)), 0.0, 255.0));
      p[2] = uint8_t((x + 2 * y) / 3);
      p[3] = 255;
    }
  return t;
}

struct Decoder {
  std::vector<uint8_t> tables;
  himg::JpegTileDecoder dec;
  explicit Decoder(int quality) : tables(himg::makeJpegTables(quality)) {
    std::string e;
    EXPECT_TRUE(dec.setTables(tables.data(), tables.size(), e)) << e;
  }
};

bool hasMarker(const std::vector<uint8_t>& s, uint8_t m) {
  for (size_t i = 0; i + 1 < s.size(); ++i)
    if (s[i] == 0xff && s[i + 1] == m) return true;
  return false;
}

TEST(ImageryJpeg, TilesAreAbbreviatedStreamsWithRestartMarkers) {
  const std::vector<uint8_t> tables = himg::makeJpegTables(90);
  EXPECT_TRUE(hasMarker(tables, 0xdb));  // DQT
  EXPECT_TRUE(hasMarker(tables, 0xc4));  // DHT
  std::vector<uint8_t> tile;
  std::string e;
  ASSERT_TRUE(himg::encodeJpegTile(synthetic(kT, 1).data(), kT, 90, tile, e)) << e;
  // The header part of the tile (before SOS) carries no tables; entropy data may contain
  // neither 0xFFDB nor 0xFFC4 (stuffed bytes follow every 0xFF with 0x00 or RSTn).
  EXPECT_FALSE(hasMarker(tile, 0xdb));
  EXPECT_FALSE(hasMarker(tile, 0xc4));
  EXPECT_TRUE(hasMarker(tile, 0xdd));  // DRI
  EXPECT_TRUE(hasMarker(tile, 0xd0));  // RST0
  EXPECT_FALSE(hasMarker(tile, 0xe9));  // no coverage segment: every texel covered
}

TEST(ImageryJpeg, RoundTripKeepsColourAndCoverageExactly) {
  Decoder d(90);
  std::vector<uint8_t> src = synthetic(kT, 2);
  hftest::Rng rng(3);
  for (int i = 0; i < 3000; ++i) src[size_t(rng.below(kT * kT)) * 4 + 3] = 0;
  for (int y = 0; y < 40; ++y)  // and a whole uncovered corner
    for (int x = 0; x < 60; ++x) src[(size_t(y) * kT + size_t(x)) * 4 + 3] = 0;
  std::vector<uint8_t> tile, out(size_t(kT) * kT * 4);
  std::string e;
  ASSERT_TRUE(himg::encodeJpegTile(src.data(), kT, 90, tile, e)) << e;
  EXPECT_TRUE(hasMarker(tile, 0xe9));
  ASSERT_TRUE(d.dec.decode(tile.data(), tile.size(), kT, out.data(), e)) << e;
  for (size_t i = 0; i < size_t(kT) * kT; ++i)
    ASSERT_EQ(out[4 * i + 3], src[4 * i + 3] >= 128 ? 255 : 0) << i;
  EXPECT_GT(himg::psnrRgb(src.data(), out.data(), size_t(kT) * kT), 34.0);
  // The same decoder decodes the next tile correctly too.
  const std::vector<uint8_t> s2 = synthetic(kT, 4);
  ASSERT_TRUE(himg::encodeJpegTile(s2.data(), kT, 90, tile, e)) << e;
  ASSERT_TRUE(d.dec.decode(tile.data(), tile.size(), kT, out.data(), e)) << e;
  EXPECT_GT(himg::psnrRgb(s2.data(), out.data(), size_t(kT) * kT), 34.0);
  for (size_t i = 0; i < size_t(kT) * kT; ++i) ASSERT_EQ(out[4 * i + 3], 255);
}

TEST(ImageryJpeg, SplicedStreamDecodesWithPlainTurboJpeg) {
  Decoder d(85);
  const std::vector<uint8_t> src = synthetic(kT, 5);
  std::vector<uint8_t> tile, full, mine(size_t(kT) * kT * 4), theirs(size_t(kT) * kT * 4);
  std::string e;
  ASSERT_TRUE(himg::encodeJpegTile(src.data(), kT, 85, tile, e)) << e;
  ASSERT_TRUE(himg::completeJpegStream(d.tables.data(), d.tables.size(), tile.data(), tile.size(), full, e)) << e;
  ASSERT_TRUE(d.dec.decode(tile.data(), tile.size(), kT, mine.data(), e)) << e;
  tjhandle h = tjInitDecompress();
  ASSERT_NE(h, nullptr);
  int w = 0, hh = 0, sub = 0, cs = 0;
  ASSERT_EQ(tjDecompressHeader3(h, full.data(), static_cast<unsigned long>(full.size()), &w, &hh, &sub, &cs), 0)
      << tjGetErrorStr2(h);
  EXPECT_EQ(w, kT);
  EXPECT_EQ(hh, kT);
  EXPECT_EQ(sub, TJSAMP_420);
  ASSERT_EQ(tjDecompress2(h, full.data(), static_cast<unsigned long>(full.size()), theirs.data(), kT, 0, kT,
                          TJPF_RGBA, TJFLAG_ACCURATEDCT),
            0)
      << tjGetErrorStr2(h);
  tjDestroy(h);
  size_t diff = 0, first = mine.size();
  for (size_t i = 0; i < mine.size(); ++i)
    if (mine[i] != theirs[i]) {
      ++diff;
      if (first == mine.size()) first = i;
    }
  EXPECT_EQ(diff, 0u) << "first at byte " << first << ": " << int(mine[first]) << " vs " << int(theirs[first]);
  EXPECT_FALSE(himg::completeJpegStream(tile.data(), tile.size(), d.tables.data(), d.tables.size(), full, e));
}

TEST(ImageryJpeg, HostileBytesAreRejectedNeverCrash) {
  Decoder d(90);
  std::vector<uint8_t> src = synthetic(kT, 6);
  for (int i = 0; i < 100; ++i) src[size_t(i * 97) * 4 + 3] = 0;
  std::vector<uint8_t> tile, out(size_t(kT) * kT * 4);
  std::string e;
  ASSERT_TRUE(himg::encodeJpegTile(src.data(), kT, 90, tile, e)) << e;
  size_t rejected = 0;
  for (size_t len = 0; len < tile.size(); len += 13) {  // truncations
    const std::vector<uint8_t> cut(tile.begin(), tile.begin() + long(len));
    if (!d.dec.decode(cut.empty() ? nullptr : cut.data(), cut.size(), kT, out.data(), e)) {
      ++rejected;
      EXPECT_EQ(e.find('\n'), std::string::npos);
    }
  }
  EXPECT_EQ(rejected, (tile.size() + 12) / 13);  // a cut tile is never accepted
  hftest::Rng rng(7);
  for (int trial = 0; trial < 300; ++trial) {  // byte flips: false or a decode, never a crash
    std::vector<uint8_t> b = tile;
    b[rng.below(uint32_t(b.size()))] ^= uint8_t(1u << rng.below(8));
    d.dec.decode(b.data(), b.size(), kT, out.data(), e);
  }
  EXPECT_FALSE(d.dec.decode(tile.data(), tile.size(), 128, out.data(), e));  // wrong size
  EXPECT_NE(e.find("128"), std::string::npos) << e;
  // After all that, a good tile still decodes exactly as before.
  std::vector<uint8_t> again(out.size()), first(out.size());
  Decoder fresh(90);
  ASSERT_TRUE(fresh.dec.decode(tile.data(), tile.size(), kT, first.data(), e)) << e;
  ASSERT_TRUE(d.dec.decode(tile.data(), tile.size(), kT, again.data(), e)) << e;
  EXPECT_EQ(first, again);
  himg::JpegTileDecoder none;
  EXPECT_FALSE(none.decode(tile.data(), tile.size(), kT, out.data(), e));
  EXPECT_FALSE(none.setTables(tile.data(), tile.size(), e));  // a tile is not a tables stream
  EXPECT_FALSE(himg::encodeJpegTile(src.data(), 100, 90, tile, e));
}

TEST(ImageryBc1, DecodeOfEncodeIsCloseAndRulesHold) {
  const std::vector<uint8_t> src = synthetic(64, 8);
  for (himg::Bc1Mode mode : {himg::Bc1Mode::Fast, himg::Bc1Mode::Quality}) {
    std::vector<uint8_t> blocks(64 * 64 / 2), out(64 * 64 * 4);
    himg::encodeBc1(src.data(), 64, 64, mode, blocks.data());
    himg::decodeBc1(blocks.data(), 64, 64, out.data());
    EXPECT_GT(himg::psnrRgb(src.data(), out.data(), 64 * 64), 30.0) << himg::bc1ModeName(mode);
    for (size_t b = 0; b < blocks.size(); b += 8) {  // opaque blocks: 4 colours or no index 3
      const uint16_t c0 = uint16_t(blocks[b] | blocks[b + 1] << 8), c1 = uint16_t(blocks[b + 2] | blocks[b + 3] << 8);
      if (c0 <= c1) {
        for (int i = 0; i < 16; ++i) EXPECT_NE((blocks[b + 4 + size_t(i / 4)] >> (2 * (i % 4))) & 3, 3);
      }
    }
    for (size_t i = 0; i < 64 * 64; ++i) ASSERT_EQ(out[4 * i + 3], 255);
  }
}

TEST(ImageryBc1, PunchThroughAlpha) {
  uint8_t rgba[64], block[8], out[64];
  for (int i = 0; i < 16; ++i) {
    rgba[4 * i] = uint8_t(10 * i);
    rgba[4 * i + 1] = uint8_t(200 - 5 * i);
    rgba[4 * i + 2] = 77;
    rgba[4 * i + 3] = (i % 3 == 0) ? 0 : 255;
  }
  for (himg::Bc1Mode mode : {himg::Bc1Mode::Fast, himg::Bc1Mode::Quality}) {
    himg::encodeBc1Block(rgba, mode, block);
    const uint16_t c0 = uint16_t(block[0] | block[1] << 8), c1 = uint16_t(block[2] | block[3] << 8);
    EXPECT_LE(c0, c1);  // 3-colour mode
    himg::decodeBc1Block(block, out);
    for (int i = 0; i < 16; ++i) EXPECT_EQ(out[4 * i + 3], rgba[4 * i + 3]) << i;
  }
  for (int i = 0; i < 16; ++i) rgba[4 * i + 3] = 0;  // fully transparent
  himg::encodeBc1Block(rgba, himg::Bc1Mode::Fast, block);
  himg::decodeBc1Block(block, out);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(out[4 * i + 3], 0);
}

TEST(ImageryBc1, SolidColoursExactWhere565Allows) {
  uint8_t rgba[64], block[8], out[64];
  for (int r5 : {0, 7, 31})
    for (int g6 : {0, 40, 63}) {
      const int r = (r5 << 3) | (r5 >> 2), g = (g6 << 2) | (g6 >> 4), b = 132;  // 132 = expand(16)
      for (int i = 0; i < 16; ++i) {
        rgba[4 * i] = uint8_t(r);
        rgba[4 * i + 1] = uint8_t(g);
        rgba[4 * i + 2] = uint8_t(b);
        rgba[4 * i + 3] = 255;
      }
      for (himg::Bc1Mode mode : {himg::Bc1Mode::Fast, himg::Bc1Mode::Quality}) {
        himg::encodeBc1Block(rgba, mode, block);
        himg::decodeBc1Block(block, out);
        for (int i = 0; i < 16; ++i) {
          ASSERT_EQ(out[4 * i], r);
          ASSERT_EQ(out[4 * i + 1], g);
          ASSERT_EQ(out[4 * i + 2], b);
        }
      }
    }
}

// PSNR of this project's encoders and of libsquish's cluster fit (uniform RGB metric, as PSNR
// is) over 256 x 256 crops of a shared image.
void compareWithSquish(const std::string& file, int crops) {
  Image im;
  if (!loadImage(imageryDir() + "/" + file, im)) GTEST_SKIP() << "no " << imageryDir() << "/" << file;
  double se[3] = {0, 0, 0};  // fast, quality, squish cluster
  size_t n = 0;
  hftest::Rng rng(11);
  for (int c = 0; c < crops; ++c) {
    const int x0 = int(rng.below(uint32_t(std::max(1, im.w - kT)))), y0 = int(rng.below(uint32_t(std::max(1, im.h - kT))));
    const std::vector<uint8_t> t = crop(im, x0, y0, kT);
    std::vector<uint8_t> blocks(size_t(kT) * kT / 2), out(t.size());
    for (int m = 0; m < 3; ++m) {
      if (m < 2) {
        himg::encodeBc1(t.data(), kT, kT, m == 0 ? himg::Bc1Mode::Fast : himg::Bc1Mode::Quality, blocks.data());
        himg::decodeBc1(blocks.data(), kT, kT, out.data());
      } else {
        float uniform[3] = {1.0f, 1.0f, 1.0f};  // squish's default metric is perceptual
        squish::CompressImage(t.data(), kT, kT, blocks.data(), squish::kDxt1 | squish::kColourClusterFit, uniform);
        squish::DecompressImage(out.data(), kT, kT, blocks.data(), squish::kDxt1);
      }
      for (size_t i = 0; i < t.size(); i += 4)
        for (int k = 0; k < 3; ++k) {
          const double d = double(t[i + size_t(k)]) - double(out[i + size_t(k)]);
          se[m] += d * d;
        }
    }
    n += size_t(kT) * kT * 3;
  }
  double psnr[3];
  for (int m = 0; m < 3; ++m) psnr[m] = 10 * std::log10(255.0 * 255.0 * double(n) / std::max(1e-9, se[m]));
  std::printf("%s: BC1 PSNR fast %.2f dB, quality %.2f dB, squish cluster fit %.2f dB\n", file.c_str(), psnr[0],
              psnr[1], psnr[2]);
  EXPECT_GE(psnr[1], psnr[2] - 0.1) << file;
  EXPECT_GE(psnr[1], psnr[0]) << file;
}

TEST(ImageryBc1, QualityModeMatchesSquishClusterFitOnPugetSound) { compareWithSquish("ps_texture_1k.png", 4); }
TEST(ImageryBc1, QualityModeMatchesSquishClusterFitOnWorld) {
  compareWithSquish("world.topo.200412.3x5400x2700.jpg", 4);
}

TEST(ImageryMips, CoverageAwareReduction) {
  std::vector<uint8_t> t(16 * 16 * 4, 0);
  for (int y = 0; y < 16; ++y)
    for (int x = 0; x < 16; ++x) {
      uint8_t* p = &t[(size_t(y) * 16 + size_t(x)) * 4];
      p[0] = 200;
      p[1] = 100;
      p[2] = uint8_t(x * 10);
      p[3] = x <= 8 ? 255 : 0;
    }
  std::vector<std::vector<uint8_t>> mips;
  himg::buildMipChain(t.data(), 16, 3, mips);
  ASSERT_EQ(mips.size(), 3u);
  EXPECT_EQ(mips[1].size(), 8u * 8u * 4u);
  EXPECT_EQ(mips[2].size(), 4u * 4u * 4u);
  EXPECT_EQ(mips[0][(0 * 16 + 12) * 4], 0);  // uncovered level-0 colour is zeroed
  const uint8_t* left = &mips[1][0];
  EXPECT_EQ(left[0], 200);  // uncovered texels never darken
  EXPECT_EQ(left[3], 255);
  const uint8_t* edge = &mips[1][4 * 4];  // x 8..9: two of four covered -> covered
  EXPECT_EQ(edge[3], 255);
  EXPECT_EQ(edge[0], 200);
  EXPECT_EQ(edge[2], 80);
  EXPECT_EQ(mips[1][5 * 4 + 3], 0);  // x 10..11: none covered
  EXPECT_EQ(mips[1][5 * 4], 0);
}

}  // namespace
