// archive_test.cpp - the .hfa archive (src/archive): write/read round trips, LOD error, and
// truncated / corrupted archives (every truncation length, random byte flips) that must give
// one-line errors and never crash. No GDAL; meant to run under ASan+UBSan (label "archive").
#include <gtest/gtest.h>
#include <chrono>
#include <fcntl.h>
#include <sys/file.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "archive/archive.h"
#include "archive/block_table.h"
#include "codec/ans.h"
#include "test_util.h"
#include "test_files.h"

namespace {

namespace fs = std::filesystem;

constexpr int kLog = 4;  // p = 17
constexpr int kP = (1 << kLog) + 1;

std::vector<uint16_t> tileSamples(int level, uint32_t x, uint32_t y) {
  std::vector<uint16_t> s(size_t(kP) * kP);
  hftest::Rng rng(uint64_t(level) * 1000 + x * 31 + y);
  for (int j = 0; j < kP; ++j)
    for (int i = 0; i < kP; ++i)
      s[size_t(j) * kP + i] = uint16_t(int16_t(100 * level + 3 * i - 2 * j + int(rng.below(7))));
  return s;
}

// The codec tile (level, x, y) of an archive of header codec `codec` is stored in: auto
// archives alternate hfan and hfpac tiles.
hfa::Codec tileCodec(hfa::Codec codec, uint32_t x, uint32_t y) {
  if (codec != hfa::Codec::Auto) return codec;
  return (x + y) % 2 ? hfa::Codec::Hfan : hfa::Codec::Hfpac;
}

// Writes a 2-level archive of a 40 x 20 extent (level 0: 3 x 2 tiles, one left out; level 1:
// 2 x 1). Returns the path.
// With `imagery`: an imagery section of 16 x 16 texel tiles (border 2), one finer level, a
// tile for every height tile's region (and the four sub-tiles of each level-0 tile), written
// interleaved with the height tiles; payloads are RGBA8 (raw), fake "jpeg" bytes (the archive
// does not decode imagery) and, for the tile (k2, x0, y0), a bc1 chain (16 x 16: one level, 128
// bytes of arbitrary blocks).
std::string writeArchive(const fs::path& dir, const std::string& name, hfa::Codec codec,
                         bool imagery = false) {
  hfa::Header h;
  h.tileLog = kLog;
  h.levels = 2;
  h.codec = codec;
  h.sampleType = hfpac::SampleType::Int16;
  h.width = 40;
  h.height = 20;
  h.crsWkt = "LOCAL_CS[\"test\"]";
  h.verticalUnits = "m";
  hfa::ArchiveWriter w;
  std::string error;
  const std::string path = (dir / name).string();
  hfa::ImageryHeader im;
  im.tileSize = 16;
  im.border = 2;
  im.finerLevels = 1;
  im.quality = 80;
  im.jpegTables = {0xff, 0xd8, 0xff, 0xd9};  // not real tables: the archive only stores them
  EXPECT_TRUE(w.open(path, h, 8, error, imagery ? &im : nullptr, 32)) << error;
  auto addImagery = [&](int k, uint32_t x, uint32_t y) {
    hfa::ImageryEntry e;
    e.level = uint8_t(k);
    e.x = x;
    e.y = y;
    e.codec = (x + y) % 2 ? hfa::ImageryCodec::Raw : hfa::ImageryCodec::Jpeg;
    if (k == 2 && x == 0 && y == 0) e.codec = hfa::ImageryCodec::Bc1;
    e.flags = x == 0 ? hfa::kImageryPartial : 0;
    std::vector<uint8_t> payload(e.codec == hfa::ImageryCodec::Raw   ? 16 * 16 * 4
                                 : e.codec == hfa::ImageryCodec::Bc1 ? 128
                                                                     : 100 + x + 7 * y);
    for (size_t i = 0; i < payload.size(); ++i) payload[i] = uint8_t(i * 7 + x + 3 * y + k);
    EXPECT_TRUE(w.addImageryTile(e, payload.data(), payload.size(), error)) << error;
  };
  for (int level = 1; level >= 0; --level)  // out of order on purpose: finish() sorts
    for (uint32_t y = 0; y < h.tilesY(level); ++y)
      for (uint32_t x = 0; x < h.tilesX(level); ++x) {
        if (level == 0 && x == 1 && y == 1) continue;  // absent tile
        const std::vector<uint16_t> s = tileSamples(level, x, y);
        hfa::TileStats st;
        hfa::computeTileStats(s.data(), kLog, h.sampleType, false, 0, st);
        hfa::TileEntry e;
        e.level = uint8_t(level);
        e.codec = tileCodec(codec, x, y);
        e.x = x;
        e.y = y;
        e.minSample = st.minSample;
        e.maxSample = st.maxSample;
        e.lodError = std::move(st.lodError);
        std::vector<uint8_t> payload;
        if (codec == hfa::Codec::Raw) {
          for (uint16_t v : s) {
            payload.push_back(uint8_t(v));
            payload.push_back(uint8_t(v >> 8));
          }
        } else if (e.codec == hfa::Codec::Hfan) {
          EXPECT_EQ(hfpac::ansEncode(s.data(), kP, kP, kP, h.sampleType, payload), hfpac::Status::Ok);
        } else {
          hfpac::EncodeOptions eo;
          eo.rbuc = codec == hfa::Codec::HfpacRbuc;
          EXPECT_EQ(hfpac::encode(s.data(), kP, kP, kP, h.sampleType, eo, payload), hfpac::Status::Ok);
        }
        EXPECT_TRUE(w.addTile(e, payload.data(), payload.size(), error)) << error;
        if (imagery) {
          addImagery(level + 1, x, y);
          if (level == 0)
            for (uint32_t q = 0; q < 4; ++q) addImagery(0, 2 * x + (q & 1), 2 * y + (q >> 1));
        }
      }
  EXPECT_TRUE(w.finish(error)) << error;
  return path;
}

std::vector<uint8_t> readFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

void writeFile(const std::string& path, const uint8_t* data, size_t size) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(data), std::streamsize(size));
}

// Opens and decodes everything; returns the number of errors. Never crashes (ASan checks).
int openAndDecodeAll(const std::string& path, std::string& first_error) {
  hfa::ArchiveReader r;
  std::string error;
  if (!r.open(path, error)) {
    first_error = error;
    return 1;
  }
  int errors = 0;
  std::vector<uint16_t> buf(size_t(kP) * kP);
  for (size_t i = 0; i < r.tiles().size(); ++i)
    if (!r.decodeTile(i, buf.data(), error)) {
      if (!errors) first_error = error;
      ++errors;
    }
  const uint8_t* data;
  size_t size;
  for (size_t i = 0; i < r.imageryTiles().size(); ++i)
    if (!r.imageryPayload(i, data, size, error)) {
      if (!errors) first_error = error;
      ++errors;
    }
  return errors;
}

