// flythrough_test.cpp - the flythrough benchmark engine (src/render/flythrough, issue 6):
// percentile() and summarize() on hand-made runs (exact values), the CSV writer, and real runs
// on the built-in sample terrain (headless EGL; llvmpipe in CI) at a tiny size: the fill ends
// settled, the flight has the right frames at t = i * dt, and the per-frame counters add up to
// the run's and the strategy's totals. Nothing here depends on how fast the loaders are: what
// a frame shows or uploads varies from run to run, the bookkeeping does not.
// Label "render". The GL tests skip with a message when no EGL device gives a 4.5 core context.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gl_leak_check.h"
#include "archive/archive.h"
#include "codec/ans.h"
#include "render/flythrough/flythrough.h"
#include "render/gl/renderer.h"
#include "render/gl/stream_gl.h"
#include "test_files.h"

extern "C" int dlclose(void*) { return 0; }  // see render_gl_test.cpp (LSan + Mesa)

namespace {

using hf_test::TempDir;
using hf_test::samplePath;

namespace fs = std::filesystem;

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) out.push_back(cur);
  if (!s.empty() && s.back() == sep) out.emplace_back();
  return out;
}

std::vector<std::string> lines(const std::string& path) {
  std::ifstream f(path);
  std::vector<std::string> out;
  for (std::string l; std::getline(f, l);) out.push_back(l);
  return out;
}

// ---- percentile ----

TEST(FlythroughPercentile, NearestRankOnSmallVectors) {
  EXPECT_EQ(hfr::percentile({}, 50), 0.0);
  EXPECT_EQ(hfr::percentile({7}, 0), 7.0);
  EXPECT_EQ(hfr::percentile({7}, 50), 7.0);
  EXPECT_EQ(hfr::percentile({7}, 100), 7.0);
  // Unsorted input; rank = ceil(p / 100 * n), at least 1.
  const std::vector<double> v{4, 1, 3, 2};
  EXPECT_EQ(hfr::percentile(v, 0), 1.0);
  EXPECT_EQ(hfr::percentile(v, 25), 1.0);
  EXPECT_EQ(hfr::percentile(v, 26), 2.0);
  EXPECT_EQ(hfr::percentile(v, 50), 2.0);
  EXPECT_EQ(hfr::percentile(v, 51), 3.0);
  EXPECT_EQ(hfr::percentile(v, 75), 3.0);
  EXPECT_EQ(hfr::percentile(v, 99), 4.0);
  EXPECT_EQ(hfr::percentile(v, 100), 4.0);
  EXPECT_EQ(hfr::percentile({1, 2, 3, 4, 5}, 50), 3.0);
  EXPECT_EQ(hfr::percentile({5, 5, 1, 1}, 50), 1.0);  // ties
  // 1..n: the p-th percentile is the value ceil(p n / 100) exactly, for every integer p (the
  // rank must not be pushed up by rounding: 28 / 100.0 * 25 = 7.000000000000001).
  for (int n = 1; n <= 40; ++n) {
    std::vector<double> r(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) r[size_t(i)] = double(n - i);  // descending
    for (int p = 0; p <= 100; ++p) {
      const int rank = std::max(1, (p * n + 99) / 100);
      ASSERT_EQ(hfr::percentile(r, p), double(rank)) << "n " << n << " p " << p;
    }
  }
}

// ---- summarize on a hand-made run ----

hfr::FlyFrame frame(bool fill, int index, double ms) {
  hfr::FlyFrame f;
  f.fill = fill;
  f.index = index;
  f.frameMs = ms;
  return f;
}

