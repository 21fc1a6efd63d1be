// hfpack_imagery_test.cpp - `hfpack --imagery` (tools/hfpack/imagery_tiles.h) on real data:
// - the Puget Sound pair (neither raster georeferenced): stretched over the DEM with a warning,
//   one imagery tile per height tile, every JPEG tile decodes with plain libjpeg-turbo (TurboJPEG,
//   tables spliced in), and GDAL's warp agrees with a second implementation of the archive's
//   texel rule (tests/imagery_archive.h), verify --imagery passes;
// - the world imagery over N57E011 (a real warp, EPSG:4326 5400 x 2700 onto a 1201 x 1201 SRTM
//   tile): blue over the sea samples, not over land;
// - imagery finer than the DEM gets finer levels, capped by --imagery-max-texels-per-sample;
// - bc1 tiles (the BC1 mip chain, cluster fit by default): pack, verify, info, and transcode
//   jpeg -> bc1 -> jpeg / raw (--imagery-codec), heights copied as they are;
// - raw tiles; bad imagery inputs (not Byte, no overlap, palette without colours, georeferenced
//   imagery on an unreferenced DEM, missing file): one "Error:" line, exit 1, no file.
#include <gtest/gtest.h>

#include <gdal.h>
#include <gdal_utils.h>
#include <turbojpeg.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#include <stb/stb_image.h>

#include "archive/archive.h"
#include "hfpack.h"
#include "imagery/imagery.h"
#include "imagery_archive.h"
#include "gdal_test_util.h"
#include "test_files.h"

