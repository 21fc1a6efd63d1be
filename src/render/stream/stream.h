// stream.h - GL-free atlas bookkeeping and tile streaming for the renderer (issue 5,
// docs/rendering.md section 3). Small classes that unit tests drive without a GL context.
//
// - AtlasLayout: how many p x p tile slots fit a memory budget, as layers of a
//   GL_TEXTURE_2D_ARRAY (each layer a grid of slots).
// - PageTable: tile -> slot, with LRU replacement. Tiles touched in the current frame and pinned
//   tiles (the top level, loaded at start-up) are never evicted.
// - StreamStrategy: where tiles come from and how their samples reach the atlas. The renderer
//   asks for tiles (request), and once per frame lets the strategy hand finished tiles to a
//   TileSink (deliver), which never blocks. `cpu` (CpuStreamStrategy) reads payloads from the
//   archive and decodes them with hfpac::decode on worker threads; the render thread only
//   uploads. `raw` (pinned PBO uploads of raw archives) and `cuda` (decode into the atlas with
//   surface writes) sit behind the same interface (render/gl/stream_gl.h): a strategy that writes
//   the atlas itself uses TileSink::reserve + commit instead of uploadSamples.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

namespace hfa {
class ArchiveReader;
enum class Codec : uint8_t;  // archive/archive.h
}

namespace hfr {

struct AtlasSlot {
  uint32_t layer = 0;
  uint32_t x = 0, y = 0;  // texel origin of the slot inside its layer
};

struct AtlasLayout {
  int tileSize = 129;       // p
  int slotsPerSide = 8;     // slots per layer = slotsPerSide^2
  uint32_t layers = 1;

  int layerSize() const { return slotsPerSide * tileSize; }
  size_t slotsPerLayer() const { return size_t(slotsPerSide) * size_t(slotsPerSide); }
  size_t capacity() const { return slotsPerLayer() * layers; }
  size_t bytes() const { return size_t(layerSize()) * size_t(layerSize()) * 2 * layers; }
  AtlasSlot slot(uint32_t index) const;

  // The largest atlas within budgetMiB (16-bit texels), at most `maxTiles` slots (no point in
  // more than the archive has), layers <= maxLayers, layer side <= maxTextureSize. At least one
  // slot per top-level tile is always granted (`minTiles`), even over budget.
  static AtlasLayout fromBudget(int tileSize, double budgetMiB, size_t maxTiles, size_t minTiles,
                                int maxLayers = 2048, int maxTextureSize = 16384);
};

// tile -> slot with LRU replacement. Not thread-safe (render thread only).
class PageTable {
 public:
  PageTable(size_t tiles, size_t capacity);

  size_t capacity() const { return slotTile_.size(); }
  size_t residentCount() const { return resident_; }
  bool resident(size_t tile) const { return slotOf_[tile] >= 0; }
  long slot(size_t tile) const { return slotOf_[tile]; }  // -1 when not resident
  const std::vector<uint8_t>& residency() const { return residency_; }
  const std::vector<long>& slots() const { return slotOf_; }  // per tile: slot or -1

  // Marks a resident tile as used in `frame` (most recently used). touch(tile, frame - 1) keeps
  // a tile ahead of stale ones without protecting it in `frame` (prefetch, request.h); touch
  // those before the current frame's tiles so that the LRU order stays by frame.
  void touch(size_t tile, uint64_t frame);
  // A pinned tile is never evicted (call after it became resident).
  void pin(size_t tile);
  // A slot for `tile`: a free one, else the least recently used tile that was not touched in
  // `frame` and is not pinned, which is evicted (`evicted` = its tile, else -1). The tile is
  // resident (and touched in `frame`) on return. False when every slot is in use this frame.
  bool allocate(size_t tile, uint64_t frame, uint32_t& slot, long& evicted);
  void release(size_t tile);  // makes a resident tile's slot free again

