// dem_io_nogdal.cpp - dem_io.h without GDAL (HF_WITH_GDAL=OFF): only .hfr files (hfr.h).
#include "demio/dem_io.h"
#include "demio/hfr.h"

namespace demio {

double Dem::sourceValue(uint16_t sample) const {
  const double v = type == hfpac::SampleType::Int16 ? double(int16_t(sample)) : double(sample);
  return quant.applied ? quant.offset + v * quant.step : v;
}

const char* sampleTypeName(hfpac::SampleType type) {
  return type == hfpac::SampleType::Int16 ? "Int16" : "UInt16";
}

bool hasGdal() { return false; }

bool readDem(const std::string& path, Dem& out, std::string& error, const ReadOptions&) {
  if (isHfrPath(path)) return readHfr(path, out, error);
  error = "built without GDAL (HF_WITH_GDAL=OFF): only .hfr files can be read";
  return false;
}

}  // namespace demio
