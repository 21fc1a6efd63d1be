// stream_cuda.cpp - the "cuda" strategy (stream_gl.h; built only with the GPU codec,
// HF_HAVE_CUDA_STREAM).
//
// Loader threads (kLoaders) read each compressed payload from the archive mmap (CRC checked, so the
// pages are in memory before the render thread sees the tile), check its geometry and validate its
// stream with the CPU decoder's checks (hfgpu::validateStream). Several, so that reads stay in
// flight while a loader validates: with one, a throttled or cold source idled between tiles.
// The render thread, in deliver(), takes up to `maxTiles` loaded tiles, reserves their atlas
// slots and hands them as one batch to the next idle of K (GpuDecoder, CUDA stream) pairs, in
// turn (their memory sized once for the archive's largest batch): prepareValidated() only packs a
// 48-byte record per tile and the compressed streams into the decoder's pinned staging, one
// cudaMemcpyAsync moves them to the device, a kernel builds the decode descriptors there, then,
// with the atlas texture (registered once with
// cudaGraphicsRegisterFlagsSurfaceLoadStore) mapped on that stream, one launch decodes every
// tile of the batch into its layer through one surface object per touched layer
// (cudaGraphicsSubResourceGetMappedArray(layer), made per map and destroyed when that pair is
// reused); unmap on the same stream orders the writes before GL's next use of the texture. No
// decompressed sample crosses PCIe or touches the CPU; the render thread never waits for the GPU:
// a batch goes to a pair whose previous batch has completed, and when every pair is busy that
// frame delivers nothing (the tiles wait in the ready list for the next).
//
// HFAN tiles (archives of codec hfan or auto) go in the same batches: read whole, their header
// and geometry checked on a loader thread, decoded by the pair's hfgpu::AnsSurfaceDecoder (the
// GPU's rANS decoder into device scratch, then into the layers' surfaces) on the same stream
// before the unmap. Not with --cache vram (its pool holds HFPaC entries only).
//
// --cache vram (StreamOptions::vramCache): tiles are kept compressed in a device pool
// (gpu/resident_decoder.h) whose bookkeeping is a CompressedCache (LRU, pins for batches in
// flight). A loader thread validates each tile and lays it out as a pool entry, so the render
// thread only copies bytes; a batch uploads 48-byte records for tiles already in the pool (hits)
// and the entries of the others (misses), which it places in the pool before decoding. When the
// whole archive fits, a preload thread loads it into the pool in the background (16 MiB copies),
// after which no tile crosses PCIe again. A tile's entry is used by later batches only once the
// batch (or preload chunk) that placed it has completed (state kPending -> kReady).
//
// Progressive (StreamOptions::progressive, without --cache vram): a loader reads a tile's
// header and layers 1 + 2 only (ArchiveReader::copyLossyPayload), validates the stream (the checks
// read nothing past layer 2) and only those bytes are packed and sent; the batch decodes them at
// L12 (the kernels read no low field at L12). Once no wanted tile waits, the loaders read the
// rest of the lossy tiles' payloads (CRC checked), and their whole streams are decoded again,
// exactly, into the tile's slot (TileSink::residentSlot): refined in place. A batch holds tiles
// of one decode mode. (DecodeMode::Refine, which adds layers 2 + 3 to a layer-1 decode, would
// need the lossy view to be layer 1 alone, a far coarser first view.)
#ifdef HF_HAVE_CUDA_STREAM

#include <glad/gl.h>
// After glad (which defines __gl_h_): cuda_gl_interop.h then does not pull in GL/gl.h.
#include <cuda_gl_interop.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <thread>
#include <unordered_set>
#include <vector>

#include "archive/archive.h"
#include "codec/ans.h"
#include "gpu/ans_decoder.h"
#include "gpu/cuda_util.h"
#include "gpu/decoder.h"
#include "gpu/resident_decoder.h"
#include "render/gl/stream_gl.h"
#include "render/stream/compressed_cache.h"
#include "render/stream/staged_payloads.h"

namespace hfr {

namespace {

class CudaStreamStrategy final : public StreamStrategy {
 public:
  CudaStreamStrategy(const hfa::ArchiveReader& archive, const StreamOptions& options)
      : archive_(archive), p_(archive.header().tileSize()) {
    pairs_.resize(size_t(std::max(1, options.streams)));
    for (auto& pr : pairs_) pr = std::make_unique<Pair>();
    const hfa::Codec codec = archive.header().codec;
    if (options.vramCache && (codec == hfa::Codec::Hfan || codec == hfa::Codec::Auto))
      throw std::runtime_error("--cache vram holds HFPaC tiles only, and this archive has hfan tiles");
    if (options.vramCache) makeVram(options.cacheMiB);
    reserveBatches();
    progressive_ = options.progressive && !vram_;
    if (!vram_ && !progressive_ && options.hostCacheMiB > 0)
      host_ = std::make_unique<StagedPayloads<Loaded>>(uint64_t(options.hostCacheMiB * 1048576));
    lossy_.assign(archive.tiles().size(), 0);
    refine_.prefixBytes.assign(archive.tiles().size(), 0);
    for (int i = 0; i < kLoaders; ++i) loaders_.emplace_back([this] { load(); });
    if (vram_ && vram_->preload) vram_->preloader = std::thread([this] { preload(); });
    // Every tile but a raw one travels compressed (HFAN decoded by the GPU's ANS decoder).
    deliveryScale_ = compressedDeliveryScale(archive, [](hfa::Codec c) { return c != hfa::Codec::Raw; });
  }
  ~CudaStreamStrategy() override {
    stopLoader();
    // Without releaseGl (no renderer was made): only CUDA objects, no GL calls needed.
    try {
      for (auto& pr : pairs_) finish(*pr);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "Warning: cuda streaming: %s\n", e.what());
    }
  }
  CudaStreamStrategy(const CudaStreamStrategy&) = delete;
  CudaStreamStrategy& operator=(const CudaStreamStrategy&) = delete;

