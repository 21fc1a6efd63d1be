// hfview - the terrain viewer (issue 5): a thin main over hf_render.
//
//   hfview [ARCHIVE] [--headless] [--screenshot PNG] [--size WxH] [--tau PIXELS]
//          [--stream cpu|raw|cuda] [--streams K] [--cache host|vram[:MIB]] [--camera x,y,z,yaw,pitch]
//          [--view shaded|level|ldr|imagery|imagery-lit] [--imagery-stream cpu|cuda|raw] [--bc1 fast|quality]
//          [--no-imagery] [--wireframe]
//          [--no-fog] [--budget MIB] [--frames N] [--background R,G,B] [--record PATH] [-q]
//   hfview [ARCHIVE] --headless --bench [--path diagonal|FILE] [--altitude M] [--speed M/S]
//          [--dt S] [--frames N] [--csv FILE] [--budget-fraction F] (+ the options above)
//
// Without ARCHIVE it opens the built-in default (Puget Sound with imagery, packed at build time). With --headless
// it renders on an EGL device context into an FBO: it streams until every tile the camera wants
// is resident (at most --frames steps), renders, writes --screenshot and exits 0. Without
// --headless: the GLFW + ImGui window (viewer.cpp); no display -> one line, exit 1 (or the
// headless path when --screenshot is given). --bench: the flythrough benchmark
// (render/flythrough/flythrough.h) with one strategy: per-frame CSV and a summary; `hfbench
// flythrough` compares every strategy. Errors: one line "Error: ...", exit status 1.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "archive/archive.h"
#include "render/flythrough/flythrough.h"
#include "bench_mode.h"
#include "dem_cache.h"
#include "render/gl/renderer.h"
#include "render/gl/stream_gl.h"
#if HF_HAVE_WINDOW
#include "viewer.h"
#endif

namespace {

int fail(const std::string& msg) {
  std::fprintf(stderr, "Error: %s\n", msg.c_str());
  return 1;
}

void usage() {
  std::printf(
      "usage: hfview [ARCHIVE | DEM... [--imagery IMAGE]] [--headless] [--screenshot PNG] [--size WxH] [--tau PIXELS]\n"
      "              [--stream cpu|raw|cuda] [--streams K] [--cache host|vram[:MIB]]\n"
      "              [--camera x,y,z,yaw,pitch] [--view shaded|level|ldr|imagery|imagery-lit] [--no-imagery]\n"
      "              [--imagery-stream cpu|cuda|raw] [--bc1 fast|quality]\n"
      "              [--wireframe] [--no-fog] [--budget MIB] [--frames N]\n"
      "              [--background R,G,B] [--no-vsync] [--record PATH] [-q]\n"
      "              [--ocean on|off|cpu|cuda] [--water-level M] [--wind M/S[,DEGREES]] [--choppiness C]\n"
      "              [--time S] [--gl-debug]\n"
      "       hfview [ARCHIVE] --headless --bench [--path diagonal|FILE] [--altitude M]\n"
      "              [--speed M/S] [--dt S] [--frames N] [--csv FILE] [--budget-fraction F]\n"
      "              [--no-prefetch]\n"
      "Without --headless: a window (GLFW + Dear ImGui; keys in README.md); with --screenshot\n"
      "it renders until the view is complete, writes the PNG and exits (headless if no display).\n"
      "In the window F9 records the camera into --record PATH (default hfview-path.txt), a\n"
      "camera path for --bench --path PATH.\n"
      "DEM... (anything GDAL reads: a GeoTIFF, several tiles, a VRT; --imagery a colour image for\n"
      "it) is packed with hfpack into $XDG_CACHE_HOME/hfview (~/.cache/hfview) the first time and\n"
      "opened from there afterwards (at most $HFVIEW_CACHE_MIB MiB, default 4096, kept).\n"
      "Without ARCHIVE: the built-in default, Puget Sound at its true shape with its imagery\n"
      "(%s; assets/puget_sound/), or the synthetic sample terrain in builds without GDAL.\n"
      "Archives with imagery (hfpack --imagery) are shown imagery-lit unless --view says\n"
      "otherwise; --imagery-stream cpu streams it as BC1 (JPEG decoded and BC1-encoded on CPU\n"
      "threads, --bc1 quality for cluster fit), cuda the same on the GPU (JPEG bytes cross PCIe,\n"
      "BC1 reaches the atlas inside video memory), raw as RGBA8; default: as --stream.\n"
      "--cache vram (with --stream cuda) keeps the compressed tiles in video memory (MIB, default\n"
      "the whole archive if it fits in half the free memory): the archive is loaded once and\n"
      "atlas fills decode from there with nothing crossing PCIe but 48 bytes per tile; with\n"
      "cuda imagery, each imagery tile's BC1 chain is kept too (MIB more; default the whole\n"
      "imagery if it fits in a quarter of the free memory) and copied into the atlas from there.\n"
      "--bench flies a camera path (default: the diagonal at 1/3 of the maximum height, 8000\n"
      "m/s, dt 1/60 s, frames to cover the path, at most 3000; atlas for --budget-fraction 0.55\n"
      "of all tiles unless --budget) and writes one CSV row per frame (--csv, default\n"
      "hfview-bench.csv); hfbench flythrough compares strategies.\n"
      "--ocean (default on; off in --bench) animates the water: samples at or below\n"
      "--water-level metres (default 0) and nodata; --wind sets its speed (0.5..40, default 10)\n"
      "and the direction it blows towards (degrees counter-clockwise from east, default 45),\n"
      "--choppiness its crests (0..4, default 1); --time S is its clock for a --screenshot\n"
      "(default 0, so that screenshots are reproducible). Its fields come from the GPU with\n"
      "--stream cuda, else from an FFTW thread; --ocean cpu|cuda chooses (cuda falls back to\n"
      "cpu with a note where CUDA-GL interop is missing).\n"
      "--gl-debug (window): a debug GL context; KHR_debug errors are printed and make the exit\n"
      "status 3.\n"
      "World frame: x east, y north (metres from the south-west corner), z up; yaw 0 = east,\n"
      "90 = north; pitch < 0 looks down.\n",
      HF_DEFAULT_ARCHIVE);
}

bool parseDoubles(const char* s, std::vector<double>& out, size_t n) {
  out.clear();
  const char* p = s;
  while (*p) {
    char* end = nullptr;
    const double v = std::strtod(p, &end);
    if (end == p) return false;
    out.push_back(v);
    p = end;
    if (*p == ',') ++p;
    else if (*p) return false;
  }
  return out.size() == n;
}

}  // namespace

