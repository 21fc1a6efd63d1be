// hfpack_test.cpp - the packer (tools/hfpack): small real DEMs packed with hfpac and raw and
// verified against their source, identical raw/hfpac/hfpac+rbuc indexes, nodata fill/keep,
// quantised floats, .hfr inputs, --device cuda (byte-identical archives when a device is
// present, a CPU fallback with a note otherwise), bad inputs and bad command lines (exit
// status 1, one "Error:" line, no file left); `hfpack transcode` (round trips through every
// codec restore the archive byte for byte, bad inputs); hfterrain's .hfr output.
// Built twice: hf_hfpack_tests (fast) and, with HFPACK_SLOW, hf_hfpack_slow_tests (every DEM
// in HF_SHARED_DEM_DIR and the sierra mosaic, label "slow"). Without GDAL (HFPACK_GDAL unset,
// the GPU machine's build) only the tests on synthetic .hfr inputs are built.
#include <gtest/gtest.h>
#include <random>
#include <chrono>
#include <thread>
#include <fcntl.h>
#include <signal.h>

#ifdef HFPACK_GDAL
#include <gdal.h>
#include <gdal_utils.h>
#include <ogr_srs_api.h>

#include "gdal_test_util.h"
#endif
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "archive/archive.h"
#include "demio/hfr.h"
#include "hfpack.h"
#include "test_files.h"
#include "test_process.h"

#ifndef HF_SHARED_DEM_DIR
#error "HF_SHARED_DEM_DIR must name the shared DEM folder"
#endif