  const char* name() const override { return fallback_ ? fallback_->name() : "cuda"; }
  double deliveryScale() const override { return fallback_ ? fallback_->deliveryScale() : deliveryScale_; }

  void request(const std::vector<size_t>& tiles) override {
    if (fallback_) return fallback_->request(tiles);
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t t : queue_) active_.erase(t);
    queue_.clear();
    if (vram_) {
      for (size_t t : vram_->hits) active_.erase(t);
      vram_->hits.clear();
    }
    std::vector<Loaded> inMemory;  // --cache host: read before, batched this frame
    for (size_t t : tiles) {
      if (t >= archive_.tiles().size()) continue;
      if (!active_.insert(t).second) continue;
      if (vram_ && vram_->state[t] == kReady) {
        vram_->hits.push_back(t);  // no read needed
      } else if (const Loaded* kept = host_ ? host_->find(t) : nullptr) {
        inMemory.push_back(*kept);
        inMemory.back().data = inMemory.back().bytes.data();
      } else {
        queue_.push_back(t);
      }
    }
    // Ahead of tiles loaded for earlier requests: these are wanted now (most important first).
    ready_.insert(ready_.begin(), std::make_move_iterator(inMemory.begin()),
                  std::make_move_iterator(inMemory.end()));
    stats_.hostHits += inMemory.size();
    last_ = tiles;
    if (refine_.ready(queue_, active_.size())) wake_.notify_all();
  }

  void stage(const std::vector<size_t>& tiles) override {
    if (fallback_) return fallback_->stage(tiles);
    if (!host_) return;
    std::lock_guard<std::mutex> lock(mutex_);
    host_->stage(tiles,
                 [&](size_t t) { return t >= archive_.tiles().size() || active_.count(t) != 0; });
    if (host_->hasStaged() && queue_.empty()) wake_.notify_all();
  }

  size_t deliver(TileSink& sink, size_t maxTiles) override {
    if (fallback_) return fallback_->deliver(sink, maxTiles);
    try {
      if (!ensureInterop(sink)) return fallback_->deliver(sink, maxTiles);
      return deliverBatch(sink, std::min<size_t>(maxTiles, hfgpu::kMaxSurfacesPerLaunch));
    } catch (const std::exception& e) {
      fallBack(std::string("CUDA error: ") + e.what());
      return 0;
    }
  }

  bool loadNow(size_t tile, TileSink& sink, std::string& error) override {
    if (fallback_) return fallback_->loadNow(tile, sink, error);
    try {
      if (!ensureInterop(sink)) return fallback_->loadNow(tile, sink, error);
      Loaded l = read(tile);
      if (!l.error.empty()) {
        error = l.error;
        sink.failed(tile, error);
        return false;
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ready_.push_front(l);
        active_.insert(tile);
      }
      // Deliver exactly this tile now and wait for its decode (start-up only).
      Pair& pr = *pairs_[next_ % pairs_.size()];
      const size_t n = deliverBatch(sink, 1, &tile);
      pr.done.synchronize();
      if (n != 1) {
        error = archive_.tileName(tile) + ": not decoded";
        return false;
      }
      return true;
    } catch (const std::exception& e) {
      fallBack(std::string("CUDA error: ") + e.what());
      return fallback_->loadNow(tile, sink, error);
    }
  }

