// `hfbench imagery` (tools/hfbench/imagery_bench.h): the benchmark function on small images (a
// synthetic one in memory, and with GDAL a 300x200 crop of the Puget Sound texture and a grey
// raster written here), its report, bad inputs (a non-Byte DEM, two bands, a missing file: one
// error naming the file, other inputs unaffected), and the command line with a missing file
// (exit 1, one "Error:" line). Figures are checked for sense (finite, PSNR > 20 dB, our cluster
// fit not worse than libsquish's), never timings. Label "hfbench".
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#if HF_TEST_GDAL
#include <gdal.h>
#include <gdal_utils.h>
#endif

#include "imagery_bench.h"
#include "test_files.h"

namespace {

namespace fs = std::filesystem;
using hf_test::TempDir;

const std::string kImagery = std::string(HF_SHARED_DEM_DIR) + "/../imagery";
const std::string kDem = HF_SHARED_DEM_DIR;

// Quick runs: every timed step once.
hfbench::ImageryBenchOptions quickOptions() {
  hfbench::ImageryBenchOptions o;
  o.threads = 2;
  o.minSeconds = 0;
  o.maxRuns = 1;
  o.batchTiles = 8;
  return o;
}

// Smooth colour ramps with some texture: a stand-in for imagery that JPEG and BC1 code well.
hfbench::RgbaImage synthetic(int w, int h) {
  hfbench::RgbaImage im;
  im.width = w;
  im.height = h;
  im.bands = 3;
  im.rgba.resize(size_t(w) * size_t(h) * 4);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      uint8_t* p = &im.rgba[(size_t(y) * size_t(w) + size_t(x)) * 4];
      const double t = std::sin(x * 0.05) * std::cos(y * 0.07);
      p[0] = uint8_t(std::lround(120 + 80 * t + 0.1 * x));
      p[1] = uint8_t(std::lround(90 + 60 * std::sin((x + y) * 0.03)));
      p[2] = uint8_t(std::lround(60 + 0.5 * y + ((x * 7 + y * 13) % 11)));
      p[3] = 255;
    }
  return im;
}

void expectSensible(const hfbench::ImageryResult& r, int w, int h) {
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_TRUE(r.error.empty());
  EXPECT_EQ(r.width, w);
  EXPECT_EQ(r.height, h);
  EXPECT_EQ(r.texels, uint64_t(w) * uint64_t(h));

  EXPECT_EQ(r.jpeg.quality, 90);
  EXPECT_GT(r.jpeg.bytes, 0u);
  EXPECT_NEAR(r.jpeg.bitsPerTexel, double(r.jpeg.bytes) * 8 / double(r.texels), 1e-9);
  EXPECT_TRUE(std::isfinite(r.jpeg.psnr));
  EXPECT_GT(r.jpeg.psnr, 20.0);
  EXPECT_GT(r.jpeg.encodeMpxS, 0.0);
  EXPECT_GT(r.jpeg.decodeMpxS, 0.0);
  EXPECT_GT(r.jpeg.encodeMpxSAllCores, 0.0);
  EXPECT_GT(r.jpeg.decodeMpxSAllCores, 0.0);
  EXPECT_EQ(r.jpeg.threads, 2);
  EXPECT_EQ(r.jpeg.strips, 2);
  EXPECT_GT(r.jpeg.stripBytes, 0u);

  const int per = himg::kTileContent;
  EXPECT_EQ(r.tiling.tilesX, (w + per - 1) / per);
  EXPECT_EQ(r.tiling.tilesY, (h + per - 1) / per);
  EXPECT_EQ(r.tiling.tiles, uint64_t(r.tiling.tilesX) * uint64_t(r.tiling.tilesY));
  EXPECT_GT(r.tiling.tablesBytes, 0u);
  EXPECT_EQ(r.tiling.tileBytesTotal, r.tiling.tileBytes + r.tiling.tablesBytes);
  EXPECT_EQ(r.tiling.unpaddedImageBytes, r.jpeg.bytes);
  EXPECT_GE(r.tiling.wholeImageBytes, r.jpeg.bytes);  // the level: the image padded to whole tiles
  EXPECT_DOUBLE_EQ(r.tiling.ratio, double(r.tiling.tileBytesTotal) / double(r.tiling.wholeImageBytes));
  EXPECT_TRUE(std::isfinite(r.tiling.ratio));
  EXPECT_GT(r.tiling.ratio, 0.0);
  EXPECT_TRUE(std::isfinite(r.tiling.psnr));
  EXPECT_GT(r.tiling.psnr, 20.0);

  const hfbench::Bc1Figures& b = r.bc1;
  EXPECT_EQ(b.windowWidth, std::min(w, 1024) / 4 * 4);
  EXPECT_EQ(b.windowHeight, std::min(h, 1024) / 4 * 4);
  const std::pair<const char*, const hfbench::Bc1Figure*> modes[] = {
      {"fast", &b.fast},
      {"quality", &b.quality},
      {"squish_range", &b.squishRange},
      {"squish_cluster", &b.squishCluster},
      {"squish_iterative", &b.squishIterative}};
  for (const auto& [name, f] : modes) {
    EXPECT_TRUE(std::isfinite(f->psnr)) << name;
    EXPECT_GT(f->psnr, 20.0) << name;
    EXPECT_GT(f->mtexelsS, 0.0) << name;
  }
  EXPECT_GE(b.quality.psnr, b.squishCluster.psnr - 0.1);
  EXPECT_TRUE(b.squishDecodersAgree);
  EXPECT_DOUBLE_EQ(b.qualityMinusSquishClusterDb(), b.quality.psnr - b.squishCluster.psnr);
  EXPECT_GT(b.fastSpeedupVsSquishRange(), 0.0);

  const hfbench::CpuAllCoresFigures& c = r.cpuAllCores;
  EXPECT_EQ(c.threads, 2);
  EXPECT_EQ(c.tiles, std::max<uint64_t>(8, r.tiling.tiles));
  EXPECT_GT(c.jpegDecodeMpxS, 0.0);
  EXPECT_GT(c.jpegEncodeMpxS, 0.0);
  // Without a device (CI) the GPU columns say why they are missing.
  if (!r.gpu.measured) {
    EXPECT_FALSE(r.gpu.note.empty());
  }
}

