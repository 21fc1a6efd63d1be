// dem_io.cpp - GDAL reading and 16-bit conversion behind dem_io.h.
#include "demio/dem_io.h"
#include "demio/gdal_util.h"
#include "demio/hfr.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <new>

#include <cpl_error.h>
#include <gdal.h>
#include <gdal_version.h>
#include <sys/stat.h>

namespace demio {

namespace detail {


// The 256-entry table that widens a Byte band (see read8).
void buildByteLut(GDALRasterBandH band, bool is_signed, const ReadOptions& options, uint16_t lut[256],
                  bool& palette_mapped, std::vector<std::string>& warnings) {
  for (int i = 0; i < 256; ++i)
    lut[i] = is_signed ? static_cast<uint16_t>(static_cast<int16_t>(static_cast<int8_t>(i)))
                       : static_cast<uint16_t>(i);

  GDALColorTableH table = GDALGetRasterColorTable(band);
  if (!is_signed && options.expandGreyPalette && table &&
      GDALGetRasterColorInterpretation(band) == GCI_PaletteIndex &&
      GDALGetPaletteInterpretation(table) == GPI_RGB) {
    const int entries = std::min(GDALGetColorEntryCount(table), 256);
    bool grey = entries > 0;
    for (int i = 0; i < entries && grey; ++i) {
      const GDALColorEntry* e = GDALGetColorEntry(table, i);
      grey = e && e->c1 == e->c2 && e->c2 == e->c3;
    }
    if (grey) {
      bool identity = true;
      for (int i = 0; i < entries; ++i) {
        lut[i] = static_cast<uint16_t>(GDALGetColorEntry(table, i)->c1);
        identity = identity && lut[i] == i;
      }
      palette_mapped = true;
      if (!identity) warnings.push_back("grey colour table applied (not an identity ramp)");
    }
  }

}

// Fills q (applied, range, offset, step, maxError) for valid values in [lo, hi] (see dem_io.h).
bool chooseQuantisation(double lo, double hi, bool integer_valued, double quant_step, Quantisation& q,
                        std::string& error) {
  const double range = hi - lo;
  q.applied = true;
  q.sourceMin = lo;
  q.sourceMax = hi;
  q.integerValued = integer_valued;
  q.offset = lo;
  if (quant_step > 0) {
    if (!std::isfinite(quant_step)) {
      error = "quantisation step must be a positive finite number";
      return false;
    }
    q.step = quant_step;
    if (range / q.step > 65534.0 * (1.0 + 1e-12)) {
      error = "quantisation step " + std::to_string(q.step) + " is too small for the range [" +
              std::to_string(lo) + ", " + std::to_string(hi) + "] (needs at least " +
              std::to_string(range / 65534.0) + ")";
      return false;
    }
  } else if (integer_valued && range <= 65534.0) {
    q.step = 1.0;  // exact
  } else if (range > 0.0) {
    q.step = range / 65534.0;  // the finest step that fits 0..65534
  } else {
    q.step = 1.0;  // constant data
  }
  q.maxError = (range == 0.0 || (integer_valued && q.step == 1.0)) ? 0.0 : q.step / 2.0;
  return true;
}

}  // namespace detail

namespace {

using namespace detail;

// Whole-raster read straight into the sample buffer; GDAL converts to `buffer_type`.
bool readWhole(GDALRasterBandH band, int width, int height, void* buffer,
               GDALDataType buffer_type, std::string& error) {
  if (GDALRasterIO(band, GF_Read, 0, 0, width, height, buffer, width, height, buffer_type, 0,
                   0) != CE_None) {
    error = gdalError("read failed");
    return false;
  }
  return true;
}

void countNodata(Dem& dem) {
  dem.nodataCount = 0;
  if (!dem.nodataInSamples) return;
  dem.nodataCount = static_cast<size_t>(
      std::count(dem.samples.begin(), dem.samples.end(), dem.nodataSample));
}

// Int16 / UInt16: the bits as they are.
bool read16(GDALRasterBandH band, GDALDataType type, Dem& dem, std::string& error) {
  if (!readWhole(band, dem.width, dem.height, dem.samples.data(), type, error)) return false;
  dem.type = type == GDT_Int16 ? hfpac::SampleType::Int16 : hfpac::SampleType::UInt16;
  if (dem.hasNodata && std::nearbyint(dem.nodata) == dem.nodata) {
    const double lo = type == GDT_Int16 ? -32768.0 : 0.0;
    const double hi = type == GDT_Int16 ? 32767.0 : 65535.0;
    if (dem.nodata >= lo && dem.nodata <= hi) {
      dem.nodataInSamples = true;
      dem.nodataSample = type == GDT_Int16
                             ? static_cast<uint16_t>(static_cast<int16_t>(dem.nodata))
                             : static_cast<uint16_t>(dem.nodata);
    }
  }
  countNodata(dem);
  return true;
}

// Byte: widened to UInt16 (optionally through a grey colour table); signed bytes to Int16.
bool read8(GDALRasterBandH band, bool is_signed, const ReadOptions& options, Dem& dem,
           std::string& error) {
  std::vector<uint8_t> bytes(dem.samples.size());
  if (!readWhole(band, dem.width, dem.height, bytes.data(), GDT_Byte, error)) return false;
  dem.widened = true;

  uint16_t lut[256];
  buildByteLut(band, is_signed, options, lut, dem.paletteMapped, dem.warnings);

  for (size_t i = 0; i < bytes.size(); ++i) dem.samples[i] = lut[bytes[i]];
  dem.type = is_signed ? hfpac::SampleType::Int16 : hfpac::SampleType::UInt16;

  if (dem.hasNodata && std::nearbyint(dem.nodata) == dem.nodata) {
    const double lo = is_signed ? -128.0 : 0.0;
    const double hi = is_signed ? 127.0 : 255.0;
    if (dem.nodata >= lo && dem.nodata <= hi) {
      dem.nodataInSamples = true;
      const int index = is_signed ? static_cast<int>(dem.nodata) & 0xff : static_cast<int>(dem.nodata);
      dem.nodataSample = lut[index];
    }
  }
  countNodata(dem);
  return true;
}

// Everything wider than 16 bits: two passes over row strips read as double (range, then
// quantisation), so the temporary memory stays bounded whatever the raster size.
// Validity comes from GDAL's mask band (nodata value with GDAL's own float tolerance, internal
// masks, alpha) plus NaN, so we agree with what gdalinfo -stats counts as valid.
bool readQuantised(GDALRasterBandH band, const ReadOptions& options, Dem& dem,
                   std::string& error) {
  const int width = dem.width, height = dem.height;
  const size_t kStripValues = size_t(1) << 22;
  const int strip_rows =
      static_cast<int>(std::max<size_t>(1, std::min<size_t>(height, kStripValues / width)));
  std::vector<double> values(static_cast<size_t>(strip_rows) * width);
  std::vector<uint8_t> mask;
  GDALRasterBandH mask_band = nullptr;
  if (!(GDALGetMaskFlags(band) & GMF_ALL_VALID)) {
    mask_band = GDALGetMaskBand(band);
    if (mask_band) mask.resize(values.size());
  }

  auto readStrip = [&](int y0, int rows) {
    if (GDALRasterIO(band, GF_Read, 0, y0, width, rows, values.data(), width, rows,
                     GDT_Float64, 0, 0) != CE_None) {
      error = gdalError("read failed");
      return false;
    }
    if (mask_band && GDALRasterIO(mask_band, GF_Read, 0, y0, width, rows, mask.data(), width,
                                  rows, GDT_Byte, 0, 0) != CE_None) {
      error = gdalError("reading the nodata mask failed");
      return false;
    }
    return true;
  };
  auto valid = [&](size_t i) { return !std::isnan(values[i]) && (!mask_band || mask[i] != 0); };

  // Pass 1: range of the valid values.
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  bool integer_valued = true;
  size_t valid_count = 0;
  for (int y0 = 0; y0 < height; y0 += strip_rows) {
    const int rows = std::min(strip_rows, height - y0);
    if (!readStrip(y0, rows)) return false;
    const size_t n = static_cast<size_t>(rows) * width;
    for (size_t i = 0; i < n; ++i) {
      if (!valid(i)) continue;
      const double v = values[i];
      if (std::isinf(v)) {
        error = "infinite sample value; cannot quantise";
        return false;
      }
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      integer_valued = integer_valued && std::nearbyint(v) == v;
      ++valid_count;
    }
  }
  if (valid_count == 0) lo = hi = 0.0;

  Quantisation& q = dem.quant;
  if (!chooseQuantisation(lo, hi, integer_valued, options.quantStep, q, error)) return false;

  // Pass 2: quantise. 65535 is reserved for nodata.
  double measured = 0.0;
  size_t nodata_count = 0;
  for (int y0 = 0; y0 < height; y0 += strip_rows) {
    const int rows = std::min(strip_rows, height - y0);
    if (!readStrip(y0, rows)) return false;
    const size_t n = static_cast<size_t>(rows) * width;
    uint16_t* out = dem.samples.data() + static_cast<size_t>(y0) * width;
    for (size_t i = 0; i < n; ++i) {
      if (!valid(i)) {
        out[i] = 65535;
        ++nodata_count;
        continue;
      }
      const double v = values[i];
      double code = std::nearbyint((v - q.offset) / q.step);
      code = std::min(std::max(code, 0.0), 65534.0);
      out[i] = static_cast<uint16_t>(code);
      measured = std::max(measured, std::fabs(q.offset + code * q.step - v));
    }
  }
  q.measuredMaxError = measured;
  dem.type = hfpac::SampleType::UInt16;
  dem.nodataInSamples = true;
  dem.nodataSample = 65535;
  dem.nodataCount = nodata_count;
  return true;
}

bool readImpl(const std::string& path, Dem& dem, std::string& error,
              const ReadOptions& options) {
  registerDriversOnce();
  // A plain path that does not exist: say so directly (GDAL's message repeats the path).
  if (path.compare(0, 5, "/vsi") != 0) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) {
      error = std::strerror(errno);
      return false;
    }
  }
  DatasetHandle ds(GDALOpenEx(path.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY | GDAL_OF_VERBOSE_ERROR, nullptr,
                              nullptr, nullptr));
  if (!ds.get()) {
    const std::string msg = oneLine(CPLGetLastErrorMsg());
    if (msg.empty() || msg.find("not recognized as a supported file format") != std::string::npos)
      error = "not a raster format GDAL recognises";
    else
      error = "cannot open: " + msg;
    return false;
  }
  dem.path = path;
  if (GDALDriverH driver = GDALGetDatasetDriver(ds.get()))
    dem.driver = GDALGetDriverShortName(driver);
  dem.bandCount = GDALGetRasterCount(ds.get());
  if (dem.bandCount < 1) {
    error = "no raster bands";
    return false;
  }
  if (options.band < 1 || options.band > dem.bandCount) {
    error = "no band " + std::to_string(options.band) + " (the file has " +
            std::to_string(dem.bandCount) + ")";
    return false;
  }
  dem.band = options.band;
  GDALRasterBandH band = GDALGetRasterBand(ds.get(), options.band);
  if (!band) {
    error = gdalError("cannot access band " + std::to_string(options.band));
    return false;
  }
  dem.width = GDALGetRasterBandXSize(band);
  dem.height = GDALGetRasterBandYSize(band);
  if (dem.width <= 0 || dem.height <= 0) {
    error = "zero-size raster (" + std::to_string(dem.width) + " x " +
            std::to_string(dem.height) + ")";
    return false;
  }