 private:
  struct Use {
    size_t tile;
    uint64_t frame;
  };
  std::vector<long> slotOf_;         // per tile
  std::vector<long> slotTile_;       // per slot: tile or -1
  std::vector<uint8_t> residency_;   // per tile: 1 when resident
  std::vector<uint8_t> pinned_;      // per tile
  std::vector<uint32_t> free_;       // free slots (stack)
  std::list<Use> lru_;               // front = most recent; pinned tiles are not in it
  std::vector<std::list<Use>::iterator> pos_;  // per tile, valid when in lru_
  std::vector<uint8_t> inLru_;
  size_t resident_ = 0;
};

// Where a strategy puts finished tiles (implemented by the GL atlas; a fake in unit tests).
class TileSink {
 public:
  virtual ~TileSink() = default;
  // Reserves a slot for `tile` (evicting the LRU tile if needed); false when none is free.
  virtual bool reserve(size_t tile, AtlasSlot& slot) = 0;
  // Uploads p x p samples (stride p) into the reserved slot and makes the tile resident.
  virtual void uploadSamples(size_t tile, const AtlasSlot& slot, const uint16_t* samples) = 0;
  // For strategies that wrote the slot themselves (cuda): makes the tile resident.
  virtual void commit(size_t tile, const AtlasSlot& slot) = 0;
  // The slot of a resident tile (false when it is not resident): a progressive strategy
  // refines a tile in place, uploading its exact samples over the lossy ones.
  virtual bool residentSlot(size_t tile, AtlasSlot& slot) = 0;
  // The tile could not be loaded (corrupt payload): it stays absent and is drawn from an
  // ancestor; `error` is one line.
  virtual void failed(size_t tile, const std::string& error) = 0;
  // The atlas as a GL texture name (GL_TEXTURE_2D_ARRAY, GL_R16UI) for strategies that write
  // it themselves (raw: glTextureSubImage3D from a PBO; cuda: interop surfaces); 0 = no GL.
  virtual uint32_t atlasTexture() const { return 0; }
};

struct StreamStats {
  size_t requested = 0;    // tiles queued or being decoded now
  size_t delivered = 0;    // tiles handed to the sink so far
  size_t failed = 0;       // corrupt tiles so far
  size_t dropped = 0;      // finished tiles the sink had no slot for (asked again later)
  uint64_t bytesRead = 0;  // compressed payload bytes read so far
  // Host -> device traffic so far (difference per frame = per-frame figures): compressed
  // bytes (cuda: the packed batches) and decompressed samples (cpu, raw: p * p * 2 per tile;
  // cuda: always 0, the GPU decodes straight into the atlas).
  uint64_t compressedToDevice = 0;
  uint64_t samplesToDevice = 0;
  // gl: tiles it uploaded as samples (TileSink::uploadSamples, a texture upload each on the
  // render thread). Tiles decoded on its loader threads (HFAN, 2DRBUC) reach the atlas through
  // the compute shader as stored entries (their bytes in samplesToDevice), so this stays 0
  // unless one could not be laid out as an entry.
  size_t sampleUploads = 0;
  // GPU time of the strategy's own device work that has completed so far (cuda: copy + decode
  // batches, from CUDA events), milliseconds; 0 for strategies that upload through GL.
  double deviceMs = 0;
  // The VRAM-resident compressed cache (cuda with --cache vram; 0 elsewhere): tiles decoded
  // from device memory (hits) or sent over PCIe first (misses), the bytes resident now and the
  // pool's size; preloadMs is how long the background load of the whole archive took (0 while
  // it runs or when there is none).
  uint64_t cacheHits = 0, cacheMisses = 0, cacheBytes = 0, cacheCapacity = 0;
  double preloadMs = 0;
  // The host cache of compressed payloads (cuda and gl with --cache host,
  // StreamOptions::hostCacheMiB; 0 elsewhere): requests answered from it (batched in the frame of
  // the request, no loader), tiles read into it ahead of being wanted (stage), and its bytes now.
  uint64_t hostHits = 0, hostStaged = 0, hostBytes = 0;
  // cuda from host memory: the payload bytes of the tiles in its batches so far (a tile sent
  // again from the host cache counts again), what compressedToDevice carries besides records.
  uint64_t payloadToDevice = 0;
  // Progressive loading (CpuStreamStrategy progressive): tiles delivered lossy (layers 1 + 2)
  // and refined in place to exact so far, and the resident tiles still lossy now.
  size_t deliveredLossy = 0, refined = 0, lossyResident = 0;
};

class StreamStrategy {
 public:
  virtual ~StreamStrategy() = default;
  virtual const char* name() const = 0;
  // The tiles wanted now, most important first. Replaces the queue of tiles not yet started;
  // tiles already being loaded finish. Never blocks on loading.
  virtual void request(const std::vector<size_t>& tiles) = 0;
  // Tiles the camera is predicted to want that the atlas has no slot for now (RequestPlan::
  // stage, coarse first; none of them in the last request). A strategy that keeps compressed
  // payloads in memory outside the atlas may read them there after every requested tile, so
  // that a later request for one is delivered in the frame it is made. Replaces the previous
  // list; never blocks. Default: ignored (a strategy whose tiles are p * p * 2 bytes keeps
  // nothing beyond the atlas).
  virtual void stage(const std::vector<size_t>& /*tiles*/) {}
  // Hands at most `maxTiles` finished tiles to `sink`; never waits. Returns how many.
  virtual size_t deliver(TileSink& sink, size_t maxTiles) = 0;
  // Tiles this strategy may hand over per frame for each tile of the renderer's per-frame budget
  // (RenderSettings::uploadsPerFrame, counted in tiles uploaded as samples: p * p * 2 bytes over
  // PCIe and a texture upload on the render thread each). A strategy that sends tiles compressed
  // and decodes them on the GPU in one launch per batch moves 1/ratio of those bytes per tile and
  // makes no GL call per tile, so the same budget covers `ratio` times the tiles:
  // compressedDeliveryScale(). 1 for strategies that upload samples.
  virtual double deliveryScale() const { return 1.0; }
  // Loads one tile synchronously (start-up: the top level, so the first frame has data).
  virtual bool loadNow(size_t tile, TileSink& sink, std::string& error) = 0;
  // Tiles queued, being loaded or finished but not delivered (refinements of lossy tiles
  // included: a view is settled when it is exact).
  virtual size_t pending() const = 0;
  // True while `tile` holds lossy heights (delivered from layers 1 + 2, its refinement not yet
  // delivered); render thread only. Always false for strategies that load tiles whole.
  virtual bool lossy(size_t /*tile*/) const { return false; }
  virtual StreamStats stats() const = 0;
  // Collects the figures of device work that has completed (StreamStats::deviceMs); never
  // waits. Benchmarks call it after the GPU finished a frame.
  virtual void pollCompleted() {}
  // Waits until background prefetching into a cache has finished (cuda --cache vram loads the
  // whole archive into device memory when it fits); benchmarks call it before timing, so that
  // a run measures fills from the cache and not its loading. Returns at once elsewhere.
  virtual void finishPrefetch() {}
  // Frees GL/CUDA resources while the context is still current (the renderer calls it from its
  // destructor). The strategy is unusable afterwards.
  virtual void releaseGl() {}
};

// The archive's compression ratio for deliveryScale(): p * p * 2 bytes per tile over the bytes
// that cross PCIe per tile (the payload; p * p * 2 for tiles the strategy decodes on the CPU,
// those for which `decodedOnGpu(codec)` is false), clamped to 1..kMaxDeliveryScale. The cap
// bounds one frame's work (64 x 8 = 512 tiles: gl dispatches them 256 a time; cuda hands over
// one batch of at most 256 tiles per frame, so it gets at most 4x at the default 64).
constexpr double kMaxDeliveryScale = 8.0;
double compressedDeliveryScale(const hfa::ArchiveReader& archive, bool (*decodedOnGpu)(hfa::Codec));
// The tiles a strategy may deliver in one frame: `uploads` (RenderSettings::uploadsPerFrame)
// times its deliveryScale() (a scale below 1 or not a number counts as 1), without overflow.
size_t deliveryBudget(size_t uploads, double scale);

// "cpu": payloads from the archive, hfpac::decode on `threads` worker threads (0 = hardware
// concurrency - 1, at least 1). The archive must outlive the strategy.
// The loaders' read-ahead: a loader that takes `tile` off its queue also copies the next tiles
// queued behind it (under the queue's lock) and passes them all to ArchiveReader::willNeed
// (outside it), so that reads from a cold disk overlap instead of faulting in one at a time.
struct ReadAhead {
  static constexpr size_t kTiles = 32;
  size_t tiles[kTiles + 1];
  size_t count = 0;
  void take(size_t tile, const std::deque<size_t>& queue) {
    tiles[0] = tile;
    count = 1;
    for (size_t t : queue) {
      if (count > kTiles) break;
      tiles[count++] = t;
    }
  }
  void advise(const hfa::ArchiveReader& archive) const;  // stream.cpp
};

//
// Progressive (`progressive` true, hfview --progressive): a tile is first read up to its
// layers 1 + 2 and decoded at L12 (ArchiveReader::decodeTileLossy: a fraction of the bytes,
// heights within 2^(b-1)), delivered, and then refined in place: once every requested tile has
// been delivered, the workers read the rest of the payloads of the lossy tiles (the most recently delivered
// first), decode them exactly (CRC checked) and deliver() uploads them into the tile's slot
// (TileSink::residentSlot; a tile evicted meanwhile is simply not refined). pending() counts
// the refinements still to do.
// Progressive loading's refinements, shared by the cpu and cuda loaders (guarded by the
// strategy's mutex): tiles delivered lossy wait here, the newest first, and a loader takes one
// only when no wanted tile waits and every requested one has been delivered (a refinement's
// read would otherwise queue before theirs on a slow disk).
struct RefineQueue {
  std::deque<size_t> waiting;           // delivered lossy, not taken yet (newest at the back)
  std::unordered_set<size_t> pending;   // waiting, being read, or read and not delivered
  std::vector<uint32_t> prefixBytes;    // per tile: what its lossy read took

