// flythrough_bench.cpp - `hfbench flythrough` (flythrough_bench.h).
#include "json.h"
#include "flythrough_bench.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "archive/archive.h"
#include "cli_options.h"
#include "frametime_plot.h"
#include "render/flythrough/flythrough.h"
#include "render/gl/stream_gl.h"

namespace hfbench {

namespace {

int fail(const std::string& msg) {
  std::fprintf(stderr, "Error: %s\n", msg.c_str());
  return 1;
}

// --help: the description, then CLI11's option list, then the details.
const char* kAbout =
    "Flies one camera path over RAW (hfpack --codec raw) and HFPAC (the same DEM, hfpack) with\n"
    "the strategies raw, cpu and cuda x K for each K of --streams (and cuda on RBUC, a\n"
    "hfpac+rbuc twin), one after the other in this process, each from an empty atlas.\n"
    "When HFPAC has imagery (hfpack --imagery; RAW its transcode), two more runs compare it:\n"
    "cpu with RGBA8 imagery uploads (imagery raw) and cpu without imagery; every other run\n"
    "streams imagery as its strategy does by default (raw: RGBA8, cpu: JPEG decode + BC1 on\n"
    "CPU threads, cuda: JPEG decode + BC1 on the GPU; a cuda run without imagery measures its\n"
    "render-thread cost). A third, cpu, imagery bc1, flies the\n"
    "imagery's bc1 twin (hfpack transcode HFPAC BC1.hfa --imagery-codec bc1: the BC1 mip chains\n"
    "stored, uploaded as they are): --bc1, else HFPAC's name with _bc1 beside it when it exists;\n"
    "without one that run is skipped with a note.\n";
const char* kDetails =
    "Writes DIR/NAME-<run>.csv (one row per frame), DIR/NAME.md (the report) and\n"
    "DIR/NAME-frametime.png. Defaults: DIR '.', NAME from HFPAC's file name, 1920x1080,\n"
    "tau 1, the diagonal at 1/3 of the maximum height at 8000 m/s, dt 1/60 s, frames to cover\n"
    "the path (at most 3000), an atlas for 0.55 of all tiles.\n"
    "Before the timed runs every strategy flies --warmup-frames frames (default 30, 0 = none)\n"
    "untimed, so that no run pays CUDA or driver initialisation. --repeat R (default 1) flies\n"
    "the whole list R times, repeat r starting r places further down the list, so every run\n"
    "takes every position; per run the repeat with the median median-frame is reported (and\n"
    "every repeat's first view and median frame are listed).\n"
    "I/O: --io warm (default) reads every archive once before the runs, so no run touches the\n"
    "disk; --io cold drops the archives' pages (page cache and mapping) before every run and\n"
    "atlas fill. --io-limit passes every payload read through one simulated channel of MB/S\n"
    "(10^6 bytes/s; e.g. 100 a network share, 500 a SATA SSD).\n"
    "--cache vram[:MiB] adds a run 'cuda x K, vram' (K: the second --streams value, else the\n"
    "first) that keeps the compressed tiles in device memory (hfview --cache); when the archive\n"
    "fits, it is loaded into device memory before the timing starts (the time it took is\n"
    "reported as cache_load_ms), so the run and its atlas fill decode from video memory.\n"
    "--json FILE also writes every run's figures as {\"runs\": [{dem, ratio, io, cache, strategy,\n"
    "first_view_ms, fill_ms, missing_tiles_per_frame, h2d_bytes, payload_bytes, ...}]}\n"
    "(docs/benchmarks.md).\n";

struct RunSpec {
  std::string label;     // "raw", "cpu", "cuda x2", "cuda x2 rbuc"
  std::string file;      // for the CSV name: "raw", "cpu", "cuda2", "cuda2-rbuc"
  std::string strategy;  // factory name
  int streams = 2;
  int archive = 0;       // index into the archives: 0 raw, 1 hfpac, then rbuc and bc1 when given
  std::string imagery;   // "" = the renderer's default for the strategy, "raw" (RGBA8), "off"
  bool vram = false;     // cuda with the VRAM-resident compressed cache (--cache vram)
  bool progressive = false;  // tiles lossy first (layers 1 + 2), refined in place (--progressive)
};

// The settings of one run: its imagery choice on top of the common ones.
// Runs that upload imagery as RGBA8 (8 bytes per BC1 byte) get 8 x the imagery part of the
// budget, so that every run holds the same number of imagery layers and height slots. Only
// when the run's archive has imagery: without it the renderer gives the whole budget to
// heights, and an inflated budget would hand `raw` a bigger height atlas (a finer view, more
// triangles) than the runs it is compared with.
hfr::RenderSettings runSettings(const hfr::RenderSettings& rs, const RunSpec& spec, const hfa::ArchiveReader& archive) {
  hfr::RenderSettings r = rs;
  if (spec.imagery == "off") r.imagery = false;
  else if (!spec.imagery.empty()) r.imageryStream = spec.imagery;
  r.imageryVramCache = spec.vram;  // the imagery's BC1 chains in video memory too (cuda imagery)
  const bool rgba8 = spec.imagery == "raw" || (spec.imagery.empty() && spec.strategy == "raw");
  const bool hasImagery = archive.hasImagery() && !archive.imageryTiles().empty();
  if (rgba8 && r.imagery && hasImagery) {
    const double colour = rs.atlasBudgetMiB * rs.imageryBudgetFraction;
    const double heights = rs.atlasBudgetMiB - colour;
    r.atlasBudgetMiB = heights + 8 * colour;
    r.imageryBudgetFraction = 8 * colour / r.atlasBudgetMiB;
  }
  return r;
}

bool parseIntList(const char* s, std::vector<int>& out) {
  out.clear();
  const char* p = s;
  while (*p) {
    char* end = nullptr;
    const long v = std::strtol(p, &end, 10);
    if (end == p || v < 1 || v > 64) return false;
    out.push_back(int(v));
    p = end;
    if (*p == ',' && p[1]) ++p;  // a comma must be followed by another K
    else if (*p) return false;
  }
  return !out.empty();
}

std::string baseName(const std::string& path) {
  std::string b = path.substr(path.find_last_of('/') + 1);
  const size_t dot = b.rfind(".hfa");
  if (dot != std::string::npos && dot + 4 == b.size()) b.resize(dot);
  return b.empty() ? "flythrough" : b;
}

// MB/s as a reader writes it ("2000", "12.5"), never in exponent form.
std::string mbpsText(double mbps) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", mbps);
  return buf;
}

uint64_t payloadBytes(const hfa::ArchiveReader& a) {
  uint64_t n = 0;
  for (const auto& t : a.tiles()) n += t.size;
  return n;
}

// Reads every payload (heights and imagery) once (CRC checked) so that the OS page cache holds the archive and no
// run pays for the disk that an earlier one did not: the comparison is of the strategies.
bool warm(const hfa::ArchiveReader& a, std::string& error) {
  for (size_t t = 0; t < a.tiles().size(); ++t) {
    const uint8_t* data = nullptr;
    size_t size = 0;
    if (!a.payload(t, data, size, error)) return false;
  }
  for (size_t t = 0; t < a.imageryTiles().size(); ++t) {
    const uint8_t* data = nullptr;
    size_t size = 0;
    if (!a.imageryPayload(t, data, size, error)) return false;
  }
  return true;
}

// Same DEM, same pyramid: otherwise the runs would not see the same tiles. The index's per-tile
// statistics (sample range, LOD errors; kept by hfpack transcode) tell two DEMs of one size apart.
bool samePyramid(const hfa::ArchiveReader& a, const hfa::ArchiveReader& b) {
  const hfa::Header &x = a.header(), &y = b.header();
  if (x.tileLog != y.tileLog || x.levels != y.levels || x.width != y.width ||
      x.height != y.height || a.tiles().size() != b.tiles().size())
    return false;
  for (size_t i = 0; i < a.tiles().size(); ++i) {
    const auto &s = a.tiles()[i], &t = b.tiles()[i];
    if (s.level != t.level || s.x != t.x || s.y != t.y || s.minSample != t.minSample ||
        s.maxSample != t.maxSample || s.lodError != t.lodError)
      return false;
  }
  return true;
}

std::string fixed2(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}
std::string ratio(double a, double b) { return b > 0 ? fixed2(a / b) : "-"; }
std::string mib(double bytes) { return fixed2(bytes / (1024.0 * 1024.0)); }
std::string general3(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}
const char* mark(bool ok) { return ok ? "met" : "**missed**"; }

struct Measured {
  RunSpec spec;
  hfr::FlythroughRun run;
  hfr::FlightSummary sum;
  std::string name;  // the strategy that actually ran (cuda may fall back to cpu)
  // --repeat: every repeat's first view and median frame (ms), in repeat order; `run` is the
  // repeat with the median median-frame.
  std::vector<double> repeatFirstViewMs, repeatMedianMs;
  double cacheLoadMs = 0;    // --cache vram: loading the archive into device memory
  uint64_t cacheBytes = 0;   // and the bytes it holds
  // A URL archive (http_source.h): range requests and body bytes during the run, and the
  // distinct tiles (heights + imagery) it read (with --io cold: all came over the network).
  bool remote = false;
  uint64_t httpRequests = 0, httpBytes = 0, httpTiles = 0;
};

// The first view: the first frame with every wanted tile resident; with progressive loading
// lossy (FillResult::viewMs), else the settled fill (which is also the exact view).
double firstViewMs(const Measured& m) {
  return m.spec.progressive && m.run.fill.viewMs >= 0 ? m.run.fill.viewMs : m.run.fill.ms;
}


// Mean per flight frame of the parts of a frame (report: where the time goes).
struct Breakdown {
  double select = 0, updateCpu = 0, drawCpu = 0, updateGpu = 0, drawGpu = 0, frame = 0, cpu = 0;
};
Breakdown breakdown(const hfr::FlythroughRun& run) {
  Breakdown b;
  double n = 0;
  for (const auto& f : run.frames) {
    if (f.fill) continue;
    b.select += f.selectMs;
    b.updateCpu += f.updateCpuMs;
    b.drawCpu += f.drawCpuMs;
    b.updateGpu += f.updateGpuMs;
    b.drawGpu += f.drawGpuMs;
    b.frame += f.frameMs;
    b.cpu += f.renderCpuMs;
    ++n;
  }
  if (n > 0) {
    for (double* v : {&b.select, &b.updateCpu, &b.drawCpu, &b.updateGpu, &b.drawGpu, &b.frame, &b.cpu})
      *v /= n;
  }
  return b;
}

bool writeReport(const std::string& path, const std::string& name, const std::string& command,
                 const std::string& device, const std::string& note,
                 const hfr::RenderSettings& rs, const hfr::FlythroughOptions& fly,
                 const std::vector<const hfa::ArchiveReader*>& archives,
                 const std::vector<std::string>& archivePaths, const std::vector<Measured>& runs,
                 const std::string& plotFile, const std::string& bc1Skipped, int warmupFrames,
                 const std::string& ioLine, std::string& error) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "w"), &std::fclose);
  if (!f) {
    error = "cannot write " + path + ": " + std::strerror(errno);
    return false;
  }
  std::FILE* o = f.get();
  const double rawBytes = double(payloadBytes(*archives[0]));
  const double hfBytes = double(payloadBytes(*archives[1]));
  const double compression = hfBytes > 0 ? rawBytes / hfBytes : 0;
  const hfa::Header& h = archives[1]->header();
  std::fprintf(o, "# Flythrough: %s\n\n", name.c_str());
  std::fprintf(o, "- command: `%s`\n", command.c_str());
  std::fprintf(o, "- device: %s\n", device.c_str());
  if (!note.empty()) std::fprintf(o, "- note: %s\n", note.c_str());
  std::fprintf(o, "- DEM: %u x %u samples, tiles of %d, %d levels, %zu tiles\n", h.width, h.height,
               h.tileSize(), h.levels, archives[1]->tiles().size());
  for (size_t i = 0; i < archives.size(); ++i) {
    if (!archives[i]) continue;
    const double b = double(payloadBytes(*archives[i]));
    std::fprintf(o, "- `%s`: %s MiB of payloads (%s x smaller than raw)\n",
                 archivePaths[i].c_str(), mib(b).c_str(), ratio(rawBytes, b).c_str());
  }
  const Measured& first = runs.front();
  std::fprintf(o,
               "- view: %dx%d, tau %.3g px, %s, %zu frames of %.4f s (fixed step), atlas %zu "
               "slots = %.0f %% of the tiles, prefetch %s\n",
               rs.width, rs.height, rs.tau, first.run.path.c_str(), first.sum.frames, fly.dt,
               first.run.atlasSlots,
               100.0 * double(first.run.atlasSlots) / double(std::max<size_t>(1, first.run.archiveTiles)),
               rs.prefetch ? "on" : "off");
  std::fprintf(o,
               "- method: every run starts from an empty atlas (top level only); frames are\n"
               "  synchronous (frame + glFinish), so a frame time is its whole CPU + GPU cost;\n"
               "  loader threads run in real time between frames. \"atlas fill\" (the\n"
               "  thesis's measure) = a fresh renderer streams the first view into its empty atlas,\n"
               "  no drawing, no per-step upload cap, until everything it wants is resident and the\n"
               "  GPU has finished; \"first view\" = synchronous frames (at most 64 tile uploads each;\n"
               "  gl and cuda deliver the archive's ratio times as many, at most 8x) at\n"
               "  the first camera until the same. Ratios are against `raw` from this same process.\n");
  const size_t repeats = runs.empty() ? 1 : runs.front().repeatMedianMs.size();
  std::fprintf(o, "- I/O: %s.\n", ioLine.c_str());
  if (warmupFrames > 0)
    std::fprintf(o, "- warm-up: every strategy flew %d frame%s untimed before the first timed run.\n", warmupFrames,
                 warmupFrames == 1 ? "" : "s");
  if (repeats > 1)
    std::fprintf(o,
                 "- repeats: the list was flown %zu times, repeat r starting r runs further down it (every\n"
                 "  run in every position); each run's figures are its repeat with the median median frame\n"
                 "  (the lower middle one for an even count).\n",
                 repeats);
  std::fprintf(o, "\n");

  const Measured* raw = nullptr;
  for (const auto& m : runs)
    if (m.spec.strategy == "raw") raw = &m;
  std::fprintf(o, "## Results\n\n");
  std::fprintf(o,
               "| run | atlas fill ms | atlas fill / raw | first view ms | first view / raw | exact view ms | median ms | p95 | p99 | max | max after "
               "first | median / raw | p99 / raw | render CPU median ms | update CPU ms | "
               "update GPU ms | host->device MiB | bytes / raw | missing tiles / frame |\n");
  std::fprintf(o, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const auto& m : runs) {
    const auto& s = m.sum;
    const double bytes = double(s.compressedToDevice + s.samplesToDevice +
                                m.run.fill.compressedToDevice + m.run.fill.samplesToDevice);
    double rawTotal = 0;
    if (raw)
      rawTotal = double(raw->sum.compressedToDevice + raw->sum.samplesToDevice +
                        raw->run.fill.compressedToDevice + raw->run.fill.samplesToDevice);
    std::fprintf(o, "| %s%s | %.1f | %s | %.1f | %s | %.1f | %.3f | %.3f | %.3f | %.3f | %.3f | %s | %s | %.3f | %.3f | %.3f | %s | %s | %.1f |\n",
                 m.spec.label.c_str(), m.name != m.spec.strategy ? (" (ran as " + m.name + ")").c_str() : "",
                 m.run.atlasFill.ms, raw ? ratio(m.run.atlasFill.ms, raw->run.atlasFill.ms).c_str() : "-",
                 firstViewMs(m), raw ? ratio(firstViewMs(m), raw->run.fill.ms).c_str() : "-", m.run.fill.ms,
                 s.medianMs, s.p95Ms, s.p99Ms, s.maxMs, s.maxAfterFirstMs,
                 raw ? ratio(s.medianMs, raw->sum.medianMs).c_str() : "-",
                 raw ? ratio(s.p99Ms, raw->sum.p99Ms).c_str() : "-", s.medianRenderCpuMs,
                 s.meanUpdateCpuMs, s.meanUpdateGpuMs, mib(bytes).c_str(),
                 ratio(bytes, rawTotal).c_str(), s.meanMissing);
  }
  std::fprintf(o, "\nhost->device bytes: initial fill + flight; `raw` and `cpu` move decompressed "
                  "samples, `cuda` only compressed payloads.\n\n");

  const bool anyImagery = archives[1]->hasImagery();
  if (anyImagery) {
    const hfa::ImageryHeader& im = archives[1]->imagery();
    std::fprintf(o, "## Imagery\n\n");
    std::fprintf(o, "`%s`: %zu imagery tiles of %d x %d texels, %s, %d levels (%d finer than the heights). "
                    "RGBA8 runs get 8 x the imagery part of the atlas budget in bytes, so every run holds "
                    "the same number of imagery layers.\n\n",
                 archivePaths[1].c_str(), archives[1]->imageryTiles().size(), im.tileSize, im.tileSize,
                 hfa::imageryCodecName(im.codec), im.levels, im.finerLevels);
    for (size_t i = 2; i < archives.size(); ++i)
      if (archives[i] && archives[i]->hasImagery() && archives[i]->imagery().codec == hfa::ImageryCodec::Bc1 &&
          im.codec != hfa::ImageryCodec::Bc1) {
        uint64_t a = 0, b = 0;
        for (const auto& t : archives[1]->imageryTiles()) a += t.size;
        for (const auto& t : archives[i]->imageryTiles()) b += t.size;
        std::fprintf(o, "`%s`: its bc1 twin (BC1 mip chains stored, uploaded as they are): %s MiB of imagery "
                        "payloads against %s MiB (%s x).\n\n",
                     archivePaths[i].c_str(), mib(double(b)).c_str(), mib(double(a)).c_str(),
                     ratio(double(b), double(a)).c_str());
      }
    if (!bc1Skipped.empty()) std::fprintf(o, "%s\n\n", bc1Skipped.c_str());
    std::fprintf(o, "| run | imagery | fill imagery tiles | flight imagery tiles | imagery read MiB (flight) | "
                    "imagery host->device MiB (fill + flight) | heights host->device MiB | missing imagery / frame | "
                    "max missing after the first frame | imagery render-thread ms (median, p99) | render CPU median ms | median frame ms |\n");
    std::fprintf(o, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (const auto& m : runs) {
      const auto& s = m.sum;
      const hfa::ArchiveReader& ar = *archives[size_t(m.spec.archive)];
      const bool bc1Tiles = ar.hasImagery() && ar.imagery().codec == hfa::ImageryCodec::Bc1;
      const std::string mode = m.spec.imagery == "off" ? "off"
                               : !m.spec.imagery.empty() ? m.spec.imagery + " (RGBA8)"
                               : m.spec.strategy == "raw" ? (bc1Tiles ? "bc1 tiles decoded (RGBA8)" : "raw (RGBA8)")
                               : bc1Tiles                 ? "bc1 tiles (BC1 as stored)"
                               : m.spec.strategy == "cuda" ? "cuda (JPEG -> BC1 on the GPU)"
                                                           : "cpu (BC1)";
      std::fprintf(o, "| %s | %s | %zu | %zu | %s | %s | %s | %.2f | %zu | %.3f, %.3f | %.3f | %.3f |\n", m.spec.label.c_str(),
                   mode.c_str(), m.run.fill.colourTiles, s.colourUploads, mib(double(s.colourBytesRead)).c_str(),
                   mib(double(s.colourBytesToDevice + m.run.fill.colourBytesToDevice)).c_str(),
                   mib(double(s.compressedToDevice + s.samplesToDevice + m.run.fill.compressedToDevice +
                              m.run.fill.samplesToDevice)).c_str(),
                   s.meanColourMissing, s.maxColourMissingAfterFirst, s.medianColourCpuMs, s.p99ColourCpuMs,
                   s.medianRenderCpuMs, s.medianMs);
    }
    const Measured *cpu = nullptr, *cpuOff = nullptr, *cpuRaw = nullptr, *cpuBc1 = nullptr;
    for (const auto& m : runs) {
      if (m.spec.strategy != "cpu" || m.name != "cpu") continue;
      if (m.spec.archive != 1) {
        if (m.spec.imagery.empty() && archives[size_t(m.spec.archive)]->hasImagery()) cpuBc1 = &m;
        continue;
      }
      if (m.spec.imagery.empty()) cpu = &m;
      else if (m.spec.imagery == "off") cpuOff = &m;
      else if (m.spec.imagery == "raw") cpuRaw = &m;
    }
    if (cpu && cpuOff) {
      const double dCpu = cpu->sum.medianRenderCpuMs - cpuOff->sum.medianRenderCpuMs;
      std::fprintf(o, "\n| imagery target (cpu strategy) | measured | |\n|---|---|---|\n");
      std::fprintf(o, "| 0 missing imagery tiles after the first view | at most %zu per frame (mean %.2f) | %s |\n",
                   cpu->sum.maxColourMissingAfterFirst, cpu->sum.meanColourMissing,
                   mark(cpu->sum.maxColourMissingAfterFirst == 0));
      std::fprintf(o, "| render-thread time per frame unchanged within 0.1 ms by imagery | median %.3f vs %.3f ms "
                      "without imagery (%+.3f) | %s |\n",
                   cpu->sum.medianRenderCpuMs, cpuOff->sum.medianRenderCpuMs, dCpu, mark(std::fabs(dCpu) <= 0.1));
      std::fprintf(o, "| (the imagery's own render-thread work, timed directly: planning, cells, requests, "
                      "uploads) | median %.3f ms, p99 %.3f ms per frame | %s |\n",
                   cpu->sum.medianColourCpuMs, cpu->sum.p99ColourCpuMs, mark(cpu->sum.medianColourCpuMs <= 0.1));
      if (cpuRaw) {
        const double bc1 = double(cpu->sum.colourBytesToDevice + cpu->run.fill.colourBytesToDevice);
        const double rgba = double(cpuRaw->sum.colourBytesToDevice + cpuRaw->run.fill.colourBytesToDevice);
        std::fprintf(o, "| (imagery host->device, BC1 / RGBA8) | %s / %s MiB = %s | |\n", mib(bc1).c_str(),
                     mib(rgba).c_str(), ratio(bc1, rgba).c_str());
      }
      if (cpuBc1) {
        std::fprintf(o, "| (imagery read in flight, bc1 tiles / %s tiles) | %s / %s MiB = %s | |\n",
                     hfa::imageryCodecName(archives[1]->imagery().codec), mib(double(cpuBc1->sum.colourBytesRead)).c_str(),
                     mib(double(cpu->sum.colourBytesRead)).c_str(),
                     ratio(double(cpuBc1->sum.colourBytesRead), double(cpu->sum.colourBytesRead)).c_str());
        std::fprintf(o, "| (bc1 tiles: first view, atlas fill, median frame, missing imagery / frame) | %.1f, %.1f, %.3f ms, "
                        "%.2f (%s tiles: %.1f, %.1f, %.3f ms, %.2f) | |\n",
                     cpuBc1->run.fill.ms, cpuBc1->run.atlasFill.ms, cpuBc1->sum.medianMs, cpuBc1->sum.meanColourMissing,
                     hfa::imageryCodecName(archives[1]->imagery().codec), cpu->run.fill.ms, cpu->run.atlasFill.ms,
                     cpu->sum.medianMs, cpu->sum.meanColourMissing);
      }
    }
    // The GPU imagery path: the first cuda run with imagery against raw and against itself
    // without imagery.
    const Measured *cudaImg = nullptr, *cudaOff = nullptr, *rawRun = nullptr;
    for (const auto& m : runs) {
      if (m.spec.strategy == "raw" && m.spec.imagery.empty() && !rawRun) rawRun = &m;
      if (m.spec.strategy != "cuda" || m.name != "cuda" || m.spec.archive != 1) continue;
      if (m.spec.imagery.empty() && !cudaImg) cudaImg = &m;
      if (m.spec.imagery == "off" && !cudaOff) cudaOff = &m;
    }
    if (cudaImg && rawRun) {
      const double fillRatio = rawRun->run.fill.ms > 0 ? cudaImg->run.fill.ms / rawRun->run.fill.ms : 0.0;
      const double toDevice = double(cudaImg->sum.colourBytesToDevice), read = double(cudaImg->sum.colourBytesRead);
      std::fprintf(o, "\n| imagery target (%s: JPEG decode + BC1 on the GPU) | measured | |\n|---|---|---|\n",
                   cudaImg->spec.label.c_str());
      std::fprintf(o, "| first-view fill <= 0.5x raw | %.1f vs %.1f ms = %.2fx | %s |\n", cudaImg->run.fill.ms,
                   rawRun->run.fill.ms, fillRatio, mark(fillRatio > 0 && fillRatio <= 0.5));
      std::fprintf(o, "| imagery host->device <= 1.05x the compressed payload (flight) | %s / %s MiB = %s | %s |\n",
                   mib(toDevice).c_str(), mib(read).c_str(), ratio(toDevice, read).c_str(),
                   mark(read > 0 && toDevice <= 1.05 * read));
      std::fprintf(o, "| no frame over 8 ms after the first | largest %.2f ms | %s |\n", cudaImg->sum.maxAfterFirstMs,
                   mark(cudaImg->sum.maxAfterFirstMs <= 8.0));
      if (cudaOff) {
        const double d = cudaImg->sum.medianRenderCpuMs - cudaOff->sum.medianRenderCpuMs;
        std::fprintf(o, "| render-thread time per frame unchanged within 0.1 ms by imagery | median %.3f vs %.3f ms "
                        "without imagery (%+.3f) | %s |\n",
                     cudaImg->sum.medianRenderCpuMs, cudaOff->sum.medianRenderCpuMs, d, mark(std::fabs(d) <= 0.1));
      }
      std::fprintf(o, "| (imagery render-thread work, timed directly) | median %.3f ms, p99 %.3f ms per frame | |\n",
                   cudaImg->sum.medianColourCpuMs, cudaImg->sum.p99ColourCpuMs);
    }
    std::fprintf(o, "\n");
  }

  if (repeats > 1) {
    std::fprintf(o, "## Repeats (first view ms / median frame ms, in repeat order)\n\n| run |");
    for (size_t r = 0; r < repeats; ++r) std::fprintf(o, " repeat %zu |", r + 1);
    std::fprintf(o, "\n|---|");
    for (size_t r = 0; r < repeats; ++r) std::fprintf(o, "---:|");
    std::fprintf(o, "\n");
    for (const auto& m : runs) {
      std::fprintf(o, "| %s |", m.spec.label.c_str());
      for (size_t r = 0; r < m.repeatMedianMs.size(); ++r)
        std::fprintf(o, " %.1f / %.3f |", m.repeatFirstViewMs[r], m.repeatMedianMs[r]);
      std::fprintf(o, "\n");
    }
    std::fprintf(o, "\n");
  }
  std::fprintf(o, "## Where the time goes (mean per flight frame, ms)\n\n");
  std::fprintf(o, "| run | frame | render-thread CPU | LOD selection | atlas update CPU | draw CPU | atlas update GPU | draw GPU |\n");
  std::fprintf(o, "|---|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const auto& m : runs) {
    const Breakdown b = breakdown(m.run);
    std::fprintf(o, "| %s | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f |\n", m.spec.label.c_str(),
                 b.frame, b.cpu, b.select, b.updateCpu, b.drawCpu, b.updateGpu, b.drawGpu);
  }

  // Targets (issue 6), for the best cuda run (lowest median frame time).
  const Measured* cuda = nullptr;
  for (const auto& m : runs)
    if (m.name == "cuda" && m.spec.archive == 1 && (!cuda || m.sum.medianMs < cuda->sum.medianMs))
      cuda = &m;
  std::fprintf(o, "\n## Targets\n\n");
  if (!cuda || !raw) {
    std::fprintf(o, "No `cuda` run (no CUDA device or build) or no `raw` run: targets not evaluated.\n");
  } else {
    const auto& c = cuda->sum;
    const double fillRatio = cuda->run.atlasFill.ms / std::max(1e-9, raw->run.atlasFill.ms);
    const double viewRatio = cuda->run.fill.ms / std::max(1e-9, raw->run.fill.ms);
    const double cudaBytes = double(c.compressedToDevice + c.samplesToDevice +
                                    cuda->run.fill.compressedToDevice + cuda->run.fill.samplesToDevice);
    const double rawTotal = double(raw->sum.compressedToDevice + raw->sum.samplesToDevice +
                                   raw->run.fill.compressedToDevice + raw->run.fill.samplesToDevice);
    const Breakdown b = breakdown(cuda->run);
    std::fprintf(o, "Best cuda run: %s.\n\n", cuda->spec.label.c_str());
    std::fprintf(o, "| target | measured | |\n|---|---|---|\n");
    std::fprintf(o, "| atlas fill <= 0.5 x raw | %.2f x (%.1f vs %.1f ms, %zu tiles) | %s |\n", fillRatio,
                 cuda->run.atlasFill.ms, raw->run.atlasFill.ms, cuda->run.atlasFill.tiles,
                 mark(fillRatio <= 0.5));
    std::fprintf(o, "| (first view with frames, for reference) | %.2f x (%.1f vs %.1f ms) | |\n",
                 viewRatio, cuda->run.fill.ms, raw->run.fill.ms);
    std::fprintf(o, "| median frame <= raw | %.3f vs %.3f ms | %s |\n", c.medianMs, raw->sum.medianMs,
                 mark(c.medianMs <= raw->sum.medianMs));
    std::fprintf(o, "| p99 frame <= raw | %.3f vs %.3f ms | %s |\n", c.p99Ms, raw->sum.p99Ms,
                 mark(c.p99Ms <= raw->sum.p99Ms));
    std::fprintf(o, "| render-thread CPU < 0.5 ms per frame | median %.3f, p99 %.3f ms | %s |\n",
                 c.medianRenderCpuMs, c.p99RenderCpuMs, mark(c.p99RenderCpuMs < 0.5));
    std::fprintf(o, "| median frame < 2 ms | %.3f ms | %s |\n", c.medianMs, mark(c.medianMs < 2));
    std::fprintf(o, "| no frame > 8 ms after the first | max %.3f ms | %s |\n", c.maxAfterFirstMs,
                 mark(c.maxAfterFirstMs <= 8));
    std::fprintf(o, "| host->device bytes <= raw / compression ratio (%.2f) | %s MiB vs %s MiB | %s |\n",
                 compression, mib(cudaBytes).c_str(), mib(rawTotal / std::max(1e-9, compression)).c_str(),
                 mark(cudaBytes <= rawTotal / std::max(1e-9, compression) * 1.0001));
    std::fprintf(o, "\nThe cuda frame, mean ms: LOD selection %.3f, atlas update CPU %.3f (GPU %.3f), "
                    "draw CPU %.3f (GPU %.3f), render-thread CPU %.3f of %.3f.\n",
                 b.select, b.updateCpu, b.updateGpu, b.drawCpu, b.drawGpu, b.cpu, b.frame);
  }
  if (plotFile.rfind("(no plot", 0) == 0)
    std::fprintf(o, "\n## Frame time over the path\n\n%s\n", plotFile.c_str());
  else
    std::fprintf(o, "\n## Frame time over the path\n\n![frame time](%s)\n", plotFile.c_str());
  if (std::fflush(o) != 0 || std::ferror(o)) {
    error = "writing " + path + " failed";
    return false;
  }
  return true;
}