  const GDALDataType type = GDALGetRasterDataType(band);
  const char* type_name = GDALGetDataTypeName(type);
  dem.sourceType = type_name ? type_name : "Unknown";

  double gt[6];
  if (GDALGetGeoTransform(ds.get(), gt) == CE_None) {
    dem.hasGeoTransform = true;
    std::copy(gt, gt + 6, dem.geoTransform);
  }
  if (const char* wkt = GDALGetProjectionRef(ds.get())) dem.projectionWkt = wkt;
  if (const char* units = GDALGetRasterUnitType(band)) dem.verticalUnits = units;
  int has_nodata = 0;
  const double nodata = GDALGetRasterNoDataValue(band, &has_nodata);
  dem.hasNodata = has_nodata != 0;
  dem.nodata = dem.hasNodata ? nodata : 0.0;
  CPLErrorReset();  // the queries above may leave a harmless "no georeferencing" message

  dem.samples.assign(static_cast<size_t>(dem.width) * static_cast<size_t>(dem.height), 0);

  if (GDALDataTypeIsComplex(type)) {
    error = "unsupported data type " + dem.sourceType + " (complex)";
    return false;
  }
  switch (type) {
    case GDT_Int16:
    case GDT_UInt16:
      return read16(band, type, dem, error);
    case GDT_Byte:
      return read8(band, isSignedByte(band), options, dem, error);
#if GDAL_VERSION_NUM >= GDAL_COMPUTE_VERSION(3, 7, 0)
    case GDT_Int8:
      return read8(band, true, options, dem, error);
#endif
    case GDT_Int32:
    case GDT_UInt32:
#if GDAL_VERSION_NUM >= GDAL_COMPUTE_VERSION(3, 5, 0)
    case GDT_Int64:
    case GDT_UInt64:
#endif
    case GDT_Float32:
    case GDT_Float64:
      return readQuantised(band, options, dem, error);
    default:
      error = "unsupported data type " + dem.sourceType;
      return false;
  }
}

}  // namespace

double Dem::sourceValue(uint16_t sample) const {
  if (quant.applied) return quant.offset + quant.step * sample;
  if (type == hfpac::SampleType::Int16) return static_cast<int16_t>(sample);
  return sample;
}

const char* sampleTypeName(hfpac::SampleType type) {
  return type == hfpac::SampleType::Int16 ? "Int16" : "UInt16";
}

bool hasGdal() { return true; }

bool readDem(const std::string& path, Dem& out, std::string& error, const ReadOptions& options) {
  out = Dem();
  error.clear();
  if (isHfrPath(path)) return readHfr(path, out, error);  // GDAL-free raw dumps (hfr.h)
  ErrorCollector collector;
  collector.warnings = &out.warnings;
  ScopedErrorHandler quiet(&collector);
  try {
    if (readImpl(path, out, error, options)) return true;
  } catch (const std::bad_alloc&) {
    error = "out of memory";
  }
  if (error.empty()) error = "read failed";
  out.samples.clear();
  out.samples.shrink_to_fit();
  return false;
}

}  // namespace demio
