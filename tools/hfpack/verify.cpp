// verify.cpp - hfpack verify: decode every tile (checksums, codec validation), and with a source
// rebuild the pyramid from it and compare every sample of every level.
#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cmath>
#include <mutex>
#include <thread>

#include "hfpack.h"
#include "imagery/imagery.h"
#include "pyramid.h"

namespace hfpack {

namespace {
constexpr int kMaxReported = 10;

// Every imagery tile: checksum and decoding (decodeImageryTile: a bc1 tile's size and level 0);
// with o.imagery, each against the rasters warped again (one ImageryWarper per thread).
bool verifyImagery(const hfa::ArchiveReader& r, const VerifyOptions& o, int threads, VerifyResult& result,
                   const std::function<void(const std::string&)>& report, std::string& error) {
  const hfa::ImageryHeader& im = r.imagery();
  const std::vector<hfa::ImageryEntry>& tiles = r.imageryTiles();
  const int T = im.tileSize;
  const bool compare = !o.imagery.inputs.empty();
  if (compare) {  // open once here for a clear error before the threads start
    ImageryWarper probe;
    ImageryPlan plan;
    if (!probe.open(o.imagery, r.header(), im, (im.flags & hfa::kImageryUnreferenced) ? 1 : 0, plan, error))
      return false;
  }
  std::atomic<size_t> next{0};
  std::atomic<uint64_t> bad{0}, compared{0}, mismatches{0};
  std::mutex mutex;
  double minPsnr = double(INFINITY), sse = 0, texels = 0;
  std::string open_error;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      himg::JpegTileDecoder decoder;
      std::string e;
      const bool tables = im.jpegTables.empty() || decoder.setTables(im.jpegTables.data(), im.jpegTables.size(), e);
      ImageryWarper warper;
      ImageryPlan plan;
      if (compare && !warper.open(o.imagery, r.header(), im, (im.flags & hfa::kImageryUnreferenced) ? 1 : 0, plan, e)) {
        std::lock_guard<std::mutex> lock(mutex);
        open_error = e;
        return;
      }
      std::vector<uint8_t> got(size_t(T) * size_t(T) * 4), want(got.size());
      for (size_t i; (i = next.fetch_add(1)) < tiles.size();) {
        const hfa::ImageryEntry& te = tiles[i];
        const uint8_t* data = nullptr;
        size_t size = 0;
        e.clear();
        bool okTile = r.imageryPayload(i, data, size, e);
        if (okTile && te.codec == hfa::ImageryCodec::Jpeg && !tables) e = "the archive's JPEG tables: " + e, okTile = false;
        else if (okTile && !decodeImageryTile(data, size, te.codec, T, &decoder, got.data(), e))
          e = r.imageryTileName(i) + ": " + e, okTile = false;
        if (!okTile) {
          ++bad;
          report(e);
          continue;
        }
        if (!compare) continue;
        if (!warper.warpTile(te.level, te.x, te.y, want.data(), e)) {
          ++bad;
          report(r.imageryTileName(i) + ": " + e);
          continue;
        }
        size_t coverage = 0;
        double s = 0, n = 0;
        for (size_t k = 0; k < got.size(); k += 4) {
          if ((got[k + 3] >= 128) != (want[k + 3] >= 128)) ++coverage;
          if (want[k + 3] < 128) continue;
          for (int c = 0; c < 3; ++c) s += double(int(got[k + size_t(c)]) - int(want[k + size_t(c)])) * (got[k + size_t(c)] - want[k + size_t(c)]);
          n += 3;
        }
        const double psnr = s > 0 ? 10 * std::log10(255.0 * 255.0 * n / s) : double(INFINITY);
        ++compared;
        const bool raw = te.codec == hfa::ImageryCodec::Raw;  // bc1 (level 0 here) is lossy, like jpeg
        if (coverage || psnr < kMinImageryPsnr || (raw && s > 0)) {
          ++mismatches;
          char buf[160];
          snprintf(buf, sizeof buf, ": %zu texels differ in coverage, RGB PSNR %.2f dB against the warped imagery",
                   coverage, psnr);
          report(r.imageryTileName(i) + buf);
        }
        std::lock_guard<std::mutex> lock(mutex);
        minPsnr = std::min(minPsnr, psnr);
        sse += s;
        texels += n;
      }
    });
  for (auto& th : pool) th.join();
  if (!open_error.empty()) {
    error = open_error;
    return false;
  }
  result.imageryTiles = tiles.size();
  result.imageryBadTiles = bad;
  result.imageryCompared = compared;
  result.imageryMismatches = mismatches;
  result.imageryMinPsnr = minPsnr;
  result.imageryPsnr = sse > 0 ? 10 * std::log10(255.0 * 255.0 * texels / sse) : double(INFINITY);
  if (o.out) {
    fprintf(o.out, "%s: %" PRIu64 " imagery tiles, %" PRIu64 " bad", o.archive.c_str(), result.imageryTiles,
            result.imageryBadTiles);
    if (compare)
      fprintf(o.out, "; %" PRIu64 " compared with the warped imagery: RGB PSNR %.2f dB overall, %.2f dB at worst, %" PRIu64
                     " mismatches",
              result.imageryCompared, result.imageryPsnr, result.imageryMinPsnr, result.imageryMismatches);
    fprintf(o.out, "\n");
  }
  return true;
}
}  // namespace