int main(int argc, char** argv) {
  std::string archivePath, screenshot, stream = "cpu";
  hfr::StreamOptions streamOpts;
  bool headless = false, quiet = false, haveCamera = false, vsync = true;
  hfr::RenderSettings rs;
  hfr::Camera cam;
  int frames = -1;  // streaming steps (screenshot) or flight frames (--bench); -1 = default
  bool bench = false, haveBudget = false, viewGiven = false;
  hfr::FlythroughOptions fly;
  std::string pathArg = "diagonal", csvPath = "hfview-bench.csv";
  double budgetFraction = 0.55;
  std::string recordPath = "hfview-path.txt";  // --record: the window's F9 camera path file
  int oceanArg = -1;       // --ocean: -1 default (on, off in --bench), 0 off, 1 on
  std::vector<std::string> positional;  // an archive, or DEMs to pack into the cache
  std::string imageryPath;              // --imagery: with DEMs
  bool glDebug = false;                 // --gl-debug: a debug context, KHR_debug errors counted
  double oceanTime = -1;   // --time: the ocean's clock for a screenshot
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* name) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "Error: %s needs a value\n", name);
        std::exit(1);
      }
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      usage();
      return 0;
    } else if (a == "--headless") {
      headless = true;
    } else if (a == "--bench") {
      bench = true;
    } else if (a == "--no-prefetch") {
      rs.prefetch = false;
    } else if (a == "--path") {
      pathArg = value("--path");
    } else if (a == "--csv") {
      csvPath = value("--csv");
    } else if (a == "--altitude" || a == "--speed" || a == "--dt" || a == "--budget-fraction") {
      const char* v = value(a.c_str());
      char* end = nullptr;
      const double d = std::strtod(v, &end);
      if (end == v || *end || !std::isfinite(d)) return fail(a + " wants a number, got '" + v + "'");
      if (a == "--altitude") {
        fly.altitude = d;
      } else if (!(d > 0)) {
        return fail(a + " wants a number > 0, got '" + v + "'");
      } else if (a == "--speed") {
        fly.speed = d;
      } else if (a == "--dt") {
        fly.dt = d;
      } else {
        if (d > 1) return fail("--budget-fraction wants 0 < F <= 1, got '" + std::string(v) + "'");
        budgetFraction = d;
      }
    } else if (a == "--record") {  // window mode: F9 records the camera into this path file
      recordPath = value("--record");
    } else if (a == "--no-vsync") {  // window mode: swap interval 0
      vsync = false;
    } else if (a == "-q" || a == "--quiet") {
      quiet = true;
    } else if (a == "--screenshot") {
      screenshot = value("--screenshot");
    } else if (a == "--size") {
      const char* v = value("--size");
      int used = 0;  // the whole value is WxH: no trailing characters
      if (std::sscanf(v, "%dx%d%n", &rs.width, &rs.height, &used) != 2 || v[used] ||
          rs.width < 1 || rs.height < 1 || rs.width > 16384 || rs.height > 16384)
        return fail(std::string("--size wants WxH (1..16384), got '") + v + "'");
    } else if (a == "--tau") {
      const char* v = value("--tau");
      char* end = nullptr;
      rs.tau = std::strtod(v, &end);
      if (end == v || *end || !(rs.tau > 0)) return fail(std::string("--tau wants pixels > 0, got '") + v + "'");
    } else if (a == "--stream") {
      stream = value("--stream");
    } else if (a == "--streams") {  // cuda: CUDA streams round-robin
      const char* v = value("--streams");
      char* end = nullptr;
      streamOpts.streams = int(std::strtol(v, &end, 10));
      if (end == v || *end || streamOpts.streams < 1 || streamOpts.streams > 64)
        return fail(std::string("--streams wants 1..64, got '") + v + "'");
    } else if (a == "--cache") {
      std::string err;
      if (!hfr::parseCacheOption(value("--cache"), streamOpts, err)) return fail(err);
    } else if (a == "--camera") {
      std::vector<double> c;
      const char* v = value("--camera");
      if (!parseDoubles(v, c, 5)) return fail(std::string("--camera wants x,y,z,yaw,pitch, got '") + v + "'");
      cam.x = c[0], cam.y = c[1], cam.z = c[2], cam.yaw = c[3], cam.pitch = c[4];
      haveCamera = true;
    } else if (a == "--view") {
      const std::string v = value("--view");
      if (!hfr::parseView(v, rs.view))
        return fail("--view wants shaded, level, ldr, imagery or imagery-lit, got '" + v + "'");
      viewGiven = true;
    } else if (a == "--imagery-stream") {
      rs.imageryStream = value("--imagery-stream");
      if (rs.imageryStream != "cpu" && rs.imageryStream != "raw" && rs.imageryStream != "cuda")
        return fail("--imagery-stream wants cpu, cuda or raw, got '" + rs.imageryStream + "'");
    } else if (a == "--bc1") {
      const std::string v = value("--bc1");
      if (v != "fast" && v != "quality") return fail("--bc1 wants fast or quality, got '" + v + "'");
      rs.bc1Quality = v == "quality";
    } else if (a == "--no-imagery") {
      rs.imagery = false;
    } else if (a == "--wireframe") {
      rs.wireframe = true;
    } else if (a == "--no-fog") {
      rs.fog = false;
    } else if (a == "--budget") {
      const char* v = value("--budget");
      char* end = nullptr;
      rs.atlasBudgetMiB = std::strtod(v, &end);
      haveBudget = true;
      if (end == v || *end || !(rs.atlasBudgetMiB > 0)) return fail(std::string("--budget wants MiB > 0, got '") + v + "'");
    } else if (a == "--frames") {
      const char* v = value("--frames");
      char* end = nullptr;
      frames = int(std::strtol(v, &end, 10));
      if (end == v || *end || frames < 0) return fail(std::string("--frames wants N >= 0, got '") + v + "'");
    } else if (a == "--background") {
      std::vector<double> c;
      const char* v = value("--background");
      if (!parseDoubles(v, c, 3)) return fail(std::string("--background wants R,G,B in 0..1, got '") + v + "'");
      for (size_t k = 0; k < 3; ++k) rs.background[k] = float(c[k]);
    } else if (a == "--ocean") {
      const std::string v = value("--ocean");
      if (v != "on" && v != "off" && v != "cpu" && v != "cuda")
        return fail("--ocean wants on, off, cpu or cuda, got '" + v + "'");
      oceanArg = v == "off" ? 0 : 1;
      if (v == "cpu" || v == "cuda") rs.oceanDevice = v;
    } else if (a == "--water-level" || a == "--choppiness" || a == "--time") {
      const char* v = value(a.c_str());
      char* end = nullptr;
      const double d = std::strtod(v, &end);
      if (end == v || *end || !std::isfinite(d)) return fail(a + " wants a number, got '" + v + "'");
      if (a == "--water-level") rs.waterLevel = d;
      else if (a == "--choppiness") rs.oceanParams.choppiness = d;
      else if (d < 0) return fail(std::string("--time wants seconds >= 0, got '") + v + "'");
      else oceanTime = d;
    } else if (a == "--wind") {
      std::vector<double> w;
      const char* v = value("--wind");
      if (parseDoubles(v, w, 2)) {
        rs.oceanParams.windSpeed = w[0];
        rs.oceanParams.windDirection = w[1];
      } else if (parseDoubles(v, w, 1)) {
        rs.oceanParams.windSpeed = w[0];
      } else {
        return fail(std::string("--wind wants M/S or M/S,DEGREES, got '") + v + "'");
      }
    } else if (a == "--gl-debug") {
      glDebug = true;
    } else if (a == "--imagery") {
      imageryPath = value("--imagery");
    } else if (!a.empty() && a[0] == '-') {
      return fail("unknown option " + a + " (hfview --help)");
    } else {
      positional.push_back(a);
    }
  }
  rs.ocean = oceanArg < 0 ? !bench : oceanArg == 1;
  if (rs.ocean) {
    std::string oerr;
    if (!hfr::checkOceanParams(rs.oceanParams, oerr)) return fail("--wind / --choppiness: " + oerr);
  }
  if (bench) {
    headless = true;  // always offscreen: the window's swap would be part of the frame
    if (!screenshot.empty()) return fail("--bench writes a CSV, not a --screenshot (run them separately)");
  } else if (frames < 0) {
    frames = 2000;
  }
  // An archive, or DEMs packed into the cache (dem_cache.h) and opened from there.
  if (positional.size() == 1 && hfview::isArchiveFile(positional[0])) {
    archivePath = positional[0];
    if (!imageryPath.empty()) return fail("--imagery is for DEM inputs (" + archivePath + " is an archive)");
  } else if (!positional.empty()) {
    for (const std::string& p : positional)
      if (hfview::isArchiveFile(p)) return fail(p + " is an archive: give one archive, or DEMs to pack");
    hfview::DemCacheRequest req;
    req.inputs = positional;
    req.imagery = imageryPath;
    req.quiet = quiet;
    hfview::DemCacheResult res;
    std::string cerr;
    if (!hfview::archiveForDems(req, res, cerr)) return fail(cerr);
    archivePath = res.archive;
    if (!quiet)
      std::fprintf(stderr, res.fromCache ? "Note: opening %s from the cache\n" : "Note: packed %s in %.1f s\n",
                   res.fromCache ? archivePath.c_str() : positional[0].c_str(), res.packSeconds);
  } else if (!imageryPath.empty()) {
    return fail("--imagery needs DEM inputs");
  }
  // The raw strategy reads raw archives: the default has a raw twin (hfpack --codec raw).
  if (archivePath.empty()) archivePath = stream == "raw" ? HF_DEFAULT_RAW_ARCHIVE : HF_DEFAULT_ARCHIVE;
  // Window mode unless --headless; without a display: one line and exit 1, or with
  // --screenshot the headless path below (viewer.cpp has the window loop).
