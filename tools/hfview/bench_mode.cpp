// bench_mode.cpp - `hfview --headless --bench` (bench_mode.h).
#include "bench_mode.h"

#include <cstdio>
#include <cstring>

#include "archive/archive.h"

namespace hfview {

int runBenchMode(const hfa::ArchiveReader& archive, hfr::StreamStrategy& strategy,
                 const hfr::RenderSettings& settings, const hfr::FlythroughOptions& options,
                 const std::string& csvPath, const std::string& device, bool quiet) {
  hfr::FlythroughRun run;
  run.strategy = strategy.name();
  std::string error;
  if (!hfr::runFlythrough(archive, strategy, settings, options, run, error) ||
      !hfr::writeFlythroughCsv(csvPath, run, error)) {
    std::fprintf(stderr, "Error: %s\n", error.c_str());
    return 1;
  }
  if (quiet) return 0;
  const hfr::FlightSummary s = hfr::summarize(run);
  std::printf("hfview bench: %s | %s\n", device.c_str(), strategy.name());
  std::printf("hfview bench: %dx%d, tau %.3g px, %s, %zu frames of %.4f s, atlas %zu of %zu tiles\n",
              settings.width, settings.height, settings.tau, run.path.c_str(), s.frames,
              options.dt, run.atlasSlots, run.archiveTiles);
  std::printf("hfview bench: initial fill %.1f ms, first view %.1f ms (%d frames, %zu tiles, host->device %llu "
              "compressed + %llu decompressed bytes, %llu payload bytes read)\n",
              run.fill.ms, run.fill.viewMs, run.fill.frames, run.fill.tiles,
              (unsigned long long)run.fill.compressedToDevice,
              (unsigned long long)run.fill.samplesToDevice, (unsigned long long)run.fill.bytesRead);
  std::printf("hfview bench: frame ms median %.3f p95 %.3f p99 %.3f max %.3f (after the first "
              "%.3f); render-thread CPU median %.3f ms; update CPU %.3f GPU %.3f ms/frame\n",
              s.medianMs, s.p95Ms, s.p99Ms, s.maxMs, s.maxAfterFirstMs, s.medianRenderCpuMs,
              s.meanUpdateCpuMs, s.meanUpdateGpuMs);
  std::printf("hfview bench: flight %zu tiles uploaded, host->device %llu compressed + %llu "
              "decompressed bytes, %.1f tiles missing per frame; wrote %s\n",
              s.uploads, (unsigned long long)s.compressedToDevice,
              (unsigned long long)s.samplesToDevice, s.meanMissing, csvPath.c_str());
  if (run.fill.colourTiles > 0 || s.colourUploads > 0)
    std::printf("hfview bench: imagery (%s): fill %zu tiles, flight %zu tiles uploaded, %llu bytes read, %llu bytes to "
                "the device, %.2f tiles missing per frame (at most %zu after the first)\n",
                !settings.imageryStream.empty() ? settings.imageryStream.c_str()
                : std::strcmp(strategy.name(), "raw") == 0 ? "raw"
                : std::strcmp(strategy.name(), "cuda") == 0 ? "cuda" : "cpu",
                run.fill.colourTiles, s.colourUploads,
                (unsigned long long)s.colourBytesRead, (unsigned long long)s.colourBytesToDevice, s.meanColourMissing,
                s.maxColourMissingAfterFirst);
  return 0;
}

}  // namespace hfview