// The runs as JSON (docs/benchmarks.md, "Recorded results"): the field names of
// bench/results/compression/h100.json. Bytes over the fill and the flight, heights and imagery.
std::string flythroughJson(const std::string& name, const std::string& command, const std::string& device,
                           const std::string& note, const std::string& io, bool cold, const hfr::RenderSettings& rs,
                           const std::vector<const hfa::ArchiveReader*>& archives, const std::vector<Measured>& runs) {
  std::string out;
  JsonWriter j(out);
  j.beginObject();
  j.field("benchmark", "flythrough").field("device", device).field("command", command).field("note", note);
  j.field("width", rs.width).field("height", rs.height).field("tau_px", rs.tau);
  j.key("runs").beginArray();
  const double rawPayload = double(payloadBytes(*archives[0]));
  for (const Measured& m : runs) {
    uint64_t h2d = 0, payload = 0, payloadSent = 0;
    for (const hfr::FlyFrame& f : m.run.frames) {
      h2d += f.compressedToDevice + f.samplesToDevice + f.colourBytesToDevice;
      payload += f.bytesRead + f.colourBytesRead;
      payloadSent += f.payloadToDevice;
    }
    const double own = double(payloadBytes(*archives[size_t(m.spec.archive)]));
    j.beginObject();
    j.field("dem", name).field("ratio", own > 0 ? rawPayload / own : 0.0).field("io", io).field("io_cold", cold);
    j.field("cache", m.spec.vram ? "vram" : "host").field("strategy", m.spec.label).field("strategy_run", m.name);
    if (m.spec.vram)
      j.field("cache_load_ms", m.cacheLoadMs + m.run.fill.colourPreloadMs)
          .field("cache_bytes", m.cacheBytes + m.run.fill.colourCacheBytes)
          .field("imagery_cache_load_ms", m.run.fill.colourPreloadMs)
          .field("imagery_cache_bytes", m.run.fill.colourCacheBytes);
    j.field("progressive", m.spec.progressive);
    j.field("first_view_ms", firstViewMs(m)).field("exact_view_ms", m.run.fill.ms).field("fill_ms", m.run.atlasFill.ms);
    j.field("fill_gpu_wait_ms", m.run.atlasFill.finishMs).field("fill_steps", int64_t(m.run.atlasFill.stepMs.size()));
    j.field("fill_plan_ms", m.run.atlasFill.planMs).field("fill_deliver_ms", m.run.atlasFill.deliverMs);
    j.field("missing_tiles_per_frame", m.sum.meanMissing);
    j.field("host_cache_hits", int64_t(m.sum.hostHits))
        .field("host_staged_tiles", int64_t(m.sum.hostStaged));
    j.field("h2d_bytes", h2d).field("payload_bytes", payload);
    if (payloadSent) j.field("payload_to_device_bytes", payloadSent);  // cuda from host memory
    j.field("render_thread_median_ms", m.sum.medianRenderCpuMs).field("render_thread_p99_ms", m.sum.p99RenderCpuMs);
    j.field("median_frame_ms", m.sum.medianMs).field("max_frame_ms_after_first", m.sum.maxAfterFirstMs);
    j.field("triangles_per_frame", m.sum.meanTriangles);
    j.field("triangles_per_pixel", m.sum.meanTriangles / double(std::max(1, rs.width * rs.height)));
    j.field("frames", m.sum.frames).field("atlas_slots", m.run.atlasSlots);
    if (m.remote)
      j.field("http_requests", m.httpRequests)
          .field("http_bytes", m.httpBytes)
          .field("http_tiles", m.httpTiles)
          .field("requests_per_tile", m.httpTiles ? double(m.httpRequests) / double(m.httpTiles) : 0.0);
    j.endObject();
  }
  j.endArray();
  j.endObject();
  out += "\n";
  return out;
}

}  // namespace