// The report holds every documented key (extras allowed).
void expectReportKeys(const std::string& json) {
  for (const char* key :
       {"\"benchmark\": \"imagery\"", "\"host\"", "\"command\": \"test command\"", "\"images\"",
        "\"input\"", "\"texels\"", "\"jpeg\"", "\"quality\"", "\"bits_per_texel\"", "\"encode_mpx_s\"",
        "\"decode_mpx_s\"", "\"encode_mpx_s_all_cores\"", "\"decode_mpx_s_all_cores\"", "\"threads\"",
        "\"psnr\"", "\"tiling\"", "\"tiles\"", "\"tile_bytes_total\"", "\"whole_image_bytes\"", "\"ratio\"",
        "\"bc1_window\"", "\"bc1\"", "\"fast\"", "\"squish_range\"", "\"squish_cluster\"",
        "\"squish_iterative\"", "\"mtexels_s\"", "\"quality_minus_squish_cluster_db\"",
        "\"fast_minus_squish_range_db\"", "\"fast_speedup_vs_squish_range\"", "\"cpu_all_cores\"",
        "\"jpeg_decode_mpx_s\"", "\"jpeg_encode_mpx_s\"", "\"gpu\""})
    EXPECT_NE(json.find(key), std::string::npos) << key;
  // null only where the report says "not measured": the gpu object without a device, and
  // nvJPEG where the library is absent.
  std::string rest = json;
  for (const char* allowed : {"\"gpu\": null", "\"nvjpeg_decode_mpx_s\": null", "\"jpeg_decode_speedup_vs_nvjpeg\": null"})
    for (size_t at; (at = rest.find(allowed)) != std::string::npos;) rest.erase(at, std::strlen(allowed));
  EXPECT_EQ(rest.find("null"), std::string::npos) << "a non-finite figure";
}

TEST(HfbenchImagery, SyntheticImageInMemory) {
  const hfbench::RgbaImage im = synthetic(300, 200);
  const hfbench::ImageryResult r = hfbench::benchImageryRgba("synthetic", im, quickOptions());
  expectSensible(r, 300, 200);
  EXPECT_EQ(r.input, "synthetic");
  EXPECT_EQ(r.tiling.tiles, 2u);  // 300 / 248 -> 2 columns, 200 -> 1 row

  const std::string json = hfbench::imageryJson(hfbench::HostInfo(), "test command", quickOptions(), 2, {r});
  expectReportKeys(json);
}