TEST(FlythroughSummary, HandMadeRunExactValues) {
  hfr::FlythroughRun run;
  // Fill frames: larger than everything and with bytes; none of it is the flight's.
  for (int i = 0; i < 3; ++i) {
    hfr::FlyFrame f = frame(true, i, 1000.0 + i);
    f.renderCpuMs = 500;
    f.samplesToDevice = 1u << 20;
    f.compressedToDevice = 77;
    f.bytesRead = 555;
    f.triangles = 1000000;
    f.tilesUploaded = 9;
    f.tilesMissing = 100;
    f.updateCpuMs = 300;
    run.frames.push_back(f);
  }
  // Flight: frame 0 is the slowest (50 ms), frames 1..19 take i ms.
  for (int i = 0; i < 20; ++i) {
    hfr::FlyFrame f = frame(false, i, i == 0 ? 50.0 : double(i));
    f.renderCpuMs = 0.25 * double(20 - i);  // 0.25 .. 5
    f.selectMs = double(i % 5);             // 0,1,2,3,4 four times each
    f.drawGpuMs = 2.0;
    f.updateCpuMs = 1.0;
    f.updateGpuMs = double(i);
    f.tilesUploaded = size_t(i % 2);
    f.tilesMissing = size_t(i < 10 ? 3 : 0);
    f.samplesToDevice = 1000;
    f.compressedToDevice = 10;
    f.bytesRead = 7;
    f.triangles = uint64_t(100 * i);  // mean 950
    run.frames.push_back(f);
  }
  const hfr::FlightSummary s = hfr::summarize(run);
  EXPECT_EQ(s.frames, 20u);
  // Sorted: 1, 2, ..., 19, 50.
  EXPECT_EQ(s.medianMs, 10.0);  // rank 10
  EXPECT_EQ(s.p95Ms, 19.0);     // rank 19
  EXPECT_EQ(s.p99Ms, 50.0);     // rank 20
  EXPECT_EQ(s.maxMs, 50.0);
  EXPECT_EQ(s.maxAfterFirstMs, 19.0);
  EXPECT_EQ(s.medianRenderCpuMs, 2.5);   // 0.25 * 10
  EXPECT_EQ(s.p99RenderCpuMs, 5.0);
  EXPECT_EQ(s.medianSelectMs, 2.0);      // ranks 9..12 are 2
  EXPECT_EQ(s.medianDrawGpuMs, 2.0);
  EXPECT_DOUBLE_EQ(s.meanUpdateCpuMs, 1.0);
  EXPECT_DOUBLE_EQ(s.meanUpdateGpuMs, 9.5);  // (0 + ... + 19) / 20
  EXPECT_EQ(s.samplesToDevice, 20000u);
  EXPECT_EQ(s.compressedToDevice, 200u);
  EXPECT_EQ(s.bytesRead, 140u);  // the fill's reads are not the flight's
  EXPECT_DOUBLE_EQ(s.meanTriangles, 950.0);
  EXPECT_EQ(s.uploads, 10u);
  EXPECT_DOUBLE_EQ(s.meanMissing, 1.5);

  // The largest frame after the first is found wherever it is.
  run.frames.back().frameMs = 60;
  EXPECT_EQ(hfr::summarize(run).maxAfterFirstMs, 60.0);
  EXPECT_EQ(hfr::summarize(run).maxMs, 60.0);
}

TEST(FlythroughSummary, NoFlightFrames) {
  hfr::FlythroughRun run;
  const hfr::FlightSummary empty = hfr::summarize(run);
  EXPECT_EQ(empty.frames, 0u);
  EXPECT_EQ(empty.medianMs, 0.0);
  run.frames.push_back(frame(true, 0, 5));
  const hfr::FlightSummary fillOnly = hfr::summarize(run);
  EXPECT_EQ(fillOnly.frames, 0u);
  EXPECT_EQ(fillOnly.maxMs, 0.0);
  EXPECT_EQ(fillOnly.maxAfterFirstMs, 0.0);
  // One flight frame: no frame after the first.
  run.frames.push_back(frame(false, 0, 8));
  const hfr::FlightSummary one = hfr::summarize(run);
  EXPECT_EQ(one.frames, 1u);
  EXPECT_EQ(one.medianMs, 8.0);
  EXPECT_EQ(one.p99Ms, 8.0);
  EXPECT_EQ(one.maxMs, 8.0);
  EXPECT_EQ(one.maxAfterFirstMs, 0.0);
}

// ---- CSV ----

constexpr size_t kCsvColumns = 32;

