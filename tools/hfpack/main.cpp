// main.cpp - the hfpack command line (a thin wrapper around hfpack.h), parsed with CLI11
// (tools/cli/cli.h; `hfpack --help` lists every option).
//
//   hfpack INPUT... -o OUT.hfa [--patch 129] [--segment 9] [--bits auto|N]
//          [--codec hfpac|hfpac+rbuc|hfan|auto|raw] [--levels N] [--vertical-scale M] [--vertical-offset O]
//          [--spacing X[,Y]] [-a_srs SRS] [-a_ullr ULX ULY LRX LRY] [--nodata fill|keep]
//          [--threads N] [--device cpu|cuda] [--gpu-batch N] [--band B] [--t_srs SRS]
//          [--imagery RASTER... [--imagery-quality 90] [--imagery-codec jpeg|raw|bc1]
//           [--imagery-bc1 quality|fast]
//           [--imagery-resampling bilinear|cubic|lanczos|average] [--imagery-max-texels-per-sample 8]]
//          [--config KEY VALUE] [-q]
//          [--shard I/N]   (one part of a sharded pack: docs/sharded-packing.md)
//   hfpack merge PART... -o OUT.hfa [--threads N] [-q]
//   hfpack info ARCHIVE
//   hfpack verify ARCHIVE [--source INPUT...] [--threads N] [--config KEY VALUE] [-q]
//   hfpack transcode IN.hfa OUT.hfa --codec hfpac|hfpac+rbuc|hfan|auto|raw [--segment 9] [--bits auto|N]
//          [--threads N] [--device cpu|cuda] [--gpu-batch N] [--verify] [-q]
//          [--imagery-codec jpeg|raw|bc1 [--imagery-quality Q] [--imagery-bc1 quality|fast]]
//   hfpack transcode IN.hfa OUT.hfa --imagery-codec jpeg|raw|bc1 ...   (the heights copied as they are)
//
// Errors: one line starting "Error:", exit status 1, no output file left behind.
// --device cuda that cannot be honoured (no GPU codec in this build, no device, codec
// hfpac+rbuc, hfan or raw) is not an error: a "Note:" line says so and the CPU encodes. With
// --imagery, --device cuda also codes the JPEG imagery tiles on the GPU (same fallback).
// Built without GDAL (HF_WITH_GDAL=OFF, for the GPU machine) the only input is one .hfr dump
// (`hfbench dump`); --t_srs and --config are then refused.
#ifdef HFPACK_GDAL
#include <cpl_conv.h>
#include <gdal.h>
#endif

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "cli.h"
#include "hfpack.h"

