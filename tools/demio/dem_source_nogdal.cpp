// dem_source_nogdal.cpp - DemSource without GDAL (HF_WITH_GDAL=OFF): one .hfr input only.
#include "demio/dem_source.h"
#include "demio/hfr.h"

namespace demio {

DemSource::~DemSource() { close(); }

void DemSource::close() {
  if (hfr_) std::fclose(hfr_);
  hfr_ = nullptr;
  info_ = Dem();
  measured_ = 0;
  downsampled_ = false;
}

bool DemSource::open(const std::vector<std::string>& paths, const SourceOptions& options,
                     std::string& error) {
  close();
  if (paths.size() != 1 || !isHfrPath(paths[0])) {
    error = "built without GDAL (HF_WITH_GDAL=OFF): the only input is one .hfr dump (hfbench dump)";
    return false;
  }
  if (!options.tSrs.empty()) {
    error = "built without GDAL (HF_WITH_GDAL=OFF): --t_srs is not available";
    return false;
  }
  if (!options.aSrs.empty()) {
    error = "built without GDAL (HF_WITH_GDAL=OFF): -a_srs is not available";
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
  return openHfr(paths[0], error) && assignHfr("", options, error);
}

bool DemSource::readRows(int y0, int rows, uint16_t* out, uint8_t* valid, std::string& error) {
  if (!hfr_) {
    error = "readRows: no source open";
    return false;
  }
  return readHfrRows(y0, rows, out, valid, error);
}

}  // namespace demio