TEST(FlythroughCsv, HeaderAndOneRowPerFrame) {
  TempDir dir;
  hfr::FlythroughRun run;
  for (int i = 0; i < 2; ++i) run.frames.push_back(frame(true, i, 3));
  for (int i = 0; i < 4; ++i) {
    hfr::FlyFrame f = frame(false, i, 1.5);
    f.t = double(i) / 60.0;
    f.tilesDrawn = 123;
    f.triangles = uint64_t(1) << 40;
    f.samplesToDevice = (uint64_t(1) << 33) + uint64_t(i);
    run.frames.push_back(f);
  }
  std::string error;
  const std::string path = dir / "run.csv";
  ASSERT_TRUE(hfr::writeFlythroughCsv(path, run, error)) << error;
  const auto rows = lines(path);
  ASSERT_EQ(rows.size(), 1 + run.frames.size());
  const auto header = split(rows[0], ',');
  ASSERT_EQ(header.size(), kCsvColumns) << rows[0];
  EXPECT_EQ(header[0], "phase");
  EXPECT_EQ(header[2], "t_s");
  EXPECT_EQ(header[3], "frame_ms");
  EXPECT_EQ(header[12], "tiles_drawn");
  EXPECT_EQ(header[17], "decompressed_bytes_h2d");
  EXPECT_EQ(header[23], "payload_bytes_read");
  EXPECT_EQ(header[24], "cache_hits");
  EXPECT_EQ(header[25], "cache_bytes");
  EXPECT_EQ(header[26], "imagery_cache_hits");
  EXPECT_EQ(header[27], "imagery_cache_bytes");
  EXPECT_EQ(header[28], "tiles_lossy");
  EXPECT_EQ(header[29], "host_hits");
  EXPECT_EQ(header[31], "host_bytes");
  for (size_t r = 1; r < rows.size(); ++r) {
    const auto c = split(rows[r], ',');
    ASSERT_EQ(c.size(), kCsvColumns) << "row " << r << ": " << rows[r];
    const hfr::FlyFrame& f = run.frames[r - 1];
    EXPECT_EQ(c[0], f.fill ? "fill" : "flight");
    EXPECT_EQ(c[1], std::to_string(f.index));
    EXPECT_NEAR(std::stod(c[2]), f.t, 1e-4);
    EXPECT_DOUBLE_EQ(std::stod(c[3]), f.frameMs);
    EXPECT_EQ(c[12], std::to_string(f.tilesDrawn));
    EXPECT_EQ(c[15], std::to_string(f.triangles));
    EXPECT_EQ(c[17], std::to_string(f.samplesToDevice));
    EXPECT_EQ(c[23], std::to_string(f.bytesRead));
  }
  // Rewriting replaces the file.
  run.frames.resize(1);
  ASSERT_TRUE(hfr::writeFlythroughCsv(path, run, error)) << error;
  EXPECT_EQ(lines(path).size(), 2u);
}

TEST(FlythroughCsv, UnwritablePath) {
  TempDir dir;
  hfr::FlythroughRun run;
  run.frames.push_back(frame(false, 0, 1));
  for (const std::string& path : {dir / "no/such/dir/run.csv", dir.path.string()}) {
    std::string error;
    EXPECT_FALSE(hfr::writeFlythroughCsv(path, run, error)) << path;
    EXPECT_FALSE(error.empty());
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
    EXPECT_NE(error.find(path), std::string::npos) << error;
  }
}

TEST(FlythroughBudget, FractionOfAllTiles) {
  hfa::ArchiveReader archive;
  std::string error;
  if (!archive.open(samplePath(false), error)) GTEST_SKIP() << "archive: " << error;
  const double p = archive.header().tileSize();
  const double all = double(archive.tiles().size()) * p * p * 2 / (1024.0 * 1024.0);
  EXPECT_DOUBLE_EQ(hfr::atlasBudgetForFraction(archive, 1.0), all);
  EXPECT_DOUBLE_EQ(hfr::atlasBudgetForFraction(archive, 0.55), 0.55 * all);
}

// ---- real runs (headless GL) ----

hfr::GlContext* context(std::string& why) {
  static std::string error;
  static std::unique_ptr<hfr::GlContext> ctx = hfr::createHeadlessContext(error);
  why = error;
  return ctx.get();
}

#define REQUIRE_GL()                                                  \
  do {                                                                \
    std::string why_;                                                 \
    if (!context(why_)) GTEST_SKIP() << "no headless GL: " << why_;   \
  } while (0)