namespace {

std::atomic<bool> g_interrupted{false};
void onSignal(int) { g_interrupted = true; }

const char* kDescription =
    "Packs DEMs into tile archives (.hfa); shows, verifies and transcodes archives.\n"
    "  hfpack INPUT... -o OUT.hfa [OPTIONS]\n"
    "  hfpack INPUT... -o PART --shard I/N [OPTIONS]   (part I of N of a sharded pack)\n"
    "  hfpack merge PART... -o OUT.hfa [--threads N] [-q]\n"
    "  hfpack info ARCHIVE\n"
    "  hfpack verify ARCHIVE [--source INPUT... [-a_srs SRS] [-a_ullr ...] [--t_srs SRS]]\n"
    "         [--imagery RASTER... [--imagery-resampling R]] [--threads N] [-q]\n"
    "  hfpack transcode IN.hfa OUT.hfa --codec hfpac|hfpac+rbuc|hfan|auto|raw [--segment 9]\n"
    "         [--bits auto|N] [--threads N] [--device cpu|cuda] [--gpu-batch N] [--verify] [-q]\n"
    "         [--imagery-codec jpeg|raw|bc1 [--imagery-quality Q] [--imagery-bc1 quality|fast]]\n"
    "  hfpack transcode IN.hfa OUT.hfa --imagery-codec jpeg|raw|bc1 [--imagery-quality Q]\n"
    "         [--imagery-bc1 quality|fast] [--threads N] [--verify] [-q]   (heights copied)\n";

const char* kFooter =
    "  Heights are stored as height = offset + scale x sample. Integer sources keep their samples\n"
    "  (lossless): --vertical-scale M multiplies the source values (0.1 for decimetres) and\n"
    "  --vertical-offset O is added (metadata only). Float/wide sources are quantised: M is the\n"
    "  quantisation step (default: the finest that fits), O shifts the heights.\n"
    "  --spacing X[,Y]: metres per sample of a raster without georeferencing. -a_srs / -a_ullr\n"
    "  assign a CRS / bounds (pixel-is-area corners) as gdal_translate does, before --t_srs.\n"
    "\n"
    "  --imagery drapes colour rasters (Byte: grey, palette, RGB or RGBA; several make a mosaic)\n"
    "  on the terrain: warped onto the height tiles with GDAL (another CRS, resolution or extent\n"
    "  is fine), JPEG-coded tiles (raw: RGBA8; bc1: the tile's BC1 mip chain, uploaded as stored,\n"
    "  cluster fit unless --imagery-bc1 fast), extra imagery-only levels where the imagery is\n"
    "  finer than the DEM (up to --imagery-max-texels-per-sample texels per sample). Imagery\n"
    "  without georeferencing is stretched over the DEM's extent (with a warning). The list of\n"
    "  rasters ends at the next option. verify --imagery compares every imagery tile with the\n"
    "  warped rasters (PSNR); verify always checks the imagery tiles' checksums and decoding.\n"
    "\n"
    "  Codecs: hfpac (layered, progressive, O(1) random access; the default), hfpac+rbuc\n"
    "  (2DRBUC residuals), hfan (entropy-coded differences, lossless only), auto (each tile hfpac\n"
    "  or hfan, whichever is smaller: the smallest archive), raw (uncompressed samples).\n"
    "\n"
    "  transcode re-encodes every tile of IN.hfa with another codec and keeps everything else\n"
    "  (levels, tiles, georeferencing, nodata, vertical scale, per-tile min/max and LOD errors).\n"
    "  Decoding is exact for every codec, so any archive transcodes losslessly; --verify then\n"
    "  decodes both archives and compares every tile. --imagery-codec re-codes the imagery from its\n"
    "  decoded tiles (a bc1 tile decodes from its level 0; jpeg keeps the input's quality unless\n"
    "  --imagery-quality); without it the imagery is copied as it is. Without --codec the height\n"
    "  tiles are copied as they are (e.g. a bc1 twin: transcode IN OUT --imagery-codec bc1).\n"
    "\n"
    "  Sharded packing (docs/sharded-packing.md): hfpack INPUT... -o PART --shard I/N packs\n"
    "  part I (1..N) of the quadtree, subtrees balanced by sample count; hfpack merge PART...\n"
    "  -o OUT.hfa adds the coarse levels and writes the archive a single hfpack with the same\n"
    "  inputs and options writes, byte for byte (tools/slurm/hfpack-sharded.sh: a Slurm job array).\n";

// The options only pack takes: transcode refuses them (it keeps the archive's tiling, heights).
const char* const kPackOnly[] = {"--patch", "--levels", "--max-size", "--progress-lines", "--vertical-scale", "--vertical-offset", "--spacing",
                                 "--a_srs", "--a_ullr", "--nodata", "--band", "--t_srs", "--imagery",
                                 "--imagery-resampling", "--imagery-max-texels-per-sample"};

int fail(const std::string& msg) {
  fprintf(stderr, "Error: %s\n", msg.c_str());
  return 1;
}

constexpr int kIntLimit = 1000000000;  // integers given on the command line: within +-1e9

bool parseInt(const char* s, int& v) {
  char* end = nullptr;
  errno = 0;
  const long x = std::strtol(s, &end, 10);
  if (!*s || *end || errno || x < -kIntLimit || x > kIntLimit) return false;
  v = int(x);
  return true;
}

bool parseDouble(const char* s, double& v) {
  char* end = nullptr;
  v = std::strtod(s, &end);
  return *s && !*end;
}

// --spacing X[,Y]: positive, finite metres per sample (Y = X when not given).
bool parseSpacing(const std::string& v, double& x, double& y) {
  const size_t comma = v.find(',');
  const std::string xs = v.substr(0, comma), ys = comma == std::string::npos ? xs : v.substr(comma + 1);
  return parseDouble(xs.c_str(), x) && parseDouble(ys.c_str(), y) && x > 0 && y > 0 && std::isfinite(x) &&
         std::isfinite(y);
}

// Numbers read as before CLI11: base-10 integers within +-1e9 (CLI11 alone reads 010 as octal 8
// and takes 0x10), rewritten in plain form for CLI11's conversion; finite doubles.
const CLI::Validator kInt(
    [](std::string& v) {
      int x = 0;
      if (!parseInt(v.c_str(), x)) return "not an integer: " + v;
      v = std::to_string(x);
      return std::string();
    },
    "");
const CLI::Validator kNumber(
    [](std::string& v) {
      double x = 0;
      return parseDouble(v.c_str(), x) && std::isfinite(x) ? std::string() : "not a number: " + v;
    },
    "");

// A number (checked by kInt / kNumber before) for which `ok` holds, else "VALUE: must be WHAT".
CLI::Validator mustBe(const std::string& what, bool (*ok)(double)) {
  return CLI::Validator(
      [what, ok](std::string& v) { return ok(std::strtod(v.c_str(), nullptr)) ? std::string() : v + ": must be " + what; },
      "");
}

// "auto" (read as `autoValue`) or a base-10 integer in lo..hi (unbounded: left to hfpack.h).
CLI::Validator autoOr(int autoValue, int lo = -kIntLimit, int hi = kIntLimit) {
  const std::string what =
      hi == kIntLimit ? "auto or an integer" : "auto or " + std::to_string(lo) + ".." + std::to_string(hi);
  return CLI::Validator(
      [=](std::string& v) {
        int x = autoValue;
        if (v != "auto" && (!parseInt(v.c_str(), x) || x < lo || x > hi)) return v + ": must be " + what;
        v = std::to_string(x);
        return std::string();
      },
      "");
}

// CLI11 takes single-dash names of one letter only: gdal_translate's spellings -a_srs and
// -a_ullr become --a_srs and --a_ullr (accepted as well); `skip` drops a command word after
// argv[0]. Everything else goes to CLI11 as it is.
std::vector<std::string> cliArgs(int argc, char** argv, int skip) {
  std::vector<std::string> args{argv[0]};
  for (int i = 1 + skip; i < argc; ++i) {
    const std::string a = argv[i];
    args.push_back(a == "-a_srs" || a == "-a_ullr" ? "-" + a : a);
  }
  return args;
}

hfpack::Progress makeProgress(bool quiet, bool lines = false) {
  // --progress-lines: one "progress F" line per 0.5 % on stdout, for a program that runs
  // hfpack (hfview's background pack) rather than a terminal.
  if (lines)
    return [last = -1.0](double f, const char*) mutable {
      if (f >= last + 0.005 || f >= 1.0) {
        std::printf("progress %.4f\n", std::min(1.0, std::max(0.0, f)));
        std::fflush(stdout);
        last = f;
      }
      return !g_interrupted.load();
    };
  if (quiet)
    return [](double, const char*) { return !g_interrupted.load(); };
#ifdef HFPACK_GDAL
  return [](double f, const char*) {
    GDALTermProgress(f, nullptr, nullptr);
    return !g_interrupted.load();
  };
#else
  // GDALTermProgress's look ("0...10...20...", "100 - done."), without GDAL.
  return [last = -1](double f, const char*) mutable {
    const int step = int(std::min(1.0, std::max(0.0, f)) * 40.0 + 1e-9);  // 2.5 % steps
    for (int s = last + 1; s <= step; ++s) {
      if (s % 4 == 0) fprintf(stdout, "%d", s * 10 / 4);
      else fputc('.', stdout);
      if (s == 40) fputs(" - done.\n", stdout);
    }
    if (step > last) fflush(stdout);
    last = std::max(last, step);
    return !g_interrupted.load();
  };
#endif
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGINT, onSignal);
  std::signal(SIGTERM, onSignal);
#ifdef SIGXFSZ
  std::signal(SIGXFSZ, SIG_IGN);  // a file size limit becomes a write error (EFBIG), not a kill
#endif
  // Bounded memory: GDAL's block cache defaults to 5 % of RAM; 16 MiB is plenty for the row
  // bands hfpack reads (--config GDAL_CACHEMAX N or the environment override it).
#ifdef HFPACK_GDAL
  if (!CPLGetConfigOption("GDAL_CACHEMAX", nullptr)) CPLSetConfigOption("GDAL_CACHEMAX", "16");
#endif
  if (argc < 2) return fail("no input (hfpack --help for the usage)");
  std::string cmd = argv[1];
  if (cmd != "info" && cmd != "verify" && cmd != "transcode" && cmd != "merge") cmd = "pack";
  hfpack::PackOptions po;
  hfpack::VerifyOptions vo;
  hfpack::TranscodeOptions to;
  std::vector<std::string> positional;
  std::string codec = "hfpac", nodata = "fill", spacing, imageryCodec = "jpeg", bc1 = "quality";
  std::array<double, 4> ullr{};
  std::vector<std::pair<std::string, std::string>> config;
  bool quiet = false;