TEST(Archive, RoundTripOfEveryCodec) {
  const hf_test::TempDir scratch("hf_archive_test");  // removed with its files, however the test ends
  const fs::path& dir = scratch.path;
  for (hfa::Codec codec : {hfa::Codec::Hfpac, hfa::Codec::HfpacRbuc, hfa::Codec::Raw, hfa::Codec::Hfan,
                           hfa::Codec::Auto}) {
    const std::string path = writeArchive(dir, std::string("rt_") + hfa::codecName(codec) + ".hfa", codec);
    hfa::ArchiveReader r;
    std::string error;
    ASSERT_TRUE(r.open(path, error)) << error;
    EXPECT_EQ(r.header().codec, codec);
    EXPECT_EQ(r.header().crsWkt, "LOCAL_CS[\"test\"]");
    EXPECT_EQ(r.header().verticalUnits, "m");
    EXPECT_EQ(r.header().tilesX(0), 3u);
    EXPECT_EQ(r.header().tilesY(0), 2u);
    EXPECT_EQ(r.header().tilesX(1), 2u);
    EXPECT_EQ(r.header().tilesY(1), 1u);
    ASSERT_EQ(r.tiles().size(), 7u);
    EXPECT_EQ(r.find(0, 1, 1), -1);
    std::vector<uint16_t> buf(size_t(kP) * kP);
    for (int level = 0; level < 2; ++level)
      for (uint32_t y = 0; y < r.header().tilesY(level); ++y)
        for (uint32_t x = 0; x < r.header().tilesX(level); ++x) {
          const long i = r.find(level, x, y);
          if (level == 0 && x == 1 && y == 1) continue;
          ASSERT_GE(i, 0);
          ASSERT_TRUE(r.decodeTile(size_t(i), buf.data(), error)) << error;
          EXPECT_EQ(buf, tileSamples(level, x, y));
          EXPECT_EQ(r.tiles()[size_t(i)].codec, tileCodec(codec, x, y));
          if (r.tiles()[size_t(i)].codec == hfa::Codec::Hfan) {
            // No layers: every layer count and the progressive loader decode it exactly, whole.
            std::fill(buf.begin(), buf.end(), uint16_t(0));
            ASSERT_TRUE(r.decodeTile(size_t(i), buf.data(), error, hfpac::Layers::L1)) << error;
            EXPECT_EQ(buf, tileSamples(level, x, y));
            bool exact = false;
            uint32_t bytesRead = 0;
            ASSERT_TRUE(r.decodeTileLossy(size_t(i), buf.data(), exact, bytesRead, error)) << error;
            EXPECT_TRUE(exact);
            EXPECT_EQ(bytesRead, r.tiles()[size_t(i)].size);
            EXPECT_EQ(buf, tileSamples(level, x, y));
          }
          if (codec == hfa::Codec::HfpacRbuc) {  // the payload really is a 2DRBUC stream
            const uint8_t* data;
            size_t size;
            hfpac::PatchInfo info;
            ASSERT_TRUE(r.payload(size_t(i), data, size, error)) << error;
            ASSERT_EQ(hfpac::readInfo(data, size, info), hfpac::Status::Ok);
            EXPECT_TRUE(info.rbuc || info.flat || info.stored);
          }
        }
    size_t first, count;
    r.levelRange(1, first, count);
    EXPECT_EQ(first, 5u);
    EXPECT_EQ(count, 2u);
  }
  fs::remove_all(dir);
}

TEST(Archive, RawAndHfpacIndexesAgree) {
  const hf_test::TempDir scratch("hf_archive_test");  // removed with its files, however the test ends
  const fs::path& dir = scratch.path;
  hfa::ArchiveReader a, b;
  std::string error;
  ASSERT_TRUE(a.open(writeArchive(dir, "a.hfa", hfa::Codec::Hfpac), error)) << error;
  ASSERT_TRUE(b.open(writeArchive(dir, "b.hfa", hfa::Codec::Raw), error)) << error;
  ASSERT_EQ(a.tiles().size(), b.tiles().size());
  for (size_t i = 0; i < a.tiles().size(); ++i) {
    const hfa::TileEntry &x = a.tiles()[i], &y = b.tiles()[i];
    EXPECT_EQ(x.level, y.level);
    EXPECT_EQ(x.x, y.x);
    EXPECT_EQ(x.y, y.y);
    EXPECT_EQ(x.minSample, y.minSample);
    EXPECT_EQ(x.maxSample, y.maxSample);
    EXPECT_EQ(x.lodError, y.lodError);
  }
  fs::remove_all(dir);
}

TEST(Archive, LodErrorOfPlaneIsZeroAndBumpIsMeasured) {
  std::vector<uint16_t> s(size_t(kP) * kP);
  for (int j = 0; j < kP; ++j)
    for (int i = 0; i < kP; ++i) s[size_t(j) * kP + i] = uint16_t(1000 + 3 * i + 5 * j);
  hfa::TileStats st;
  hfa::computeTileStats(s.data(), kLog, hfpac::SampleType::UInt16, false, 0, st);
  ASSERT_EQ(st.lodError.size(), size_t(kLog + 1));
  for (float e : st.lodError) EXPECT_EQ(e, 0.f);
  EXPECT_EQ(st.minSample, 1000);
  EXPECT_EQ(st.maxSample, 1000 + 3 * 16 + 5 * 16);
  // A single spike at an odd sample: invisible from step 1 on, error = its height.
  s[size_t(3) * kP + 5] += 40;
  hfa::computeTileStats(s.data(), kLog, hfpac::SampleType::UInt16, false, 0, st);
  EXPECT_EQ(st.lodError[0], 0.f);
  for (int k = 1; k <= kLog; ++k) EXPECT_FLOAT_EQ(st.lodError[size_t(k)], 40.f) << k;
  // A spike at (8, 8), a vertex of steps 1..3: there it tilts the neighbouring triangles (the
  // worst sample is the nearest non-vertex, error 40 (s - 1) / s); at step 4 the tile is one
  // square whose main diagonal passes through (8, 8): error 40.
  s[size_t(3) * kP + 5] -= 40;
  s[size_t(8) * kP + 8] += 40;
  EXPECT_FLOAT_EQ(hfa::lodErrorAtStep(s.data(), kLog, hfpac::SampleType::UInt16, 1), 20.f);
  EXPECT_FLOAT_EQ(hfa::lodErrorAtStep(s.data(), kLog, hfpac::SampleType::UInt16, 3), 35.f);
  EXPECT_FLOAT_EQ(hfa::lodErrorAtStep(s.data(), kLog, hfpac::SampleType::UInt16, 4), 40.f);
}

