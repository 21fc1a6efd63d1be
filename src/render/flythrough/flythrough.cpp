// flythrough.cpp - the flythrough benchmark engine (flythrough.h).
#include "render/flythrough/flythrough.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <utility>

#include "archive/archive.h"

namespace hfr {

namespace {

double threadCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) * 1e-6;
}

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// One synchronous frame, recorded (`stats`: its FrameStats, for what a FlyFrame does not hold).
FlyFrame timedFrame(Renderer& r, const Camera& cam, FrameStats* stats = nullptr) {
  FrameStats st;
  FlyFrame f;
  const auto t0 = std::chrono::steady_clock::now();
  const double cpu0 = threadCpuMs();
  r.frame(cam, &st);
  f.renderCpuMs = threadCpuMs() - cpu0;
  r.finishFrame(&st);
  f.frameMs = msSince(t0);
  f.selectMs = st.selectMs;
  f.updateCpuMs = st.updateCpuMs;
  f.drawCpuMs = st.drawCpuMs;
  f.updateGpuMs = std::max(0.0, st.updateGpuMs);
  f.drawGpuMs = std::max(0.0, st.gpuMs[size_t(GpuPass::Terrain)]) +
                std::max(0.0, st.gpuMs[size_t(GpuPass::Wireframe)]);
  f.tilesRequested = st.tilesRequested;
  f.tilesUploaded = st.uploads;
  f.tilesDrawn = st.tilesDrawn;
  f.tilesPending = st.pending;
  f.tilesMissing = st.tilesMissing;
  f.tilesLossy = st.lossyDrawn;
  f.triangles = st.triangles;
  f.compressedToDevice = st.compressedToDevice;
  f.samplesToDevice = st.samplesToDevice;
  f.bytesRead = st.bytesStreamed;
  f.cacheHits = st.cacheHits;
  f.cacheBytes = st.cacheBytes;
  f.hostHits = st.hostHits;
  f.hostStaged = st.hostStaged;
  f.hostBytes = st.hostBytes;
  f.payloadToDevice = st.payloadToDevice;
  f.colourUploaded = st.colourUploads;
  f.colourMissing = st.colourMissing;
  f.colourBytesRead = st.colourBytesStreamed;
  f.colourBytesToDevice = st.colourBytesToDevice;
  f.colourCpuMs = st.colourCpuMs;
  f.colourCacheHits = st.colourCacheHits;
  f.colourCacheBytes = st.colourCacheBytes;
  if (stats) *stats = std::move(st);
  return f;
}

std::string formatPath(const FlythroughOptions& o, double altitude) {
  char buf[160];
  if (!o.path.empty()) {
    std::snprintf(buf, sizeof buf, "recorded path, %zu keys, %.1f s", o.path.keys().size(),
                  o.path.duration());
  } else {
    std::snprintf(buf, sizeof buf, "diagonal SW->NE at %.0f m, %.0f m/s", altitude, o.speed);
  }
  return buf;
}

// The flight: options.path, or the diagonal over the renderer's terrain. Returns it in words.
std::string flightPath(const Renderer& renderer, const FlythroughOptions& options, CameraPath& path) {
  path = options.path;
  if (!path.empty()) return formatPath(options, 0);
  double minZ, maxZ, extentX, extentY;
  renderer.terrainBox(minZ, maxZ, extentX, extentY);
  const double altitude =
      std::isfinite(options.altitude) ? options.altitude : std::max(maxZ, 1.0) / 3.0;
  path = CameraPath::diagonal(extentX, extentY, altitude, options.speed);
  return formatPath(options, altitude);
}

}  // namespace