  CLI::App app{kDescription, "hfpack"};
  app.footer(kFooter);
  app.get_formatter()->column_width(44);
  app.allow_extras();  // unknown options: "unknown option X" below, as before
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)->always_capture_default();
  app.add_option("INPUT", positional, "pack: the input rasters (a mosaic); info, verify: the archive; "
                                      "transcode: IN.hfa OUT.hfa")
      ->default_str("");
  app.add_option("-o", po.output, "the archive to write (transcode: OUT.hfa)")->type_name("OUT.hfa");
  app.add_flag("-q,--quiet", quiet, "no progress bar");
  bool progressLines = false;
  app.add_flag("--progress-lines", progressLines,
               "pack: progress as \"progress F\" lines on stdout and a last line \"result downsampled|full\" "
               "(for programs that run hfpack), no summary");
  app.add_option("--threads", po.threads, "worker threads (0: all cores)")->transform(kInt)->check(
      mustBe(">= 0", [](double v) { return v >= 0; }));
  app.add_option("--config", config, "a GDAL configuration option (repeatable)")->type_name("KEY VALUE")
      ->allow_extra_args(false)->default_str("");

  const char* g = "Pack";
  app.add_option("--patch", po.patch, "tile size in samples: 2^n + 1 (3..4097)")->transform(kInt)->group(g);
  app.add_option("--levels", po.levels, "pyramid levels (0: until one tile covers everything)")->transform(kInt)
      ->check(mustBe("at least 1", [](double v) { return v >= 1; }))->group(g);
  app.add_option("--vertical-scale", po.verticalScale, "M: metres per source unit, or the quantisation step (0: "
                                                       "1, or the finest that fits); see below")
      ->type_name("M")->check(kNumber)->check(mustBe("a positive number", [](double v) { return v > 0; }))->group(g);
  app.add_option("--vertical-offset", po.verticalOffset, "O: metres added to every height")->type_name("O")
      ->check(kNumber)->group(g);
  app.add_option("--spacing", spacing, "metres per sample of a raster without georeferencing")->type_name("X[,Y]")
      ->check([](const std::string& v) {
        double x = 0, y = 0;
        return parseSpacing(v, x, y) ? std::string() : v + ": must be X or X,Y, positive numbers of metres per sample";
      })->group(g);
  app.add_option("--nodata", nodata, "voids filled (push-pull) or kept as nodata samples")
      ->check(CLI::IsMember({"fill", "keep"}))->group(g);

  g = "Sources (pack, verify --source)";
  app.add_option("--a_srs", po.aSrs, "assign a CRS as gdal_translate -a_srs (either spelling)")->type_name("SRS")
      ->group(g);
  app.add_option("--a_ullr", ullr, "assign pixel-is-area bounds as gdal_translate -a_ullr (either spelling)")
      ->type_name("ULX ULY LRX LRY")->default_str("")->check(kNumber)->group(g);
  app.add_option("--t_srs", po.tSrs, "reproject to this CRS (GDAL's warper)")->type_name("SRS")->group(g);
  app.add_option("--band", po.band, "the input band")->transform(kInt)->group(g);
  app.add_option("--max-size", po.maxSide,
                 "read the input downsampled (averages) so its longer side has at most N samples: a quick "
                 "preview (0: as it is)")
      ->type_name("N")->transform(kInt)->check(CLI::Range(0, 1 << 24))->group(g);

  g = "Height coding (pack, transcode)";
  app.add_option("--codec", codec, "the height tiles' codec")->check(CLI::IsMember({"hfpac", "hfpac+rbuc", "hfan", "auto", "raw"}))
      ->group(g);
  app.add_option("--segment", po.segment, "HFPaC segment size: 5, 9, 17, 33 or auto (0: try all)")
      ->type_name("auto|N")->transform(autoOr(0))->group(g);
  app.add_option("--bits", po.bits, "HFPaC residual bits per patch, or auto (chosen per 16 x 16 area)")
      ->type_name("auto|N")->default_str("auto")->transform(autoOr(-1, 0, 16))->group(g);
  app.add_option("--device", po.device, "where the tiles are encoded (cuda: the GPU codec, else a note and the CPU)")
      ->check(CLI::IsMember({"cpu", "cuda"}))->group(g);
  app.add_option("--gpu-batch", po.gpuBatch, "tiles per GPU encode call")->transform(kInt)
      ->check(mustBe("at least 1", [](double v) { return v >= 1; }))->group(g);

  g = "Imagery";
  app.add_option("--imagery", po.imagery.inputs, "pack: colour rasters to drape (a mosaic; the list ends at the next "
                                       "option); verify: compare the imagery tiles with them")
      ->type_name("RASTER")->default_str("")->expected(0, -1)->group(g);
  app.add_option("--imagery-codec", imageryCodec, "the imagery tiles' codec (transcode: re-code the imagery)")
      ->check(CLI::IsMember({"jpeg", "raw", "bc1"}))->group(g);
  app.add_option("--imagery-quality", po.imagery.quality, "JPEG quality (transcode: the input's unless given)")
      ->transform(kInt)->check(CLI::Range(1, 100, "1..100"))->group(g);
  app.add_option("--imagery-bc1", bc1, "BC1 encoder: cluster fit or one pass")
      ->check(CLI::IsMember({"quality", "fast"}))->group(g);
  app.add_option("--imagery-resampling", po.imagery.resampling, "how the rasters are warped (pack, verify)")
      ->check(CLI::IsMember({"bilinear", "cubic", "lanczos", "average"}))->group(g);
  app.add_option("--imagery-max-texels-per-sample", po.imagery.maxTexelsPerSample,
                 "caps the imagery-only levels finer than the DEM")
      ->check(kNumber)->check(mustBe("a number >= 1", [](double v) { return v >= 1; }))->group(g);

  g = "verify, transcode";
  app.add_option("--source", vo.sources, "verify: compare the archive's samples with these inputs (with the "
                                         "pack's -a_srs, -a_ullr, --t_srs, --band)")
      ->type_name("INPUT")->default_str("")->expected(0, -1)->group(g);
  app.add_flag("--verify", to.verify, "transcode: then decode both archives and compare every tile")->group(g);

  g = "Sharded packing";
  std::string shard;
  app.add_option("--shard", shard, "pack part I of N (I in 1..N) of a sharded pack into -o PART; "
                                   "hfpack merge PART... -o OUT.hfa assembles the archive")
      ->type_name("I/N")->group(g);

  std::vector<std::string> args = cliArgs(argc, argv, cmd == "pack" ? 0 : 1);
  std::vector<char*> args_c;
  for (std::string& a : args) args_c.push_back(a.data());
  int status = 0;
  if (!hfcli::parse(app, int(args_c.size()), args_c.data(), status)) return status;
  if (!app.remaining().empty()) return fail("unknown option " + app.remaining()[0]);
  if (cmd != "transcode" && app.count("--verify"))
    return fail("--verify is an option of hfpack transcode (see also hfpack verify)");
  if (cmd != "verify" && app.count("--source")) return fail("--source is an option of hfpack verify");
  for (std::vector<std::string>* v : {&po.imagery.inputs, &vo.sources})  // `--imagery -q`: an empty name
    v->erase(std::remove(v->begin(), v->end(), std::string()), v->end());
