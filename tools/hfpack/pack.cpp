// pack.cpp - hfpack::pack(): source -> pyramid -> per-tile statistics and encoding -> archive.
//
// Encoding runs on the CPU (hfpac::encode on `threads` threads, one row of tiles at a time) or,
// with --device cuda in a build with the GPU codec (HFPACK_CUDA), on the GPU: tiles are collected
// over rows and levels into batches of PackOptions::gpuBatch and encoded with one
// hfgpu::BatchEncoder::encodeHost call each, while the CPU threads compute the index statistics
// of the same batch. The GPU streams are byte-identical to hfpac::encode's and tiles are added
// in the same order, so the archive is byte-identical to a CPU pack.
#ifdef HFPACK_GDAL
#include <ogr_srs_api.h>
#endif
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <memory>
#include <thread>

#include "hfpack.h"
#include "pyramid.h"
#ifdef HFPACK_CUDA
#include "gpu/encoder.h"
#endif

namespace hfpack {

namespace {

// Runs f(i) for i in [0, n) on up to `threads` threads.
template <class F>
void parallelFor(size_t n, int threads, F f) {
  const size_t t = std::min<size_t>(n, size_t(std::max(1, threads)));
  if (t <= 1) {
    for (size_t i = 0; i < n; ++i) f(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (size_t k = 0; k < t; ++k)
    pool.emplace_back([&] {
      for (size_t i; (i = next.fetch_add(1)) < n;) f(i);
    });
  for (auto& th : pool) th.join();
}

// Metres per degree of latitude and longitude at latitude phi (WGS 84 series).
[[maybe_unused]] void metresPerDegree(double phi_deg, double& m_lat, double& m_lon) {
  const double phi = phi_deg * M_PI / 180.0;
  m_lat = 111132.92 - 559.82 * std::cos(2 * phi) + 1.175 * std::cos(4 * phi) - 0.0023 * std::cos(6 * phi);
  m_lon = 111412.84 * std::cos(phi) - 93.5 * std::cos(3 * phi) + 0.118 * std::cos(5 * phi);
}

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
#ifndef HFPACK_GDAL
  // No GDAL (HF_WITH_GDAL=OFF): the only source is an .hfr dump, which has no CRS.
  return;
#else
  if (d.projectionWkt.empty() || !d.hasGeoTransform) return;
  OGRSpatialReferenceH srs = OSRNewSpatialReference(d.projectionWkt.c_str());
  if (!srs) return;
  if (OSRIsGeographic(srs)) {
    h.flags |= hfa::kFlagGeographic | hfa::kFlagSpacingKnown;
    const double* g = d.geoTransform;
    const double lat = g[3] + g[4] * d.width / 2.0 + g[5] * d.height / 2.0;
    double m_lat, m_lon;
    metresPerDegree(lat, m_lat, m_lon);
    h.spacingX = gx * m_lon;
    h.spacingY = gy * m_lat;
  } else if (OSRIsProjected(srs)) {
    const double unit = OSRGetLinearUnits(srs, nullptr);
    if (unit > 0) {
      h.flags |= hfa::kFlagSpacingKnown;
      h.spacingX = gx * unit;
      h.spacingY = gy * unit;
    }
  }
  OSRDestroySpatialReference(srs);
#endif
}

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

}  // namespace

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
  if (o.segment != 0 && o.segment != 5 && o.segment != 9 && o.segment != 17 && o.segment != 33) {
    error = "--segment " + std::to_string(o.segment) + ": must be 5, 9, 17, 33 or 0 (try all)";
    return false;
  }
  if (o.bits < -1 || o.bits > 16) {
    error = "--bits " + std::to_string(o.bits) + ": must be auto or 0..16";
    return false;
  }
  if (o.device != "cpu" && o.device != "cuda") {
    error = "--device " + o.device + ": must be cpu or cuda";
    return false;
  }
  if (o.gpuBatch < 1) {
    error = "--gpu-batch must be at least 1";
    return false;
  }
  if (!(o.verticalScale >= 0) || !std::isfinite(o.verticalScale)) {
    error = "--vertical-scale must be a positive number";
    return false;
  }
  if (o.output.empty()) {
    error = "no output file (-o OUT.hfa)";
    return false;
  }
  const int threads = o.threads > 0 ? o.threads : int(std::max(1u, std::thread::hardware_concurrency()));

