// main.cpp - hfbench: codec benchmarks (thin command line over codec_bench.h / report.h).
//
//   hfbench codec INPUT... --json OUT.json [--patch 129] [--segment 9] [--bits auto|N]
//                 [--threads N] [--repeat N] [--zstd-level 19] [--quant-step S] [--band 1]
//                 [--device cpu|cuda] [-q]
//   hfbench dump INPUT... -o DIR [--window W|WxH]   one .hfr per input (demio/hfr.h), for builds
//                 without GDAL (the GPU machine)
//   hfbench imagery IMAGE... --json OUT.json [--quality 90] [--threads N] [--bc1-window N]
//                 [--batch-tiles 1024] [--no-gpu] [-q]
//                 the imagery codec against TurboJPEG and libsquish (imagery_bench.h), and on a
//                 CUDA device its GPU twins against them and nvJPEG (imagery_gpu_bench.h)
//   hfbench flythrough ... (flythrough_bench.h), hfbench fft ... (fft_bench.h)
//
// The command lines are CLI11's (tools/cli/cli.h, cli_options.h): hfbench --help and
// hfbench COMMAND --help print the options. Exit status 0 when every input was measured and every
// codec decoded losslessly, else 1. Errors are one line starting "Error:" on stderr; a bad input
// does not stop the others.
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "json.h"
#include "cli_options.h"
#include "codec_bench.h"
#include "entropy_study.h"
#include "demio/hfr.h"
#include "host.h"
#include "report.h"
#if HF_BENCH_FLYTHROUGH
#include "flythrough_bench.h"
#include "soak_bench.h"
#endif
#if HF_BENCH_FFT
#include "fft_bench.h"
#endif
#if HF_BENCH_IMAGERY
#include "imagery_bench.h"
#endif

namespace {

// "--json OUT.json": a file name, or "-" for stdout.
std::string jsonFileName(const std::string& v) {
  return v.empty() || (v[0] == '-' && v != "-") ? "needs a file name (or - for stdout)" : "";
}

int fail(const std::string& message) {
  std::fprintf(stderr, "Error: %s\n", message.c_str());
  return 1;
}

bool parseInt(std::string_view text, int lo, int hi, int& value) {
  int v = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size() || v < lo || v > hi) return false;
  value = v;
  return true;
}

// Runs `bench(path, log)` on every input in order, with "[k/n] path: stages - s" on stderr
// unless quiet; `failedOn(path, result)` reports a failed result (one "Error:" line) and says so.
// True when none failed.
template <class Result, class Bench, class FailedOn>
bool benchInputs(const std::vector<std::string>& inputs, bool quiet, Bench bench, FailedOn failedOn,
                 std::vector<Result>& results) {
  bool ok = true;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const std::string& path = inputs[k];
    if (!quiet) std::fprintf(stderr, "[%zu/%zu] %s:", k + 1, inputs.size(), path.c_str());
    std::function<void(const std::string&)> log;
    if (!quiet)
      log = [](const std::string& stage) {
        std::fprintf(stderr, " %s", stage.c_str());
        std::fflush(stderr);
      };
    Result r = bench(path, log);
    if (!quiet) std::fprintf(stderr, r.ok ? " - %.1f s\n" : " - failed\n", r.totalSeconds);
    if (failedOn(path, r)) ok = false;
    results.push_back(std::move(r));
  }
  return ok;
}

