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
//
// Exit status 0 when every input was measured and every codec decoded losslessly, else 1.
// Errors are one line starting "Error:" on stderr; a bad input does not stop the others.
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "json.h"
#include "codec_bench.h"
#include "demio/hfr.h"
#include "host.h"
#include "report.h"
#if HF_BENCH_FLYTHROUGH
#include "flythrough_bench.h"
#if HF_BENCH_FFT
#include "fft_bench.h"
#endif
#endif
#if HF_BENCH_IMAGERY
#include "imagery_bench.h"
#endif

namespace {

constexpr const char* kUsage =
    "usage: hfbench codec INPUT... --json OUT.json [--patch 129] [--segment 0|5|9|17|33] "
    "[--bits auto|0..16] [--threads N] [--repeat N] [--zstd-level N] [--quant-step S] "
    "[--band N] [--no-nodata] [--no-auto-mask] [--device cpu|cuda] [-q]\n"
    "       hfbench dump INPUT... -o DIR [--window W|WxH] [--band N] [--quant-step S]  "
    "(GDAL-free .hfr copies; --window W[xH] keeps the central W x W (W x H) samples of larger rasters)\n"
    "       hfbench imagery IMAGE... --json OUT.json [--quality 90] [--threads N] [--bc1-window 1024|0]\n"
    "                 [--batch-tiles 1024] [--no-gpu] [-q]  (JPEG and BC1 of the imagery codec against\n"
    "                 TurboJPEG and libsquish; with a CUDA device also the GPU codec and nvJPEG)\n"
    "       hfbench flythrough RAW.hfa HFPAC.hfa [--rbuc RBUC.hfa] [--out DIR] ...  (frame times of "
    "every streaming strategy; hfbench flythrough --help)\n"
    "       hfbench fft --json OUT.json [--repeat N] [--threads N] [--quick]  (the shared-memory GPU FFT against\n"
    "                 cuFFT and FFTW; hfbench fft --help)";

int usageError(const std::string& message) {
  std::fprintf(stderr, "Error: %s; %s\n", message.c_str(), kUsage);
  return 1;
}

bool parseInt(std::string_view text, int lo, int hi, int& value) {
  int v = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size() || v < lo || v > hi) return false;
  value = v;
  return true;
}

bool parseDouble(const std::string& text, double& value) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(v > 0) || v == HUGE_VAL) return false;
  value = v;
  return true;
}

// One command-line argument: "--name=value" is split; value() takes the inline value or the
// next argument (advancing i). Shared by the subcommands' option loops.
struct OptionArg {
  std::string name, inlineValue;
  bool hasInline = false;
  explicit OptionArg(const char* a) : name(a) {
    const size_t eq = name.find('=');
    if (name.size() > 2 && name.compare(0, 2, "--") == 0 && eq != std::string::npos) {
      inlineValue = name.substr(eq + 1);
      name.resize(eq);
      hasInline = true;
    }
  }
  bool value(int& i, int argc, char** argv, std::string& out) const {
    if (hasInline) {
      out = inlineValue;
      return true;
    }
    if (i + 1 >= argc) return false;
    out = argv[++i];
    return true;
  }
};

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
  bool quiet = false;

  for (int i = 2; i < argc; ++i) {
    const OptionArg opt(argv[i]);
    const std::string& arg = opt.name;
    std::string value;
    auto needValue = [&](std::string& out) { return opt.value(i, argc, argv, out); };
    if (arg == "-q" || arg == "--quiet") {
      quiet = true;
    } else if (arg == "--help" || arg == "-h") {
      return usageError("help requested");
    } else if (arg == "--no-nodata") {
      options.passNodata = false;
    } else if (arg == "--device") {
      if (!needValue(value) || (value != "cpu" && value != "cuda"))
        return usageError("--device needs cpu or cuda");
      options.cuda = value == "cuda";
#ifndef HF_BENCH_CUDA
      if (options.cuda) return usageError("--device cuda: hfbench was built without CUDA (HF_CUDA=OFF)");
#endif
    } else if (arg == "--no-auto-mask") {
      options.autoMask = false;
    } else if (arg == "--json") {
      if (!needValue(json_path) || json_path.empty() || (json_path[0] == '-' && json_path != "-"))
        return usageError("--json needs a file name");
    } else if (arg == "--patch") {
      if (!needValue(value) || !parseInt(value, 2, hfpac::kMaxPatchSide, options.patch))
        return usageError("--patch needs an integer in 2.." + std::to_string(hfpac::kMaxPatchSide));
    } else if (arg == "--segment") {
      if (!needValue(value) || !parseInt(value, 0, 33, options.segment) ||
          (options.segment != 0 && options.segment != 5 && options.segment != 9 &&
           options.segment != 17 && options.segment != 33))
        return usageError("--segment needs 0 (try all), 5, 9, 17 or 33");
    } else if (arg == "--bits") {
      if (!needValue(value)) return usageError("--bits needs auto or 0..16");
      if (value == "auto") {
        options.bits = -1;
      } else if (!parseInt(value, 0, hfpac::kMaxBits, options.bits)) {
        return usageError("--bits needs auto or 0..16");
      }
    } else if (arg == "--threads") {
      if (!needValue(value) || !parseInt(value, 0, 1024, options.threads))
        return usageError("--threads needs an integer in 0..1024 (0 = all cores)");
    } else if (arg == "--repeat") {
      if (!needValue(value) || !parseInt(value, 1, 1000, options.repeat))
        return usageError("--repeat needs an integer in 1..1000");
    } else if (arg == "--zstd-level") {
      if (!needValue(value) || !parseInt(value, 1, 22, options.zstdLevel))
        return usageError("--zstd-level needs an integer in 1..22");
    } else if (arg == "--quant-step") {
      if (!needValue(value) || !parseDouble(value, options.read.quantStep))
        return usageError("--quant-step needs a positive number");
    } else if (arg == "--band") {
      if (!needValue(value) || !parseInt(value, 1, 65535, options.read.band))
        return usageError("--band needs a positive integer");
    } else if (arg.size() > 1 && arg[0] == '-') {
      return usageError("unknown option '" + arg + "'");
    } else {
      inputs.push_back(arg);
    }
  }
  if (inputs.empty()) return usageError("no input files");
  if (json_path.empty()) return usageError("--json OUT.json is required");

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

