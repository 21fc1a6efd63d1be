// pack.cpp - hfpack::pack(): source -> pyramid -> per-tile statistics and encoding -> archive.
//
// Encoding (TileEncoder, encode.h) runs on the CPU threads, one row of tiles at a time, or, with
// --device cuda in a build with the GPU codec (HFPACK_CUDA), on the GPU: tiles are collected
// over rows and levels into batches of PackOptions::gpuBatch and encoded with one
// hfgpu::BatchEncoder::encodeHost call each, while the CPU threads compute the index statistics
// of the same batch. The GPU streams are byte-identical to hfpac::encode's and tiles are added
// in the same order, so the archive is byte-identical to a CPU pack.
#ifdef HFPACK_GDAL
#include <ogr_srs_api.h>
#endif
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sys/stat.h>

#include "encode.h"
#include "hfpack.h"
#include "imagery/imagery.h"
#include "part.h"
#include "pyramid.h"

namespace hfpack {

namespace {

// Metres per degree of latitude and longitude at latitude phi (WGS 84 series).
void metresPerDegree(double phi_deg, double& m_lat, double& m_lon) {
  const double phi = phi_deg * M_PI / 180.0;
  m_lat = 111132.92 - 559.82 * std::cos(2 * phi) + 1.175 * std::cos(4 * phi) - 0.0023 * std::cos(6 * phi);
  m_lon = 111412.84 * std::cos(phi) - 93.5 * std::cos(3 * phi) + 0.118 * std::cos(5 * phi);
}

// What setGeoreferencing needs to know of a CRS: geographic (in degrees), or projected with
// `unit` metres per CRS unit; neither = unknown.
struct CrsKind {
  bool geographic = false, projected = false;
  double unit = 0;
};

#ifdef HFPACK_GDAL
CrsKind crsKind(const std::string& wkt) {
  CrsKind k;
  OGRSpatialReferenceH srs = OSRNewSpatialReference(wkt.c_str());
  if (!srs) return k;
  k.geographic = OSRIsGeographic(srs) != 0;
  k.projected = OSRIsProjected(srs) != 0;
  if (k.projected) k.unit = OSRGetLinearUnits(srs, nullptr);
  OSRDestroySpatialReference(srs);
  return k;
}
#else
// Without GDAL (an .hfr source that carries a CRS: hfbench dump, hfterrain) the WKT text itself
// is read: WKT1 as GDAL exports it, GEOGCS[...] in degrees, or PROJCS[...] whose unit is its own
// UNIT["name",factor] child (the GEOGCS nested in it has another). Anything else (WKT2, compound
// CRSs, a geographic CRS not in degrees) is unknown: spacing in CRS units, not marked as metres.
CrsKind crsKind(const std::string& wkt) {
  CrsKind k;
  const size_t begin = wkt.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return k;
  const bool geog = wkt.compare(begin, 7, "GEOGCS[") == 0;
  const bool proj = wkt.compare(begin, 7, "PROJCS[") == 0;
  if (!geog && !proj) return k;
  int depth = 0;
  bool quoted = false;
  for (size_t i = begin; i < wkt.size(); ++i) {
    const char c = wkt[i];
    if (c == '"') quoted = !quoted;
    if (quoted) continue;
    if (c == '[' || c == '(') ++depth;
    if (c == ']' || c == ')') --depth;
    if (depth != 1 || wkt.compare(i, 6, ",UNIT[") != 0) continue;
    // ,UNIT["name",factor ...
    const size_t comma = wkt.find(',', wkt.find('"', wkt.find('"', i + 6) + 1));
    if (comma == std::string::npos) return k;
    char* end = nullptr;
    const double factor = std::strtod(wkt.c_str() + comma + 1, &end);
    if (end == wkt.c_str() + comma + 1 || !(factor > 0) || !std::isfinite(factor)) return k;
    if (geog) k.geographic = std::fabs(factor - M_PI / 180.0) < 1e-12;  // degrees only
    else {
      k.projected = true;
      k.unit = factor;
    }
    return k;
  }
  return k;
}
#endif

void setGeoreferencing(const demio::Dem& d, hfa::Header& h) {
  h.crsWkt = d.projectionWkt;
  if (d.hasGeoTransform) {
    h.flags |= hfa::kFlagGeoTransform;
    std::copy(d.geoTransform, d.geoTransform + 6, h.geoTransform);
  }
  const double gx = d.hasGeoTransform ? std::hypot(d.geoTransform[1], d.geoTransform[4]) : 1.0;
  const double gy = d.hasGeoTransform ? std::hypot(d.geoTransform[2], d.geoTransform[5]) : 1.0;
  h.spacingX = gx;
  h.spacingY = gy;
  if (d.projectionWkt.empty() || !d.hasGeoTransform) return;
  const CrsKind crs = crsKind(d.projectionWkt);
  if (crs.geographic) {
    h.flags |= hfa::kFlagGeographic | hfa::kFlagSpacingKnown;
    const double* g = d.geoTransform;
    const double lat = g[3] + g[4] * d.width / 2.0 + g[5] * d.height / 2.0;
    double m_lat, m_lon;
    metresPerDegree(lat, m_lat, m_lon);
    h.spacingX = gx * m_lon;
    h.spacingY = gy * m_lat;
  } else if (crs.projected && crs.unit > 0) {
    h.flags |= hfa::kFlagSpacingKnown;
    h.spacingX = gx * crs.unit;
    h.spacingY = gy * crs.unit;
  }
}

// The plan of a sharded pack (part.h): the header and everything else a part depends on.
Plan packPlan(const PackOptions& o, const hfa::Header& h, const demio::DemSource& source, int split,
              bool keepNodata) {
  Plan p;
  p.header = h;
  p.shards = o.shards;
  p.split = split;
  p.segment = o.segment;
  p.bits = o.bits;
  p.keepNodata = keepNodata;
  p.nodataSample = source.info().nodataSample;
  p.bandScale = source.bandScale();
  p.quantMaxError = source.info().quant.maxError;
  // The inputs: canonical path, size and modification time (other parts must read the same files).
  for (size_t i = 0; i < o.inputs.size(); ++i) {
    std::error_code ec;
    std::string id = std::filesystem::weakly_canonical(o.inputs[i], ec).string();
    if (ec) id = o.inputs[i];
    struct stat st {};
    if (::stat(o.inputs[i].c_str(), &st) == 0)
      id += "|" + std::to_string(st.st_size) + "|" + std::to_string(st.st_mtim.tv_sec) + "." +
            std::to_string(st.st_mtim.tv_nsec);
    p.extra.emplace_back("input." + std::to_string(i), id);
  }
  char buf[64];
  auto num = [&](double v) {
    snprintf(buf, sizeof buf, "%a", v);
    return std::string(buf);
  };
  p.extra.emplace_back("option.band", std::to_string(o.band));
  p.extra.emplace_back("option.t_srs", o.tSrs);
  p.extra.emplace_back("option.a_srs", o.aSrs);
  p.extra.emplace_back("option.a_ullr", o.aUllr ? num(o.ullr[0]) + "," + num(o.ullr[1]) + "," + num(o.ullr[2]) +
                                                      "," + num(o.ullr[3])
                                                : "");
  p.extra.emplace_back("option.max_size", std::to_string(o.maxSide));
  p.extra.emplace_back("option.levels", std::to_string(o.levels));
  p.extra.emplace_back("option.vertical_scale", num(o.verticalScale));
  p.extra.emplace_back("option.vertical_offset", num(o.verticalOffset));
  p.extra.emplace_back("option.spacing", num(o.spacingX) + "," + num(o.spacingY));
  p.extra.emplace_back("option.nodata", o.fillNodata ? "fill" : "keep");
  return p;
}

}  // namespace

long peakRssKiB() {
  struct rusage ru;
  return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : 0;
}

std::string human(double bytes) {
  char buf[64];
  if (bytes >= 1 << 20) snprintf(buf, sizeof buf, "%.2f MiB", bytes / (1 << 20));
  else if (bytes >= 1 << 10) snprintf(buf, sizeof buf, "%.1f KiB", bytes / (1 << 10));
  else snprintf(buf, sizeof buf, "%.0f B", bytes);
  return buf;
}

bool pack(const PackOptions& o, PackResult& result, std::string& error) {
  const auto t0 = std::chrono::steady_clock::now();
  result = PackResult();
  // ---- options ----
  int tile_log = 0;
  while (tile_log <= hfa::kMaxTileLog && (1 << tile_log) + 1 != o.patch) ++tile_log;
  if (tile_log < hfa::kMinTileLog || tile_log > hfa::kMaxTileLog) {
    error = "--patch " + std::to_string(o.patch) + ": must be 2^n + 1 with n in 1..12 (3, 5, 9, ..., 129, ..., 4097)";
    return false;
  }
  if (!checkEncodeOptions(o.segment, o.bits, o.device, o.gpuBatch, error)) return false;
  if (!(o.verticalScale >= 0) || !std::isfinite(o.verticalScale)) {
    error = "--vertical-scale must be a positive number";
    return false;
  }
  if (!std::isfinite(o.verticalOffset)) {
    error = "--vertical-offset must be a finite number";
    return false;
  }
  if (!(o.spacingX >= 0) || !(o.spacingY >= 0) || !std::isfinite(o.spacingX) || !std::isfinite(o.spacingY) ||
      (o.spacingX == 0 && o.spacingY > 0)) {
    error = "--spacing must be X or X,Y with positive numbers of metres";
    return false;
  }
  if (o.output.empty()) {
    error = "no output file (-o OUT.hfa)";
    return false;
  }
  if (!checkImageryOptions(o.imagery, error)) return false;
  const bool sharded = o.shards > 0 || o.shard > 0;
  if (sharded) {
    if (o.shards < 1 || o.shards > kMaxShards || o.shard < 1 || o.shard > o.shards) {
      error = "--shard " + std::to_string(o.shard) + "/" + std::to_string(o.shards) +
              ": must be I/N with N in 1.." + std::to_string(kMaxShards) + " and I in 1..N (shards count from 1)";
      return false;
    }
    if (!o.imagery.inputs.empty()) {
      error = "--imagery cannot be packed sharded (--shard): pack an archive with imagery on one machine";
      return false;
    }
  }
  const int threads = threadCount(o.threads);

  // ---- source ----
  demio::DemSource source;
  demio::SourceOptions so;
  so.read.band = o.band;
  so.read.quantStep = o.verticalScale;
  so.tSrs = o.tSrs;
  so.maxSide = o.maxSide;
  so.aSrs = o.aSrs;
  so.aUllr = o.aUllr;
  std::copy(o.ullr, o.ullr + 4, so.ullr);
  if (o.progress) so.progress = [&](double f) { return o.progress(0.1 * f, "range"); };
  if (!source.open(o.inputs, so, error)) return false;
  const demio::Dem& d = source.info();
  if (d.width > (1 << 24) || d.height > (1 << 24) || uint64_t(d.width) * uint64_t(d.height) > (uint64_t(1) << 38)) {
    error = "absurd raster size " + std::to_string(d.width) + " x " + std::to_string(d.height) +
            " (limit 16777216 per side and 2^38 samples)";
    return false;
  }
  const bool quantised = d.quant.applied;
  if (o.spacingX > 0 && d.hasGeoTransform) {
    error = "--spacing: the input is georeferenced (its geotransform gives the spacing); --spacing is for "
            "rasters without one (to change the bounds use -a_ullr)";
    return false;
  }

  hfa::Header h;
  h.tileLog = tile_log;
  h.codec = o.codec;
  h.sampleType = d.type;
  h.width = uint32_t(d.width);
  h.height = uint32_t(d.height);
  const int natural = hfa::Header::naturalLevels(h.width, h.height, tile_log);
  if (o.levels < 0 || o.levels > natural) {
    error = "--levels " + std::to_string(o.levels) + ": must be 1.." + std::to_string(natural) +
            " for this raster and tile size";
    return false;
  }
  h.levels = o.levels > 0 ? o.levels : natural;
  setGeoreferencing(d, h);
  h.verticalUnits = source.verticalUnits();
  if (o.spacingX > 0) {  // an unreferenced raster: metres per sample, still no geotransform
    h.flags |= hfa::kFlagSpacingKnown;
    h.spacingX = o.spacingX;
    h.spacingY = o.spacingY > 0 ? o.spacingY : o.spacingX;
  }
  // height = offset + scale x sample (PackOptions::verticalScale says why the two cases differ).
  if (quantised) {
    h.flags |= hfa::kFlagQuantised;
    h.verticalScale = source.bandScale() * d.quant.step;
    h.verticalOffset = o.verticalOffset + source.bandOffset() + source.bandScale() * d.quant.offset;
    h.quantError = source.bandScale() * d.quant.maxError;
  } else {
    const double m = o.verticalScale > 0 ? o.verticalScale : 1.0;
    h.verticalScale = m * source.bandScale();
    h.verticalOffset = o.verticalOffset + m * source.bandOffset();
  }
  if (!(std::fabs(h.verticalScale) > 0) || !std::isfinite(h.verticalScale) || !std::isfinite(h.verticalOffset)) {
    error = "vertical scale/offset out of range (scale " + std::to_string(h.verticalScale) + ", offset " +
            std::to_string(h.verticalOffset) + ")";
    return false;
  }
  const bool keep_nodata = !o.fillNodata && d.nodataInSamples;
  if (d.nodataInSamples) {
    h.nodata = d.nodataSample;
    h.flags |= o.fillNodata ? hfa::kFlagNodataFilled : hfa::kFlagNodataKept;
  }
  h.codecOptions = codecOptionsText(o.codec, o.segment, o.bits);

  // ---- imagery: placed, measured and checked before any tile is made ----
  const bool withImagery = !o.imagery.inputs.empty();
  hfa::ImageryHeader im;
  if (withImagery) {
    im.codec = o.imagery.codec;
    im.tileSize = himg::kTileSize;
    im.border = himg::kTileBorder;
    im.finerLevels = -1;  // chosen by the warper from the imagery's resolution
    im.quality = im.codec == hfa::ImageryCodec::Jpeg ? o.imagery.quality : 0;
    ImageryWarper probe;
    if (!probe.open(o.imagery, h, im, -1, result.imageryPlan, error)) return false;
    im.finerLevels = result.imageryPlan.finerLevels;
    im.flags = result.imageryPlan.unreferenced ? uint32_t(hfa::kImageryUnreferenced) : 0u;
    im.texelsPerSample = result.imageryPlan.texelsPerSample;
    if (im.codec == hfa::ImageryCodec::Jpeg) im.jpegTables = himg::makeJpegTables(im.quality);
    if (o.out)
      for (const std::string& w : result.imageryPlan.warnings) fprintf(o.out, "Warning: %s\n", w.c_str());
  }

  // ---- device: --device cuda falls back to the CPU, with a note, when it cannot be used ----
  TileEncoder encoder(o.codec, encodeOptions(o.codec, o.segment, o.bits, keep_nodata, d.nodataSample), d.type,
                      h.tileSize(), threads, o.device, [&](const std::string& note) {
                        result.deviceNote = note;
                        if (o.out) fprintf(o.out, "Note: %s\n", note.c_str());
                      });

  // ---- pyramid -> tiles -> archive (sharded: this shard's subtrees -> part) ----
  hfa::ArchiveWriter writer;
  PartWriter part;
  ShardLayout layout;
  if (sharded) layout = shardLayout(h, o.shard, o.shards);
  const int p = h.tileSize();
  const size_t tile_samples = size_t(p) * size_t(p);
  result.perLevel.assign(size_t(h.levels), LevelSummary());
  std::string emit_error;
  std::vector<TileKey> heightTiles;  // what was written, for the imagery tiles
  // Statistics, encoding and writing of a batch of tiles, in order.
  auto encodeBatch = [&](std::vector<Tile>& tiles) -> bool {
    const auto b0 = std::chrono::steady_clock::now();
    const size_t n = tiles.size();
    std::vector<hfa::TileStats> stats(n);
    std::vector<const uint16_t*> samples(n);
    for (size_t i = 0; i < n; ++i) samples[i] = tiles[i].samples.data();
    TileEncoder::Batch batch;
    encoder.encode(samples, [&](size_t i) {
      hfa::computeTileStats(tiles[i].samples.data(), tile_log, d.type, keep_nodata, d.nodataSample, stats[i]);
    }, batch);
    const std::vector<std::vector<uint8_t>>& payloads = batch.payloads;
    const std::vector<hfpac::EncodeStats>& enc_stats = batch.stats;
    const std::vector<hfpac::Status>& statuses = batch.statuses;
    for (size_t i = 0; i < n; ++i) {
      const Tile& t = tiles[i];
      if (statuses[i] != hfpac::Status::Ok) {
        emit_error = "encoding tile (L" + std::to_string(t.level) + ", x" + std::to_string(t.x) + ", y" +
                     std::to_string(t.y) + ") failed: " + hfpac::statusMessage(statuses[i]);
        return false;
      }
      hfa::TileEntry e = tileEntry(t, stats[i], batch.codecs[i]);
      if (!(sharded ? part.addTile(std::move(e), payloads[i].data(), payloads[i].size(), emit_error)
                    : writer.addTile(std::move(e), payloads[i].data(), payloads[i].size(), emit_error)))
        return false;
      heightTiles.push_back({t.level, t.x, t.y});
      LevelSummary& ls = result.perLevel[size_t(t.level)];
      ++ls.tiles;
      ls.rawBytes += tile_samples * 2;
      ls.payloadBytes += payloads[i].size();
      result.hfanTiles += batch.codecs[i] == hfa::Codec::Hfan;
      if (o.codec != hfa::Codec::Raw) {
        result.layerBytes[0] += enc_stats[i].info.layer1Bytes;
        result.layerBytes[1] += enc_stats[i].info.layer2Bytes;
        result.layerBytes[2] += enc_stats[i].info.layer3Bytes;
      }
    }
    result.encodeSeconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - b0).count();
    return true;
  };
  // CPU: each row of tiles as it comes. GPU: batches of gpuBatch tiles over rows and levels
  // (the order of the tiles, hence of the payloads, is the same).
  std::vector<Tile> pending;
  Pyramid pyramid(h.width, h.height, tile_log, sharded ? layout.split + 1 : h.levels, [&](std::vector<Tile>& tiles) {
    if (sharded) {  // only this shard's subtrees
      tiles.erase(std::remove_if(tiles.begin(), tiles.end(),
                                 [&](const Tile& t) { return !layout.ownsTile(t.level, t.x, t.y); }),
                  tiles.end());
      if (tiles.empty()) return true;
    }
    if (encoder.onGpu()) {
      for (Tile& t : tiles) {
        std::vector<uint8_t>().swap(t.state);  // not needed after the pyramid
        pending.push_back(std::move(t));
      }
      if (pending.size() < size_t(o.gpuBatch)) return true;
      const bool ok = encodeBatch(pending);
      pending.clear();
      return ok;
    }
    return encodeBatch(tiles);
  });
  // Room for an imagery tile per height tile of every complete grid, and the finer ones.
  size_t maxImagery = 0;
  if (withImagery) {
    std::vector<TileKey> grid;
    for (int l = 0; l < h.levels; ++l) grid.push_back({l, 0, 0});
    for (int l = 0; l < h.levels; ++l)
      maxImagery += imageryTilesFor({grid[size_t(l)]}, im.finerLevels) * size_t(h.tilesX(l)) * size_t(h.tilesY(l));
  }
  if (sharded ? !part.open(o.output, tile_log, error)
              : !writer.open(o.output, h, size_t(pyramid.maxTiles()), error, withImagery ? &im : nullptr, maxImagery))
    return false;
  // Progress: the range pass 0..0.1, heights up to 1 (0.6 with imagery), imagery the rest.
  const double heightsEnd = withImagery ? 0.6 : 1.0;
  Progress stream_progress;
  if (o.progress)
    stream_progress = [&](double f, const char*) { return o.progress(0.1 + (heightsEnd - 0.1) * f, "pack"); };
  StreamStats ss;
  StreamRange range;
  const uint64_t W = h.width, H = h.height;  // (the lambdas below refer to them)
  if (sharded) {
    // This shard's rows; its roots' samples counted; its share of the coarse grid kept.
    range.first = int(layout.firstRow);
    range.last = int(layout.lastRow);
    pyramid.startAt(uint32_t(layout.firstRow));
    range.counted = [&](int y, int& c0, int& c1) {
      uint64_t x0, x1;
      layout.rootColumns(std::min(uint64_t(y) / layout.span, uint64_t(layout.rootsY) - 1), x0, x1);
      c0 = x0 == x1 ? 0 : int(x0 * layout.span);
      c1 = x0 == x1 ? 0 : x1 == layout.rootsX ? int(W) : int(x1 * layout.span);
    };
    if (layout.coarse)
      range.tap = [&](int y, const uint16_t* row, const uint8_t* st) {
        auto keep = [&](uint32_t j) {
          uint64_t x0, x1;
          layout.rootColumns(std::min<uint64_t>(j / layout.half, layout.rootsY - 1), x0, x1);
          if (x0 == x1) return;
          CoarseRun run;
          run.j = j;
          run.i0 = uint32_t(x0 * layout.half);
          const uint32_t i1 = x1 == layout.rootsX ? layout.coarseW : uint32_t(x1 * layout.half);
          for (uint32_t i = run.i0; i < i1; ++i) {
            const uint64_t x = std::min<uint64_t>(i * layout.stride, W - 1);
            run.samples.push_back(row[x]);
            run.states.push_back(st[x]);
          }
          part.addCoarse(std::move(run));
        };
        if (uint64_t(y) % layout.stride == 0) keep(uint32_t(uint64_t(y) / layout.stride));
        if (uint64_t(y) == H - 1 && (H - 1) % layout.stride != 0) keep(layout.coarseH - 1);
      };
  }
  bool streamed = !(sharded && layout.empty()) &&
                  streamSource(source, o.fillNodata, pyramid, stream_progress, ss, error, range);
  if (sharded && layout.empty()) streamed = !o.progress || o.progress(1.0, "pack");
  if (streamed && !pending.empty()) {  // the last, partial GPU batch
    streamed = encodeBatch(pending);
    pending.clear();
  }
  if (!streamed) {
    if (!emit_error.empty()) error = emit_error;
    else if (error.empty()) error = "interrupted";
    writer.abort();
    return false;
  }
  if (sharded) {
    PartInfo info;
    info.shard = o.shard;
    info.shards = o.shards;
    info.split = layout.split;
    info.tileLog = tile_log;
    info.first = layout.first;
    info.end = layout.end;
    info.validSamples = ss.valid;
    info.filledSamples = ss.filled;
    info.measuredQuantError = source.measuredQuantError();
    info.plan = planText(packPlan(o, h, source, layout.split, keep_nodata));
    const uint64_t part_tiles = part.tiles(), part_bytes = part.payloadBytes();
    if (!part.finish(info, error)) return false;
    result.width = d.width;
    result.height = d.height;
    result.levels = h.levels;
    result.tileSize = p;
    result.tiles = part_tiles;
    result.payloadBytes = part_bytes;
    result.validSamples = ss.valid;
    result.filledSamples = ss.filled;
    result.device = encoder.device();
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    result.peakRssKiB = peakRssKiB();
    if (o.out)
      fprintf(o.out,
              "%s: part %d of %d of a %d x %d pack (%d level%s of %d x %d tiles, codec %s): roots %llu..%llu of the "
              "%llu tiles of level %d, levels 0..%d: %llu tiles, %s of payload; time %.2f s, peak RSS %.1f MiB\n",
              o.output.c_str(), o.shard, o.shards, d.width, d.height, h.levels, h.levels == 1 ? "" : "s", p, p,
              hfa::codecName(o.codec), (unsigned long long)layout.first, (unsigned long long)layout.end,
              (unsigned long long)layout.roots(), layout.split, layout.split, (unsigned long long)part_tiles,
              human(double(part_bytes)).c_str(), result.seconds, double(result.peakRssKiB) / 1024.0);
    return true;
  }
  if (ss.valid == 0) {
    writer.abort();
    error = "the raster has no valid sample (every sample is nodata)";
    return false;
  }
  if (withImagery) {
    result.hasImagery = true;
    std::function<bool(double)> imagery_progress;
    if (o.progress) imagery_progress = [&](double f) { return o.progress(heightsEnd + (1 - heightsEnd) * f, "imagery"); };
    ImageryOptions io = o.imagery;
    io.gpuJpeg = o.device == "cuda";
    if (!writeImagery(io, h, im, result.imageryPlan, heightTiles, threads, writer, imagery_progress,
                      result.imagery, error)) {
      writer.abort();
      return false;
    }
    if (!result.imagery.deviceNote.empty() && io.gpuJpeg && o.out) fprintf(o.out, "Note: %s\n", result.imagery.deviceNote.c_str());
  }
  writer.header().filledSamples = ss.filled;
  writer.header().sourceValidSamples = ss.valid;
  if (quantised) writer.header().quantError = source.bandScale() * std::max(d.quant.maxError, source.measuredQuantError());
  if (!writer.finish(error)) return false;
  result.device = encoder.device();
  result.gpuBatches = encoder.gpuBatches();