TEST(HfbenchImagery, OddSizesAndTinyImages) {
  // Not multiples of 4 or 16: JPEG takes the whole image, BC1 a window cut to multiples of 4.
  const hfbench::ImageryResult r = hfbench::benchImageryRgba("odd", synthetic(103, 37), quickOptions());
  expectSensible(r, 103, 37);
  EXPECT_EQ(r.bc1.windowWidth, 100);
  EXPECT_EQ(r.bc1.windowHeight, 36);

  const hfbench::ImageryResult tiny = hfbench::benchImageryRgba("tiny", synthetic(3, 40), quickOptions());
  EXPECT_FALSE(tiny.ok);
  EXPECT_EQ(tiny.error.rfind("tiny:", 0), 0u) << tiny.error;

  hfbench::ImageryBenchOptions window = quickOptions();
  window.bc1Window = 64;
  const hfbench::ImageryResult w = hfbench::benchImageryRgba("window", synthetic(300, 200), window);
  ASSERT_TRUE(w.ok) << w.error;
  EXPECT_EQ(w.bc1.windowWidth, 64);
  EXPECT_EQ(w.bc1.windowHeight, 64);
  EXPECT_EQ(w.bc1.windowX, (300 - 64) / 2);
  EXPECT_EQ(w.bc1.windowY, (200 - 64) / 2);
}

#if HF_TEST_GDAL
// gdal_translate SRC DST ARGS... (GTiff).
bool translate(const std::string& src, const std::string& dst, std::vector<std::string> args) {
  GDALAllRegister();
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  GDALTranslateOptions* opts = GDALTranslateOptionsNew(argv.data(), nullptr);
  GDALDatasetH in = GDALOpen(src.c_str(), GA_ReadOnly);
  GDALDatasetH out = in && opts ? GDALTranslate(dst.c_str(), in, opts, nullptr) : nullptr;
  if (out) GDALClose(out);
  if (in) GDALClose(in);
  if (opts) GDALTranslateOptionsFree(opts);
  return out != nullptr;
}

// A w x h GeoTIFF of `bands` Byte bands, band b holding (x + 3 y + 50 b) mod 256.
bool writeByteTiff(const std::string& path, int w, int h, int bands) {
  GDALAllRegister();
  GDALDriverH driver = GDALGetDriverByName("GTiff");
  if (!driver) return false;
  GDALDatasetH ds = GDALCreate(driver, path.c_str(), w, h, bands, GDT_Byte, nullptr);
  if (!ds) return false;
  bool ok = true;
  std::vector<uint8_t> px(size_t(w) * size_t(h));
  for (int b = 1; b <= bands; ++b) {
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) px[size_t(y) * size_t(w) + size_t(x)] = uint8_t((x + 3 * y + 50 * b) % 256);
    ok = ok && GDALRasterIO(GDALGetRasterBand(ds, b), GF_Write, 0, 0, w, h, px.data(), w, h, GDT_Byte, 0, 0) ==
                   CE_None;
  }
  GDALClose(ds);
  return ok;
}

TEST(HfbenchImagery, CropOfPugetSoundTexture) {
  const std::string src = kImagery + "/ps_texture_1k.png";
  if (!fs::exists(src)) GTEST_SKIP() << "no " << src;
  TempDir dir("hf_hfbench_imagery");
  const std::string crop = dir / "crop.tif";
  ASSERT_TRUE(translate(src, crop, {"-of", "GTiff", "-srcwin", "400", "300", "300", "200"}));

  const hfbench::ImageryResult r = hfbench::benchImageryInput(crop, quickOptions());
  expectSensible(r, 300, 200);
  EXPECT_EQ(r.input, crop);
  EXPECT_EQ(r.bands, 3);
  EXPECT_GT(r.readSeconds, 0.0);

  const std::string json = hfbench::imageryJson(hfbench::HostInfo(), "test command", quickOptions(), 2, {r});
  expectReportKeys(json);
  EXPECT_NE(json.find(crop), std::string::npos);
}

TEST(HfbenchImagery, GreyAndRgbaRasters) {
  TempDir dir("hf_hfbench_imagery");
  const std::string grey = dir / "grey.tif", rgba = dir / "rgba.tif";
  ASSERT_TRUE(writeByteTiff(grey, 40, 24, 1));
  ASSERT_TRUE(writeByteTiff(rgba, 40, 24, 4));

  hfbench::RgbaImage im;
  std::string error;
  ASSERT_TRUE(hfbench::readImageryRgba(grey, im, error)) << error;
  EXPECT_EQ(im.bands, 1);
  ASSERT_EQ(im.rgba.size(), size_t(40 * 24 * 4));
  const size_t at = (size_t(5) * 40 + 7) * 4;  // x 7, y 5: 7 + 15 + 50 = 72
  EXPECT_EQ(im.rgba[at], 72);
  EXPECT_EQ(im.rgba[at + 1], 72);
  EXPECT_EQ(im.rgba[at + 2], 72);
  EXPECT_EQ(im.rgba[at + 3], 255);

  ASSERT_TRUE(hfbench::readImageryRgba(rgba, im, error)) << error;
  EXPECT_EQ(im.bands, 4);
  EXPECT_EQ(im.rgba[at], 72);
  EXPECT_EQ(im.rgba[at + 1], 122);
  EXPECT_EQ(im.rgba[at + 2], 172);
  EXPECT_EQ(im.rgba[at + 3], 222);  // alpha kept

  const hfbench::ImageryResult r = hfbench::benchImageryInput(grey, quickOptions());
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.bands, 1);
}

