// hfterrain - writes the project's built-in sample terrain as a GeoTIFF or an .hfr dump.
//
//   hfterrain OUT.tif|OUT.hfr [--size N] [--seed S] [--max-height M] [--sea-fraction F]
//             [--device auto|cpu|cuda] [--imagery RELIEF.ppm] [-q]
//
// The raster is UInt16 metres, UTM zone 5N (EPSG:32605), 30 m pixels, no nodata value
// (sea is exactly 0 m, like SRTM coast tiles). OUT ending in ".hfr" is written as the project's
// GDAL-free raster (tools/demio/hfr.h) with the same georeferencing and unit; anything else is a
// GeoTIFF, which needs GDAL. Built without GDAL (HF_WITH_GDAL=OFF, the GPU machine's build) only
// .hfr is written. Either file is written next to OUT and renamed into place, so a failed or
// interrupted run never leaves a half-written OUT. --imagery also writes the terrain's shaded
// relief (relief.h), one pixel per sample, as a PPM that hfpack --imagery drapes over it.
#ifdef HFTERRAIN_GDAL
#include <cpl_conv.h>
#include <cpl_string.h>
#include <gdal.h>
#include <ogr_srs_api.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cli.h"
#include "demio/hfr.h"
#include "relief.h"
#include "terrain.h"

