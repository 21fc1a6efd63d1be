// flythrough.h - the flythrough benchmark engine (issue 6): flies a camera path over an archive
// with one streaming strategy and records every frame. Used by `hfview --headless --bench`
// (one strategy, CSV) and `hfbench flythrough` (every strategy in one process, report).
//
// A run, on the calling thread with its GL context current:
//   1. initial fill: a fresh Renderer (empty atlas apart from the top level, which every
//      strategy loads synchronously at creation) renders frames at the path's first camera
//      until every tile that view wants is resident (Renderer::settled);
//   2. flight: frame i shows the camera at simulated time i * dt (a fixed time step, so every
//      strategy sees the same cameras whatever its speed).
// Every frame is synchronous: frame() then finishFrame() (glFinish), so its time is the full
// CPU + GPU cost of that frame and its GPU pass times are its own. Loader threads keep working
// in real time between frames, so a slow frame gives them more time: the frame times, not the
// loader's throughput alone, decide how far behind a strategy falls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "render/camera/camera_path.h"
#include "render/gl/renderer.h"

namespace hfa {
class ArchiveReader;
}

namespace hfr {

struct FlythroughOptions {
  // The path: `path` when it has keys (a recorded file), else the thesis's diagonal from the
  // south-west to the north-east corner at `altitude` (NaN: one third of the archive's maximum
  // height) and `speed` m/s.
  CameraPath path;
  double altitude = std::numeric_limits<double>::quiet_NaN();
  double speed = 8000;
  int frames = 0;  // flight frames; 0 = duration / dt + 1 (t = 0 .. the end), at most kMaxFrames
  double dt = 1.0 / 60.0;     // simulated seconds per frame
  double fillTimeoutS = 60;   // the initial fill gives up (run fails) after this long
  static constexpr int kMaxFrames = 3000;
};

// One frame's record (the CSV columns; docs/benchmarks.md explains each).
struct FlyFrame {
  bool fill = false;     // part of the initial fill (else the flight)
  int index = 0;         // frame number within its phase
  double t = 0;          // simulated time of the camera, seconds
  double frameMs = 0;    // wall time of frame() + finishFrame()
  double renderCpuMs = 0;  // CPU time of the render thread in frame() (CLOCK_THREAD_CPUTIME_ID)
  double selectMs = 0, updateCpuMs = 0, drawCpuMs = 0;  // FrameStats, render thread wall time
  double updateGpuMs = 0, drawGpuMs = 0;                // FrameStats after finishFrame
  size_t tilesRequested = 0, tilesUploaded = 0, tilesDrawn = 0, tilesPending = 0;
  size_t tilesMissing = 0;  // wanted by the camera, not resident (drawn from an ancestor)
  size_t tilesLossy = 0;    // drawn with lossy heights (progressive loading, not refined yet)
  uint64_t triangles = 0;
  uint64_t compressedToDevice = 0, samplesToDevice = 0;  // host->device bytes this frame
  uint64_t bytesRead = 0;  // height payload bytes the strategy read from the archive this frame
  uint64_t cacheHits = 0;   // tiles decoded from the VRAM cache this frame (cuda --cache vram)
  uint64_t cacheBytes = 0;  // bytes resident in the VRAM cache after this frame
  // The host cache of compressed payloads (cuda --cache host): requests answered from it and
  // tiles staged into it this frame, its bytes after this frame.
  uint64_t hostHits = 0, hostStaged = 0, hostBytes = 0;
  uint64_t payloadToDevice = 0;  // cuda: payload bytes of the tiles it sent this frame
  // Imagery (0 without): tiles uploaded, wanted but not resident, archive bytes read and
  // texture bytes sent to the GPU this frame (BC1 or RGBA8 mips).
  size_t colourUploaded = 0, colourMissing = 0;
  uint64_t colourBytesRead = 0, colourBytesToDevice = 0;
  double colourCpuMs = 0;  // render-thread wall time of the imagery work (FrameStats::colourCpuMs)
  uint64_t colourCacheHits = 0, colourCacheBytes = 0;  // the imagery's VRAM cache, as for heights
};

struct FillResult {
  double ms = 0;     // wall time from the first fill frame to the settled one
  // Wall time to the first frame with every wanted height tile resident (Renderer::viewComplete):
  // with progressive loading the first view, lossy, while `ms` is the exact one; without it
  // about `ms` (the imagery and the last uploads may settle a frame later). -1: not reached.
  double viewMs = -1;
  int frames = 0;
  size_t tiles = 0;  // tiles delivered into the atlas during the fill
  uint64_t compressedToDevice = 0, samplesToDevice = 0;
  uint64_t bytesRead = 0;  // height payload bytes read from the archive during the fill
  size_t colourTiles = 0;  // imagery tiles uploaded during the fill
  uint64_t colourBytesToDevice = 0;
  // RenderSettings::imageryVramCache: loading the whole imagery into the pool before the fill
  // (Renderer::finishPrefetch), and the bytes it holds then.
  double colourPreloadMs = 0;
  uint64_t colourCacheBytes = 0;
  // measureAtlasFill: the wall time of each polling step (Renderer::stream: LOD plan, requests,
  // deliveries) and of the final wait for the GPU, so a reader can tell fixed costs from bytes.
  std::vector<double> stepMs;
  double finishMs = 0;
  // Of the steps' time: the LOD plan (FrameStats::selectMs) and the requests and deliveries
  // (FrameStats::updateCpuMs), summed over the steps.
  double planMs = 0, deliverMs = 0;
  // GPU time of the strategy's own work in the fill (StreamStats::deviceMs: cuda's copies and
  // decodes, gl's decode dispatches), milliseconds; 0 for strategies that only upload.
  double deviceMs = 0;
};

struct FlythroughRun {
  std::string strategy;  // as named by the caller ("cuda x2", "raw", ...)
  std::string archive;   // path
  FillResult fill;       // the first view with frames (runFlythrough)
  FillResult atlasFill;  // stream only, no cap (measureAtlasFill; set by the caller)
  std::vector<FlyFrame> frames;  // fill frames first, then the flight
  size_t atlasSlots = 0, archiveTiles = 0;
  size_t failedTiles = 0;
  std::string path;       // the flight, in words ("diagonal at 1466 m, 8000 m/s" or the file)
};

// Flies `path` with a fresh Renderer over `archive` fed by `strategy` (both must outlive the
// call; the strategy must be fresh: nothing requested yet). Needs a current GL context. False
// and a one-line error when the renderer cannot be made or the fill times out.
bool runFlythrough(const hfa::ArchiveReader& archive, StreamStrategy& strategy,
                   const RenderSettings& settings, const FlythroughOptions& options,
                   FlythroughRun& run, std::string& error);

// The thesis's atlas fill: a fresh Renderer streams the path's first view into its empty atlas
// (top level only) with no drawing and no per-step upload cap, polling the strategy until every
// tile the view wants is resident, then waits for the GPU (glFinish). `fill.frames` counts the
// polling steps. Needs a current GL context and a fresh strategy (it cannot be reused: the
// renderer releases its GL resources). False and a one-line error on failure or timeout.
bool measureAtlasFill(const hfa::ArchiveReader& archive, StreamStrategy& strategy,
                      const RenderSettings& settings, const FlythroughOptions& options,
                      FillResult& fill, std::string& error);

// Summary of the flight frames (not the fill) of one run.
struct FlightSummary {
  size_t frames = 0;
  double medianMs = 0, p95Ms = 0, p99Ms = 0, maxMs = 0;
  double maxAfterFirstMs = 0;              // the largest frame time except flight frame 0
  double meanUpdateCpuMs = 0, meanUpdateGpuMs = 0;
  double medianRenderCpuMs = 0, p99RenderCpuMs = 0;
  double medianSelectMs = 0, medianDrawGpuMs = 0;
  uint64_t compressedToDevice = 0, samplesToDevice = 0;  // bytes over the whole flight
  uint64_t bytesRead = 0;  // height payload bytes read over the flight
  double meanTriangles = 0;  // per flight frame
  size_t uploads = 0;
  double meanMissing = 0;  // tiles wanted but not resident, per frame
  uint64_t hostHits = 0, hostStaged = 0;  // the host cache's (FlyFrame), over the flight
  // Imagery: uploads, bytes read / to the device over the flight, missing tiles per frame (mean,
  // and after the first frame the largest), 0 without imagery.
  size_t colourUploads = 0;
  uint64_t colourBytesRead = 0, colourBytesToDevice = 0;
  double meanColourMissing = 0;
  double medianColourCpuMs = 0, p99ColourCpuMs = 0;  // imagery work on the render thread
  size_t maxColourMissingAfterFirst = 0;
};
FlightSummary summarize(const FlythroughRun& run);

// Percentile (0..100) of `v` by the nearest-rank method; 0 for an empty vector.
double percentile(std::vector<double> v, double p);

// One row per frame, a header line first. False and a one-line error when the file cannot be
// written.
bool writeFlythroughCsv(const std::string& path, const FlythroughRun& run, std::string& error);

// Atlas budget (MiB) holding `fraction` of all the archive's tiles (the thesis: about 0.55): height
// tiles, and with imagery its tiles too as BC1 layers with their mips.
double atlasBudgetForFraction(const hfa::ArchiveReader& archive, double fraction);

}  // namespace hfr
