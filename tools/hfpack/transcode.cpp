// transcode.cpp - hfpack transcode: decode every tile of an archive and encode it again with
// another codec (TileEncoder, the same encoding code as pack), keeping everything else.
//
// Tiles go in batches (decode on the CPU threads, then one TileEncoder::encode), in the order of
// their payloads in the input, so the output's payloads are laid out like the input's; with the
// input's index capacity as well, transcoding back with the input's options restores the input
// byte for byte (the tests check this).
//
// Imagery is copied as it is, or with --imagery-codec decoded (bc1: level 0) and coded again
// (encodeImageryTile), a chunk of tiles at a time on the worker threads, in the same interleaved
// order. Without --codec (only --imagery-codec) the height payloads are copied as they are.
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <mutex>
#include <numeric>
#include <thread>

#include "encode.h"
#include "hfpack.h"

namespace hfpack {

namespace {

// The flags this build knows (archive.h). Anything else may be a property of the payloads or
// heights that a transcode would silently drop or falsify.
constexpr uint32_t kKnownFlags = hfa::kFlagGeoTransform | hfa::kFlagGeographic | hfa::kFlagNodataKept |
                                 hfa::kFlagNodataFilled | hfa::kFlagQuantised | hfa::kFlagSpacingKnown;

bool sameFile(const std::string& a, const std::string& b) {
  if (a == b) return true;
  struct stat sa, sb;
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

// The header fields transcode keeps; the name of the first that differs, or "".
std::string headerDifference(const hfa::Header& a, const hfa::Header& b) {
  if (a.flags != b.flags) return "flags";
  if (a.tileLog != b.tileLog) return "tile size";
  if (a.levels != b.levels) return "levels";
  if (a.sampleType != b.sampleType) return "sample type";
  if (a.width != b.width || a.height != b.height) return "extent";
  if (a.nodata != b.nodata) return "nodata";
  if (!std::equal(a.geoTransform, a.geoTransform + 6, b.geoTransform)) return "geotransform";
  if (a.spacingX != b.spacingX || a.spacingY != b.spacingY) return "spacing";
  if (a.verticalScale != b.verticalScale || a.verticalOffset != b.verticalOffset) return "vertical scale/offset";
  if (a.quantError != b.quantError) return "quantisation error";
  if (a.filledSamples != b.filledSamples || a.sourceValidSamples != b.sourceValidSamples) return "sample counts";
  if (a.crsWkt != b.crsWkt) return "CRS";
  if (a.verticalUnits != b.verticalUnits) return "vertical units";
  return "";
}

}  // namespace

bool sameContent(const hfa::ArchiveReader& a, const hfa::ArchiveReader& b, int threads, std::string& error,
                 bool sameImageryPayloads) {
  const std::string field = headerDifference(a.header(), b.header());
  if (!field.empty()) {
    error = "the headers differ (" + field + ")";
    return false;
  }
  if (a.hasImagery() != b.hasImagery() || a.imageryTiles().size() != b.imageryTiles().size()) {
    error = "the imagery differs (" + std::to_string(a.imageryTiles().size()) + " and " +
            std::to_string(b.imageryTiles().size()) + " imagery tiles)";
    return false;
  }
  if (a.hasImagery()) {
    const hfa::ImageryHeader &ia = a.imagery(), &ib = b.imagery();
    if (ia.tileSize != ib.tileSize || ia.border != ib.border || ia.finerLevels != ib.finerLevels ||
        ia.flags != ib.flags ||
        (sameImageryPayloads && (ia.codec != ib.codec || ia.quality != ib.quality || ia.jpegTables != ib.jpegTables))) {
      error = "the imagery headers differ";
      return false;
    }
    for (size_t i = 0; i < a.imageryTiles().size(); ++i) {
      const hfa::ImageryEntry &x = a.imageryTiles()[i], &y = b.imageryTiles()[i];
      if (x.level != y.level || x.x != y.x || x.y != y.y || x.flags != y.flags ||
          (sameImageryPayloads && (x.codec != y.codec || x.crc != y.crc || x.size != y.size))) {
        error = a.imageryTileName(i) + ": the imagery tiles differ";
        return false;
      }
    }
  }
  if (a.tiles().size() != b.tiles().size()) {
    error = "the tile counts differ (" + std::to_string(a.tiles().size()) + " and " +
            std::to_string(b.tiles().size()) + ")";
    return false;
  }
  const int p = a.header().tileSize();
  const size_t n = size_t(p) * size_t(p);
  std::mutex mutex;
  size_t first_bad = a.tiles().size();
  std::string first_error;
  auto fail = [&](size_t i, const std::string& why) {
    std::lock_guard<std::mutex> lock(mutex);
    if (i < first_bad) {
      first_bad = i;
      first_error = why;
    }
  };
  const int t = threadCount(threads);
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (int k = 0; k < t; ++k)
    pool.emplace_back([&] {
      std::vector<uint16_t> sa(n), sb(n);
      for (size_t i; (i = next.fetch_add(1)) < a.tiles().size();) {
        const hfa::TileEntry &x = a.tiles()[i], &y = b.tiles()[i];
        if (x.level != y.level || x.x != y.x || x.y != y.y || x.flags != y.flags || x.minSample != y.minSample ||
            x.maxSample != y.maxSample || x.filled != y.filled || x.lodError != y.lodError) {
          fail(i, a.tileName(i) + ": the index entries differ");
          continue;
        }
        std::string e;
        if (!a.decodeTile(i, sa.data(), e) || !b.decodeTile(i, sb.data(), e)) {
          fail(i, e);
          continue;
        }
        if (sa != sb) {
          const size_t m = size_t(std::mismatch(sa.begin(), sa.end(), sb.begin()).first - sa.begin());
          fail(i, a.tileName(i) + ": the samples differ (first at x" + std::to_string(m % size_t(p)) + ", y" +
                      std::to_string(m / size_t(p)) + ")");
        }
      }
    });
  for (auto& th : pool) th.join();
  if (first_bad < a.tiles().size()) {
    error = first_error;
    return false;
  }
  return true;
}

bool transcode(const TranscodeOptions& o, TranscodeResult& result, std::string& error) {
  const auto t0 = std::chrono::steady_clock::now();
  result = TranscodeResult();
  if (o.input.empty()) {
    error = "no input archive";
    return false;
  }
  if (o.output.empty()) {
    error = "no output file";
    return false;
  }
  if (!checkEncodeOptions(o.segment, o.bits, o.device, o.gpuBatch, error)) return false;
  if (sameFile(o.input, o.output)) {
    error = o.output + " is the input archive: write the transcoded archive to another file";
    return false;
  }
  hfa::ArchiveReader r;
  if (!r.open(o.input, error)) {
    error = o.input + ": " + error;
    return false;
  }
  const hfa::Header& in = r.header();
  if (in.flags & ~kKnownFlags) {
    char buf[160];
    snprintf(buf, sizeof buf, ": header flags 0x%x unknown to this hfpack; not transcoding what it may not keep",
             unsigned(in.flags & ~kKnownFlags));
    error = o.input + buf;
    return false;
  }
  if (o.recodeImagery && !r.hasImagery()) {
    error = o.input + ": no imagery to re-code (--imagery-codec)";
    return false;
  }
  if (o.recodeImagery && o.imageryCodec == hfa::ImageryCodec::Jpeg && (o.imageryQuality < 0 || o.imageryQuality > 100)) {
    error = "--imagery-quality " + std::to_string(o.imageryQuality) + ": must be 1..100";
    return false;
  }
  const int threads = threadCount(o.threads);
  const int p = in.tileSize();
  const size_t tile_samples = size_t(p) * size_t(p);
  const std::vector<hfa::TileEntry>& tiles = r.tiles();
  result.inputCodec = in.codec;

  hfa::Header h = in;
  if (o.recodeHeights) {
    h.codec = o.codec;
    h.codecOptions = codecOptionsText(o.codec, o.segment, o.bits);
  }
  const bool keep_nodata = (in.flags & hfa::kFlagNodataKept) != 0;  // as pack: masked only with --nodata keep
  std::unique_ptr<TileEncoder> encoder;
  if (o.recodeHeights)
    encoder = std::make_unique<TileEncoder>(o.codec, encodeOptions(o.codec, o.segment, o.bits, keep_nodata, in.nodata),
                                            in.sampleType, p, threads, o.device, [&](const std::string& note) {
                                              result.deviceNote = note;
                                              if (o.out) fprintf(o.out, "Note: %s\n", note.c_str());
                                            });

  // The imagery header of the output: the input's, or with --imagery-codec the new codec's.
  hfa::ImageryHeader out_im = r.imagery();
  if (r.hasImagery()) {
    result.inputImageryCodec = result.imageryCodec = r.imagery().codec;
    result.imageryRecoded = o.recodeImagery;
  }
  if (o.recodeImagery) {
    const hfa::ImageryHeader& in_im = r.imagery();
    out_im.codec = o.imageryCodec;
    out_im.quality = 0;
    out_im.jpegTables.clear();
    if (o.imageryCodec == hfa::ImageryCodec::Jpeg) {
      out_im.quality = o.imageryQuality > 0                       ? o.imageryQuality
                       : in_im.codec == hfa::ImageryCodec::Jpeg ? in_im.quality
                                                                : himg::kDefaultJpegQuality;
      out_im.jpegTables = himg::makeJpegTables(out_im.quality);
    }
    result.imageryCodec = o.imageryCodec;
  }

  // The input's payload order (pack writes them as the pyramid emits them, not index order).
  std::vector<size_t> order(tiles.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return tiles[a].offset < tiles[b].offset; });