TEST(Archive, ImageryRoundTrip) {
  const hf_test::TempDir scratch("hf_archive_test");  // removed with its files, however the test ends
  const fs::path& dir = scratch.path;
  hfa::ArchiveReader r;
  std::string error;
  ASSERT_TRUE(r.open(writeArchive(dir, "im.hfa", hfa::Codec::Hfpac, true), error)) << error;
  ASSERT_TRUE(r.hasImagery());
  const hfa::ImageryHeader& im = r.imagery();
  EXPECT_EQ(im.tileSize, 16);
  EXPECT_EQ(im.border, 2);
  EXPECT_EQ(im.finerLevels, 1);
  EXPECT_EQ(im.levels, 3);
  EXPECT_EQ(im.quality, 80);
  EXPECT_EQ(im.jpegTables, (std::vector<uint8_t>{0xff, 0xd8, 0xff, 0xd9}));
  EXPECT_EQ(hfa::imageryTilesX(r.header(), im, 0), 6u);  // 3 level-0 tiles, 2 sub-tiles each
  EXPECT_EQ(hfa::imageryTilesY(r.header(), im, 0), 4u);
  EXPECT_EQ(hfa::imageryTilesX(r.header(), im, 2), 2u);
  EXPECT_EQ(r.imageryTiles().size(), 2u + 5u + 5u * 4u);
  EXPECT_EQ(r.imageryIndexCapacity(), 32u);
  size_t first, count;
  r.imageryLevelRange(0, first, count);
  EXPECT_EQ(count, 20u);
  const long t = r.findImagery(0, 3, 1);  // a sub-tile of level-0 tile (1, 0)
  ASSERT_GE(t, 0);
  const hfa::ImageryEntry& e = r.imageryTiles()[size_t(t)];
  EXPECT_EQ(e.codec, hfa::ImageryCodec::Jpeg);  // (x + y) even
  EXPECT_EQ(e.flags, 0);
  const uint8_t* data;
  size_t size;
  ASSERT_TRUE(r.imageryPayload(size_t(t), data, size, error)) << error;
  ASSERT_EQ(size, e.codec == hfa::ImageryCodec::Raw ? 16u * 16u * 4u : 100u + 3u + 7u);
  for (size_t i = 0; i < size; ++i) ASSERT_EQ(data[i], uint8_t(i * 7 + 3 + 3 * 1 + 0)) << i;
  EXPECT_EQ(r.findImagery(0, 2, 2), -1);  // under the absent level-0 tile (1, 1)
  EXPECT_EQ(r.findImagery(5, 0, 0), -1);
  EXPECT_EQ(r.imageryTileName(size_t(t)), "imagery tile (k0, x3, y1)");
  // The heights are unchanged by the imagery beside them.
  std::string e2;
  EXPECT_EQ(openAndDecodeAll((dir / "im.hfa").string(), e2), 0) << e2;
  fs::remove_all(dir);
}

TEST(Archive, Bc1ChainGeometry) {
  EXPECT_STREQ(hfa::imageryCodecName(hfa::ImageryCodec::Bc1), "bc1");
  hfa::ImageryCodec c = hfa::ImageryCodec::Raw;
  EXPECT_TRUE(hfa::parseImageryCodec("bc1", c));
  EXPECT_EQ(c, hfa::ImageryCodec::Bc1);
  EXPECT_FALSE(hfa::parseImageryCodec("dxt1", c));
  EXPECT_EQ(hfa::imageryBc1Levels(256), 5);  // 256 .. 16
  EXPECT_EQ(hfa::imageryBc1ChainBytes(256), 32768u + 8192u + 2048u + 512u + 128u);
  EXPECT_EQ(hfa::imageryBc1LevelOffset(256, 1), 32768u);
  EXPECT_EQ(hfa::imageryBc1LevelOffset(256, 4), 32768u + 8192u + 2048u + 512u);
  EXPECT_EQ(hfa::imageryBc1Levels(4096), 5);
  EXPECT_EQ(hfa::imageryBc1Levels(32), 2);  // 32, 16
  EXPECT_EQ(hfa::imageryBc1ChainBytes(32), 512u + 128u);
  EXPECT_EQ(hfa::imageryBc1Levels(16), 1);
  EXPECT_EQ(hfa::imageryBc1ChainBytes(16), 128u);
}

// Rewrites the imagery entry of tile `tile` (index order) with `patch`, then the imagery and
// header checksums, so that only the entry's own rules can reject it.
void patchImageryEntry(std::vector<uint8_t>& b, size_t tile, const std::function<void(uint8_t*)>& patch) {
  auto get32 = [&](size_t o) { return uint32_t(b[o]) | uint32_t(b[o + 1]) << 8 | uint32_t(b[o + 2]) << 16 | uint32_t(b[o + 3]) << 24; };
  auto put32 = [&](size_t o, uint32_t v) {
    for (int i = 0; i < 4; ++i) b[o + size_t(i)] = uint8_t(v >> (8 * i));
  };
  const size_t im = size_t(get32(192)) | size_t(get32(196)) << 32;
  const uint32_t bytes = get32(200);
  const size_t tables = (get32(im + 16) + 7) & ~size_t(7);
  if (tile == SIZE_MAX) patch(&b[im]);  // the descriptor
  else patch(&b[im + 64 + tables + tile * hfa::kImageryEntryBytes]);
  put32(204, hfa::crc32(&b[im], bytes));
  put32(252, hfa::crc32(b.data(), 252));
}

TEST(Archive, Bc1TileOfTheWrongSizeIsRefused) {
  const hf_test::TempDir scratch("hf_archive_test");  // removed with its files, however the test ends
  const fs::path& dir = scratch.path;
  const std::string path = writeArchive(dir, "bc1.hfa", hfa::Codec::Hfpac, true);
  hfa::ArchiveReader r;
  std::string error;
  ASSERT_TRUE(r.open(path, error)) << error;
  const long t = r.findImagery(2, 0, 0);
  ASSERT_GE(t, 0);
  EXPECT_EQ(r.imageryTiles()[size_t(t)].codec, hfa::ImageryCodec::Bc1);
  EXPECT_EQ(r.imageryTiles()[size_t(t)].size, 128u);
  const uint8_t* data;
  size_t size;
  ASSERT_TRUE(r.imageryPayload(size_t(t), data, size, error)) << error;
  EXPECT_EQ(size, 128u);
  r.close();
  const std::vector<uint8_t> bytes = readFile(path);
  const std::string bad = (dir / "bc1_bad.hfa").string();
  // The entry says 127 or 129 bytes (checksums fixed up): one line naming the tile and the sizes.
  for (uint32_t wrong : {127u, 129u, 0u, 512u}) {
    std::vector<uint8_t> b = bytes;
    patchImageryEntry(b, size_t(t), [&](uint8_t* e) {
      for (int i = 0; i < 4; ++i) e[12 + i] = uint8_t(wrong >> (8 * i));
    });
    writeFile(bad, b.data(), b.size());
    hfa::ArchiveReader r2;
    EXPECT_FALSE(r2.open(bad, error)) << wrong;
    EXPECT_NE(error.find("imagery tile (k2, x0, y0): bc1 payload of " + std::to_string(wrong) + " bytes"),
              std::string::npos) << error;
    EXPECT_NE(error.find("128"), std::string::npos) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos);
  }
  // A jpeg tile relabelled bc1 has the wrong size too; a codec beyond bc1 is unknown.
  {
    std::vector<uint8_t> b = bytes;
    patchImageryEntry(b, 0, [](uint8_t* e) { e[1] = uint8_t(hfa::ImageryCodec::Bc1); });
    writeFile(bad, b.data(), b.size());
    hfa::ArchiveReader r2;
    EXPECT_FALSE(r2.open(bad, error));
    EXPECT_NE(error.find("bc1 payload of"), std::string::npos) << error;
    b = bytes;
    patchImageryEntry(b, 0, [](uint8_t* e) { e[1] = 3; });
    writeFile(bad, b.data(), b.size());
    EXPECT_FALSE(r2.open(bad, error));
    EXPECT_NE(error.find("unknown codec 3"), std::string::npos) << error;
    // The descriptor's codec: 3 is unknown (what a reader before bc1 says about 2).
    b = bytes;
    patchImageryEntry(b, SIZE_MAX, [](uint8_t* d) { d[4] = 3; });
    writeFile(bad, b.data(), b.size());
    EXPECT_FALSE(r2.open(bad, error));
    EXPECT_EQ(error, "unknown imagery codec 3");
  }
  // The writer refuses what the reader would: a bc1 tile that is not a whole chain.
  {
    hfa::Header h;
    h.tileLog = kLog;
    h.width = h.height = 17;
    hfa::ImageryHeader im;
    im.codec = hfa::ImageryCodec::Bc1;
    im.tileSize = 32;
    im.border = 2;
    hfa::ArchiveWriter w;
    ASSERT_TRUE(w.open((dir / "w.hfa").string(), h, 1, error, &im, 2)) << error;
    hfa::ImageryEntry e;
    e.codec = hfa::ImageryCodec::Bc1;
    e.level = 0;
    const std::vector<uint8_t> chain(640, 0x11), chain_short(512, 0x11);
    EXPECT_FALSE(w.addImageryTile(e, chain_short.data(), chain_short.size(), error));
    EXPECT_NE(error.find("bc1 payload of 512 bytes"), std::string::npos) << error;
    EXPECT_TRUE(w.addImageryTile(e, chain.data(), chain.size(), error)) << error;
    w.abort();
  }
  fs::remove_all(dir);
}