TEST(HfbenchImagery, BadInputsNameTheFile) {
  TempDir dir("hf_hfbench_imagery");
  const std::string two = dir / "two_bands.tif";
  ASSERT_TRUE(writeByteTiff(two, 16, 16, 2));
  const std::string missing = dir / "missing.png";

  struct Case {
    std::string path, says;
  };
  std::vector<Case> cases = {{two, "2 bands"}, {missing, "cannot open"}};
  const std::string zion = kDem + "/zion_srtm.tif";
  if (fs::exists(zion)) cases.push_back({zion, "not Byte"});
  for (const Case& c : cases) {
    const hfbench::ImageryResult r = hfbench::benchImageryInput(c.path, quickOptions());
    EXPECT_FALSE(r.ok) << c.path;
    EXPECT_EQ(r.input, c.path);
    EXPECT_EQ(r.error.rfind(c.path + ":", 0), 0u) << r.error;
    EXPECT_NE(r.error.find(c.says), std::string::npos) << r.error;
    EXPECT_EQ(r.error.find('\n'), std::string::npos) << r.error;
  }

  // A failed image is reported as such and does not disturb the others.
  const hfbench::ImageryResult good = hfbench::benchImageryRgba("good", synthetic(64, 64), quickOptions());
  const hfbench::ImageryResult bad = hfbench::benchImageryInput(two, quickOptions());
  const std::string json =
      hfbench::imageryJson(hfbench::HostInfo(), "test command", quickOptions(), 2, {good, bad});
  EXPECT_NE(json.find("\"ok\": false"), std::string::npos);
  EXPECT_NE(json.find("2 bands"), std::string::npos);
  EXPECT_NE(json.find("\"ok\": true"), std::string::npos);
}
#endif  // HF_TEST_GDAL

// ---- the command line ----

struct CmdResult {
  int status = -1;
  std::string out, err;
};

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

CmdResult hfbench(const std::string& args, const TempDir& dir) {
  const std::string out = dir / "stdout.txt", err = dir / "stderr.txt";
  const std::string cmd = "cd '" + dir.path.string() + "' && timeout 120 " + HFBENCH_BINARY + " " + args +
                          " >" + out + " 2>" + err;
  const int rc = std::system(cmd.c_str());
  CmdResult r;
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> v;
  std::istringstream s(text);
  for (std::string line; std::getline(s, line);) v.push_back(line);
  return v;
}

TEST(HfbenchImageryCli, MissingFileIsOneErrorLine) {
  TempDir dir("hf_hfbench_imagery_cli");
  const CmdResult r = hfbench("imagery no_such_image.png --json out.json -q", dir);
  EXPECT_EQ(r.status, 1);
  const std::vector<std::string> err = lines(r.err);
  ASSERT_EQ(err.size(), 1u) << r.err;
  EXPECT_EQ(err[0].rfind("Error: no_such_image.png:", 0), 0u) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  // The report is still written, with the image marked failed.
  const std::string json = slurp(dir / "out.json");
  EXPECT_NE(json.find("\"benchmark\": \"imagery\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"ok\": false"), std::string::npos) << json;
}

TEST(HfbenchImageryCli, BadCommandLines) {
  TempDir dir("hf_hfbench_imagery_cli");
  for (const char* args : {"imagery --json out.json", "imagery x.png", "imagery x.png --json out.json --quality 0",
                           "imagery x.png --json out.json --threads", "imagery x.png --json out.json --bogus",
                           "imagery x.png --json out.json --bc1-window 2"}) {
    const CmdResult r = hfbench(args, dir);
    EXPECT_EQ(r.status, 1) << args;
    // One "Error:" line first (a usage error goes on with the usage text).
    const std::vector<std::string> err = lines(r.err);
    ASSERT_FALSE(err.empty()) << args;
    EXPECT_EQ(err[0].rfind("Error:", 0), 0u) << args << ": " << r.err;
    size_t errors = 0;
    for (const std::string& line : err) errors += line.rfind("Error:", 0) == 0;
    EXPECT_EQ(errors, 1u) << args << ": " << r.err;
    EXPECT_FALSE(fs::exists(dir / "out.json")) << args;
  }
}

}  // namespace
