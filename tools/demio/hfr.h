// hfr.h - ".hfr": a tiny GDAL-free raw raster container for demio::Dem.
//
// Lets binaries built without GDAL (HF_WITH_GDAL=OFF, e.g. for the GPU machine, which has no
// GDAL) read the same samples a GDAL build read: `hfbench dump INPUT... -o DIR` writes one .hfr
// per input, `hfterrain OUT.hfr` writes the sample terrain; demio::readDem() reads a path ending
// in ".hfr" with this code in both builds.
//
// Layout (little-endian): a header of H bytes, then width * height uint16 samples, row-major.
//   0  char[4] "HFR1"        4  u32 H (64, or more with the extension below)
//   8  i32 width             12 i32 height
//   16 u8 SampleType (0 UInt16, 1 Int16)   17 u8 hasNodata   18 u8 nodataInSamples
//   19 u8 quant.applied      20 u16 nodataSample        22 u16 reserved (0)
//   24 f64 nodata            32 f64 quant.step          40 f64 quant.offset
//   48 f64 quant.maxError    56 u64 nodataCount
// Georeferencing extension (present when H > 64; written only for a Dem that has a geotransform,
// a CRS or vertical units, so other dumps keep the plain 64-byte header):
//   64 u32 flags (bit 0: the geotransform is valid)   68 u32 reserved (0)
//   72 f64[6] geotransform (GDAL order)
//   120 u32 n, then n bytes: the CRS as WKT (Dem::projectionWkt; n = 0: none)
//   u32 m, then m bytes: vertical units (Dem::verticalUnits, e.g. "m"; m = 0: unknown)
//   zero bytes up to H, a multiple of 8 (at most kHfrMaxHeaderBytes).
#pragma once

#include <cstdio>
#include <string>

#include "demio/dem_io.h"

namespace demio {

bool isHfrPath(const std::string& path);  // ends in ".hfr" (case-insensitive)
bool readHfr(const std::string& path, Dem& out, std::string& error);
// Reads and checks the header (with the extension, if any) from `f` (positioned at the start)
// into `out` (replaced; samples stay empty). The samples follow at byte *sampleOffset (the
// header size H). Used by DemSource's windowed reads.
bool readHfrHeader(std::FILE* f, const std::string& path, Dem& out, std::string& error,
                   long* sampleOffset = nullptr);
constexpr long kHfrHeaderBytes = 64;           // the fixed part (and the whole header without
                                               // the georeferencing extension)
constexpr long kHfrMaxHeaderBytes = 1 << 20;   // bound on H when reading
// Writes atomically: to "<path>.tmp", then renamed onto `path`.
bool writeHfr(const std::string& path, const Dem& dem, std::string& error);
// Copies rows [y0, y0 + h) and columns [x0, x0 + w) of `dem` (clamped to the raster) into `out`.
void cropDem(const Dem& dem, int x0, int y0, int w, int h, Dem& out);

}  // namespace demio
