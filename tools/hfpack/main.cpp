// main.cpp - the hfpack command line (a thin wrapper around hfpack.h).
//
//   hfpack INPUT... -o OUT.hfa [--patch 129] [--segment 9] [--bits auto|N]
//          [--codec hfpac|hfpac+rbuc|raw] [--levels N] [--vertical-scale M] [--vertical-offset O]
//          [--spacing X[,Y]] [-a_srs SRS] [-a_ullr ULX ULY LRX LRY] [--nodata fill|keep]
//          [--threads N] [--device cpu|cuda] [--gpu-batch N] [--band B] [--t_srs SRS]
//          [--imagery RASTER... [--imagery-quality 90] [--imagery-codec jpeg|raw|bc1]
//           [--imagery-bc1 quality|fast]
//           [--imagery-resampling bilinear|cubic|lanczos|average] [--imagery-max-texels-per-sample 8]]
//          [--config KEY VALUE] [-q]
//   hfpack info ARCHIVE
//   hfpack verify ARCHIVE [--source INPUT...] [--threads N] [--config KEY VALUE] [-q]
//   hfpack transcode IN.hfa OUT.hfa --codec hfpac|hfpac+rbuc|raw [--segment 9] [--bits auto|N]
//          [--threads N] [--device cpu|cuda] [--gpu-batch N] [--verify] [-q]
//          [--imagery-codec jpeg|raw|bc1 [--imagery-quality Q] [--imagery-bc1 quality|fast]]
//   hfpack transcode IN.hfa OUT.hfa --imagery-codec jpeg|raw|bc1 ...   (the heights copied as they are)
//
// Errors: one line starting "Error:", exit status 1, no output file left behind.
// --device cuda that cannot be honoured (no GPU codec in this build, no device, codec
// hfpac+rbuc or raw) is not an error: a "Note:" line says so and the CPU encodes. With
// --imagery, --device cuda also codes the JPEG imagery tiles on the GPU (same fallback).
// Built without GDAL (HF_WITH_GDAL=OFF, for the GPU machine) the only input is one .hfr dump
// (`hfbench dump`); --t_srs and --config are then refused.
#ifdef HFPACK_GDAL
#include <cpl_conv.h>
#include <gdal.h>
#endif

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include "hfpack.h"