// Forwards to a real strategy and counts what goes through it, so the test can check that
// every tile and byte of the run is in some frame's record.
class CountingStrategy final : public hfr::StreamStrategy {
 public:
  explicit CountingStrategy(std::unique_ptr<hfr::StreamStrategy> s) : s_(std::move(s)) {}
  const char* name() const override { return s_->name(); }
  void request(const std::vector<size_t>& tiles) override {
    lastRequest_ = tiles;
    s_->request(tiles);
  }
  // The renderer stages after each request: staged tiles are never in that request.
  void stage(const std::vector<size_t>& tiles) override {
    ++stageCalls;
    stagedTiles += tiles.size();
    for (size_t t : tiles)
      stagedAlsoRequested += size_t(std::count(lastRequest_.begin(), lastRequest_.end(), t));
    s_->stage(tiles);
  }
  size_t deliver(hfr::TileSink& sink, size_t maxTiles) override {
    ++deliverCalls;
    const size_t n = s_->deliver(sink, maxTiles);
    delivered += n;
    return n;
  }
  bool loadNow(size_t tile, hfr::TileSink& sink, std::string& error) override {
    ++loadedNow;
    return s_->loadNow(tile, sink, error);
  }
  size_t pending() const override { return s_->pending(); }
  hfr::StreamStats stats() const override { return s_->stats(); }
  void pollCompleted() override { s_->pollCompleted(); }
  void releaseGl() override { s_->releaseGl(); }

  size_t deliverCalls = 0, delivered = 0, loadedNow = 0;
  size_t stageCalls = 0, stagedTiles = 0, stagedAlsoRequested = 0;

 private:
  std::unique_ptr<hfr::StreamStrategy> s_;
  std::vector<size_t> lastRequest_;
};

struct Fly {
  std::string skip;
  hfa::ArchiveReader archive;
  std::unique_ptr<CountingStrategy> strategy;
  hfr::FlythroughRun run;
  bool ok = false;
  std::string error;
};

constexpr int kW = 160, kH = 90;

// One run of `strategyName` on the sample (raw: its raw twin), tiny view.
void fly(Fly& f, const std::string& strategyName, const hfr::FlythroughOptions& options, int w = kW,
         int h = kH, const hfr::StreamOptions* streamOptions = nullptr,
         double budgetFraction = 0.55) {
  std::string error, note;
  if (!f.archive.open(samplePath(strategyName == "raw"), error)) {
    f.skip = "archive: " + error;
    return;
  }
  auto s = hfr::makeRenderStreamStrategy(strategyName, f.archive, error, note,
                                         streamOptions ? *streamOptions : hfr::StreamOptions{});
  if (!s) {
    f.skip = strategyName + ": " + error;
    return;
  }
  f.strategy = std::make_unique<CountingStrategy>(std::move(s));
  hfr::RenderSettings rs;
  rs.width = w;
  rs.height = h;
  rs.atlasBudgetMiB = hfr::atlasBudgetForFraction(f.archive, budgetFraction);
  f.run.strategy = strategyName;
  f.ok = hfr::runFlythrough(f.archive, *f.strategy, rs, options, f.run, f.error);
}

#define FLY_OR_SKIP(f)                                    \
  do {                                                    \
    if (!(f).skip.empty()) GTEST_SKIP() << (f).skip;      \
    ASSERT_TRUE((f).ok) << (f).error;                     \
  } while (0)

size_t fillFrames(const hfr::FlythroughRun& run) {
  return size_t(std::count_if(run.frames.begin(), run.frames.end(),
                              [](const hfr::FlyFrame& x) { return x.fill; }));
}

