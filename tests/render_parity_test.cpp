// Strategy parity (issue 5): the built-in sample terrain rendered headless with each streaming
// strategy gives the same atlas contents and the same image. `cpu` reads the hfpac sample
// archive, `raw` its raw twin (hfpack --codec raw, packed at build time), `cuda` the hfpac one
// (only where CUDA and CUDA-GL interop work: the GPU machine; CI skips it with a message).
// Atlas parity: every resident tile read back from the atlas texture equals the CPU decode of
// the hfpac archive. Image parity: bit-identical RGBA to the cpu image (same GL, same drawn
// selection once streaming has settled).
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "archive/archive.h"
#include "render/gl/renderer.h"
#include "render/gl/stream_gl.h"
#include "gl_leak_check.h"
#include "test_files.h"
#ifdef HF_HAVE_HFPACK_LIB
#include "hfpack.h"
#ifdef HFPACK_GDAL
#include <gdal.h>
#endif
#endif


extern "C" int dlclose(void*) { return 0; }  // see render_gl_test.cpp (LSan + Mesa)

namespace {



using hf_test::samplePath;

constexpr int kW = 320, kH = 240;

// Skips when there is no GL or no sample archive (a GDAL-free build without the env override).
#define SKIP_UNLESS_RUNNABLE(r)                                                   \
  do {                                                                            \
    if ((r).skip.rfind("no headless GL", 0) == 0 || (r).skip.rfind("archive:", 0) == 0) \
      GTEST_SKIP() << (r).skip;                                                   \
  } while (0)

struct Result {
  std::string skip;  // non-empty: the strategy cannot run here
  std::string name;  // the strategy that actually ran
  std::vector<uint8_t> px;
  std::map<size_t, std::vector<uint16_t>> atlas;  // resident tile -> samples
  bool settled = false;
  hfr::StreamStats stats;
  size_t lossyDrawn = 0;  // in the final frame
  bool viewBeforeSettled = false;  // viewComplete() was true in a step before settled()
};

hfr::GlContext* context(std::string& why) {
  static std::string error;
  static std::unique_ptr<hfr::GlContext> ctx = hfr::createHeadlessContext(error);
  why = error;
  return ctx.get();
}

Result run(const std::string& strategyName, const std::string& path, const std::string& cache = "host",
           bool progressive = false, double stagingMiB = 0) {
  Result r;
  std::string error;
  if (!context(error)) {
    r.skip = "no headless GL: " + error;
    return r;
  }
  hfa::ArchiveReader archive;
  if (!archive.open(path, error)) {
    r.skip = "archive: " + error;
    return r;
  }
  std::string note;
  hfr::StreamOptions opts;
  opts.streams = 2;
  opts.progressive = progressive;
  opts.stagingMiB = stagingMiB;
  if (!hfr::parseCacheOption(cache, opts, error)) {
    r.skip = error;
    return r;
  }
  auto strategy = hfr::makeRenderStreamStrategy(strategyName, archive, error, note, opts);
  if (!strategy) {
    r.skip = error;
    return r;
  }
  if (!note.empty()) {
    r.skip = note;
    return r;
  }
  hfr::RenderSettings rs;
  rs.width = kW;
  rs.height = kH;
  rs.tau = 0.5;  // several levels resident
  auto renderer = hfr::Renderer::create(archive, *strategy, rs, error);
  if (!renderer) {
    r.skip = "renderer: " + error;
    return r;
  }
  const hfr::Camera cam = renderer->defaultCamera();
  // Stream until settled (the deadline only catches a broken loader on a loaded machine).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  for (int i = 0; !r.settled && (i < 5000 || std::chrono::steady_clock::now() < deadline); ++i) {
    renderer->stream(cam);
    r.settled = renderer->settled();
    r.viewBeforeSettled |= !r.settled && renderer->viewComplete();
    if (!r.settled && i >= 5000) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  hfr::FrameStats st;
  renderer->frame(cam, &st);
  r.px = renderer->readPixels();
  r.lossyDrawn = st.lossyDrawn;
  r.stats = strategy->stats();
  r.name = strategy->name();  // "cpu" when cuda fell back at run time (no interop)
  for (size_t t = 0; t < archive.tiles().size(); ++t) {
    std::vector<uint16_t> s;
    if (renderer->readAtlasTile(t, s)) r.atlas[t] = std::move(s);
  }
  return r;
}

const Result& reference() {
  static const Result r = run("cpu", samplePath(false));
  return r;
}

void expectParity(const Result& r) {
  const Result& ref = reference();
  ASSERT_TRUE(ref.skip.empty()) << ref.skip;
  ASSERT_TRUE(r.settled);
  ASSERT_TRUE(ref.settled);
  // Atlas: every resident tile equals the CPU decode of the hfpac archive.
  hfa::ArchiveReader archive;
  std::string error;
  ASSERT_TRUE(archive.open(samplePath(false), error)) << error;
  const size_t p = size_t(archive.header().tileSize());
  ASSERT_FALSE(r.atlas.empty());
  EXPECT_EQ(r.atlas.size(), ref.atlas.size());
  std::vector<uint16_t> want(p * p);
  for (const auto& [tile, samples] : r.atlas) {
    ASSERT_TRUE(archive.decodeTile(tile, want.data(), error)) << error;
    ASSERT_EQ(samples, want) << archive.tileName(tile);
    EXPECT_TRUE(ref.atlas.count(tile)) << archive.tileName(tile) << " resident only with "
                                       << r.name;
  }
  // Image: same selection, same atlas contents -> the same pixels.
  ASSERT_EQ(r.px.size(), ref.px.size());
  size_t differ = 0;
  for (size_t i = 0; i < r.px.size(); ++i) differ += r.px[i] != ref.px[i];
  EXPECT_EQ(differ, 0u) << "bytes differing from the cpu image";
}

// `r` (any strategy on the archive at `path`) against the archive's CPU decode and the cpu
// strategy's run `cpu` on it.
void expectSameAsCpu(const std::string& path, const Result& r, const Result& cpu) {
  ASSERT_TRUE(r.settled);
  hfa::ArchiveReader archive;
  std::string error;
  ASSERT_TRUE(archive.open(path, error)) << error;
  const size_t p = size_t(archive.header().tileSize());
  std::vector<uint16_t> want(p * p);
  ASSERT_FALSE(r.atlas.empty());
  ASSERT_EQ(r.atlas.size(), cpu.atlas.size());
  for (const auto& [tile, samples] : r.atlas) {
    ASSERT_TRUE(archive.decodeTile(tile, want.data(), error)) << error;
    ASSERT_EQ(samples, want) << archive.tileName(tile);
  }
  EXPECT_EQ(r.px, cpu.px);
}

TEST(StrategyParity, CpuAtlasMatchesDecode) {
  const Result& ref = reference();
  SKIP_UNLESS_RUNNABLE(ref);
  expectParity(ref);
}

TEST(StrategyParity, RawEqualsCpu) {
  SKIP_UNLESS_RUNNABLE(reference());
  const Result r = run("raw", samplePath(true));
  SKIP_UNLESS_RUNNABLE(r);
  ASSERT_TRUE(r.skip.empty()) << r.skip;
  EXPECT_EQ(r.name, "raw");
  expectParity(r);
}

TEST(StrategyParity, RawRefusesCompressedArchive) {
  hfa::ArchiveReader archive;
  std::string error, note;
  if (!archive.open(samplePath(false), error)) GTEST_SKIP() << "archive: " << error;
  EXPECT_FALSE(hfr::makeRenderStreamStrategy("raw", archive, error, note));
  EXPECT_NE(error.find("raw archive"), std::string::npos) << error;
}

TEST(StrategyParity, CudaEqualsCpu) {
  SKIP_UNLESS_RUNNABLE(reference());
  const Result r = run("cuda", samplePath(false));
  if (!r.skip.empty()) GTEST_SKIP() << "cuda strategy not available here: " << r.skip;
  if (r.name != "cuda") GTEST_SKIP() << "cuda strategy fell back to " << r.name
                                     << " (no CUDA-GL interop with this GL context)";
  expectParity(r);
}

// The VRAM-resident cache: the whole archive preloaded into device memory, and a pool so small
// that tiles are evicted and sent again while the view fills (misses, hits and re-misses).
TEST(StrategyParity, CudaVramCacheEqualsCpu) {
  SKIP_UNLESS_RUNNABLE(reference());
  for (const char* cache : {"vram", "vram:0.25"}) {
    SCOPED_TRACE(cache);
    const Result r = run("cuda", samplePath(false), cache);
    if (!r.skip.empty()) GTEST_SKIP() << "cuda strategy not available here: " << r.skip;
    if (r.name != "cuda") GTEST_SKIP() << "cuda strategy fell back to " << r.name;
    expectParity(r);
  }
}

// The "gl" strategy: HFPaC decoded by a GL compute shader in the drawing context. It runs on
// llvmpipe too (CI), so it must not fall back here; where the GL has no 64-bit shader integers
// it falls back to cpu with a Note, which these tests report as a skip.
Result runGl(const std::string& path, const std::string& cache, double stagingMiB = 0) {
  Result r = run("gl", path, cache, false, stagingMiB);
  if (r.skip.empty() && r.name != "gl") r.skip = "gl strategy fell back to " + r.name;
  return r;
}

TEST(StrategyParity, GlEqualsCpu) {
  SKIP_UNLESS_RUNNABLE(reference());
  const Result r = runGl(samplePath(false), "host");
  if (!r.skip.empty()) GTEST_SKIP() << r.skip;
  expectParity(r);
  EXPECT_EQ(r.stats.samplesToDevice, 0u) << "every hfpac tile decodes on the GPU";
  EXPECT_GT(r.stats.compressedToDevice, 0u);
  EXPECT_EQ(r.stats.cacheHits, 0u);
}

// --cache host with a 0.25 MiB staging ring: a batch fills it (the rest waits for the next
// batch), batches wrap around its end and wait for earlier batches' fences before reusing it.
TEST(StrategyParity, GlSmallStagingRingEqualsCpu) {
  SKIP_UNLESS_RUNNABLE(reference());
  const Result r = runGl(samplePath(false), "host", 0.25);
  if (!r.skip.empty()) GTEST_SKIP() << r.skip;
  expectParity(r);
  EXPECT_EQ(r.stats.samplesToDevice, 0u);
  EXPECT_GT(r.stats.compressedToDevice, uint64_t(1) << 20) << "more than the ring held at once";
}

// The pool as a VRAM cache: the whole archive preloaded, and a pool so small (0.25 MiB asked,
// the 1 MiB minimum given) that entries are evicted and placed again while the view fills.
TEST(StrategyParity, GlVramCacheEqualsCpu) {
  SKIP_UNLESS_RUNNABLE(reference());
  for (const char* cache : {"vram", "vram:0.25"}) {
    SCOPED_TRACE(cache);
    const Result r = runGl(samplePath(false), cache);
    if (!r.skip.empty()) GTEST_SKIP() << r.skip;
    expectParity(r);
    EXPECT_GT(r.stats.cacheCapacity, 0u);
    EXPECT_LE(r.stats.cacheBytes, r.stats.cacheCapacity);
  }
}

#ifdef HF_HAVE_HFPACK_LIB
// Tiles the shader does not decode (HFAN in a codec-auto archive, 2DRBUC streams) are decoded
// on the loader threads and sent as stored entries that the shader copies into the atlas in the
// same dispatch (no per-tile texture upload); with --cache vram those entries go to a region
// beside the cache, so a later request decodes them again and the cache keeps compressed entries.
TEST(StrategyParity, GlDecodesMixedArchives) {
  SKIP_UNLESS_RUNNABLE(reference());
  for (const hfa::Codec codec : {hfa::Codec::Auto, hfa::Codec::HfpacRbuc}) {
    SCOPED_TRACE(hfa::codecName(codec));
    hf_test::TempDir dir;
    hfpack::TranscodeOptions o;
    o.input = samplePath(false);
    o.output = dir / "mixed.hfa";
    o.codec = codec;
    o.threads = 2;
    o.out = nullptr;
    hfpack::TranscodeResult tr;
    std::string error;
    ASSERT_TRUE(hfpack::transcode(o, tr, error)) << error;
    for (const char* cache : {"host", "vram", "vram:0.25"}) {
      SCOPED_TRACE(cache);
      const Result r = runGl(o.output, cache);
      if (!r.skip.empty()) GTEST_SKIP() << r.skip;
      EXPECT_GT(r.stats.samplesToDevice, 0u) << "some tiles were decoded on the CPU";
      EXPECT_EQ(r.stats.sampleUploads, 0u) << "decoded tiles go through the shader";
      EXPECT_LE(r.stats.cacheBytes, r.stats.cacheCapacity);
      // The stored entries stay out of the cache: what it holds is the preloaded compressed
      // entries, less than the stored entries sent (which would all be resident if cached).
      if (std::string(cache) == "vram") {
        EXPECT_LT(r.stats.cacheBytes, r.stats.samplesToDevice);
      }
      expectSameAsCpu(o.output, r, reference());
    }
  }
}

// deliveryScale() of the strategies that send tiles compressed: the archive's ratio of sample
// bytes to the bytes that cross PCIe. gl sends HFAN tiles as stored samples, cuda decodes them;
// a raw archive scales nothing.
TEST(DeliveryScale, IsTheRatioOfSampleBytesToBytesSent) {
  hf_test::TempDir dir;
  std::string error;
  auto transcodeTo = [&](hfa::Codec codec, const std::string& name) {
    hfpack::TranscodeOptions o;
    o.input = samplePath(false);
    o.output = dir / name;
    o.codec = codec;
    o.threads = 2;
    o.out = nullptr;
    hfpack::TranscodeResult tr;
    EXPECT_TRUE(hfpack::transcode(o, tr, error)) << error;
    return o.output;
  };
  const auto onGl = [](hfa::Codec c) { return c == hfa::Codec::Hfpac; };
  const auto onCuda = [](hfa::Codec c) { return c != hfa::Codec::Raw; };
  hfa::ArchiveReader hfpac, raw, mixed;
  ASSERT_TRUE(hfpac.open(samplePath(false), error)) << error;
  ASSERT_TRUE(raw.open(transcodeTo(hfa::Codec::Raw, "raw.hfa"), error)) << error;
  ASSERT_TRUE(mixed.open(transcodeTo(hfa::Codec::Auto, "auto.hfa"), error)) << error;
  uint64_t payload = 0;
  for (const auto& t : hfpac.tiles()) payload += t.size;
  const double p = hfpac.header().tileSize();
  const double ratio = double(hfpac.tiles().size()) * p * p * 2 / double(payload);
  ASSERT_GT(ratio, 1.5);
  ASSERT_LT(ratio, hfr::kMaxDeliveryScale / 1.5) << "below the cap, so that the comparisons below mean something";
  EXPECT_NEAR(hfr::compressedDeliveryScale(hfpac, onGl), std::min(ratio, hfr::kMaxDeliveryScale), 1e-9);
  EXPECT_EQ(hfr::compressedDeliveryScale(raw, onCuda), 1.0);
  const double gl = hfr::compressedDeliveryScale(mixed, onGl), cuda = hfr::compressedDeliveryScale(mixed, onCuda);
  EXPECT_GE(gl, 1.0);
  EXPECT_LT(gl, cuda) << "gl sends the HFAN tiles as samples";
  EXPECT_GE(cuda, hfr::compressedDeliveryScale(hfpac, onCuda)) << "auto archives are smaller";
}

// The cuda strategy on a codec-auto archive: HFAN tiles decoded by the GPU's ANS decoder into
// the same atlas as the HFPaC tiles (no samples cross PCIe), the image and every atlas tile equal
// to the cpu strategy's; with --cache vram it falls back to cpu with a note (not here).
TEST(StrategyParity, CudaDecodesAutoArchives) {
  SKIP_UNLESS_RUNNABLE(reference());
  hf_test::TempDir dir;
  hfpack::TranscodeOptions o;
  o.input = samplePath(false);
  o.output = dir / "auto.hfa";
  o.codec = hfa::Codec::Auto;
  o.threads = 2;
  o.out = nullptr;
  hfpack::TranscodeResult tr;
  std::string error;
  ASSERT_TRUE(hfpack::transcode(o, tr, error)) << error;
  {
    hfa::ArchiveReader archive;
    ASSERT_TRUE(archive.open(o.output, error)) << error;
    size_t hfan = 0;
    for (const auto& t : archive.tiles()) hfan += t.codec == hfa::Codec::Hfan;
    ASSERT_GT(hfan, 0u) << "the auto archive has no hfan tiles to decode";
    ASSERT_LT(hfan, archive.tiles().size()) << "nor hfpac ones";
  }
  const Result cpu = run("cpu", o.output);
  ASSERT_TRUE(cpu.skip.empty()) << cpu.skip;
  for (bool progressive : {false, true}) {
    SCOPED_TRACE(progressive ? "progressive" : "whole");
    const Result r = run("cuda", o.output, "host", progressive);
    if (!r.skip.empty()) GTEST_SKIP() << "cuda strategy not available here: " << r.skip;
    if (r.name != "cuda") GTEST_SKIP() << "cuda strategy fell back to " << r.name;
    EXPECT_EQ(r.stats.samplesToDevice, 0u);
    EXPECT_GT(r.stats.compressedToDevice, 0u);
    expectSameAsCpu(o.output, r, cpu);
  }
}

#ifdef HFPACK_GDAL
// Every kind of stream the shader decodes, from a synthetic DEM packed with --nodata keep:
// masked areas (all void and mixed bitmaps), flat tiles, stored (incompressible) tiles, smooth
// and rough layered tiles with prominent points, for every segment size and fixed or per-area b.
TEST(StrategyParity, GlDecodesEveryStreamKind) {
  SKIP_UNLESS_RUNNABLE(reference());
  hf_test::TempDir dir;
  const std::string tif = dir / "kinds.tif";
  GDALAllRegister();
  GDALDriverH drv = GDALGetDriverByName("GTiff");
  ASSERT_NE(drv, nullptr);
  const int w = 520, h = 400;
  GDALDatasetH ds = GDALCreate(drv, tif.c_str(), w, h, 1, GDT_Int16, nullptr);
  ASSERT_NE(ds, nullptr);
  GDALRasterBandH band = GDALGetRasterBand(ds, 1);
  GDALSetRasterNoDataValue(band, -32768);
  std::vector<int16_t> v(size_t(w) * h);
  uint32_t rng = 12345;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      rng = rng * 1664525u + 1013904223u;
      int16_t s;
      if (x < 270 && y >= 128) s = 250;                                           // flat tiles
      else if (x >= 250 && x < 400 && y < 140) s = int16_t(int(rng >> 16) - 32767);  // stored (noise)
      else if ((x - 440) * (x - 440) + (y - 280) * (y - 280) < 3600) s = -32768;   // a void disc
      else if ((x * 7 + y * 3) % 97 == 0) s = -32768;                              // scattered voids
      else s = int16_t(500 + (x * x) / 300 + 40 * ((x / 11 + y / 7) % 5) - y + (rng >> 29));  // rough
      v[size_t(y) * w + x] = s;
    }
  ASSERT_EQ(GDALRasterIO(band, GF_Write, 0, 0, w, h, v.data(), w, h, GDT_Int16, 0, 0), CE_None);
  GDALClose(ds);
  for (const auto& [segment, bits] : {std::pair{5, -1}, std::pair{9, 3}, std::pair{17, 0}, std::pair{33, -1}}) {
    SCOPED_TRACE("segment " + std::to_string(segment) + " bits " + std::to_string(bits));
    hfpack::PackOptions o;
    o.inputs = {tif};
    o.output = dir / ("kinds" + std::to_string(segment) + ".hfa");
    o.segment = segment;
    o.bits = bits;
    o.fillNodata = false;
    o.threads = 2;
    o.out = nullptr;
    hfpack::PackResult pr;
    std::string error;
    ASSERT_TRUE(hfpack::pack(o, pr, error)) << error;
    const Result cpu = run("cpu", o.output);
    ASSERT_TRUE(cpu.skip.empty()) << cpu.skip;
    const Result r = runGl(o.output, "host");
    if (!r.skip.empty()) GTEST_SKIP() << r.skip;
    EXPECT_EQ(r.stats.samplesToDevice, 0u);
    expectSameAsCpu(o.output, r, cpu);
  }
}
#endif
#endif