int runCodec(int argc, char** argv) {
  hfbench::CodecBenchOptions options;
  std::vector<std::string> inputs;
  std::string json_path;
  std::string device = "cpu";
  bool quiet = false;
  CLI::App app{"HFPaC against zstd and LERC on the patches of real DEMs (codec_bench.h): sizes, encode and decode "
               "speed, a lossless check of every codec; one JSON report, a table on stdout. Exit status 1 when an "
               "input failed or a codec was not lossless.",
               "hfbench codec"};
  hfbench::lastValueWins(app);
  app.add_option("INPUT", inputs, "DEMs (any raster demio reads; .hfr dumps without GDAL)")->required();
  app.add_option("--json", json_path, "the report; - for stdout (the table then goes to stderr)")
      ->required()
      ->check(jsonFileName)
      ->type_name("OUT.json");
  hfbench::addInt(app, "--patch", options.patch, 2, hfpac::kMaxPatchSide, "patch side P");
  hfbench::addInt(app, "--segment", options.segment, 0, 33, "segment size, 0 = try all")
      ->check(CLI::IsMember({0, 5, 9, 17, 33}));
  hfbench::addInt(app, "--bits", options.bits, -1, hfpac::kMaxBits, "bits per sample, auto (-1) or 0..16")
      ->transform(CLI::Transformer({{"auto", "-1"}}).description(""))
      ->type_name("auto|INT")
      ->default_str("auto");
  hfbench::addInt(app, "--threads", options.threads, 0, 1024, "threads of the batch runs, 0 = all cores");
  hfbench::addInt(app, "--repeat", options.repeat, 1, 1000, "decode rounds (every codec's decode in turn); the best is reported");
  hfbench::addInt(app, "--zstd-level", options.zstdLevel, 1, 22, "zstd's level");
  app.add_option("--quant-step", options.read.quantStep, "quantisation step for wider types (default: automatic)")
      ->check(hfbench::finiteNumber(true));
  hfbench::addInt(app, "--band", options.read.band, 1, 65535, "the band to read");
  app.add_flag_callback("--no-nodata", [&] { options.passNodata = false; },
                        "do not give the DEM's nodata sample to the encoder as its mask candidate");
  app.add_flag_callback("--no-auto-mask", [&] { options.autoMask = false; }, "hfpac's autoMask off");
  app.add_option("--device", device, "cuda adds the GPU codec's figures (CUDA builds)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  app.add_flag("-q,--quiet", quiet, "no progress, no table");
  int status = 0;
  if (!hfcli::parse(app, argc - 1, argv + 1, status)) return status;
  options.cuda = device == "cuda";
#ifndef HF_BENCH_CUDA
  if (options.cuda) return fail("--device cuda: hfbench was built without CUDA (HF_CUDA=OFF)");
#endif

  const hfbench::HostInfo host = hfbench::hostInfo();
  const int threads_used =
      options.threads > 0 ? options.threads : static_cast<int>(std::max(1u, host.threads));
  hfbench::CodecBenchOptions run_options = options;
  run_options.threads = threads_used;

  // The table goes to stdout unless the JSON does.
  std::FILE* console = json_path == "-" ? stderr : stdout;
  if (!quiet && !host.optimized)
    std::fprintf(stderr, "hfbench: warning: not an optimised build (NDEBUG/-O); timings are not representative\n");

  std::vector<hfbench::InputResult> results;
  bool failed = !benchInputs(
      inputs, quiet,
      [&](const std::string& path, const hfbench::LogFn& log) { return hfbench::benchCodecInput(path, run_options, log); },
      [](const std::string& path, const hfbench::InputResult& r) {
        if (!r.ok) {
          std::fprintf(stderr, "Error: %s: %s\n", path.c_str(), r.error.c_str());
          return true;
        }
        if (r.allLossless()) return false;
        std::string which;
        if (!r.hfpac.lossless || !r.hfpac.losslessMt) which += " hfpac";
        if (!r.zstd.lossless) which += " zstd";
        if (!r.lerc.lossless) which += " lerc";
        std::fprintf(stderr, "Error: %s: not lossless:%s (see the report)\n", path.c_str(), which.c_str());
        return true;
      },
      results);

  const std::string json = hfbench::codecJson(host, options, threads_used, results);
  std::string error;
  if (!hfbench::writeReportFile(json_path, json, error)) {
    std::fprintf(stderr, "Error: %s\n", error.c_str());
    failed = true;
  }
  if (!quiet) hfbench::printCodecTable(console, results);
  return failed ? 1 : 0;
}

// hfbench entropy: the entropy-stage design study (entropy_study.h), a table and a JSON report.
int runEntropy(int argc, char** argv) {
  hfbench::EntropyStudyOptions options;
  std::vector<std::string> inputs;
  std::string json_path;
  bool quiet = false;
  CLI::App app{"What an order-0 entropy stage with one model per patch would make of each DEM, for several "
               "predictors, against today's HFPaC streams and zstd-19 (entropy_study.h): a design study for "
               "issue 17, not a codec.",
               "hfbench entropy"};
  hfbench::lastValueWins(app);
  app.add_option("INPUT", inputs, "DEMs (any raster demio reads; .hfr dumps without GDAL)")->required();
  app.add_option("--json", json_path, "the report; - for stdout (the table then goes to stderr)")
      ->check(jsonFileName)
      ->type_name("OUT.json");
  hfbench::addInt(app, "--patch", options.patch, 2, hfpac::kMaxPatchSide, "patch side P");
  hfbench::addInt(app, "--zstd-level", options.zstdLevel, 1, 22, "zstd's level");
  app.add_option("--quant-step", options.read.quantStep, "quantisation step for wider types (default: automatic)")
      ->check(hfbench::finiteNumber(true));
  app.add_flag("-q,--quiet", quiet, "no progress, no table");
  int status = 0;
  if (!hfcli::parse(app, argc - 1, argv + 1, status)) return status;
  std::FILE* console = json_path == "-" ? stderr : stdout;
  std::vector<hfbench::EntropyStudyResult> results;
  bool failed = !benchInputs<hfbench::EntropyStudyResult>(
      inputs, quiet, [&](const std::string& path, auto log) { return hfbench::runEntropyStudy(path, options, log); },
      [](const std::string& path, const hfbench::EntropyStudyResult& r) {
        if (r.ok) return false;
        std::fprintf(stderr, "Error: %s: %s\n", path.c_str(), r.error.c_str());
        return true;
      },
      results);
  if (!json_path.empty()) {
    std::string command = "hfbench entropy";
    for (int i = 2; i < argc; ++i) command += std::string(" ") + argv[i];
    std::string error;
    if (!hfbench::writeReportFile(json_path, hfbench::entropyStudyJson(command, results), error)) {
      std::fprintf(stderr, "Error: %s\n", error.c_str());
      failed = true;
    }
  }
  if (!quiet) {
    std::fprintf(console, "%-22s %7s %7s | %7s %9s %7s %7s %7s %7s | %7s %s\n", "input (raw / bytes)", "hfpac",
                 "zstd", "bezier", "bezier_dx", "dx", "dx_ctx", "med", "best", "best/zs", "patches hfpac/bezier/bezier_dx/dx");
    for (const hfbench::EntropyStudyResult& r : results) {
      if (!r.ok) continue;
      const double raw = double(r.rawBytes);
      std::string name = r.input.substr(r.input.find_last_of('/') + 1);
      std::fprintf(console, "%-22.22s %7.2f %7.2f | %7.2f %9.2f %7.2f %7.2f %7.2f %7.2f | %7.2f %llu/%llu/%llu/%llu\n",
                   name.c_str(), raw / double(r.hfpacBytes), raw / double(r.zstdBytes), raw / r.bezierBytes,
                   raw / r.bezierDxBytes, raw / r.dxBytes, raw / r.dxContextBytes, raw / r.medBytes, raw / r.bestBytes,
                   double(r.zstdBytes) / r.bestBytes, (unsigned long long)r.bestPatches[0],
                   (unsigned long long)r.bestPatches[1], (unsigned long long)r.bestPatches[2],
                   (unsigned long long)r.bestPatches[3]);
    }
  }
  return failed ? 1 : 0;
}

// hfbench dump: read each input with demio (GDAL build) and write DIR/<name>.hfr.
int runDump(int argc, char** argv) {
  std::vector<std::string> inputs;
  std::string dir;
  int window = 0, windowH = 0;
  demio::ReadOptions read;
  CLI::App app{"Reads each input with demio (a GDAL build) and writes DIR/NAME.hfr: the GDAL-free copies that builds "
               "without GDAL (the GPU machine) read.",
               "hfbench dump"};
  hfbench::lastValueWins(app);
  app.add_option("INPUT", inputs, "DEMs")->required();
  app.add_option("-o", dir, "the output folder")->required()->type_name("DIR");
  app.add_option_function<std::string>(
      "--window",
      [&](const std::string& value) {
        // W (a central W x W window) or WxH (a central W wide, H high window).
        std::string v = value;
        const size_t xpos = v.find('x');
        if (xpos != std::string::npos) {
          const std::string hs = v.substr(xpos + 1);
          v = v.substr(0, xpos);
          if (!parseInt(hs, 2, 1 << 20, windowH)) throw CLI::ValidationError("--window", "needs W or WxH, integers >= 2");
        }
        if (!parseInt(v, 2, 1 << 20, window)) throw CLI::ValidationError("--window", "needs W or WxH, integers >= 2");
        if (xpos == std::string::npos) windowH = window;
      },
      "keep the central W x W (W x H) samples of larger rasters")
      ->type_name("W|WxH");
  hfbench::addInt(app, "--band", read.band, 1, 65535, "the band to read");
  app.add_option("--quant-step", read.quantStep, "quantisation step for wider types (default: automatic)")
      ->check(hfbench::finiteNumber(true));
  int status = 0;
  if (!hfcli::parse(app, argc - 1, argv + 1, status)) return status;
  bool failed = false;
  for (const std::string& path : inputs) {
    demio::Dem dem;
    std::string error;
    if (!demio::readDem(path, dem, error, read)) {
      std::fprintf(stderr, "Error: %s: %s\n", path.c_str(), error.c_str());
      failed = true;
      continue;
    }
    if (window > 0 && (dem.width > window || dem.height > windowH)) {
      demio::Dem cut;
      demio::cropDem(dem, std::max(0, (dem.width - window) / 2), std::max(0, (dem.height - windowH) / 2), window,
                     windowH, cut);
      dem = std::move(cut);
    }
    std::string name = path;
    while (!name.empty() && name.back() == '/') name.pop_back();
    const size_t slash = name.find_last_of('/');
    if (slash != std::string::npos) name = name.substr(slash + 1);
    const std::string out = dir + "/" + name + ".hfr";
    if (!demio::writeHfr(out, dem, error)) {
      std::fprintf(stderr, "Error: %s\n", error.c_str());
      failed = true;
      continue;
    }
    std::printf("%s: %dx%d %s -> %s\n", path.c_str(), dem.width, dem.height,
                demio::sampleTypeName(dem.type), out.c_str());
  }
  return failed ? 1 : 0;
}

#if HF_BENCH_IMAGERY
// hfbench imagery: JPEG and BC1 of each image (imagery_bench.h), one JSON report.
int runImagery(int argc, char** argv) {
  hfbench::ImageryBenchOptions options;
  std::vector<std::string> inputs;
  std::string json_path;
  bool quiet = false;
  CLI::App app{"The imagery codec (src/imagery) against TurboJPEG and libsquish (imagery_bench.h): JPEG and BC1 of "
               "each image, and with a CUDA device the GPU codec and nvJPEG (imagery_gpu_bench.h); one JSON "
               "report. Exit status 1 when an image failed.",
               "hfbench imagery"};
  hfbench::lastValueWins(app);
  app.add_option("IMAGE", inputs, "colour images (GDAL rasters; PNG or JPEG without GDAL)")->required();
  app.add_option("--json", json_path, "the report; - for stdout")->required()->check(jsonFileName)->type_name("OUT.json");
  hfbench::addInt(app, "--quality", options.quality, 1, 100, "JPEG quality");
  hfbench::addInt(app, "--threads", options.threads, 0, 1024, "threads of the all-cores figures, 0 = all cores");
  hfbench::addInt(app, "--bc1-window", options.bc1Window, 0, 1 << 20,
                  "side of the central BC1 window (>= 4), 0 = the whole image")
      ->check([](const std::string& v) {
        const long n = std::strtol(v.c_str(), nullptr, 0);  // as CLI11 reads it
        return n > 0 && n < 4 ? std::string("needs 0 (the whole image) or an integer >= 4") : std::string();
      });
  hfbench::addInt(app, "--batch-tiles", options.batchTiles, 1, 1 << 16, "tiles per GPU batch");
  app.add_flag_callback("--no-gpu", [&] { options.gpu = false; }, "no GPU figures");
  app.add_flag("-q,--quiet", quiet, "no progress, no summary");
  int status = 0;
  if (!hfcli::parse(app, argc - 1, argv + 1, status)) return status;

  // The command line as run, for the report (arguments with odd characters single-quoted).
  std::string command;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    const bool plain = !a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                         "0123456789_-+=.,/:@%") == std::string::npos;
    if (i > 0) command += ' ';
    if (plain) {
      command += a;
    } else {
      command += '\'';
      for (char c : a) command += c == '\'' ? std::string("'\\''") : std::string(1, c);
      command += '\'';
    }
  }

  const hfbench::HostInfo host = hfbench::hostInfo();
  const int threads_used =
      options.threads > 0 ? options.threads : static_cast<int>(std::max(1u, host.threads));
  hfbench::ImageryBenchOptions run_options = options;
  run_options.threads = threads_used;
  std::FILE* console = json_path == "-" ? stderr : stdout;
  if (!quiet && !host.optimized)
    std::fprintf(stderr, "hfbench: warning: not an optimised build (NDEBUG/-O); timings are not representative\n");

  std::vector<hfbench::ImageryResult> results;
  bool failed = !benchInputs(
      inputs, quiet,
      [&](const std::string& path, const hfbench::ImageryLogFn& log) {
        return hfbench::benchImageryInput(path, run_options, log);
      },
      [&](const std::string&, const hfbench::ImageryResult& r) {
        if (!r.ok) {
          std::fprintf(stderr, "Error: %s\n", r.error.c_str());  // r.error starts with the path
          return true;
        }
        if (!quiet) hfbench::printImagerySummary(console, r);
        return false;
      },
      results);

  const std::string json = hfbench::imageryJson(host, command, options, threads_used, results);
  std::string error;
  if (!hfbench::writeReportFile(json_path, json, error)) {
    std::fprintf(stderr, "Error: %s\n", error.c_str());
    failed = true;
  }
  return failed ? 1 : 0;
}
#else
int runImagery(int, char**) {
  return fail("this hfbench was built without the imagery codec (src/imagery); hfbench imagery needs it");
}
#endif