  // A loader's next job: the front of `wanted`, else a refinement (`refinement` true,
  // `alreadyRead` its prefix). Call only when ready().
  bool ready(const std::deque<size_t>& wanted, size_t activeCount) const {
    return !wanted.empty() || (!waiting.empty() && activeCount == 0);
  }
  size_t take(std::deque<size_t>& wanted, bool& refinement, uint32_t& alreadyRead) {
    refinement = wanted.empty();
    if (!refinement) {
      const size_t t = wanted.front();
      wanted.pop_front();
      return t;
    }
    const size_t t = waiting.back();
    waiting.pop_back();
    alreadyRead = prefixBytes[t];
    return t;
  }
  // deliver(): refinements delivered (or dropped), tiles newly delivered lossy.
  void update(const std::vector<size_t>& refined, const std::vector<size_t>& lossy) {
    for (size_t t : refined) pending.erase(t);
    for (size_t t : lossy)
      if (pending.insert(t).second) waiting.push_back(t);
  }
  void clear() {
    waiting.clear();
    pending.clear();
  }
};

class CpuStreamStrategy final : public StreamStrategy {
 public:
  CpuStreamStrategy(const hfa::ArchiveReader& archive, int threads = 0, bool progressive = false);
  ~CpuStreamStrategy() override;
  CpuStreamStrategy(const CpuStreamStrategy&) = delete;
  CpuStreamStrategy& operator=(const CpuStreamStrategy&) = delete;