// hfbench dump: read each input with demio (GDAL build) and write DIR/<name>.hfr.
int runDump(int argc, char** argv) {
  std::vector<std::string> inputs;
  std::string dir;
  int window = 0, windowH = 0;
  demio::ReadOptions read;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    std::string value;
    if (arg == "-o" && i + 1 < argc) {
      dir = argv[++i];
    } else if (arg == "--window" && i + 1 < argc) {
      // W (a central W x W window) or WxH (a central W wide, H high window).
      std::string v = argv[++i];
      const size_t xpos = v.find('x');
      if (xpos != std::string::npos) {
        const std::string hs = v.substr(xpos + 1);
        v = v.substr(0, xpos);
        if (!parseInt(hs.c_str(), 2, 1 << 20, windowH)) return usageError("--window needs W or WxH, integers >= 2");
      }
      if (!parseInt(v.c_str(), 2, 1 << 20, window)) return usageError("--window needs W or WxH, integers >= 2");
      if (xpos == std::string::npos) windowH = window;
    } else if (arg == "--band" && i + 1 < argc) {
      if (!parseInt(argv[++i], 1, 65535, read.band)) return usageError("--band needs a positive integer");
    } else if (arg == "--quant-step" && i + 1 < argc) {
      if (!parseDouble(argv[++i], read.quantStep)) return usageError("--quant-step needs a positive number");
    } else if (arg.size() > 1 && arg[0] == '-') {
      return usageError("unknown option '" + arg + "'");
    } else {
      inputs.push_back(arg);
    }
  }
  if (inputs.empty() || dir.empty()) return usageError("dump needs INPUT... -o DIR");
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
  for (int i = 2; i < argc; ++i) {
    const OptionArg opt(argv[i]);
    const std::string& arg = opt.name;
    std::string value;
    auto needValue = [&](std::string& out) { return opt.value(i, argc, argv, out); };
    if (arg == "-q" || arg == "--quiet") {
      quiet = true;
    } else if (arg == "--help" || arg == "-h") {
      return usageError("help requested");
    } else if (arg == "--json") {
      if (!needValue(json_path) || json_path.empty() || (json_path[0] == '-' && json_path != "-"))
        return usageError("--json needs a file name");
    } else if (arg == "--quality") {
      if (!needValue(value) || !parseInt(value, 1, 100, options.quality))
        return usageError("--quality needs an integer in 1..100");
    } else if (arg == "--threads") {
      if (!needValue(value) || !parseInt(value, 0, 1024, options.threads))
        return usageError("--threads needs an integer in 0..1024 (0 = all cores)");
    } else if (arg == "--batch-tiles") {
      if (!needValue(value) || !parseInt(value, 1, 1 << 16, options.batchTiles))
        return usageError("--batch-tiles needs an integer in 1..65536");
    } else if (arg == "--no-gpu") {
      options.gpu = false;
    } else if (arg == "--bc1-window") {
      if (!needValue(value) || !parseInt(value, 0, 1 << 20, options.bc1Window) ||
          (options.bc1Window > 0 && options.bc1Window < 4))
        return usageError("--bc1-window needs 0 (the whole image) or an integer >= 4");
    } else if (arg.size() > 1 && arg[0] == '-') {
      return usageError("unknown option '" + arg + "'");
    } else {
      inputs.push_back(arg);
    }
  }
  if (inputs.empty()) return usageError("no input images");
  if (json_path.empty()) return usageError("--json OUT.json is required");

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
#endif

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usageError("no command");
  const std::string command = argv[1];
  if (command == "codec") return runCodec(argc, argv);
  if (command == "dump") return runDump(argc, argv);
  if (command == "imagery") {
#if HF_BENCH_IMAGERY
    return runImagery(argc, argv);
#else
    std::fprintf(stderr, "Error: this hfbench was built without the imagery codec (src/imagery); "
                         "hfbench imagery needs it\n");
    return 1;
#endif
  }
  if (command == "--help" || command == "-h" || command == "help") return usageError("help requested");
  if (command == "flythrough") {
#if HF_BENCH_FLYTHROUGH
    return hfbench::runFlythroughCommand(argc, argv);
#else
    std::fprintf(stderr, "Error: this hfbench was built without the OpenGL renderer (HF_GL=OFF); "
                         "hfbench flythrough needs it\n");
    return 1;
#endif
  }
  if (command == "fft") {
#if HF_BENCH_FFT
    return hfbench::runFftCommand(argc, argv);
#else
    std::fprintf(stderr, "Error: this hfbench was built without the GPU FFT (no CUDA or no FFTW); "
                         "hfbench fft needs both\n");
    return 1;
#endif
  }
  return usageError("unknown command '" + command + "'");
}