// What every run must satisfy, whatever the loaders' speed.
void expectConsistentRun(const Fly& f, int flightFrames, double dt) {
  const hfr::FlythroughRun& run = f.run;
  const uint64_t tileBytes = uint64_t(f.archive.header().tileSize()) *
                             uint64_t(f.archive.header().tileSize()) * 2;
  // Phases: fill frames first (index 0..), then exactly flightFrames flight frames.
  const size_t nFill = fillFrames(run);
  ASSERT_GE(nFill, 1u);
  EXPECT_EQ(size_t(run.fill.frames), nFill);
  ASSERT_EQ(run.frames.size(), nFill + size_t(flightFrames));
  for (size_t i = 0; i < run.frames.size(); ++i) {
    const hfr::FlyFrame& x = run.frames[i];
    EXPECT_EQ(x.fill, i < nFill) << i;
    if (i < nFill) {
      EXPECT_EQ(x.index, int(i));
      EXPECT_EQ(x.t, 0.0);
    } else {
      EXPECT_EQ(x.index, int(i - nFill));
      EXPECT_EQ(x.t, double(i - nFill) * dt) << "flight frame " << i - nFill;
    }
    EXPECT_TRUE(std::isfinite(x.frameMs) && x.frameMs >= 0) << i;
    EXPECT_TRUE(std::isfinite(x.renderCpuMs) && x.renderCpuMs >= 0) << i;
    // Parts of frame() on the render thread: within the frame's wall time.
    EXPECT_LE(x.selectMs + x.updateCpuMs + x.drawCpuMs, x.frameMs + 1e-3) << i;
    EXPECT_LE(x.renderCpuMs, x.frameMs + 0.1) << i;  // CPU time of one thread <= wall time
    EXPECT_GE(x.updateGpuMs, 0.0);
    EXPECT_GE(x.drawGpuMs, 0.0);
    EXPECT_GT(x.tilesDrawn, 0u) << i;  // the top level at least
    EXPECT_GT(x.triangles, 0u) << i;
    EXPECT_EQ(x.compressedToDevice, 0u) << "raw and cpu move samples only";
    EXPECT_EQ(x.samplesToDevice, uint64_t(x.tilesUploaded) * tileBytes) << i;
  }
  // The fill ended settled (everything wanted resident, nothing pending), and not before.
  const hfr::FlyFrame& last = run.frames[nFill - 1];
  EXPECT_EQ(last.tilesMissing, 0u);
  EXPECT_EQ(last.tilesPending, 0u);
  for (size_t i = 0; i + 1 < nFill; ++i)
    EXPECT_TRUE(run.frames[i].tilesMissing > 0 || run.frames[i].tilesPending > 0)
        << "fill frame " << i << " was settled already";
  // Fill totals = the fill frames' sums.
  uint64_t fillSamples = 0, fillCompressed = 0;
  size_t fillUploads = 0;
  for (size_t i = 0; i < nFill; ++i) {
    fillSamples += run.frames[i].samplesToDevice;
    fillCompressed += run.frames[i].compressedToDevice;
    fillUploads += run.frames[i].tilesUploaded;
  }
  EXPECT_EQ(fillSamples, run.fill.samplesToDevice);
  EXPECT_EQ(fillCompressed, run.fill.compressedToDevice);
  EXPECT_EQ(fillUploads, run.fill.tiles);
  EXPECT_EQ(run.fill.samplesToDevice, uint64_t(run.fill.tiles) * tileBytes);
  EXPECT_GE(run.fill.ms, 0.0);
  // Every tile and byte that reached the atlas during the run is in a frame's record: the
  // strategy's totals are the top level (loaded synchronously at creation) plus the frames'.
  uint64_t allSamples = 0;
  size_t allUploads = 0;
  for (const auto& x : run.frames) {
    allSamples += x.samplesToDevice;
    allUploads += x.tilesUploaded;
  }
  ASSERT_TRUE(f.strategy);
  EXPECT_EQ(f.strategy->deliverCalls, run.frames.size())
      << "the strategy delivered outside the recorded frames";
  EXPECT_EQ(f.strategy->delivered, allUploads);
  const hfr::StreamStats ss = f.strategy->stats();
  EXPECT_EQ(ss.delivered, f.strategy->loadedNow + allUploads);
  EXPECT_EQ(ss.samplesToDevice, uint64_t(f.strategy->loadedNow + allUploads) * tileBytes);
  EXPECT_EQ(ss.compressedToDevice, 0u);
  // The summary covers the flight only.
  const hfr::FlightSummary s = hfr::summarize(run);
  EXPECT_EQ(s.frames, size_t(flightFrames));
  EXPECT_EQ(s.samplesToDevice, allSamples - fillSamples);
  EXPECT_EQ(s.uploads, allUploads - fillUploads);
  EXPECT_EQ(run.archiveTiles, f.archive.tiles().size());
  EXPECT_GT(run.atlasSlots, 0u);
  EXPECT_LE(run.atlasSlots, f.archive.tiles().size());
  EXPECT_EQ(run.failedTiles, 0u);
  EXPECT_FALSE(run.path.empty());
}

TEST(FlythroughRun, CpuDiagonal) {
  REQUIRE_GL();
  hfr::FlythroughOptions o;
  o.frames = 12;
  Fly f;
  fly(f, "cpu", o);
  FLY_OR_SKIP(f);
  expectConsistentRun(f, 12, o.dt);
  EXPECT_NE(f.run.path.find("diagonal"), std::string::npos) << f.run.path;
}