namespace {

using hf_test::runMaybeKilled;
using hf_test::TempDir;
#ifdef HFPACK_GDAL
using hf_test::translate;
#endif

namespace fs = std::filesystem;

const std::string kDem = HF_SHARED_DEM_DIR;

[[maybe_unused]] bool haveDem(const std::string& name) { return fs::exists(kDem + "/" + name); }

[[maybe_unused]] hfpack::PackOptions packOptions(const std::vector<std::string>& inputs, const std::string& out) {
  hfpack::PackOptions o;
  o.inputs = inputs;
  o.output = out;
  o.out = nullptr;
  o.threads = 2;
  return o;
}

[[maybe_unused]] void packAndVerify(const std::vector<std::string>& inputs, const TempDir& dir, const std::string& stem,
                   hfpack::PackOptions base = hfpack::PackOptions()) {
  std::string error;
  std::vector<std::string> paths;
  const hfa::Codec codecs[] = {hfa::Codec::Hfpac, hfa::Codec::Raw, hfa::Codec::HfpacRbuc, hfa::Codec::Auto};
  for (hfa::Codec codec : codecs) {
    hfpack::PackOptions o = base;
    o.inputs = inputs;
    o.output = dir / (stem + "." + hfa::codecName(codec) + ".hfa");
    o.out = nullptr;
    o.threads = 2;
    o.codec = codec;
    hfpack::PackResult pr;
    ASSERT_TRUE(hfpack::pack(o, pr, error)) << stem << ": " << error;
    EXPECT_GT(pr.tiles, 0u);
    hfpack::VerifyOptions vo;
    vo.archive = o.output;
    vo.sources = inputs;
    vo.out = nullptr;
    vo.threads = 2;
    hfpack::VerifyResult vr;
    ASSERT_TRUE(hfpack::verify(vo, vr, error)) << stem << ": " << error;
    EXPECT_TRUE(hfpack::ok(vr)) << stem << " " << hfa::codecName(codec) << ": " << vr.badTiles << " bad, "
                                << vr.mismatches << " mismatches, " << vr.missingTiles << " missing, "
                                << vr.extraTiles << " extra";
    EXPECT_GT(vr.comparedSamples, 0u);
    paths.push_back(o.output);
  }
  // Identical indexes apart from codec, sizes (and so offsets and checksums).
  hfa::ArchiveReader a;
  ASSERT_TRUE(a.open(paths[0], error)) << error;
  for (size_t k = 1; k < paths.size(); ++k) {
    hfa::ArchiveReader b;
    ASSERT_TRUE(b.open(paths[k], error)) << error;
    EXPECT_EQ(b.header().codec, codecs[k]);
    EXPECT_EQ(a.header().width, b.header().width);
    EXPECT_EQ(a.header().levels, b.header().levels);
    EXPECT_EQ(a.header().flags, b.header().flags);
    EXPECT_EQ(a.header().crsWkt, b.header().crsWkt);
    ASSERT_EQ(a.tiles().size(), b.tiles().size());
    for (size_t i = 0; i < a.tiles().size(); ++i) {
      const hfa::TileEntry &x = a.tiles()[i], &y = b.tiles()[i];
      EXPECT_TRUE(x.level == y.level && x.x == y.x && x.y == y.y && x.flags == y.flags &&
                  x.minSample == y.minSample && x.maxSample == y.maxSample && x.filled == y.filled &&
                  x.lodError == y.lodError)
          << stem << " " << hfa::codecName(codecs[k]) << " tile " << i;
      EXPECT_EQ(x.codec, hfa::Codec::Hfpac);
      if (codecs[k] == hfa::Codec::Auto) {  // each tile the smaller of hfpac and hfan
        EXPECT_TRUE(y.codec == hfa::Codec::Hfpac || y.codec == hfa::Codec::Hfan) << int(y.codec);
        EXPECT_LE(y.size, x.size) << stem << " tile " << i;
      } else {
        EXPECT_EQ(y.codec, codecs[k]);
      }
    }
  }
}

[[maybe_unused]] std::vector<uint8_t> fileBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

#ifndef HFPACK_SLOW

#ifdef HFPACK_GDAL
TEST(Hfpack, ZionLossless) {
  if (!haveDem("zion_srtm.tif")) GTEST_SKIP() << "no shared DEMs";
  TempDir dir;
  packAndVerify({kDem + "/zion_srtm.tif"}, dir, "zion");
}

TEST(Hfpack, SainteHelensFillAndKeep) {
  if (!haveDem("SainteHelens.dem")) GTEST_SKIP() << "no shared DEMs";
  TempDir dir;
  packAndVerify({kDem + "/SainteHelens.dem"}, dir, "msh_fill");
  hfpack::PackOptions keep;
  keep.fillNodata = false;
  keep.patch = 65;
  packAndVerify({kDem + "/SainteHelens.dem"}, dir, "msh_keep", keep);
  hfa::ArchiveReader r;
  std::string error;
  ASSERT_TRUE(r.open(dir / "msh_fill.hfpac.hfa", error)) << error;
  EXPECT_TRUE(r.header().flags & hfa::kFlagNodataFilled);
  EXPECT_GT(r.header().filledSamples, 0u);  // 2.7 % voids
  ASSERT_TRUE(r.open(dir / "msh_keep.hfpac.hfa", error)) << error;
  EXPECT_TRUE(r.header().flags & hfa::kFlagNodataKept);
  EXPECT_EQ(r.header().tileSize(), 65);
}

TEST(Hfpack, HgtWindowAndMosaic) {
  if (!haveDem("N36W122.hgt")) GTEST_SKIP() << "no shared DEMs";
  TempDir dir;
  translate(kDem + "/N36W122.hgt", dir / "w1.tif", {"-srcwin", "600", "500", "300", "200"});
  translate(kDem + "/N36W122.hgt", dir / "w2.tif", {"-srcwin", "899", "500", "150", "200"});
  packAndVerify({dir / "w1.tif"}, dir, "window");
  // Two inputs are mosaicked (GDALBuildVRT in memory): 449 x 200.
  packAndVerify({dir / "w1.tif", dir / "w2.tif"}, dir, "mosaic");
  hfa::ArchiveReader r;
  std::string error;
  ASSERT_TRUE(r.open(dir / "mosaic.hfpac.hfa", error)) << error;
  EXPECT_EQ(r.header().width, 449u);
  EXPECT_TRUE(r.header().flags & hfa::kFlagGeographic);
  EXPECT_GT(r.header().spacingX, 60.0);  // ~74 m at 36.5 N
  EXPECT_LT(r.header().spacingX, 90.0);
}

TEST(Hfpack, FloatIsQuantisedWithinBound) {
  if (!haveDem("greenriver.tif")) GTEST_SKIP() << "no shared DEMs";
  TempDir dir;
  translate(kDem + "/greenriver.tif", dir / "gr.tif", {"-srcwin", "700", "300", "200", "150"});
  packAndVerify({dir / "gr.tif"}, dir, "greenriver");
  hfpack::PackOptions o = packOptions({dir / "gr.tif"}, dir / "gr_scale.hfa");
  o.verticalScale = 0.125;
  hfpack::PackResult pr;
  std::string error;
  ASSERT_TRUE(hfpack::pack(o, pr, error)) << error;
  hfa::ArchiveReader r;
  ASSERT_TRUE(r.open(o.output, error)) << error;
  EXPECT_TRUE(r.header().flags & hfa::kFlagQuantised);
  EXPECT_DOUBLE_EQ(r.header().verticalScale, 0.125);
  EXPECT_LE(r.header().quantError, 0.0625 + 1e-9);
  hfpack::VerifyOptions vo;
  vo.archive = o.output;
  vo.sources = {dir / "gr.tif"};
  vo.out = nullptr;
  hfpack::VerifyResult vr;
  ASSERT_TRUE(hfpack::verify(vo, vr, error)) << error;
  EXPECT_TRUE(hfpack::ok(vr));
  EXPECT_LE(vr.maxHeightError, 0.0625 + 1e-9);
}

// The Puget Sound heightmap (no georeferencing; documented: 160 m spacing, 0.1 m units) at its
// true shape: --spacing and --vertical-scale as metadata (the samples stay lossless).
TEST(Hfpack, PugetSoundTrueShape) {
  if (!haveDem("ps_height_1k.png")) GTEST_SKIP() << "no shared DEMs";
  TempDir dir;
  std::string error;
  hfpack::PackResult pr;
  const std::string src = kDem + "/ps_height_1k.png";
  hfpack::PackOptions o = packOptions({src}, dir / "ps.hfa");
  o.spacingX = 160;
  o.verticalScale = 0.1;
  ASSERT_TRUE(hfpack::pack(o, pr, error)) << error;
  hfa::ArchiveReader r;
  ASSERT_TRUE(r.open(o.output, error)) << error;
  const hfa::Header& h = r.header();
  EXPECT_EQ(h.spacingX, 160.0);
  EXPECT_EQ(h.spacingY, 160.0);
  EXPECT_TRUE(h.flags & hfa::kFlagSpacingKnown);
  EXPECT_EQ(h.flags & (hfa::kFlagGeoTransform | hfa::kFlagQuantised | hfa::kFlagGeographic), 0u);
  EXPECT_DOUBLE_EQ(h.verticalScale, 0.1);
  EXPECT_EQ(h.verticalOffset, 0.0);
  EXPECT_EQ(h.quantError, 0.0);
  int32_t lo = INT32_MAX, hi = INT32_MIN;
  for (const hfa::TileEntry& e : r.tiles()) {
    lo = std::min(lo, e.minSample);
    hi = std::max(hi, e.maxSample);
  }
  const double top = h.verticalOffset + h.verticalScale * hi;
  EXPECT_GE(h.verticalOffset + h.verticalScale * lo, 0.0);
  EXPECT_GT(top, 1000.0);  // 4379.8 m: tens to a few thousand metres, not 43798 or 65535
  EXPECT_LT(top, 5000.0);
  // verify --source compares samples: the metadata does not disturb it.
  hfpack::VerifyOptions vo;
  vo.archive = o.output;
  vo.sources = {src};
  vo.out = nullptr;
  hfpack::VerifyResult vr;
  ASSERT_TRUE(hfpack::verify(vo, vr, error)) << error;
  EXPECT_TRUE(hfpack::ok(vr));
  EXPECT_GT(vr.comparedSamples, 0u);
  // Anisotropic spacing; an offset.
  o.output = dir / "ps_xy.hfa";
  o.spacingY = 80;
  o.verticalOffset = -12.5;
  ASSERT_TRUE(hfpack::pack(o, pr, error)) << error;
  ASSERT_TRUE(r.open(o.output, error)) << error;
  EXPECT_EQ(r.header().spacingX, 160.0);
  EXPECT_EQ(r.header().spacingY, 80.0);
  EXPECT_EQ(r.header().verticalOffset, -12.5);

  // -a_srs / -a_ullr: the place of an unreferenced raster (pixel-is-area corners).
  o = packOptions({src}, dir / "ps_utm.hfa");
  o.aSrs = "EPSG:32610";
  o.aUllr = true;
  const double ullr[4] = {500000, 5300000, 664000, 5136000};
  std::copy(ullr, ullr + 4, o.ullr);
  o.verticalScale = 0.1;
  ASSERT_TRUE(hfpack::pack(o, pr, error)) << error;
  ASSERT_TRUE(r.open(o.output, error)) << error;
  const double want_gt[6] = {500000, 160, 0, 5300000, 0, -160};
  EXPECT_TRUE(std::equal(want_gt, want_gt + 6, r.header().geoTransform));
  EXPECT_TRUE(r.header().flags & hfa::kFlagGeoTransform);
  EXPECT_NE(r.header().crsWkt.find("UTM zone 10N"), std::string::npos) << r.header().crsWkt;
  EXPECT_EQ(r.header().flags & (hfa::kFlagSpacingKnown | hfa::kFlagGeographic), hfa::kFlagSpacingKnown);
  EXPECT_DOUBLE_EQ(r.header().spacingX, 160.0);
  EXPECT_DOUBLE_EQ(r.header().verticalScale, 0.1);
  // Assigned, then reprojected (--t_srs sees the assigned CRS); verify with the same options.
  o.output = dir / "ps_ll.hfa";
  o.tSrs = "EPSG:4326";
  ASSERT_TRUE(hfpack::pack(o, pr, error)) << error;
  ASSERT_TRUE(r.open(o.output, error)) << error;
  EXPECT_TRUE(r.header().flags & hfa::kFlagGeographic);
  EXPECT_NEAR(r.header().geoTransform[0], -123.0, 0.5);  // 500000 E in zone 10N = 123 W
  EXPECT_NEAR(r.header().geoTransform[3], 47.85, 0.1);
  vo.archive = o.output;
  vo.tSrs = o.tSrs;
  vo.aSrs = o.aSrs;
  vo.aUllr = true;
  std::copy(ullr, ullr + 4, vo.ullr);
  ASSERT_TRUE(hfpack::verify(vo, vr, error)) << error;
  EXPECT_TRUE(hfpack::ok(vr));
  // -a_ullr alone (no CRS): a geotransform, spacing in CRS units (unknown: not metres).
  o = packOptions({src}, dir / "ps_ullr.hfa");
  o.aUllr = true;
  std::copy(ullr, ullr + 4, o.ullr);
  ASSERT_TRUE(hfpack::pack(o, pr, error)) << error;
  ASSERT_TRUE(r.open(o.output, error)) << error;
  EXPECT_TRUE(std::equal(want_gt, want_gt + 6, r.header().geoTransform));
  EXPECT_TRUE(r.header().crsWkt.empty());
  // --spacing on a georeferenced input is refused (its geotransform says the spacing).
  o.spacingX = 30;
  o.output = dir / "refused.hfa";
  EXPECT_FALSE(hfpack::pack(o, pr, error));
  EXPECT_NE(error.find("--spacing"), std::string::npos) << error;
  EXPECT_FALSE(fs::exists(o.output));
}

// --vertical-scale / --vertical-offset as metadata on every sample type: integer sources keep
// their samples (scale = M x band scale, offset = O + M x band offset), float sources are
// quantised with step M and shifted by O.
TEST(Hfpack, VerticalScaleAndOffsetAreMetadata) {
  if (!haveDem("zion_srtm.tif") || !haveDem("greenriver.tif")) GTEST_SKIP() << "no shared DEMs";
  TempDir dir;
  std::string error;
  hfpack::PackResult pr;
  hfa::ArchiveReader plain, scaled;
  // Int16 with a GDAL band scale/offset (a VRT: -a_scale 0.5 -a_offset 10).
  translate(kDem + "/zion_srtm.tif", dir / "z.vrt", {"-of", "VRT", "-a_scale", "0.5", "-a_offset", "10"});
  ASSERT_TRUE(hfpack::pack(packOptions({dir / "z.vrt"}, dir / "plain.hfa"), pr, error)) << error;
  hfpack::PackOptions o = packOptions({dir / "z.vrt"}, dir / "scaled.hfa");
  o.verticalScale = 2;
  o.verticalOffset = 100;
  ASSERT_TRUE(hfpack::pack(o, pr, error)) << error;
  ASSERT_TRUE(plain.open(dir / "plain.hfa", error)) << error;
  ASSERT_TRUE(scaled.open(dir / "scaled.hfa", error)) << error;
  EXPECT_DOUBLE_EQ(plain.header().verticalScale, 0.5);
  EXPECT_DOUBLE_EQ(plain.header().verticalOffset, 10.0);
  EXPECT_DOUBLE_EQ(scaled.header().verticalScale, 1.0);     // 2 x 0.5
  EXPECT_DOUBLE_EQ(scaled.header().verticalOffset, 120.0);  // 100 + 2 x 10
  EXPECT_EQ(scaled.header().flags & hfa::kFlagQuantised, 0u);
  ASSERT_EQ(plain.tiles().size(), scaled.tiles().size());
  for (size_t i = 0; i < plain.tiles().size(); ++i) EXPECT_EQ(plain.tiles()[i].crc, scaled.tiles()[i].crc) << i;
  hfpack::VerifyOptions vo;
  vo.archive = o.output;
  vo.sources = {dir / "z.vrt"};
  vo.out = nullptr;
  hfpack::VerifyResult vr;
  ASSERT_TRUE(hfpack::verify(vo, vr, error)) << error;
  EXPECT_TRUE(hfpack::ok(vr));
  // Float: the step is M, the offset shifts.
  translate(kDem + "/greenriver.tif", dir / "gr.tif", {"-srcwin", "700", "300", "200", "150"});
  o = packOptions({dir / "gr.tif"}, dir / "gr0.hfa");
  o.verticalScale = 0.25;
  ASSERT_TRUE(hfpack::pack(o, pr, error)) << error;
  o.output = dir / "gr1.hfa";
  o.verticalOffset = -1000;
  ASSERT_TRUE(hfpack::pack(o, pr, error)) << error;
  ASSERT_TRUE(plain.open(dir / "gr0.hfa", error)) << error;
  ASSERT_TRUE(scaled.open(dir / "gr1.hfa", error)) << error;
  EXPECT_TRUE(scaled.header().flags & hfa::kFlagQuantised);
  EXPECT_DOUBLE_EQ(scaled.header().verticalScale, 0.25);
  EXPECT_DOUBLE_EQ(scaled.header().verticalOffset, plain.header().verticalOffset - 1000);
  vo.archive = o.output;
  vo.sources = {dir / "gr.tif"};
  ASSERT_TRUE(hfpack::verify(vo, vr, error)) << error;
  EXPECT_TRUE(hfpack::ok(vr));
}

#endif  // HFPACK_GDAL

// ---- the command line ----

struct CmdResult {
  int status = -1;
  std::string err, out;
};

CmdResult runCmd(const std::string& args, const TempDir& dir, const std::string& prefix = "") {
  const std::string err = dir / "stderr.txt", out = dir / "stdout.txt";
  const std::string cmd = prefix + "GDAL_PAM_ENABLED=NO " + HFPACK_BINARY + " " + args + " >" + out + " 2>" + err;
  const int rc = std::system(("/bin/sh -c '" + cmd + "'").c_str());
  CmdResult r;
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  std::ifstream e(err), o(out);
  std::stringstream es, os;
  es << e.rdbuf();
  os << o.rdbuf();
  r.err = es.str();
  r.out = os.str();
  return r;
}

// Exit 1, exactly one line on stderr starting "Error:", and the folder holds only the
// expected files (no output archive, no temporary file).
void expectError(const CmdResult& r, const std::string& needle, const TempDir& dir,
                 const std::vector<std::string>& allowed = {}) {
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(r.err.rfind("Error: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << "expected '" << needle << "' in: " << r.err;
  for (const auto& e : fs::directory_iterator(dir.path)) {
    const std::string name = e.path().filename().string();
    if (name == "stderr.txt" || name == "stdout.txt") continue;
    EXPECT_NE(std::find(allowed.begin(), allowed.end(), name), allowed.end()) << "left behind: " << name;
  }
}

#ifdef HFPACK_GDAL
TEST(HfpackCli, BadCommandLines) {
  TempDir dir;
  const std::string src = kDem + "/zion_srtm.tif";
  const std::string out = " -o " + (dir / "o.hfa");
  expectError(runCmd("", dir), "no input", dir);
  expectError(runCmd(out, dir), "no input raster", dir);
  expectError(runCmd(src, dir), "no output", dir);
  expectError(runCmd(src + out + " --frobnicate", dir), "unknown option --frobnicate", dir);
  expectError(runCmd(src + out + " --patch", dir), "--patch: 1 required", dir);
  expectError(runCmd(src + out + " --patch 100", dir), "2^n + 1", dir);
  expectError(runCmd(src + out + " --patch abc", dir), "not an integer", dir);
  expectError(runCmd(src + out + " --segment 7", dir), "--segment 7", dir);
  expectError(runCmd(src + out + " --bits 17", dir), "--bits: 17: must be auto or 0..16", dir);
  expectError(runCmd(src + out + " --codec zip", dir), "--codec: zip not in {hfpac,hfpac+rbuc,hfan,auto,raw}", dir);
  expectError(runCmd(src + out + " --gpu-batch 0", dir), "--gpu-batch", dir);
  expectError(runCmd(src + out + " --device tpu", dir), "--device: tpu not in {cpu,cuda}", dir);
  expectError(runCmd(src + out + " --nodata maybe", dir), "--nodata: maybe not in {fill,keep}", dir);
  expectError(runCmd(src + out + " --vertical-scale -1", dir), "--vertical-scale", dir);
  expectError(runCmd(src + out + " --levels 9", dir), "--levels 9", dir);
  expectError(runCmd(src + out + " --t_srs NOT_A_CRS", dir), "--t_srs", dir);
  const std::string ps = kDem + "/ps_height_1k.png";
  expectError(runCmd(ps + out + " --spacing 0", dir), "--spacing: 0: must be X or X,Y", dir);
  expectError(runCmd(ps + out + " --spacing -160", dir), "--spacing: -160:", dir);
  expectError(runCmd(ps + out + " --spacing 160,", dir), "--spacing: 160,:", dir);
  expectError(runCmd(ps + out + " --spacing 160,x", dir), "--spacing: 160,x:", dir);
  expectError(runCmd(ps + out + " --spacing inf", dir), "--spacing: inf:", dir);
  expectError(runCmd(src + out + " --spacing 30", dir), "georeferenced", dir);  // zion has a geotransform
  expectError(runCmd(ps + out + " -a_srs NOT_A_CRS", dir), "-a_srs NOT_A_CRS", dir);
  expectError(runCmd(ps + out + " -a_ullr 0 10 10", dir), "--a_ullr: 4 required", dir);
  expectError(runCmd(ps + out + " -a_ullr 0 10 ten 0", dir), "-a_ullr: not a number: ten", dir);
  expectError(runCmd(ps + out + " -a_ullr 5 10 5 0", dir), "-a_ullr: empty bounds", dir);
  expectError(runCmd(ps + out + " --vertical-offset abc", dir), "--vertical-offset", dir);
  expectError(runCmd(ps + out + " --vertical-offset nan", dir), "--vertical-offset", dir);
  expectError(runCmd(ps + out + " --vertical-scale 0", dir), "--vertical-scale", dir);
  expectError(runCmd("transcode a.hfa b.hfa --codec raw --spacing 3", dir), "--spacing is not an option", dir);
  expectError(runCmd("info", dir), "one archive", dir);
  expectError(runCmd("info " + (dir / "missing.hfa"), dir), "No such file", dir);
  expectError(runCmd("verify", dir), "one archive", dir);
}

// gdal_translate's single-dash spellings (and --a_srs / --a_ullr), negative and leading-dot
// numbers as values, repeated options (the last one counts; --config adds up), --help: the
// command line packs what the API packs.
TEST(HfpackCli, GdalSpellingsAndNegativeNumbers) {
  if (!haveDem("ps_height_1k.png")) GTEST_SKIP() << "no shared DEMs";
  TempDir dir;
  const std::string src = kDem + "/ps_height_1k.png";
  CmdResult r = runCmd(src + " -a_srs EPSG:32610 -a_ullr 1 2 3 4 -a_ullr -500000 5300000 -336000 5136000"
                             " --vertical-offset -.5 --config GDAL_CACHEMAX 32 --config GDAL_NUM_THREADS 1"
                             " --patch 65 --patch 129 -q -o " + (dir / "cli.hfa"), dir);
  ASSERT_EQ(r.status, 0) << r.err;
  hfpack::PackOptions o = packOptions({src}, dir / "api.hfa");
  o.aSrs = "EPSG:32610";
  o.aUllr = true;
  const double ullr[4] = {-500000, 5300000, -336000, 5136000};
  std::copy(ullr, ullr + 4, o.ullr);
  o.verticalOffset = -0.5;
  hfpack::PackResult pr;
  std::string error;
  ASSERT_TRUE(hfpack::pack(o, pr, error)) << error;
  EXPECT_EQ(fileBytes(dir / "cli.hfa"), fileBytes(dir / "api.hfa"));
  r = runCmd("verify " + (dir / "cli.hfa") + " -q --source " + src +
             " --a_srs EPSG:32610 --a_ullr -500000 5300000 -336000 5136000 --threads 2", dir);
  EXPECT_EQ(r.status, 0) << r.err;
  r = runCmd("--help", dir);
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(r.err.empty()) << r.err;
  EXPECT_NE(r.out.find("--a_ullr ULX ULY LRX LRY"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("The list of\n  rasters ends at the next option"), std::string::npos) << r.out;  // the footer
}

TEST(HfpackCli, BadInputs) {
  if (!haveDem("zion_srtm.tif")) GTEST_SKIP() << "no shared DEMs";
  TempDir dir;
  const std::string out = " -o " + (dir / "o.hfa");
  const std::vector<std::string> all = {"text.tif", "void.tif", "complex.tif", "huge.vrt",
                                        "top.tif", "bottom.tif", "mosaic.vrt"};
  expectError(runCmd((dir / "nope.tif") + out, dir), "No such file", dir, all);
  { std::ofstream(dir / "text.tif") << "this is not a raster\n"; }
  expectError(runCmd((dir / "text.tif") + out, dir), "not a raster format", dir, all);
  // No valid sample: every sample is nodata.
  {
    GDALAllRegister();
    GDALDatasetH ds = GDALCreate(GDALGetDriverByName("GTiff"), (dir / "void.tif").c_str(), 40, 30, 1, GDT_Int16, nullptr);
    GDALRasterBandH b = GDALGetRasterBand(ds, 1);
    GDALSetRasterNoDataValue(b, -32768);
    GDALFillRaster(b, -32768, 0);
    GDALClose(ds);
    ds = GDALCreate(GDALGetDriverByName("GTiff"), (dir / "complex.tif").c_str(), 8, 8, 1, GDT_CInt16, nullptr);
    GDALClose(ds);
  }
  expectError(runCmd((dir / "void.tif") + out, dir), "no valid sample", dir, all);
  expectError(runCmd((dir / "complex.tif") + out, dir), "unsupported data type", dir, all);
  // Absurd size: a VRT that claims 100 million samples per side.
  {
    std::ofstream(dir / "huge.vrt") << "<VRTDataset rasterXSize=\"100000000\" rasterYSize=\"100000000\">"
                                       "<VRTRasterBand dataType=\"Int16\" band=\"1\"/></VRTDataset>\n";
  }
  expectError(runCmd((dir / "huge.vrt") + out, dir), "absurd", dir, all);
  // Read error midway: a mosaic whose second source disappears after the VRT was written.
  translate(kDem + "/zion_srtm.tif", dir / "top.tif", {"-srcwin", "0", "0", "465", "300"});
  translate(kDem + "/zion_srtm.tif", dir / "bottom.tif", {"-srcwin", "0", "300", "465", "157"});
  {
    GDALDatasetH parts[2] = {GDALOpen((dir / "top.tif").c_str(), GA_ReadOnly),
                             GDALOpen((dir / "bottom.tif").c_str(), GA_ReadOnly)};
    GDALDatasetH vrt = GDALBuildVRT((dir / "mosaic.vrt").c_str(), 2, parts, nullptr, nullptr, nullptr);
    GDALClose(vrt);
    GDALClose(parts[0]);
    GDALClose(parts[1]);
  }
  { std::ofstream(dir / "bottom.tif", std::ios::trunc) << "gone"; }
  expectError(runCmd((dir / "mosaic.vrt") + out, dir), "read failed", dir, all);
  // Output folder missing.
  expectError(runCmd(kDem + "/zion_srtm.tif -o " + (dir / "no/such/dir.hfa"), dir), "temporary", dir, all);
}

// --device cuda never fails for want of a device: either the GPU encodes (and the archive is
// byte for byte the CPU's) or a note says the CPU did.
TEST(Hfpack, DeviceCudaIsByteIdenticalOrFallsBack) {
  if (!haveDem("N36W118.hgt")) GTEST_SKIP() << "no shared DEMs";
  TempDir dir;
  std::string error;
  hfpack::PackResult cpu, gpu;
  hfpack::PackOptions o = packOptions({kDem + "/N36W118.hgt"}, dir / "cpu.hfa");
  ASSERT_TRUE(hfpack::pack(o, cpu, error)) << error;
  EXPECT_EQ(cpu.device, "cpu");
  o.output = dir / "cuda.hfa";
  o.device = "cuda";
  o.gpuBatch = 50;  // several batches, one spanning levels
  ASSERT_TRUE(hfpack::pack(o, gpu, error)) << error;
  EXPECT_EQ(fileBytes(dir / "cpu.hfa"), fileBytes(dir / "cuda.hfa")) << "device " << gpu.device;
  // rbuc and raw never run on the GPU: a note, the CPU, success.
  hfpack::PackResult r;
  o.codec = hfa::Codec::HfpacRbuc;
  o.output = dir / "rbuc.hfa";
  ASSERT_TRUE(hfpack::pack(o, r, error)) << error;
  EXPECT_EQ(r.device, "cpu");
  EXPECT_NE(r.deviceNote.find("2DRBUC"), std::string::npos) << r.deviceNote;
  if (gpu.device != "cuda") {
    EXPECT_NE(gpu.deviceNote.find("encoding on the CPU"), std::string::npos) << gpu.deviceNote;
    GTEST_SKIP() << "no GPU encoding (CPU fallback checked): " << gpu.deviceNote;
  }
  EXPECT_GE(gpu.gpuBatches, 3u);
}

TEST(HfpackCli, DeviceCudaFallbackIsANoteNotAnError) {
  if (!haveDem("zion_srtm.tif")) GTEST_SKIP() << "no shared DEMs";
  TempDir dir;
  const CmdResult r = runCmd(kDem + "/zion_srtm.tif -q --codec hfpac+rbuc --device cuda -o " + (dir / "z.hfa"), dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("Note: --device cuda: the GPU encoder has no 2DRBUC"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("encoding on cpu"), std::string::npos) << r.out;
}

// An .hfr dump (what the GDAL-free build on the GPU machine reads) packs into the same tiles as
// its GDAL source, with the same georeferencing (the dump carries it); a dump of a Dem without
// georeferencing has the plain 64-byte header and packs without it.
TEST(Hfpack, HfrInputPacksLikeItsSource) {
  if (!haveDem("SainteHelens.dem")) GTEST_SKIP() << "no shared DEMs";
  TempDir dir;
  std::string error;
  demio::Dem dem;
  ASSERT_TRUE(demio::readDem(kDem + "/SainteHelens.dem", dem, error)) << error;
  ASSERT_TRUE(demio::writeHfr(dir / "sh.hfr", dem, error)) << error;
  hfpack::PackResult pr;
  ASSERT_TRUE(hfpack::pack(packOptions({kDem + "/SainteHelens.dem"}, dir / "a.hfa"), pr, error)) << error;
  ASSERT_TRUE(hfpack::pack(packOptions({dir / "sh.hfr"}, dir / "b.hfa"), pr, error)) << error;
  hfa::ArchiveReader a, b;
  ASSERT_TRUE(a.open(dir / "a.hfa", error)) << error;
  ASSERT_TRUE(b.open(dir / "b.hfa", error)) << error;
  EXPECT_FALSE(b.header().crsWkt.empty());
  EXPECT_EQ(a.header().crsWkt, b.header().crsWkt);
  EXPECT_EQ(a.header().flags, b.header().flags);
  EXPECT_TRUE(std::equal(a.header().geoTransform, a.header().geoTransform + 6, b.header().geoTransform));
  EXPECT_EQ(a.header().spacingX, b.header().spacingX);
  EXPECT_EQ(a.header().spacingY, b.header().spacingY);
  EXPECT_EQ(a.header().verticalUnits, b.header().verticalUnits);
  EXPECT_EQ(a.header().filledSamples, b.header().filledSamples);
  ASSERT_EQ(a.tiles().size(), b.tiles().size());
  for (size_t i = 0; i < a.tiles().size(); ++i) {
    EXPECT_EQ(a.tiles()[i].crc, b.tiles()[i].crc) << i;
    EXPECT_EQ(a.tiles()[i].lodError, b.tiles()[i].lodError) << i;
  }
  hfpack::VerifyOptions vo;
  vo.archive = dir / "b.hfa";
  vo.sources = {dir / "sh.hfr"};
  vo.out = nullptr;
  hfpack::VerifyResult vr;
  ASSERT_TRUE(hfpack::verify(vo, vr, error)) << error;
  EXPECT_TRUE(hfpack::ok(vr));
  EXPECT_GT(vr.comparedSamples, 0u);
  // One .hfr only: no mosaics with it, no reprojection.
  hfpack::PackOptions o = packOptions({dir / "sh.hfr", kDem + "/SainteHelens.dem"}, dir / "c.hfa");
  EXPECT_FALSE(hfpack::pack(o, pr, error));
  EXPECT_NE(error.find("mosaicked"), std::string::npos) << error;
  o = packOptions({dir / "sh.hfr"}, dir / "c.hfa");
  o.tSrs = "EPSG:4326";
  EXPECT_FALSE(hfpack::pack(o, pr, error));
  EXPECT_NE(error.find("georeferencing"), std::string::npos) << error;
  EXPECT_FALSE(fs::exists(dir / "c.hfa"));
  // Without georeferencing: the original 64-byte header, sample-unit spacing.
  dem.hasGeoTransform = false;
  dem.projectionWkt.clear();
  dem.verticalUnits.clear();
  ASSERT_TRUE(demio::writeHfr(dir / "plain.hfr", dem, error)) << error;
  EXPECT_EQ(fs::file_size(dir / "plain.hfr"), 64u + 2u * dem.samples.size());
  ASSERT_TRUE(hfpack::pack(packOptions({dir / "plain.hfr"}, dir / "d.hfa"), pr, error)) << error;
  hfa::ArchiveReader d;
  ASSERT_TRUE(d.open(dir / "d.hfa", error)) << error;
  EXPECT_TRUE(d.header().crsWkt.empty());
  EXPECT_EQ(d.header().flags & hfa::kFlagGeoTransform, 0u);
  EXPECT_EQ(d.header().spacingX, 1.0);
}

TEST(HfpackCli, FullDiskLeavesNothingBehind) {
  if (!haveDem("N36W119.hgt")) GTEST_SKIP() << "no shared DEMs";
  TempDir dir;
  // A 64 KiB file size limit: the writer gets EFBIG (hfpack ignores SIGXFSZ) like ENOSPC.
  const CmdResult r = runCmd(kDem + "/N36W119.hgt -q -o " + (dir / "big.hfa"), dir, "ulimit -f 64; ");
  expectError(r, "writing", dir);
}

TEST(HfpackCli, PackInfoVerify) {
  if (!haveDem("zion_srtm.tif")) GTEST_SKIP() << "no shared DEMs";
  TempDir dir;
  const std::string a = dir / "z.hfa";
  CmdResult r = runCmd(kDem + "/zion_srtm.tif -q --threads 2 -o " + a, dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("points/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ratio"), std::string::npos) << r.out;
  r = runCmd("info " + a, dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("b histogram"), std::string::npos) << r.out;
  r = runCmd("verify " + a + " -q --source " + kDem + "/zion_srtm.tif", dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("lossless"), std::string::npos) << r.out;
  // A flipped payload byte: verify names the tile and fails.
  {
    std::fstream f(a, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(0, std::ios::end);
    const auto size = f.tellg();
    f.seekp(size - std::streamoff(100));
    f.put('\x5a');
  }
  r = runCmd("verify -q " + a, dir);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("tile (L"), std::string::npos) << r.out;
  // Truncated: info fails with one line naming the tile.
  fs::resize_file(a, fs::file_size(a) - 5000);
  r = runCmd("info " + a, dir);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("truncated"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tile (L"), std::string::npos) << r.err;
}

#endif  // HFPACK_GDAL

// ---- hfpack transcode (synthetic .hfr sources: built with and without GDAL) ----

// A w x h raster as an .hfr: hills, ridges and a little noise, georeferenced (UTM, 10 m), with a
// block of nodata (Int16 -32768) when `voids`, quantised (as a float source would be) when
// `quantised`.
std::string syntheticHfr(const TempDir& dir, const std::string& name, int w, int h, hfpac::SampleType type,
                         bool voids, bool quantised) {
  demio::Dem d;
  d.width = w;
  d.height = h;
  d.type = type;
  d.samples.resize(size_t(w) * size_t(h));
  uint64_t state = 0x1234567;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      const double v = 800 + 300 * std::sin(x * 0.05) * std::cos(y * 0.031) + 120 * std::sin((x + 2 * y) * 0.013) +
                       double((state >> 60) & 7);
      d.samples[size_t(y) * size_t(w) + size_t(x)] =
          type == hfpac::SampleType::Int16 ? uint16_t(int16_t(v - 600)) : uint16_t(v);
    }
  if (voids) {
    d.hasNodata = true;
    d.nodata = -32768;
    d.nodataInSamples = true;
    d.nodataSample = 0x8000;
    for (int y = h / 3; y < h / 3 + 40; ++y)
      for (int x = w / 4; x < w / 4 + 70; ++x) d.samples[size_t(y) * size_t(w) + size_t(x)] = 0x8000;
    d.nodataCount = 40 * 70;
  }
  if (quantised) {
    d.quant.applied = true;
    d.quant.step = 0.25;
    d.quant.offset = 100;
    d.quant.maxError = 0.125;
  }
  d.hasGeoTransform = true;
  const double gt[6] = {500000, 10, 0, 4100000, 0, -10};
  std::copy(gt, gt + 6, d.geoTransform);
  d.projectionWkt =
      "PROJCS[\"WGS 84 / UTM zone 11N\",GEOGCS[\"WGS 84\",DATUM[\"WGS_1984\",SPHEROID[\"WGS 84\",6378137,"
      "298.257223563]],PRIMEM[\"Greenwich\",0],UNIT[\"degree\",0.0174532925199433]],"
      "PROJECTION[\"Transverse_Mercator\"],PARAMETER[\"central_meridian\",-117],UNIT[\"metre\",1],"
      "AUTHORITY[\"EPSG\",\"32611\"]]";
  d.verticalUnits = "m";
  std::string error;
  const std::string path = dir / name;
  EXPECT_TRUE(demio::writeHfr(path, d, error)) << error;
  return path;
}

// What transcode promises, checked independently of hfpack::sameContent: the same header but
// for codec and codecOptions, the same index but for codec, offsets, sizes and checksums, every
// tile decoding to the same samples, and b's tiles all in b's codec.
void expectSameContent(const std::string& pa, const std::string& pb) {
  hfa::ArchiveReader a, b;
  std::string error;
  ASSERT_TRUE(a.open(pa, error)) << error;
  ASSERT_TRUE(b.open(pb, error)) << error;
  const hfa::Header &x = a.header(), &y = b.header();
  EXPECT_EQ(x.flags, y.flags);
  EXPECT_EQ(x.tileLog, y.tileLog);
  EXPECT_EQ(x.levels, y.levels);
  EXPECT_EQ(x.sampleType, y.sampleType);
  EXPECT_EQ(x.width, y.width);
  EXPECT_EQ(x.height, y.height);
  EXPECT_EQ(x.nodata, y.nodata);
  EXPECT_TRUE(std::equal(x.geoTransform, x.geoTransform + 6, y.geoTransform));
  EXPECT_EQ(x.spacingX, y.spacingX);
  EXPECT_EQ(x.spacingY, y.spacingY);
  EXPECT_EQ(x.verticalScale, y.verticalScale);
  EXPECT_EQ(x.verticalOffset, y.verticalOffset);
  EXPECT_EQ(x.quantError, y.quantError);
  EXPECT_EQ(x.filledSamples, y.filledSamples);
  EXPECT_EQ(x.sourceValidSamples, y.sourceValidSamples);
  EXPECT_EQ(x.crsWkt, y.crsWkt);
  EXPECT_EQ(x.verticalUnits, y.verticalUnits);
  ASSERT_EQ(a.tiles().size(), b.tiles().size());
  const size_t n = size_t(x.tileSize()) * size_t(x.tileSize());
  std::vector<uint16_t> sa(n), sb(n);
  for (size_t i = 0; i < a.tiles().size(); ++i) {
    const hfa::TileEntry &e = a.tiles()[i], &f = b.tiles()[i];
    EXPECT_TRUE(e.level == f.level && e.x == f.x && e.y == f.y && e.flags == f.flags && e.minSample == f.minSample &&
                e.maxSample == f.maxSample && e.filled == f.filled && e.lodError == f.lodError)
        << pb << " " << a.tileName(i);
    if (y.codec == hfa::Codec::Auto)
      EXPECT_TRUE(f.codec == hfa::Codec::Hfpac || f.codec == hfa::Codec::Hfan) << pb << " " << b.tileName(i);
    else
      EXPECT_EQ(f.codec, y.codec) << pb << " " << b.tileName(i);
    ASSERT_TRUE(a.decodeTile(i, sa.data(), error)) << error;
    ASSERT_TRUE(b.decodeTile(i, sb.data(), error)) << error;
    ASSERT_EQ(sa, sb) << pb << " " << a.tileName(i);
  }
}

// An .hfr that carries a CRS packs with the same spacing in both builds (without GDAL, pack reads
// the WKT itself): projected in metres, geographic in degrees (metres at the centre latitude).
TEST(Hfpack, HfrGeoreferencingGivesMetreSpacing) {
  TempDir dir;
  std::string error;
  hfpack::PackResult pr;
  const std::string utm = syntheticHfr(dir, "utm.hfr", 300, 200, hfpac::SampleType::UInt16, false, false);
  ASSERT_TRUE(hfpack::pack(packOptions({utm}, dir / "utm.hfa"), pr, error)) << error;
  hfa::ArchiveReader r;
  ASSERT_TRUE(r.open(dir / "utm.hfa", error)) << error;
  EXPECT_EQ(r.header().flags & (hfa::kFlagSpacingKnown | hfa::kFlagGeographic), hfa::kFlagSpacingKnown);
  EXPECT_EQ(r.header().spacingX, 10.0);
  EXPECT_EQ(r.header().verticalUnits, "m");
  demio::Dem d;
  ASSERT_TRUE(demio::readHfr(utm, d, error)) << error;
  d.projectionWkt =
      "GEOGCS[\"WGS 84\",DATUM[\"WGS_1984\",SPHEROID[\"WGS 84\",6378137,298.257223563]],PRIMEM[\"Greenwich\",0],"
      "UNIT[\"degree\",0.0174532925199433,AUTHORITY[\"EPSG\",\"9122\"]],AXIS[\"Latitude\",NORTH],"
      "AXIS[\"Longitude\",EAST],AUTHORITY[\"EPSG\",\"4326\"]]";
  const double gt[6] = {-118.0, 1.0 / 1200, 0, 37.0, 0, -1.0 / 1200};  // 3" SRTM cells at 37 N
  std::copy(gt, gt + 6, d.geoTransform);
  ASSERT_TRUE(demio::writeHfr(dir / "geo.hfr", d, error)) << error;
  ASSERT_TRUE(hfpack::pack(packOptions({dir / "geo.hfr"}, dir / "geo.hfa"), pr, error)) << error;
  ASSERT_TRUE(r.open(dir / "geo.hfa", error)) << error;
  EXPECT_EQ(r.header().flags & (hfa::kFlagSpacingKnown | hfa::kFlagGeographic),
            hfa::kFlagSpacingKnown | hfa::kFlagGeographic);
  EXPECT_NEAR(r.header().spacingX, 74.3, 0.2);  // 1/1200 degree at 36.92 N (the centre)
  EXPECT_NEAR(r.header().spacingY, 92.5, 0.2);
}

hfpack::TranscodeOptions transcodeOptions(const std::string& in, const std::string& out, hfa::Codec codec) {
  hfpack::TranscodeOptions o;
  o.input = in;
  o.output = out;
  o.codec = codec;
  o.threads = 2;
  o.verify = true;
  o.out = nullptr;
  return o;
}

// hfpac -> raw -> hfpac and hfpac -> hfpac+rbuc -> hfpac: the same content at every step, and
// back in hfpac (the input's options) the input byte for byte. Three sources: georeferenced
// UInt16, Int16 with voids kept (masked in the codec), and quantised with voids filled.
TEST(HfpackTranscode, RoundTripsRestoreTheArchive) {
  TempDir dir;
  struct Case {
    const char* name;
    hfpac::SampleType type;
    bool voids, quantised, fill;
  } cases[] = {{"plain", hfpac::SampleType::UInt16, false, false, true},
               {"keep", hfpac::SampleType::Int16, true, false, false},
               {"quant", hfpac::SampleType::UInt16, true, true, true}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string stem = dir / c.name;
    const std::string src = syntheticHfr(dir, std::string(c.name) + ".hfr", 600, 450, c.type, c.voids, c.quantised);
    hfpack::PackOptions po = packOptions({src}, stem + ".hfa");
    po.patch = 65;
    po.fillNodata = c.fill;
    hfpack::PackResult pr;
    std::string error;
    ASSERT_TRUE(hfpack::pack(po, pr, error)) << error;
    hfa::ArchiveReader in;
    ASSERT_TRUE(in.open(stem + ".hfa", error)) << error;
    EXPECT_GT(in.header().levels, 2);
    EXPECT_EQ((in.header().flags & hfa::kFlagNodataKept) != 0, c.voids && !c.fill);
    EXPECT_EQ((in.header().flags & hfa::kFlagQuantised) != 0, c.quantised);
    in.close();

    const std::pair<hfa::Codec, const char*> via[] = {{hfa::Codec::Raw, ".raw.hfa"},
                                                      {hfa::Codec::HfpacRbuc, ".rbuc.hfa"},
                                                      {hfa::Codec::Hfan, ".hfan.hfa"},
                                                      {hfa::Codec::Auto, ".auto.hfa"}};
    uint64_t hfanPayload = 0;
    for (const auto& v : via) {
      hfpack::TranscodeResult tr;
      ASSERT_TRUE(hfpack::transcode(transcodeOptions(stem + ".hfa", stem + v.second, v.first), tr, error)) << error;
      EXPECT_TRUE(tr.verified);
      EXPECT_EQ(tr.inputCodec, hfa::Codec::Hfpac);
      EXPECT_EQ(tr.tiles, pr.tiles);
      EXPECT_EQ(tr.device, "cpu");
      expectSameContent(stem + ".hfa", stem + v.second);
      hfa::ArchiveReader r;
      ASSERT_TRUE(r.open(stem + v.second, error)) << error;
      EXPECT_EQ(r.header().codec, v.first);
      const char* options = v.first == hfa::Codec::Raw    ? ""
                            : v.first == hfa::Codec::Hfan ? "lanes=auto"
                            : v.first == hfa::Codec::Auto ? "segment=9 bits=auto lanes=auto"
                                                          : "segment=9 rbuc";
      EXPECT_EQ(r.header().codecOptions, options);
      if (v.first == hfa::Codec::Raw) {
        EXPECT_EQ(tr.payloadBytes, tr.rawBytes);
      }
      uint64_t hfanTiles = 0;
      for (const hfa::TileEntry& e : r.tiles()) hfanTiles += e.codec == hfa::Codec::Hfan;
      EXPECT_EQ(hfanTiles, tr.hfanTiles);
      if (v.first == hfa::Codec::Hfan) {
        EXPECT_EQ(hfanTiles, tr.tiles);
        hfanPayload = tr.payloadBytes;
      }
      if (v.first == hfa::Codec::Auto) {  // the per-tile smaller: below both pure archives
        EXPECT_LE(tr.payloadBytes, tr.inputPayloadBytes);
        EXPECT_LE(tr.payloadBytes, hfanPayload);
        EXPECT_GT(hfanTiles, 0u);
      }
      const std::string back = stem + v.second + ".hfpac.hfa";
      ASSERT_TRUE(hfpack::transcode(transcodeOptions(stem + v.second, back, hfa::Codec::Hfpac), tr, error)) << error;
      expectSameContent(stem + v.second, back);
      EXPECT_EQ(fileBytes(stem + ".hfa"), fileBytes(back)) << back;
    }
    // The same codec with other options: the same content, the options recorded.
    hfpack::TranscodeOptions same = transcodeOptions(stem + ".hfa", stem + ".s17.hfa", hfa::Codec::Hfpac);
    same.segment = 17;
    same.bits = 6;
    hfpack::TranscodeResult tr;
    ASSERT_TRUE(hfpack::transcode(same, tr, error)) << error;
    expectSameContent(stem + ".hfa", stem + ".s17.hfa");
    hfa::ArchiveReader r;
    ASSERT_TRUE(r.open(stem + ".s17.hfa", error)) << error;
    EXPECT_EQ(r.header().codecOptions, "segment=17 bits=6");
  }
}

// --device cuda: byte-identical to the CPU's archive on a GPU, else a note and the CPU.
TEST(HfpackTranscode, DeviceCudaIsByteIdenticalOrFallsBack) {
  TempDir dir;
  const std::string src = syntheticHfr(dir, "s.hfr", 520, 400, hfpac::SampleType::UInt16, false, false);
  hfpack::PackResult pr;
  std::string error;
  hfpack::PackOptions po = packOptions({src}, dir / "raw.hfa");
  po.codec = hfa::Codec::Raw;
  ASSERT_TRUE(hfpack::pack(po, pr, error)) << error;
  hfpack::TranscodeResult cpu, gpu;
  ASSERT_TRUE(hfpack::transcode(transcodeOptions(dir / "raw.hfa", dir / "cpu.hfa", hfa::Codec::Hfpac), cpu, error))
      << error;
  hfpack::TranscodeOptions o = transcodeOptions(dir / "raw.hfa", dir / "cuda.hfa", hfa::Codec::Hfpac);
  o.device = "cuda";
  o.gpuBatch = 7;  // several batches
  ASSERT_TRUE(hfpack::transcode(o, gpu, error)) << error;
  EXPECT_EQ(fileBytes(dir / "cpu.hfa"), fileBytes(dir / "cuda.hfa")) << "device " << gpu.device;
  o.codec = hfa::Codec::HfpacRbuc;
  o.output = dir / "rbuc.hfa";
  hfpack::TranscodeResult r;
  ASSERT_TRUE(hfpack::transcode(o, r, error)) << error;
  EXPECT_EQ(r.device, "cpu");
  EXPECT_NE(r.deviceNote.find("2DRBUC"), std::string::npos) << r.deviceNote;
  if (gpu.device != "cuda") {
    EXPECT_NE(gpu.deviceNote.find("encoding on the CPU"), std::string::npos) << gpu.deviceNote;
    GTEST_SKIP() << "no GPU encoding (CPU fallback checked): " << gpu.deviceNote;
  }
  EXPECT_GE(gpu.gpuBatches, 3u);
}

TEST(HfpackTranscode, CommandLine) {
  TempDir dir;
  const std::string src = syntheticHfr(dir, "s.hfr", 300, 200, hfpac::SampleType::Int16, true, false);
  const std::string a = dir / "a.hfa";
  CmdResult r = runCmd(src + " -q --patch 65 -o " + a, dir);
  ASSERT_EQ(r.status, 0) << r.err;
  r = runCmd("transcode " + a + " " + (dir / "b.hfa") + " --codec raw --verify --threads 2 -q", dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  EXPECT_NE(r.out.find("transcoded from hfpac to raw"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("verified"), std::string::npos) << r.out;
  r = runCmd("transcode " + (dir / "b.hfa") + " -o " + (dir / "c.hfa") + " --codec hfpac -q", dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(fileBytes(a), fileBytes(dir / "c.hfa"));
  r = runCmd("--help", dir);
  EXPECT_NE(r.out.find("hfpack transcode IN.hfa OUT.hfa --codec"), std::string::npos) << r.out;

  // Bad inputs: exit 1, one "Error:" line, nothing left behind.
  const std::vector<std::string> keep = {"s.hfr", "a.hfa", "b.hfa", "c.hfa", "text.hfa", "bad.hfa", "short.hfa"};
  const std::string out = " " + (dir / "o.hfa");
  expectError(runCmd("transcode " + (dir / "missing.hfa") + out + " --codec raw", dir), "No such file", dir, keep);
  { std::ofstream(dir / "text.hfa") << "this is not an archive, but it is longer than the header would be. " << std::string(300, 'x'); }
  expectError(runCmd("transcode " + (dir / "text.hfa") + out + " --codec raw", dir), "not an hfpack archive", dir, keep);
  fs::copy_file(a, dir / "short.hfa");
  fs::resize_file(dir / "short.hfa", fs::file_size(a) - 3000);
  expectError(runCmd("transcode " + (dir / "short.hfa") + out + " --codec raw", dir), "truncated", dir, keep);
  fs::copy_file(a, dir / "bad.hfa");
  {
    std::fstream f(dir / "bad.hfa", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(std::streamoff(fs::file_size(a) - 100));
    f.put('\x5a');
  }
  expectError(runCmd("transcode " + (dir / "bad.hfa") + out + " --codec raw", dir), "checksum mismatch", dir, keep);
  expectError(runCmd("transcode " + a + " " + a + " --codec raw", dir), "is the input archive", dir, keep);
  expectError(runCmd("transcode " + a + " " + dir.path.string() + "/./a.hfa --codec raw", dir), "is the input archive",
              dir, keep);
  expectError(runCmd("transcode " + a + out + " --codec zip", dir), "--codec: zip not in", dir, keep);
  expectError(runCmd("transcode " + a + out, dir), "needs --codec", dir, keep);
  expectError(runCmd("transcode " + a + " --codec raw", dir), "takes IN.hfa OUT.hfa", dir, keep);
  expectError(runCmd("transcode " + a + out + " --codec raw --patch 129", dir), "--patch is not an option", dir, keep);
  expectError(runCmd("transcode " + a + out + " --codec raw --device tpu", dir), "--device: tpu not in", dir, keep);
  expectError(runCmd("transcode " + a + " " + (dir / "no/such/dir.hfa") + " --codec raw", dir), "temporary", dir, keep);
  expectError(runCmd(src + " -o " + (dir / "p.hfa") + " --verify", dir), "--verify", dir, keep);
}

#ifdef HFTERRAIN_BINARY
// hfterrain OUT.hfr: the sample terrain as an .hfr with the GeoTIFF's georeferencing (UTM 5N,
// 30 m, north-west corner E 200000 N 2200000) and unit, which hfpack packs as 30 m spacing in
// both builds. With GDAL the .tif of the same seed holds the same heights; without, a .tif
// output is one error line.
TEST(Hfterrain, WritesAGeoreferencedHfr) {
  TempDir dir;
  const std::string t = dir / "t.hfr";
  const std::string cmd = std::string(HFTERRAIN_BINARY) + " " + t + " --size 257 --seed 3 -q 2>" + (dir / "err.txt");
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_EQ(fs::file_size(dir / "err.txt"), 0u);
  demio::Dem d;
  std::string error;
  ASSERT_TRUE(demio::readHfr(t, d, error)) << error;
  EXPECT_EQ(d.width, 257);
  EXPECT_EQ(d.height, 257);
  EXPECT_EQ(d.type, hfpac::SampleType::UInt16);
  EXPECT_FALSE(d.hasNodata);
  ASSERT_TRUE(d.hasGeoTransform);
  const double gt[6] = {200000, 30, 0, 2200000, 0, -30};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(d.geoTransform[i], gt[i]) << i;
  EXPECT_NE(d.projectionWkt.find("UTM zone 5N"), std::string::npos) << d.projectionWkt;
  EXPECT_NE(d.projectionWkt.find("\"32605\"]]"), std::string::npos) << d.projectionWkt;
  EXPECT_EQ(d.verticalUnits, "m");
  EXPECT_EQ(*std::min_element(d.samples.begin(), d.samples.end()), 0);     // the sea
  EXPECT_EQ(*std::max_element(d.samples.begin(), d.samples.end()), 4000);  // --max-height
  for (const auto& e : fs::directory_iterator(dir.path)) {
    const std::string name = e.path().filename().string();
    EXPECT_TRUE(name == "t.hfr" || name == "err.txt") << "left behind: " << name;
  }
  hfpack::PackResult pr;
  ASSERT_TRUE(hfpack::pack(packOptions({t}, dir / "t.hfa"), pr, error)) << error;
  hfa::ArchiveReader r;
  ASSERT_TRUE(r.open(dir / "t.hfa", error)) << error;
  EXPECT_EQ(r.header().flags & (hfa::kFlagGeoTransform | hfa::kFlagSpacingKnown | hfa::kFlagGeographic),
            hfa::kFlagGeoTransform | hfa::kFlagSpacingKnown);
  EXPECT_EQ(r.header().spacingX, 30.0);
  EXPECT_EQ(r.header().spacingY, 30.0);
  EXPECT_EQ(r.header().verticalUnits, "m");
  EXPECT_EQ(r.header().crsWkt, d.projectionWkt);
#ifdef HFPACK_GDAL
  // The GeoTIFF of the same seed: the same heights, the same CRS.
  const std::string tif = dir / "t.tif";
  ASSERT_EQ(std::system((std::string(HFTERRAIN_BINARY) + " " + tif + " --size 257 --seed 3 -q").c_str()), 0);
  demio::Dem g;
  ASSERT_TRUE(demio::readDem(tif, g, error)) << error;
  EXPECT_EQ(g.samples, d.samples);
  EXPECT_TRUE(std::equal(g.geoTransform, g.geoTransform + 6, d.geoTransform));
  EXPECT_EQ(g.verticalUnits, "m");
  OGRSpatialReferenceH s1 = OSRNewSpatialReference(g.projectionWkt.c_str());
  OGRSpatialReferenceH s2 = OSRNewSpatialReference(d.projectionWkt.c_str());
  ASSERT_TRUE(s1 && s2);
  EXPECT_TRUE(OSRIsSame(s1, s2));
  OSRDestroySpatialReference(s1);
  OSRDestroySpatialReference(s2);
#else
  const std::string cmd2 = std::string(HFTERRAIN_BINARY) + " " + (dir / "t.tif") + " --size 257 -q 2>" + (dir / "err.txt");
  const int rc = std::system(cmd2.c_str());
  EXPECT_EQ(WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, 1);
  std::ifstream f(dir / "err.txt");
  std::string line, rest;
  std::getline(f, line);
  EXPECT_EQ(line.rfind("Error: ", 0), 0u) << line;
  EXPECT_NE(line.find("built without GDAL; write .hfr"), std::string::npos) << line;
  EXPECT_FALSE(std::getline(f, rest)) << rest;
  EXPECT_FALSE(fs::exists(dir / "t.tif"));
#endif
}

// hfterrain --imagery: the terrain's shaded relief as a PPM, one pixel per sample (sea blue,
// land tinted and shaded), that hfpack drapes over the .hfr as unreferenced imagery (with GDAL:
// the PNM driver; without: stb_image); verify --imagery finds every tile where it belongs.
TEST(Hfterrain, ImageryIsTheTerrainsReliefAndPacks) {
  TempDir dir;
  const std::string t = dir / "t.hfr", ppm = dir / "t.ppm";
  const std::string cmd = std::string(HFTERRAIN_BINARY) + " " + t + " --size 257 --seed 3 --imagery " + ppm +
                          " -q 2>" + (dir / "err.txt");
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_EQ(fs::file_size(dir / "err.txt"), 0u);
  std::ifstream f(ppm, std::ios::binary);
  std::string magic;
  int w = 0, h = 0, maxval = 0;
  f >> magic >> w >> h >> maxval;
  f.get();
  ASSERT_EQ(magic, "P6");
  ASSERT_EQ(w, 257);
  ASSERT_EQ(h, 257);
  ASSERT_EQ(maxval, 255);
  std::vector<uint8_t> rgb(size_t(w) * size_t(h) * 3);
  ASSERT_TRUE(f.read(reinterpret_cast<char*>(rgb.data()), std::streamsize(rgb.size())));
  demio::Dem d;
  std::string error;
  ASSERT_TRUE(demio::readHfr(t, d, error)) << error;
  size_t sea = 0, land = 0, distinctLand = 0;
  std::vector<bool> seen(1 << 24);
  for (size_t i = 0; i < d.samples.size(); ++i) {
    const uint8_t* p = &rgb[i * 3];
    if (d.samples[i] == 0) {
      sea += p[0] == 28 && p[1] == 64 && p[2] == 110;  // relief.cpp's sea
    } else {
      ++land;
      const uint32_t key = uint32_t(p[0]) << 16 | uint32_t(p[1]) << 8 | p[2];
      distinctLand += !seen[key];
      seen[key] = true;
    }
  }
  EXPECT_EQ(sea, d.samples.size() - land);  // every sea sample is sea blue
  EXPECT_GT(land, d.samples.size() / 2);
  EXPECT_GT(distinctLand, 1000u);  // tinted and shaded, not flat
  for (const auto& e : fs::directory_iterator(dir.path)) {
    const std::string name = e.path().filename().string();
    EXPECT_TRUE(name == "t.hfr" || name == "t.ppm" || name == "err.txt") << "left behind: " << name;
  }
  hfpack::PackOptions o = packOptions({t}, dir / "t.hfa");
  o.imagery.inputs = {ppm};
  hfpack::PackResult pr;
  ASSERT_TRUE(hfpack::pack(o, pr, error)) << error;
  EXPECT_TRUE(pr.imageryPlan.unreferenced);
  hfa::ArchiveReader r;
  ASSERT_TRUE(r.open(dir / "t.hfa", error)) << error;
  ASSERT_TRUE(r.hasImagery());
  EXPECT_EQ(r.imagery().flags & hfa::kImageryUnreferenced, hfa::kImageryUnreferenced);
  EXPECT_EQ(r.imagery().finerLevels, 0);  // one pixel per sample: level 0 holds 1.9 texels per sample
  size_t heightTiles = 0;
  for (int L = 0; L < int(r.header().levels); ++L) heightTiles += size_t(r.header().tilesX(L)) * r.header().tilesY(L);
  EXPECT_EQ(r.imageryTiles().size(), heightTiles);
  hfpack::VerifyOptions vo;
  vo.archive = dir / "t.hfa";
  vo.imagery.inputs = {ppm};
  vo.out = nullptr;
  vo.threads = 2;
  hfpack::VerifyResult vr;
  ASSERT_TRUE(hfpack::verify(vo, vr, error)) << error;
  EXPECT_EQ(vr.imageryBadTiles, 0u);
  EXPECT_EQ(vr.imageryMismatches, 0u);
  EXPECT_EQ(vr.imageryCompared, vr.imageryTiles);
  EXPECT_GT(vr.imageryMinPsnr, 30.0);
}
// Interrupted packs leave nothing (issue 16): hfpack killed with SIGKILL at 20 random moments
// while it overwrites an archive; after each kill the output is either absent or the complete
// previous file (the writer renames a finished temporary file into place), and the next
// complete pack, once the leftovers are older than the 2 s a writer is given between creating
// and locking its temporary file (simulated: their times are set back), removes every
// temporary file the killed ones left.
// Runs `args` (writing `out`) once to the end, the reference, then 20 times killed with SIGKILL
// at random moments over the run's duration (half of them with no previous `out`): `out` is
// always the complete reference or absent, and the next complete run leaves no OUT.tmp.* file
// (the ones the kills left are aged past the writer's 2 s guard first).
void expectKillsLeaveTheOldFileOrNothing(std::vector<std::string> args, const fs::path& out, const fs::path& dir,
                                         unsigned seed) {
  auto readAll = [](const fs::path& f) {
    std::ifstream in(f, std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    return bytes.str();
  };
  auto run = [&](double killAfterSeconds) { return runMaybeKilled(args, killAfterSeconds); };
  const std::string prefix = out.filename().string() + ".tmp.";
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(run(-1), 0);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string reference = readAll(out);
  ASSERT_FALSE(reference.empty());
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> moment(0.0, seconds * 1.2);
  for (int k = 0; k < 20; ++k) {
    if (k == 10) fs::remove(out);  // half of the kills with no previous file
    run(moment(rng));
    if (fs::exists(out)) {
      EXPECT_EQ(readAll(out), reference) << "kill " << k << ": a partial file in place";
    }
  }
  size_t left = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().rfind(prefix, 0) != 0) continue;
    ++left;
    fs::last_write_time(e.path(), fs::file_time_type::clock::now() - std::chrono::minutes(1));
  }
  std::printf("[ kills    ] %s: 20 kills over %.2f s runs left %zu temporary files\n", out.filename().c_str(), seconds,
              left);
  ASSERT_EQ(run(-1), 0);
  EXPECT_EQ(readAll(out), reference);
  for (const auto& e : fs::directory_iterator(dir))
    EXPECT_EQ(e.path().filename().string().rfind(prefix, 0), std::string::npos) << e.path() << " left behind";
}

TEST(Hfpack, KilledAtAnyMomentLeavesTheOldArchiveOrNothing) {
  TempDir dir;
  const std::string terrain = dir / "t.hfr", out = dir / "out.hfa";
  ASSERT_EQ(std::system((std::string(HFTERRAIN_BINARY) + " " + terrain + " --size 1025 --seed 5 -q").c_str()), 0);
  expectKillsLeaveTheOldFileOrNothing({HFPACK_BINARY, terrain, "-o", out, "-q"}, out, dir.path, 7);
}

// The same for `hfpack transcode` (to raw: the largest output, the longest writes).
TEST(Hfpack, TranscodeKilledAtAnyMomentLeavesTheOldArchiveOrNothing) {
  TempDir dir;
  const std::string terrain = dir / "t.hfr", packed = dir / "packed.hfa", out = dir / "raw.hfa";
  ASSERT_EQ(std::system((std::string(HFTERRAIN_BINARY) + " " + terrain + " --size 1025 --seed 6 -q").c_str()), 0);
  ASSERT_EQ(std::system((std::string(HFPACK_BINARY) + " " + terrain + " -o " + packed + " -q").c_str()), 0);
  expectKillsLeaveTheOldFileOrNothing({HFPACK_BINARY, "transcode", packed, out, "--codec", "raw", "-q"}, out,
                                      dir.path, 8);
}

#endif  // HFTERRAIN_BINARY

#else  // HFPACK_SLOW

std::vector<std::string> allDems() {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(kDem, ec)) {
    const std::string ext = e.path().extension().string();
    if (ext == ".hgt" || ext == ".tif" || ext == ".png" || ext == ".jpg" || ext == ".nc" || ext == ".dem")
      files.push_back(e.path().filename().string());
  }
  std::sort(files.begin(), files.end());
  if (fs::exists(kDem + "/srtm3-sierra/sierra.vrt")) files.push_back("srtm3-sierra/sierra.vrt");
  return files;
}

TEST(HfpackSlow, EverySharedDemPacksAndVerifies) {
  const std::vector<std::string> dems = allDems();
  if (dems.empty()) GTEST_SKIP() << "no shared DEMs in " << kDem;
  TempDir dir;
  for (const std::string& dem : dems) {
    SCOPED_TRACE(dem);
    std::string stem = dem;
    std::replace(stem.begin(), stem.end(), '/', '_');
    packAndVerify({kDem + "/" + dem}, dir, stem);
    fs::remove(dir / (stem + ".hfpac.hfa"));
    fs::remove(dir / (stem + ".raw.hfa"));
  }
}

#endif

}  // namespace