// Progressive loading (--progressive): tiles first delivered lossy (layers 1 + 2) and refined in
// place; once settled, the atlas and the image are exactly the cpu strategy's, every lossy tile
// was refined, and the first view was complete before the exact one.
void expectProgressive(const Result& r) {
  EXPECT_GT(r.stats.deliveredLossy, 0u) << "the sample terrain has layered tiles";
  EXPECT_EQ(r.stats.refined, r.stats.deliveredLossy);
  EXPECT_EQ(r.stats.lossyResident, 0u);
  EXPECT_EQ(r.lossyDrawn, 0u);
  EXPECT_TRUE(r.viewBeforeSettled);
  expectParity(r);
}

TEST(StrategyParity, ProgressiveCpuRefinesToCpu) {
  SKIP_UNLESS_RUNNABLE(reference());
  const Result r = run("cpu", samplePath(false), "host", true);
  SKIP_UNLESS_RUNNABLE(r);
  expectProgressive(r);
}

TEST(StrategyParity, ProgressiveCudaRefinesToCpu) {
  SKIP_UNLESS_RUNNABLE(reference());
  const Result r = run("cuda", samplePath(false), "host", true);
  if (!r.skip.empty()) GTEST_SKIP() << "cuda strategy not available here: " << r.skip;
  if (r.name != "cuda") GTEST_SKIP() << "cuda strategy fell back to " << r.name;
  expectProgressive(r);
}