TEST(Archive, VersionOneStillOpens) {
  const hf_test::TempDir scratch("hf_archive_test");  // removed with its files, however the test ends
  const fs::path& dir = scratch.path;
  const std::string path = writeArchive(dir, "v1.hfa", hfa::Codec::Hfpac);
  std::vector<uint8_t> b = readFile(path);
  ASSERT_EQ(b[4], hfa::kVersion);
  b[4] = 1;  // a version-1 file is byte for byte a version-2 file without imagery
  const uint32_t crc = hfa::crc32(b.data(), 252);
  for (int i = 0; i < 4; ++i) b[size_t(252 + i)] = uint8_t(crc >> (8 * i));
  writeFile(path, b.data(), b.size());
  hfa::ArchiveReader r;
  std::string error;
  ASSERT_TRUE(r.open(path, error)) << error;
  EXPECT_FALSE(r.hasImagery());
  EXPECT_EQ(openAndDecodeAll(path, error), 0) << error;
  fs::remove_all(dir);
}

TEST(Archive, ImageryCorruptionIsCaught) {
  const hf_test::TempDir scratch("hf_archive_test");  // removed with its files, however the test ends
  const fs::path& dir = scratch.path;
  const std::string path = writeArchive(dir, "imc_src.hfa", hfa::Codec::Hfpac, true);
  const std::vector<uint8_t> bytes = readFile(path);
  const std::string cut = (dir / "imc.hfa").string();
  for (size_t len = 0; len < bytes.size(); len += 7) {  // every 7th truncation length
    writeFile(cut, bytes.data(), len);
    hfa::ArchiveReader r;
    std::string error;
    ASSERT_FALSE(r.open(cut, error)) << "length " << len;
    ASSERT_EQ(error.find('\n'), std::string::npos);
  }
  hftest::Rng rng(7);
  int detected = 0;
  for (int trial = 0; trial < 400; ++trial) {
    std::vector<uint8_t> b = bytes;
    b[rng.below(uint32_t(b.size()))] ^= uint8_t(1u << rng.below(8));
    writeFile(cut, b.data(), b.size());
    std::string error;
    if (openAndDecodeAll(cut, error) > 0) {
      ++detected;
      EXPECT_EQ(error.find('\n'), std::string::npos);
    }
  }
  EXPECT_GT(detected, 200);
  // A corrupt imagery payload names the imagery tile.
  hfa::ArchiveReader ok;
  std::string error;
  ASSERT_TRUE(ok.open(path, error)) << error;
  const hfa::ImageryEntry last = ok.imageryTiles().back();
  ok.close();
  std::vector<uint8_t> b = bytes;
  b[size_t(last.offset + last.size / 2)] ^= 0x40;
  writeFile(cut, b.data(), b.size());
  EXPECT_EQ(openAndDecodeAll(cut, error), 1);
  EXPECT_NE(error.find("imagery tile (k"), std::string::npos) << error;
  fs::remove_all(dir);
}

TEST(Archive, EveryTruncationIsAnErrorNamingTheCause) {
  const hf_test::TempDir scratch("hf_archive_test");  // removed with its files, however the test ends
  const fs::path& dir = scratch.path;
  const std::string path = writeArchive(dir, "trunc_src.hfa", hfa::Codec::Hfpac);
  const std::vector<uint8_t> bytes = readFile(path);
  const std::string cut = (dir / "trunc.hfa").string();
  size_t named_tile = 0;
  for (size_t len = 0; len < bytes.size(); ++len) {
    writeFile(cut, bytes.data(), len);
    hfa::ArchiveReader r;
    std::string error;
    ASSERT_FALSE(r.open(cut, error)) << "length " << len;
    ASSERT_FALSE(error.empty());
    ASSERT_EQ(error.find('\n'), std::string::npos);
    named_tile += error.find("tile (L") != std::string::npos;
  }
  EXPECT_GT(named_tile, 0u);  // truncations inside the payloads name the tile
  fs::remove_all(dir);
}

TEST(Archive, RandomByteFlipsNeverCrash) {
  const hf_test::TempDir scratch("hf_archive_test");  // removed with its files, however the test ends
  const fs::path& dir = scratch.path;
  const std::string path = writeArchive(dir, "flip_src.hfa", hfa::Codec::Hfpac);
  const std::vector<uint8_t> bytes = readFile(path);
  const std::string bad = (dir / "flip.hfa").string();
  hftest::Rng rng(42);
  int detected = 0;
  for (int trial = 0; trial < 600; ++trial) {
    std::vector<uint8_t> b = bytes;
    const int flips = 1 + int(rng.below(3));
    for (int f = 0; f < flips; ++f) b[rng.below(uint32_t(b.size()))] ^= uint8_t(1u << rng.below(8));
    writeFile(bad, b.data(), b.size());
    std::string error;
    if (openAndDecodeAll(bad, error) > 0) {
      ++detected;
      EXPECT_EQ(error.find('\n'), std::string::npos);
    }
  }
  EXPECT_GT(detected, 300);  // flips in unused index room go unnoticed; the rest are caught
  fs::remove_all(dir);
}

TEST(Archive, PayloadCorruptionNamesTheTile) {
  const hf_test::TempDir scratch("hf_archive_test");  // removed with its files, however the test ends
  const fs::path& dir = scratch.path;
  const std::string path = writeArchive(dir, "payload.hfa", hfa::Codec::Hfpac);
  std::vector<uint8_t> b = readFile(path);
  b[b.size() - 3] ^= 0x10;  // inside the last payload
  writeFile(path, b.data(), b.size());
  std::string error;
  EXPECT_EQ(openAndDecodeAll(path, error), 1);
  EXPECT_NE(error.find("tile (L"), std::string::npos) << error;
  EXPECT_NE(error.find("checksum"), std::string::npos) << error;
  fs::remove_all(dir);
}

