// dem_io.h - read one band of any GDAL-readable raster as 16-bit samples for the HFPaC codec.
//
// Used by the offline tools (hfbench, and the packer's reading side); the codec itself never
// sees GDAL (DESIGN.md). Every format GDAL opens works: GeoTIFF, SRTM .hgt, USGS ASCII .dem,
// netCDF/GMT grids, 8/16-bit PNG, JPEG, VRT mosaics, /vsi paths.
//
// How source types become codec samples (Dem::type, Dem::samples):
//   Int16, UInt16    stored as they are (bit patterns), lossless.
//   Byte             widened to UInt16, values unchanged (a grey palette is mapped to its grey
//                    level, see ReadOptions::expandGreyPalette), lossless.
//   Int8             (GDAL >= 3.7, or Byte with PIXELTYPE=SIGNEDBYTE) widened to Int16, lossless.
//   Int32, UInt32, Int64, UInt64, Float32, Float64
//                    quantised to UInt16: q = round((value - offset) / step), q in 0..65534,
//                    value ~ offset + q * step. offset = smallest valid value. step = the finest
//                    step that fits, (max - min) / 65534, unless ReadOptions::quantStep is given;
//                    integer-valued data (any of these types) whose range spans at most 65535
//                    values gets step 1, which is lossless. Nodata (and NaN) samples become 65535,
//                    a value no valid sample uses, so they stay identifiable.
//                    Dem::quant says what was done and bounds the error.
//   complex types    not supported (error).
//
// Contract: readDem() never throws (std::bad_alloc is caught and reported) and never prints:
// GDAL's own error printing is silenced for the call; GDAL warnings are collected in
// Dem::warnings and a failure is one line in `error`. It reads exactly the raster
// (width x height of the chosen band), nothing more. Safe to call from several threads
// (each call uses its own dataset handle; GDAL's error handler stack is per thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "codec/hfpac.h"

namespace demio {

struct ReadOptions {
  int band = 1;  // 1-based band index; band 1 of a multi-band file (e.g. RGB JPEG) by default
  // Quantisation step for types that do not fit 16 bits, in source units. 0 = automatic (see
  // the file comment). A step that cannot fit the data range into 0..65534 is an error.
  double quantStep = 0;
  // A Byte band with a colour table whose every entry is grey (r == g == b) is mapped through
  // the table to its grey level (the usual "palette PNG heightmap"). Off: the raw indices.
  bool expandGreyPalette = true;
};

struct Quantisation {
  bool applied = false;     // samples are q with value ~ offset + q * step; 65535 = nodata
  double step = 1.0;        // source units per sample unit
  double offset = 0.0;      // source value of q = 0 (the smallest valid value)
  double maxError = 0.0;    // bound on |value - (offset + q * step)|: step / 2, or 0 if exact
  double measuredMaxError = 0.0;  // the largest error actually made (<= maxError up to rounding)
  double sourceMin = 0.0, sourceMax = 0.0;  // range of the valid source values
  bool integerValued = false;  // every valid source value is an integer
};

struct Dem {
  int width = 0, height = 0;
  hfpac::SampleType type = hfpac::SampleType::UInt16;
  std::vector<uint16_t> samples;  // width * height, row-major, stride = width; bit patterns
                                  // (Int16 samples are their uint16_t two's complement)

  std::string path;
  std::string driver;          // GDAL driver short name ("GTiff", "SRTMHGT", "VRT", ...)
  std::string sourceType;      // GDAL data type name of the band ("Int16", "Float32", ...)
  int band = 1, bandCount = 0;
  bool widened = false;        // 8-bit source stored as 16-bit samples (values unchanged)
  bool paletteMapped = false;  // grey colour table applied (ReadOptions::expandGreyPalette)

  bool hasGeoTransform = false;
  double geoTransform[6] = {0.0, 1.0, 0.0, 0.0, 0.0, 1.0};  // GDAL order
  std::string projectionWkt;   // empty when the file has none
  std::string verticalUnits;   // the band's unit ("m", "ft"); empty when unknown

  bool hasNodata = false;
  double nodata = 0.0;             // the band's nodata value in source units, as GDAL reports it
  bool nodataInSamples = false;    // nodata samples carry the bit pattern nodataSample
  uint16_t nodataSample = 0;       // e.g. 0x8000 for Int16 -32768; 65535 when quantised
  size_t nodataCount = 0;          // samples that are nodata (or NaN)

  Quantisation quant;
  std::vector<std::string> warnings;  // GDAL warnings raised while reading (one line each)

  // Source-unit value of a stored sample (ignores nodata).
  double sourceValue(uint16_t sample) const;
};

// "UInt16" / "Int16".
const char* sampleTypeName(hfpac::SampleType type);

// True when built with GDAL (HF_WITH_GDAL=ON). Without it, readDem() reads only .hfr files
// (hfr.h); with it, .hfr files are read by the same code and everything else through GDAL.
bool hasGdal();

// Reads band options.band of `path` into `out` (replaced). Returns false with a one-line message
// in `error` (no "Error:" prefix, no path: the caller adds what it needs) when the file cannot be
// opened, has no such band, has a zero size, an unsupported type, cannot be quantised with the
// given step, or does not fit in memory; `out` is then unspecified.
bool readDem(const std::string& path, Dem& out, std::string& error,
             const ReadOptions& options = {});

}  // namespace demio