#if HF_HAVE_WINDOW
  std::unique_ptr<hfr::WindowContext> window;
  if (!headless) {
    hfr::WindowOptions wo;
    wo.width = rs.width;
    wo.height = rs.height;
    wo.vsync = vsync;
    wo.debug = glDebug;
    std::string werr;
    window = hfr::createWindowContext(wo, werr);
    if (!window && screenshot.empty())
      return fail(werr + "; run hfview --headless --screenshot OUT.png");
    if (!window) {
      if (!quiet) std::fprintf(stderr, "Note: %s; rendering headless\n", werr.c_str());
      headless = true;
    }
  }
#else
  if (!headless && screenshot.empty())
    return fail("this hfview was built without its window mode (GLFW + Dear ImGui); run hfview --headless --screenshot OUT.png");
#endif
  if (headless && screenshot.empty() && !bench)
    return fail("--headless needs --screenshot PNG or --bench (nothing else to show)");
  if (bench && pathArg != "diagonal") {
    std::string perr;
    if (!fly.path.load(pathArg, perr)) return fail(perr);
  }

  hfa::ArchiveReader archive;
  std::string error;
  if (!archive.open(archivePath, error)) return fail(archivePath + ": " + error);
  // Imagery is what a user expects to see first when the archive has it.
  if (!viewGiven && rs.imagery && archive.hasImagery()) rs.view = hfr::View::ImageryLit;
  std::string note;
  // --cache vram covers the imagery too (the cuda imagery strategy's pool of BC1 chains).
  rs.imageryVramCache = streamOpts.vramCache;
  rs.imageryCacheMiB = streamOpts.cacheMiB;
  auto strategy = hfr::makeRenderStreamStrategy(stream, archive, error, note, streamOpts);
  if (!strategy) return fail(error);
  if (!note.empty()) std::fprintf(stderr, "Note: %s\n", note.c_str());