#ifdef HFPACK_GDAL
  bool cache_given = false;  // --config GDAL_CACHEMAX
  for (const auto& kv : config) {
    CPLSetConfigOption(kv.first.c_str(), kv.second.c_str());
    cache_given |= kv.first == "GDAL_CACHEMAX";
  }
#else
  if (!config.empty()) return fail("--config: this hfpack is built without GDAL (HF_WITH_GDAL=OFF)");
#endif
  hfa::parseCodec(codec, po.codec);
  hfa::parseImageryCodec(imageryCodec, po.imagery.codec);
  po.fillNodata = nodata == "fill";
  po.imagery.bc1 = bc1 == "fast" ? himg::Bc1Mode::Fast : himg::Bc1Mode::Quality;
  if (app.count("--spacing")) parseSpacing(spacing, po.spacingX, po.spacingY);
  po.aUllr = app.count("--a_ullr") > 0;
  std::copy(ullr.begin(), ullr.end(), po.ullr);
  vo.aSrs = po.aSrs;
  vo.aUllr = po.aUllr;
  std::copy(ullr.begin(), ullr.end(), vo.ullr);
  vo.tSrs = po.tSrs;
  vo.band = po.band;
  vo.threads = po.threads;
  vo.imagery.inputs = po.imagery.inputs;
  vo.imagery.resampling = po.imagery.resampling;

