// hfpack_test.cpp - the packer (tools/hfpack): small real DEMs packed with hfpac and raw and
// verified against their source, identical raw/hfpac/hfpac+rbuc indexes, nodata fill/keep,
// quantised floats, .hfr inputs, --device cuda (byte-identical archives when a device is
// present, a CPU fallback with a note otherwise), bad inputs and bad command lines (exit
// status 1, one "Error:" line, no file left).
// Built twice: hf_hfpack_tests (fast) and, with HFPACK_SLOW, hf_hfpack_slow_tests (every DEM
// in HF_SHARED_DEM_DIR and the sierra mosaic, label "slow").
#include <gtest/gtest.h>

#include <gdal.h>
#include <gdal_utils.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "archive/archive.h"
#include "demio/hfr.h"
#include "hfpack.h"

#ifndef HF_SHARED_DEM_DIR
#error "HF_SHARED_DEM_DIR must name the shared DEM folder"
#endif

namespace {

namespace fs = std::filesystem;

const std::string kDem = HF_SHARED_DEM_DIR;

struct TempDir {
  fs::path path;
  TempDir() {
    static int n = 0;
    path = fs::temp_directory_path() / ("hf_hfpack_test_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

[[maybe_unused]] bool haveDem(const std::string& name) { return fs::exists(kDem + "/" + name); }

// gdal_translate SRC DST with extra arguments (GTiff unless -of is given).
[[maybe_unused]] void translate(const std::string& src, const std::string& dst, std::vector<std::string> args) {
  GDALAllRegister();
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  GDALTranslateOptions* opts = GDALTranslateOptionsNew(argv.data(), nullptr);
  ASSERT_NE(opts, nullptr);
  GDALDatasetH in = GDALOpen(src.c_str(), GA_ReadOnly);
  ASSERT_NE(in, nullptr) << src;
  GDALDatasetH out = GDALTranslate(dst.c_str(), in, opts, nullptr);
  ASSERT_NE(out, nullptr) << dst;
  GDALClose(out);
  GDALClose(in);
  GDALTranslateOptionsFree(opts);
}

[[maybe_unused]] hfpack::PackOptions packOptions(const std::vector<std::string>& inputs, const std::string& out) {
  hfpack::PackOptions o;
  o.inputs = inputs;
  o.output = out;
  o.out = nullptr;
  o.threads = 2;
  return o;
}

void packAndVerify(const std::vector<std::string>& inputs, const TempDir& dir, const std::string& stem,
                   hfpack::PackOptions base = hfpack::PackOptions()) {
  std::string error;
  std::vector<std::string> paths;
  const hfa::Codec codecs[] = {hfa::Codec::Hfpac, hfa::Codec::Raw, hfa::Codec::HfpacRbuc};
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
      EXPECT_EQ(y.codec, codecs[k]);
    }
  }
}

[[maybe_unused]] std::vector<uint8_t> fileBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

#ifndef HFPACK_SLOW

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

TEST(HfpackCli, BadCommandLines) {
  TempDir dir;
  const std::string src = kDem + "/zion_srtm.tif";
  const std::string out = " -o " + (dir / "o.hfa");
  expectError(runCmd("", dir), "no input", dir);
  expectError(runCmd(out, dir), "no input raster", dir);
  expectError(runCmd(src, dir), "no output", dir);
  expectError(runCmd(src + out + " --frobnicate", dir), "unknown option --frobnicate", dir);
  expectError(runCmd(src + out + " --patch", dir), "needs a value", dir);
  expectError(runCmd(src + out + " --patch 100", dir), "2^n + 1", dir);
  expectError(runCmd(src + out + " --patch abc", dir), "not an integer", dir);
  expectError(runCmd(src + out + " --segment 7", dir), "--segment 7", dir);
  expectError(runCmd(src + out + " --bits 17", dir), "--bits 17", dir);
  expectError(runCmd(src + out + " --codec zip", dir), "--codec zip", dir);
  expectError(runCmd(src + out + " --gpu-batch 0", dir), "--gpu-batch", dir);
  expectError(runCmd(src + out + " --device tpu", dir), "--device tpu", dir);
  expectError(runCmd(src + out + " --nodata maybe", dir), "--nodata maybe", dir);
  expectError(runCmd(src + out + " --vertical-scale -1", dir), "--vertical-scale", dir);
  expectError(runCmd(src + out + " --levels 9", dir), "--levels 9", dir);
  expectError(runCmd(src + out + " --t_srs NOT_A_CRS", dir), "--t_srs", dir);
  expectError(runCmd("info", dir), "one archive", dir);
  expectError(runCmd("info " + (dir / "missing.hfa"), dir), "No such file", dir);
  expectError(runCmd("verify", dir), "one archive", dir);
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
// its GDAL source; only the georeferencing differs (an .hfr has none).
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
  EXPECT_TRUE(b.header().crsWkt.empty());
  EXPECT_EQ(b.header().flags & hfa::kFlagGeoTransform, 0u);
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