  size_t pending() const override {
    if (fallback_) return fallback_->pending();
    std::lock_guard<std::mutex> lock(mutex_);
    return active_.size() + refine_.pending.size();
  }
  bool lossy(size_t tile) const override {
    if (fallback_) return fallback_->lossy(tile);
    return tile < lossy_.size() && lossy_[tile];
  }
  StreamStats stats() const override {
    StreamStats s;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      s = stats_;
      s.requested = active_.size();
      s.lossyResident = size_t(std::count(lossy_.begin(), lossy_.end(), uint8_t(1)));
      if (vram_) {
        s.cacheBytes = vram_->index.usedBytes();
        s.cacheCapacity = vram_->index.capacity();
      }
      if (host_) s.hostBytes = host_->bytes();
    }
    if (fallback_) {
      const StreamStats f = fallback_->stats();
      s.requested = f.requested;
      s.delivered += f.delivered;
      s.failed += f.failed;
      s.dropped += f.dropped;
      s.bytesRead += f.bytesRead;
      s.compressedToDevice += f.compressedToDevice;
      s.samplesToDevice += f.samplesToDevice;
      s.deliveredLossy += f.deliveredLossy;
      s.refined += f.refined;
      s.lossyResident = f.lossyResident;
    }
    return s;
  }

  void finishPrefetch() override {
    if (fallback_ || !vram_ || !vram_->preload) return;
    std::unique_lock<std::mutex> lock(mutex_);
    vram_->preloadedCv.wait(lock, [&] { return vram_->preloadDone; });
  }

  // Batches whose decode has completed are finished now (no wait): their surfaces are freed and
  // their GPU time counted.
  void pollCompleted() override {
    if (fallback_) return fallback_->pollCompleted();
    try {
      for (auto& pr : pairs_)
        if (pr->busy && pr->done.ready()) finish(*pr);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "Warning: cuda streaming: %s\n", e.what());
    }
  }

  void releaseGl() override {
    stopLoader();
    try {
      for (auto& pr : pairs_) finish(*pr);
      if (resource_) CUDA_CHECK(cudaGraphicsUnregisterResource(resource_));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "Warning: cuda streaming: %s\n", e.what());
    }
    resource_ = nullptr;
    if (fallback_) fallback_->releaseGl();
  }

 private:
  struct Loaded {
    size_t tile;
    const uint8_t* data;
    size_t size;
    std::string error;
    // --cache vram: the tile's pool entry (loader thread), or a hit (no bytes needed).
    std::vector<uint8_t> entryBytes;
    hfgpu::ResidentEntry entry;
    bool hit = false;
    // Without the cache: the stream validated on the loader thread (the render thread packs).
    hfgpu::ValidatedStream checked;
    bool ans = false;         // an HFAN tile (codec hfan / auto): the ANS decoder's, read whole
    bool lossy = false;       // progressive: only the header and layers 1 + 2 (size = those bytes)
    bool refinement = false;  // progressive: the whole stream of a tile delivered lossy
    uint32_t bytesRead = 0;   // from the archive for this load
    // The payload copied out of the archive's mapping (ArchiveReader::copyPayload: a file
    // changed on disk is an error, not a SIGBUS); `data` points into it on the loader thread,
    // deliverBatch uses bytes.data() (a Loaded may have been copied since).
    std::vector<uint8_t> bytes;
  };
  enum : uint8_t { kAbsent = 0, kPending = 1, kReady = 2 };
  // --cache vram. Guarded by mutex_ except `pool` (fixed) and the preload thread's own data.
  struct Vram {
    std::unique_ptr<hfgpu::ResidentPool> pool;
    CompressedCache index;
    std::vector<hfgpu::ResidentEntry> entries;  // per tile, valid unless kAbsent
    std::vector<uint8_t> state;                 // per tile
    std::deque<size_t> hits;                    // requested tiles that are kReady
    bool preload = false, preloadDone = false;
    std::condition_variable preloadedCv;
    std::atomic<bool> stopPreload{false};
    std::thread preloader;
    explicit Vram(uint64_t bytes) : index(bytes, 256) {}
  };
  struct Pair {
    hfgpu::GpuDecoder decoder;
    hfgpu::Stream stream;
    hfgpu::Event start;  // timing events: StreamStats::deviceMs (copy + decode of a batch)
    hfgpu::Event done;
    bool busy = false;
    std::vector<size_t> tiles;  // of the batch in flight (for the OutOfRange report)
    std::vector<cudaSurfaceObject_t> surfaces;
    hfgpu::AnsSurfaceDecoder ans;   // the batch's HFAN tiles
    std::vector<size_t> ansTiles;   // of the batch in flight, as given to ans.prepare()
    hfgpu::ResidentBatch resident;  // --cache vram
    std::vector<size_t> misses;     // --cache vram: entries this batch places (kPending)
  };

  // `mode`: 0 whole, 1 lossy first (progressive), 2 the refinement of a tile read lossy.
  Loaded read(size_t tile, int mode = 0, uint32_t alreadyRead = 0) const {
    Loaded l{tile, nullptr, 0, {}, {}, {}, false, {}, false, false, mode == 2, 0, {}};
    const hfa::Codec codec = archive_.tiles()[tile].codec;
    if (codec == hfa::Codec::Hfan) {
      // Whole (no layers), header and geometry checked here; the kernel checks the rest.
      if (!archive_.copyPayload(tile, l.bytes, l.error)) {
        if (l.error.empty()) l.error = archive_.tileName(tile) + ": unreadable";
        return l;
      }
      l.ans = true;
      l.data = l.bytes.data();
      l.size = l.bytes.size();
      l.bytesRead = uint32_t(l.size);
      hfpac::AnsInfo info;
      const hfpac::Status s = hfpac::ansReadInfo(l.data, l.size, info);
      if (s != hfpac::Status::Ok)
        l.error = archive_.tileName(tile) + ": " + hfpac::statusMessage(s);
      else if (info.width != p_ || info.height != p_ || info.type != archive_.header().sampleType)
        l.error = archive_.tileName(tile) + ": patch geometry or sample type disagrees with the header";
      else if (info.lanes > hfgpu::kAnsGpuMaxLanes)
        l.error = archive_.tileName(tile) + ": " + std::to_string(info.lanes) + " rANS lanes (the GPU decodes up to " +
                  std::to_string(hfgpu::kAnsGpuMaxLanes) + ")";
      return l;
    }
    uint32_t prefix = 0;
    const bool ok = mode == 1 ? archive_.copyLossyPayload(tile, l.bytes, prefix, l.error)
                              : archive_.copyPayload(tile, l.bytes, l.error, alreadyRead);
    if (!ok) {
      if (l.error.empty()) l.error = archive_.tileName(tile) + ": unreadable";
      return l;
    }
    l.data = l.bytes.data();
    l.size = l.bytes.size();
    l.bytesRead = mode == 1 ? prefix : uint32_t(l.size - alreadyRead);
    hfpac::PatchInfo info;
    const hfpac::Status s = hfpac::readInfo(l.data, l.size, info);
    if (!hfa::isHfpacCodec(archive_.tiles()[tile].codec))  // refused when the strategy was made
      l.error = archive_.tileName(tile) + ": not an HFPaC tile (codec " + hfa::codecName(archive_.tiles()[tile].codec) + ")";
    else if (s != hfpac::Status::Ok)
      l.error = archive_.tileName(tile) + ": " + hfpac::statusMessage(s);
    else if (info.width != p_ ||
             info.height != p_ || info.type != archive_.header().sampleType)
      l.error = archive_.tileName(tile) + ": patch geometry or sample type disagrees with the header";
    else if (vram_) {
      // Validation and layout here, off the render thread.
      const hfpac::Status st = hfgpu::makeResidentEntry(l.data, l.size, l.entryBytes, l.entry);
      if (st != hfpac::Status::Ok) l.error = archive_.tileName(tile) + ": " + hfpac::statusMessage(st);
      l.bytes = {};  // the entry holds what the pool needs
      l.data = nullptr;
    } else {
      // Validation here, off the render thread: deliver() only packs the bytes.
      l.checked = hfgpu::validateStream(l.data, l.size);
      if (l.checked.status != hfpac::Status::Ok)
        l.error = archive_.tileName(tile) + ": " + hfpac::statusMessage(l.checked.status);
      else if (mode == 1 && prefix < l.size && !l.checked.rbuc) {
        // Only the header and layers 1 + 2 are packed and sent (decoded at L12).
        l.lossy = true;
        l.size = prefix;
        l.checked.streamBytes = prefix;
      }
    }
    return l;
  }

  void load() {
    for (;;) {
      size_t tile;
      ReadAhead ahead;
      bool refinement = false, staged = false;
      uint32_t alreadyRead = 0;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        // Wanted tiles first, refinements when every requested tile has been delivered, staged
        // tiles (--cache host) when no wanted tile waits.
        wake_.wait(lock, [&] {
          return stop_ || refine_.ready(queue_, active_.size()) || (host_ && host_->hasStaged());
        });
        if (stop_) return;
        staged = queue_.empty() && host_ && host_->hasStaged();
        if (staged) {
          tile = host_->takeStaged();
          ahead.take(tile, host_->staged());
        } else {
          tile = refine_.take(queue_, refinement, alreadyRead);
          if (!refinement) ahead.take(tile, queue_);
        }
      }
      if (!refinement) ahead.advise(archive_);
      Loaded l = read(tile, refinement ? 2 : (progressive_ ? 1 : 0), alreadyRead);
      std::lock_guard<std::mutex> lock(mutex_);
      stats_.bytesRead += l.error.empty() ? l.bytesRead : 0;
      if (l.lossy) refine_.prefixBytes[tile] = l.bytesRead;
      if (staged && l.error.empty()) ++stats_.hostStaged;
      if (!host_ || host_->keepRead(tile, staged, l.error.empty(), l.bytes.size(), l, queue_))
        ready_.push_back(std::move(l));
    }
  }

  void stopLoader() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : loaders_)
      if (t.joinable()) t.join();
    loaders_.clear();
    if (vram_) {
      vram_->stopPreload = true;
      if (vram_->preloader.joinable()) vram_->preloader.join();
    }
  }

  // The pool: cacheMiB, or the whole archive's entries when they fit in half the free device
  // memory (else that half). The whole archive is preloaded when it fits.
  void makeVram(double cacheMiB) {
    uint64_t whole = 0;
    for (const auto& t : archive_.tiles())
      whole += (hfgpu::residentEntryBound(t.size) + 255) / 256 * 256;
    size_t freeBytes = 0, totalBytes = 0;
    CUDA_CHECK(cudaMemGetInfo(&freeBytes, &totalBytes));
    const uint64_t half = freeBytes / 2;
    const uint64_t budget = cacheMiB > 0 ? uint64_t(cacheMiB * 1024 * 1024) : std::min<uint64_t>(whole, half);
    if (budget > freeBytes)
      throw std::runtime_error("--cache vram:" + std::to_string(int64_t(cacheMiB)) + " is more than the " +
                               std::to_string(freeBytes >> 20) + " MiB of free device memory");
    vram_ = std::make_unique<Vram>(std::max<uint64_t>(budget, 1 << 20));
    vram_->pool = std::make_unique<hfgpu::ResidentPool>(vram_->index.capacity());
    vram_->entries.resize(archive_.tiles().size());
    vram_->state.assign(archive_.tiles().size(), kAbsent);
    vram_->preload = whole <= vram_->index.capacity();
    vram_->preloadDone = !vram_->preload;
  }

  // The background load of the whole archive into the pool, in archive order (coarse levels
  // first), through a 16 MiB pinned buffer; tiles the render thread placed already are skipped.
  void preload() {
    const auto t0 = std::chrono::steady_clock::now();
    try {
      constexpr size_t kChunk = size_t(16) << 20;
      hfgpu::Stream stream;
      hfgpu::PinnedBuffer<uint8_t> chunk(kChunk);
      struct Placed {
        size_t tile;
        uint64_t poolOffset, chunkOffset, bytes;
      };
      std::vector<Placed> placed;
      size_t used = 0;
      auto flush = [&] {
        if (placed.empty()) return;
        for (size_t i = 0; i < placed.size();) {  // contiguous runs in one copy
          size_t j = i + 1;
          uint64_t n = placed[i].bytes;
          while (j < placed.size() && placed[j].poolOffset == placed[i].poolOffset + n &&
                 placed[j].chunkOffset == placed[i].chunkOffset + n)
            n += placed[j++].bytes;
          CUDA_CHECK(cudaMemcpyAsync(vram_->pool->base() + placed[i].poolOffset, chunk.get() + placed[i].chunkOffset,
                                     size_t(n), cudaMemcpyHostToDevice, stream));
          i = j;
        }
        stream.synchronize();
        std::lock_guard<std::mutex> lock(mutex_);
        for (const Placed& pl : placed) {
          vram_->index.unpin(pl.tile);
          if (vram_->state[pl.tile] == kPending && vram_->index.contains(pl.tile)) vram_->state[pl.tile] = kReady;
        }
        stats_.compressedToDevice += used;
        placed.clear();
        used = 0;
      };
      std::vector<uint8_t> bytes;
      for (size_t t = 0; t < archive_.tiles().size() && !vram_->stopPreload; ++t) {
        {
          std::lock_guard<std::mutex> lock(mutex_);
          if (vram_->index.contains(t)) continue;
        }
        Loaded l = read(t);
        if (!l.error.empty() || l.entryBytes.size() > kChunk) continue;  // the demand path reports it
        if (used + l.entryBytes.size() > kChunk) flush();
        {
          std::lock_guard<std::mutex> lock(mutex_);
          stats_.bytesRead += archive_.tiles()[t].size;
          if (vram_->index.contains(t)) continue;
          std::vector<size_t> evicted;
          const int64_t at = vram_->index.insert(t, l.entry.bytes, &evicted);
          for (size_t k : evicted) vram_->state[k] = kAbsent;
          if (at < 0) break;  // full after all (entries larger than their bound): stop
          l.entry.offset = uint64_t(at);
          vram_->entries[t] = l.entry;
          vram_->state[t] = kPending;
          vram_->index.pin(t);  // never evicted (and its place reused) while its copy is in flight
        }
        std::memcpy(chunk.get() + used, l.entryBytes.data(), l.entryBytes.size());
        placed.push_back({t, l.entry.offset, used, l.entryBytes.size()});
        used += l.entryBytes.size();
      }
      flush();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "Warning: cuda streaming: preloading the VRAM cache: %s\n", e.what());
    }
    std::lock_guard<std::mutex> lock(mutex_);
    vram_->preloadDone = true;
    stats_.preloadMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    vram_->preloadedCv.notify_all();
  }

  bool ensureInterop(TileSink& sink) {
    if (resource_) return true;
    const GLuint tex = sink.atlasTexture();
    cudaError_t e = tex ? cudaGraphicsGLRegisterImage(&resource_, tex, GL_TEXTURE_2D_ARRAY,
                                                      cudaGraphicsRegisterFlagsSurfaceLoadStore)
                        : cudaErrorInvalidValue;
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      resource_ = nullptr;
      fallBack(std::string("cannot register the atlas with CUDA (") + cudaGetErrorName(e) +
               "; is the GL context on the CUDA device?)");
      return false;
    }
    return true;
  }

  void fallBack(const std::string& why) {
    std::fprintf(stderr, "Note: --stream cuda: %s; falling back to cpu\n", why.c_str());
    stopLoader();
    fallback_ = std::make_unique<CpuStreamStrategy>(archive_, 0, progressive_);
    std::vector<size_t> again;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      again = last_;
      queue_.clear();
      ready_.clear();
      active_.clear();
      refine_.clear();
    }
    fallback_->request(again);
  }

  // Sizes every pair's staging and device memory for the largest batch this archive can make
  // (its kMaxSurfacesPerLaunch largest tiles), so that no batch allocates. Grown batch by batch,
  // the buffers reallocated while a view filled: a pinned allocation costs about a millisecond
  // and cudaFree synchronises the device.
  void reserveBatches() {
    std::vector<uint64_t> hfpacBytes, ansBytes;
    for (const hfa::TileEntry& t : archive_.tiles()) {
      if (t.codec == hfa::Codec::Hfan)
        ansBytes.push_back(t.size);
      else if (hfa::isHfpacCodec(t.codec))
        hfpacBytes.push_back(vram_ ? hfgpu::residentEntryBound(t.size) : t.size);
    }
    // The count and the total bytes of the batch of the largest tiles.
    auto largest = [](std::vector<uint64_t>& bytes) {
      const size_t n = std::min<size_t>(bytes.size(), hfgpu::kMaxSurfacesPerLaunch);
      std::partial_sort(bytes.begin(), bytes.begin() + ptrdiff_t(n), bytes.end(), std::greater<>());
      return std::make_pair(
          n, std::accumulate(bytes.begin(), bytes.begin() + ptrdiff_t(n), uint64_t(0)));
    };
    const auto [patches, streamBytes] = largest(hfpacBytes);
    const auto [ansPatches, ansStreamBytes] = largest(ansBytes);
    const uint64_t areasPerTile = uint64_t((p_ + 15) / 16) * uint64_t((p_ + 15) / 16);
    for (auto& pr : pairs_) {
      if (patches > 0 && vram_) pr->resident.reserve(patches, streamBytes, patches * areasPerTile);
      if (patches > 0 && !vram_) pr->decoder.reserve(patches, streamBytes, patches * areasPerTile);
      if (ansPatches > 0)
        pr->ans.reserve(ansPatches, ansStreamBytes, ansPatches * uint64_t(p_) * uint64_t(p_));
    }
  }

  // The pair the next batch goes to, its previous batch finished (so its staging and surfaces are
  // free), and next_ set to it: the first in turn whose batch has completed, or, when all are still
  // running, null, unless `wait` (start-up's single tiles), which waits for the next in turn. The
  // render thread never waits for the GPU in a frame: it delivers nothing and tries next frame.
  Pair* takePair(bool wait) {
    const size_t k = pairs_.size();
    for (size_t i = 0; i < k; ++i) {
      Pair& pr = *pairs_[(next_ + i) % k];
      if (pr.busy && !pr.done.ready()) continue;
      next_ += i;
      finish(pr);
      return &pr;
    }
    if (!wait) return nullptr;
    Pair& pr = *pairs_[next_ % k];
    finish(pr);
    return &pr;
  }

  // Waits for a pair's batch, reports kernel OutOfRange flags, destroys its surfaces.
  void finish(Pair& pr) {
    if (!pr.busy) return;
    pr.busy = false;
    pr.done.synchronize();
    {
      const double ms = double(pr.done.elapsedMsSince(pr.start));
      std::lock_guard<std::mutex> lock(mutex_);
      stats_.deviceMs += ms;
    }
    const std::vector<hfpac::Status> st = vram_ ? pr.resident.statuses() : pr.decoder.statuses();
    if (vram_) {
      std::lock_guard<std::mutex> lock(mutex_);
      for (size_t t : pr.tiles) vram_->index.unpin(t);
      for (size_t t : pr.misses)
        if (vram_->state[t] == kPending && vram_->index.contains(t)) vram_->state[t] = kReady;
      pr.misses.clear();
    }
    for (size_t i = 0; i < st.size() && i < pr.tiles.size(); ++i)
      if (st[i] == hfpac::Status::OutOfRange)
        std::fprintf(stderr, "Warning: %s: %s (clamped)\n", archive_.tileName(pr.tiles[i]).c_str(),
                     hfpac::statusMessage(st[i]));
    // HFAN tiles refused by the kernel (a word stream that passed the CRC and the header checks
    // but not the decoder's: a faulty writer) were not written: their slots hold stale heights.
    // (Tiles refused on the host were reported when the batch was made.)
    if (!pr.ansTiles.empty()) {
      const std::vector<hfpac::Status> ast = pr.ans.statuses();
      const std::vector<hfpac::Status>& host = pr.ans.headerStatuses();
      for (size_t i = 0; i < ast.size() && i < pr.ansTiles.size(); ++i)
        if (host[i] == hfpac::Status::Ok && ast[i] != hfpac::Status::Ok)
          std::fprintf(stderr, "Warning: %s: %s (not decoded; its slot keeps stale heights)\n",
                       archive_.tileName(pr.ansTiles[i]).c_str(), hfpac::statusMessage(ast[i]));
      pr.ansTiles.clear();
    }
    for (cudaSurfaceObject_t s : pr.surfaces) CUDA_LOG(cudaDestroySurfaceObject(s));
    pr.surfaces.clear();
  }

  // Maps the atlas on the pair's stream and makes one surface per touched layer (kept until the
  // pair is finished).
  hfgpu::Target mapLayers(Pair& pr, const std::map<uint32_t, uint32_t>& layerIndex) {
    CUDA_CHECK(cudaGraphicsMapResources(1, &resource_, pr.stream));
    pr.surfaces.assign(layerIndex.size(), 0);
    for (const auto& [layer, index] : layerIndex) {
      cudaArray_t array = nullptr;
      CUDA_CHECK(cudaGraphicsSubResourceGetMappedArray(&array, resource_, layer, 0));
      cudaResourceDesc rd{};
      rd.resType = cudaResourceTypeArray;
      rd.res.array.array = array;
      CUDA_CHECK(cudaCreateSurfaceObject(&pr.surfaces[index], &rd));
    }
    return hfgpu::Target::surfaceSet(pr.surfaces.data(), int(pr.surfaces.size()));
  }
  // Unmaps on the pair's stream (ordering the writes before GL's next use) and marks it busy.
  void unmapLayers(Pair& pr, const std::vector<size_t>& tiles) {
    CUDA_CHECK(cudaGraphicsUnmapResources(1, &resource_, pr.stream));
    pr.done.record(pr.stream);
    pr.busy = true;
    pr.tiles = tiles;
  }

  // --cache vram: one batch of hits (entries in the pool) and misses (loaded entries, placed in
  // the pool by this batch), at most maxTiles (only `only` when given).
  size_t deliverResident(TileSink& sink, size_t maxTiles, const size_t* only) {
    Vram& v = *vram_;
    Pair* const idle = takePair(only != nullptr);
    if (!idle) return 0;  // every pair's batch still runs: nothing this frame rather than a stall
    if (only) {  // start-up: a tile the preload is placing right now is ready within a chunk
      for (int i = 0; i < 5000; ++i) {
        {
          std::lock_guard<std::mutex> lock(mutex_);
          if (v.state[*only] != kPending) break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
    std::vector<Loaded> batch;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (only) {
        for (auto it = ready_.begin(); it != ready_.end(); ++it)
          if (it->tile == *only) {
            batch.push_back(std::move(*it));
            ready_.erase(it);
            break;
          }
      } else {
        while (!v.hits.empty() && batch.size() < maxTiles) {
          Loaded l{v.hits.front(), nullptr, 0, {}, {}, {}, true, {}, false, false, false, 0, {}};
          v.hits.pop_front();
          batch.push_back(std::move(l));
        }
        while (!ready_.empty() && batch.size() < maxTiles) {
          batch.push_back(std::move(ready_.front()));
          ready_.pop_front();
        }
      }
    }
    if (batch.empty()) return 0;
    Pair& pr = *idle;  // its previous batch finished: staging free, entries unpinned
    pr.resident.clear();
    std::vector<size_t> tiles, finished, again;  // again: evicted since requested: read again
    std::vector<AtlasSlot> slots;
    std::deque<Loaded> later;                     // being placed by another batch: next time
    std::map<uint32_t, uint32_t> layerIndex;
    size_t failed = 0, dropped = 0, hits = 0, misses = 0;
    for (Loaded& l : batch) {
      const size_t t = l.tile;
      if (!l.error.empty()) {
        finished.push_back(t);
        sink.failed(t, l.error);
        ++failed;
        continue;
      }
      hfgpu::ResidentEntry e;
      bool miss = false;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (v.state[t] == kReady) {
          e = v.entries[t];
          v.index.find(t);  // most recently used
        } else if (l.hit) {
          again.push_back(t);
          continue;
        } else if (v.state[t] == kPending) {
          later.push_back(std::move(l));
          continue;
        } else {
          std::vector<size_t> evicted;
          const int64_t at = v.index.insert(t, l.entry.bytes, &evicted);
          for (size_t k : evicted) v.state[k] = kAbsent;
          if (at < 0) {  // the pool is full of entries in flight: next time
            later.push_back(std::move(l));
            continue;
          }
          e = l.entry;
          e.offset = uint64_t(at);
          v.entries[t] = e;
          v.state[t] = kPending;
          miss = true;
        }
        v.index.pin(t);
      }
      AtlasSlot slot;
      const bool reserved = sink.reserve(t, slot);
      bool added = false;
      if (reserved) {  // (a layer whose only tile is refused below keeps an unused surface: harmless)
        hfgpu::ResidentTarget d;
        d.surface = layerIndex.emplace(slot.layer, uint32_t(layerIndex.size())).first->second;
        d.x = int(slot.x);
        d.y = int(slot.y);
        added = miss ? pr.resident.addMiss(l.entryBytes.data(), e, d) : pr.resident.addHit(e, d);
      }
      if (!added) {
        std::lock_guard<std::mutex> lock(mutex_);
        v.index.unpin(t);
        if (miss) {
          v.index.erase(t);
          v.state[t] = kAbsent;
        }
        finished.push_back(t);
        if (reserved) {
          sink.failed(t, archive_.tileName(t) + ": not decodable into its atlas slot");
          ++failed;
        } else {
          ++dropped;
        }
        continue;
      }
      (miss ? misses : hits) += 1;
      if (miss) pr.misses.push_back(t);
      finished.push_back(t);
      tiles.push_back(t);
      slots.push_back(slot);
    }
    size_t committed = 0;
    uint64_t upload = 0;
    if (!tiles.empty()) {
      ++next_;
      pr.start.record(pr.stream);
      const hfgpu::Target target = mapLayers(pr, layerIndex);
      upload = pr.resident.uploadBytes();
      pr.resident.launchAsync(*v.pool, hfgpu::DecodeMode::All, target, pr.stream);
      unmapLayers(pr, tiles);
      for (size_t i = 0; i < tiles.size(); ++i) sink.commit(tiles[i], slots[i]);
      committed = tiles.size();
    }
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t t : finished) active_.erase(t);
    for (auto it = later.rbegin(); it != later.rend(); ++it) ready_.push_front(std::move(*it));
    for (size_t t : again) queue_.push_front(t);
    if (!again.empty()) wake_.notify_all();
    stats_.delivered += committed;
    stats_.failed += failed;
    stats_.dropped += dropped;
    stats_.compressedToDevice += upload;
    stats_.cacheHits += hits;
    stats_.cacheMisses += misses;
    return committed;
  }

  // One batch: at most maxTiles loaded tiles (only `only` when given) decoded into the atlas.
  size_t deliverBatch(TileSink& sink, size_t maxTiles, const size_t* only = nullptr) {
    if (vram_) return deliverResident(sink, maxTiles, only);
    Pair* const idle = takePair(only != nullptr);
    if (!idle) return 0;  // every pair's batch still runs: nothing this frame rather than a stall
    std::vector<Loaded> batch;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (only) {
        for (auto it = ready_.begin(); it != ready_.end(); ++it)
          if (it->tile == *only) {
            batch.push_back(*it);
            ready_.erase(it);
            break;
          }
      } else {
        // One decode mode per batch: lossy tiles (L12) or whole streams (All), in ready order.
        const bool lossy = !ready_.empty() && ready_.front().lossy;
        for (auto it = ready_.begin(); it != ready_.end() && batch.size() < maxTiles;) {
          if (it->lossy == lossy) {
            batch.push_back(std::move(*it));
            it = ready_.erase(it);
          } else {
            ++it;
          }
        }
      }
    }
    if (batch.empty()) return 0;
    const bool lossyBatch = batch.front().lossy;
    std::vector<hfgpu::PatchInput> patches;
    std::vector<hfgpu::ValidatedStream> checked;
    std::vector<size_t> tiles, finished, refinedTiles;
    std::vector<AtlasSlot> slots;
    std::vector<uint8_t> isRefinement;
    std::vector<hfgpu::AnsSurfaceInput> ansInputs;  // the batch's HFAN tiles
    std::vector<size_t> ansTiles;
    std::vector<AtlasSlot> ansSlots;
    std::map<uint32_t, uint32_t> layerIndex;  // atlas layer -> surface index
    size_t failed = 0, dropped = 0;
    for (const Loaded& l : batch) {
      AtlasSlot slot;
      if (l.refinement) {
        // In place over the lossy samples; a tile evicted since (or refined already) is skipped,
        // a corrupt payload reported (its lossy heights dropped with its slot).
        refinedTiles.push_back(l.tile);
        if (!lossy_[l.tile]) continue;
        if (!l.error.empty()) {
          lossy_[l.tile] = 0;
          sink.failed(l.tile, l.error);
          ++failed;
          continue;
        }
        if (!sink.residentSlot(l.tile, slot)) {
          lossy_[l.tile] = 0;
          continue;
        }
      } else {
        finished.push_back(l.tile);
        if (!l.error.empty()) {
          sink.failed(l.tile, l.error);
          ++failed;
          continue;
        }
        if (!sink.reserve(l.tile, slot)) {
          ++dropped;
          continue;
        }
      }
      if (l.ans) {  // HFAN: the ANS decoder's (never lossy, never a refinement)
        hfgpu::AnsSurfaceInput in;
        in.data = l.bytes.data();
        in.size = l.size;
        in.width = in.height = p_;
        in.type = archive_.header().sampleType;
        in.surface = layerIndex.emplace(slot.layer, uint32_t(layerIndex.size())).first->second;
        in.x = int(slot.x);
        in.y = int(slot.y);
        ansInputs.push_back(in);
        ansTiles.push_back(l.tile);
        ansSlots.push_back(slot);
        continue;
      }
      isRefinement.push_back(l.refinement);
      hfgpu::PatchInput in;
      in.data = l.bytes.data();
      in.size = l.size;
      in.surface = layerIndex.emplace(slot.layer, uint32_t(layerIndex.size())).first->second;
      in.x = int(slot.x);
      in.y = int(slot.y);
      patches.push_back(in);
      checked.push_back(l.checked);
      tiles.push_back(l.tile);
      slots.push_back(slot);
    }
    size_t committed = 0, refined = 0;
    std::vector<size_t> toRefine;
    uint64_t blob = 0, sentPayload = 0;
    for (const hfgpu::PatchInput& in : patches) sentPayload += in.size;
    for (const hfgpu::AnsSurfaceInput& in : ansInputs) sentPayload += in.size;
    if (!patches.empty() || !ansInputs.empty()) {
      Pair& pr = *idle;
      ++next_;
      std::vector<hfpac::Status> valid;
      if (!patches.empty()) {
        pr.decoder.prepareValidated(patches.data(), checked.data(), patches.size());
        valid = pr.decoder.plan().statuses();
        blob = pr.decoder.plan().blobBytes();
      }
      if (!ansInputs.empty()) {
        pr.ans.prepare(ansInputs.data(), ansInputs.size());
        blob += pr.ans.uploadBytes();
      }
      pr.start.record(pr.stream);
      if (!patches.empty()) pr.decoder.uploadAsync(pr.stream);
      const hfgpu::Target target = mapLayers(pr, layerIndex);
      if (!patches.empty()) {
        pr.decoder.decodeAsync(lossyBatch ? hfgpu::DecodeMode::L12 : hfgpu::DecodeMode::All, target, pr.stream);
        pr.decoder.fetchStatusesAsync(pr.stream);
      }
      if (!ansInputs.empty()) {
        pr.ans.decodeAsync(pr.surfaces.data(), int(pr.surfaces.size()), pr.stream);
        pr.ansTiles = ansTiles;
      }
      unmapLayers(pr, tiles);
      for (size_t i = 0; i < tiles.size(); ++i) {
        if (i < valid.size() && valid[i] != hfpac::Status::Ok) {
          if (isRefinement[i]) lossy_[tiles[i]] = 0;
          sink.failed(tiles[i], archive_.tileName(tiles[i]) + ": " + hfpac::statusMessage(valid[i]));
          ++failed;
          continue;
        }
        if (isRefinement[i]) {
          lossy_[tiles[i]] = 0;
          ++refined;
          ++committed;
          continue;
        }
        sink.commit(tiles[i], slots[i]);
        ++committed;
        if (lossyBatch) {
          lossy_[tiles[i]] = 1;
          toRefine.push_back(tiles[i]);
        }
      }
      // HFAN tiles: the host's header checks (the loader's, again with the slot) decide here;
      // the kernel's verdict comes with the batch (finish()).
      const std::vector<hfpac::Status>& ansValid = pr.ans.headerStatuses();
      for (size_t i = 0; i < ansTiles.size(); ++i) {
        if (i < ansValid.size() && ansValid[i] != hfpac::Status::Ok) {
          sink.failed(ansTiles[i], archive_.tileName(ansTiles[i]) + ": " + hfpac::statusMessage(ansValid[i]));
          ++failed;
          continue;
        }
        sink.commit(ansTiles[i], ansSlots[i]);
        ++committed;
      }
    }
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t t : finished) active_.erase(t);
    refine_.update(refinedTiles, toRefine);
    if (refine_.ready(queue_, active_.size())) wake_.notify_all();
    stats_.deliveredLossy += toRefine.size();
    stats_.refined += refined;
    stats_.delivered += committed - refined;
    stats_.failed += failed;
    stats_.dropped += dropped;
    stats_.compressedToDevice += blob;
    stats_.payloadToDevice += sentPayload;
    return committed;
  }

  const hfa::ArchiveReader& archive_;
  const int p_;
  std::vector<std::unique_ptr<Pair>> pairs_;
  size_t next_ = 0;
  cudaGraphicsResource_t resource_ = nullptr;
  std::unique_ptr<StreamStrategy> fallback_;
  std::unique_ptr<Vram> vram_;  // --cache vram
  // --cache host (without progressive loading): payloads read, requested or staged, kept in
  // host memory; guarded by mutex_.
  std::unique_ptr<StagedPayloads<Loaded>> host_;
  double deliveryScale_ = 1;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<size_t> queue_;
  std::unordered_set<size_t> active_;
  std::deque<Loaded> ready_;
  std::vector<size_t> last_;
  // Progressive (progressive_): the refinements (RefineQueue, render/stream/stream.h); lossy_
  // per tile (render thread).
  bool progressive_ = false;
  RefineQueue refine_;
  std::vector<uint8_t> lossy_;
  StreamStats stats_;
  bool stop_ = false;
  // Enough reads in flight to keep one throttled channel, a disk queue or an HTTP connection
  // pool busy; the work per tile is a copy and a validation, so more would only add threads.
  static constexpr int kLoaders = 4;
  std::vector<std::thread> loaders_;
};

}  // namespace

std::unique_ptr<StreamStrategy> makeCudaStreamStrategy(const hfa::ArchiveReader& archive,
                                                       const StreamOptions& options,
                                                       std::string& note) {
  if (hfgpu::cudaDeviceCountOrZero() == 0) {
    note = "no CUDA device";
    return nullptr;
  }
  try {
    return std::make_unique<CudaStreamStrategy>(archive, options);
  } catch (const std::exception& e) {
    note = std::string("CUDA error: ") + e.what();
    return nullptr;
  }
}

}  // namespace hfr

#endif  // HF_HAVE_CUDA_STREAM