bool measureAtlasFill(const hfa::ArchiveReader& archive, StreamStrategy& strategy,
                      const RenderSettings& settings, const FlythroughOptions& options,
                      FillResult& fill, std::string& error) {
  if (!(options.speed > 0) || !std::isfinite(options.speed)) {
    error = "the speed must be > 0 m/s";
    return false;
  }
  // No per-step upload cap: the strategy delivers whatever it has ready.
  RenderSettings rs = settings;
  rs.uploadsPerFrame = size_t(1) << 30;
  rs.prefetch = false;  // the camera does not move
  auto renderer = Renderer::create(archive, strategy, rs, error);
  if (!renderer) return false;
  CameraPath path;
  flightPath(*renderer, options, path);
  const Camera first = path.at(path.startTime());
  fill = FillResult{};
  // Caches that preload once the renderer exists (the gl strategy's pool, the imagery's VRAM
  // cache) are loaded before the timing starts.
  renderer->finishPrefetch(&fill.colourPreloadMs, &fill.colourCacheBytes);
  const StreamStats before = strategy.stats();
  const auto t0 = std::chrono::steady_clock::now();
  while (true) {
    FrameStats st;
    const auto s0 = std::chrono::steady_clock::now();
    renderer->stream(first, &st);
    fill.stepMs.push_back(msSince(s0));
    fill.planMs += st.selectMs;
    fill.deliverMs += st.updateCpuMs;
    fill.colourTiles += st.colourUploads;
    fill.colourBytesToDevice += st.colourBytesToDevice;
    ++fill.frames;
    if (fill.viewMs < 0 && renderer->viewComplete()) fill.viewMs = msSince(t0);
    if (renderer->settled()) break;
    if (msSince(t0) > options.fillTimeoutS * 1e3) {
      error = "the atlas fill did not finish within " + std::to_string(int(options.fillTimeoutS)) + " s";
      return false;
    }
  }
  const auto f0 = std::chrono::steady_clock::now();
  renderer->finishFrame(nullptr);  // the uploads / decodes have reached the atlas
  fill.finishMs = msSince(f0);
  fill.ms = msSince(t0);
  strategy.pollCompleted();  // the GPU has finished: collect the device time
  const StreamStats after = strategy.stats();
  fill.deviceMs = after.deviceMs - before.deviceMs;
  fill.tiles = after.delivered - before.delivered;
  fill.compressedToDevice = after.compressedToDevice - before.compressedToDevice;
  fill.samplesToDevice = after.samplesToDevice - before.samplesToDevice;
  fill.bytesRead = after.bytesRead - before.bytesRead;
  return true;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  // p * n first: p / 100 * n rounds up past an integer rank (28 / 100.0 * 25 = 7.000000000000001).
  const double rank = std::ceil(p * double(v.size()) / 100.0);
  const size_t i = size_t(std::clamp(rank, 1.0, double(v.size()))) - 1;
  return v[i];
}

double atlasBudgetForFraction(const hfa::ArchiveReader& archive, double fraction) {
  const double p = archive.header().tileSize();
  double bytes = double(archive.tiles().size()) * p * p * 2.0;
  if (archive.hasImagery()) {
    // A colour layer: the tile and its mips (4/3), BC1 at 4 bits per texel.
    const double t = archive.imagery().tileSize;
    bytes += double(archive.imageryTiles().size()) * t * t * 0.5 * 4.0 / 3.0;
  }
  return fraction * bytes / (1024.0 * 1024.0);
}

