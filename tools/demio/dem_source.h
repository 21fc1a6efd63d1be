// dem_source.h - windowed reading of one band of a GDAL raster (or a mosaic of several) as
// 16-bit samples, for tools that must not hold the whole raster in memory (hfpack).
//
// A single `.hfr` input (demio/hfr.h, `hfbench dump`) is read directly, row windows with
// fseek/fread, in both builds; with HF_WITH_GDAL=OFF that is the only input DemSource takes
// (dem_source_nogdal.cpp). An .hfr carries the geotransform, CRS and vertical units of its
// source when it was written with them (hfr.h), else info() has none (the archive then gets
// sample-unit spacing); bandScale/bandOffset are always 1/0.
//
// The conversion to samples is exactly readDem()'s (dem_io.h): Int16/UInt16 as they are, Byte
// widened (grey palettes mapped), Int8 to Int16, wider integers and floats quantised to UInt16
// with 65535 = nodata. Quantised sources need the value range first: open() reads the raster
// once in strips for that (bounded memory), then readRows() quantises each window it reads.
//
// Several inputs are mosaicked with GDALBuildVRT (in memory, nothing written); aSrs / aUllr then
// assign a CRS / bounds to the mosaic as gdal_translate -a_srs / -a_ullr do (an in-memory VRT;
// for an .hfr the dump's georeferencing is replaced); tSrs finally reprojects with GDAL's warper
// (GDALAutoCreateWarpedVRT, bilinear) and maxSide downsamples. Not thread-safe: one reader per thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "demio/dem_io.h"

namespace demio {

struct SourceOptions {
  ReadOptions read;   // band, quantStep, expandGreyPalette
  std::string tSrs;   // target SRS (anything OSRSetFromUserInput takes); empty = keep the grid
  // Assigned georeferencing (gdal_translate -a_srs / -a_ullr), applied before tSrs: the CRS
  // (anything OSRSetFromUserInput takes; empty = keep the source's) and the bounds, pixel-is-area
  // corners ulx uly lrx lry in that CRS (the geotransform becomes ulx, (lrx-ulx)/W, 0, uly, 0,
  // (lry-uly)/H). Without GDAL only aUllr is available.
  std::string aSrs;
  bool aUllr = false;
  double ullr[4] = {0, 0, 0, 0};
  // Largest side in samples (0 = no limit): a larger raster (after aSrs / aUllr / tSrs) is read
  // downsampled through an in-memory VRT (gdal_translate -outsize -r average; nodata is left out
  // of the averages; the raster's overviews are used when it has them), keeping its extent: the
  // geotransform's pixel size grows by the same factor. hfview packs such a preview first so a
  // large DEM shows at once while the full pack runs. Not available for an .hfr input.
  int maxSide = 0;
  // Called during open()'s range pass with a fraction 0..1; return false to cancel.
  std::function<bool(double)> progress;
};

// -a_ullr bounds: finite, non-empty in both directions (one-line error otherwise).
bool checkUllr(const double ullr[4], std::string& error);

class DemSource {
 public:
  DemSource() = default;
  ~DemSource();
  DemSource(const DemSource&) = delete;
  DemSource& operator=(const DemSource&) = delete;

  // Opens (and mosaics / warps) the inputs. Everything of Dem except `samples` is filled in
  // info(); for quantised sources info().quant is final after open(). One-line error on failure.
  bool open(const std::vector<std::string>& paths, const SourceOptions& options,
            std::string& error);
  void close();

  const Dem& info() const { return info_; }  // samples is empty
  int width() const { return info_.width; }
  int height() const { return info_.height; }
  // SourceOptions::maxSide made open() read the raster downsampled (width() x height() is then
  // the downsampled size; sourceWidth() x sourceHeight() the size before).
  bool downsampled() const { return downsampled_; }
  int sourceWidth() const { return downsampled_ ? sourceWidth_ : info_.width; }
  int sourceHeight() const { return downsampled_ ? sourceHeight_ : info_.height; }
  std::string verticalUnits() const { return units_; }
  double bandScale() const { return scale_; }    // GDAL band scale (1 when unset)
  double bandOffset() const { return offset_; }  // GDAL band offset (0 when unset)

  // Reads rows [y0, y0 + rows) into out (rows * width samples, stride width). If valid is not
  // null it receives 1 for samples that hold data, 0 for nodata/NaN/masked ones.
  bool readRows(int y0, int rows, uint16_t* out, uint8_t* valid, std::string& error);
  // Largest |value - dequantised sample| seen so far by readRows() (quantised sources).
  double measuredQuantError() const { return measured_; }

 private:
  bool openHfr(const std::string& path, std::string& error);  // dem_source_hfr.cpp
  bool readHfrRows(int y0, int rows, uint16_t* out, uint8_t* valid, std::string& error);
  // Replaces the .hfr's georeferencing with the assigned one (wkt: aSrs as WKT, empty = keep).
  bool assignHfr(const std::string& wkt, const SourceOptions& options, std::string& error);
  std::FILE* hfr_ = nullptr;  // a single .hfr input (then no GDAL dataset is used)
  long hfrOffset_ = 0;        // where its samples start (the .hfr header size)
  void* ds_ = nullptr;      // GDALDatasetH actually read (VRT / warped VRT / the file)
  std::vector<void*> owned_;  // datasets to close, in reverse order
  void* band_ = nullptr;
  void* maskBand_ = nullptr;
  int gdalType_ = 0;
  bool signedByte_ = false;
  uint16_t lut_[256] = {};
  Dem info_;
  std::string units_;
  bool downsampled_ = false;
  int sourceWidth_ = 0, sourceHeight_ = 0;
  double scale_ = 1, offset_ = 0, measured_ = 0;
  std::vector<double> values_;
  std::vector<uint8_t> mask_, bytes_;
};

}  // namespace demio
