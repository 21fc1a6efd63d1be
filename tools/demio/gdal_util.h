// gdal_util.h - GDAL helpers shared by dem_io.cpp, dem_source.cpp and hfpack's GDAL code.
#pragma once

#include <cpl_error.h>
#include <gdal.h>

#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "demio/dem_io.h"

namespace demio {
namespace detail {

// GDAL reports errors through a per-thread handler stack. We push our own handler for the
// duration of a read so that nothing is printed (same effect as CPLQuietErrorHandler) and
// warnings are kept for the caller; failures are still available via CPLGetLastErrorMsg().
struct ErrorCollector {
  std::vector<std::string>* warnings = nullptr;
};

inline std::string oneLine(const char* msg) {
  std::string s = msg ? msg : "";
  for (char& c : s)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

inline void CPL_STDCALL collectErrors(CPLErr error_class, CPLErrorNum, const char* msg) {
  auto* collector = static_cast<ErrorCollector*>(CPLGetErrorHandlerUserData());
  if (collector && collector->warnings && error_class == CE_Warning)
    collector->warnings->push_back(oneLine(msg));
}

class ScopedErrorHandler {
 public:
  explicit ScopedErrorHandler(ErrorCollector* collector) {
    CPLPushErrorHandlerEx(collectErrors, collector);
    CPLErrorReset();
  }
  ~ScopedErrorHandler() { CPLPopErrorHandler(); }
  ScopedErrorHandler(const ScopedErrorHandler&) = delete;
  ScopedErrorHandler& operator=(const ScopedErrorHandler&) = delete;
};

// The message of the last GDAL failure, or `fallback` when GDAL did not say anything.
inline std::string gdalError(const std::string& fallback) {
  std::string msg = oneLine(CPLGetLastErrorMsg());
  if (msg.empty()) return fallback;
  return fallback + ": " + msg;
}

class DatasetHandle {
 public:
  explicit DatasetHandle(GDALDatasetH ds) : ds_(ds) {}
  ~DatasetHandle() {
    if (ds_) GDALClose(ds_);
  }
  DatasetHandle(const DatasetHandle&) = delete;
  DatasetHandle& operator=(const DatasetHandle&) = delete;
  GDALDatasetH get() const { return ds_; }

 private:
  GDALDatasetH ds_;
};

inline void registerDriversOnce() {
  static std::once_flag once;
  std::call_once(once, [] { GDALAllRegister(); });
}

inline bool isSignedByte(GDALRasterBandH band) {
  const char* pixel_type = GDALGetMetadataItem(band, "PIXELTYPE", "IMAGE_STRUCTURE");
  return pixel_type && std::strcmp(pixel_type, "SIGNEDBYTE") == 0;
}

// The 256-entry table that widens a Byte band to 16 bits (grey palettes mapped, see dem_io.h).
void buildByteLut(GDALRasterBandH band, bool is_signed, const ReadOptions& options,
                  uint16_t lut[256], bool& palette_mapped, std::vector<std::string>& warnings);

// Chooses offset/step/maxError for valid values in [lo, hi] (rules in dem_io.h); false with a
// message when quant_step cannot fit the range.
bool chooseQuantisation(double lo, double hi, bool integer_valued, double quant_step,
                        Quantisation& q, std::string& error);

}  // namespace detail

// `user` (anything OSRSetFromUserInput takes) as WKT; false with "<option> <user>: not a
// spatial reference GDAL understands".
bool srsToWkt(const std::string& user, const char* option, std::string& wkt, std::string& error);

// gdal_translate -of VRT [-a_srs srs] [-a_ullr ullr[0..3]] of ds, in memory (nothing written):
// the same raster with the assigned CRS / pixel-is-area bounds. Null with a one-line error.
// The caller closes the result (before ds).
GDALDatasetH assignGeoreferencing(GDALDatasetH ds, const std::string& srs, const double* ullr, std::string& error);

}  // namespace demio