// The renderer hands the planner's staged tiles (predicted, beyond the atlas's free slots) to the
// strategy once per frame, after the request and never overlapping it (the planner's staging
// itself: render_stream_test.cpp).
TEST(FlythroughRun, StagedTilesGoToTheStrategyEveryFrameApartFromTheRequest) {
  REQUIRE_GL();
  hfr::FlythroughOptions o;
  o.frames = 24;
  Fly f;
  fly(f, "cpu", o);
  FLY_OR_SKIP(f);
  EXPECT_EQ(f.strategy->stageCalls, f.run.frames.size());
  EXPECT_EQ(f.strategy->stagedAlsoRequested, 0u);
}

// gl keeps what its loaders laid out, and reads the staged tiles ahead, in host memory (--cache
// host, the default): the planner's staged tiles are read into it and later requests are answered
// from it in the frame they are made; with the cache off (host:0) nothing is.
TEST(FlythroughRun, GlReadsStagedTilesIntoItsHostCacheAndAnswersRequestsFromIt) {
  REQUIRE_GL();
  constexpr double kSmallAtlas = 0.25;  // the prediction does not fit beside the view: it stages
  hfr::FlythroughOptions o;
  o.frames = 32;
  o.dt = 0.05;  // 1.6 s of flight: past the prediction's horizon
  Fly f;
  fly(f, "gl", o, 480, 270, nullptr, kSmallAtlas);
  FLY_OR_SKIP(f);
  if (std::string(f.strategy->name()) != "gl")
    GTEST_SKIP() << "gl fell back to " << f.strategy->name();
  ASSERT_GT(f.strategy->stagedTiles, 0u) << "the flight staged nothing: the test proves nothing";
  const hfr::StreamStats with = f.strategy->stats();
  std::printf(
      "gl, host cache: %zu tiles handed to stage, %llu read into the cache, %llu requests answered "
      "from it, %llu bytes kept\n",
      f.strategy->stagedTiles, (unsigned long long)with.hostStaged,
      (unsigned long long)with.hostHits, (unsigned long long)with.hostBytes);
  EXPECT_GT(with.hostStaged, 0u);
  EXPECT_GT(with.hostHits, 0u);
  EXPECT_GT(with.hostBytes, 0u);

  hfr::StreamOptions none;
  none.hostCacheMiB = 0;
  Fly g;
  fly(g, "gl", o, 480, 270, &none, kSmallAtlas);
  FLY_OR_SKIP(g);
  const hfr::StreamStats without = g.strategy->stats();
  auto missing = [](const hfr::FlythroughRun& run) {
    size_t n = 0;
    for (const hfr::FlyFrame& x : run.frames) n += x.fill ? 0 : x.tilesMissing;
    return n;
  };
  std::printf(
      "missing tile-frames in flight: %zu with the host cache, %zu without (real time: not "
      "asserted)\n",
      missing(f.run), missing(g.run));
  EXPECT_EQ(without.hostStaged, 0u);
  EXPECT_EQ(without.hostHits, 0u);
  EXPECT_EQ(without.hostBytes, 0u);
}

TEST(FlythroughRun, RawOnRawTwin) {
  REQUIRE_GL();
  hfr::FlythroughOptions o;
  o.frames = 12;
  o.dt = 0.05;
  Fly f;
  fly(f, "raw", o);
  FLY_OR_SKIP(f);
  EXPECT_STREQ(f.strategy->name(), "raw");
  expectConsistentRun(f, 12, o.dt);
}