  const char* name() const override { return "cpu"; }
  void request(const std::vector<size_t>& tiles) override;
  size_t deliver(TileSink& sink, size_t maxTiles) override;
  bool loadNow(size_t tile, TileSink& sink, std::string& error) override;
  size_t pending() const override;
  StreamStats stats() const override;
  bool lossy(size_t tile) const override { return tile < lossy_.size() && lossy_[tile]; }

 private:
  struct Done {
    size_t tile;
    std::vector<uint16_t> samples;
    std::string error;  // non-empty: failed
    bool lossy = false;       // layers 1 + 2 only (progressive)
    bool refinement = false;  // the exact samples of a tile delivered lossy
  };
  void worker();

  const hfa::ArchiveReader& archive_;
  const bool progressive_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<size_t> queue_;            // not started
  std::unordered_set<size_t> active_;   // queued, decoding, or done and not delivered
  // Progressive: the refinements (RefineQueue); lossy_ per tile, written by deliver() only.
  RefineQueue refine_;
  std::vector<uint8_t> lossy_;
  std::deque<Done> done_;
  StreamStats stats_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

// Makes a strategy by name: "cpu" only (GL-free). "raw" and "cuda" need the GL renderer: use
// hfr::makeRenderStreamStrategy (render/gl/stream_gl.h); here they give nullptr and an error.
std::unique_ptr<StreamStrategy> makeStreamStrategy(const std::string& name,
                                                   const hfa::ArchiveReader& archive,
                                                   std::string& error, int threads = 0,
                                                   bool progressive = false);

}  // namespace hfr
