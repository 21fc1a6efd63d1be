// hfview - the terrain viewer (issue 5): a thin main over hf_render. `hfview --help` lists the
// options (CLI11, generated); the forms:
//
//   hfview [ARCHIVE | DEM... [--imagery IMAGE]]             the window
//   hfview [ARCHIVE | DEM...] --headless --screenshot PNG    render until settled, write, exit 0
//   hfview [ARCHIVE | DEM...] --headless --bench [--path diagonal|FILE] ...  the flythrough
//
// Without ARCHIVE it opens the built-in default (Puget Sound with imagery, packed at build time).
// DEMs are packed into the cache (dem_cache.h): in the window in the background (a preview first,
// progress on the panel), otherwise before rendering. With --headless it renders on an EGL
// device context into an FBO: it streams until every tile the camera wants is resident (at most
// --frames steps), renders, writes --screenshot and exits 0. Without --headless: the GLFW + ImGui
// window (viewer.cpp); no display -> one line, exit 1 (or the headless path when --screenshot is
// given). --bench: the flythrough benchmark (render/flythrough/flythrough.h) with one strategy:
// per-frame CSV and a summary; `hfbench flythrough` compares every strategy. Errors: one line
// "Error: ...", exit status 1.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "archive/archive.h"
#include "cli.h"
#include "runtime/runtime_files.h"
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

