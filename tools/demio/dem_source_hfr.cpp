// dem_source_hfr.cpp - DemSource on a single .hfr dump (both builds; no GDAL here).
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "demio/dem_source.h"
#include "demio/hfr.h"

namespace demio {

bool DemSource::openHfr(const std::string& path, std::string& error) {
  hfr_ = std::fopen(path.c_str(), "rb");
  if (!hfr_) {
    error = path + ": " + std::strerror(errno);
    return false;
  }
  if (!readHfrHeader(hfr_, path, info_, error, &hfrOffset_)) {
    error = path + ": " + error;
    return false;
  }
  // The samples must all be there (a truncated dump is an error now, not midway).
  const long long want = hfrOffset_ + 2LL * info_.width * info_.height;
  if (std::fseek(hfr_, 0, SEEK_END) != 0 || std::ftell(hfr_) < want) {
    error = path + ": truncated .hfr file";
    return false;
  }
  units_ = info_.verticalUnits;
  scale_ = 1;
  offset_ = 0;
  measured_ = info_.quant.applied ? info_.quant.maxError : 0;
  return true;
}

bool DemSource::assignHfr(const std::string& wkt, const SourceOptions& o, std::string& error) {
  if (!wkt.empty()) info_.projectionWkt = wkt;
  if (!o.aUllr) return true;
  if (!checkUllr(o.ullr, error)) return false;
  info_.hasGeoTransform = true;
  const double gt[6] = {o.ullr[0], (o.ullr[2] - o.ullr[0]) / info_.width, 0.0,
                        o.ullr[1], 0.0, (o.ullr[3] - o.ullr[1]) / info_.height};
  std::copy(gt, gt + 6, info_.geoTransform);
  return true;
}

bool checkUllr(const double ullr[4], std::string& error) {
  for (int i = 0; i < 4; ++i)
    if (!std::isfinite(ullr[i])) {
      error = "-a_ullr: the bounds must be finite numbers";
      return false;
    }
  if (ullr[0] == ullr[2] || ullr[1] == ullr[3]) {
    error = "-a_ullr: empty bounds (ulx = lrx or uly = lry)";
    return false;
  }
  return true;
}

bool DemSource::readHfrRows(int y0, int rows, uint16_t* out, uint8_t* valid, std::string& error) {
  if (y0 < 0 || rows < 1 || y0 + rows > info_.height) {
    error = "readRows: rows out of range";
    return false;
  }
  const size_t n = size_t(rows) * size_t(info_.width);
  const long long at = hfrOffset_ + 2LL * info_.width * y0;
  if (std::fseek(hfr_, long(at), SEEK_SET) != 0 || std::fread(out, 2, n, hfr_) != n) {
    error = info_.path + ": read failed at rows " + std::to_string(y0) + ".." + std::to_string(y0 + rows - 1);
    return false;
  }
  if (valid) {
    if (info_.nodataInSamples)
      for (size_t i = 0; i < n; ++i) valid[i] = out[i] != info_.nodataSample;
    else
      std::fill(valid, valid + n, uint8_t(1));
  }
  return true;
}

}  // namespace demio