TEST(Archive, WriterLeavesNothingBehindOnAbortOrError) {
  const hf_test::TempDir scratch("hf_archive_test");  // removed with its files, however the test ends
  const fs::path& dir = scratch.path;
  hfa::Header h;
  h.tileLog = kLog;
  h.width = h.height = 17;
  std::string error;
  {
    hfa::ArchiveWriter w;
    ASSERT_TRUE(w.open((dir / "aborted.hfa").string(), h, 1, error)) << error;
    const std::vector<uint8_t> payload(10, 1);
    ASSERT_TRUE(w.addTile(hfa::TileEntry(), payload.data(), payload.size(), error));
  }  // destroyed without finish()
  EXPECT_TRUE(fs::is_empty(dir));
  hfa::ArchiveWriter w;
  EXPECT_FALSE(w.open((dir / "no_such_dir" / "x.hfa").string(), h, 1, error));
  EXPECT_NE(error.find("temporary"), std::string::npos) << error;
  EXPECT_TRUE(fs::is_empty(dir));
  fs::remove_all(dir);
}

// A writer killed before finish() (kill -9) leaves PATH.tmp.*; the next writer of PATH removes
// those no live writer holds (flock) once they are 2 s old, and nothing else.
TEST(Archive, StaleTemporaryFilesAreRemovedByTheNextWriter) {
  const hf_test::TempDir scratch("hf_archive_test");
  const fs::path dir = scratch.path / "stale";
  fs::create_directories(dir);
  auto make = [&](const std::string& name, bool old) {
    const fs::path f = dir / name;
    std::ofstream(f) << "partial archive";
    if (old) fs::last_write_time(f, fs::file_time_type::clock::now() - std::chrono::minutes(5));
    return f;
  };
  const fs::path stale = make("out.hfa.tmp.AAAAAA", true);
  const fs::path held = make("out.hfa.tmp.BBBBBB", true);
  const fs::path fresh = make("out.hfa.tmp.CCCCCC", false);
  const fs::path other = make("other.hfa.tmp.DDDDDD", true);
  const int heldFd = ::open(held.c_str(), O_RDONLY);
  ASSERT_GE(heldFd, 0);
  ASSERT_EQ(::flock(heldFd, LOCK_EX | LOCK_NB), 0);  // a writer that is still running
  hfa::Header h;
  h.tileLog = kLog;
  h.width = 20;
  h.height = 20;
  h.levels = 1;
  hfa::ArchiveWriter w;
  std::string error;
  ASSERT_TRUE(w.open((dir / "out.hfa").string(), h, 4, error)) << error;
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(held));
  EXPECT_TRUE(fs::exists(fresh));
  EXPECT_TRUE(fs::exists(other));
  w.abort();
  ::close(heldFd);
  fs::remove_all(dir);
}

// "auto" names the header's mix of hfpac and hfan tiles; no index entry may claim it, nor a
// codec beyond hfan, nor (under auto) raw or hfpac+rbuc; any other header takes its own codec
// only (checksums made valid, so the codec check itself answers).
TEST(Archive, AutoIsAHeaderCodecOnly) {
  const hf_test::TempDir scratch("hf_archive_test");  // removed with its files, however the test ends
  const fs::path& dir = scratch.path;
  hfa::ArchiveWriter w;
  hfa::Header h;
  h.tileLog = kLog;
  h.codec = hfa::Codec::Auto;
  h.width = h.height = kP;
  std::string error;
  ASSERT_TRUE(w.open((dir / "w.hfa").string(), h, 1, error)) << error;
  hfa::TileEntry e;
  e.codec = hfa::Codec::Auto;
  e.lodError.assign(kLog + 1, 0.f);
  const uint8_t payload[8] = {};
  EXPECT_FALSE(w.addTile(e, payload, sizeof payload, error));
  EXPECT_NE(error.find("tile codec auto"), std::string::npos) << error;
  e.codec = hfa::Codec::Raw;  // auto holds hfpac and hfan tiles only
  EXPECT_FALSE(w.addTile(e, payload, sizeof payload, error));
  EXPECT_NE(error.find("tile codec raw in an archive of codec auto"), std::string::npos) << error;
  w.abort();
  h.codec = hfa::Codec::Hfpac;  // and any other header its own codec only
  ASSERT_TRUE(w.open((dir / "w.hfa").string(), h, 1, error)) << error;
  e.codec = hfa::Codec::Hfan;
  EXPECT_FALSE(w.addTile(e, payload, sizeof payload, error));
  EXPECT_NE(error.find("tile codec hfan in an archive of codec hfpac"), std::string::npos) << error;
  w.abort();

  const std::vector<uint8_t> good = readFile(writeArchive(dir, "auto.hfa", hfa::Codec::Auto));
  auto get32 = [](const uint8_t* p) { return uint32_t(p[0] | p[1] << 8 | p[2] << 16 | uint32_t(p[3]) << 24); };
  auto put32 = [](uint8_t* p, uint32_t v) {
    for (int i = 0; i < 4; ++i) p[i] = uint8_t(v >> (8 * i));
  };
  for (uint8_t codec : {uint8_t(0), uint8_t(2), uint8_t(4), uint8_t(5), uint8_t(255)}) {
    std::vector<uint8_t> bad = good;
    const uint64_t index = get32(&bad[160]) | uint64_t(get32(&bad[164])) << 32;  // kOffIndexOffset
    bad[size_t(index) + 1] = codec;                                              // entry 0's codec
    const uint64_t indexEnd = index + uint64_t(get32(&bad[156])) * get32(&bad[36]);
    put32(&bad[172], hfa::crc32(&bad[256], size_t(indexEnd - 256)));  // index CRC (from the strings)
    put32(&bad[252], hfa::crc32(bad.data(), 252));                    // header CRC
    const std::string path = (dir / "bad.hfa").string();
    writeFile(path, bad.data(), bad.size());
    hfa::ArchiveReader r;
    EXPECT_FALSE(r.open(path, error));
    const std::string expected = codec == 0   ? "codec raw in an archive of codec auto"
                                 : codec == 2 ? "codec hfpac+rbuc in an archive of codec auto"
                                              : "unknown codec " + std::to_string(codec);
    EXPECT_NE(error.find(expected), std::string::npos) << error;
  }
  fs::remove_all(dir);
}

TEST(Archive, NotAnArchive) {
  const hf_test::TempDir scratch("hf_archive_test");  // removed with its files, however the test ends
  const fs::path& dir = scratch.path;
  const std::string path = (dir / "text.hfa").string();
  const std::string text(300, 'x');
  writeFile(path, reinterpret_cast<const uint8_t*>(text.data()), text.size());
  hfa::ArchiveReader r;
  std::string error;
  EXPECT_FALSE(r.open(path, error));
  EXPECT_NE(error.find("bad magic"), std::string::npos) << error;
  EXPECT_FALSE(r.open((dir / "missing.hfa").string(), error));
  fs::remove_all(dir);
}

}  // namespace