#if HF_BENCH_FLYTHROUGH
using hfbench::runFlythroughCommand;
using hfbench::runSoakCommand;
#else
int runFlythroughCommand(int, char**) {
  return fail("this hfbench was built without the OpenGL renderer (HF_GL=OFF); hfbench flythrough needs it");
}
int runSoakCommand(int, char**) {
  return fail("this hfbench was built without the OpenGL renderer (HF_GL=OFF); hfbench soak needs it");
}
#endif

#if HF_BENCH_FFT
using hfbench::runFftCommand;
#else
int runFftCommand(int, char**) {
  return fail("this hfbench was built without the GPU FFT (no CUDA or no FFTW); hfbench fft needs both");
}
#endif

}  // namespace

int main(int argc, char** argv) {
  struct Command {
    const char* name;
    int (*run)(int argc, char** argv);  // argv[1] is the name
    const char* description;
  };
  const Command commands[] = {
      {"codec", runCodec, "INPUT... --json OUT.json: HFPaC against zstd and LERC on DEMs"},
      {"entropy", runEntropy,
       "INPUT... [--json OUT.json]: what an entropy stage would make of each DEM, per predictor (a design study)"},
      {"dump", runDump, "INPUT... -o DIR: GDAL-free .hfr copies of DEMs (for builds without GDAL)"},
      {"imagery", runImagery,
       "IMAGE... --json OUT.json: JPEG and BC1 of the imagery codec against TurboJPEG and libsquish; with a "
       "CUDA device also the GPU codec and nvJPEG"},
      {"flythrough", runFlythroughCommand, "RAW.hfa HFPAC.hfa ...: frame times of every streaming strategy"},
      {"soak", runSoakCommand,
       "ARCHIVE [--minutes M] [--inject-faults SPEC]: the render loop for a long time, faults injected, memory watched"},
      {"fft", runFftCommand, "--json OUT.json: the shared-memory GPU FFT against cuFFT and FFTW"},
  };
  for (const Command& c : commands)
    if (argc > 1 && std::strcmp(argv[1], c.name) == 0) return c.run(argc, argv);
  CLI::App app{"The project's benchmarks (docs/benchmarks.md); hfbench COMMAND --help lists a command's options.",
               "hfbench"};
  for (const Command& c : commands) app.add_subcommand(c.name, c.description);
  if (argc > 1 && std::strcmp(argv[1], "help") == 0) {
    std::fputs(app.help().c_str(), stdout);
    return 0;
  }
  // No command here (the commands were dispatched above): --help, else an error.
  int status = 0;
  return hfcli::parse(app, argc, argv, status) ? fail("no command (hfbench --help)") : status;
}