namespace {

struct Args {
  std::string out;
  std::string imagery;  // --imagery: the shaded relief as a PPM (empty: none)
  std::string device = "auto";  // --device: where the spectral fields are synthesised
  hfterrain::TerrainOptions terrain;
  bool quiet = false;
};

int error(const std::string& message) {
  std::fprintf(stderr, "Error: %s\n", message.c_str());
  return 1;
}

// Returns -1 to go on, else the exit status.
int parseArgs(int argc, char** argv, Args& a) {
  CLI::App app{"Synthesises the sample terrain (spectral fBm, river erosion, a flat sea) and writes it as "
               "UInt16 metres, UTM zone 5N, 30 m pixels, no nodata value: a GeoTIFF, or an .hfr dump (the "
               "GDAL-free raster hfpack reads everywhere) when OUT ends in .hfr.",
               "hfterrain"};
  app.add_option("OUT", a.out, "OUT.tif or OUT.hfr")->required();
  app.add_option("--size", a.terrain.size,
                 "width = height in samples, 33..32769 (16385 needs about 12 GB of memory, 32769 about 60 GB)")
      ->default_val(a.terrain.size);
  app.add_option("--seed", a.terrain.seed, "random seed; the same seed gives the same heights")
      ->default_val(a.terrain.seed);
  app.add_option("--max-height", a.terrain.maxHeight, "highest land point in metres")->default_val(a.terrain.maxHeight);
  app.add_option("--sea-fraction", a.terrain.seaFraction, "share of the area that is sea at 0 m")
      ->default_val(a.terrain.seaFraction);
  app.add_option("--device", a.device,
                 "where the two spectral fields (FFTs) are made: cpu (FFTW, the reference), cuda (the GPU: the "
                 "same spectrum and double-precision FFTs: the same heights as cpu's) or auto (cuda when this build "
                 "has it and a CUDA device is there, else cpu; cpu too when the GPU has too little memory)")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->default_val(a.device);
  app.add_option("--imagery", a.imagery,
                 "also write the terrain's shaded relief (hypsometric tint + hill shade, one pixel per sample) as "
                 "a binary PPM, for hfpack --imagery")
      ->check([](const std::string& v) { return v.empty() ? std::string("needs a file name (RELIEF.ppm)") : std::string(); });
  app.add_flag("-q,--quiet", a.quiet, "quiet: no progress bar");
#ifndef HFTERRAIN_GDAL
  app.footer("(built without GDAL: writes .hfr only)");
#endif
  int status = 0;
  return hfcli::parse(app, argc, argv, status) ? -1 : status;
}

// UTM zone 5N (Hawaii); the tile's north-west corner at E 200000, N 2200000, 30 m pixels.
constexpr double kCellMetres = 30.0;
constexpr double kGeoTransform[6] = {200000.0, kCellMetres, 0.0, 2200000.0, 0.0, -kCellMetres};
// EPSG:32605 as GDAL 3.6 exports it (OSRExportToWkt, WKT1): what the .hfr carries, in builds
// with and without GDAL alike (so both write the same file).
constexpr const char* kUtm5nWkt =
    "PROJCS[\"WGS 84 / UTM zone 5N\",GEOGCS[\"WGS 84\",DATUM[\"WGS_1984\",SPHEROID[\"WGS 84\","
    "6378137,298.257223563,AUTHORITY[\"EPSG\",\"7030\"]],AUTHORITY[\"EPSG\",\"6326\"]],"
    "PRIMEM[\"Greenwich\",0,AUTHORITY[\"EPSG\",\"8901\"]],UNIT[\"degree\",0.0174532925199433,"
    "AUTHORITY[\"EPSG\",\"9122\"]],AUTHORITY[\"EPSG\",\"4326\"]],PROJECTION[\"Transverse_Mercator\"],"
    "PARAMETER[\"latitude_of_origin\",0],PARAMETER[\"central_meridian\",-153],"
    "PARAMETER[\"scale_factor\",0.9996],PARAMETER[\"false_easting\",500000],"
    "PARAMETER[\"false_northing\",0],UNIT[\"metre\",1,AUTHORITY[\"EPSG\",\"9001\"]],"
    "AXIS[\"Easting\",EAST],AXIS[\"Northing\",NORTH],AUTHORITY[\"EPSG\",\"32605\"]]";

// The heights (moved out of `heights`) as an .hfr with the georeferencing above; writeHfr
// writes "<path>.tmp" and renames it.
bool writeHfrTerrain(const std::string& path, std::vector<uint16_t>& heights, int n,
                     std::string& why) {
  demio::Dem dem;
  dem.width = dem.height = n;
  dem.type = hfpac::SampleType::UInt16;
  dem.samples = std::move(heights);
  dem.hasGeoTransform = true;
  std::copy(kGeoTransform, kGeoTransform + 6, dem.geoTransform);
  dem.projectionWkt = kUtm5nWkt;
  dem.verticalUnits = "m";
  return demio::writeHfr(path, dem, why);
}

#ifdef HFTERRAIN_GDAL
constexpr int kEpsg = 32605;  // the GeoTIFF's CRS, from GDAL's EPSG database

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
  double gt[6];
  std::copy(kGeoTransform, kGeoTransform + 6, gt);
  bool ok = GDALSetGeoTransform(ds, gt) == CE_None;
  OGRSpatialReferenceH srs = OSRNewSpatialReference(nullptr);
  char* wkt = nullptr;
  ok = ok && OSRImportFromEPSG(srs, kEpsg) == OGRERR_NONE &&
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

// GeoTIFF: written as OUT.tmp.tif and renamed.
int writeTiffOutput(const Args& args, const std::vector<uint16_t>& heights) {
  GDALAllRegister();
  CPLPushErrorHandler(CPLQuietErrorHandler);  // GDAL's messages go into our one Error: line
  CPLErrorReset();
  const std::string tmp = args.out + ".tmp.tif";
  std::string why;
  const bool ok = writeGeoTiff(tmp, heights, args.terrain.size, args.terrain.seed, why);
  int status = 0;
  if (!ok) {
    VSIUnlink(tmp.c_str());
    status = error(why);
  } else if (std::rename(tmp.c_str(), args.out.c_str()) != 0) {
    VSIUnlink(tmp.c_str());
    status = error("cannot rename " + tmp + " to " + args.out + ": " + std::strerror(errno));
  }
  CPLPopErrorHandler();
  GDALDestroyDriverManager();
  return status;
}
#endif

// Progress on the terminal: GDAL's "0...10...20..." bar on stdout where GDAL is linked, else a
// line on stderr that is rewritten in place ("hfterrain: erosion   52 %").
void showProgress(double f, const char* stage) {
#ifdef HFTERRAIN_GDAL
  (void)stage;
  GDALTermProgress(f, nullptr, nullptr);
#else
  static int last = -1;
  const int percent = int(std::clamp(f, 0.0, 1.0) * 100.0 + 1e-9);
  if (percent == last) return;
  last = percent;
  std::fprintf(stderr, "\rhfterrain: %-9s %3d %%%s", stage, percent, percent == 100 ? "\n" : "");
  std::fflush(stderr);
#endif
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  const int parsed = parseArgs(argc, argv, args);
  if (parsed >= 0) return parsed;
  const bool hfr = demio::isHfrPath(args.out);
#ifndef HFTERRAIN_GDAL
  if (!hfr) {
    return error(args.out + ": this hfterrain was built without GDAL; write .hfr");
  }
#endif

  const bool gpu = hfterrain::cudaFieldsAvailable();
  if (args.device == "cuda" && !gpu)
    return error("--device cuda: no CUDA device here (or this hfterrain was built without CUDA); use --device cpu");
  args.terrain.device = (args.device == "cuda" || (args.device == "auto" && gpu)) ? hfterrain::FieldDevice::Cuda
                                                                                   : hfterrain::FieldDevice::Cpu;
  hfterrain::ProgressFn progress;
  if (!args.quiet) {
    progress = [](double f, const char* stage) {
      showProgress(f * 0.9, stage);
      return true;
    };
  }
  std::vector<uint16_t> heights;
  std::string why;
  if (!hfterrain::synthesizeTerrain(args.terrain, heights, &why, progress)) {
    // auto: a GPU that cannot make the field (too little device memory: 16 m^2 bytes for an m x m
    // grid) leaves it to the CPU, whose heights are the same sample for sample.
    if (args.device != "auto" || args.terrain.device != hfterrain::FieldDevice::Cuda || why.rfind("GPU", 0) != 0)
      return error(why);
    if (!args.quiet) std::fprintf(stderr, "\nhfterrain: %s; making the fields on the CPU instead\n", why.c_str());
    args.terrain.device = hfterrain::FieldDevice::Cpu;
    if (!hfterrain::synthesizeTerrain(args.terrain, heights, &why, progress)) return error(why);
  }

  int status = 0;
  if (!args.imagery.empty()) {  // before the heights are moved into the .hfr writer
    std::vector<uint8_t> rgb;
    hfterrain::shadedRelief(heights, args.terrain.size, kCellMetres, rgb);
    if (!hfterrain::writePpm(args.imagery, rgb, args.terrain.size, args.terrain.size, why)) return error(why);
  }
  if (hfr) {
    if (!writeHfrTerrain(args.out, heights, args.terrain.size, why)) status = error(why);
  } else {
#ifdef HFTERRAIN_GDAL
    status = writeTiffOutput(args, heights);
#endif
  }
  if (status == 0 && !args.quiet) showProgress(1.0, "written");
  return status;
}
