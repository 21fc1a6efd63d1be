// info.cpp - hfpack info: what an archive holds (header, levels, ratios, b histogram).
#include <algorithm>
#include <cinttypes>

#include "hfpack.h"

namespace hfpack {

bool info(const std::string& path, FILE* out, std::string& error) {
  hfa::ArchiveReader r;
  if (!r.open(path, error)) return false;
  const hfa::Header& h = r.header();
  const int p = h.tileSize();
  fprintf(out, "%s: hfpack archive version %d, %" PRIu64 " bytes\n", path.c_str(), int(hfa::kVersion), r.fileSize());
  fprintf(out, "  extent      %u x %u samples (%s), tiles %d x %d, %d levels, codec %s%s%s\n", h.width, h.height,
          h.sampleType == hfpac::SampleType::Int16 ? "Int16" : "UInt16", p, p, h.levels, hfa::codecName(h.codec),
          h.codecOptions.empty() ? "" : " ", h.codecOptions.c_str());
  if (h.flags & hfa::kFlagGeoTransform)
    fprintf(out, "  geotransform %.12g %.12g %.12g %.12g %.12g %.12g\n", h.geoTransform[0], h.geoTransform[1],
            h.geoTransform[2], h.geoTransform[3], h.geoTransform[4], h.geoTransform[5]);
  std::string crs = h.crsWkt.substr(0, h.crsWkt.find(','));
  fprintf(out, "  crs         %s%s\n", h.crsWkt.empty() ? "(none)" : crs.c_str(), h.crsWkt.empty() ? "" : ",...]");
  fprintf(out, "  spacing     %.6g x %.6g %s%s\n", h.spacingX, h.spacingY,
          (h.flags & hfa::kFlagSpacingKnown) ? "m" : "(sample units: no CRS)",
          (h.flags & hfa::kFlagGeographic) ? " (geographic CRS: metres at the centre)" : "");
  {
    // The height range from the index (nodata excluded): what the heights mean, at a glance.
    bool any = false;
    double lo = 0, hi = 0;
    for (const hfa::TileEntry& e : r.tiles()) {
      if (e.level != 0) continue;
      const double a = h.verticalOffset + h.verticalScale * e.minSample, b = h.verticalOffset + h.verticalScale * e.maxSample;
      lo = any ? std::min(lo, std::min(a, b)) : std::min(a, b);
      hi = any ? std::max(hi, std::max(a, b)) : std::max(a, b);
      any = true;
    }
    fprintf(out, "  heights     height = %.9g + %.9g * sample %s, range %.6g .. %.6g\n", h.verticalOffset,
            h.verticalScale, h.verticalUnits.empty() ? "(units unknown, metres assumed)" : h.verticalUnits.c_str(),
            lo, hi);
  }
  if (h.flags & hfa::kFlagQuantised)
    fprintf(out, "  quantised   float/wide source quantised to 16 bits: |height - source| <= %.6g\n", h.quantError);
  else
    fprintf(out, "  lossless    integer source stored exactly\n");
  if (h.flags & (hfa::kFlagNodataFilled | hfa::kFlagNodataKept))
    fprintf(out, "  nodata      sample %d: %s, %" PRIu64 " samples filled, %" PRIu64 " valid source samples\n",
            h.sampleType == hfpac::SampleType::Int16 ? int(int16_t(h.nodata)) : int(h.nodata),
            (h.flags & hfa::kFlagNodataFilled) ? "filled" : "kept", h.filledSamples, h.sourceValidSamples);
  fprintf(out, "  level  grid        tiles   filled       payload    ratio   max LOD error (sample units, k=1..n)\n");
  uint64_t total_raw = 0, total_payload = 0;
  uint64_t bhist[18] = {}, flat = 0, stored = 0, per_area = 0;
  for (int l = 0; l < h.levels; ++l) {
    size_t first, count;
    r.levelRange(l, first, count);
    uint64_t payload = 0, filled_tiles = 0;
    std::vector<float> worst(size_t(h.tileLog) + 1, 0.f);
    for (size_t i = first; i < first + count; ++i) {
      const hfa::TileEntry& e = r.tiles()[i];
      payload += e.size;
      filled_tiles += (e.flags & hfa::kTileFilled) != 0;
      for (size_t k = 0; k < worst.size(); ++k) worst[k] = std::max(worst[k], e.lodError[k]);
    }
    const uint64_t raw = uint64_t(count) * uint64_t(p) * uint64_t(p) * 2;
    total_raw += raw;
    total_payload += payload;
    fprintf(out, "  %5d %5u x %-5u %6zu %8" PRIu64 " %13" PRIu64 " %8.3f  ", l, h.tilesX(l), h.tilesY(l), count,
            filled_tiles, payload, payload ? double(raw) / double(payload) : 0.0);
    for (size_t k = 1; k < worst.size(); ++k) fprintf(out, "%s%.4g", k == 1 ? "" : " ", double(worst[k]));
    fprintf(out, "\n");
  }
  for (size_t i = 0; i < r.tiles().size(); ++i) {
    const hfa::TileEntry& e = r.tiles()[i];
    if (e.codec != hfa::Codec::Hfpac) continue;
    const uint8_t* data;
    size_t size;
    std::string e2;
    if (!r.payload(i, data, size, e2)) continue;
    hfpac::PatchInfo pi;
    if (hfpac::readInfo(data, size, pi) != hfpac::Status::Ok) continue;
    if (pi.flat) ++flat;
    else if (pi.stored) ++stored;
    else if (pi.perAreaBits) ++per_area;
    else ++bhist[pi.uniformBits];
  }
  fprintf(out, "  total %zu tiles, %" PRIu64 " payload bytes, ratio %.3f\n", r.tiles().size(), total_payload,
          total_payload ? double(total_raw) / double(total_payload) : 0.0);
  if (h.codec == hfa::Codec::Auto) {
    uint64_t hfan = 0;
    for (const hfa::TileEntry& e : r.tiles()) hfan += e.codec == hfa::Codec::Hfan;
    fprintf(out, "  auto        %" PRIu64 " tiles hfpac, %" PRIu64 " hfan\n", uint64_t(r.tiles().size()) - hfan, hfan);
  }
  if (h.codec == hfa::Codec::Hfpac || h.codec == hfa::Codec::Auto) {
    fprintf(out, "  b histogram (%stiles):", h.codec == hfa::Codec::Auto ? "hfpac " : "");
    for (int b = 0; b <= 16; ++b)
      if (bhist[b]) fprintf(out, " b=%d:%" PRIu64, b, bhist[b]);
    fprintf(out, " per-area-b:%" PRIu64 " flat:%" PRIu64 " stored:%" PRIu64 "\n", per_area, flat, stored);
  }
  if (!r.hasImagery()) {
    fprintf(out, "  imagery     none\n");
    return true;
  }
  const hfa::ImageryHeader& im = r.imagery();
  fprintf(out, "  imagery     %d levels (%d finer than the heights), %d x %d texel tiles (border %d, content %d), %s",
          im.levels, im.finerLevels, im.tileSize, im.tileSize, im.border, im.content(), hfa::imageryCodecName(im.codec));
  if (im.codec == hfa::ImageryCodec::Jpeg) fprintf(out, " quality %d, shared tables %zu bytes", im.quality, im.jpegTables.size());
  if (im.codec == hfa::ImageryCodec::Bc1)
    fprintf(out, " (BC1 mip chain of %d levels, %" PRIu64 " bytes per tile)", hfa::imageryBc1Levels(im.tileSize),
            hfa::imageryBc1ChainBytes(im.tileSize));
  fprintf(out, ", source %.4g texels per sample%s\n", im.texelsPerSample,
          (im.flags & hfa::kImageryUnreferenced) ? ", not georeferenced (stretched over the DEM)" : "");
  fprintf(out, "  imagery level  grid        tiles  partial       bytes  bits/texel\n");
  const double texelsPerTile = double(im.tileSize) * double(im.tileSize);
  uint64_t all_bytes = 0;
  for (int k = im.levels - 1; k >= 0; --k) {
    size_t first, count;
    r.imageryLevelRange(k, first, count);
    uint64_t bytes = 0, partial = 0;
    for (size_t i = first; i < first + count; ++i) {
      bytes += r.imageryTiles()[i].size;
      partial += (r.imageryTiles()[i].flags & hfa::kImageryPartial) != 0;
    }
    all_bytes += bytes;
    fprintf(out, "  %13d %5u x %-5u %6zu %8" PRIu64 " %11" PRIu64 " %11.3f\n", k, hfa::imageryTilesX(h, im, k),
            hfa::imageryTilesY(h, im, k), count, partial, bytes, count ? 8.0 * double(bytes) / (double(count) * texelsPerTile) : 0.0);
  }
  const size_t n = r.imageryTiles().size();
  fprintf(out, "  imagery total %zu tiles, %" PRIu64 " bytes, %.3f bits/texel\n", n, all_bytes,
          n ? 8.0 * double(all_bytes) / (double(n) * texelsPerTile) : 0.0);
  return true;
}

}  // namespace hfpack