  // ---- summary ----
  result.width = d.width;
  result.height = d.height;
  result.downsampled = source.downsampled();
  result.sourceWidth = source.sourceWidth();
  result.sourceHeight = source.sourceHeight();
  result.levels = h.levels;
  result.tileSize = p;
  for (const LevelSummary& ls : result.perLevel) {
    result.tiles += ls.tiles;
    result.rawBytes += ls.rawBytes;
    result.payloadBytes += ls.payloadBytes;
  }
  result.filledSamples = ss.filled;
  result.validSamples = ss.valid;
  result.sourceSamples = uint64_t(d.width) * uint64_t(d.height);
  result.quantError = writer.header().quantError;
  {
    hfa::ArchiveReader r;
    std::string e2;
    if (r.open(o.output, e2)) result.fileBytes = r.fileSize();
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  result.peakRssKiB = peakRssKiB();
  if (o.out) {
    FILE* f = o.out;
    fprintf(f, "%s: %d x %d %s (%s), %s, %d level%s of %d x %d tiles, codec %s\n", o.output.c_str(), d.width,
            d.height, d.sourceType.c_str(), d.driver.c_str(), quantised ? "quantised" : "lossless", h.levels,
            h.levels == 1 ? "" : "s", p, p, hfa::codecName(o.codec));
    if (result.downsampled)
      fprintf(f, "  downsampled from %d x %d (--max-size %d)\n", result.sourceWidth, result.sourceHeight, o.maxSide);
    if (quantised)
      fprintf(f, "  quantised: height = %.9g + %.9g * sample; error bound %.6g %s\n", h.verticalOffset,
              h.verticalScale, result.quantError, h.verticalUnits.empty() ? "(units)" : h.verticalUnits.c_str());
    else
      fprintf(f, "  heights: height = %.9g + %.9g * sample%s\n", h.verticalOffset, h.verticalScale,
              h.verticalUnits.empty() ? "" : (" " + h.verticalUnits).c_str());
    fprintf(f, "  spacing: %.6g x %.6g %s\n", h.spacingX, h.spacingY,
            (h.flags & hfa::kFlagSpacingKnown) ? "m" : "sample units (no CRS: --spacing X[,Y] gives metres)");
    if (d.nodataInSamples)
      fprintf(f, "  nodata: %llu of %llu samples %s\n",
              (unsigned long long)(result.sourceSamples - ss.valid), (unsigned long long)result.sourceSamples,
              o.fillNodata ? "filled by interpolation" : "kept (masked)");
    fprintf(f, "  level  tiles       raw      payload   ratio\n");
    for (size_t l = 0; l < result.perLevel.size(); ++l) {
      const LevelSummary& ls = result.perLevel[l];
      fprintf(f, "  %5zu %6llu %12s %12s %7.3f\n", l, (unsigned long long)ls.tiles, human(double(ls.rawBytes)).c_str(),
              human(double(ls.payloadBytes)).c_str(), ls.payloadBytes ? double(ls.rawBytes) / double(ls.payloadBytes) : 0.0);
    }
    fprintf(f, "  total %6llu %12s %12s %7.3f   (file %s)\n", (unsigned long long)result.tiles,
            human(double(result.rawBytes)).c_str(), human(double(result.payloadBytes)).c_str(),
            result.payloadBytes ? double(result.rawBytes) / double(result.payloadBytes) : 0.0,
            human(double(result.fileBytes)).c_str());
    if (o.codec == hfa::Codec::Auto)
      fprintf(f, "  auto: %llu tile%s hfpac, %llu hfan (the smaller of the two per tile)\n",
              (unsigned long long)(result.tiles - result.hfanTiles), result.tiles - result.hfanTiles == 1 ? "" : "s",
              (unsigned long long)result.hfanTiles);
    if (hfa::isHfpacCodec(o.codec) || (o.codec == hfa::Codec::Auto && result.hfanTiles < result.tiles))
      fprintf(f, "  layers%s: L1 %s, L2 %s, L3 %s\n", o.codec == hfa::Codec::Auto ? " (hfpac tiles)" : "",
              human(double(result.layerBytes[0])).c_str(), human(double(result.layerBytes[1])).c_str(),
              human(double(result.layerBytes[2])).c_str());
    const double tile_points = double(result.tiles) * double(tile_samples);
    fprintf(f, "  time %.2f s, %.2f M source points/s, %.2f M tile points/s, %d thread%s, encoding on %s, peak RSS %.1f MiB\n",
            result.seconds, double(result.sourceSamples) / result.seconds / 1e6, tile_points / result.seconds / 1e6,
            threads, threads == 1 ? "" : "s", result.device == "cuda" ? "cuda" : "cpu", double(result.peakRssKiB) / 1024.0);
    fprintf(f, "  tile statistics + encoding %.2f s (%.2f M tile points/s)%s\n", result.encodeSeconds,
            result.encodeSeconds > 0 ? tile_points / result.encodeSeconds / 1e6 : 0.0,
            result.device == "cuda" ? (" in " + std::to_string(result.gpuBatches) + " GPU batch" +
                                       (result.gpuBatches == 1 ? "" : "es")).c_str() : "");
    if (withImagery) {
      const ImageryResult& ir = result.imagery;
      const ImageryPlan& ip = result.imageryPlan;
      fprintf(f, "  imagery: %d x %d, %d band%s%s, %.3g texels per sample; %d level%s (%d finer than the heights), "
              "%d x %d tiles, %s%s\n",
              ip.width, ip.height, ip.bands, ip.bands == 1 ? "" : "s", ip.unreferenced ? " (stretched)" : "",
              ip.texelsPerSample, ir.levels, ir.levels == 1 ? "" : "s", ir.finerLevels, ir.tileSize, ir.tileSize,
              hfa::imageryCodecName(o.imagery.codec),
              o.imagery.codec == hfa::ImageryCodec::Jpeg ? (" quality " + std::to_string(o.imagery.quality)).c_str()
              : o.imagery.codec == hfa::ImageryCodec::Bc1 ? (std::string(" (") + himg::bc1ModeName(o.imagery.bc1) +
                                                             " encoder, mip chain stored)").c_str()
                                                          : "");
      fprintf(f, "  imagery level  tiles      bytes  bits/texel  partial\n");
      for (size_t k = ir.perLevel.size(); k-- > 0;) {
        const ImageryLevelSummary& ls = ir.perLevel[k];
        const double texels = double(ls.tiles) * ir.tileSize * ir.tileSize;
        fprintf(f, "  %13zu %6llu %10s %11.3f %8llu\n", k, (unsigned long long)ls.tiles, human(double(ls.bytes)).c_str(),
                texels > 0 ? 8.0 * double(ls.bytes) / texels : 0.0, (unsigned long long)ls.partialTiles);
      }
      fprintf(f, "  imagery total %6llu %10s %11.3f           in %.2f s (coding %.2f s on %s, %.1f M texels/s)\n",
              (unsigned long long)ir.tiles, human(double(ir.bytes)).c_str(),
              ir.texels ? 8.0 * double(ir.bytes) / double(ir.texels) : 0.0, ir.seconds, ir.encodeSeconds,
              ir.device.c_str(), ir.encodeSeconds > 0 ? double(ir.texels) / ir.encodeSeconds / 1e6 : 0.0);
    }
  }
  return true;
}

}  // namespace hfpack