// The ocean's fields computed by CUDA into the texture (render/gl/ocean_cuda.cpp) draw the image
// the CPU worker's fields draw, up to float rounding of the fields (a few pixels by a level or
// two); and the water moves between two times (the comparison is not of two still frames).
struct OceanShot {
  std::string skip, device;
  std::vector<uint8_t> px;
};

// The ocean drawn at `seconds`: synchronous fields, or with `previous` >= 0 as a running viewer
// draws them (not synchronous), after a frame at `previous`.
OceanShot oceanShot(const std::string& device, double seconds, double previous = -1) {
  OceanShot o;
  std::string error, note;
  if (!context(error)) {
    o.skip = "no headless GL: " + error;
    return o;
  }
  hfa::ArchiveReader archive;
  if (!archive.open(samplePath(false), error)) {
    o.skip = "archive: " + error;
    return o;
  }
  auto strategy = hfr::makeRenderStreamStrategy("cpu", archive, error, note);
  if (!strategy) {
    o.skip = error;
    return o;
  }
  hfr::RenderSettings rs;
  rs.width = kW;
  rs.height = kH;
  rs.tau = 2;
  rs.ocean = true;
  rs.oceanSynchronous = previous < 0;
  rs.oceanDevice = device;
  auto renderer = hfr::Renderer::create(archive, *strategy, rs, error);
  if (!renderer) {
    o.skip = "renderer: " + error;
    return o;
  }
  if (!renderer->hasOcean()) {
    o.skip = "no ocean in this build";
    return o;
  }
  hfr::Camera cam;  // low over the sample terrain's sea, looking north-east towards a coast
  cam.x = 46000;
  cam.y = 18000;
  cam.z = 60;
  cam.yaw = 30;
  cam.pitch = -10;
  for (int i = 0; i < 4000 && !(i > 0 && renderer->settled()); ++i) {
    renderer->stream(cam);
    if (i > 100) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (previous >= 0) {
    renderer->setTime(previous);
    renderer->frame(cam);
  }
  renderer->setTime(seconds);
  renderer->frame(cam);
  o.px = renderer->readPixels();
  o.device = renderer->oceanDevice();
  return o;
}

// The ocean's fields from `device` ("cuda": CUDA-GL interop; "gl": compute shaders) draw the CPU
// worker's sea up to float rounding, and the water moves. Skips where cuda falls back (no CUDA
// or interop); gl must not fall back on a 4.5 context.
void expectOceanEqualsCpuOcean(const std::string& device) {
  const OceanShot cpu = oceanShot("cpu", 3.5);
  if (!cpu.skip.empty()) GTEST_SKIP() << cpu.skip;
  const OceanShot gpu = oceanShot(device, 3.5);
  ASSERT_TRUE(gpu.skip.empty()) << gpu.skip;
  if (device == "cuda" && gpu.device != "cuda")
    GTEST_SKIP() << "the ocean fell back to " << gpu.device << " (no CUDA or interop here)";
  ASSERT_EQ(gpu.device, device);
  EXPECT_EQ(cpu.device, "cpu");
  ASSERT_EQ(cpu.px.size(), gpu.px.size());
  size_t differ = 0;
  int worst = 0;
  for (size_t i = 0; i < cpu.px.size(); ++i) {
    const int d = std::abs(int(cpu.px[i]) - int(gpu.px[i]));
    differ += d != 0;
    worst = std::max(worst, d);
  }
  std::printf("[ ocean    ] %s vs cpu: %zu of %zu bytes differ, by %d at most\n", device.c_str(),
              differ, cpu.px.size(), worst);
  EXPECT_LE(worst, 3);
  EXPECT_LT(double(differ), 0.005 * double(cpu.px.size()));
  const OceanShot later = oceanShot(device, 4.5);
  size_t moved = 0;
  for (size_t i = 0; i < gpu.px.size(); ++i) moved += later.px[i] != gpu.px[i];
  EXPECT_GT(double(moved), 0.01 * double(gpu.px.size())) << "the water does not move";
}

// A running viewer's GPU ocean computes a frame's fields at the start of that frame
// (OceanFields::prepare, before GL has the frame's work) and draws them in the same frame, not a
// frame late: the second of two frames shows exactly what a synchronous frame at its time shows.
void expectOceanFrameShowsItsOwnTime(const std::string& device) {
  const OceanShot synchronous = oceanShot(device, 3.5);
  if (!synchronous.skip.empty()) GTEST_SKIP() << synchronous.skip;
  if (device == "cuda" && synchronous.device != "cuda")
    GTEST_SKIP() << "the ocean fell back to " << synchronous.device;
  ASSERT_EQ(synchronous.device, device);
  const OceanShot running = oceanShot(device, 3.5, 2.0);
  ASSERT_TRUE(running.skip.empty()) << running.skip;
  ASSERT_EQ(running.device, device);
  ASSERT_EQ(running.px.size(), synchronous.px.size());
  size_t differ = 0;
  for (size_t i = 0; i < running.px.size(); ++i) differ += running.px[i] != synchronous.px[i];
  EXPECT_EQ(differ, 0u) << "the running frame does not show the fields of its own time";
}

TEST(StrategyParity, CudaOceanEqualsCpuOcean) { expectOceanEqualsCpuOcean("cuda"); }
TEST(StrategyParity, GlOceanEqualsCpuOcean) { expectOceanEqualsCpuOcean("gl"); }
TEST(StrategyParity, CudaOceanFrameShowsItsOwnTime) { expectOceanFrameShowsItsOwnTime("cuda"); }
TEST(StrategyParity, GlOceanFrameShowsItsOwnTime) { expectOceanFrameShowsItsOwnTime("gl"); }

}  // namespace