int runFlythroughCommand(int argc, char** argv) {
  std::vector<std::string> inputs;
  std::string rbucPath, bc1Path, outDir = ".", name, pathArg = "diagonal", note, jsonPath;
  std::vector<int> streams{1, 2, 4};
  hfr::RenderSettings rs;
  rs.width = 1920;
  rs.height = 1080;
  hfr::FlythroughOptions fly;
  double budgetFraction = 0.55, budget = 0;
  int warmupFrames = 30, repeats = 1;
  std::string ioMode = "warm";
  double ioLimitMBps = 0;  // 0: no limit
  hfr::StreamOptions cacheOptions;  // --cache
  bool quiet = false;
  std::string command = "hfbench";
  for (int i = 1; i < argc; ++i) command += std::string(" ") + argv[i];
  CLI::App app{kAbout, "hfbench flythrough"};
  app.footer(kDetails);
  lastValueWins(app);
  app.add_option("ARCHIVES", inputs, "the raw archive and the HFPaC one of one DEM")->type_name("RAW.hfa HFPAC.hfa");
  app.add_option("--rbuc", rbucPath, "a hfpac+rbuc twin of HFPAC: one more cuda run")->type_name("RBUC.hfa");
  app.add_option("--bc1", bc1Path, "the imagery's bc1 twin of HFPAC")->type_name("BC1.hfa");
  app.add_option("--out", outDir, "the folder written")->type_name("DIR")->capture_default_str();
  app.add_option("--name", name, "the files' name")->type_name("NAME");
  app.add_option_function<std::string>(
      "--streams",
      [&](const std::string& v) {
        if (!parseIntList(v.c_str(), streams)) throw CLI::ValidationError("--streams", "wants K[,K...] with 1 <= K <= 64");
      },
      "the cuda runs' streams [1,2,4]")
      ->type_name("K[,K...]");
  addInt(app, "--frames", fly.frames, 1, 1000000, "flight frames (default: to cover the path, at most 3000)")
      ->default_str("");
  app.add_option_function<std::string>(
      "--size",
      [&](const std::string& v) {
        int used = 0;  // the whole value is WxH: no trailing characters
        if (std::sscanf(v.c_str(), "%dx%d%n", &rs.width, &rs.height, &used) != 2 || v[size_t(used)] ||
            rs.width < 1 || rs.height < 1 || rs.width > 16384 || rs.height > 16384)
          throw CLI::ValidationError("--size", "wants WxH (1..16384)");
      },
      "the view [1920x1080]")
      ->type_name("WxH");
  app.add_option("--tau", rs.tau, "screen-space error bound, pixels [1]")->check(finiteNumber(true));
  app.add_option("--path", pathArg, "the camera path: the diagonal or a recorded path file")
      ->type_name("diagonal|FILE")
      ->capture_default_str();
  app.add_option("--altitude", fly.altitude, "the diagonal's height, metres (default: 1/3 of the maximum height)")
      ->check(finiteNumber(false));
  app.add_option("--speed", fly.speed, "the diagonal's speed, m/s [8000]")->check(finiteNumber(true));
  app.add_option("--dt", fly.dt, "simulated seconds per frame [1/60]")->check(finiteNumber(true));
  app.add_option("--budget-fraction", budgetFraction, "an atlas for this share F of all tiles")
      ->check(finiteNumber(true))
      ->check([](const std::string& v) { return std::strtod(v.c_str(), nullptr) > 1 ? "wants 0 < F <= 1" : ""; })
      ->capture_default_str();
  app.add_option("--budget", budget, "the atlas budget, MiB (instead of --budget-fraction)")->check(finiteNumber(true));
  app.add_flag_callback("--no-prefetch", [&] { rs.prefetch = false; }, "no prefetch along the camera's motion");
  addInt(app, "--warmup-frames", warmupFrames, 0, 3000, "untimed frames per strategy before the runs");
  addInt(app, "--repeat", repeats, 1, 20, "fly the list of runs R times");
  app.add_option("--io", ioMode, "warm: every archive read once before the runs; cold: its pages dropped before each")
      ->check(CLI::IsMember({"warm", "cold"}))
      ->capture_default_str();
  app.add_option("--io-limit", ioLimitMBps, "payload reads through one channel of MB/S")->check(finiteNumber(true));
  app.add_option_function<std::string>(
         "--cache",
         [&](const std::string& v) {
           std::string err;
           if (!hfr::parseCacheOption(v, cacheOptions, err)) throw CLI::ValidationError(err);
         },
         "vram adds a run with the compressed tiles in device memory; host:MiB sizes the cuda "
         "and gl runs' host cache of "
         "compressed payloads (default 256, 0 = none)")
      ->type_name("host[:MiB]|vram[:MiB]");
  app.add_option("--json", jsonPath, "also write every run's figures as JSON")->type_name("FILE");
  app.add_option("--note", note, "a note for the report");
  bool progressive = false;
  app.add_flag("--progressive", progressive,
               "add cpu and cuda runs that load tiles lossy first (layers 1 + 2) and refine them in place; "
               "their first view is the lossy one, exact view the refined one");
  app.add_flag("-q,--quiet", quiet, "no progress on stderr");
  int status = 0;
  if (!hfcli::parse(app, argc - 1, argv + 1, status)) return status;
  if (inputs.size() != 2)
    return fail("flythrough needs RAW.hfa and HFPAC.hfa (hfbench flythrough --help)");
  if (name.empty()) name = baseName(inputs[1]);
  if (pathArg != "diagonal") {
    std::string error;
    if (!fly.path.load(pathArg, error)) return fail(error);
  }

  // Archives: raw, hfpac, optional rbuc and bc1 twin, all of one pyramid.
  std::vector<std::string> paths{inputs[0], inputs[1]};
  const bool haveRbuc = !rbucPath.empty();
  if (haveRbuc) paths.push_back(rbucPath);
  // The bc1 twin: --bc1, else NAME_bc1.hfa beside HFPAC (as bench/flythrough.sh names twins).
  const bool bc1Given = !bc1Path.empty();
  std::string bc1Beside;
  {
    const std::string& h = inputs[1];
    const size_t dot = h.size() >= 4 && h.compare(h.size() - 4, 4, ".hfa") == 0 ? h.size() - 4 : h.size();
    bc1Beside = h.substr(0, dot) + "_bc1.hfa";
  }
  if (!bc1Given) {
    struct stat st{};
    if (::stat(bc1Beside.c_str(), &st) == 0) bc1Path = bc1Beside;
  }
  int bc1Index = -1;
  if (!bc1Path.empty()) {
    bc1Index = int(paths.size());
    paths.push_back(bc1Path);
  }
  std::vector<std::unique_ptr<hfa::ArchiveReader>> archives;
  for (const auto& p : paths) {
    auto r = std::make_unique<hfa::ArchiveReader>();
    std::string error;
    if (!r->open(p, error)) return fail(p + ": " + error);
    archives.push_back(std::move(r));
  }
  if (archives[0]->header().codec != hfa::Codec::Raw)
    return fail(paths[0] + " is not a raw archive (hfpack --codec raw)");
  if (archives[1]->header().codec == hfa::Codec::Raw)
    return fail(paths[1] + " is a raw archive; give the HFPaC one second");
  for (size_t i = 1; i < archives.size(); ++i)
    if (!samePyramid(*archives[0], *archives[i]))
      return fail(paths[i] + " and " + paths[0] + " are not the same DEM (different tile pyramids)");
  std::string bc1Skipped;  // why there is no "cpu, imagery bc1" run (the report and a note say so)
  if (bc1Index >= 0) {
    const hfa::ArchiveReader& b = *archives[size_t(bc1Index)];
    std::string why;
    if (!b.hasImagery() || b.imagery().codec != hfa::ImageryCodec::Bc1) why = "its imagery is not bc1";
    else if (!archives[1]->hasImagery() || b.imageryTiles().size() != archives[1]->imageryTiles().size())
      why = "its imagery tiles are not " + paths[1] + "'s";
    if (!why.empty()) {
      if (bc1Given) return fail(bc1Path + " is not a bc1 twin of " + paths[1] + ": " + why);
      bc1Skipped = "`" + bc1Path + "` is not a bc1 twin (" + why + "): no `cpu, imagery bc1` run.";
      archives.pop_back();
      paths.pop_back();
      bc1Index = -1;
    }
  } else if (archives[1]->hasImagery()) {
    bc1Skipped = "No bc1 twin of `" + paths[1] + "` (--bc1, or `" + bc1Beside + "`: `hfpack transcode " + paths[1] +
                 " " + bc1Beside + " --imagery-codec bc1`): no `cpu, imagery bc1` run.";
  }
  if (!bc1Skipped.empty() && !quiet) std::fprintf(stderr, "Note: %s\n", bc1Skipped.c_str());
  for (size_t i = 0; ioMode == "warm" && i < archives.size(); ++i) {
    std::string error;
    if (!warm(*archives[i], error)) return fail(error);
  }
  // Before every timed run and atlas fill: a fresh read channel (--io-limit) and, with --io
  // cold, the archive's pages dropped. The page-cache share left after the drop is reported
  // (a file system that keeps files in memory cannot be made cold).
  double residentMin = 1, residentMax = 0;
  auto prepareIo = [&](hfa::ArchiveReader& a, std::string& err) {
    a.setReadLimiter(ioLimitMBps > 0 ? std::make_shared<hfa::ReadLimiter>(ioLimitMBps * 1e6) : nullptr);
    if (ioMode != "cold") return true;
    if (!a.dropPageCache(err)) return false;
    const double f = a.residentFraction();
    if (f >= 0) residentMin = std::min(residentMin, f), residentMax = std::max(residentMax, f);
    return true;
  };
  if (budget <= 0) budget = hfr::atlasBudgetForFraction(*archives[0], budgetFraction);
  rs.atlasBudgetMiB = budget;
  rs.imageryCacheMiB = cacheOptions.cacheMiB;  // the vram run's imagery pool (runSettings)
  rs.fog = true;
  {
    struct stat st{};
    if (::stat(outDir.c_str(), &st) != 0 && ::mkdir(outDir.c_str(), 0777) != 0)
      return fail("cannot create " + outDir + ": " + std::strerror(errno));
  }
  if (!jsonPath.empty() && jsonPath != "-") {  // fail now, not after the runs (--out exists by now)
    const std::string probe = jsonPath + ".tmp";
    std::FILE* f = std::fopen(probe.c_str(), "wb");
    if (!f) return fail("cannot write " + probe + ": " + std::strerror(errno));
    std::fclose(f);
    std::remove(probe.c_str());
  }

  std::vector<RunSpec> specs;
  specs.push_back({"raw", "raw", "raw", 1, 0, ""});
  specs.push_back({"cpu", "cpu", "cpu", 1, 1, ""});
  // gl: the GL compute decoder (any GPU; falls back to cpu without 64-bit shader integers).
  specs.push_back({"gl", "gl", "gl", 1, 1, ""});
  if (cacheOptions.vramCache) specs.push_back({"gl, vram", "gl-vram", "gl", 1, 1, "", true});
  const bool cudaHere = hfr::cudaStreamBuilt();
  if (cudaHere) {
    for (int k : streams)
      specs.push_back({"cuda x" + std::to_string(k), "cuda" + std::to_string(k), "cuda", k, 1, ""});
    if (haveRbuc) {
      const int k = streams.size() > 1 ? streams[1] : streams[0];
      specs.push_back({"cuda x" + std::to_string(k) + " rbuc", "cuda" + std::to_string(k) + "-rbuc", "cuda", k, 2, ""});
    }
    if (cacheOptions.vramCache) {
      const int k = streams.size() > 1 ? streams[1] : streams[0];
      specs.push_back({"cuda x" + std::to_string(k) + ", vram", "cuda" + std::to_string(k) + "-vram", "cuda", k, 1, "",
                       true});
    }
  } else if (!quiet) {
    std::fprintf(stderr, "Note: this hfbench has no cuda strategy (built without CUDA); raw and cpu only\n");
  }
  if (progressive) {  // beside the whole-tile runs: first (lossy) view and exact view
    RunSpec cpuP{"cpu, progressive", "cpu-progressive", "cpu", 1, 1, ""};
    cpuP.progressive = true;
    specs.push_back(cpuP);
    if (cudaHere) {
      const int k = streams.size() > 1 ? streams[1] : streams[0];
      RunSpec c{"cuda x" + std::to_string(k) + ", progressive", "cuda" + std::to_string(k) + "-progressive", "cuda", k, 1, ""};
      c.progressive = true;
      specs.push_back(c);
    }
  }
  if (archives[1]->hasImagery()) {
    specs.insert(specs.begin() + 2, RunSpec{"cpu, imagery raw", "cpu-imagery-raw", "cpu", 1, 1, "raw"});
    specs.insert(specs.begin() + 3, RunSpec{"cpu, no imagery", "cpu-no-imagery", "cpu", 1, 1, "off"});
    if (bc1Index >= 0)
      specs.insert(specs.begin() + 4, RunSpec{"cpu, imagery bc1", "cpu-imagery-bc1", "cpu", 1, bc1Index, ""});
    // The cuda strategy without imagery: the render-thread cost of the GPU imagery path.
    if (cudaHere) {
      const int k = streams[0];
      specs.push_back({"cuda x" + std::to_string(k) + ", no imagery", "cuda" + std::to_string(k) + "-no-imagery", "cuda",
                       k, 1, "off"});
    }
  }

  // A fresh strategy for a run; a VRAM cache is loaded before it returns (cacheLoadMs, cacheBytes).
  auto makeStrategy = [&](const RunSpec& spec, std::string& err, std::string& snote, double* cacheLoadMs = nullptr,
                          uint64_t* cacheBytes = nullptr) {
    hfr::StreamOptions so;
    so.streams = spec.streams;
    so.progressive = spec.progressive;
    so.hostCacheMiB =
        cacheOptions.hostCacheMiB;  // --cache host:MiB (cuda's and gl's runs from host memory)
    if (spec.vram) {
      so.vramCache = true;
      so.cacheMiB = cacheOptions.cacheMiB;
    }
    auto strategy = hfr::makeRenderStreamStrategy(spec.strategy, *archives[size_t(spec.archive)], err, snote, so);
    if (strategy && spec.vram) {
      strategy->finishPrefetch();
      const hfr::StreamStats st = strategy->stats();
      if (cacheLoadMs) *cacheLoadMs = st.preloadMs;
      if (cacheBytes) *cacheBytes = st.cacheBytes;
    }
    return strategy;
  };

  std::string error;
  auto context = hfr::createHeadlessContext(error);
  if (!context) return fail(error);
  const std::string device = context->description();
  // Warm-up: each strategy flies a few frames untimed first (CUDA context and modules, driver
  // paths, thread pools), so that the first timed run pays no initialisation.
  if (warmupFrames > 0) {
    std::vector<std::string> warmed;
    hfr::FlythroughOptions wfly = fly;
    wfly.frames = warmupFrames;
    for (const RunSpec& spec : specs) {
      const std::string key = spec.strategy + "/" + std::to_string(spec.archive) + "/" + spec.imagery +
                              (spec.vram ? "/vram" : "") + (spec.progressive ? "/progressive" : "");
      if (std::find(warmed.begin(), warmed.end(), key) != warmed.end()) continue;
      warmed.push_back(key);
      std::string snote;
      auto strategy = makeStrategy(spec, error, snote);
      if (!strategy) return fail(error);
      hfr::FlythroughRun discard;
      if (!hfr::runFlythrough(*archives[size_t(spec.archive)], *strategy, runSettings(rs, spec, *archives[size_t(spec.archive)]), wfly, discard, error))
        return fail(spec.label + " (warm-up): " + error);
    }
    if (!quiet)
      std::fprintf(stderr, "hfbench flythrough: warmed up %zu strategies (%d frames each)\n", warmed.size(),
                   warmupFrames);
  }

  // The timed runs: the list `repeats` times, repeat r starting at run r (mod the list).
  std::vector<std::vector<Measured>> perSpec(specs.size());
  for (int r = 0; r < repeats; ++r) {
    for (size_t j = 0; j < specs.size(); ++j) {
      const size_t si = (j + size_t(r)) % specs.size();
      const RunSpec& spec = specs[si];
      std::string snote;
      Measured m;
      auto strategy = makeStrategy(spec, error, snote, &m.cacheLoadMs, &m.cacheBytes);
      if (!strategy) return fail(error);
      if (!snote.empty() && !quiet && r == 0) std::fprintf(stderr, "Note: %s: %s\n", spec.label.c_str(), snote.c_str());
      // With --io cold the VRAM run's archive is cold for the tiles the cache does not hold.
      if (!prepareIo(*archives[size_t(spec.archive)], error)) return fail(error);
      m.spec = spec;
      m.name = strategy->name();
      m.run.strategy = spec.label;
      m.run.archive = paths[size_t(spec.archive)];
      if (!quiet)
        std::fprintf(stderr, "hfbench flythrough: %s%s ...\n", spec.label.c_str(),
                     repeats > 1 ? (" (repeat " + std::to_string(r + 1) + ")").c_str() : "");
      const hfa::ArchiveReader& ra = *archives[size_t(spec.archive)];
      const hfa::SourceStats httpBefore = ra.sourceStats();
      const uint64_t tilesBefore = ra.remoteTilesRead();
      if (!hfr::runFlythrough(*archives[size_t(spec.archive)], *strategy, runSettings(rs, spec, *archives[size_t(spec.archive)]), fly, m.run, error))
        return fail(spec.label + ": " + error);
      if (spec.vram && m.cacheLoadMs == 0) {  // gl: its pool loads once the renderer exists
        const hfr::StreamStats st = strategy->stats();
        m.cacheLoadMs = st.preloadMs;
        m.cacheBytes = st.cacheBytes;
      }
      if (spec.vram && !quiet && r == 0)
        std::fprintf(stderr, "hfbench flythrough: %s: %.1f MiB loaded into device memory in %.1f ms\n",
                     spec.label.c_str(), double(m.cacheBytes) / 1048576.0, m.cacheLoadMs);
      m.remote = ra.remote();
      if (m.remote) {
        const hfa::SourceStats httpAfter = ra.sourceStats();
        m.httpRequests = httpAfter.requests - httpBefore.requests;
        m.httpBytes = httpAfter.bytesFetched - httpBefore.bytesFetched;
        m.httpTiles = ra.remoteTilesRead() - tilesBefore;
      }
      m.name = strategy->name();
      m.sum = hfr::summarize(m.run);
      if (!quiet)
        std::fprintf(stderr,
                     "hfbench flythrough: %-14s first view %7.1f ms, exact %7.1f ms | frame median "
                     "%.3f p99 %.3f max %.3f ms | render CPU %.3f ms\n",
                     spec.label.c_str(), firstViewMs(m), m.run.fill.ms, m.sum.medianMs, m.sum.p99Ms, m.sum.maxMs,
                     m.sum.medianRenderCpuMs);
      if (!quiet && m.remote)
        std::fprintf(stderr, "hfbench flythrough: %-14s http: %llu range requests, %.1f MiB, %llu tiles, %.2f requests per tile, missing %.2f tiles per frame\n",
                     spec.label.c_str(), static_cast<unsigned long long>(m.httpRequests), double(m.httpBytes) / 1048576.0,
                     static_cast<unsigned long long>(m.httpTiles),
                     m.httpTiles ? double(m.httpRequests) / double(m.httpTiles) : 0.0, m.sum.meanMissing);
      perSpec[si].push_back(std::move(m));
    }
  }
  std::vector<Measured> runs;
  for (auto& reps : perSpec) {
    std::vector<size_t> order(reps.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return reps[a].sum.medianMs < reps[b].sum.medianMs; });
    std::vector<double> firstViews, medians;  // in repeat order
    for (const auto& m : reps) {
      firstViews.push_back(firstViewMs(m));
      medians.push_back(m.sum.medianMs);
    }
    Measured kept = std::move(reps[order[(order.size() - 1) / 2]]);
    kept.repeatFirstViewMs = std::move(firstViews);
    kept.repeatMedianMs = std::move(medians);
    const std::string csv = outDir + "/" + name + "-" + kept.spec.file + ".csv";
    if (!hfr::writeFlythroughCsv(csv, kept.run, error)) return fail(error);
    runs.push_back(std::move(kept));
  }

  // The atlas fills after every flight (a fill run before a flight was seen to slow raw's
  // following flight on the H100), each with a fresh renderer and its own strategy.
  for (auto& m : runs) {
    std::string snote;
    auto strategy = makeStrategy(m.spec, error, snote);
    if (!strategy) return fail(error);
    if (!prepareIo(*archives[size_t(m.spec.archive)], error)) return fail(error);
    if (!hfr::measureAtlasFill(*archives[size_t(m.spec.archive)], *strategy, runSettings(rs, m.spec, *archives[size_t(m.spec.archive)]), fly,
                               m.run.atlasFill, error))
      return fail(m.spec.label + ": " + error);
    if (!quiet) {
      std::string steps;
      for (double ms : m.run.atlasFill.stepMs) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%s%.3f", steps.empty() ? "" : " + ", ms);
        steps += buf;
      }
      std::fprintf(stderr,
                   "hfbench flythrough: %-14s atlas fill %7.3f ms (%zu tiles; steps %s = plan %.3f + deliver %.3f + "
                   "rest; GPU wait %.3f ms, device work %.3f ms)\n",
                   m.spec.label.c_str(), m.run.atlasFill.ms, m.run.atlasFill.tiles, steps.c_str(),
                   m.run.atlasFill.planMs, m.run.atlasFill.deliverMs, m.run.atlasFill.finishMs,
                   m.run.atlasFill.deviceMs);
    }
  }

  // Plot: frame time over the flight, one line per run (matplotlib, from the CSVs). Without
  // Python or matplotlib the report says so instead of showing it.
  std::vector<std::pair<std::string, std::string>> plotRuns;
  for (const auto& m : runs) plotRuns.emplace_back(m.spec.label, outDir + "/" + name + "-" + m.spec.file + ".csv");
  std::string plotFile = name + "-frametime.png", plotError;
  const std::string plotTitle = "hfbench flythrough: " + name + " (" + std::to_string(rs.width) + "x" +
                                std::to_string(rs.height) + ", tau " + general3(rs.tau) + " px)";
  if (!plotFrameTimes(outDir + "/" + plotFile, plotTitle, plotRuns, plotError)) {
    std::fprintf(stderr, "Note: hfbench flythrough: no frame-time plot: %s\n", plotError.c_str());
    plotFile = "(no plot: " + plotError + ")";
  }

  std::vector<const hfa::ArchiveReader*> ars;
  for (const auto& a : archives) ars.push_back(a.get());
  const std::string report = outDir + "/" + name + ".md";
  std::string ioLine;
  if (ioMode == "warm") {
    ioLine = "page cache warm (every payload read once before the runs: no disk in the comparison)";
  } else {
    char buf[160];
    std::snprintf(buf, sizeof buf, "cold (the archive's pages dropped before every run and atlas fill; %.0f-%.0f %% "
                  "of the file still cached after the drops)", 100 * std::min(residentMin, residentMax),
                  100 * residentMax);
    ioLine = buf;
  }
  if (ioLimitMBps > 0)
    ioLine += "; payload reads limited to " + mbpsText(ioLimitMBps) +
              " MB/s (one simulated channel shared by every reader: archive/read_limit.h)";
  if (!writeReport(report, name, command, device, note, rs, fly, ars, paths, runs, plotFile, bc1Skipped, warmupFrames,
                   ioLine, error))
    return fail(error);
  if (!jsonPath.empty()) {
    const std::string io = ioLimitMBps > 0 ? mbpsText(ioLimitMBps) : ioMode;
    const std::string json = flythroughJson(name, command, device, note, io, ioMode == "cold", rs, ars, runs);
    if (!writeReportFile(jsonPath, json, error)) return fail(error);
  }
  if (!quiet) std::printf("hfbench flythrough: wrote %s and %s/%s\n", report.c_str(), outDir.c_str(), plotFile.c_str());
  return 0;
}

}  // namespace hfbench