bool verify(const VerifyOptions& o, VerifyResult& result, std::string& error) {
  result = VerifyResult();
  hfa::ArchiveReader r;
  if (!r.open(o.archive, error)) return false;
  const hfa::Header& h = r.header();
  const int p = h.tileSize();
  const size_t n = size_t(p) * size_t(p);
  const int threads = o.threads > 0 ? o.threads : int(std::max(1u, std::thread::hardware_concurrency()));
  std::mutex mutex;
  int reported = 0;
  auto report = [&](const std::string& line) {
    std::lock_guard<std::mutex> lock(mutex);
    if (o.out && reported++ < kMaxReported) fprintf(o.out, "  %s\n", line.c_str());
  };

  // Pass 1: every tile's checksum and decode.
  std::vector<uint8_t> good(r.tiles().size(), 0);
  {
    std::atomic<size_t> next{0}, done{0};
    std::atomic<uint64_t> bad{0};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&] {
        std::vector<uint16_t> buf(n);
        for (size_t i; (i = next.fetch_add(1)) < r.tiles().size();) {
          std::string e;
          if (r.decodeTile(i, buf.data(), e)) good[i] = 1;
          else {
            ++bad;
            report(e);
          }
          ++done;
        }
      });
    for (auto& th : pool) th.join();
    result.tiles = r.tiles().size();
    result.badTiles = bad;
    if (o.progress) o.progress(o.sources.empty() ? 1.0 : 0.2, "decode");
  }
  if (!r.hasImagery() && !o.imagery.inputs.empty()) {
    error = "--imagery: the archive has no imagery";
    return false;
  }
  if (r.hasImagery() && !verifyImagery(r, o, threads, result, report, error)) return false;
  if (o.sources.empty()) {
    if (o.out)
      fprintf(o.out, "%s: %" PRIu64 " tiles, %" PRIu64 " bad%s\n", o.archive.c_str(), result.tiles, result.badTiles,
              result.badTiles ? "" : ": every checksum matches and every tile decodes");
    return true;
  }

  // Pass 2: rebuild the pyramid from the source and compare.
  demio::DemSource source;
  demio::SourceOptions so;
  so.read.band = o.band;
  so.tSrs = o.tSrs;
  so.aSrs = o.aSrs;
  so.aUllr = o.aUllr;
  std::copy(o.ullr, o.ullr + 4, so.ullr);
  if (!source.open(o.sources, so, error)) return false;
  if (source.info().quant.applied) {
    const double step = h.verticalScale / source.bandScale();
    if (std::fabs(source.info().quant.step - step) > 1e-12 * step) {
      so.read.quantStep = step;
      if (!source.open(o.sources, so, error)) return false;
    }
  }
  const demio::Dem& d = source.info();
  if (uint32_t(d.width) != h.width || uint32_t(d.height) != h.height || d.type != h.sampleType ||
      d.quant.applied != ((h.flags & hfa::kFlagQuantised) != 0)) {
    error = "the source (" + std::to_string(d.width) + " x " + std::to_string(d.height) +
            ") does not match the archive (" + std::to_string(h.width) + " x " + std::to_string(h.height) +
            ", sample type or quantisation)";
    return false;
  }
  const bool filled = (h.flags & hfa::kFlagNodataFilled) != 0;
  std::vector<uint8_t> seen(r.tiles().size(), 0);
  std::atomic<uint64_t> compared{0}, mismatches{0};
  std::string emit_error;
  Pyramid pyramid(h.width, h.height, h.tileLog, h.levels, [&](std::vector<Tile>& tiles) {
    std::atomic<size_t> next{0};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&] {
        std::vector<uint16_t> dec(n);
        for (size_t k; (k = next.fetch_add(1)) < tiles.size();) {
          const Tile& tile = tiles[k];
          const std::string name = "tile (L" + std::to_string(tile.level) + ", x" + std::to_string(tile.x) +
                                   ", y" + std::to_string(tile.y) + ")";
          const long idx = r.find(tile.level, tile.x, tile.y);
          if (idx < 0) {
            std::lock_guard<std::mutex> lock(mutex);
            ++result.missingTiles;
            if (o.out && reported++ < kMaxReported) fprintf(o.out, "  %s: missing from the archive\n", name.c_str());
            continue;
          }
          seen[size_t(idx)] = 1;
          if (!good[size_t(idx)]) continue;  // already reported
          std::string e;
          if (!r.decodeTile(size_t(idx), dec.data(), e)) continue;
          uint64_t c = 0, m = 0;
          size_t first_bad = n;
          for (size_t i = 0; i < n; ++i) {
            if (tile.state[i] == kValid || (tile.state[i] == kNodata && !filled)) {
              ++c;
              if (dec[i] != tile.samples[i]) {
                ++m;
                if (first_bad == n) first_bad = i;
              }
            }
          }
          compared += c;
          mismatches += m;
          if (m)
            report(name + ": " + std::to_string(m) + " samples differ from the source (first at x" +
                   std::to_string(first_bad % size_t(p)) + ", y" + std::to_string(first_bad / size_t(p)) + ")");
        }
      });
    for (auto& th : pool) th.join();
    return true;
  });
  Progress sp;
  if (o.progress) sp = [&](double f, const char*) { return o.progress(0.2 + 0.8 * f, "compare"); };
  StreamStats ss;
  if (!streamSource(source, false, pyramid, sp, ss, error)) return false;
  for (size_t i = 0; i < seen.size(); ++i)
    if (!seen[i]) {
      ++result.extraTiles;
      report(r.tileName(i) + ": in the archive but has no valid source sample");
    }
  result.comparedSamples = compared;
  result.mismatches = mismatches;
  result.maxHeightError = d.quant.applied ? source.bandScale() * source.measuredQuantError() : 0.0;
  if (o.out) {
    fprintf(o.out, "%s: %" PRIu64 " tiles, %" PRIu64 " bad, %" PRIu64 " missing, %" PRIu64 " extra; %" PRIu64
                   " samples of %d levels compared, %" PRIu64 " mismatches\n",
            o.archive.c_str(), result.tiles, result.badTiles, result.missingTiles, result.extraTiles,
            result.comparedSamples, h.levels, result.mismatches);
    if (ok(result)) {
      if (d.quant.applied)
        fprintf(o.out, "within bound: every quantised sample matches; max |height - source| = %.6g <= bound %.6g\n",
                result.maxHeightError, h.quantError);
      else
        fprintf(o.out, "lossless\n");
    }
  }
  if (d.quant.applied && result.maxHeightError > h.quantError * (1 + 1e-9) + 1e-12) ++result.mismatches;
  return true;
}

}  // namespace hfpack