namespace {

using hf_test::TempDir;
using hf_test::translate;
namespace fs = std::filesystem;

const std::string kDem = HF_SHARED_DEM_DIR;
const std::string kImagery = std::string(HF_SHARED_DEM_DIR) + "/../imagery";

bool have(const std::string& path) { return fs::exists(path); }

hfpack::PackOptions packOptions(const std::vector<std::string>& inputs, const std::string& out,
                                const std::vector<std::string>& imagery) {
  hfpack::PackOptions o;
  o.inputs = inputs;
  o.output = out;
  o.out = nullptr;
  o.threads = 2;
  o.imagery.inputs = imagery;
  return o;
}


// Decodes imagery tile i of r (archive decoder) into rgba.
bool decodeImagery(const hfa::ArchiveReader& r, size_t i, std::vector<uint8_t>& rgba, std::string& error) {
  const int T = r.imagery().tileSize;
  rgba.assign(size_t(T) * size_t(T) * 4, 0);
  const uint8_t* data;
  size_t size;
  if (!r.imageryPayload(i, data, size, error)) return false;
  if (r.imageryTiles()[i].codec == hfa::ImageryCodec::Raw) {
    std::copy(data, data + rgba.size(), rgba.begin());
    return true;
  }
  if (r.imageryTiles()[i].codec == hfa::ImageryCodec::Bc1) {
    if (size != hfa::imageryBc1ChainBytes(T)) {
      error = "bc1 size";
      return false;
    }
    himg::decodeBc1(data, T, T, rgba.data());
    return true;
  }
  himg::JpegTileDecoder d;
  return d.setTables(r.imagery().jpegTables.data(), r.imagery().jpegTables.size(), error) &&
         d.decode(data, size, T, rgba.data(), error);
}

int run(const std::string& args, std::string& output) {
  const std::string cmd = std::string("GDAL_PAM_ENABLED=NO '") + HFPACK_BINARY + "' " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  output.clear();
  while (size_t n = fread(buf, 1, sizeof buf, p)) output.append(buf, n);
  const int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(HfpackImagery, PugetSoundPairIsStretchedOverTheDem) {
  const std::string dem = kDem + "/ps_height_1k.png", tex = kImagery + "/ps_texture_1k.png";
  if (!have(dem) || !have(tex)) GTEST_SKIP() << "no Puget Sound pair";
  TempDir dir;
  std::string error;
  hfpack::PackOptions o = packOptions({dem}, dir / "ps.hfa", {tex});
  o.spacingX = 160;
  o.verticalScale = 0.1;
  hfpack::PackResult pr;
  ASSERT_TRUE(hfpack::pack(o, pr, error)) << error;
  EXPECT_TRUE(pr.imageryPlan.unreferenced);
  ASSERT_EQ(pr.imageryPlan.warnings.size(), 1u);
  EXPECT_NE(pr.imageryPlan.warnings[0].find("stretched"), std::string::npos);
  EXPECT_DOUBLE_EQ(pr.imageryPlan.texelsPerSample, 1.0);

  hfa::ArchiveReader r;
  ASSERT_TRUE(r.open(o.output, error)) << error;
  ASSERT_TRUE(r.hasImagery());
  const hfa::ImageryHeader& im = r.imagery();
  EXPECT_EQ(im.finerLevels, 0);  // 1 texel per sample: level 0 already holds 1.94
  EXPECT_EQ(im.levels, r.header().levels);
  EXPECT_EQ(im.quality, 90);
  EXPECT_TRUE(im.flags & hfa::kImageryUnreferenced);
  ASSERT_EQ(r.imageryTiles().size(), r.tiles().size());  // one imagery tile per height tile
  for (const hfa::TileEntry& e : r.tiles()) EXPECT_GE(r.findImagery(e.level, e.x, e.y), 0);

  // Every tile: plain TurboJPEG decodes it (tables spliced in); GDAL's warp matches the
  // archive's texel rule as tests/imagery_archive.h implements it (bilinear).
  hftest::RgbaImage img;
  int n = 0;
  unsigned char* px = stbi_load(tex.c_str(), &img.w, &img.h, &n, 4);
  ASSERT_NE(px, nullptr);
  img.rgba.assign(px, px + size_t(img.w) * size_t(img.h) * 4);
  stbi_image_free(px);
  tjhandle tj = tjInitDecompress();
  const int T = im.tileSize;
  std::vector<uint8_t> full, ours, theirs(size_t(T) * size_t(T) * 3), ref;
  double worst = 1e9;
  for (size_t i = 0; i < r.imageryTiles().size(); ++i) {
    const hfa::ImageryEntry& e = r.imageryTiles()[i];
    const uint8_t* data;
    size_t size;
    ASSERT_TRUE(r.imageryPayload(i, data, size, error)) << error;
    ASSERT_TRUE(himg::completeJpegStream(im.jpegTables.data(), im.jpegTables.size(), data, size, full, error)) << error;
    ASSERT_EQ(tjDecompress2(tj, full.data(), static_cast<unsigned long>(full.size()), theirs.data(), T, 0, T, TJPF_RGB, 0), 0)
        << r.imageryTileName(i) << ": " << tjGetErrorStr2(tj);
    ASSERT_TRUE(decodeImagery(r, i, ours, error)) << error;
    hftest::imageryTile(r.header(), im, e.level, e.x, e.y, img, ref);
    // Compare inside the DEM's extent, away from its edge (the reference clamps, GDAL does not
    // reach past the last pixel: both are right there, differently).
    double sse = 0, cnt = 0;
    for (int y = 0; y < T; ++y)
      for (int x = 0; x < T; ++x) {
        const size_t k = (size_t(y) * size_t(T) + size_t(x)) * 4;
        if (ref[k + 3] == 0 || ours[k + 3] == 0) continue;
        for (int c = 0; c < 3; ++c) {
          const double d = double(ours[k + size_t(c)]) - double(ref[k + size_t(c)]);
          sse += d * d;
          EXPECT_EQ(int(ours[k + size_t(c)]), int(theirs[(size_t(y) * size_t(T) + size_t(x)) * 3 + size_t(c)]))
              << "TurboJPEG and the tile decoder differ";
          if (::testing::Test::HasFailure()) break;
        }
        cnt += 3;
      }
    ASSERT_FALSE(::testing::Test::HasFailure()) << r.imageryTileName(i);
    // Level 0 magnifies (1.94 texels per texture pixel): both are plain bilinear there. Coarser
    // levels minify, where GDAL widens the kernel (no aliasing) and the reference does not.
    if (cnt > 0 && e.level == 0) worst = std::min(worst, sse > 0 ? 10 * std::log10(255.0 * 255.0 * cnt / sse) : 99.0);
  }
  tjDestroy(tj);
  std::printf("GDAL warp vs the reference texel rule, level 0: worst tile %.2f dB (JPEG quality 90 included)\n", worst);
  EXPECT_GT(worst, 30.0);

  // verify --imagery: every tile against the warped texture.
  hfpack::VerifyOptions vo;
  vo.archive = o.output;
  vo.imagery.inputs = {tex};
  vo.out = nullptr;
  hfpack::VerifyResult vr;
  ASSERT_TRUE(hfpack::verify(vo, vr, error)) << error;
  EXPECT_TRUE(hfpack::ok(vr));
  EXPECT_EQ(vr.imageryCompared, r.imageryTiles().size());
  EXPECT_GT(vr.imageryPsnr, 30.0);
}

TEST(HfpackImagery, WorldImageryIsBlueOverTheSea) {
  const std::string dem = kDem + "/N57E011.hgt", world = kImagery + "/world_topo.vrt";
  if (!have(dem) || !have(world)) GTEST_SKIP() << "no N57E011 / world imagery";
  TempDir dir;
  std::string error;
  hfpack::PackOptions o = packOptions({dem}, dir / "n57.hfa", {world});
  hfpack::PackResult pr;
  ASSERT_TRUE(hfpack::pack(o, pr, error)) << error;
  EXPECT_FALSE(pr.imageryPlan.unreferenced);
  EXPECT_TRUE(pr.imageryPlan.warnings.empty());
  hfa::ArchiveReader r;
  ASSERT_TRUE(r.open(o.output, error)) << error;
  const hfa::Header& h = r.header();
  const hfa::ImageryHeader& im = r.imagery();
  EXPECT_EQ(im.finerLevels, 0);
  EXPECT_FALSE(im.flags & hfa::kImageryUnreferenced);
  // Level 0: per height tile, the colour of the texel nearest each sample, split by the sample's
  // height (SRTM sea is exactly 0; land well above it).
  const int p1 = 1 << h.tileLog, T = im.tileSize, B = im.border, C = im.content();
  std::vector<uint16_t> heights(size_t(p1 + 1) * size_t(p1 + 1));
  std::vector<uint8_t> rgba;
  double sea[3] = {0, 0, 0}, land[3] = {0, 0, 0};
  size_t nSea = 0, nLand = 0, seaBlue = 0, landBlue = 0;
  size_t first, count;
  r.levelRange(0, first, count);
  for (size_t t = first; t < first + count; ++t) {
    const hfa::TileEntry& e = r.tiles()[t];
    ASSERT_TRUE(r.decodeTile(t, heights.data(), error)) << error;
    const long ii = r.findImagery(0, e.x, e.y);
    ASSERT_GE(ii, 0);
    ASSERT_TRUE(decodeImagery(r, size_t(ii), rgba, error)) << error;
    for (int j = 0; j <= p1; j += 4)
      for (int i = 0; i <= p1; i += 4) {
        if (e.x * uint32_t(p1) + uint32_t(i) >= h.width || e.y * uint32_t(p1) + uint32_t(j) >= h.height) continue;
        const int16_t z = int16_t(heights[size_t(j) * size_t(p1 + 1) + size_t(i)]);
        if (z != 0 && z < 20) continue;  // the shore: neither
        const int u = std::clamp(int(std::lround(B + (i + 0.0) * C / p1 - 0.5)), 0, T - 1);
        const int v = std::clamp(int(std::lround(B + (j + 0.0) * C / p1 - 0.5)), 0, T - 1);
        const uint8_t* c = &rgba[(size_t(v) * size_t(T) + size_t(u)) * 4];
        ASSERT_EQ(c[3], 255);
        // Water in Blue Marble is dark navy to near black (the Kattegat in December: about
        // 2 6 5); vegetation and soil are red over blue. "Blue" = blue at least red.
        const bool blue = c[2] >= c[0];
        double* acc = z == 0 ? sea : land;
        for (int k = 0; k < 3; ++k) acc[k] += c[k];
        if (z == 0) ++nSea, seaBlue += blue;
        else ++nLand, landBlue += blue;
      }
  }
  ASSERT_GT(nSea, 500u);
  ASSERT_GT(nLand, 500u);
  std::printf("sea mean RGB %.0f %.0f %.0f (%zu samples, %.1f %% blue); land %.0f %.0f %.0f (%zu, %.1f %% blue)\n",
              sea[0] / nSea, sea[1] / nSea, sea[2] / nSea, nSea, 100.0 * seaBlue / nSea, land[0] / nLand,
              land[1] / nLand, land[2] / nLand, nLand, 100.0 * landBlue / nLand);
  // 7.4 km pixels: the coast blurs into the sea samples near it, hence 60 %, not all.
  EXPECT_GT(double(seaBlue) / nSea, 0.6);
  EXPECT_LT(double(landBlue) / nLand, 0.1);
  EXPECT_GE(sea[2], sea[0]);
  EXPECT_GT(land[0], 1.3 * land[2]);
  EXPECT_LT(sea[0] + sea[1] + sea[2], 0.5 * (land[0] + land[1] + land[2]) * double(nSea) / double(nLand));
}

TEST(HfpackImagery, FinerImageryGetsFinerLevelsAndRawTiles) {
  const std::string dem = kDem + "/ps_height_1k.png", tex = kImagery + "/ps_texture_1k.png";
  if (!have(dem) || !have(tex)) GTEST_SKIP() << "no Puget Sound pair";
  TempDir dir;
  std::string error;
  // The DEM at a quarter of its resolution: 4 texture pixels per sample.
  translate(dem, dir / "ps257.tif", {"-outsize", "257", "257", "-r", "average"});
  hfpack::PackOptions o = packOptions({dir / "ps257.tif"}, dir / "f.hfa", {tex});
  hfpack::PackResult pr;
  ASSERT_TRUE(hfpack::pack(o, pr, error)) << error;
  EXPECT_DOUBLE_EQ(pr.imageryPlan.texelsPerSample, 4.0);
  hfa::ArchiveReader r;
  ASSERT_TRUE(r.open(o.output, error)) << error;
  EXPECT_EQ(r.imagery().finerLevels, 1);  // 1.94 -> 3.88 texels per sample
  EXPECT_EQ(r.imagery().levels, r.header().levels + 1);
  size_t l0 = 0;
  for (const hfa::TileEntry& e : r.tiles()) l0 += e.level == 0;
  EXPECT_EQ(r.imageryTiles().size(), r.tiles().size() + 4 * l0);
  // Capped: at most 2 texels per sample -> no finer level.
  o.output = dir / "capped.hfa";
  o.imagery.maxTexelsPerSample = 2;
  ASSERT_TRUE(hfpack::pack(o, pr, error)) << error;
  ASSERT_TRUE(r.open(o.output, error)) << error;
  EXPECT_EQ(r.imagery().finerLevels, 0);
  // Raw RGBA8 tiles, and verify --imagery finds them identical to a new warp.
  o.output = dir / "raw.hfa";
  o.imagery.maxTexelsPerSample = 8;
  o.imagery.codec = hfa::ImageryCodec::Raw;
  ASSERT_TRUE(hfpack::pack(o, pr, error)) << error;
  ASSERT_TRUE(r.open(o.output, error)) << error;
  EXPECT_EQ(r.imagery().codec, hfa::ImageryCodec::Raw);
  EXPECT_TRUE(r.imagery().jpegTables.empty());
  for (const hfa::ImageryEntry& e : r.imageryTiles()) EXPECT_EQ(e.size, 256u * 256u * 4u);
  hfpack::VerifyOptions vo;
  vo.archive = o.output;
  vo.imagery.inputs = {tex};
  vo.out = nullptr;
  hfpack::VerifyResult vr;
  ASSERT_TRUE(hfpack::verify(vo, vr, error)) << error;
  EXPECT_TRUE(hfpack::ok(vr));
  EXPECT_TRUE(std::isinf(vr.imageryPsnr));
  // Verify against other imagery (the bands swapped): mismatches.
  translate(tex, dir / "bgr.tif", {"-b", "3", "-b", "2", "-b", "1"});
  vo.imagery.inputs = {dir / "bgr.tif"};
  ASSERT_TRUE(hfpack::verify(vo, vr, error)) << error;
  EXPECT_FALSE(hfpack::ok(vr));
  EXPECT_GT(vr.imageryMismatches, 0u);
}

// Payload of imagery tile i of r (checksum checked).
std::vector<uint8_t> payloadOf(const hfa::ArchiveReader& r, size_t i) {
  const uint8_t* data = nullptr;
  size_t size = 0;
  std::string error;
  EXPECT_TRUE(r.imageryPayload(i, data, size, error)) << error;
  return data ? std::vector<uint8_t>(data, data + size) : std::vector<uint8_t>();
}

TEST(HfpackImagery, Bc1TilesPackVerifyInfoAndTranscode) {
  const std::string dem = kDem + "/ps_height_1k.png", tex = kImagery + "/ps_texture_1k.png";
  if (!have(dem) || !have(tex)) GTEST_SKIP() << "no Puget Sound pair";
  TempDir dir;
  std::string error, output;
  translate(dem, dir / "ps257.tif", {"-outsize", "257", "257", "-r", "average"});
  // The same imagery raw (the texels) and bc1 (library call, the default cluster-fit encoder).
  hfpack::PackOptions o = packOptions({dir / "ps257.tif"}, dir / "raw.hfa", {tex});
  o.imagery.codec = hfa::ImageryCodec::Raw;
  hfpack::PackResult pr;
  ASSERT_TRUE(hfpack::pack(o, pr, error)) << error;
  o.output = dir / "bc1.hfa";
  o.imagery.codec = hfa::ImageryCodec::Bc1;
  EXPECT_EQ(o.imagery.bc1, himg::Bc1Mode::Quality);
  ASSERT_TRUE(hfpack::pack(o, pr, error)) << error;
  hfa::ArchiveReader raw, bc1;
  ASSERT_TRUE(raw.open(dir / "raw.hfa", error)) << error;
  ASSERT_TRUE(bc1.open(dir / "bc1.hfa", error)) << error;
  EXPECT_EQ(bc1.imagery().codec, hfa::ImageryCodec::Bc1);
  EXPECT_EQ(bc1.imagery().quality, 0);
  EXPECT_TRUE(bc1.imagery().jpegTables.empty());
  ASSERT_EQ(bc1.imageryTiles().size(), raw.imageryTiles().size());
  size_t partial = 0;
  for (size_t i = 0; i < bc1.imageryTiles().size(); ++i) {
    const hfa::ImageryEntry &b = bc1.imageryTiles()[i], &w = raw.imageryTiles()[i];
    ASSERT_EQ(b.codec, hfa::ImageryCodec::Bc1);
    ASSERT_EQ(b.size, 43648u);
    EXPECT_EQ(b.flags, w.flags);
    partial += (b.flags & hfa::kImageryPartial) != 0;
    // The chain is buildMipChain + encodeBc1 (quality) of the tile's texels, level 0 first.
    if (i % 3 == 0) {
      const std::vector<uint8_t> texels = payloadOf(raw, i);
      EXPECT_EQ(payloadOf(bc1, i), hftest::bc1Chain(texels.data(), 256, himg::Bc1Mode::Quality)) << i;
    }
  }
  // verify: checksums, sizes, decoding, and against the warped rasters (BC1 loses little).
  hfpack::VerifyOptions vo;
  vo.archive = dir / "bc1.hfa";
  vo.imagery.inputs = {tex};
  vo.out = nullptr;
  hfpack::VerifyResult vr;
  ASSERT_TRUE(hfpack::verify(vo, vr, error)) << error;
  EXPECT_TRUE(hfpack::ok(vr));
  EXPECT_EQ(vr.imageryTiles, bc1.imageryTiles().size());
  EXPECT_GT(vr.imageryPsnr, 30.0);
  std::printf("bc1 (quality) against the warped imagery: %.2f dB overall, %.2f at worst, %zu partial tiles\n",
              vr.imageryPsnr, vr.imageryMinPsnr, partial);
  ASSERT_EQ(run("info " + (dir / "bc1.hfa"), output), 0) << output;
  EXPECT_NE(output.find(", bc1 (BC1 mip chain of 5 levels, 43648 bytes per tile)"), std::string::npos) << output;
  EXPECT_NE(output.find("5.328 bits/texel"), std::string::npos) << output;  // 4 bits per texel + the mips
  // The command line: --imagery-codec bc1 --imagery-bc1 fast, then verify --imagery.
  ASSERT_EQ(run((dir / "ps257.tif") + " -o " + (dir / "fast.hfa") + " -q --imagery " + tex +
                    " --imagery-codec bc1 --imagery-bc1 fast",
                output),
            0)
      << output;
  {
    hfa::ArchiveReader fast;
    ASSERT_TRUE(fast.open(dir / "fast.hfa", error)) << error;
    ASSERT_EQ(fast.imageryTiles().size(), raw.imageryTiles().size());
    const std::vector<uint8_t> texels = payloadOf(raw, 1);
    EXPECT_EQ(payloadOf(fast, 1), hftest::bc1Chain(texels.data(), 256, himg::Bc1Mode::Fast));
  }
  ASSERT_EQ(run("verify " + (dir / "fast.hfa") + " -q --imagery " + tex, output), 0) << output;
  EXPECT_NE(output.find("0 bad"), std::string::npos) << output;
  EXPECT_NE(output.find("0 mismatches"), std::string::npos) << output;

  // transcode jpeg -> bc1 (imagery only: the heights are copied byte for byte).
  o.output = dir / "jpeg.hfa";
  o.imagery.codec = hfa::ImageryCodec::Jpeg;
  ASSERT_TRUE(hfpack::pack(o, pr, error)) << error;
  ASSERT_EQ(run("transcode " + (dir / "jpeg.hfa") + " " + (dir / "j2b.hfa") + " --imagery-codec bc1 --verify -q", output), 0)
      << output;
  EXPECT_NE(output.find("imagery jpeg -> bc1 (quality encoder)"), std::string::npos) << output;
  EXPECT_NE(output.find("copied as they are (hfpac)"), std::string::npos) << output;
  hfa::ArchiveReader jpeg, j2b;
  ASSERT_TRUE(jpeg.open(dir / "jpeg.hfa", error)) << error;
  ASSERT_TRUE(j2b.open(dir / "j2b.hfa", error)) << error;
  EXPECT_EQ(j2b.header().codec, jpeg.header().codec);
  EXPECT_EQ(j2b.header().codecOptions, jpeg.header().codecOptions);
  ASSERT_EQ(j2b.tiles().size(), jpeg.tiles().size());
  for (size_t i = 0; i < j2b.tiles().size(); ++i) EXPECT_EQ(j2b.tiles()[i].crc, jpeg.tiles()[i].crc) << i;
  EXPECT_EQ(j2b.imagery().codec, hfa::ImageryCodec::Bc1);
  EXPECT_TRUE(j2b.imagery().jpegTables.empty());
  EXPECT_EQ(j2b.imagery().finerLevels, jpeg.imagery().finerLevels);
  ASSERT_EQ(j2b.imageryTiles().size(), jpeg.imageryTiles().size());
  std::vector<uint8_t> rgba;
  for (size_t i = 0; i < j2b.imageryTiles().size(); i += 4) {
    ASSERT_EQ(j2b.imageryTiles()[i].codec, hfa::ImageryCodec::Bc1);
    EXPECT_EQ(j2b.imageryTiles()[i].flags, jpeg.imageryTiles()[i].flags);
    ASSERT_TRUE(decodeImagery(jpeg, i, rgba, error)) << error;
    EXPECT_EQ(payloadOf(j2b, i), hftest::bc1Chain(rgba.data(), 256, himg::Bc1Mode::Quality)) << i;
  }
  // bc1 -> jpeg (quality 85) and bc1 -> raw: decoded from level 0 of the chain.
  ASSERT_EQ(run("transcode " + (dir / "bc1.hfa") + " " + (dir / "b2j.hfa") +
                    " --imagery-codec jpeg --imagery-quality 85 --verify -q",
                output),
            0)
      << output;
  ASSERT_EQ(run("transcode " + (dir / "bc1.hfa") + " " + (dir / "b2r.hfa") + " --imagery-codec raw --codec raw -q", output), 0)
      << output;
  hfa::ArchiveReader b2j, b2r;
  ASSERT_TRUE(b2j.open(dir / "b2j.hfa", error)) << error;
  ASSERT_TRUE(b2r.open(dir / "b2r.hfa", error)) << error;
  EXPECT_EQ(b2j.imagery().codec, hfa::ImageryCodec::Jpeg);
  EXPECT_EQ(b2j.imagery().quality, 85);
  EXPECT_EQ(b2j.imagery().jpegTables, himg::makeJpegTables(85));
  EXPECT_EQ(b2r.header().codec, hfa::Codec::Raw);
  std::vector<uint8_t> fromBc1, viaJpeg;
  for (size_t i = 0; i < bc1.imageryTiles().size(); ++i) {
    ASSERT_TRUE(decodeImagery(bc1, i, fromBc1, error)) << error;
    EXPECT_EQ(payloadOf(b2r, i), fromBc1) << i;
    ASSERT_TRUE(decodeImagery(b2j, i, viaJpeg, error)) << error;
    for (size_t k = 3; k < fromBc1.size(); k += 4) ASSERT_EQ(viaJpeg[k], fromBc1[k]) << "coverage, tile " << i;
    EXPECT_GT(himg::psnrRgb(fromBc1.data(), viaJpeg.data(), fromBc1.size() / 4), 25.0) << i;  // JPEG 85 of BC1 blocks: 28-35 dB
  }
  std::string e2;
  EXPECT_TRUE(hfpack::sameContent(bc1, b2r, 2, e2, false)) << e2;  // the same heights and tile set
  EXPECT_FALSE(hfpack::sameContent(bc1, b2r, 2, e2, true));

  // Refusals: one line, exit 1, no file.
  struct Case {
    std::string args, expect;
  } cases[] = {
      {"transcode " + (dir / "bc1.hfa") + " " + (dir / "x.hfa"), "needs --codec"},
      {"transcode " + (dir / "bc1.hfa") + " " + (dir / "x.hfa") + " --imagery-codec dxt1", "--imagery-codec: dxt1 not in {jpeg,raw,bc1}"},
      {"transcode " + (dir / "bc1.hfa") + " " + (dir / "x.hfa") + " --codec raw --imagery-bc1 fast",
       "--imagery-bc1 needs --imagery-codec"},
      {"transcode " + (dir / "bc1.hfa") + " " + (dir / "x.hfa") + " --imagery-codec bc1 --imagery-bc1 slow",
       "--imagery-bc1: slow not in {quality,fast}"},
      {"transcode " + (dir / "ps257.hfa") + " " + (dir / "x.hfa") + " --imagery-codec bc1", "no imagery to re-code"},
  };
  ASSERT_EQ(run((dir / "ps257.tif") + " -o " + (dir / "ps257.hfa") + " -q", output), 0) << output;
  for (const Case& c : cases) {
    EXPECT_EQ(run(c.args, output), 1) << c.args << "\n" << output;
    EXPECT_EQ(output.rfind("Error: ", 0), 0u) << output;
    EXPECT_EQ(std::count(output.begin(), output.end(), '\n'), 1) << output;
    EXPECT_NE(output.find(c.expect), std::string::npos) << c.args << "\n" << output;
    EXPECT_FALSE(fs::exists(dir / "x.hfa")) << c.args;
  }
}

TEST(HfpackImagery, BadImageryInputs) {
  const std::string ps = kDem + "/ps_height_1k.png", n57 = kDem + "/N57E011.hgt";
  const std::string tex = kImagery + "/ps_texture_1k.png", world = kImagery + "/world_topo.vrt";
  if (!have(ps) || !have(n57) || !have(tex) || !have(world)) GTEST_SKIP() << "no shared data";
  TempDir dir;
  const std::string out = dir / "out.hfa";
  // A palette band without colours (a VRT written here).
  {
    std::ofstream(dir / "nopalette.vrt")
        << "<VRTDataset rasterXSize=\"64\" rasterYSize=\"64\">\n"
           "  <VRTRasterBand dataType=\"Byte\" band=\"1\">\n"
           "    <ColorInterp>Palette</ColorInterp>\n"
           "    <SimpleSource><SourceFilename relativeToVRT=\"0\">" + tex + "</SourceFilename><SourceBand>1</SourceBand></SimpleSource>\n"
           "  </VRTRasterBand>\n</VRTDataset>\n";
  }
  translate(world, dir / "australia.tif", {"-projwin", "120", "-20", "140", "-35"});
  translate(tex, dir / "rgb16.tif", {"-ot", "UInt16", "-b", "1", "-b", "2", "-b", "3"});
  struct Case {
    std::string args, expect;
  } cases[] = {
      {ps + " -o " + out + " --imagery " + kDem + "/zion_srtm.tif", "Int16; imagery needs Byte bands"},
      {ps + " -o " + out + " --imagery " + (dir / "rgb16.tif"), "UInt16"},
      {n57 + " -o " + out + " --imagery " + (dir / "australia.tif"), "does not overlap"},
      {ps + " -o " + out + " --imagery " + (dir / "nopalette.vrt"), "palette band without colours"},
      {ps + " -o " + out + " --imagery " + world, "the DEM is not"},
      {ps + " -o " + out + " --imagery " + (dir / "missing.png"), "No such file"},
      {ps + " -o " + out + " --imagery " + tex + " --imagery-quality 0", "--imagery-quality: Value 0 not in range 1 to 100"},
      {ps + " -o " + out + " --imagery " + tex + " --imagery-codec png", "--imagery-codec: png not in {jpeg,raw,bc1}"},
      {ps + " -o " + out + " --imagery " + tex + " --imagery-codec bc1 --imagery-bc1 best", "--imagery-bc1: best not in"},
      {ps + " -o " + out + " --imagery " + tex + " --imagery-resampling mode", "--imagery-resampling: mode not in"},
      {ps + " -o " + out + " --imagery " + tex + " --imagery-max-texels-per-sample 0.5", "max-texels"},
      {"verify " + out + " --imagery " + tex, ""},  // no archive: its own error
  };
  for (const Case& c : cases) {
    std::string output;
    EXPECT_EQ(run(c.args, output), 1) << c.args << "\n" << output;
    EXPECT_NE(output.find("Error: "), std::string::npos) << output;
    EXPECT_EQ(std::count(output.begin(), output.end(), '\n'), 1) << output;
    if (!c.expect.empty()) {
      EXPECT_NE(output.find(c.expect), std::string::npos) << c.args << "\n" << output;
    }
    EXPECT_FALSE(fs::exists(out)) << c.args;
  }
  // The Puget pair by the command line: one warning line, then the summary.
  std::string output;
  ASSERT_EQ(run(ps + " -o " + out + " -q --spacing 160 --vertical-scale 0.1 --imagery " + tex, output), 0) << output;
  EXPECT_EQ(output.rfind("Warning: the imagery is not georeferenced", 0), 0u) << output;
  ASSERT_EQ(run("info " + out, output), 0) << output;
  EXPECT_NE(output.find("imagery"), std::string::npos) << output;
  EXPECT_NE(output.find("bits/texel"), std::string::npos) << output;
  ASSERT_EQ(run("verify " + out + " -q --imagery " + tex, output), 0) << output;
  EXPECT_NE(output.find("0 mismatches"), std::string::npos) << output;
  // transcode keeps the imagery unless --imagery-codec; how to code it needs that option, and
  // how it was warped is not an option there.
  ASSERT_EQ(run("transcode " + out + " " + (dir / "t.hfa") + " --codec raw -q --imagery-quality 50", output), 1);
  EXPECT_NE(output.find("--imagery-quality needs --imagery-codec"), std::string::npos) << output;
  ASSERT_EQ(run("transcode " + out + " " + (dir / "t.hfa") + " --codec raw -q --imagery-resampling cubic", output), 1);
  EXPECT_NE(output.find("not an option of hfpack transcode"), std::string::npos) << output;
  EXPECT_FALSE(fs::exists(dir / "t.hfa"));
}

// Grey, palette and mosaic inputs: a grey band gives r = g = b; a palette with colours is
// expanded (entry i = (i, 255 - i, 0) here); two halves of the world imagery make the same tiles
// as the whole (GDALBuildVRT mosaic).
TEST(HfpackImagery, GreyPaletteAndMosaicInputs) {
  const std::string n57 = kDem + "/N57E011.hgt", world = kImagery + "/world_topo.vrt";
  const std::string ps = kDem + "/ps_height_1k.png", tex = kImagery + "/ps_texture_1k.png";
  if (!have(n57) || !have(world) || !have(ps) || !have(tex)) GTEST_SKIP() << "no shared data";
  TempDir dir;
  std::string error;
  hfpack::PackResult pr;
  hfa::ArchiveReader r;
  std::vector<uint8_t> rgba;
  // Grey: band 2 of the texture alone.
  translate(tex, dir / "grey.tif", {"-b", "2"});
  hfpack::PackOptions o = packOptions({ps}, dir / "grey.hfa", {dir / "grey.tif"});
  ASSERT_TRUE(hfpack::pack(o, pr, error)) << error;
  EXPECT_EQ(pr.imageryPlan.bands, 1);
  ASSERT_TRUE(r.open(o.output, error)) << error;
  ASSERT_TRUE(decodeImagery(r, r.imageryTiles().size() / 2, rgba, error)) << error;
  int maxSpread = 0;
  for (size_t i = 0; i < rgba.size(); i += 4)
    if (rgba[i + 3]) maxSpread = std::max({maxSpread, std::abs(rgba[i] - rgba[i + 1]), std::abs(rgba[i + 1] - rgba[i + 2])});
  EXPECT_LE(maxSpread, 6);  // grey up to JPEG's chroma noise
  // Palette with colours.
  {
    std::ofstream v(dir / "palette.vrt");
    v << "<VRTDataset rasterXSize=\"1024\" rasterYSize=\"1024\">\n"
         "  <VRTRasterBand dataType=\"Byte\" band=\"1\">\n"
         "    <ColorInterp>Palette</ColorInterp>\n    <ColorTable>\n";
    for (int i = 0; i < 256; ++i) v << "      <Entry c1=\"" << i << "\" c2=\"" << 255 - i << "\" c3=\"0\" c4=\"255\"/>\n";
    v << "    </ColorTable>\n"
         "    <SimpleSource><SourceFilename relativeToVRT=\"0\">" << tex
      << "</SourceFilename><SourceBand>1</SourceBand></SimpleSource>\n"
         "  </VRTRasterBand>\n</VRTDataset>\n";
  }
  o = packOptions({ps}, dir / "palette.hfa", {dir / "palette.vrt"});
  o.imagery.codec = hfa::ImageryCodec::Raw;
  ASSERT_TRUE(hfpack::pack(o, pr, error)) << error;
  EXPECT_EQ(pr.imageryPlan.bands, 3);
  ASSERT_TRUE(r.open(o.output, error)) << error;
  ASSERT_TRUE(decodeImagery(r, r.imageryTiles().size() / 2, rgba, error)) << error;
  size_t covered = 0;
  for (size_t i = 0; i < rgba.size(); i += 4) {
    if (!rgba[i + 3]) continue;
    ++covered;
    ASSERT_NEAR(int(rgba[i]) + int(rgba[i + 1]), 255, 2) << i;  // bilinear of (i, 255 - i, 0)
    ASSERT_EQ(rgba[i + 2], 0) << i;
  }
  EXPECT_GT(covered, 1000u);
  // A mosaic of two halves of the world imagery = the whole.
  translate(world, dir / "west.tif", {"-projwin", "0", "70", "11.6", "50"});
  translate(world, dir / "east.tif", {"-projwin", "11.6", "70", "30", "50"});
  o = packOptions({n57}, dir / "whole.hfa", {world});
  o.imagery.codec = hfa::ImageryCodec::Raw;
  ASSERT_TRUE(hfpack::pack(o, pr, error)) << error;
  o.output = dir / "halves.hfa";
  o.imagery.inputs = {dir / "west.tif", dir / "east.tif"};
  ASSERT_TRUE(hfpack::pack(o, pr, error)) << error;
  hfa::ArchiveReader a, b;
  ASSERT_TRUE(a.open(dir / "whole.hfa", error)) << error;
  ASSERT_TRUE(b.open(dir / "halves.hfa", error)) << error;
  ASSERT_EQ(a.imageryTiles().size(), b.imageryTiles().size());
  std::vector<uint8_t> x, y;
  size_t differing = 0;
  for (size_t i = 0; i < a.imageryTiles().size(); ++i) {
    ASSERT_TRUE(decodeImagery(a, i, x, error) && decodeImagery(b, i, y, error)) << error;
    for (size_t k = 0; k < x.size(); ++k) differing += std::abs(int(x[k]) - int(y[k])) > 1;
  }
  EXPECT_EQ(differing, 0u);
}

}  // namespace
