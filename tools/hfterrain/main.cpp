// hfterrain - writes the project's built-in sample terrain as a GeoTIFF.
//
//   hfterrain OUT.tif [--size N] [--seed S] [--max-height M] [--sea-fraction F] [-q]
//
// The raster is UInt16 metres, UTM zone 5N (EPSG:32605), 30 m pixels, no nodata value
// (sea is exactly 0 m, like SRTM coast tiles). The file is written next to OUT.tif and renamed
// into place, so a failed or interrupted run never leaves a half-written OUT.tif.
#include <cpl_conv.h>
#include <cpl_string.h>
#include <gdal.h>
#include <ogr_srs_api.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "terrain.h"

namespace {

struct Args {
  std::string out;
  hfterrain::TerrainOptions terrain;
  bool quiet = false;
};

constexpr const char* kUsage =
    "Usage: hfterrain OUT.tif [--size N] [--seed S] [--max-height M] [--sea-fraction F] [-q]\n"
    "  Synthesises the sample terrain (spectral fBm, river erosion, a flat sea) and writes it\n"
    "  as a UInt16 GeoTIFF in metres, UTM zone 5N, 30 m pixels, no nodata value.\n"
    "  --size N          width = height in samples (default 2049 = 16*128+1)\n"
    "  --seed S          random seed (default 1); the same seed gives the same heights\n"
    "  --max-height M    highest land point in metres (default 4000)\n"
    "  --sea-fraction F  share of the area that is sea at 0 m (default 0.2)\n"
    "  -q                quiet: no progress bar\n";

int error(const std::string& message) {
  std::fprintf(stderr, "Error: %s\n", message.c_str());
  return 1;
}

bool parseNumber(const char* text, double& value) {
  char* end = nullptr;
  errno = 0;
  value = std::strtod(text, &end);
  return errno == 0 && end != text && *end == '\0';
}

// Returns -1 to go on, else the exit status.
int parseArgs(int argc, char** argv, Args& a) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](double& v) {
      if (i + 1 >= argc || !parseNumber(argv[i + 1], v)) return false;
      ++i;
      return true;
    };
    double v = 0.0;
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (arg == "-q" || arg == "--quiet") {
      a.quiet = true;
    } else if (arg == "--size") {
      if (!value(v) || v != static_cast<int>(v)) return error("--size needs an integer");
      a.terrain.size = static_cast<int>(v);
    } else if (arg == "--seed") {
      if (i + 1 >= argc) return error("--seed needs a value");
      char* end = nullptr;
      errno = 0;
      const unsigned long long s = std::strtoull(argv[++i], &end, 0);
      if (errno != 0 || *end != '\0' || end == argv[i]) return error("--seed needs an integer");
      a.terrain.seed = s;
    } else if (arg == "--max-height") {
      if (!value(v)) return error("--max-height needs a number");
      a.terrain.maxHeight = v;
    } else if (arg == "--sea-fraction") {
      if (!value(v)) return error("--sea-fraction needs a number");
      a.terrain.seaFraction = v;
    } else if (!arg.empty() && arg[0] == '-') {
      return error("unknown option " + arg + " (see --help)");
    } else if (a.out.empty()) {
      a.out = arg;
    } else {
      return error("more than one output file given");
    }
  }
  if (a.out.empty()) {
    std::fputs(kUsage, stderr);
    return 1;
  }
  return -1;
}

bool writeGeoTiff(const std::string& path, const std::vector<uint16_t>& heights, int n,
                  uint64_t seed, std::string& why) {
  GDALDriverH driver = GDALGetDriverByName("GTiff");
  if (!driver) {
    why = "GDAL has no GTiff driver";
    return false;
  }
  char** co = nullptr;
  co = CSLSetNameValue(co, "TILED", "YES");
  co = CSLSetNameValue(co, "COMPRESS", "DEFLATE");
  co = CSLSetNameValue(co, "PREDICTOR", "2");
  GDALDatasetH ds = GDALCreate(driver, path.c_str(), n, n, 1, GDT_UInt16, co);
  CSLDestroy(co);
  if (!ds) {
    why = std::string("cannot create ") + path + ": " + CPLGetLastErrorMsg();
    return false;
  }
  // UTM zone 5N (Hawaii); the tile's north-west corner at E 200000, N 2200000.
  const double cell = 30.0;
  double gt[6] = {200000.0, cell, 0.0, 2200000.0, 0.0, -cell};
  bool ok = GDALSetGeoTransform(ds, gt) == CE_None;
  OGRSpatialReferenceH srs = OSRNewSpatialReference(nullptr);
  char* wkt = nullptr;
  ok = ok && OSRImportFromEPSG(srs, 32605) == OGRERR_NONE &&
       OSRExportToWkt(srs, &wkt) == OGRERR_NONE;
  ok = ok && GDALSetProjection(ds, wkt) == CE_None;
  CPLFree(wkt);
  OSRDestroySpatialReference(srs);
  const std::string seed_text = std::to_string(seed);
  GDALSetMetadataItem(ds, "TIFFTAG_SOFTWARE", "hfterrain (hfview)", nullptr);
  GDALSetMetadataItem(ds, "TIFFTAG_IMAGEDESCRIPTION",
                      ("hfview sample terrain, synthetic, seed " + seed_text).c_str(), nullptr);
  GDALSetMetadataItem(ds, "HFTERRAIN_SEED", seed_text.c_str(), nullptr);
  GDALRasterBandH band = GDALGetRasterBand(ds, 1);
  GDALSetRasterUnitType(band, "m");
  GDALSetDescription(band, "elevation");
  ok = ok && GDALRasterIO(band, GF_Write, 0, 0, n, n, const_cast<uint16_t*>(heights.data()), n, n,
                          GDT_UInt16, 0, 0) == CE_None;
  GDALClose(ds);  // flushes; a failure here shows up as a CPLGetLastErrorType() error
  if (ok && CPLGetLastErrorType() == CE_Failure) ok = false;
  if (!ok) why = std::string("writing ") + path + " failed: " + CPLGetLastErrorMsg();
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  const int parsed = parseArgs(argc, argv, args);
  if (parsed >= 0) return parsed;

  hfterrain::ProgressFn progress;
  if (!args.quiet) {
    progress = [](double f, const char*) {
      return GDALTermProgress(f * 0.9, nullptr, nullptr) != 0;
    };
  }
  std::vector<uint16_t> heights;
  std::string why;
  if (!hfterrain::synthesizeTerrain(args.terrain, heights, &why, progress)) return error(why);

  GDALAllRegister();
  CPLPushErrorHandler(CPLQuietErrorHandler);  // GDAL's messages go into our one Error: line
  CPLErrorReset();
  const std::string tmp = args.out + ".tmp.tif";
  const bool ok = writeGeoTiff(tmp, heights, args.terrain.size, args.terrain.seed, why);
  int status = 0;
  if (!ok) {
    VSIUnlink(tmp.c_str());
    status = error(why);
  } else if (std::rename(tmp.c_str(), args.out.c_str()) != 0) {
    VSIUnlink(tmp.c_str());
    status = error("cannot rename " + tmp + " to " + args.out + ": " + std::strerror(errno));
  } else if (!args.quiet) {
    GDALTermProgress(1.0, nullptr, nullptr);
  }
  CPLPopErrorHandler();
  GDALDestroyDriverManager();
  return status;
}