#if HF_HAVE_WINDOW
  if (window) {
    hfview::ViewerOptions vo;
    vo.archivePath = archivePath;
    vo.screenshot = screenshot;
    vo.maxFrames = frames;
    vo.haveCamera = haveCamera;
    vo.camera = cam;
    vo.quiet = quiet;
    vo.recordPath = recordPath;
    vo.glDebug = glDebug;
    return hfview::runViewer(*window, archive, std::move(strategy), streamOpts, rs, vo);
  }
#endif
  auto context = hfr::createHeadlessContext(error);
  if (!context) return fail(error);
  if (bench) {
    if (!haveBudget) rs.atlasBudgetMiB = hfr::atlasBudgetForFraction(archive, budgetFraction);
    fly.frames = std::max(frames, 0);
    return hfview::runBenchMode(archive, *strategy, rs, fly, csvPath, context->description(), quiet);
  }
  int rc = 0;
  {
    auto renderer = hfr::Renderer::create(archive, *strategy, rs, error);
    if (!renderer) return fail(error);
    for (const std::string& n : renderer->notes()) std::fprintf(stderr, "Note: %s\n", n.c_str());
    if (!haveCamera) cam = renderer->defaultCamera();
    // Stream until the view is complete (the render thread never waits on a tile: it polls,
    // and sleeps between polls only because there is nothing else to do headless).
    const auto t0 = std::chrono::steady_clock::now();
    int steps = 0;
    while (steps < frames) {
      renderer->stream(cam);
      ++steps;
      if (renderer->settled()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    const double streamS =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    hfr::FrameStats st;
    const auto t1 = std::chrono::steady_clock::now();
    // The ocean at --time (default 0): the same screenshot every run (strategy comparisons).
    renderer->setTime(oceanTime >= 0 ? oceanTime : 0.0);
    renderer->settings().oceanSynchronous = true;
    renderer->frame(cam, &st);
    const auto px = renderer->readPixels();
    const double frameS =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
    if (!hfr::writePng(screenshot, rs.width, rs.height, px, error)) return fail(error);
    if (!quiet) {
      std::printf("hfview: %s | %s\n", archivePath.c_str(), context->description().c_str());
      std::printf("hfview: camera %.1f,%.1f,%.1f,%.1f,%.1f  tau %.3g px  %dx%d  stream %s\n",
                  cam.x, cam.y, cam.z, cam.yaw, cam.pitch, rs.tau, rs.width, rs.height,
                  strategy->name());
      std::string levels;
      for (size_t l = 0; l < st.tilesPerLevel.size(); ++l)
        levels += (l ? " " : "") + std::to_string(st.tilesPerLevel[l]);
      std::printf("hfview: %zu tiles drawn (per level: %s), %llu strip vertices, %zu resident of "
                  "%zu slots, %s after %d streaming steps (%.2f s), frame + readback %.2f s\n",
                  st.tilesDrawn, levels.c_str(), (unsigned long long)st.vertices, st.resident,
                  st.atlasSlots, renderer->settled() ? "settled" : "NOT settled", steps, streamS,
                  frameS);
      const hfr::StreamStats ss = strategy->stats();
      std::printf("hfview: stream %s: %zu tiles delivered, %llu payload bytes read, host->device "
                  "%llu compressed + %llu decompressed bytes\n",
                  strategy->name(), ss.delivered, (unsigned long long)ss.bytesRead,
                  (unsigned long long)ss.compressedToDevice,
                  (unsigned long long)ss.samplesToDevice);
      if (renderer->hasImagery())
        std::printf("hfview: imagery %s (%s atlas): %zu tiles resident of %zu layers, %zu wanted, "
                    "%zu missing, %zu corrupt\n",
                    renderer->imageryStrategy().c_str(), renderer->imageryFormat().c_str(),
                    st.colourResident, st.colourLayers, st.colourWanted, st.colourMissing,
                    st.colourFailed);
      std::printf("hfview: wrote %s\n", screenshot.c_str());
    }
    if (st.failedTiles) rc = 0;  // drawn from ancestors; warnings were printed
  }
  return rc;
}