bool runFlythrough(const hfa::ArchiveReader& archive, StreamStrategy& strategy,
                   const RenderSettings& settings, const FlythroughOptions& options,
                   FlythroughRun& run, std::string& error) {
  if (!(options.dt > 0) || !std::isfinite(options.dt)) {
    error = "the time step must be > 0 seconds";
    return false;
  }
  if (!(options.speed > 0) || !std::isfinite(options.speed)) {
    error = "the speed must be > 0 m/s";
    return false;
  }
  // The prefetch predicts the camera in simulated time, like the path.
  RenderSettings rs = settings;
  rs.prefetchFrameSeconds = options.dt;
  auto renderer = Renderer::create(archive, strategy, rs, error);
  if (!renderer) return false;
  for (const std::string& note : renderer->notes()) std::fprintf(stderr, "Note: %s\n", note.c_str());
  run.frames.clear();
  run.fill = FillResult{};
  run.archiveTiles = archive.tiles().size();

  CameraPath path;
  run.path = flightPath(*renderer, options, path);
  int frames = options.frames;
  // The last frame is at the path's end when dt divides its duration: a relative tolerance, as
  // 0.7 / 0.1 is 6.999999999999999 in doubles.
  if (frames <= 0)
    frames = int(std::min<double>(FlythroughOptions::kMaxFrames,
                                  std::floor(path.duration() / options.dt * (1 + 1e-9)) + 1));

  // 1. Initial fill at the first camera (the VRAM caches that load once the renderer exists
  // loaded first, untimed, as the cuda strategy's is by the caller).
  renderer->finishPrefetch(&run.fill.colourPreloadMs, &run.fill.colourCacheBytes);
  const Camera first = path.at(path.startTime());
  const StreamStats before = strategy.stats();
  const auto fill0 = std::chrono::steady_clock::now();
  for (int i = 0;; ++i) {
    FlyFrame f = timedFrame(*renderer, first);
    f.fill = true;
    f.index = i;
    run.frames.push_back(f);
    if (run.fill.viewMs < 0 && renderer->viewComplete()) run.fill.viewMs = msSince(fill0);
    if (renderer->settled()) break;
    if (msSince(fill0) > options.fillTimeoutS * 1e3) {
      error = "the initial fill did not finish within " +
              std::to_string(int(options.fillTimeoutS)) + " s";
      return false;
    }
  }
  run.fill.ms = msSince(fill0);
  run.fill.frames = int(run.frames.size());
  for (const FlyFrame& f : run.frames) {
    run.fill.colourTiles += f.colourUploaded;
    run.fill.colourBytesToDevice += f.colourBytesToDevice;
  }
  const StreamStats afterFill = strategy.stats();
  run.fill.tiles = afterFill.delivered - before.delivered;
  run.fill.compressedToDevice = afterFill.compressedToDevice - before.compressedToDevice;
  run.fill.samplesToDevice = afterFill.samplesToDevice - before.samplesToDevice;
  run.fill.bytesRead = afterFill.bytesRead - before.bytesRead;

  // 2. The flight at a fixed simulated time step. The atlas figures come from the last frame
  // (no streaming step after it: every tile uploaded during the run is in a frame's record).
  FrameStats last;
  for (int i = 0; i < frames; ++i) {
    const double t = double(i) * options.dt;
    FlyFrame f = timedFrame(*renderer, path.at(path.startTime() + t), &last);
    f.index = i;
    f.t = t;
    run.frames.push_back(f);
  }
  run.atlasSlots = last.atlasSlots;
  run.failedTiles = last.failedTiles;
  return true;
}