  // ---- device: --device cuda falls back to the CPU, with a note, when it cannot be used ----
  result.device = "cpu";
#ifdef HFPACK_CUDA
  std::unique_ptr<hfgpu::BatchEncoder> gpu;
#endif
  if (o.device == "cuda") {
    if (o.codec == hfa::Codec::Raw) {
      result.deviceNote = "--device cuda: codec raw encodes nothing; packing on the CPU";
    } else if (o.codec == hfa::Codec::HfpacRbuc) {
      result.deviceNote = "--device cuda: the GPU encoder has no 2DRBUC (codec hfpac+rbuc); encoding on the CPU instead";
    } else {
#ifdef HFPACK_CUDA
      try {
        gpu = std::make_unique<hfgpu::BatchEncoder>();
        result.device = "cuda";
      } catch (const std::exception& e) {
        std::string why = e.what();
        std::replace(why.begin(), why.end(), '\n', ' ');
        result.deviceNote = "--device cuda: no usable CUDA device (" + why + "); encoding on the CPU instead";
      }
#else
      result.deviceNote = "--device cuda: this hfpack is built without the GPU codec (HF_CUDA=OFF); encoding on the CPU instead";
#endif
    }
    if (!result.deviceNote.empty() && o.out) fprintf(o.out, "Note: %s\n", result.deviceNote.c_str());
  }

  // ---- source ----
  demio::DemSource source;
  demio::SourceOptions so;
  so.read.band = o.band;
  so.read.quantStep = o.verticalScale;
  so.tSrs = o.tSrs;
  if (o.progress) so.progress = [&](double f) { return o.progress(0.1 * f, "range"); };
  if (!source.open(o.inputs, so, error)) return false;
  const demio::Dem& d = source.info();
  if (d.width > (1 << 24) || d.height > (1 << 24) || uint64_t(d.width) * uint64_t(d.height) > (uint64_t(1) << 38)) {
    error = "absurd raster size " + std::to_string(d.width) + " x " + std::to_string(d.height) +
            " (limit 16777216 per side and 2^38 samples)";
    return false;
  }
  const bool quantised = d.quant.applied;
  if (o.verticalScale > 0 && !quantised && o.out)
    fprintf(o.out, "Note: --vertical-scale ignored: %s samples are stored losslessly\n", d.sourceType.c_str());

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
  if (quantised) {
    h.flags |= hfa::kFlagQuantised;
    h.verticalScale = source.bandScale() * d.quant.step;
    h.verticalOffset = source.bandOffset() + source.bandScale() * d.quant.offset;
    h.quantError = source.bandScale() * d.quant.maxError;
  } else {
    h.verticalScale = source.bandScale();
    h.verticalOffset = source.bandOffset();
  }
  const bool keep_nodata = !o.fillNodata && d.nodataInSamples;
  if (d.nodataInSamples) {
    h.nodata = d.nodataSample;
    h.flags |= o.fillNodata ? hfa::kFlagNodataFilled : hfa::kFlagNodataKept;
  }
  {
    char buf[128];
    if (o.codec == hfa::Codec::HfpacRbuc)  // 2DRBUC ignores --bits
      snprintf(buf, sizeof buf, "segment=%d rbuc", o.segment);
    else
      snprintf(buf, sizeof buf, "segment=%d bits=%s", o.segment,
               o.bits < 0 ? "auto" : std::to_string(o.bits).c_str());
    h.codecOptions = o.codec == hfa::Codec::Raw ? "" : buf;
  }

  hfpac::EncodeOptions eo;
  eo.segment = o.segment;
  eo.bits = o.bits;
  eo.hasNodata = keep_nodata;
  eo.nodata = d.nodataSample;
  eo.rbuc = o.codec == hfa::Codec::HfpacRbuc;