// ---- ReadLimiter (read_limit.h) and the benchmark I/O hooks, on a simulated clock ----

namespace {
struct FakeClock {
  double t = 0;
  std::vector<double> sleeps;  // every sleepUntil target
  hfa::ReadLimiter::Clock clock() {
    return {[this] { return t; }, [this](double until) {
              sleeps.push_back(until);
              t = std::max(t, until);
            }};
  }
};
}  // namespace

// The HTTP mirror's block bookkeeping keeps entries only for blocks that are cached, in flight or
// pinned: a terabyte archive costs memory for what is cached, not for its size.
TEST(BlockTable, OnlyCachedInFlightOrPinnedBlocksHaveEntries) {
  using hfa::detail::BlockTable;
  BlockTable t;
  constexpr size_t kFar = size_t(1) << 40;  // a block of a 16 PiB archive: no dense array behind it
  EXPECT_EQ(t.state(kFar), BlockTable::kAbsent);
  EXPECT_EQ(t.pins(kFar), 0u);
  t.setState(kFar, BlockTable::kAbsent);  // absent stays entry-free
  EXPECT_EQ(t.entries(), 0u);
  t.setState(7, BlockTable::kInFlight);
  t.arrived(kFar, 41);
  EXPECT_EQ(t.entries(), 2u);
  EXPECT_EQ(t.state(7), BlockTable::kInFlight);
  EXPECT_EQ(t.state(kFar), BlockTable::kPresent);
  EXPECT_EQ(t.used(kFar), 41u);
  t.pin(kFar, 42);
  t.pin(kFar, 43);
  EXPECT_EQ(t.pins(kFar), 2u);
  EXPECT_EQ(t.used(kFar), 43u);
  t.setState(kFar, BlockTable::kAbsent);  // invalidated while pinned: the pins stay
  EXPECT_EQ(t.entries(), 2u);
  EXPECT_EQ(t.pins(kFar), 2u);
  t.unpin(kFar);
  t.unpin(kFar);
  t.unpin(kFar);  // one more than pinned: no underflow
  EXPECT_EQ(t.pins(kFar), 0u);
  EXPECT_EQ(t.entries(), 1u);  // absent and unpinned: gone
  t.setState(7, BlockTable::kAbsent);
  EXPECT_EQ(t.entries(), 0u);
  for (size_t b = 0; b < 1000; ++b) t.setState(b * 1000003, b % 2 ? BlockTable::kPresent : BlockTable::kInFlight);
  size_t present = 0, seen = 0;
  t.forEach([&](size_t b, BlockTable::State s, uint32_t pins, uint32_t) {
    ++seen;
    present += s == BlockTable::kPresent;
    EXPECT_EQ(b % 1000003, 0u);
    EXPECT_EQ(pins, 0u);
  });
  EXPECT_EQ(seen, 1000u);
  EXPECT_EQ(present, 500u);
  t.clear();
  EXPECT_EQ(t.entries(), 0u);
}

TEST(ReadLimiter, OneChannelAtTheGivenRate) {
  FakeClock c;
  hfa::ReadLimiter l(1000.0, c.clock());  // 1000 bytes/s
  l.acquire(500);                          // 0 .. 0.5
  l.acquire(250);                          // 0.5 .. 0.75
  ASSERT_EQ(c.sleeps.size(), 2u);
  EXPECT_DOUBLE_EQ(c.sleeps[0], 0.5);
  EXPECT_DOUBLE_EQ(c.sleeps[1], 0.75);
  c.t = 10;  // idle: no credit saved up for later
  l.acquire(100);
  EXPECT_DOUBLE_EQ(c.sleeps[2], 10.1);
  EXPECT_EQ(l.bytes(), 850u);
  EXPECT_NEAR(l.waitedSeconds(), 0.85, 1e-12);
  EXPECT_EQ(l.bytesPerSecond(), 1000.0);
}

TEST(ReadLimiter, ConcurrentReadersQueueBehindEachOther) {
  // Two transfers asked for at the same moment (before either slept): the second ends after
  // the first, so together they never exceed the rate.
  double now = 0;
  std::vector<double> ends;
  hfa::ReadLimiter l(100.0, {[&] { return now; }, [&](double until) { ends.push_back(until); }});
  l.acquire(50);
  l.acquire(50);
  ASSERT_EQ(ends.size(), 2u);
  EXPECT_DOUBLE_EQ(ends[0], 0.5);
  EXPECT_DOUBLE_EQ(ends[1], 1.0);
  EXPECT_NEAR(l.waitedSeconds(), 1.5, 1e-12);  // 0.5 + 1.0: the second queued behind the first
}

TEST(ReadLimiter, ArchiveReadsPassThroughItAndCacheCanBeDropped) {
  const hf_test::TempDir scratch("hf_archive_test");  // removed with its files, however the test ends
  const fs::path& dir = scratch.path;
  std::string error;
  hfa::ArchiveReader r;
  ASSERT_TRUE(r.open(writeArchive(dir, "lim.hfa", hfa::Codec::Hfpac, true), error)) << error;
  FakeClock c;
  auto limiter = std::make_shared<hfa::ReadLimiter>(1e6, c.clock());
  r.setReadLimiter(limiter);
  uint64_t expected = 0;
  const uint8_t* data = nullptr;
  size_t size = 0;
  for (size_t t = 0; t < r.tiles().size(); ++t) {
    ASSERT_TRUE(r.payload(t, data, size, error)) << error;
    expected += size;
  }
  ASSERT_TRUE(r.hasImagery());
  for (size_t t = 0; t < r.imageryTiles().size(); ++t) {
    ASSERT_TRUE(r.imageryPayload(t, data, size, error)) << error;
    expected += size;
  }
  EXPECT_EQ(limiter->bytes(), expected);
  EXPECT_NEAR(c.t, double(expected) / 1e6, 1e-9);  // the simulated time the reads took
  const double before = r.residentFraction();
  EXPECT_GE(before, 0.0);
  EXPECT_LE(before, 1.0);
  ASSERT_TRUE(r.dropPageCache(error)) << error;
  const double after = r.residentFraction();  // tmpfs keeps its pages: only bounds checked
  EXPECT_GE(after, 0.0);
  EXPECT_LE(after, 1.0);
  // Reads after the drop still see the same bytes (CRCs checked).
  for (size_t t = 0; t < r.tiles().size(); ++t) ASSERT_TRUE(r.payload(t, data, size, error)) << error;
  r.setReadLimiter(nullptr);
  hfa::ArchiveReader closed;
  EXPECT_FALSE(closed.dropPageCache(error));
  EXPECT_EQ(closed.residentFraction(), -1.0);
}

