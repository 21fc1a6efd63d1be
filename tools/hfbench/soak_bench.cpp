// soak_bench.cpp - see soak_bench.h.
#include "soak_bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "archive/archive.h"
#include "cli_options.h"
#include "json.h"
#include "render/camera/camera_path.h"
#include "render/flythrough/flythrough.h"
#include "render/gl/renderer.h"
#include "render/gl/stream_gl.h"

#if HF_BENCH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace hfbench {
namespace {

int fail(const std::string& msg) {
  std::fprintf(stderr, "Error: %s\n", msg.c_str());
  return 1;
}

long rssKiB() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  return -1;
}

// The device's used memory in MiB, -1 without CUDA (or no device).
double gpuUsedMiB() {
#if HF_BENCH_CUDA
  size_t freeBytes = 0, totalBytes = 0;
  if (cudaMemGetInfo(&freeBytes, &totalBytes) == cudaSuccess) return double(totalBytes - freeBytes) / (1 << 20);
  cudaGetLastError();
#endif
  return -1;
}

struct Sample {
  double seconds;
  long rssKiB;
  double gpuMiB;
  uint64_t frames;
  size_t failed;
};

}  // namespace

int runSoakCommand(int argc, char** argv) {
  CLI::App app{"hfbench soak: the viewer's render loop for a long time, faults injected into its archive reads, "
               "memory sampled; exit 0 when every injected fault was detected and memory stayed flat.",
               "hfbench soak"};
  lastValueWins(app);
  std::string archivePath, stream = "cpu", faultsText, jsonPath, size = "640x360", note;
  double minutes = 60, sampleSeconds = 60, maxGrowth = 0.05;
  int cycleFrames = 240;
  app.add_option("ARCHIVE", archivePath, "the archive (.hfa)")->required();
  app.add_option("--minutes", minutes, "how long to run")->check(finiteNumber(true))->capture_default_str();
  app.add_option("--stream", stream, "the strategy")->check(CLI::IsMember({"cpu", "cuda"}))->capture_default_str();
  app.add_option("--inject-faults", faultsText, "faults in the archive reads, e.g. eio=0.01,flip=0.01,short=0.005,"
                                                "delay=0.02:5ms,seed=7 (archive/fault_injection.h)");
  app.add_option("--sample-seconds", sampleSeconds, "memory sampling period")->check(finiteNumber(true))
      ->capture_default_str();
  app.add_option("--size", size, "framebuffer WxH")->capture_default_str();
  addInt(app, "--cycle-frames", cycleFrames, 2, 1000000, "frames for one flight there and back along the diagonal");
  app.add_option("--max-rss-growth", maxGrowth, "resident memory growth allowed after the warm-up (0.05 = 5 %)")
      ->check(finiteNumber(false))->capture_default_str();
  app.add_option("--json", jsonPath, "also write the result as JSON")->type_name("FILE");
  app.add_option("--note", note, "a note for the JSON");
  int status = 0;
  if (!hfcli::parse(app, argc - 1, argv + 1, status)) return status;
  hfa::FaultSpec spec;
  std::string error;
  if (!faultsText.empty() && !hfa::parseFaultSpec(faultsText, spec, error)) return fail(error);
  hfr::RenderSettings rs;
  {
    int used = 0;
    if (std::sscanf(size.c_str(), "%dx%d%n", &rs.width, &rs.height, &used) != 2 || size[size_t(used)] ||
        rs.width < 1 || rs.height < 1 || rs.width > 16384 || rs.height > 16384)
      return fail("--size wants WxH (1..16384), got '" + size + "'");
  }
  rs.ocean = false;
  std::string command;
  for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);

  hfa::ArchiveReader archive;
  if (!archive.open(archivePath, error)) return fail(archivePath + ": " + error);
  auto context = hfr::createHeadlessContext(error);
  if (!context) return fail(error);
  std::string note2;
  auto strategy = hfr::makeRenderStreamStrategy(stream, archive, error, note2);
  if (!strategy) return fail(error);
  if (!note2.empty()) std::fprintf(stderr, "Note: %s\n", note2.c_str());
  rs.atlasBudgetMiB = hfr::atlasBudgetForFraction(archive, 0.25);  // evictions and reloads all along
  auto renderer = hfr::Renderer::create(archive, *strategy, rs, error);
  if (!renderer) return fail(error);
  std::shared_ptr<hfa::FaultInjector> faults;
  if (spec.any()) {
    faults = std::make_shared<hfa::FaultInjector>(spec);
    archive.setFaultInjector(faults);  // after the top level: start-up reads are clean
  }
  double zmin = 0, zmax = 0, ex = 0, ey = 0;
  renderer->terrainBox(zmin, zmax, ex, ey);
  const hfr::CameraPath path = hfr::CameraPath::diagonal(ex, ey, zmin + (zmax - zmin) / 3 + 0.02 * std::max(ex, ey), 8000);
  const double duration = std::max(path.duration(), 1.0);

  std::vector<Sample> samples;
  const auto t0 = std::chrono::steady_clock::now();
  const double runSeconds = minutes * 60;
  double nextSample = 0;
  uint64_t frames = 0;
  for (;;) {
    const double now = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (now >= nextSample || now >= runSeconds) {
      const hfr::StreamStats st = strategy->stats();
      samples.push_back({now, rssKiB(), gpuUsedMiB(), frames, st.failed});
      std::fprintf(stderr, "hfbench soak: %6.1f min  %llu frames  RSS %ld MiB%s  failed tiles %zu\n", now / 60,
                   (unsigned long long)frames, samples.back().rssKiB / 1024,
                   samples.back().gpuMiB >= 0 ? (", GPU " + std::to_string(int(samples.back().gpuMiB)) + " MiB").c_str() : "",
                   st.failed);
      nextSample += sampleSeconds;
      if (now >= runSeconds) break;
    }
    // Back and forth along the diagonal in --cycle-frames frames, so every level streams in and
    // out whatever the frame rate (llvmpipe draws a few frames a second).
    const double t = std::fmod(double(frames) / double(cycleFrames), 1.0) * 2 * duration;
    const hfr::Camera cam = path.at(path.startTime() + (t < duration ? t : 2 * duration - t));
    hfr::FrameStats fst;
    renderer->frame(cam, &fst);
    renderer->finishFrame(&fst);
    ++frames;
  }
  // Drain: the reads in flight are delivered (each injected fault must reach the count).
  const hfr::Camera last = path.at(path.startTime() + std::fmod(double(frames) / double(cycleFrames), 1.0) * duration);
  for (int i = 0; i < 3000 && strategy->pending() > 0; ++i) {
    renderer->frame(last, nullptr);
    renderer->finishFrame(nullptr);
  }
  if (faults) archive.setFaultInjector(nullptr);
  const hfr::StreamStats st = strategy->stats();
  // Memory after the warm-up: from the first sample at or after a fifth of the run that comes
  // after the first whole cycle (the atlas full, every level streamed once).
  size_t warm = 1;
  while (warm < samples.size() && (samples[warm].seconds < runSeconds / 5 || samples[warm].frames < uint64_t(cycleFrames)))
    ++warm;
  warm = std::min(warm, samples.size() - 1);
  long peak = 0;
  for (size_t i = warm; i < samples.size(); ++i) peak = std::max(peak, samples[i].rssKiB);
  const double growth = samples[warm].rssKiB > 0 ? double(peak) / double(samples[warm].rssKiB) - 1 : 0;
  const uint64_t injected = faults ? faults->eio() + faults->corruptions() : 0;
  const bool detected = injected == st.failed;
  const bool flat = growth <= maxGrowth;
  std::printf("hfbench soak: %s | %s | stream %s | %.1f min, %llu frames\n", archivePath.c_str(),
              context->description().c_str(), strategy->name(), samples.back().seconds / 60,
              (unsigned long long)frames);
  if (faults)
    std::printf("hfbench soak: injected %llu I/O errors, %llu bit flips, %llu short reads, %llu delays; "
                "%zu tiles failed: %s\n",
                (unsigned long long)faults->eio(), (unsigned long long)faults->flips(),
                (unsigned long long)faults->shorts(), (unsigned long long)faults->delays(), st.failed,
                detected ? "every injected fault detected" : "MISMATCH");
  std::printf("hfbench soak: RSS %ld MiB after the warm-up (%.1f min), peak %ld MiB: growth %.1f %% (%s %.0f %%)\n",
              samples[warm].rssKiB / 1024, samples[warm].seconds / 60, peak / 1024, 100 * growth,
              flat ? "within" : "OVER", 100 * maxGrowth);
  if (!jsonPath.empty()) {
    std::string out;
    JsonWriter j(out);
    j.beginObject();
    j.field("benchmark", "soak").field("device", context->description()).field("command", command);
    j.field("note", note).field("archive", archivePath).field("strategy", strategy->name());
    j.field("minutes", samples.back().seconds / 60).field("frames", int64_t(frames));
    j.field("faults", faultsText);
    j.field("injected_io_errors", int64_t(faults ? faults->eio() : 0));
    j.field("injected_bit_flips", int64_t(faults ? faults->flips() : 0));
    j.field("injected_short_reads", int64_t(faults ? faults->shorts() : 0));
    j.field("injected_delays", int64_t(faults ? faults->delays() : 0));
    j.field("failed_tiles", int64_t(st.failed)).field("every_fault_detected", detected);
    j.field("rss_after_warmup_kib", int64_t(samples[warm].rssKiB)).field("rss_peak_kib", int64_t(peak));
    j.field("rss_growth", growth).field("memory_flat", flat).field("crashes", int64_t(0));
    j.key("samples").beginArray();
    for (const Sample& s : samples) {
      j.beginObject();
      j.field("seconds", s.seconds).field("rss_kib", int64_t(s.rssKiB)).field("gpu_used_mib", s.gpuMiB);
      j.field("frames", int64_t(s.frames)).field("failed_tiles", int64_t(s.failed));
      j.endObject();
    }
    j.endArray();
    j.endObject();
    std::FILE* f = std::fopen(jsonPath.c_str(), "wb");
    if (!f || std::fwrite(out.data(), 1, out.size(), f) != out.size()) {
      if (f) std::fclose(f);
      return fail("cannot write " + jsonPath);
    }
    std::fclose(f);
  }
  return detected && flat ? 0 : 1;
}

}  // namespace hfbench