// A recorded path (two keys, not starting at 0) is followed for its duration: frames =
// duration / dt + 1 by default, the last one at the last key.
TEST(FlythroughRun, RecordedPathFramesCoverItsDuration) {
  REQUIRE_GL();
  hfa::ArchiveReader archive;
  std::string error;
  if (!archive.open(samplePath(false), error)) GTEST_SKIP() << "archive: " << error;
  const hfa::Header& h = archive.header();
  const double side = double(h.width) * h.spacingX;
  int32_t top = 0;
  for (const auto& t : archive.tiles()) top = std::max(top, t.maxSample);
  hfr::FlythroughOptions o;
  hfr::Camera a, b;
  a.x = 0.3 * side, a.y = 0.3 * side, a.z = h.verticalOffset + h.verticalScale * top + 100;
  a.yaw = 45, a.pitch = -20;
  b = a;
  b.x = 0.4 * side, b.y = 0.4 * side;
  o.path = hfr::CameraPath({{1.0, a}, {1.7, b}});  // 0.7 s
  o.dt = 0.1;  // (1.7 - 1.0) / 0.1 = 6.999999999999999 in doubles
  Fly f;
  fly(f, "cpu", o);
  FLY_OR_SKIP(f);
  expectConsistentRun(f, 8, o.dt);  // t = 0, 0.1, ..., 0.7
  EXPECT_NE(f.run.path.find("recorded"), std::string::npos) << f.run.path;

  // An explicit frame count wins over the path's duration.
  o.frames = 3;
  Fly g;
  fly(g, "cpu", o);
  FLY_OR_SKIP(g);
  expectConsistentRun(g, 3, o.dt);
}

// The default frame count is capped at kMaxFrames.
TEST(FlythroughRun, DefaultFramesCapped) {
  REQUIRE_GL();
  hfr::FlythroughOptions o;
  hfr::Camera a;  // high above the south-west corner, looking at the terrain
  a.z = 20000, a.yaw = 45, a.pitch = 80;
  o.path = hfr::CameraPath({{0.0, a}, {1000.0, a}});
  o.dt = 0.1;  // 10001 frames uncapped
  Fly f;
  fly(f, "cpu", o, 1, 1);
  FLY_OR_SKIP(f);
  EXPECT_EQ(f.run.frames.size() - fillFrames(f.run), size_t(hfr::FlythroughOptions::kMaxFrames));
}

// The atlas fill (stream only, no cap): it settles, every tile it delivered crossed as samples
// (cpu and raw) and it goes through deliver() without drawing; its strategy then serves a run.
TEST(FlythroughAtlasFill, SettlesAndCountsWhatItMoved) {
  REQUIRE_GL();
  for (const std::string name : {"cpu", "raw"}) {
    hfa::ArchiveReader archive;
    std::string error, note;
    if (!archive.open(samplePath(name == "raw"), error)) GTEST_SKIP() << "archive: " << error;
    auto s = hfr::makeRenderStreamStrategy(name, archive, error, note);
    ASSERT_TRUE(s) << error;
    CountingStrategy counting(std::move(s));
    hfr::RenderSettings rs;
    rs.width = kW;
    rs.height = kH;
    hfr::FlythroughOptions o;
    hfr::FillResult fill;
    ASSERT_TRUE(hfr::measureAtlasFill(archive, counting, rs, o, fill, error)) << name << ": " << error;
    const uint64_t p = uint64_t(archive.header().tileSize());
    EXPECT_GT(fill.tiles, 0u) << name;
    EXPECT_EQ(fill.tiles, counting.delivered) << name;
    EXPECT_EQ(fill.samplesToDevice, fill.tiles * p * p * 2) << name;
    EXPECT_EQ(fill.compressedToDevice, 0u) << name;
    EXPECT_EQ(size_t(fill.frames), counting.deliverCalls) << name;
    EXPECT_TRUE(std::isfinite(fill.ms) && fill.ms > 0) << name;
  }
  // Bad options fail with one line.
  hfa::ArchiveReader archive;
  std::string error, note;
  if (!archive.open(samplePath(false), error)) GTEST_SKIP() << "archive: " << error;
  auto s = hfr::makeRenderStreamStrategy("cpu", archive, error, note);
  ASSERT_TRUE(s);
  hfr::FlythroughOptions o;
  o.speed = 0;
  hfr::FillResult fill;
  EXPECT_FALSE(hfr::measureAtlasFill(archive, *s, hfr::RenderSettings{}, o, fill, error));
  EXPECT_EQ(error.find('\n'), std::string::npos);
}