FlightSummary summarize(const FlythroughRun& run) {
  FlightSummary s;
  std::vector<double> ms, cpu, sel, draw, colourCpu;
  double afterFirst = 0, updCpu = 0, updGpu = 0, missing = 0, colourMissing = 0;
  for (const FlyFrame& f : run.frames) {
    if (f.fill) continue;
    ms.push_back(f.frameMs);
    cpu.push_back(f.renderCpuMs);
    sel.push_back(f.selectMs);
    draw.push_back(f.drawGpuMs);
    if (f.index > 0) afterFirst = std::max(afterFirst, f.frameMs);
    updCpu += f.updateCpuMs;
    updGpu += f.updateGpuMs;
    missing += double(f.tilesMissing);
    s.hostHits += f.hostHits;
    s.hostStaged += f.hostStaged;
    s.compressedToDevice += f.compressedToDevice;
    s.samplesToDevice += f.samplesToDevice;
    s.bytesRead += f.bytesRead;
    s.meanTriangles += double(f.triangles);
    s.uploads += f.tilesUploaded;
    colourMissing += double(f.colourMissing);
    if (f.index > 0) s.maxColourMissingAfterFirst = std::max(s.maxColourMissingAfterFirst, f.colourMissing);
    s.colourUploads += f.colourUploaded;
    s.colourBytesRead += f.colourBytesRead;
    s.colourBytesToDevice += f.colourBytesToDevice;
    colourCpu.push_back(f.colourCpuMs);
  }
  s.frames = ms.size();
  if (ms.empty()) return s;
  const double n = double(ms.size());
  s.medianMs = percentile(ms, 50);
  s.p95Ms = percentile(ms, 95);
  s.p99Ms = percentile(ms, 99);
  s.maxMs = *std::max_element(ms.begin(), ms.end());
  s.maxAfterFirstMs = afterFirst;
  s.meanUpdateCpuMs = updCpu / n;
  s.meanUpdateGpuMs = updGpu / n;
  s.medianRenderCpuMs = percentile(cpu, 50);
  s.p99RenderCpuMs = percentile(cpu, 99);
  s.medianSelectMs = percentile(sel, 50);
  s.medianDrawGpuMs = percentile(draw, 50);
  s.meanMissing = missing / n;
  s.meanTriangles /= n;
  s.meanColourMissing = colourMissing / n;
  s.medianColourCpuMs = percentile(colourCpu, 50);
  s.p99ColourCpuMs = percentile(colourCpu, 99);
  return s;
}

bool writeFlythroughCsv(const std::string& path, const FlythroughRun& run, std::string& error) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "w"), &std::fclose);
  if (!f) {
    error = "cannot write " + path;
    return false;
  }
  std::fprintf(
      f.get(),
      "phase,frame,t_s,frame_ms,render_cpu_ms,select_ms,update_cpu_ms,update_gpu_ms,"
      "draw_cpu_ms,draw_gpu_ms,tiles_requested,tiles_uploaded,tiles_drawn,"
      "tiles_pending,tiles_missing,triangles,compressed_bytes_h2d,"
      "decompressed_bytes_h2d,imagery_uploaded,imagery_missing,imagery_bytes_read,"
      "imagery_bytes_h2d,imagery_cpu_ms,payload_bytes_read,cache_hits,cache_bytes,"
      "imagery_cache_hits,imagery_cache_bytes,tiles_lossy,host_hits,host_staged,host_bytes\n");
  for (const FlyFrame& r : run.frames)
    std::fprintf(f.get(),
                 "%s,%d,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%zu,%zu,%zu,%zu,%zu,%llu,%llu,%llu,"
                 "%zu,%zu,%llu,%llu,%.4f,%llu,%llu,%llu,%llu,%llu,%zu,%llu,%llu,%llu\n",
                 r.fill ? "fill" : "flight", r.index, r.t, r.frameMs, r.renderCpuMs, r.selectMs,
                 r.updateCpuMs, r.updateGpuMs, r.drawCpuMs, r.drawGpuMs, r.tilesRequested,
                 r.tilesUploaded, r.tilesDrawn, r.tilesPending, r.tilesMissing,
                 (unsigned long long)r.triangles, (unsigned long long)r.compressedToDevice,
                 (unsigned long long)r.samplesToDevice, r.colourUploaded, r.colourMissing,
                 (unsigned long long)r.colourBytesRead, (unsigned long long)r.colourBytesToDevice,
                 r.colourCpuMs, (unsigned long long)r.bytesRead, (unsigned long long)r.cacheHits,
                 (unsigned long long)r.cacheBytes, (unsigned long long)r.colourCacheHits,
                 (unsigned long long)r.colourCacheBytes, r.tilesLossy,
                 (unsigned long long)r.hostHits, (unsigned long long)r.hostStaged,
                 (unsigned long long)r.hostBytes);
  if (std::fflush(f.get()) != 0 || std::ferror(f.get())) {
    error = "writing " + path + " failed";
    return false;
  }
  return true;
}

}  // namespace hfr