namespace {

std::atomic<bool> g_interrupted{false};
void onSignal(int) { g_interrupted = true; }

const char* kUsage =
    "Usage: hfpack INPUT... -o OUT.hfa [--patch 129] [--segment 9] [--bits auto|N]\n"
    "              [--codec hfpac|hfpac+rbuc|raw] [--levels N]\n"
    "              [--vertical-scale M] [--vertical-offset O] [--spacing X[,Y]]\n"
    "              [-a_srs SRS] [-a_ullr ULX ULY LRX LRY] [--t_srs SRS]\n"
    "              [--nodata fill|keep] [--threads N] [--device cpu|cuda] [--gpu-batch N]\n"
    "              [--band B] [--config KEY VALUE] [-q]\n"
    "              [--imagery RASTER... [--imagery-quality 90] [--imagery-codec jpeg|raw|bc1]\n"
    "               [--imagery-bc1 quality|fast] [--imagery-resampling bilinear|cubic|lanczos|average]\n"
    "               [--imagery-max-texels-per-sample 8]]\n"
    "       hfpack info ARCHIVE\n"
    "       hfpack verify ARCHIVE [--source INPUT... [-a_srs SRS] [-a_ullr ...] [--t_srs SRS]]\n"
    "              [--imagery RASTER... [--imagery-resampling R]] [--threads N] [-q]\n"
    "       hfpack transcode IN.hfa OUT.hfa --codec hfpac|hfpac+rbuc|raw [--segment 9]\n"
    "              [--bits auto|N] [--threads N] [--device cpu|cuda] [--gpu-batch N] [--verify] [-q]\n"
    "              [--imagery-codec jpeg|raw|bc1 [--imagery-quality Q] [--imagery-bc1 quality|fast]]\n"
    "       hfpack transcode IN.hfa OUT.hfa --imagery-codec jpeg|raw|bc1 [--imagery-quality Q]\n"
    "              [--imagery-bc1 quality|fast] [--threads N] [--verify] [-q]   (heights copied)\n"
    "\n"
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
    "  transcode re-encodes every tile of IN.hfa with another codec and keeps everything else\n"
    "  (levels, tiles, georeferencing, nodata, vertical scale, per-tile min/max and LOD errors).\n"
    "  Decoding is exact for every codec, so any archive transcodes losslessly; --verify then\n"
    "  decodes both archives and compares every tile. --imagery-codec re-codes the imagery from its\n"
    "  decoded tiles (a bc1 tile decodes from its level 0; jpeg keeps the input's quality unless\n"
    "  --imagery-quality); without it the imagery is copied as it is. Without --codec the height\n"
    "  tiles are copied as they are (e.g. a bc1 twin: transcode IN OUT --imagery-codec bc1).\n";

int fail(const std::string& msg) {
  fprintf(stderr, "Error: %s\n", msg.c_str());
  return 1;
}

bool parseInt(const char* s, int& v) {
  char* end = nullptr;
  errno = 0;
  const long x = std::strtol(s, &end, 10);
  if (!*s || *end || errno || x < -1000000000L || x > 1000000000L) return false;
  v = int(x);
  return true;
}

bool parseDouble(const char* s, double& v) {
  char* end = nullptr;
  v = std::strtod(s, &end);
  return *s && !*end;
}

hfpack::Progress makeProgress(bool quiet) {
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
  const std::string cmd = argv[1];
  if (cmd == "-h" || cmd == "--help") {
    fputs(kUsage, stdout);
    return 0;
  }
  bool quiet = false;
  std::vector<std::string> positional;
  hfpack::PackOptions po;
  hfpack::VerifyOptions vo;
  hfpack::TranscodeOptions to;
  bool in_sources = false, codec_given = false;
  bool imagery_codec_given = false;  // --imagery-codec (transcode: re-code the imagery)
  std::string imagery_coding;         // --imagery-quality / --imagery-bc1, the first one given
  bool in_imagery = false;  // after --imagery: rasters until the next option
  bool cache_given = false; // --config GDAL_CACHEMAX
  std::string pack_only;  // the first option that only pack takes (refused by transcode)
  const int start = (cmd == "info" || cmd == "verify" || cmd == "transcode") ? 2 : 1;
  for (int i = start; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.size() > 1 && a[0] == '-') in_imagery = false;
    auto need = [&](int count) {
      if (i + count >= argc) {
        fail("option " + a + " needs " + (count == 1 ? std::string("a value") : std::to_string(count) + " values"));
        std::exit(1);
      }
    };
    auto intArg = [&](int& v) {
      need(1);
      if (!parseInt(argv[++i], v)) {
        fail("option " + a + ": not an integer: " + argv[i]);
        std::exit(1);
      }
    };
    auto doubleArg = [&](double& v, bool finite) {
      need(1);
      if (!parseDouble(argv[++i], v) || (finite && !std::isfinite(v))) {
        fail("option " + a + ": not a number: " + argv[i]);
        std::exit(1);
      }
    };
    static const char* const kPackOnly[] = {"--patch", "--levels", "--vertical-scale", "--vertical-offset", "--spacing",
                                            "-a_srs", "-a_ullr", "--nodata", "--band", "--t_srs", "--imagery",
                                            "--imagery-resampling", "--imagery-max-texels-per-sample"};
    if (pack_only.empty() && std::find(std::begin(kPackOnly), std::end(kPackOnly), a) != std::end(kPackOnly))
      pack_only = a;
    if (a == "-q" || a == "--quiet") quiet = true;
    else if (a == "-o") { need(1); po.output = argv[++i]; in_sources = false; }
    else if (a == "--verify") {
      if (cmd != "transcode") return fail("--verify is an option of hfpack transcode (see also hfpack verify)");
      to.verify = true;
    }
    else if (a == "--patch") intArg(po.patch);
    else if (a == "--segment") {
      need(1);
      if (std::strcmp(argv[i + 1], "auto") == 0) { po.segment = 0; ++i; }
      else intArg(po.segment);
    } else if (a == "--bits") {
      need(1);
      if (std::strcmp(argv[i + 1], "auto") == 0) { po.bits = -1; ++i; }
      else {
        intArg(po.bits);
        if (po.bits < 0) return fail("--bits must be auto or 0..16");
      }
    } else if (a == "--codec") {
      need(1);
      if (!hfa::parseCodec(argv[++i], po.codec)) return fail(std::string("--codec ") + argv[i] + ": must be hfpac, hfpac+rbuc or raw");
      codec_given = true;
    } else if (a == "--levels") {
      intArg(po.levels);
      if (po.levels < 1) return fail("--levels must be at least 1");
    } else if (a == "--vertical-scale") {
      need(1);
      if (!parseDouble(argv[++i], po.verticalScale) || !(po.verticalScale > 0))
        return fail(std::string("--vertical-scale ") + argv[i] + ": must be a positive number");
    } else if (a == "--vertical-offset") {
      doubleArg(po.verticalOffset, true);
    } else if (a == "--spacing") {
      need(1);
      const std::string v = argv[++i];
      const size_t comma = v.find(',');
      const std::string xs = v.substr(0, comma), ys = comma == std::string::npos ? xs : v.substr(comma + 1);
      if (!parseDouble(xs.c_str(), po.spacingX) || !parseDouble(ys.c_str(), po.spacingY) || !(po.spacingX > 0) ||
          !(po.spacingY > 0) || !std::isfinite(po.spacingX) || !std::isfinite(po.spacingY))
        return fail("--spacing " + v + ": must be X or X,Y, positive numbers of metres per sample");
    } else if (a == "-a_srs") {
      need(1);
      po.aSrs = vo.aSrs = argv[++i];
    } else if (a == "-a_ullr") {
      need(4);
      for (int k = 0; k < 4; ++k)
        if (!parseDouble(argv[i + 1 + k], po.ullr[k]) || !std::isfinite(po.ullr[k]))
          return fail(std::string("-a_ullr: not a number: ") + argv[i + 1 + k] + " (give ULX ULY LRX LRY)");
      i += 4;
      po.aUllr = vo.aUllr = true;
      std::copy(po.ullr, po.ullr + 4, vo.ullr);
    } else if (a == "--nodata") {
      need(1);
      const std::string v = argv[++i];
      if (v == "fill") po.fillNodata = true;
      else if (v == "keep") po.fillNodata = false;
      else return fail("--nodata " + v + ": must be fill or keep");
    } else if (a == "--threads") {
      intArg(po.threads);
      if (po.threads < 0) return fail("--threads must be >= 0");
      vo.threads = po.threads;
    } else if (a == "--device") { need(1); po.device = argv[++i]; }
    else if (a == "--gpu-batch") {
      intArg(po.gpuBatch);
      if (po.gpuBatch < 1) return fail("--gpu-batch must be at least 1");
    }
    else if (a == "--band") { intArg(po.band); vo.band = po.band; }
    else if (a == "--t_srs") { need(1); po.tSrs = argv[++i]; vo.tSrs = po.tSrs; }
    else if (a == "--config") {
      need(2);
      cache_given |= std::string(argv[i + 1]) == "GDAL_CACHEMAX";
#ifdef HFPACK_GDAL
      CPLSetConfigOption(argv[i + 1], argv[i + 2]);
#else
      return fail("--config: this hfpack is built without GDAL (HF_WITH_GDAL=OFF)");
#endif
      i += 2;
    }
    else if (a == "--imagery") {
      in_imagery = true;
      in_sources = false;
    } else if (a == "--imagery-quality") {
      intArg(po.imagery.quality);
      if (po.imagery.quality < 1 || po.imagery.quality > 100)
        return fail("--imagery-quality " + std::to_string(po.imagery.quality) + ": must be 1..100");
      to.imageryQuality = po.imagery.quality;
      if (imagery_coding.empty()) imagery_coding = a;
    } else if (a == "--imagery-codec") {
      need(1);
      if (!hfa::parseImageryCodec(argv[++i], po.imagery.codec))
        return fail(std::string("--imagery-codec ") + argv[i] + ": must be jpeg, raw or bc1");
      imagery_codec_given = true;
    } else if (a == "--imagery-bc1") {
      need(1);
      const std::string v = argv[++i];
      if (v == "quality") po.imagery.bc1 = himg::Bc1Mode::Quality;
      else if (v == "fast") po.imagery.bc1 = himg::Bc1Mode::Fast;
      else return fail("--imagery-bc1 " + v + ": must be quality or fast");
      if (imagery_coding.empty()) imagery_coding = a;
    } else if (a == "--imagery-resampling") {
      need(1);
      po.imagery.resampling = vo.imagery.resampling = argv[++i];
      std::string e;
      if (!hfpack::checkImageryOptions(po.imagery, e) && e.find("resampling") != std::string::npos) return fail(e);
    } else if (a == "--imagery-max-texels-per-sample") {
      doubleArg(po.imagery.maxTexelsPerSample, true);
      if (!(po.imagery.maxTexelsPerSample >= 1))
        return fail("--imagery-max-texels-per-sample " + std::string(argv[i]) + ": must be a number >= 1");
    }
    else if (a == "--source") {
      if (cmd != "verify") return fail("--source is an option of hfpack verify");
      in_sources = true;
    } else if (a.size() > 1 && a[0] == '-' && a != "-") return fail("unknown option " + a);
    else if (in_imagery) po.imagery.inputs.push_back(a), vo.imagery.inputs.push_back(a);
    else if (in_sources) vo.sources.push_back(a);
    else positional.push_back(a);
  }

#ifdef HFPACK_GDAL
  // Imagery warps read the colour rasters tile by tile, in any order; a JPEG or PNG source is
  // decoded from its start for every window GDAL does not hold, so its lines must stay cached:
  // 512 MiB (still bounded) unless the user chose.
  if (!po.imagery.inputs.empty() && !std::getenv("GDAL_CACHEMAX") && !cache_given)
    CPLSetConfigOption("GDAL_CACHEMAX", "512");
#endif
  std::string error;
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
    if (!pack_only.empty()) return fail(pack_only + " is not an option of hfpack transcode (it keeps the archive's tiling and heights)");
    if (!po.output.empty()) positional.push_back(po.output);  // -o OUT works too
    if (positional.size() != 2) return fail("hfpack transcode takes IN.hfa OUT.hfa (and --codec and/or --imagery-codec)");
    if (!codec_given && !imagery_codec_given)
      return fail("hfpack transcode needs --codec hfpac, hfpac+rbuc or raw (heights), --imagery-codec jpeg, raw or bc1 (imagery), or both");
    if (!imagery_codec_given && !imagery_coding.empty())
      return fail(imagery_coding + " needs --imagery-codec in hfpack transcode (without it the imagery is copied as it is)");
    to.input = positional[0];
    to.output = positional[1];
    to.recodeHeights = codec_given;
    to.recodeImagery = imagery_codec_given;
    to.imageryCodec = po.imagery.codec;
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
  po.progress = makeProgress(quiet);
  po.out = stdout;
  hfpack::PackResult pr;
  if (!hfpack::pack(po, pr, error)) return fail(error);
  return 0;
}