#ifdef HFPACK_GDAL
  // Imagery warps read the colour rasters tile by tile, in any order; a JPEG or PNG source is
  // decoded from its start for every window GDAL does not hold, so its lines must stay cached:
  // 512 MiB (still bounded) unless the user chose.
  if (!po.imagery.inputs.empty() && !std::getenv("GDAL_CACHEMAX") && !cache_given)
    CPLSetConfigOption("GDAL_CACHEMAX", "512");
#endif
  std::string error;
  if (cmd != "pack" && app.count("--shard")) return fail("--shard is an option of packing (hfpack INPUT... -o PART --shard I/N)");
  if (cmd == "merge") {
    // The parts carry the pack's options: only where and how to write.
    for (const CLI::Option* o : app.parse_order()) {
      const std::string name = o->get_name();
      if (name != "INPUT" && name != "-o" && name != "--threads" && name != "--quiet" && name != "--config")
        return fail((name == "--a_srs" || name == "--a_ullr" ? name.substr(1) : name) +
                    " is not an option of hfpack merge (the parts carry the pack's options)");
    }
    hfpack::MergeOptions mo;
    mo.parts = positional;
    mo.output = po.output;
    mo.threads = po.threads;
    mo.progress = makeProgress(quiet);
    if (mo.parts.empty()) return fail("hfpack merge takes the parts (hfpack merge PART... -o OUT.hfa)");
    if (mo.output.empty()) return fail("no output file (-o OUT.hfa)");
    hfpack::MergeResult mr;
    if (!hfpack::merge(mo, mr, error)) return fail(error);
    return 0;
  }
  if (app.count("--shard")) {
    // I/N: base-10 integers, 1 <= I <= N (as Slurm's --array=1-N numbers its tasks).
    const size_t slash = shard.find('/');
    int i = 0, n = 0;
    if (slash == std::string::npos || !parseInt(shard.substr(0, slash).c_str(), i) ||
        !parseInt(shard.substr(slash + 1).c_str(), n))
      return fail("--shard " + shard + ": must be I/N (part I of N, I in 1..N)");
    if (n < 1 || n > 65536) return fail("--shard " + shard + ": N must be 1..65536");
    if (i < 1 || i > n)
      return fail("--shard " + shard + ": I must be 1.." + std::to_string(n) + " (parts count from 1, as --array=1-N)");
    if (!po.imagery.inputs.empty())
      return fail("--imagery cannot be packed sharded (--shard): pack an archive with imagery on one machine");
    po.shard = i;
    po.shards = n;
  }
  if (cmd == "info") {
    if (positional.size() != 1) return fail("hfpack info takes one archive");
    if (!hfpack::info(positional[0], stdout, error)) return fail(positional[0] + ": " + error);
    return 0;
  }
  if (cmd == "verify") {
    if (positional.size() != 1) return fail("hfpack verify takes one archive (and --source INPUT...)");
    vo.archive = positional[0];
    vo.progress = makeProgress(quiet);
    hfpack::VerifyResult vr;
    if (!hfpack::verify(vo, vr, error)) return fail(vo.archive + ": " + error);
    if (!hfpack::ok(vr)) return fail(vo.archive + ": verification failed");
    return 0;
  }
  if (cmd == "transcode") {
    std::string imagery_coding;  // --imagery-quality / --imagery-bc1, the first one given
    for (const CLI::Option* o : app.parse_order()) {
      const std::string name = o->get_name();
      if (std::find(std::begin(kPackOnly), std::end(kPackOnly), name) != std::end(kPackOnly))
        return fail((name == "--a_srs" || name == "--a_ullr" ? name.substr(1) : name) +  // as typed
                    " is not an option of hfpack transcode (it keeps the archive's tiling and heights)");
      if (imagery_coding.empty() && (name == "--imagery-quality" || name == "--imagery-bc1")) imagery_coding = name;
    }
    const bool codec_given = app.count("--codec") > 0, imagery_codec_given = app.count("--imagery-codec") > 0;
    if (!po.output.empty()) positional.push_back(po.output);  // -o OUT works too
    if (positional.size() != 2) return fail("hfpack transcode takes IN.hfa OUT.hfa (and --codec and/or --imagery-codec)");
    if (!codec_given && !imagery_codec_given)
      return fail("hfpack transcode needs --codec hfpac, hfpac+rbuc, hfan, auto or raw (heights), --imagery-codec jpeg, raw or bc1 (imagery), or both");
    if (!imagery_codec_given && !imagery_coding.empty())
      return fail(imagery_coding + " needs --imagery-codec in hfpack transcode (without it the imagery is copied as it is)");
    to.input = positional[0];
    to.output = positional[1];
    to.recodeHeights = codec_given;
    to.recodeImagery = imagery_codec_given;
    to.imageryCodec = po.imagery.codec;
    to.imageryQuality = app.count("--imagery-quality") ? po.imagery.quality : 0;
    to.imageryBc1 = po.imagery.bc1;
    to.codec = po.codec;
    to.segment = po.segment;
    to.bits = po.bits;
    to.threads = po.threads;
    to.device = po.device;
    to.gpuBatch = po.gpuBatch;
    to.progress = makeProgress(quiet);
    to.out = stdout;
    hfpack::TranscodeResult tr;
    if (!hfpack::transcode(to, tr, error)) return fail(error);
    return 0;
  }
  po.inputs = positional;
  if (po.inputs.empty()) return fail("no input raster");
  po.progress = makeProgress(quiet, progressLines);
  po.out = progressLines ? nullptr : stdout;
  hfpack::PackResult pr;
  if (!hfpack::pack(po, pr, error)) return fail(error);
  if (progressLines) std::printf("result %s\n", pr.downsampled ? "downsampled" : "full");
  return 0;
}