// The --help text after the generated option list (%s: the built-in default archive).
constexpr const char* kHelpFooter =
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
    "--stream gl decodes on any GPU in a GL compute shader (no CUDA; the fills run in the\n"
    "drawing context), --stream cuda with CUDA into the atlas.\n"
    "--cache vram (with --stream gl or cuda) keeps the compressed tiles in video memory (MIB,\n"
    "default the whole archive if it fits in half the free memory): the archive is loaded once\n"
    "and atlas fills decode from there with nothing crossing PCIe but 16-48 bytes a tile; with\n"
    "cuda imagery, each imagery tile's BC1 chain is kept too (MIB more; default the whole\n"
    "imagery if it fits in a quarter of the free memory) and copied into the atlas from there.\n"
    "--cache host[:MIB] (the default, 256 MIB; 0 = none) lets --stream cuda and gl keep the\n"
    "payloads they read in host memory, and read ahead there the predicted tiles the atlas has no "
    "room for:\n"
    "a tile wanted again or as predicted is decoded in the frame it is asked for.\n"
    "--bench flies a camera path (default: the diagonal at 1/3 of the maximum height, 8000\n"
    "m/s, dt 1/60 s, frames to cover the path, at most 3000; atlas for --budget-fraction 0.55\n"
    "of all tiles unless --budget) and writes one CSV row per frame (--csv, default\n"
    "hfview-bench.csv); hfbench flythrough compares strategies.\n"
    "--ocean (default on; off in --bench) animates the water: samples at or below\n"
    "--water-level metres (default 0) and nodata; --wind sets its speed (0.5..40, default 10)\n"
    "and the direction it blows towards (degrees counter-clockwise from east, default 45),\n"
    "--choppiness its crests (0..4, default 1); --time S is its clock for a --screenshot\n"
    "(default 0, so that screenshots are reproducible). Its fields come from GL compute\n"
    "shaders on the GPU; --ocean gl|cpu|cuda chooses (cpu: an FFTW thread; cuda: the CUDA FFT\n"
    "through CUDA-GL interop; gl and cuda fall back to cpu with a note).\n"
    "--gl-debug (window): a debug GL context; KHR_debug errors are printed and make the exit\n"
    "status 3.\n"
    "World frame: x east, y north (metres from the south-west corner), z up; yaw 0 = east,\n"
    "90 = north; pitch < 0 looks down.\n";

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
  // Line by line even into a pipe or a file: the window's progress lines ("opened", "packed")
  // reach a script that watches them while hfview runs.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
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
  // The command line through CLI11 (tools/cli/cli.h); values that need more than a type and a
  // range are taken as text and checked below with messages that say what is wanted.
  CLI::App app{"hfview: fly through a terrain archive (.hfa) or any DEM GDAL reads.", "hfview"};
  char footerText[8192];
  std::snprintf(footerText, sizeof footerText, kHelpFooter, HF_DEFAULT_ARCHIVE);
  app.footer(footerText);
  std::string sizeArg, cameraArg, viewArg, bc1Arg, backgroundArg, oceanOpt, windArg, cacheArg;
  std::optional<double> altitude, speed, dt, budgetFraction_, waterLevel, choppiness, timeArg;
  std::optional<double> tau, budget;
  std::optional<int> streams, framesArg;
  app.add_option("FILE", positional, "ARCHIVE (.hfa), or DEM... (anything GDAL reads) to pack into the cache; default: the built-in archive");
  app.add_option("--imagery", imageryPath, "colour imagery for the DEMs");
  app.add_flag("--headless", headless, "render offscreen (EGL): with --screenshot or --bench");
  app.add_option("--screenshot", screenshot, "render until the view is complete, write this PNG, exit");
  app.add_option("--size", sizeArg, "WxH framebuffer (1..16384)");
  app.add_option("--tau", tau, "screen-space error in pixels (> 0)");
  app.add_option("--stream", stream, "streaming strategy: cpu, raw, gl (GPU decode in a GL compute shader) or cuda")
      ->check(CLI::IsMember({"cpu", "raw", "gl", "cuda"}));
  app.add_option("--streams", streams, "cuda: CUDA streams, 1..64");
  app.add_option(
      "--cache", cacheArg,
      "host[:MIB] (compressed tiles in host memory, default 256), or vram[:MIB] (in video memory)");
  app.add_flag("--progressive", streamOpts.progressive,
               "cpu: tiles arrive lossy (layers 1 + 2, a fraction of the bytes) and are refined in place to exact");
  app.add_option("--camera", cameraArg, "x,y,z,yaw,pitch");
  app.add_option("--view", viewArg, "shaded, level, ldr, imagery or imagery-lit");
  app.add_option("--imagery-stream", rs.imageryStream, "cpu, cuda or raw (default: as --stream)")
      ->check(CLI::IsMember({"cpu", "cuda", "raw"}));
  app.add_option("--bc1", bc1Arg, "fast or quality (the imagery's BC1 encoder)");
  bool noImagery = false, noFog = false, noPrefetch = false;
  app.add_flag("--no-imagery", noImagery, "heights only");
  app.add_flag("--wireframe", rs.wireframe, "the triangles over the shading");
  app.add_flag("--no-fog", noFog, "no aerial perspective");
  app.add_option("--budget", budget, "height atlas budget in MiB (> 0)");
  app.add_option("--frames", framesArg, "streaming steps (--screenshot) or flight frames (--bench), >= 0");
  app.add_option("--background", backgroundArg, "R,G,B in 0..1");
  bool noVsync = false;
  app.add_flag("--no-vsync", noVsync, "window: swap interval 0");
  app.add_option("--record", recordPath, "window: F9 records the camera into this camera path file");
  app.add_flag("-q,--quiet", quiet, "only errors");
  app.add_option("--ocean", oceanOpt, "on, off, gl, cpu or cuda");
  app.add_option("--water-level", waterLevel, "metres");
  app.add_option("--wind", windArg, "M/S or M/S,DEGREES");
  app.add_option("--choppiness", choppiness, "0..4");
  app.add_option("--time", timeArg, "the ocean's clock for a --screenshot, seconds >= 0");
  app.add_flag("--gl-debug", glDebug, "window: a debug GL context; GL errors make the exit status 3");
  app.add_flag("--bench", bench, "fly a camera path headless and write a per-frame CSV");
  app.add_option("--path", pathArg, "--bench: diagonal or a camera path FILE");
  app.add_option("--csv", csvPath, "--bench: the per-frame CSV");
  app.add_option("--altitude", altitude, "--bench: metres above the terrain's top");
  app.add_option("--speed", speed, "--bench: m/s (> 0)");
  app.add_option("--dt", dt, "--bench: seconds per frame (> 0)");
  app.add_option("--budget-fraction", budgetFraction_, "--bench: atlas for this share of all tiles (0 < F <= 1)");
  app.add_flag("--no-prefetch", noPrefetch, "--bench: no prefetching");
  int status = 0;
  if (!hfcli::parse(app, argc, argv, status)) return status;
  rs.prefetch = !noPrefetch;
  rs.imagery = !noImagery;
  rs.fog = !noFog;
  vsync = !noVsync;
  auto finite = [](const std::optional<double>& v) { return !v || std::isfinite(*v); };
  if (!finite(altitude)) return fail("--altitude wants a number");
  if (altitude) fly.altitude = *altitude;
  if (speed && !(*speed > 0 && std::isfinite(*speed))) return fail("--speed wants a number > 0");
  if (speed) fly.speed = *speed;
  if (dt && !(*dt > 0 && std::isfinite(*dt))) return fail("--dt wants a number > 0");
  if (dt) fly.dt = *dt;
  if (budgetFraction_ && !(*budgetFraction_ > 0 && *budgetFraction_ <= 1))
    return fail("--budget-fraction wants 0 < F <= 1");
  if (budgetFraction_) budgetFraction = *budgetFraction_;
  if (!sizeArg.empty()) {
    int used = 0;  // the whole value is WxH: no trailing characters
    if (std::sscanf(sizeArg.c_str(), "%dx%d%n", &rs.width, &rs.height, &used) != 2 || sizeArg[size_t(used)] ||
        rs.width < 1 || rs.height < 1 || rs.width > 16384 || rs.height > 16384)
      return fail("--size wants WxH (1..16384), got '" + sizeArg + "'");
  }
  if (tau && !(*tau > 0 && std::isfinite(*tau))) return fail("--tau wants pixels > 0");
  if (tau) rs.tau = *tau;
  if (streams && (*streams < 1 || *streams > 64)) return fail("--streams wants 1..64");
  if (streams) streamOpts.streams = *streams;
  if (!cacheArg.empty()) {
    std::string err;
    if (!hfr::parseCacheOption(cacheArg, streamOpts, err)) return fail(err);
  }
  if (!cameraArg.empty()) {
    std::vector<double> c;
    if (!parseDoubles(cameraArg.c_str(), c, 5)) return fail("--camera wants x,y,z,yaw,pitch, got '" + cameraArg + "'");
    cam.x = c[0], cam.y = c[1], cam.z = c[2], cam.yaw = c[3], cam.pitch = c[4];
    haveCamera = true;
  }
  if (!viewArg.empty()) {
    if (!hfr::parseView(viewArg, rs.view))
      return fail("--view wants shaded, level, ldr, imagery or imagery-lit, got '" + viewArg + "'");
    viewGiven = true;
  }
  if (!bc1Arg.empty()) {
    if (bc1Arg != "fast" && bc1Arg != "quality") return fail("--bc1 wants fast or quality, got '" + bc1Arg + "'");
    rs.bc1Quality = bc1Arg == "quality";
  }
  if (budget && !(*budget > 0 && std::isfinite(*budget))) return fail("--budget wants MiB > 0");
  if (budget) rs.atlasBudgetMiB = *budget, haveBudget = true;
  if (framesArg && *framesArg < 0) return fail("--frames wants N >= 0");
  if (framesArg) frames = *framesArg;
  if (!backgroundArg.empty()) {
    std::vector<double> c;
    if (!parseDoubles(backgroundArg.c_str(), c, 3)) return fail("--background wants R,G,B in 0..1, got '" + backgroundArg + "'");
    for (size_t k = 0; k < 3; ++k) rs.background[k] = float(c[k]);
  }
  if (app.count("--ocean")) {
    if (oceanOpt != "on" && oceanOpt != "off" && oceanOpt != "gl" && oceanOpt != "cpu" &&
        oceanOpt != "cuda")
      return fail("--ocean wants on, off, gl, cpu or cuda, got '" + oceanOpt + "'");
    oceanArg = oceanOpt == "off" ? 0 : 1;
    if (oceanOpt == "gl" || oceanOpt == "cpu" || oceanOpt == "cuda") rs.oceanDevice = oceanOpt;
  }
  if (!finite(waterLevel)) return fail("--water-level wants a number");
  if (waterLevel) rs.waterLevel = *waterLevel;
  if (!finite(choppiness)) return fail("--choppiness wants a number");
  if (choppiness) rs.oceanParams.choppiness = *choppiness;
  if (timeArg && !(*timeArg >= 0 && std::isfinite(*timeArg))) return fail("--time wants seconds >= 0");
  if (timeArg) oceanTime = *timeArg;
  if (!windArg.empty()) {
    std::vector<double> w;
    if (parseDoubles(windArg.c_str(), w, 2)) {
      rs.oceanParams.windSpeed = w[0];
      rs.oceanParams.windDirection = w[1];
    } else if (parseDoubles(windArg.c_str(), w, 1)) {
      rs.oceanParams.windSpeed = w[0];
    } else {
      return fail("--wind wants M/S or M/S,DEGREES, got '" + windArg + "'");
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
  // An archive, or DEMs packed into the cache (dem_cache.h) and opened from there: the window
  // opens at once and packs in the background (a preview, then the full archive); a screenshot
  // or a benchmark waits for the pack.
  std::unique_ptr<hfview::DemCacheRequest> backgroundPack;
  if (positional.size() == 1 && (hfa::isUrl(positional[0]) || hfview::isArchiveFile(positional[0]))) {
    archivePath = positional[0];
    if (!imageryPath.empty()) return fail("--imagery is for DEM inputs (" + archivePath + " is an archive)");
  } else if (!positional.empty()) {
    for (const std::string& p : positional)
      if (hfa::isUrl(p) || hfview::isArchiveFile(p)) return fail(p + " is an archive: give one archive, or DEMs to pack");
    hfview::DemCacheRequest req;
    req.inputs = positional;
    req.imagery = imageryPath;
    req.quiet = quiet;
    bool inWindow = false;
#if HF_HAVE_WINDOW
    inWindow = !headless && screenshot.empty() && !bench;
#endif
    if (inWindow) {
      backgroundPack = std::make_unique<hfview::DemCacheRequest>(req);  // hfview::PackJob
    } else {
      hfview::DemCacheResult res;
      std::string cerr;
      if (!hfview::archiveForDems(req, res, cerr)) return fail(cerr);
      archivePath = res.archive;
      if (!quiet)
        std::fprintf(stderr, res.fromCache ? "Note: opening %s from the cache\n" : "Note: packed %s in %.1f s\n",
                     res.fromCache ? archivePath.c_str() : positional[0].c_str(), res.packSeconds);
    }
  } else if (!imageryPath.empty()) {
    return fail("--imagery needs DEM inputs");
  }
  // The raw strategy reads raw archives: the default has a raw twin (hfpack --codec raw). A
  // binary away from its build tree (installed, copied) packs the default from assets/ into the
  // cache instead, with the build's options.
  if (archivePath.empty() && !backgroundPack) {
    archivePath = stream == "raw" ? HF_DEFAULT_RAW_ARCHIVE : HF_DEFAULT_ARCHIVE;
    const std::string height = hfrt::findAsset("puget_sound/ps_height_1k.png");
    std::error_code ec;
    if (!std::filesystem::exists(archivePath, ec) && !height.empty()) {
      hfview::DemCacheRequest req;
      req.inputs = {height};
      req.imagery = hfrt::findAsset("puget_sound/ps_texture_1k.png");
      req.packOptions = {"--spacing", "160", "--vertical-scale", "0.1"};
      if (stream == "raw") req.packOptions.insert(req.packOptions.end(), {"--codec", "raw", "--imagery-codec", "raw"});
      req.quiet = quiet;
      hfview::DemCacheResult res;
      std::string cerr;
      if (!hfview::archiveForDems(req, res, cerr)) return fail("the built-in default: " + cerr);
      archivePath = res.archive;
    }
  }
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
    // A file, else a camera path of assets/paths/ by name (with or without .txt).
    std::string file = pathArg;
    std::error_code ec;
    if (!std::filesystem::exists(file, ec) && pathArg.find('/') == std::string::npos) {
      for (const std::string& name : {pathArg, pathArg + ".txt"})
        if (const std::string asset = hfrt::findAsset("paths/" + name); !asset.empty()) {
          file = asset;
          break;
        }
    }
    std::string perr;
    if (!fly.path.load(file, perr)) return fail(perr);
  }

  // --cache vram covers the imagery too (the cuda imagery strategy's pool of BC1 chains).
  rs.imageryVramCache = streamOpts.vramCache;
  rs.imageryCacheMiB = streamOpts.cacheMiB;
  auto archivePtr = std::make_unique<hfa::ArchiveReader>();
  hfa::ArchiveReader& archive = *archivePtr;
  std::unique_ptr<hfr::StreamStrategy> strategy;
  std::string error;
  if (!backgroundPack) {
    if (!archive.open(archivePath, error)) return fail(archivePath + ": " + error);
    // Imagery is what a user expects to see first when the archive has it.
    if (!viewGiven && rs.imagery && archive.hasImagery()) rs.view = hfr::View::ImageryLit;
    std::string note;
    strategy = hfr::makeRenderStreamStrategy(stream, archive, error, note, streamOpts);
    if (!strategy) return fail(error);
    if (!note.empty()) std::fprintf(stderr, "Note: %s\n", note.c_str());
  }
#if HF_HAVE_WINDOW
  if (window) {
    hfview::ViewerOptions vo;
    vo.archivePath = archivePath;
    vo.stream = stream;
    vo.screenshot = screenshot;
    vo.maxFrames = frames;
    vo.haveCamera = haveCamera;
    vo.camera = cam;
    vo.quiet = quiet;
    vo.recordPath = recordPath;
    vo.glDebug = glDebug;
    std::unique_ptr<hfview::PackJob> job;
    if (backgroundPack) {
      archivePtr.reset();
      job = std::make_unique<hfview::PackJob>(*backgroundPack);
    }
    return hfview::runViewer(*window, std::move(archivePtr), std::move(strategy), std::move(job), streamOpts, rs, vo);
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