  hfa::ArchiveWriter writer;
  // Imagery is copied as it is (its codec is not the height codec's business) or, with
  // --imagery-codec, re-coded; either way interleaved with the height payloads in the input's
  // order so that the file keeps its layout.
  const std::vector<hfa::ImageryEntry>& im_tiles = r.imageryTiles();
  std::vector<size_t> im_order(im_tiles.size());
  std::iota(im_order.begin(), im_order.end(), size_t(0));
  std::sort(im_order.begin(), im_order.end(),
            [&](size_t a, size_t b) { return im_tiles[a].offset < im_tiles[b].offset; });
  size_t im_next = 0;
  const int T = r.hasImagery() ? r.imagery().tileSize : 0;
  // Re-coding: a chunk of tiles at a time on `threads` workers (one JPEG decoder each), added in order.
  const size_t im_chunk = size_t(threads) * 4;
  std::vector<std::vector<uint8_t>> recoded(o.recodeImagery ? im_chunk : 0);
  std::vector<std::string> recode_errors(recoded.size());
  auto recodeChunk = [&](size_t first, size_t n) {
    std::atomic<size_t> next{0};
    auto work = [&] {
      himg::JpegTileDecoder decoder;
      std::string tables_error;
      const std::vector<uint8_t>& tables = r.imagery().jpegTables;
      const bool tables_ok = tables.empty() || decoder.setTables(tables.data(), tables.size(), tables_error);
      std::vector<uint8_t> rgba(size_t(T) * size_t(T) * 4);
      for (size_t k; (k = next.fetch_add(1)) < n;) {
        const size_t i = im_order[first + k];
        std::string& e = recode_errors[k];
        e.clear();
        const uint8_t* data;
        size_t size;
        if (!r.imageryPayload(i, data, size, e)) continue;
        const hfa::ImageryEntry& te = im_tiles[i];
        if (te.codec == hfa::ImageryCodec::Jpeg && !tables_ok) {
          e = "the archive's JPEG tables: " + tables_error;
          continue;
        }
        if (!decodeImageryTile(data, size, te.codec, T, tables.empty() ? nullptr : &decoder, rgba.data(), e)) {
          e = r.imageryTileName(i) + ": " + e;
          continue;
        }
        if (!encodeImageryTile(rgba.data(), T, out_im.codec, out_im.quality, o.imageryBc1, recoded[k], e))
          e = "re-coding " + r.imageryTileName(i) + ": " + e;
      }
    };
    std::vector<std::thread> pool;
    for (int w = 1; w < std::min<int>(threads, int(n)); ++w) pool.emplace_back(work);
    work();
    for (std::thread& t : pool) t.join();
  };
  auto addImagery = [&](size_t i, const uint8_t* data, size_t size) -> bool {
    hfa::ImageryEntry e = im_tiles[i];  // level, x, y, flags (coverage is kept by every codec)
    if (o.recodeImagery) e.codec = out_im.codec;
    if (!writer.addImageryTile(e, data, size, error)) return false;
    ++result.imageryTiles;
    result.imageryInputBytes += im_tiles[i].size;
    result.imageryBytes += size;
    return true;
  };
  // Copies (or re-codes) the imagery tiles that come before file offset `before` in the input.
  auto copyImagery = [&](uint64_t before) -> bool {
    if (o.recodeImagery) {
      while (im_next < im_order.size() && im_tiles[im_order[im_next]].offset < before) {
        size_t n = 0;
        while (n < im_chunk && im_next + n < im_order.size() && im_tiles[im_order[im_next + n]].offset < before) ++n;
        recodeChunk(im_next, n);
        for (size_t k = 0; k < n; ++k) {
          if (!recode_errors[k].empty()) {
            error = o.input + ": " + recode_errors[k];
            return false;
          }
          if (!addImagery(im_order[im_next + k], recoded[k].data(), recoded[k].size())) return false;
          std::vector<uint8_t>().swap(recoded[k]);
        }
        im_next += n;
      }
      return true;
    }
    for (; im_next < im_order.size() && im_tiles[im_order[im_next]].offset < before; ++im_next) {
      const size_t i = im_order[im_next];
      const uint8_t* data;
      size_t size;
      if (!r.imageryPayload(i, data, size, error)) {
        error = o.input + ": " + error;
        return false;
      }
      if (!addImagery(i, data, size)) return false;
    }
    return true;
  };
  if (!writer.open(o.output, h, std::max<size_t>(r.indexCapacity(), tiles.size()), error,
                   r.hasImagery() ? &out_im : nullptr,
                   std::max<size_t>(r.imageryIndexCapacity(), im_tiles.size())))
    return false;
  // At most ~128 MiB of decoded samples per batch (4097 x 4097 tiles: 4 at a time).
  const size_t batch = std::clamp<size_t>((size_t(128) << 20) / (tile_samples * 2), 1, size_t(o.gpuBatch));
  std::vector<std::vector<uint16_t>> samples(std::min(batch, tiles.size()), std::vector<uint16_t>(tile_samples));
  std::vector<std::string> errors(samples.size());
  TileEncoder::Batch encoded;
  for (size_t start = 0; start < tiles.size(); start += batch) {
    const size_t count = std::min(batch, tiles.size() - start);
    if (!o.recodeHeights) {  // the height payloads as they are (CRC checked by payload())
      for (size_t i = 0; i < count; ++i) {
        const size_t idx = order[start + i];
        const uint8_t* data;
        size_t size;
        if (!r.payload(idx, data, size, error)) {
          error = o.input + ": " + error;
          writer.abort();
          return false;
        }
        if (!copyImagery(tiles[idx].offset) || !writer.addTile(tiles[idx], data, size, error)) {
          writer.abort();
          return false;
        }
        result.inputPayloadBytes += size;
        result.payloadBytes += size;
      }
      if (o.progress && !o.progress(double(start + count) / double(tiles.size()), "transcode")) {
        writer.abort();
        error = "interrupted";
        return false;
      }
      continue;
    }
    std::atomic<bool> bad{false};
    parallelFor(count, threads, [&](size_t i) {
      if (!r.decodeTile(order[start + i], samples[i].data(), errors[i])) bad = true;
    });
    if (bad) {
      for (size_t i = 0; i < count; ++i)
        if (!errors[i].empty()) {
          error = o.input + ": " + errors[i];
          break;
        }
      writer.abort();
      return false;
    }
    std::vector<const uint16_t*> ptrs(count);
    for (size_t i = 0; i < count; ++i) ptrs[i] = samples[i].data();
    encoder->encode(ptrs, nullptr, encoded);
    for (size_t i = 0; i < count; ++i) {
      const size_t idx = order[start + i];
      if (encoded.statuses[i] != hfpac::Status::Ok) {
        error = "encoding " + r.tileName(idx) + " failed: " + hfpac::statusMessage(encoded.statuses[i]);
        writer.abort();
        return false;
      }
      if (!copyImagery(tiles[idx].offset)) {
        writer.abort();
        return false;
      }
      hfa::TileEntry e = tiles[idx];  // level, x, y, flags, min/max, filled, LOD errors
      e.codec = encoded.codecs[i];
      const std::vector<uint8_t>& payload = encoded.payloads[i];
      if (!writer.addTile(std::move(e), payload.data(), payload.size(), error)) {
        writer.abort();
        return false;
      }
      result.inputPayloadBytes += tiles[idx].size;
      result.payloadBytes += payload.size();
      result.hfanTiles += encoded.codecs[i] == hfa::Codec::Hfan;
      if (o.codec != hfa::Codec::Raw) {
        result.layerBytes[0] += encoded.stats[i].info.layer1Bytes;
        result.layerBytes[1] += encoded.stats[i].info.layer2Bytes;
        result.layerBytes[2] += encoded.stats[i].info.layer3Bytes;
      }
    }
    if (o.progress && !o.progress(double(start + count) / double(tiles.size()), "transcode")) {
      writer.abort();
      error = "interrupted";
      return false;
    }
  }
  if (!copyImagery(UINT64_MAX)) {
    writer.abort();
    return false;
  }
  if (!writer.finish(error)) return false;
  result.tiles = tiles.size();
  result.rawBytes = uint64_t(tiles.size()) * tile_samples * 2;
  if (encoder) {
    result.device = encoder->device();
    result.gpuBatches = encoder->gpuBatches();
  }