  // ---- pyramid -> tiles -> archive ----
  hfa::ArchiveWriter writer;
  const int p = h.tileSize();
  const size_t tile_samples = size_t(p) * size_t(p);
  result.perLevel.assign(size_t(h.levels), LevelSummary());
  std::string emit_error;
  // Statistics, encoding and writing of a batch of tiles, in order.
  auto encodeBatch = [&](std::vector<Tile>& tiles) -> bool {
    const auto b0 = std::chrono::steady_clock::now();
    const size_t n = tiles.size();
    std::vector<hfa::TileStats> stats(n);
    std::vector<std::vector<uint8_t>> payloads(n);
    std::vector<hfpac::EncodeStats> enc_stats(n);
    std::vector<hfpac::Status> statuses(n, hfpac::Status::Ok);
    bool on_gpu = false;
#ifdef HFPACK_CUDA
    // GPU: one encodeHost call for the whole batch on a helper thread while the CPU threads
    // compute the statistics. A CUDA failure falls back to the CPU for the rest of the pack.
    std::thread gpu_thread;
    std::string gpu_error;
    hfpac::Status gpu_status = hfpac::Status::Ok;
    std::vector<hfpac::PatchIn> ins;
    if (gpu) {
      on_gpu = true;
      ins.resize(n);
      for (size_t i = 0; i < n; ++i) {
        ins[i].samples = tiles[i].samples.data();
        ins[i].stride = size_t(p);
        ins[i].width = ins[i].height = p;
        ins[i].type = d.type;
      }
      gpu_thread = std::thread([&] {
        try {
          gpu_status = gpu->encodeHost(ins.data(), n, eo, nullptr, payloads);
        } catch (const std::exception& e) {
          gpu_error = e.what();
          std::replace(gpu_error.begin(), gpu_error.end(), '\n', ' ');
        }
      });
    }
#endif
    parallelFor(n, threads, [&](size_t i) {
      const Tile& t = tiles[i];
      hfa::computeTileStats(t.samples.data(), tile_log, d.type, keep_nodata, d.nodataSample, stats[i]);
      if (on_gpu) return;
      if (o.codec == hfa::Codec::Raw) {
        payloads[i].resize(tile_samples * 2);
        for (size_t k = 0; k < tile_samples; ++k) {
          payloads[i][2 * k] = uint8_t(t.samples[k]);
          payloads[i][2 * k + 1] = uint8_t(t.samples[k] >> 8);
        }
      } else {
        statuses[i] = hfpac::encode(t.samples.data(), size_t(p), p, p, d.type, eo, payloads[i], &enc_stats[i]);
      }
    });
#ifdef HFPACK_CUDA
    if (on_gpu) {
      gpu_thread.join();
      if (!gpu_error.empty() || gpu_status != hfpac::Status::Ok || payloads.size() != n) {
        const std::string why = gpu_error.empty() ? hfpac::statusMessage(gpu_status) : gpu_error;
        result.deviceNote = "--device cuda: the GPU encoder failed (" + why + "); encoding on the CPU instead";
        if (o.out) fprintf(o.out, "Note: %s\n", result.deviceNote.c_str());
        gpu.reset();
        result.device = "cpu";
        on_gpu = false;
        payloads.assign(n, std::vector<uint8_t>());
        parallelFor(n, threads, [&](size_t i) {
          statuses[i] = hfpac::encode(tiles[i].samples.data(), size_t(p), p, p, d.type, eo, payloads[i], &enc_stats[i]);
        });
      } else {
        result.gpuBatches += 1;
        for (size_t i = 0; i < n; ++i)  // layer sizes for the summary (O(1) per stream)
          if (hfpac::readInfo(payloads[i].data(), payloads[i].size(), enc_stats[i].info) != hfpac::Status::Ok)
            statuses[i] = hfpac::Status::InvalidArgument;
      }
    }
#endif
    for (size_t i = 0; i < n; ++i) {
      const Tile& t = tiles[i];
      if (statuses[i] != hfpac::Status::Ok) {
        emit_error = "encoding tile (L" + std::to_string(t.level) + ", x" + std::to_string(t.x) + ", y" +
                     std::to_string(t.y) + ") failed: " + hfpac::statusMessage(statuses[i]);
        return false;
      }
      hfa::TileEntry e;
      e.level = uint8_t(t.level);
      e.codec = o.codec;
      e.x = t.x;
      e.y = t.y;
      e.flags = uint16_t((t.filled ? hfa::kTileFilled : 0) | (stats[i].hasNodata ? hfa::kTileHasNodata : 0));
      e.minSample = stats[i].minSample;
      e.maxSample = stats[i].maxSample;
      e.filled = t.filled;
      e.lodError = std::move(stats[i].lodError);
      if (!writer.addTile(std::move(e), payloads[i].data(), payloads[i].size(), emit_error)) return false;
      LevelSummary& ls = result.perLevel[size_t(t.level)];
      ++ls.tiles;
      ls.rawBytes += tile_samples * 2;
      ls.payloadBytes += payloads[i].size();
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
  Pyramid pyramid(h.width, h.height, tile_log, h.levels, [&](std::vector<Tile>& tiles) {
#ifdef HFPACK_CUDA
    if (gpu) {
      for (Tile& t : tiles) {
        std::vector<uint8_t>().swap(t.state);  // not needed after the pyramid
        pending.push_back(std::move(t));
      }
      if (pending.size() < size_t(o.gpuBatch)) return true;
      const bool ok = encodeBatch(pending);
      pending.clear();
      return ok;
    }
#endif
    return encodeBatch(tiles);
  });
  if (!writer.open(o.output, h, size_t(pyramid.maxTiles()), error)) return false;
  Progress stream_progress;
  if (o.progress) stream_progress = [&](double f, const char*) { return o.progress(0.1 + 0.9 * f, "pack"); };
  StreamStats ss;
  bool streamed = streamSource(source, o.fillNodata, pyramid, stream_progress, ss, error);
  if (streamed && !pending.empty()) {  // the last, partial GPU batch
    streamed = encodeBatch(pending);
    pending.clear();
  }
  if (!streamed) {
    if (!emit_error.empty()) error = emit_error;
    writer.abort();
    return false;
  }
  if (ss.valid == 0) {
    writer.abort();
    error = "the raster has no valid sample (every sample is nodata)";
    return false;
  }
  writer.header().filledSamples = ss.filled;
  writer.header().sourceValidSamples = ss.valid;
  if (quantised) writer.header().quantError = source.bandScale() * std::max(d.quant.maxError, source.measuredQuantError());
  if (!writer.finish(error)) return false;

  // ---- summary ----
  result.width = d.width;
  result.height = d.height;
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
    if (quantised)
      fprintf(f, "  quantised: height = %.9g + %.9g * sample; error bound %.6g %s\n", h.verticalOffset,
              h.verticalScale, result.quantError, h.verticalUnits.empty() ? "(units)" : h.verticalUnits.c_str());
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
    if (o.codec != hfa::Codec::Raw)
      fprintf(f, "  layers: L1 %s, L2 %s, L3 %s\n", human(double(result.layerBytes[0])).c_str(),
              human(double(result.layerBytes[1])).c_str(), human(double(result.layerBytes[2])).c_str());
    const double tile_points = double(result.tiles) * double(tile_samples);
    fprintf(f, "  time %.2f s, %.2f M source points/s, %.2f M tile points/s, %d thread%s, encoding on %s, peak RSS %.1f MiB\n",
            result.seconds, double(result.sourceSamples) / result.seconds / 1e6, tile_points / result.seconds / 1e6,
            threads, threads == 1 ? "" : "s", result.device == "cuda" ? "cuda" : "cpu", double(result.peakRssKiB) / 1024.0);
    fprintf(f, "  tile statistics + encoding %.2f s (%.2f M tile points/s)%s\n", result.encodeSeconds,
            result.encodeSeconds > 0 ? tile_points / result.encodeSeconds / 1e6 : 0.0,
            result.device == "cuda" ? (" in " + std::to_string(result.gpuBatches) + " GPU batch" +
                                       (result.gpuBatches == 1 ? "" : "es")).c_str() : "");
  }
  return true;
}

}  // namespace hfpack