// An archive of hfan tiles (hfpack --codec auto / hfan): the CUDA strategy decodes them on the
// GPU (only compressed bytes to the device); without CUDA it becomes cpu with a note (samples
// uploaded), and with --cache vram (which holds HFPaC tiles only) too. The fill delivers every
// tile either way.
TEST(FlythroughAtlasFill, HfanTilesStreamThroughTheCudaStrategy) {
  REQUIRE_GL();
  hfa::ArchiveReader in;
  std::string error, note;
  if (!in.open(samplePath(false), error)) GTEST_SKIP() << "archive: " << error;
  // The sample archive with every tile re-coded as HFAN, header codec auto.
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("hf_fly_hfan_" + std::to_string(::getpid()) + ".hfa")).string();
  {
    hfa::Header h = in.header();
    h.codec = hfa::Codec::Auto;
    hfa::ArchiveWriter w;
    ASSERT_TRUE(w.open(path, h, in.tiles().size(), error)) << error;
    const int p = h.tileSize();
    std::vector<uint16_t> samples(size_t(p) * size_t(p));
    for (size_t i = 0; i < in.tiles().size(); ++i) {
      ASSERT_TRUE(in.decodeTile(i, samples.data(), error)) << error;
      std::vector<uint8_t> payload;
      hfpac::AnsOptions ao;
      ao.hasMask = (h.flags & hfa::kFlagNodataKept) != 0;
      ao.maskValue = h.nodata;
      ASSERT_EQ(hfpac::ansEncode(samples.data(), size_t(p), p, p, h.sampleType, payload, ao), hfpac::Status::Ok);
      hfa::TileEntry e = in.tiles()[i];
      e.codec = hfa::Codec::Hfan;
      ASSERT_TRUE(w.addTile(e, payload.data(), payload.size(), error)) << error;
    }
    ASSERT_TRUE(w.finish(error)) << error;
  }
  hfa::ArchiveReader archive;
  ASSERT_TRUE(archive.open(path, error)) << error;
  {
    hfr::StreamOptions vram;
    vram.vramCache = true;
    auto v = hfr::makeRenderStreamStrategy("cuda", archive, error, note, vram);
    ASSERT_TRUE(v) << error;
    EXPECT_STREQ(v->name(), "cpu");
    EXPECT_NE(note.find("falling back to cpu"), std::string::npos) << note;
    EXPECT_NE(note.find("codec auto"), std::string::npos) << note;
  }
  auto s = hfr::makeRenderStreamStrategy("cuda", archive, error, note);
  ASSERT_TRUE(s) << error;
  const bool onGpu = std::string(s->name()) == "cuda";
  if (!onGpu) {
    EXPECT_NE(note.find("falling back to cpu"), std::string::npos) << note;
  }
  CountingStrategy counting(std::move(s));
  hfr::RenderSettings rs;
  rs.width = kW;
  rs.height = kH;
  hfr::FlythroughOptions o;
  hfr::FillResult fill;
  ASSERT_TRUE(hfr::measureAtlasFill(archive, counting, rs, o, fill, error)) << error;
  EXPECT_GT(fill.tiles, 0u);
  EXPECT_EQ(fill.tiles, counting.delivered);
  const uint64_t p = uint64_t(archive.header().tileSize());
  if (std::string(counting.name()) == "cuda") {
    EXPECT_EQ(fill.samplesToDevice, 0u);  // decoded on the GPU
    EXPECT_GT(fill.compressedToDevice, 0u);
  } else {
    EXPECT_EQ(fill.samplesToDevice, fill.tiles * p * p * 2);  // decoded on the CPU, samples uploaded
  }
  EXPECT_GE(fill.viewMs, 0.0);                               // every wanted tile became resident
  std::filesystem::remove(path);
}

TEST(FlythroughRun, BadOptions) {
  REQUIRE_GL();
  for (int which = 0; which < 4; ++which) {
    hfr::FlythroughOptions o;
    o.frames = 2;
    if (which == 0) o.dt = 0;
    if (which == 1) o.dt = std::nan("");
    if (which == 2) o.speed = -5;
    if (which == 3) o.speed = std::numeric_limits<double>::infinity();
    Fly f;
    fly(f, "cpu", o);
    if (!f.skip.empty()) GTEST_SKIP() << f.skip;
    EXPECT_FALSE(f.ok) << which;
    EXPECT_FALSE(f.error.empty());
    EXPECT_EQ(f.error.find('\n'), std::string::npos);
    EXPECT_TRUE(f.run.frames.empty());
  }
  // A size the renderer refuses.
  hfr::FlythroughOptions o;
  o.frames = 2;
  Fly f;
  fly(f, "cpu", o, 0, 90);
  if (!f.skip.empty()) GTEST_SKIP() << f.skip;
  EXPECT_FALSE(f.ok);
  EXPECT_NE(f.error.find("size"), std::string::npos) << f.error;
}

}  // namespace