  {
    hfa::ArchiveReader w;
    std::string e2;
    if (!w.open(o.output, e2)) {
      error = o.output + ": cannot read the transcoded archive back: " + e2;
      std::remove(o.output.c_str());
      return false;
    }
    result.fileBytes = w.fileSize();
    if (o.verify) {
      if (!sameContent(r, w, threads, e2, !o.recodeImagery)) {
        error = o.output + ": verification failed: " + e2;
        w.close();
        std::remove(o.output.c_str());
        return false;
      }
      result.verified = true;
    }
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  result.peakRssKiB = peakRssKiB();
  if (o.out) {
    FILE* f = o.out;
    auto ratio = [&](uint64_t payload) { return payload ? double(result.rawBytes) / double(payload) : 0.0; };
    if (o.recodeHeights)
      fprintf(f, "%s: %s transcoded from %s to %s, %" PRIu64 " tiles of %d x %d, %d level%s\n", o.output.c_str(),
              o.input.c_str(), hfa::codecName(in.codec), hfa::codecName(o.codec), result.tiles, p, p, in.levels,
              in.levels == 1 ? "" : "s");
    else
      fprintf(f, "%s: %s with its %" PRIu64 " height tiles of %d x %d copied as they are (%s), %d level%s\n",
              o.output.c_str(), o.input.c_str(), result.tiles, p, p, hfa::codecName(in.codec), in.levels,
              in.levels == 1 ? "" : "s");
    fprintf(f, "  payload %s -> %s (ratio %.3f -> %.3f), file %s\n", human(double(result.inputPayloadBytes)).c_str(),
            human(double(result.payloadBytes)).c_str(), ratio(result.inputPayloadBytes), ratio(result.payloadBytes),
            human(double(result.fileBytes)).c_str());
    if (r.hasImagery()) {
      if (o.recodeImagery)
        fprintf(f, "  imagery %s -> %s%s: %" PRIu64 " tiles, %s -> %s\n", hfa::imageryCodecName(result.inputImageryCodec),
                hfa::imageryCodecName(result.imageryCodec),
                result.imageryCodec == hfa::ImageryCodec::Jpeg ? (" quality " + std::to_string(out_im.quality)).c_str()
                : result.imageryCodec == hfa::ImageryCodec::Bc1 ? (std::string(" (") + himg::bc1ModeName(o.imageryBc1) + " encoder)").c_str()
                                                                : "",
                result.imageryTiles, human(double(result.imageryInputBytes)).c_str(), human(double(result.imageryBytes)).c_str());
      else
        fprintf(f, "  imagery copied as it is (%s): %" PRIu64 " tiles, %s\n", hfa::imageryCodecName(result.imageryCodec),
                result.imageryTiles, human(double(result.imageryBytes)).c_str());
    }
    if (o.recodeHeights && o.codec == hfa::Codec::Auto)
      fprintf(f, "  auto: %" PRIu64 " tiles hfpac, %" PRIu64 " hfan (the smaller of the two per tile)\n",
              result.tiles - result.hfanTiles, result.hfanTiles);
    if (o.recodeHeights && (hfa::isHfpacCodec(o.codec) || (o.codec == hfa::Codec::Auto && result.hfanTiles < result.tiles)))
      fprintf(f, "  layers%s: L1 %s, L2 %s, L3 %s\n", o.codec == hfa::Codec::Auto ? " (hfpac tiles)" : "",
              human(double(result.layerBytes[0])).c_str(), human(double(result.layerBytes[1])).c_str(),
              human(double(result.layerBytes[2])).c_str());
    const double points = double(result.tiles) * double(tile_samples);
    fprintf(f, "  time %.2f s, %.2f M tile points/s, %d thread%s, encoding on %s%s, peak RSS %.1f MiB\n", result.seconds,
            result.seconds > 0 ? points / result.seconds / 1e6 : 0.0, threads, threads == 1 ? "" : "s",
            result.device.c_str(),
            result.gpuBatches ? (" (" + std::to_string(result.gpuBatches) + " GPU batch" +
                                 (result.gpuBatches == 1 ? ")" : "es)")).c_str() : "",
            double(result.peakRssKiB) / 1024.0);
    if (result.verified)
      fprintf(f, "  verified: header, index and every tile's samples match the input%s\n",
              o.recodeImagery ? " (the re-coded imagery: its tile set and flags)" : "");
  }
  return true;
}

}  // namespace hfpack
