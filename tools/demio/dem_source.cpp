// dem_source.cpp - DemSource: windowed GDAL reads with readDem()'s sample conversion.
#include "demio/dem_source.h"

#include <cpl_conv.h>
#include <gdal_utils.h>
#include <gdal_version.h>
#include <gdalwarper.h>
#include <ogr_srs_api.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>

#include "demio/gdal_util.h"
#include "demio/hfr.h"

namespace demio {

using namespace detail;

DemSource::~DemSource() { close(); }

void DemSource::close() {
  if (hfr_) std::fclose(hfr_);
  hfr_ = nullptr;
  for (auto it = owned_.rbegin(); it != owned_.rend(); ++it) GDALClose(static_cast<GDALDatasetH>(*it));
  owned_.clear();
  ds_ = band_ = maskBand_ = nullptr;
  info_ = Dem();
  measured_ = 0;
  downsampled_ = false;
}

namespace {
bool isQuantisedType(GDALDataType t) {
  switch (t) {
    case GDT_Int32:
    case GDT_UInt32:
#if GDAL_VERSION_NUM >= GDAL_COMPUTE_VERSION(3, 5, 0)
    case GDT_Int64:
    case GDT_UInt64:
#endif
    case GDT_Float32:
    case GDT_Float64:
      return true;
    default:
      return false;
  }
}
}  // namespace

bool srsToWkt(const std::string& user, const char* option, std::string& wkt, std::string& error) {
  registerDriversOnce();
  OGRSpatialReferenceH srs = OSRNewSpatialReference(nullptr);
  char* text = nullptr;
  const bool ok = OSRSetFromUserInput(srs, user.c_str()) == OGRERR_NONE && OSRExportToWkt(srs, &text) == OGRERR_NONE;
  OSRDestroySpatialReference(srs);
  if (ok && text) wkt = text;
  CPLFree(text);
  if (!ok) error = std::string(option) + " " + user + ": not a spatial reference GDAL understands";
  return ok;
}

GDALDatasetH assignGeoreferencing(GDALDatasetH ds, const std::string& srs, const double* ullr, std::string& error) {
  std::vector<std::string> args = {"-of", "VRT"};
  if (!srs.empty()) {
    std::string wkt;
    if (!srsToWkt(srs, "-a_srs", wkt, error)) return nullptr;
    args.insert(args.end(), {"-a_srs", wkt});
  }
  if (ullr) {
    if (!checkUllr(ullr, error)) return nullptr;
    args.push_back("-a_ullr");
    for (int i = 0; i < 4; ++i) {
      char buf[40];
      snprintf(buf, sizeof buf, "%.17g", ullr[i]);
      args.push_back(buf);
    }
  }
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  GDALTranslateOptions* to = GDALTranslateOptionsNew(argv.data(), nullptr);
  if (!to) {
    error = gdalError("cannot assign the georeferencing");
    return nullptr;
  }
  GDALDatasetH out = GDALTranslate("", ds, to, nullptr);
  GDALTranslateOptionsFree(to);
  if (!out) error = gdalError("cannot assign the georeferencing (-a_srs / -a_ullr)");
  return out;
}

// SourceOptions::maxSide: an in-memory VRT of `ds` with at most maxSide samples on its longer
// side (the extent kept, averages of the covered samples); nullptr with an empty error when
// `ds` is small enough already.
GDALDatasetH downsampledVrt(GDALDatasetH ds, int maxSide, std::string& error) {
  const int w = GDALGetRasterXSize(ds), h = GDALGetRasterYSize(ds);
  if (w <= maxSide && h <= maxSide) return nullptr;
  const double f = double(maxSide) / double(std::max(w, h));
  std::vector<std::string> args = {"-of", "VRT", "-r", "average", "-outsize",
                                   std::to_string(std::max(1, int(std::lround(w * f)))),
                                   std::to_string(std::max(1, int(std::lround(h * f))))};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  GDALTranslateOptions* to = GDALTranslateOptionsNew(argv.data(), nullptr);
  GDALDatasetH out = to ? GDALTranslate("", ds, to, nullptr) : nullptr;
  if (to) GDALTranslateOptionsFree(to);
  if (!out) error = gdalError("cannot read the input downsampled to " + std::to_string(maxSide) + " samples");
  return out;
}

bool DemSource::open(const std::vector<std::string>& paths, const SourceOptions& options,
                     std::string& error) {
  close();
  registerDriversOnce();
  ErrorCollector collector;
  collector.warnings = &info_.warnings;
  ScopedErrorHandler quiet(&collector);
  if (paths.empty()) {
    error = "no input";
    return false;
  }
  if (paths.size() == 1 && isHfrPath(paths[0])) {
    if (!options.tSrs.empty()) {
      error = paths[0] + ": --t_srs cannot reproject an .hfr dump (its georeferencing is kept as it is); reproject its source";
      return false;
    }
    if (options.read.band != 1) {
      error = paths[0] + ": no band " + std::to_string(options.read.band) + " (an .hfr has one band)";
      return false;
    }
    if (options.maxSide > 0) {
      error = paths[0] + ": an .hfr dump cannot be read downsampled (--max-size); pack its source";
      return false;
    }
    std::string wkt;
    if (!options.aSrs.empty() && !srsToWkt(options.aSrs, "-a_srs", wkt, error)) return false;
    return openHfr(paths[0], error) && assignHfr(wkt, options, error);
  }
  for (const std::string& path : paths)
    if (isHfrPath(path)) {
      error = path + ": .hfr dumps cannot be mosaicked with other inputs (give one .hfr alone)";
      return false;
    }
  std::vector<GDALDatasetH> inputs;
  for (const std::string& path : paths) {
    if (path.compare(0, 4, "/vsi") != 0) {
      struct stat st;
      if (::stat(path.c_str(), &st) != 0) {
        error = path + ": " + std::strerror(errno);
        return false;
      }
    }
    GDALDatasetH ds = GDALOpenEx(path.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY | GDAL_OF_VERBOSE_ERROR,
                                 nullptr, nullptr, nullptr);
    if (!ds) {
      const std::string msg = oneLine(CPLGetLastErrorMsg());
      if (msg.empty() || msg.find("not recognized as a supported file format") != std::string::npos)
        error = path + ": not a raster format GDAL recognises";
      else
        error = path + ": cannot open: " + msg;
      return false;
    }
    owned_.push_back(ds);
    inputs.push_back(ds);
    if (GDALGetRasterCount(ds) < options.read.band) {
      error = path + ": no band " + std::to_string(options.read.band);
      return false;
    }
  }
  GDALDatasetH ds = inputs[0];
  if (inputs.size() > 1) {
    // Mosaic in memory; the sources' own nodata (first band) is kept as VRT nodata.
    int usage_error = 0;
    GDALDatasetH vrt = GDALBuildVRT("", int(inputs.size()), inputs.data(), nullptr, nullptr, &usage_error);
    if (!vrt) {
      error = gdalError("cannot mosaic the inputs");
      return false;
    }
    owned_.push_back(vrt);
    ds = vrt;
  }
  if (!options.aSrs.empty() || options.aUllr) {
    GDALDatasetH assigned = assignGeoreferencing(ds, options.aSrs, options.aUllr ? options.ullr : nullptr, error);
    if (!assigned) return false;
    owned_.push_back(assigned);
    ds = assigned;
  }
  if (!options.tSrs.empty()) {
    std::string wkt;
    if (!srsToWkt(options.tSrs, "--t_srs", wkt, error)) return false;
    GDALDatasetH warped = GDALAutoCreateWarpedVRT(ds, nullptr, wkt.c_str(), GRA_Bilinear, 0.125, nullptr);
    if (!warped) {
      error = gdalError("cannot reproject to " + options.tSrs);
      return false;
    }
    owned_.push_back(warped);
    ds = warped;
  }
  sourceWidth_ = GDALGetRasterXSize(ds);
  sourceHeight_ = GDALGetRasterYSize(ds);
  if (options.maxSide > 0) {
    GDALDatasetH small = downsampledVrt(ds, options.maxSide, error);
    if (!small && !error.empty()) return false;
    if (small) {
      owned_.push_back(small);
      ds = small;
      downsampled_ = true;
    }
  }
  ds_ = ds;
  GDALRasterBandH band = GDALGetRasterBand(ds, options.read.band);
  if (!band) {
    error = gdalError("cannot access band " + std::to_string(options.read.band));
    return false;
  }
  band_ = band;
  Dem& d = info_;
  d.path = paths.size() == 1 ? paths[0] : std::to_string(paths.size()) + " inputs (mosaic)";
  if (GDALDriverH driver = GDALGetDatasetDriver(inputs[0])) d.driver = GDALGetDriverShortName(driver);
  d.bandCount = GDALGetRasterCount(ds);
  d.band = options.read.band;
  d.width = GDALGetRasterBandXSize(band);
  d.height = GDALGetRasterBandYSize(band);
  if (d.width <= 0 || d.height <= 0) {
    error = "zero-size raster (" + std::to_string(d.width) + " x " + std::to_string(d.height) + ")";
    return false;
  }
  const GDALDataType type = GDALGetRasterDataType(band);
  gdalType_ = int(type);
  const char* type_name = GDALGetDataTypeName(type);
  d.sourceType = type_name ? type_name : "Unknown";
  double gt[6];
  if (GDALGetGeoTransform(ds, gt) == CE_None) {
    d.hasGeoTransform = true;
    std::copy(gt, gt + 6, d.geoTransform);
  }
  if (const char* wkt = GDALGetProjectionRef(ds)) d.projectionWkt = wkt;
  int has_nodata = 0;
  const double nodata = GDALGetRasterNoDataValue(band, &has_nodata);
  d.hasNodata = has_nodata != 0;
  d.nodata = d.hasNodata ? nodata : 0.0;
  if (const char* units = GDALGetRasterUnitType(band)) units_ = units;
  d.verticalUnits = units_;
  int has = 0;
  scale_ = GDALGetRasterScale(band, &has);
  if (!has || !std::isfinite(scale_) || scale_ == 0) scale_ = 1;
  offset_ = GDALGetRasterOffset(band, &has);
  if (!has || !std::isfinite(offset_)) offset_ = 0;
  CPLErrorReset();

  if (GDALDataTypeIsComplex(type)) {
    error = "unsupported data type " + d.sourceType + " (complex)";
    return false;
  }
  switch (type) {
    case GDT_Int16:
    case GDT_UInt16: {
      d.type = type == GDT_Int16 ? hfpac::SampleType::Int16 : hfpac::SampleType::UInt16;
      if (d.hasNodata && std::nearbyint(d.nodata) == d.nodata) {
        const double lo = type == GDT_Int16 ? -32768.0 : 0.0, hi = type == GDT_Int16 ? 32767.0 : 65535.0;
        if (d.nodata >= lo && d.nodata <= hi) {
          d.nodataInSamples = true;
          d.nodataSample = type == GDT_Int16 ? uint16_t(int16_t(d.nodata)) : uint16_t(d.nodata);
        }
      }
      return true;
    }
    case GDT_Byte:
#if GDAL_VERSION_NUM >= GDAL_COMPUTE_VERSION(3, 7, 0)
    case GDT_Int8:
#endif
    {
      signedByte_ = type != GDT_Byte || isSignedByte(band);
      buildByteLut(band, signedByte_, options.read, lut_, d.paletteMapped, d.warnings);
      d.widened = true;
      d.type = signedByte_ ? hfpac::SampleType::Int16 : hfpac::SampleType::UInt16;
      if (d.hasNodata && std::nearbyint(d.nodata) == d.nodata) {
        const double lo = signedByte_ ? -128.0 : 0.0, hi = signedByte_ ? 127.0 : 255.0;
        if (d.nodata >= lo && d.nodata <= hi) {
          d.nodataInSamples = true;
          d.nodataSample = lut_[signedByte_ ? int(d.nodata) & 0xff : int(d.nodata)];
        }
      }
      return true;
    }
    default:
      break;
  }
  if (!isQuantisedType(type)) {
    error = "unsupported data type " + d.sourceType;
    return false;
  }
  // Quantised: one strip pass for the range of the valid values.
  if (!(GDALGetMaskFlags(band) & GMF_ALL_VALID)) maskBand_ = GDALGetMaskBand(band);
  const int strip = std::max(1, std::min(d.height, int((size_t(1) << 22) / size_t(d.width))));
  values_.resize(size_t(strip) * size_t(d.width));
  if (maskBand_) mask_.resize(values_.size());
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  bool integer_valued = true;
  size_t valid_count = 0;
  for (int y0 = 0; y0 < d.height; y0 += strip) {
    const int rows = std::min(strip, d.height - y0);
    if (GDALRasterIO(band, GF_Read, 0, y0, d.width, rows, values_.data(), d.width, rows, GDT_Float64, 0, 0) != CE_None) {
      error = gdalError("read failed at row " + std::to_string(y0));
      return false;
    }
    if (maskBand_ && GDALRasterIO(static_cast<GDALRasterBandH>(maskBand_), GF_Read, 0, y0, d.width, rows,
                                  mask_.data(), d.width, rows, GDT_Byte, 0, 0) != CE_None) {
      error = gdalError("reading the nodata mask failed at row " + std::to_string(y0));
      return false;
    }
    const size_t n = size_t(rows) * size_t(d.width);
    for (size_t i = 0; i < n; ++i) {
      const double v = values_[i];
      if (std::isnan(v) || (maskBand_ && mask_[i] == 0)) continue;
      if (std::isinf(v)) {
        error = "infinite sample value; cannot quantise";
        return false;
      }
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      integer_valued = integer_valued && std::nearbyint(v) == v;
      ++valid_count;
    }
    if (options.progress && !options.progress(double(y0 + rows) / d.height)) {
      error = "interrupted";
      return false;
    }
  }
  if (valid_count == 0) lo = hi = 0.0;
  if (!chooseQuantisation(lo, hi, integer_valued, options.read.quantStep, d.quant, error)) return false;
  d.type = hfpac::SampleType::UInt16;
  d.nodataInSamples = true;
  d.nodataSample = 65535;
  return true;
}

bool DemSource::readRows(int y0, int rows, uint16_t* out, uint8_t* valid, std::string& error) {
  if (hfr_) return readHfrRows(y0, rows, out, valid, error);
  if (!band_ || y0 < 0 || rows < 1 || y0 + rows > info_.height) {
    error = "readRows: rows out of range";
    return false;
  }
  ScopedErrorHandler quiet(nullptr);
  const int w = info_.width;
  const size_t n = size_t(rows) * size_t(w);
  auto fail = [&](const char* what) {
    error = gdalError(std::string(what) + " rows " + std::to_string(y0) + ".." + std::to_string(y0 + rows - 1));
    return false;
  };
  GDALRasterBandH band = static_cast<GDALRasterBandH>(band_);
  const Dem& d = info_;
  if (d.quant.applied) {
    if (values_.size() < n) values_.resize(n);
    if (maskBand_ && mask_.size() < n) mask_.resize(n);
    if (GDALRasterIO(band, GF_Read, 0, y0, w, rows, values_.data(), w, rows, GDT_Float64, 0, 0) != CE_None)
      return fail("read failed at");
    if (maskBand_ && GDALRasterIO(static_cast<GDALRasterBandH>(maskBand_), GF_Read, 0, y0, w, rows, mask_.data(),
                                  w, rows, GDT_Byte, 0, 0) != CE_None)
      return fail("reading the nodata mask failed at");
    const Quantisation& q = d.quant;
    for (size_t i = 0; i < n; ++i) {
      const double v = values_[i];
      if (std::isnan(v) || (maskBand_ && mask_[i] == 0)) {
        out[i] = 65535;
        if (valid) valid[i] = 0;
        continue;
      }
      double code = std::nearbyint((v - q.offset) / q.step);
      code = std::min(std::max(code, 0.0), 65534.0);
      out[i] = uint16_t(code);
      measured_ = std::max(measured_, std::fabs(q.offset + code * q.step - v));
      if (valid) valid[i] = 1;
    }
    return true;
  }
  if (d.widened) {
    if (bytes_.size() < n) bytes_.resize(n);
    if (GDALRasterIO(band, GF_Read, 0, y0, w, rows, bytes_.data(), w, rows, GDT_Byte, 0, 0) != CE_None)
      return fail("read failed at");
    for (size_t i = 0; i < n; ++i) out[i] = lut_[bytes_[i]];
  } else {
    if (GDALRasterIO(band, GF_Read, 0, y0, w, rows, out, w, rows, GDALDataType(gdalType_), 0, 0) != CE_None)
      return fail("read failed at");
  }
  if (valid) {
    if (d.nodataInSamples)
      for (size_t i = 0; i < n; ++i) valid[i] = out[i] != d.nodataSample;
    else
      std::fill(valid, valid + n, uint8_t(1));
  }
  return true;
}

}  // namespace demio