// Progressive loading: decodeTileLossy reads a tile's header and layers 1 + 2 only (the limiter
// charged that much), decodes them as decodeTile at L12 does, and the exact decode after it is
// charged only the rest; tiles without layers (raw, 2DRBUC) come whole and exact. A corrupt byte
// in layer 3 is not seen by the lossy decode (no checksum covers its part) but fails the exact one.
TEST(Archive, LossyDecodeReadsLayersOneAndTwoOnly) {
  const hf_test::TempDir scratch("hf_archive_test");  // removed with its files, however the test ends
  const fs::path& dir = scratch.path;
  std::string error;
  for (hfa::Codec codec : {hfa::Codec::Hfpac, hfa::Codec::HfpacRbuc, hfa::Codec::Raw}) {
    const std::string path = writeArchive(dir, std::string("lossy_") + hfa::codecName(codec) + ".hfa", codec);
    hfa::ArchiveReader r;
    ASSERT_TRUE(r.open(path, error)) << error;
    FakeClock c;
    auto limiter = std::make_shared<hfa::ReadLimiter>(1e6, c.clock());
    r.setReadLimiter(limiter);
    std::vector<uint16_t> lossy(size_t(kP) * kP), l12(lossy.size()), exact(lossy.size());
    size_t layered = 0;
    uint64_t payloads = 0;
    for (size_t t = 0; t < r.tiles().size(); ++t) {
      const uint32_t size = r.tiles()[t].size;
      payloads += size;
      bool isExact = false;
      uint32_t read = 0;
      const uint64_t before = limiter->bytes();
      ASSERT_TRUE(r.decodeTileLossy(t, lossy.data(), isExact, read, error)) << error;
      EXPECT_EQ(limiter->bytes() - before, read) << r.tileName(t);
      ASSERT_TRUE(r.decodeTile(t, exact.data(), error, hfpac::Layers::All, read)) << error;
      EXPECT_EQ(limiter->bytes() - before, size) << "lossy + rest = the payload once, " << r.tileName(t);
      if (isExact) {
        EXPECT_EQ(read, size);
        EXPECT_EQ(lossy, exact);
        continue;
      }
      ++layered;
      EXPECT_EQ(codec, hfa::Codec::Hfpac);
      const uint8_t* data;
      size_t n;
      hfpac::PatchInfo info;
      r.setReadLimiter(nullptr);
      ASSERT_TRUE(r.payload(t, data, n, error)) << error;
      ASSERT_EQ(hfpac::readInfo(data, n, info), hfpac::Status::Ok);
      EXPECT_EQ(read, info.layer1Bytes + info.layer2Bytes);
      EXPECT_LT(read, size);
      ASSERT_TRUE(r.decodeTile(t, l12.data(), error, hfpac::Layers::L12)) << error;
      EXPECT_EQ(lossy, l12) << r.tileName(t);
      EXPECT_EQ(exact, tileSamples(r.tiles()[t].level, r.tiles()[t].x, r.tiles()[t].y));
      r.setReadLimiter(limiter);
    }
    if (codec == hfa::Codec::Hfpac) EXPECT_GT(layered, 0u) << "no tile with a layer 3 to leave out";
    else EXPECT_EQ(layered, 0u);
    (void)payloads;
  }
  // Layer 3 corrupted: the lossy decode succeeds, the exact one names the checksum.
  const std::string path = writeArchive(dir, "lossy_bad.hfa", hfa::Codec::Hfpac);
  hfa::ArchiveReader r;
  ASSERT_TRUE(r.open(path, error)) << error;
  size_t victim = r.tiles().size();
  uint64_t at = 0;
  for (size_t t = 0; t < r.tiles().size() && victim == r.tiles().size(); ++t) {
    const uint8_t* data;
    size_t n;
    hfpac::PatchInfo info;
    ASSERT_TRUE(r.payload(t, data, n, error)) << error;
    if (hfpac::readInfo(data, n, info) == hfpac::Status::Ok && !info.flat && !info.stored && info.layer3Bytes > 0) {
      victim = t;
      at = r.tiles()[t].offset + info.layer1Bytes + info.layer2Bytes;
    }
  }
  ASSERT_LT(victim, r.tiles().size());
  r.close();
  std::vector<uint8_t> bytes = readFile(path);
  bytes[size_t(at)] ^= 0x5a;
  writeFile(path, bytes.data(), bytes.size());
  ASSERT_TRUE(r.open(path, error)) << error;
  std::vector<uint16_t> buf(size_t(kP) * kP);
  bool isExact = true;
  uint32_t read = 0;
  EXPECT_TRUE(r.decodeTileLossy(victim, buf.data(), isExact, read, error)) << error;
  EXPECT_FALSE(isExact);
  EXPECT_FALSE(r.decodeTile(victim, buf.data(), error, hfpac::Layers::All, read));
  EXPECT_NE(error.find("checksum"), std::string::npos) << error;
  bool unused = false;
  EXPECT_FALSE(r.decodeTileLossy(r.tiles().size(), buf.data(), unused, read, error));
  fs::remove_all(dir);
}

// The archive changing under an open reader (issue 16): truncated to half while mapped, the
// tiles past the cut fail with "changed on disk" (no SIGBUS), those before still decode; rewritten
// in place with other bytes, the payloads fail their checksums. The copy functions and the
// decoders (what the viewer uses) never fault.
TEST(Archive, ChangedOnDiskWhileOpenIsAnErrorNotACrash) {
  const hf_test::TempDir scratch("hf_archive_test");  // removed with its files, however the test ends
  const fs::path& dir = scratch.path;
  std::string error;
  const std::string path = writeArchive(dir, "changing.hfa", hfa::Codec::Hfpac, true);
  hfa::ArchiveReader r;
  ASSERT_TRUE(r.open(path, error)) << error;
  std::vector<uint16_t> buf(size_t(kP) * kP);
  for (size_t t = 0; t < r.tiles().size(); ++t) ASSERT_TRUE(r.decodeTile(t, buf.data(), error)) << error;
  const uint64_t cut = r.fileSize() / 2;
  ASSERT_EQ(::truncate(path.c_str(), off_t(cut)), 0);
  size_t failed = 0, decoded = 0;
  std::vector<uint8_t> bytes;
  for (size_t t = 0; t < r.tiles().size(); ++t) {
    const hfa::TileEntry& e = r.tiles()[t];
    const bool beyond = e.offset + e.size > ((cut + 4095) / 4096) * 4096;  // pages past the new end
    const bool ok = r.decodeTile(t, buf.data(), error);
    bool exact = false;
    uint32_t read = 0;
    const bool lossyOk = r.decodeTileLossy(t, buf.data(), exact, read, error);
    const bool copyOk = r.copyPayload(t, bytes, error);
    if (beyond) {
      EXPECT_FALSE(ok) << r.tileName(t);
      EXPECT_FALSE(copyOk) << r.tileName(t);
      EXPECT_NE(error.find("changed on disk"), std::string::npos) << error;
      ++failed;
    } else if (e.offset + e.size <= cut) {
      EXPECT_TRUE(ok && lossyOk && copyOk) << r.tileName(t) << ": " << error;
      ++decoded;
    }
  }
  for (size_t t = 0; t < r.imageryTiles().size(); ++t) (void)r.copyImageryPayload(t, bytes, error);
  EXPECT_GT(failed, 0u);
  EXPECT_GT(decoded, 0u);
  // Rewritten in place (the same length, other bytes): checksum mismatches, no crash.
  r.close();
  const std::string again = writeArchive(dir, "rewritten.hfa", hfa::Codec::Hfpac, true);
  ASSERT_TRUE(r.open(again, error)) << error;
  std::vector<uint8_t> file = readFile(again);
  uint64_t firstPayload = file.size();
  for (const hfa::TileEntry& e : r.tiles()) firstPayload = std::min(firstPayload, e.offset);
  for (size_t i = size_t(firstPayload); i < file.size(); ++i) file[i] = uint8_t(file[i] * 31 + 7);
  {
    std::FILE* f = std::fopen(again.c_str(), "r+b");  // in place: the same inode, no rename
    ASSERT_TRUE(f);
    ASSERT_EQ(std::fwrite(file.data(), 1, file.size(), f), file.size());
    std::fclose(f);
  }
  size_t mismatches = 0;
  for (size_t t = 0; t < r.tiles().size(); ++t)
    if (!r.decodeTile(t, buf.data(), error)) mismatches += error.find("checksum") != std::string::npos;
  EXPECT_EQ(mismatches, r.tiles().size());
  fs::remove_all(dir);
}

