// merge.cpp - hfpack::merge(): the parts of a sharded pack -> the archive a single pack writes
// (docs/sharded-packing.md). The parts' tiles (levels 0..S) are copied; levels S+1.. are built
// from the coarse grid the parts carry with the pack's own Pyramid and TileEncoder; every
// payload is written in the single pack's order (payloadKey), so the file is byte-identical.
#include <algorithm>
#include <chrono>
#include <map>
#include <memory>

#include "encode.h"
#include "hfpack.h"
#include "part.h"
#include "pyramid.h"

namespace hfpack {

namespace {

struct Source {
  PayloadKey key;
  int part = -1;           // -1: coarse tile `index`
  size_t index = 0;
};

}  // namespace

bool merge(const MergeOptions& o, MergeResult& result, std::string& error) {
  const auto t0 = std::chrono::steady_clock::now();
  result = MergeResult();
  if (o.parts.empty()) {
    error = "no part to merge (hfpack merge PART... -o OUT.hfa)";
    return false;
  }
  if (o.output.empty()) {
    error = "no output file (-o OUT.hfa)";
    return false;
  }
  // ---- the parts: each valid, all of one pack, every shard once ----
  std::vector<std::unique_ptr<PartReader>> parts;
  for (const std::string& path : o.parts) {
    parts.push_back(std::make_unique<PartReader>());
    if (!parts.back()->open(path, error)) {
      error = path + ": " + error;
      return false;
    }
  }
  const PartInfo& first = parts[0]->info();
  for (size_t k = 1; k < parts.size(); ++k) {
    const std::string diff = planDifference(first.plan, parts[k]->info().plan);
    if (!diff.empty()) {
      error = o.parts[k] + ": not a part of the same pack as " + o.parts[0] + " (they differ in " + diff +
              ": other inputs or options)";
      return false;
    }
  }
  Plan plan;
  if (!parsePlan(first.plan, plan, error)) {
    error = o.parts[0] + ": " + error;
    return false;
  }
  const int shards = plan.shards;
  std::vector<int> given(size_t(shards) + 1, -1);
  for (size_t k = 0; k < parts.size(); ++k) {
    const PartInfo& in = parts[k]->info();
    if (in.shards != shards || in.split != plan.split || in.tileLog != plan.header.tileLog) {
      error = o.parts[k] + ": corrupt part (its header disagrees with its plan)";
      return false;
    }
    if (given[size_t(in.shard)] >= 0) {
      error = "part " + std::to_string(in.shard) + " of " + std::to_string(shards) + " given twice (" +
              o.parts[size_t(given[size_t(in.shard)])] + " and " + o.parts[k] + ")";
      return false;
    }
    given[size_t(in.shard)] = int(k);
  }
  for (int i = 1; i <= shards; ++i)
    if (given[size_t(i)] < 0) {
      error = "part " + std::to_string(i) + " of " + std::to_string(shards) + " is missing (" +
              std::to_string(parts.size()) + " of " + std::to_string(shards) + " parts given)";
      return false;
    }

  const hfa::Header& h = plan.header;
  const int p = h.tileSize();
  std::vector<ShardLayout> layouts(parts.size());
  std::vector<Source> order;
  uint64_t valid = 0, filled = 0;
  double measured = 0;
  for (size_t k = 0; k < parts.size(); ++k) {
    const PartInfo& in = parts[k]->info();
    const ShardLayout& s = layouts[k] = shardLayout(h, in.shard, shards);
    if (s.split != plan.split || s.first != in.first || s.end != in.end) {
      error = o.parts[k] + ": corrupt part (its roots are not those of part " + std::to_string(in.shard) + ")";
      return false;
    }
    valid += in.validSamples;
    filled += in.filledSamples;
    measured = std::max(measured, in.measuredQuantError);
    const std::vector<hfa::TileEntry>& tiles = parts[k]->tiles();
    for (size_t i = 0; i < tiles.size(); ++i) {
      const hfa::TileEntry& e = tiles[i];
      if (e.level >= h.levels || e.x >= h.tilesX(e.level) || e.y >= h.tilesY(e.level) ||
          !s.ownsTile(e.level, e.x, e.y) || !hfa::tileCodecAllowed(h.codec, e.codec)) {
        error = o.parts[k] + ": corrupt part (tile (L" + std::to_string(e.level) + ", x" + std::to_string(e.x) +
                ", y" + std::to_string(e.y) + ") is not one of its tiles)";
        return false;
      }
      order.push_back({payloadKey(h, e.level, e.x, e.y), int(k), i});
    }
  }
  if (valid == 0) {
    error = "the raster has no valid sample (every sample is nodata)";
    return false;
  }

  // ---- the coarse levels S+1.. from the coarse grid ----
  std::vector<hfa::TileEntry> coarseEntries;
  std::vector<std::vector<uint8_t>> coarsePayloads;
  const ShardLayout& l0 = layouts[0];
  if (l0.coarse) {
    const size_t cw = l0.coarseW, ch = l0.coarseH;
    std::vector<uint16_t> samples(cw * ch);
    std::vector<uint8_t> states(cw * ch), seen(cw * ch, 0);
    for (size_t k = 0; k < parts.size(); ++k) {
      const ShardLayout& s = layouts[k];
      for (const CoarseRun& r : parts[k]->coarse()) {
        // A run lies in one root row of this part's roots: what the shard writes, nothing else.
        uint64_t x0 = 0, x1 = 0;
        if (r.j < ch) s.rootColumns(std::min<uint64_t>(r.j / s.half, s.rootsY - 1), x0, x1);
        const uint64_t i1 = x1 == s.rootsX ? cw : x1 * s.half;
        if (r.j >= ch || x0 == x1 || r.i0 != x0 * s.half || r.i0 + r.samples.size() != i1) {
          error = o.parts[k] + ": corrupt part (coarse samples outside its roots)";
          return false;
        }
        for (size_t i = 0; i < r.samples.size(); ++i) {
          const size_t at = size_t(r.j) * cw + r.i0 + i;
          if (seen[at] || r.states[i] > kFilled) {
            error = o.parts[k] + ": corrupt part (coarse samples)";
            return false;
          }
          seen[at] = 1;
          samples[at] = r.samples[i];
          states[at] = r.states[i];
        }
      }
    }
    if (std::find(seen.begin(), seen.end(), uint8_t(0)) != seen.end()) {
      error = "the parts lack coarse samples (a part was written by another hfpack?)";
      return false;
    }
    const int base = l0.split + 1;
    TileEncoder encoder(h.codec, encodeOptions(h.codec, plan.segment, plan.bits, plan.keepNodata, plan.nodataSample),
                        h.sampleType, p, threadCount(o.threads), "cpu");
    std::string emit_error;
    Pyramid pyramid(uint32_t(cw), uint32_t(ch), h.tileLog, h.levels - base, [&](std::vector<Tile>& tiles) {
      const size_t n = tiles.size();
      std::vector<hfa::TileStats> stats(n);
      std::vector<const uint16_t*> ptrs(n);
      for (size_t i = 0; i < n; ++i) ptrs[i] = tiles[i].samples.data();
      TileEncoder::Batch batch;
      encoder.encode(ptrs, [&](size_t i) {
        hfa::computeTileStats(tiles[i].samples.data(), h.tileLog, h.sampleType, plan.keepNodata, plan.nodataSample,
                              stats[i]);
      }, batch);
      for (size_t i = 0; i < n; ++i) {
        Tile& t = tiles[i];
        t.level += base;
        if (batch.statuses[i] != hfpac::Status::Ok) {
          emit_error = "encoding tile (L" + std::to_string(t.level) + ", x" + std::to_string(t.x) + ", y" +
                       std::to_string(t.y) + ") failed: " + hfpac::statusMessage(batch.statuses[i]);
          return false;
        }
        order.push_back({payloadKey(h, t.level, t.x, t.y), -1, coarseEntries.size()});
        coarseEntries.push_back(tileEntry(t, stats[i], batch.codecs[i]));
        coarsePayloads.push_back(std::move(batch.payloads[i]));
      }
      return true;
    });
    for (size_t j = 0; j < ch; ++j)
      if (!pyramid.pushRow(samples.data() + j * cw, states.data() + j * cw)) {
        error = emit_error;
        return false;
      }
    if (!pyramid.finish()) {
      error = emit_error;
      return false;
    }
    result.coarseTiles = coarseEntries.size();
  }

  // ---- the archive, payloads in the single pack's order ----
  std::sort(order.begin(), order.end(), [](const Source& a, const Source& b) { return a.key < b.key; });
  for (size_t i = 1; i < order.size(); ++i)
    if (!(order[i - 1].key < order[i].key)) {
      error = "tile (L" + std::to_string(order[i].key.level) + ", x" + std::to_string(order[i].key.x) +
              ") is in two parts";
      return false;
    }
  uint64_t maxTiles = 0;
  for (int l = 0; l < h.levels; ++l) maxTiles += uint64_t(h.tilesX(l)) * h.tilesY(l);
  hfa::ArchiveWriter writer;
  if (!writer.open(o.output, h, size_t(maxTiles), error)) return false;
  for (size_t i = 0; i < order.size(); ++i) {
    const Source& src = order[i];
    if (src.part < 0) {
      const std::vector<uint8_t>& pl = coarsePayloads[src.index];
      if (!writer.addTile(coarseEntries[src.index], pl.data(), pl.size(), error)) return false;
    } else {
      const PartReader& part = *parts[size_t(src.part)];
      const uint8_t* data = nullptr;
      size_t size = 0;
      if (!part.payload(src.index, data, size, error)) {
        error = o.parts[size_t(src.part)] + ": " + error;
        writer.abort();
        return false;
      }
      hfa::TileEntry e = part.tiles()[src.index];
      if (!writer.addTile(std::move(e), data, size, error)) return false;
      ++result.partTiles;
    }
    if (o.progress && (i % 256 == 0 || i + 1 == order.size()) &&
        !o.progress(double(i + 1) / double(order.size()), "merge")) {
      writer.abort();
      error = "interrupted";
      return false;
    }
  }
  writer.header().filledSamples = filled;
  writer.header().sourceValidSamples = valid;
  if (h.flags & hfa::kFlagQuantised) writer.header().quantError = plan.bandScale * std::max(plan.quantMaxError, measured);
  result.payloadBytes = writer.payloadBytes();
  if (!writer.finish(error)) return false;

  result.shards = shards;
  result.split = plan.split;
  result.levels = h.levels;
  result.tiles = order.size();
  {
    hfa::ArchiveReader r;
    std::string e2;
    if (r.open(o.output, e2)) result.fileBytes = r.fileSize();
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (o.out)
    fprintf(o.out,
            "%s: %u x %u, %d level%s of %d x %d tiles, codec %s, from %d part%s: %llu tiles (%llu from the parts, "
            "levels 0..%d; %llu coarse ones encoded here), payload %s, file %s; time %.2f s\n",
            o.output.c_str(), h.width, h.height, h.levels, h.levels == 1 ? "" : "s", p, p, hfa::codecName(h.codec),
            shards, shards == 1 ? "" : "s", (unsigned long long)result.tiles, (unsigned long long)result.partTiles,
            plan.split, (unsigned long long)result.coarseTiles, human(double(result.payloadBytes)).c_str(),
            human(double(result.fileBytes)).c_str(), result.seconds);
  return true;
}

}  // namespace hfpack
