// flythrough_cli_test.cpp - the command lines of the flythrough benchmark (issue 6):
// `hfbench flythrough RAW.hfa HFPAC.hfa ...` and `hfview --headless --bench ...`, run as
// processes on the built-in sample terrain (and small archives packed here with hfpack from
// .hfr files written by the test). Bad command lines and inputs: exit status 1 and exactly one
// line "Error: ..." on stderr, nothing written. Tiny valid runs (160x90, a few frames) write
// their CSVs, the report and the plot. Label "hfbench". The runs that need GL skip with a
// message when no EGL device gives a 4.5 core context.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <random>
#include <thread>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "render/gl/renderer.h"
#include "render/gl/stream_gl.h"
#include "test_files.h"
#include "test_process.h"

extern "C" int dlclose(void*) { return 0; }  // see render_gl_test.cpp (LSan + Mesa)

namespace {

using hf_test::runMaybeKilled;
using hf_test::TempDir;
using hf_test::samplePath;

namespace fs = std::filesystem;

const std::string kSample = samplePath(false), kRaw = samplePath(true);

bool haveSamples() { return fs::exists(kSample) && fs::exists(kRaw); }

struct CmdResult {
  int status = -1;
  std::string err, out;
};

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Runs `binary args` in `cwd` (stdout and stderr to files outside it).
CmdResult runCmd(const std::string& binary, const std::string& args, const std::string& cwd) {
  static int n = 0;
  const fs::path io = fs::temp_directory_path() /
                      ("hf_flythrough_cli_io_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
  const std::string out = io.string() + ".out", err = io.string() + ".err";
  // timeout: a bad value that is wrongly accepted starts a run; it must not hang the test. 400 s:
  // a tiny valid run flies six strategies on llvmpipe, 2-3.5 minutes under ASan on a loaded CI.
  // Under ASan the child's leak check is off: the GL driver (Mesa) is unloaded when the
  // process ends, so its small leaks show as "<unknown module>" frames that tests/lsan.supp
  // cannot name. The viewer's own code is leak-checked by the in-process GL tests.
  const std::string cmd = "cd '" + cwd + "' && ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0\" timeout 400 " +
                          binary + " " + args + " >" + out + " 2>" + err;
  const int rc = std::system(cmd.c_str());
  CmdResult r;
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  fs::remove(out);
  fs::remove(err);
  return r;
}

CmdResult hfbench(const std::string& args, const TempDir& dir) {
  return runCmd(HFBENCH_BINARY, "flythrough " + args, dir.path.string());
}
CmdResult hfview(const std::string& args, const TempDir& dir) {
  return runCmd(HFVIEW_BINARY, args, dir.path.string());
}

std::vector<std::string> listDir(const TempDir& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir.path)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// Exit 1, exactly one line on stderr, starting "Error: " and holding `needle`; the folder
// holds only `allowed` afterwards (nothing written).
void expectError(const CmdResult& r, const std::string& needle, const TempDir& dir,
                 const std::vector<std::string>& allowed = {}) {
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(r.err.rfind("Error: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << "expected '" << needle << "' in: " << r.err;
  for (const auto& name : listDir(dir))
    EXPECT_NE(std::find(allowed.begin(), allowed.end(), name), allowed.end()) << "left behind: " << name;
}

bool haveGl(std::string& why) {
  static std::string error;
  static const bool ok = [] {
    auto ctx = hfr::createHeadlessContext(error);
    return ctx != nullptr;
  }();
  why = error;
  return ok;
}

#define REQUIRE_SAMPLES_AND_GL()                                          \
  do {                                                                    \
    if (!haveSamples()) GTEST_SKIP() << "no sample archives: " << kSample; \
    std::string why_;                                                     \
    if (!haveGl(why_)) GTEST_SKIP() << "no headless GL: " << why_;        \
  } while (0)

void writeText(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

// A w x h .hfr (64-byte header, uint16 samples, row-major): a smooth hill shifted by `seed`.
void writeHfr(const std::string& path, int w, int h, int seed) {
  std::vector<uint8_t> head(64, 0);
  std::memcpy(head.data(), "HFR1", 4);
  const uint32_t hdr = 64;
  std::memcpy(head.data() + 4, &hdr, 4);
  std::memcpy(head.data() + 8, &w, 4);
  std::memcpy(head.data() + 12, &h, 4);
  std::vector<uint16_t> s(size_t(w) * size_t(h));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      s[size_t(y) * size_t(w) + size_t(x)] =
          uint16_t(1000 + ((x * (3 + seed) + y * (5 + 2 * seed)) % 700) + seed * 50);
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(head.data()), std::streamsize(head.size()));
  f.write(reinterpret_cast<const char*>(s.data()), std::streamsize(s.size() * 2));
}

#ifdef HFPACK_BINARY
// Packs `hfr` into `out` with hfpack (`extra`: e.g. "--codec raw").
void pack(const std::string& hfr, const std::string& out, const std::string& extra) {
  const CmdResult r = runCmd(HFPACK_BINARY, "'" + hfr + "' -o '" + out + "' -q " + extra,
                             fs::path(out).parent_path().string());
  ASSERT_EQ(r.status, 0) << r.err;
}
#endif

// ---- hfbench flythrough: bad command lines and inputs ----

// Each bad value comes after the options of a tiny run (were it accepted, the run stays short).
const std::string kTiny = "--size 16x16 --frames 1 ";

TEST(HfbenchFlythroughCli, MissingArchives) {
  TempDir dir;
  expectError(hfbench("", dir), "RAW.hfa and HFPAC.hfa", dir);
  expectError(hfbench("'" + kRaw + "'", dir), "RAW.hfa and HFPAC.hfa", dir);
  expectError(hfbench("a.hfa b.hfa c.hfa", dir), "RAW.hfa and HFPAC.hfa", dir);
  expectError(hfbench("'" + kRaw + "' '" + kSample + "' --frobnicate", dir), "--frobnicate", dir);
  expectError(hfbench("'" + kRaw + "' '" + kSample + "' --out", dir), "--out: 1 required DIR missing", dir);
}

TEST(HfbenchFlythroughCli, BadArchives) {
  if (!haveSamples()) GTEST_SKIP() << "no sample archives: " << kSample;
  TempDir dir;
  const std::string raw = "'" + kRaw + "'", hf = "'" + kSample + "'";
  expectError(hfbench(dir / "missing.hfa " + hf, dir), "missing.hfa", dir);
  expectError(hfbench(raw + " " + dir / "missing.hfa", dir), "missing.hfa", dir);
  expectError(hfbench(raw + " " + hf + " --rbuc " + dir / "missing.hfa", dir), "missing.hfa", dir);
  // The hfpac archive first (a raw one is expected there), or raw twice.
  expectError(hfbench(hf + " " + raw, dir), "not a raw archive", dir);
  expectError(hfbench(hf + " " + hf, dir), "not a raw archive", dir);
  expectError(hfbench(raw + " " + raw, dir), "is a raw archive", dir);
  // Not an archive at all.
  writeText(dir / "junk.hfa", "this is not an archive\n");
  expectError(hfbench(dir / "junk.hfa " + hf, dir), "junk.hfa", dir, {"junk.hfa"});
}

#ifdef HFPACK_BINARY
TEST(HfbenchFlythroughCli, MismatchedArchives) {
  if (!haveSamples()) GTEST_SKIP() << "no sample archives: " << kSample;
  TempDir dir;
  writeHfr(dir / "a.hfr", 257, 257, 0);
  writeHfr(dir / "b.hfr", 257, 257, 1);
  pack(dir / "a.hfr", dir / "a_raw.hfa", "--codec raw");
  pack(dir / "a.hfr", dir / "a.hfa", "");
  pack(dir / "a.hfr", dir / "a65.hfa", "--patch 65");
  pack(dir / "b.hfr", dir / "b.hfa", "");
  const std::vector<std::string> files{"a.hfa", "a.hfr", "a65.hfa", "a_raw.hfa", "b.hfa", "b.hfr"};
  const std::string raw = "'" + kRaw + "'", hf = "'" + kSample + "'";
  // Another DEM (other size), either way round.
  expectError(hfbench(raw + " " + dir / "a.hfa", dir), "not the same DEM", dir, files);
  expectError(hfbench(dir / "a_raw.hfa " + hf, dir), "not the same DEM", dir, files);
  expectError(hfbench(raw + " " + hf + " --rbuc " + dir / "a.hfa", dir), "not the same DEM", dir, files);
  // The same DEM with other tiles.
  expectError(hfbench(dir / "a_raw.hfa " + dir / "a65.hfa", dir), "not the same DEM", dir, files);
  // Another DEM of the same size and tiles: different samples.
  expectError(hfbench(dir / "a_raw.hfa " + dir / "b.hfa " + kTiny, dir),
              "not the same DEM", dir, files);
}
#endif

TEST(HfbenchFlythroughCli, BadValues) {
  TempDir dir;
  const std::string ok = "'" + kRaw + "' '" + kSample + "' " + kTiny;
  for (const char* v : {"0", "65", "abc", "1,,2", "1,", ",1", "-1", "2x"})
    expectError(hfbench(ok + "--streams '" + v + "'", dir), "--streams", dir);
  for (const char* v : {"0x90", "160", "160x", "x90", "160x90junk", "160x-90", "20000x90", "abc"})
    expectError(hfbench(ok + "--size '" + v + "'", dir), "--size", dir);
  for (const char* v : {"0", "-1", "abc", "nan", "inf", "1px"})
    expectError(hfbench(ok + "--tau '" + v + "'", dir), "--tau", dir);
  for (const char* o : {"--speed", "--dt", "--budget"})
    for (const char* v : {"0", "-2", "x"})
      expectError(hfbench(ok + o + " '" + v + "'", dir), o, dir);
  expectError(hfbench(ok + "--budget-fraction 2", dir), "--budget-fraction", dir);
  expectError(hfbench(ok + "--frames 0", dir), "--frames", dir);
  expectError(hfbench(ok + "--frames 12x", dir), "--frames", dir);
  expectError(hfbench(ok + "--altitude high", dir), "--altitude", dir);
  for (const char* v : {"0", "21", "x", "2.5"}) expectError(hfbench(ok + "--repeat " + v, dir), "--repeat", dir);
  for (const char* v : {"-1", "3001", "x"})
    expectError(hfbench(ok + "--warmup-frames " + v, dir), "--warmup-frames", dir);
  for (const char* v : {"hot", "", "COLD"}) expectError(hfbench(ok + "--io '" + v + "'", dir), "--io", dir);
  for (const char* v : {"0", "-5", "fast", "inf"})
    expectError(hfbench(ok + "--io-limit '" + v + "'", dir), "--io-limit", dir);
  for (const char* v : {"ram", "vram:", "vram:0", "vram:-4", "vram:1x", "VRAM", ""})
    expectError(hfbench(ok + "--cache '" + v + "'", dir), "--cache", dir);
  expectError(hfbench(ok + "--json", dir), "--json", dir);
  expectError(hfbench(ok + "--json " + dir / "no/such/dir/f.json", dir), "f.json", dir);
}

TEST(HfbenchFlythroughCli, BadPathFile) {
  TempDir dir;
  const std::string ok = "'" + kRaw + "' '" + kSample + "' ";
  writeText(dir / "p.txt", "# t x y z yaw pitch\n0 100 100 2500 45 -20\n1 200 200 2500 45\n");
  expectError(hfbench(ok + kTiny + "--path " + dir / "p.txt", dir), "p.txt:3:", dir, {"p.txt"});
  expectError(hfbench(ok + "--path " + dir / "none.txt", dir), "none.txt", dir, {"p.txt"});
}

TEST(HfbenchFlythroughCli, TinyRunWritesReportPlotAndCsvs) {
  REQUIRE_SAMPLES_AND_GL();
  TempDir dir;
  // No warm-up flights here (RepeatsRotateAndAreReported covers them): under ASan + llvmpipe a
  // frame takes ~0.4 s, and 30 untimed frames per strategy would eat the time limit.
  const CmdResult r = hfbench("'" + kRaw + "' '" + kSample + "' --size 160x90 --frames 6 --out out "
                              "--name fly --note 'test run' --warmup-frames 0",
                              dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err.find("Error"), std::string::npos) << r.err;
  const fs::path out = dir.path / "out";
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(out)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  const bool cuda = hfr::cudaStreamBuilt();  // a CUDA build also runs cuda x 1, 2, 4
  std::vector<std::string> want{"fly-cpu.csv", "fly-frametime.png", "fly-gl.csv", "fly-raw.csv", "fly.md"};
  if (cuda) want = {"fly-cpu.csv", "fly-cuda1.csv", "fly-cuda2.csv", "fly-cuda4.csv",
                    "fly-frametime.png", "fly-gl.csv", "fly-raw.csv", "fly.md"};
  EXPECT_EQ(names, want);
  // The CSVs: the header, the fill frames, then 6 flight frames 0..5.
  for (const char* run : {"raw", "cpu", "gl"}) {
    std::ifstream f(out / (std::string("fly-") + run + ".csv"));
    std::vector<std::string> rows;
    for (std::string l; std::getline(f, l);) rows.push_back(l);
    ASSERT_GE(rows.size(), 8u) << run;
    EXPECT_EQ(rows[0].rfind("phase,frame,t_s,frame_ms,", 0), 0u) << rows[0];
    const auto commas = std::count(rows[0].begin(), rows[0].end(), ',');
    size_t flight = 0;
    for (size_t i = 1; i < rows.size(); ++i) {
      EXPECT_EQ(std::count(rows[i].begin(), rows[i].end(), ','), commas) << run << " row " << i;
      if (rows[i].rfind("flight,", 0) == 0) {
        EXPECT_EQ(rows[i].rfind("flight," + std::to_string(flight) + ",", 0), 0u) << rows[i];
        ++flight;
      } else {
        EXPECT_EQ(rows[i].rfind("fill,", 0), 0u) << rows[i];
        EXPECT_EQ(flight, 0u) << "fill after flight: " << rows[i];
      }
    }
    EXPECT_EQ(flight, 6u) << run;
  }
  const std::string png = slurp((out / "fly-frametime.png").string());
  EXPECT_EQ(png.rfind("\x89PNG\r\n\x1a\n", 0), 0u);
  // The report: both rows of the results table, the plot, targets not evaluated (no CUDA).
  const std::string md = slurp((out / "fly.md").string());
  EXPECT_NE(md.find("# Flythrough: fly"), std::string::npos) << md;
  EXPECT_NE(md.find("- note: test run"), std::string::npos) << md;
  EXPECT_NE(md.find("160x90"), std::string::npos) << md;
  EXPECT_NE(md.find("6 frames"), std::string::npos) << md;
  EXPECT_NE(md.find("## Results"), std::string::npos) << md;
  EXPECT_NE(md.find("\n| raw | "), std::string::npos) << md;
  EXPECT_NE(md.find("\n| cpu | "), std::string::npos) << md;
  EXPECT_NE(md.find("](fly-frametime.png)"), std::string::npos) << md;
  if (!cuda)
    EXPECT_NE(md.find("targets not evaluated"), std::string::npos) << md;
  else  // evaluated, or not when cuda fell back to cpu (no CUDA-GL interop)
    EXPECT_TRUE(md.find("targets not evaluated") != std::string::npos ||
                md.find("Best cuda run") != std::string::npos) << md;
  // raw against itself: every ratio is 1.00.
  const size_t rawRow = md.find("\n| raw | ");
  ASSERT_NE(rawRow, std::string::npos);
  const std::string row = md.substr(rawRow + 1, md.find('\n', rawRow + 1) - rawRow - 1);
  EXPECT_GE(std::count(row.begin(), row.end(), '|'), 17) << row;
  EXPECT_NE(row.find("| 1.00 |"), std::string::npos) << row;
}

// --repeat 2: every run flown twice in rotated order, the report lists both repeats per run
// and says how the kept one was chosen; the warm-up is reported; one CSV per run.
TEST(HfbenchFlythroughCli, RepeatsRotateAndAreReported) {
  REQUIRE_SAMPLES_AND_GL();
  TempDir dir;
  const CmdResult r = hfbench("'" + kRaw + "' '" + kSample + "' --size 96x54 --frames 3 --out out --name fly "
                              "--streams 1 --repeat 2 --warmup-frames 1",
                              dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("warmed up"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("raw (repeat 2)"), std::string::npos) << r.err;
  // Rotation: repeat 1 starts with raw, repeat 2 with the second run (cpu).
  const size_t first = r.err.find("cpu (repeat 2)"), second = r.err.find("raw (repeat 2)");
  ASSERT_NE(first, std::string::npos) << r.err;
  EXPECT_LT(first, second) << r.err;
  const std::string md = slurp((dir.path / "out" / "fly.md").string());
  EXPECT_NE(md.find("- warm-up: every strategy flew 1 frame untimed"), std::string::npos) << md;
  EXPECT_NE(md.find("- repeats: the list was flown 2 times"), std::string::npos) << md;
  EXPECT_NE(md.find("## Repeats (first view ms / median frame ms, in repeat order)"), std::string::npos) << md;
  EXPECT_NE(md.find("| run | repeat 1 | repeat 2 |"), std::string::npos) << md;
  for (const char* run : {"\n| raw | ", "\n| cpu | "}) {
    const size_t at = md.find(run, md.find("## Repeats"));
    ASSERT_NE(at, std::string::npos) << run;
    const std::string row = md.substr(at + 1, md.find('\n', at + 1) - at - 1);
    EXPECT_EQ(std::count(row.begin(), row.end(), '/'), 2) << row;
  }
  std::ifstream f(dir.path / "out" / "fly-cpu.csv");
  size_t flight = 0;
  for (std::string l; std::getline(f, l);) flight += l.rfind("flight,", 0) == 0;
  EXPECT_EQ(flight, 3u);
}

// --io cold --io-limit: the runs still complete, and the report says how the I/O was set up.
TEST(HfbenchFlythroughCli, ColdAndLimitedIoAreReported) {
  REQUIRE_SAMPLES_AND_GL();
  TempDir dir;
  const CmdResult r = hfbench("'" + kRaw + "' '" + kSample + "' --size 160x90 --frames 3 --out out --name fly "
                              "--streams 1 --warmup-frames 0 --io cold --io-limit 200 --json out/fly.json",
                              dir);
  ASSERT_EQ(r.status, 0) << r.err;
  // The recorded-results JSON: one object per run with the field names.
  const std::string js = slurp((dir.path / "out" / "fly.json").string());
  for (const char* k : {"\"runs\": [", "\"dem\": \"fly\"", "\"io\": \"200\"", "\"io_cold\": true",
                        "\"cache\": \"host\"", "\"strategy\": \"raw\"", "\"strategy\": \"cpu\"",
                        "\"first_view_ms\": ", "\"fill_ms\": ", "\"missing_tiles_per_frame\": ",
                        "\"h2d_bytes\": ", "\"payload_bytes\": ", "\"render_thread_p99_ms\": ",
                        "\"median_frame_ms\": ", "\"max_frame_ms_after_first\": ", "\"triangles_per_frame\": "})
    EXPECT_NE(js.find(k), std::string::npos) << k << "\n" << js;
  EXPECT_NE(js.find("\"ratio\": 1.0,"), std::string::npos) << js;  // raw against itself
  // Every run flies with the same height atlas (the sample has no imagery: `raw` once got the
  // RGBA8 imagery allowance added to its height atlas, a finer view than the runs it was
  // compared with).
  std::vector<std::string> slots;
  for (size_t at = js.find("\"atlas_slots\": "); at != std::string::npos; at = js.find("\"atlas_slots\": ", at + 1))
    slots.push_back(js.substr(at, js.find_first_of(",}\n", at) - at));
  ASSERT_GE(slots.size(), 2u) << js;
  for (const std::string& s : slots) EXPECT_EQ(s, slots.front()) << js;
  const std::string md = slurp((dir.path / "out" / "fly.md").string());
  EXPECT_NE(md.find("- I/O: cold (the archive's pages dropped before every run and atlas fill;"), std::string::npos)
      << md;
  EXPECT_NE(md.find("payload reads limited to 200 MB/s"), std::string::npos) << md;
  EXPECT_EQ(md.find("- warm-up:"), std::string::npos) << md;  // --warmup-frames 0
  EXPECT_NE(md.find("\n| cpu | "), std::string::npos) << md;
}

// --progressive (issue 15, refine in place): a cpu run that loads tiles lossy first; its JSON
// says so and has a first view no later than its exact view, and it reads no more payload bytes
// than the whole-tile cpu run.
TEST(HfbenchFlythroughCli, ProgressiveRunsReportFirstAndExactViews) {
  REQUIRE_SAMPLES_AND_GL();
  TempDir dir;
  const CmdResult r = hfbench("'" + kRaw + "' '" + kSample + "' --size 160x90 --frames 2 --out out --name p "
                              "--streams 1 --warmup-frames 0 --progressive --io-limit 200 --json out/p.json",
                              dir);
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string js = slurp((dir.path / "out" / "p.json").string());
  const size_t at = js.find("\"strategy\": \"cpu, progressive\"");
  ASSERT_NE(at, std::string::npos) << js;
  const std::string run = js.substr(at, js.find('}', at) - at);
  EXPECT_NE(run.find("\"progressive\": true"), std::string::npos) << run;
  auto number = [&](const std::string& text, const std::string& key) {
    const size_t k = text.find("\"" + key + "\": ");
    return k == std::string::npos ? -1.0 : std::strtod(text.c_str() + k + key.size() + 4, nullptr);
  };
  const double first = number(run, "first_view_ms"), exact = number(run, "exact_view_ms");
  EXPECT_GT(first, 0) << run;
  EXPECT_LE(first, exact) << run;
  EXPECT_NE(js.find("\"progressive\": false"), std::string::npos) << "the whole-tile runs too";
  const std::string md = slurp((dir.path / "out" / "p.md").string());
  EXPECT_NE(md.find("| exact view ms |"), std::string::npos) << md;
  EXPECT_NE(md.find("\n| cpu, progressive | "), std::string::npos) << md;
}

// ---- hfview --headless --bench ----

TEST(HfviewBenchCli, BadValues) {
  TempDir dir;
  const std::string a = "'" + kSample + "' --headless --bench " + kTiny;
  expectError(hfview(a + "--speed 0", dir), "--speed", dir);
  expectError(hfview(a + "--speed -3", dir), "--speed", dir);
  expectError(hfview(a + "--dt -1", dir), "--dt", dir);
  expectError(hfview(a + "--dt 0", dir), "--dt", dir);
  expectError(hfview(a + "--dt abc", dir), "--dt", dir);
  expectError(hfview(a + "--budget-fraction 2", dir), "--budget-fraction", dir);
  expectError(hfview(a + "--budget-fraction 0", dir), "--budget-fraction", dir);
  expectError(hfview(a + "--altitude x", dir), "--altitude", dir);
  expectError(hfview(a + "--frames -2", dir), "--frames", dir);
  expectError(hfview(a + "--size 0x90", dir), "--size", dir);
  expectError(hfview(a + "--size 160x90junk", dir), "--size", dir);
  expectError(hfview(a + "--path " + dir / "none.txt", dir), "none.txt", dir);
  writeText(dir / "p.txt", "0 1 2 3 4 5\n0 1 2 3 4 5\n");  // t not increasing
  expectError(hfview(a + "--path " + dir / "p.txt", dir), "p.txt:2:", dir, {"p.txt"});
  expectError(hfview(a + "--screenshot " + dir / "x.png", dir), "--screenshot", dir, {"p.txt"});
  expectError(hfview("--bench --screenshot x.png", dir), "--screenshot", dir, {"p.txt"});
  expectError(hfview(a + "--csv", dir), "--csv", dir, {"p.txt"});
  for (const char* v : {"gpu", "vram:0", "vram:abc", "vram:nan"})
    expectError(hfview(a + "--cache '" + v + "'", dir), "--cache", dir, {"p.txt"});
  expectError(hfview(dir / "missing.hfa --bench", dir), "missing.hfa", dir, {"p.txt"});
  // The ocean's options (issue 14).
  for (const char* v : {"yes", "1", ""}) expectError(hfview(a + "--ocean '" + v + "'", dir), "--ocean", dir, {"p.txt"});
  for (const char* v : {"x", "nan", "1,2,3", "0", "100", "10,abc"})
    expectError(hfview(a + "--ocean on --wind '" + v + "'", dir), "--wind", dir, {"p.txt"});
  for (const char* v : {"-1", "9", "abc"})
    expectError(hfview(a + "--ocean on --choppiness '" + v + "'", dir), "--choppiness", dir, {"p.txt"});
  expectError(hfview(a + "--water-level abc", dir), "--water-level", dir, {"p.txt"});
  expectError(hfview(a + "--water-level inf", dir), "--water-level", dir, {"p.txt"});
  expectError(hfview(a + "--time -1", dir), "--time", dir, {"p.txt"});
}

// hfbench entropy (issue 17's design study) on the sample DEM: a report whose per-patch best is
// never worse than today's streams (they are one of its candidates) and whose horizontal
// differences compress a smooth terrain; a file it cannot read is one error line.
TEST(HfbenchEntropyCli, StudyOfTheSampleDem) {
  if (!haveSamples()) GTEST_SKIP() << "no sample archives: " << kSample;
  const fs::path tif = fs::path(kSample).parent_path() / "sample_terrain.tif";
  if (!fs::exists(tif)) GTEST_SKIP() << "no " << tif << " (a build without GDAL)";
  TempDir dir;
  const CmdResult r = runCmd(HFBENCH_BINARY, "entropy '" + tif.string() + "' --json e.json -q", dir.path.string());
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string json = slurp((dir.path / "e.json").string());
  auto number = [&](const std::string& key) {
    const size_t at = json.find("\"" + key + "\": ");
    return at == std::string::npos ? -1.0 : std::atof(json.c_str() + at + key.size() + 4);
  };
  EXPECT_GT(number("ratio_hfpac"), 1.0) << json;
  EXPECT_GE(number("ratio_best"), number("ratio_hfpac")) << json;
  EXPECT_GT(number("ratio_dx"), 1.0) << json;
  EXPECT_GT(number("ratio_zstd"), 1.0) << json;
  expectError(runCmd(HFBENCH_BINARY, "entropy missing.tif -q", dir.path.string()), "missing.tif", dir, {"e.json"});
}

// hfview DEM.tif (issue 15): packed into the cache with hfpack the first time, opened from it
// the next; a file hfpack cannot read is one error line and leaves nothing in the cache; a dead
// pack's temporary is removed; the cache stays within $HFVIEW_CACHE_MIB.
TEST(HfviewDemCli, PacksIntoTheCacheOnceAndReopens) {
  REQUIRE_SAMPLES_AND_GL();
  const fs::path tif = fs::path(kSample).parent_path() / "sample_terrain.tif";
  if (!fs::exists(tif)) GTEST_SKIP() << "no " << tif << " (a build without GDAL)";
  TempDir dir;
  const fs::path cache = dir.path / "cache";
  const std::string env = "env XDG_CACHE_HOME='" + cache.string() + "' ";
  auto view = [&](const std::string& args) { return runCmd(env + HFVIEW_BINARY, args, dir.path.string()); };
  auto archives = [&] {
    std::vector<std::string> names;
    if (fs::exists(cache / "hfview"))
      for (const auto& e : fs::directory_iterator(cache / "hfview")) names.push_back(e.path().filename().string());
    return names;
  };
  const std::string shot = " --headless --screenshot a.png --size 160x90 --ocean off";
  CmdResult r = view("'" + tif.string() + "'" + shot);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("Note: packing"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::exists(dir.path / "a.png"));
  ASSERT_EQ(archives().size(), 1u);
  EXPECT_EQ(archives()[0].substr(0, 15), "sample_terrain-");
  // Again: from the cache. A temporary of a pack that was killed (its process is gone) goes.
  std::ofstream(cache / "hfview" / "old.hfa.tmp.4194302") << "half";
  r = view("'" + tif.string() + "'" + shot);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("from the cache"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("Note: packing"), std::string::npos) << r.err;
  EXPECT_EQ(archives().size(), 1u);
  // Not a DEM: one line, nothing left in the cache.
  writeText(dir.path / "notes.txt", "not a raster\n");
  r = view("notes.txt" + shot);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err.find("Error: cannot pack notes.txt: "), r.err.find("Error: ")) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 2) << r.err;  // the Note, the Error
  EXPECT_EQ(archives().size(), 1u);
  r = view("missing.tif" + shot);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("missing.tif"), std::string::npos) << r.err;
  // A second DEM (a copy: another key) with a cache bound of one archive: the older one goes.
  fs::copy_file(tif, dir.path / "copy.tif");
  r = runCmd("env XDG_CACHE_HOME='" + cache.string() + "' HFVIEW_CACHE_MIB=1 " + HFVIEW_BINARY, "copy.tif" + shot,
             dir.path.string());
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(archives().size(), 1u);
  EXPECT_EQ(archives()[0].substr(0, 5), "copy-");
}

// hfview DEM killed with SIGKILL at 20 random moments while it packs into its cache (issue 16):
// its hfpack child ends with it (SIGTERM), the cache then holds the complete archive or none,
// and the next complete run leaves no temporary file and the same archive as an undisturbed one.
TEST(HfviewDemCli, KilledWhilePackingLeavesTheCacheCompleteOrEmpty) {
  REQUIRE_SAMPLES_AND_GL();
  const fs::path tif = fs::path(kSample).parent_path() / "sample_terrain.tif";
  if (!fs::exists(tif)) GTEST_SKIP() << "no " << tif << " (a build without GDAL)";
  TempDir dir;
  const fs::path cache = dir.path / "cache";
  auto run = [&](double killAfterSeconds) {  // < 0: run to the end
    // As runCmd: under ASan the leak check at exit would report Mesa's one-time allocations.
    const char* asan = std::getenv("ASAN_OPTIONS");
    return runMaybeKilled({HFVIEW_BINARY, tif.string(), "--headless", "--screenshot", (dir.path / "x.png").string(),
                           "--size", "64x48", "-q"},
                          killAfterSeconds,
                          {{"XDG_CACHE_HOME", cache.string()},
                           {"ASAN_OPTIONS", std::string(asan && *asan ? std::string(asan) + ":" : "") + "detect_leaks=0"}});
  };
  auto files = [&](bool temporaries) {
    std::vector<fs::path> out;
    if (fs::exists(cache / "hfview"))
      for (const auto& e : fs::directory_iterator(cache / "hfview"))
        if ((e.path().filename().string().find(".tmp.") != std::string::npos) == temporaries) out.push_back(e.path());
    return out;
  };
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(run(-1), 0);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(files(false).size(), 1u);
  const fs::path archive = files(false)[0];
  const std::string reference = slurp(archive.string());
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> moment(0.0, seconds);
  for (int k = 0; k < 20; ++k) {
    fs::remove(archive);
    run(moment(rng));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the orphaned hfpack's SIGTERM exit
    for (const fs::path& f : files(false)) EXPECT_EQ(slurp(f.string()), reference) << "kill " << k << ": " << f;
  }
  const size_t left = files(true).size();
  ASSERT_EQ(run(-1), 0);
  EXPECT_EQ(slurp(archive.string()), reference);
  EXPECT_TRUE(files(true).empty()) << files(true).size() << " temporary files left after " << left;
  std::printf("[ kills    ] hfview: 20 kills over %.2f s runs left %zu temporary files, none after the next run\n",
              seconds, left);
}

TEST(HfviewBenchCli, TinyRunWritesCsv) {
  REQUIRE_SAMPLES_AND_GL();
  TempDir dir;
  const CmdResult r =
      hfview("'" + kSample + "' --headless --bench --size 160x90 --frames 6 --csv b.csv", dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("hfview bench:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("6 frames"), std::string::npos) << r.out;
  std::ifstream f(dir / "b.csv");
  std::vector<std::string> rows;
  for (std::string l; std::getline(f, l);) rows.push_back(l);
  ASSERT_GE(rows.size(), 8u);
  EXPECT_EQ(rows[0].rfind("phase,", 0), 0u);
  EXPECT_EQ(std::count_if(rows.begin(), rows.end(),
                          [](const std::string& l) { return l.rfind("flight,", 0) == 0; }),
            6);
  // -q: nothing on stdout; the raw twin with --stream raw; a recorded path.
  writeText(dir / "p.txt", "0 300 300 2000 45 -20\n0.05 400 400 2000 45 -20\n");
  const CmdResult q = hfview("'" + kRaw + "' --headless --bench --stream raw --size 160x90 --dt 0.01 "
                             "--path p.txt --csv q.csv -q",
                             dir);
  ASSERT_EQ(q.status, 0) << q.err;
  EXPECT_TRUE(q.out.empty()) << q.out;
  std::ifstream g(dir / "q.csv");
  rows.clear();
  for (std::string l; std::getline(g, l);) rows.push_back(l);
  EXPECT_EQ(std::count_if(rows.begin(), rows.end(),
                          [](const std::string& l) { return l.rfind("flight,", 0) == 0; }),
            6);  // 0.05 / 0.01 + 1
}

}  // namespace