// Fault injection (issue 16): the spec's syntax; injected I/O errors fail the read, flipped and
// short reads fail the CRC check, delays do not change the data; over many mixed reads every
// injected error or corruption is exactly one failed read, and the lossy reads (no CRC) only
// ever get I/O errors and delays.
TEST(FaultInjection, EveryInjectedFaultIsAFailedReadAndDelaysChangeNothing) {
  hfa::FaultSpec spec;
  std::string error;
  EXPECT_TRUE(hfa::parseFaultSpec("eio=0.01,flip=0.02,short=0.005,delay=0.1:3ms,seed=9", spec, error)) << error;
  EXPECT_EQ(spec.seed, 9u);
  EXPECT_DOUBLE_EQ(spec.delayMs, 3.0);
  EXPECT_DOUBLE_EQ(spec.flip, 0.02);
  for (const char* bad : {"eio", "eio=2", "flip=-0.1", "bogus=0.1", "delay=0.1:5s", "seed=x", "eio=0.6,flip=0.6", "eio=0.1x"})
    EXPECT_FALSE(hfa::parseFaultSpec(bad, spec, error)) << bad;
  const hf_test::TempDir scratch("hf_archive_test");  // removed with its files, however the test ends
  const fs::path& dir = scratch.path;
  hfa::ArchiveReader r;
  ASSERT_TRUE(r.open(writeArchive(dir, "faults.hfa", hfa::Codec::Hfpac), error)) << error;
  std::vector<uint16_t> buf(size_t(kP) * kP);
  auto failuresWith = [&](const std::string& text, int rounds, std::string* lastError = nullptr) {
    hfa::FaultSpec parsed;
    EXPECT_TRUE(hfa::parseFaultSpec(text, parsed, error)) << error;
    r.setFaultInjector(std::make_shared<hfa::FaultInjector>(parsed));
    size_t failed = 0;
    for (int k = 0; k < rounds; ++k)
      for (size_t t = 0; t < r.tiles().size(); ++t)
        if (!r.decodeTile(t, buf.data(), error)) {
          ++failed;
          if (lastError) *lastError = error;
        } else {
          EXPECT_EQ(buf, tileSamples(r.tiles()[t].level, r.tiles()[t].x, r.tiles()[t].y));
        }
    return failed;
  };
  std::string last;
  EXPECT_EQ(failuresWith("eio=1", 1, &last), r.tiles().size());
  EXPECT_NE(last.find("injected I/O error"), std::string::npos) << last;
  EXPECT_EQ(failuresWith("flip=1", 1, &last), r.tiles().size());
  EXPECT_NE(last.find("checksum"), std::string::npos) << last;
  EXPECT_EQ(failuresWith("short=1", 1), r.tiles().size());
  EXPECT_EQ(failuresWith("delay=1:0ms", 1), 0u);
  const size_t mixed = failuresWith("eio=0.1,flip=0.1,short=0.1,delay=0.1:0ms,seed=3", 200);
  const hfa::FaultInjector& f = *r.faultInjector();
  EXPECT_EQ(mixed, f.eio() + f.corruptions());
  EXPECT_GT(f.eio(), 0u);
  EXPECT_GT(f.flips(), 0u);
  EXPECT_GT(f.shorts(), 0u);
  EXPECT_GT(f.delays(), 0u);
  // Lossy reads: no corruption is drawn for the unchecked part.
  hfa::FaultSpec all;
  ASSERT_TRUE(hfa::parseFaultSpec("flip=0.5,short=0.5", all, error));
  r.setFaultInjector(std::make_shared<hfa::FaultInjector>(all));
  std::vector<uint8_t> bytes;
  uint32_t prefix = 0;
  for (size_t t = 0; t < r.tiles().size(); ++t) {
    if (!r.copyLossyPayload(t, bytes, prefix, error)) continue;  // a whole payload, corrupted
    if (prefix < bytes.size()) {
      std::vector<uint8_t> clean;
      r.setFaultInjector(nullptr);
      uint32_t p2 = 0;
      ASSERT_TRUE(r.copyLossyPayload(t, clean, p2, error)) << error;
      EXPECT_EQ(bytes, clean) << "a lossy read was corrupted";
      r.setFaultInjector(std::make_shared<hfa::FaultInjector>(all));
    }
  }
  r.setFaultInjector(nullptr);
  fs::remove_all(dir);
}

// Read-ahead (the loaders' willNeed): every tile and indices past the end, twice, before and
// after a page drop and on a closed reader; the payloads read afterwards are unchanged and
// the pages it asked for are in memory.
TEST(Archive, WillNeedReadsAheadWithoutChangingAnything) {
  const hf_test::TempDir scratch("hf_archive_test");  // removed with its files, however the test ends
  const fs::path& dir = scratch.path;
  std::string error;
  hfa::ArchiveReader r;
  ASSERT_TRUE(r.open(writeArchive(dir, "ahead.hfa", hfa::Codec::Hfpac), error)) << error;
  std::vector<std::vector<uint8_t>> before;
  const uint8_t* data = nullptr;
  size_t size = 0;
  for (size_t t = 0; t < r.tiles().size(); ++t) {
    ASSERT_TRUE(r.payload(t, data, size, error)) << error;
    before.emplace_back(data, data + size);
  }
  std::vector<size_t> all;
  for (size_t t = 0; t < r.tiles().size() + 3; ++t) all.push_back(t);  // 3 past the end
  for (int round = 0; round < 2; ++round) {
    r.willNeed(all.data(), all.size());
    r.willNeed(all.data(), all.size());  // already advised: skipped
    for (size_t t = 0; t < r.tiles().size(); ++t) {
      ASSERT_TRUE(r.payload(t, data, size, error)) << error;
      EXPECT_EQ(std::vector<uint8_t>(data, data + size), before[t]) << r.tileName(t);
    }
    EXPECT_GT(r.residentFraction(), 0.0);
    ASSERT_TRUE(r.dropPageCache(error)) << error;  // advised again in the next round
  }
  hfa::ArchiveReader closed;
  closed.willNeed(all.data(), all.size());  // nothing to do, no crash
}
