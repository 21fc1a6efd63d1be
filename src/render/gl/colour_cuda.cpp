// colour_cuda.cpp - the "cuda" imagery (colour) strategy (stream_gl.h; built only with the GPU
// codec and the GPU imagery codec, HF_HAVE_CUDA_COLOUR). docs/rendering.md section 4.
//
// JPEG bytes cross PCIe; pixels never do. A loader thread reads each wanted imagery tile's
// payload from the archive mmap (CRC checked) and, once K tiles (a batch) are in or the queue
// has run dry, packs them into the pinned staging of one of P (GpuJpegDecoder, CUDA stream,
// pixel-unpack buffer) pairs with GpuJpegDecoder::prepare() - header checks, coverage masks,
// entropy-coded bytes - so the render thread never parses or copies JPEG data. The render
// thread, in deliver(), takes a prepared batch, reserves a colour-atlas layer per tile and
// enqueues on that pair's stream: one cudaMemcpyAsync of the staging, the JPEG decode into a
// device RGBA8 buffer, the mip levels and their BC1 encoding (hfgpu::encodeTileChainsAsync)
// straight into the pair's GL pixel-unpack buffer (registered with CUDA, mapped on the stream),
// the per-tile failure flags; then unmaps it (CUDA orders its writes before GL's next use) and
// issues one glCompressedTextureSubImage3D per mip level from that buffer (the colour sink's
// uploadColourChainFromBuffer): a copy inside video memory. The host waits for the GPU only
// when a pair is reused while its previous batch still runs.
//
// Tiles that are not JPEG (raw, bc1) take the CPU strategy's path on the loader thread
// (ColourStrategy::makeTile) and upload from host memory. A tile the kernels flag as corrupt
// is reported to the sink (colourFailed) when its batch is seen finished, one or two frames
// after its layer was filled: it is then released and drawn from an ancestor (a CRC-valid
// corrupt stream; the archive's CRCs make this practically unreachable).
//
// --cache vram (StreamOptions::vramCache): every JPEG tile's BC1 chain, once made, is also
// copied (glCopyNamedBufferSubData, inside video memory) from the pair's buffer into a pool: one
// GL buffer of cacheMiB whose bookkeeping is a CompressedCache (LRU). A requested tile found
// there is a hit: one glCompressedTextureSubImage3D per mip level from the pool, no decode, no
// loader, nothing over PCIe. The chains, not the JPEG bytes, are kept (4 bits per texel against
// JPEG's ~1-1.5): a hit then costs a copy, where keeping JPEG would cost the Huffman decode,
// IDCT, mips and BC1 encoding on every fill. A tile enters as kPending and becomes kReady when
// its batch is seen finished without a kernel error (a hit on a kPending tile waits for that).
// When the whole imagery fits, the loader prepares "preload" batches of the tiles not cached
// yet, coarse levels first, whenever no requested tile is waiting; the render thread submits
// them after the requested ones (deliver) or all at once (finishPrefetch). GL orders every copy
// into and out of the pool, so entries need no pins: a slot reused by a later tile is written
// after the earlier copies out of it.
//
// No CUDA device, or no CUDA-GL interop with the current context: falls back to the CPU
// strategy (BC1) and says so once on stderr.
#ifdef HF_HAVE_CUDA_COLOUR

#include <glad/gl.h>
// After glad (which defines __gl_h_): cuda_gl_interop.h then does not pull in GL/gl.h.
#include <cuda_gl_interop.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_set>
#include <vector>

#include "archive/archive.h"
#include "gpu/cuda_util.h"
#include "gpu/imagery/bc1_encoder.h"
#include "gpu/imagery/jpeg_decoder.h"
#include "render/gl/stream_gl.h"
#include "render/stream/compressed_cache.h"

namespace hfr {

namespace {

class CudaColourStrategy final : public ColourStream {
 public:
  CudaColourStrategy(const hfa::ArchiveReader& archive, himg::Bc1Mode mode, int pairs, size_t batchTiles,
                     const StreamOptions& cache)
      : archive_(archive), mode_(mode), batchTiles_(std::max<size_t>(1, batchTiles)) {
    tileSize_ = archive.imagery().tileSize;
    levels_ = 1;
    while (levels_ < himg::kTileMipLevels && (tileSize_ >> levels_) >= 16) ++levels_;
    chainBytes_ = hfgpu::bc1ChainBytes(tileSize_, levels_);
    if (cache.vramCache) makeCache(cache.cacheMiB);
    pairs_.resize(size_t(std::max(1, pairs)));
    for (auto& p : pairs_) p = std::make_unique<Pair>();
    std::string error;
    const auto& tables = archive.imagery().jpegTables;
    for (auto& p : pairs_)
      if (!tables.empty() && !p->decoder.setTables(tables.data(), tables.size(), error)) tablesError_ = error;
    if (!tablesError_.empty()) tablesError_ = "the archive's JPEG tables: " + tablesError_;
    cpuDecoderOk_ = tables.empty() || cpuDecoder_.setTables(tables.data(), tables.size(), error);
    loader_ = std::thread([this] { load(); });
  }
  ~CudaColourStrategy() override {
    stopLoader();
    try {
      for (auto& p : pairs_)
        if (p->state == Pair::Submitted) p->done.synchronize();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "Warning: cuda imagery: %s\n", e.what());
    }
    // GL objects (the pixel-unpack buffers and their CUDA registrations) are released with
    // the GL context; unregistering here without it current would be an error, so the
    // registrations are dropped by CUDA at exit and the buffers by GL with the context.
    for (auto& p : pairs_)
      if (p->resource) CUDA_LOG(cudaGraphicsUnregisterResource(p->resource));
  }
  CudaColourStrategy(const CudaColourStrategy&) = delete;
  CudaColourStrategy& operator=(const CudaColourStrategy&) = delete;

  const char* name() const override { return fallback_ ? fallback_->name() : "cuda"; }
  ColourFormat format() const override { return ColourFormat::Bc1; }

  void request(const std::vector<size_t>& tiles) override {
    if (fallback_) return fallback_->request(tiles);
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t t : queue_) active_.erase(t);
    queue_.clear();
    for (size_t t : hits_) active_.erase(t);
    hits_.clear();
    for (size_t t : tiles) {
      if (t >= archive_.imageryTiles().size() || !active_.insert(t).second) continue;
      if (cacheOn() && cache_->state[t] != kAbsent) hits_.push_back(t);  // no decode needed
      else queue_.push_back(t);
    }
    last_ = tiles;
    if (!queue_.empty()) wake_.notify_all();
  }

  size_t deliver(ColourSink& sink, size_t maxTiles) override {
    if (fallback_) return fallback_->deliver(sink, maxTiles);
    try {
      if (!ensureInterop(sink)) return fallback_->deliver(sink, maxTiles);
      collectFinished(sink, /*wait=*/false);
      size_t n = deliverHits(sink, maxTiles);
      n += deliverCpuTiles(sink, maxTiles - n);
      while (n < maxTiles) {
        Pair* pr = nextPrepared();
        if (!pr) break;
        n += submit(*pr, sink);
      }
      return n;
    } catch (const std::exception& e) {
      fallBack(std::string("CUDA error: ") + e.what());
      return fallback_->deliver(sink, maxTiles);
    }
  }

  bool loadNow(size_t tile, ColourSink& sink, std::string& error) override {
    if (fallback_) return fallback_->loadNow(tile, sink, error);
    // Start-up (the top level, a handful of tiles): the CPU path, synchronously.
    ColourTile t;
    uint64_t bytes = 0;
    himg::JpegTileDecoder decoder;  // its own: the loader thread uses cpuDecoder_
    const auto& tables = archive_.imagery().jpegTables;
    if (!tables.empty() && !decoder.setTables(tables.data(), tables.size(), error)) {
      error = "the archive's JPEG tables: " + error;
      sink.colourFailed(tile, error);
      return false;
    }
    if (!ColourStrategy::makeTile(archive_, tile, ColourFormat::Bc1, mode_, decoder, t, bytes)) {
      error = t.error;
      sink.colourFailed(tile, error);
      return false;
    }
    uint32_t layer = 0;
    if (!sink.reserveColour(tile, layer)) {
      error = "no colour atlas layer for " + archive_.imageryTileName(tile);
      return false;
    }
    sink.uploadColour(t, layer);
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.bytesRead += bytes;
    for (const auto& m : t.mips) stats_.bytesToDevice += m.size();
    ++stats_.delivered;
    return true;
  }

  size_t pending() const override {
    if (fallback_) return fallback_->pending();
    std::lock_guard<std::mutex> lock(mutex_);
    return active_.size();
  }

  ColourStats stats() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    ColourStats s = stats_;
    s.requested = active_.size();
    if (cacheOn()) {
      s.cacheBytes = cache_->index.usedBytes();
      s.cacheCapacity = cache_->index.capacity();
    }
    if (fallback_) {
      const ColourStats f = fallback_->stats();
      s.requested = f.requested;
      s.delivered += f.delivered;
      s.failed += f.failed;
      s.dropped += f.dropped;
      s.bytesRead += f.bytesRead;
      s.bytesToDevice += f.bytesToDevice;
      s.workerMs += f.workerMs;
    }
    return s;
  }

  void finishPrefetch(ColourSink& sink) override {
    if (fallback_ || !cache_) return;
    try {
      if (!ensureInterop(sink)) return;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!cacheOn() || !cache_->preload) return;
      }
      const auto t0 = std::chrono::steady_clock::now();
      for (;;) {
        collectFinished(sink, /*wait=*/false);
        bool submitted = false;
        while (Pair* pr = nextPrepared()) {
          submit(*pr, sink);
          submitted = true;
        }
        {
          std::lock_guard<std::mutex> lock(mutex_);
          if (preloadFinished() || !loaderError_.empty()) break;
        }
        if (!submitted) std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      std::lock_guard<std::mutex> lock(mutex_);
      stats_.preloadMs = ms;
    } catch (const std::exception& e) {
      fallBack(std::string("CUDA error: ") + e.what());
    }
  }

 private:
  enum : uint8_t { kAbsent = 0, kPending = 1, kReady = 2 };
  // --cache vram: the pool's bookkeeping (the GL buffer is pool_). Guarded by mutex_.
  struct Cache {
    CompressedCache index;
    std::vector<uint8_t> state;  // per imagery tile
    bool preload = false;        // the whole imagery fits: load it in the background
    bool off = false;            // the GL buffer could not be made: no cache after all
    size_t cursor = 0;           // preload: the next imagery tile to look at
    size_t outstanding = 0;      // preload batches being loaded, prepared or decoded
    explicit Cache(uint64_t bytes) : index(bytes, 256) {}
  };

  // One batch in flight: decoder (pinned staging + device stream bytes), stream, the device
  // RGBA8 tiles and mip scratch, and the GL pixel-unpack buffer the BC1 chains land in.
  struct Pair {
    enum State { Idle, Loading, Prepared, Submitted };
    State state = Idle;
    uint64_t order = 0;                 // preparation order: batches are submitted in it
    hfgpu::GpuJpegDecoder decoder;
    hfgpu::Stream stream;
    hfgpu::Event done{false};
    hfgpu::DeviceBuffer<uint8_t> rgba, scratch;
    GLuint pbo = 0;
    size_t pboTiles = 0;
    cudaGraphicsResource_t resource = nullptr;
    std::vector<size_t> tiles;          // the batch, in prepare() order
    std::vector<std::string> hostErrors;  // prepare()'s verdict per tile ("" = staged)
    std::vector<long> layers;           // per tile: its atlas layer, -1 when not uploaded
    bool preload = false;               // --cache vram: a batch for the pool only (no layers)
    std::vector<size_t> cached;         // --cache vram: tiles this batch put into the pool
  };

  bool cacheOn() const { return cache_ && !cache_->off; }  // (mutex_ held, or the render thread)
  // Preload done: every tile looked at and no preload batch left anywhere. (mutex_ held)
  bool preloadFinished() const {
    return !cacheOn() || !cache_->preload || !tablesError_.empty() ||
           (cache_->cursor >= archive_.imageryTiles().size() && cache_->outstanding == 0);
  }
  bool preloadLeft() const {  // (mutex_ held)
    return cacheOn() && cache_->preload && tablesError_.empty() && cache_->cursor < archive_.imageryTiles().size();
  }
  // A pair goes back to the loader. (mutex_ held)
  void release(Pair& p) {
    if (p.preload && cache_ && cache_->outstanding > 0) --cache_->outstanding;
    p.preload = false;
    p.state = Pair::Idle;
    wake_.notify_all();
  }
  // The prepared batch to submit next: requested tiles before preload, in preparation order.
  Pair* nextPrepared() {
    std::lock_guard<std::mutex> lock(mutex_);
    Pair* pr = nullptr;
    for (auto& p : pairs_)
      if (p->state == Pair::Prepared &&
          (!pr || (p->preload != pr->preload ? !p->preload : p->order < pr->order)))
        pr = p.get();
    return pr;
  }

  // The pool: cacheMiB, or the whole imagery's chains when they fit in a quarter of the free
  // device memory (else that quarter). JPEG tiles only: others come from host memory anyway.
  void makeCache(double cacheMiB) {
    uint64_t whole = 0;
    for (const auto& e : archive_.imageryTiles())
      if (e.codec == hfa::ImageryCodec::Jpeg) whole += (uint64_t(chainBytes_) + 255) / 256 * 256;
    size_t freeBytes = 0, totalBytes = 0;
    CUDA_CHECK(cudaMemGetInfo(&freeBytes, &totalBytes));
    const uint64_t budget = cacheMiB > 0 ? uint64_t(cacheMiB * 1024 * 1024) : std::min<uint64_t>(whole, freeBytes / 4);
    if (budget > freeBytes)
      throw std::runtime_error("--cache vram:" + std::to_string(int64_t(cacheMiB)) + " is more than the " +
                               std::to_string(freeBytes >> 20) + " MiB of free device memory");
    cache_ = std::make_unique<Cache>(std::max<uint64_t>(budget, (uint64_t(chainBytes_) + 255) / 256 * 256));
    cache_->state.assign(archive_.imageryTiles().size(), kAbsent);
    cache_->preload = whole > 0 && whole <= cache_->index.capacity();
  }

  // ---- loader thread ----

  void load() {
    for (;;) {
      Pair* pr = nullptr;
      std::vector<size_t> tiles;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] {
          if (stop_) return true;
          if (queue_.empty() && !preloadLeft()) return false;
          for (auto& p : pairs_)
            if (p->state == Pair::Idle) return true;
          return false;
        });
        if (stop_) return;
        for (auto& p : pairs_)
          if (p->state == Pair::Idle) {
            pr = p.get();
            break;
          }
        if (!pr) continue;  // cannot happen: the wait above saw an idle pair
        pr->state = Pair::Loading;
        pr->preload = queue_.empty();  // requested tiles first; else the pool's next tiles
        if (!pr->preload) {
          while (!queue_.empty() && tiles.size() < batchTiles_) {
            tiles.push_back(queue_.front());
            queue_.pop_front();
          }
        } else {
          ++cache_->outstanding;
          const auto& entries = archive_.imageryTiles();
          while (cache_->cursor < entries.size() && tiles.size() < batchTiles_) {
            const size_t t = cache_->cursor++;
            if (entries[t].codec == hfa::ImageryCodec::Jpeg && cache_->state[t] == kAbsent && !active_.count(t))
              tiles.push_back(t);
          }
          if (tiles.empty()) {
            release(*pr);
            continue;
          }
        }
      }
      const auto t0 = std::chrono::steady_clock::now();
      std::vector<hfgpu::JpegTileInput> inputs;
      std::vector<size_t> jpegTiles;
      std::deque<ColourTile> cpuTiles;
      uint64_t bytes = 0;
      // The JPEG payloads copied out of the mapping (a file changed on disk is an error), alive
      // until the batch is coded.
      std::vector<std::vector<uint8_t>> copies;
      copies.reserve(tiles.size());
      archive_.willNeedImagery(tiles.data(), tiles.size());  // one batch of reads (a URL: coalesced)
      for (size_t tile : tiles) {
        std::string error;
        const hfa::ImageryEntry& e = archive_.imageryTiles()[tile];
        if (e.codec == hfa::ImageryCodec::Jpeg && tablesError_.empty()) {
          copies.emplace_back();
          if (!archive_.copyImageryPayload(tile, copies.back(), error)) {
            if (!pr->preload) cpuTiles.push_back(failedTile(tile, error));  // preload: reported if requested
            continue;
          }
          const uint8_t* data = copies.back().data();
          const size_t size = copies.back().size();
          bytes += size;
          inputs.push_back({data, size});
          jpegTiles.push_back(tile);
        } else {  // raw or bc1 tiles (or unusable tables): the CPU strategy's work
          ColourTile t;
          uint64_t b = 0;
          if (!cpuDecoderOk_) t = failedTile(tile, tablesError_);
          else ColourStrategy::makeTile(archive_, tile, ColourFormat::Bc1, mode_, cpuDecoder_, t, b);
          bytes += b;
          cpuTiles.push_back(std::move(t));
        }
      }
      std::vector<std::string> hostErrors;
      std::string error;
      try {
        if (!inputs.empty()) {
          pr->decoder.prepare(inputs.data(), inputs.size(), tileSize_);
          hostErrors = pr->decoder.hostErrors();
        }
      } catch (const std::exception& ex) {
        error = ex.what();
      }
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      std::lock_guard<std::mutex> lock(mutex_);
      stats_.bytesRead += bytes;
      stats_.workerMs += ms;
      for (auto& t : cpuTiles) cpuDone_.push_back(std::move(t));
      if (!error.empty()) {  // a CUDA error on this thread: tiles go back, the render thread falls back
        loaderError_ = error;
        if (!pr->preload)
          for (size_t t : jpegTiles) active_.erase(t);
        release(*pr);
        return;
      }
      if (jpegTiles.empty()) {
        release(*pr);
        continue;
      }
      pr->tiles = std::move(jpegTiles);
      pr->hostErrors = std::move(hostErrors);
      pr->hostErrors.resize(pr->tiles.size());
      pr->order = ++orderCounter_;
      pr->state = Pair::Prepared;
    }
  }

  ColourTile failedTile(size_t tile, const std::string& error) const {
    ColourTile t;
    t.tile = tile;
    t.error = error.empty() ? archive_.imageryTileName(tile) + ": cannot be read" : error;
    return t;
  }

  void stopLoader() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    if (loader_.joinable()) loader_.join();
  }

  // ---- render thread ----

  bool ensureInterop(ColourSink& sink) {
    if (interop_) return true;
    std::string why;
    if (!loaderError_.empty()) why = loaderError_;
    if (why.empty() && !sink.supportsChainUpload()) why = "the colour atlas cannot take BC1 chains from a buffer";
    if (why.empty()) {
      const size_t bytes = chainBytes_ * batchTiles_;
      for (auto& p : pairs_) {
        glCreateBuffers(1, &p->pbo);
        glNamedBufferData(p->pbo, GLsizeiptr(bytes), nullptr, GL_STREAM_DRAW);
        p->pboTiles = batchTiles_;
        const cudaError_t e =
            cudaGraphicsGLRegisterBuffer(&p->resource, p->pbo, cudaGraphicsRegisterFlagsWriteDiscard);
        if (e != cudaSuccess) {
          (void)cudaGetLastError();
          p->resource = nullptr;
          why = std::string("cannot register a pixel-unpack buffer with CUDA (") + cudaGetErrorName(e) +
                "; is the GL context on the CUDA device?)";
          break;
        }
      }
    }
    if (!why.empty()) {
      fallBack(why);
      return false;
    }
    if (cache_) {
      while (glGetError() != GL_NO_ERROR) {
      }
      glCreateBuffers(1, &pool_);
      glNamedBufferStorage(pool_, GLsizeiptr(cache_->index.capacity()), nullptr, 0);
      if (glGetError() != GL_NO_ERROR) {
        std::fprintf(stderr, "Note: --cache vram: no room for %.0f MiB of imagery in video memory; imagery is not cached\n",
                     double(cache_->index.capacity()) / 1048576.0);
        glDeleteBuffers(1, &pool_);
        pool_ = 0;
        std::lock_guard<std::mutex> lock(mutex_);
        cache_->off = true;
        for (size_t t : hits_) queue_.push_back(t);
        hits_.clear();
        wake_.notify_all();
      }
    }
    interop_ = true;
    return true;
  }

  void fallBack(const std::string& why) {
    std::fprintf(stderr, "Note: --imagery-stream cuda: %s; falling back to cpu\n", why.c_str());
    stopLoader();
    for (auto& p : pairs_) {
      if (p->resource) CUDA_LOG(cudaGraphicsUnregisterResource(p->resource));
      p->resource = nullptr;
      if (p->pbo) glDeleteBuffers(1, &p->pbo);
      p->pbo = 0;
    }
    if (pool_) glDeleteBuffers(1, &pool_);
    pool_ = 0;
    fallback_ = std::make_unique<ColourStrategy>(archive_, ColourFormat::Bc1, mode_);
    std::vector<size_t> again;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      again = last_;
      queue_.clear();
      hits_.clear();
      active_.clear();
    }
    fallback_->request(again);
  }

  // --cache vram: requested tiles whose chains are in the pool, copied into their layers inside
  // video memory. A tile whose batch has not been seen finished yet waits; one evicted since it
  // was requested is decoded again.
  size_t deliverHits(ColourSink& sink, size_t maxTiles) {
    if (!cacheOn()) return 0;
    size_t n = 0;
    std::vector<size_t> later;
    while (n < maxTiles) {
      size_t t = 0;
      int64_t offset = -1;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (hits_.empty()) break;
        t = hits_.front();
        hits_.pop_front();
        const uint8_t st = cache_->state[t];
        if (st == kPending) {
          later.push_back(t);
          continue;
        }
        if (st == kReady) offset = cache_->index.find(t);  // and most recently used
        if (offset < 0) {
          queue_.push_front(t);
          wake_.notify_all();
          continue;
        }
      }
      uint32_t layer = 0;
      const bool reserved = sink.reserveColour(t, layer);
      if (reserved) sink.uploadColourChainFromBuffer(layer, pool_, size_t(offset));
      std::lock_guard<std::mutex> lock(mutex_);
      active_.erase(t);
      if (reserved) {
        ++stats_.delivered;
        ++stats_.cacheHits;
        ++n;
      } else {
        ++stats_.dropped;  // asked again by a later request
      }
    }
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = later.rbegin(); it != later.rend(); ++it) hits_.push_front(*it);
    return n;
  }

  // Tiles finished on the loader thread (not JPEG, or unreadable): as the CPU strategy does.
  size_t deliverCpuTiles(ColourSink& sink, size_t maxTiles) {
    size_t n = 0;
    while (n < maxTiles) {
      ColourTile t;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (cpuDone_.empty()) break;
        t = std::move(cpuDone_.front());
        cpuDone_.pop_front();
      }
      if (!t.error.empty()) {
        sink.colourFailed(t.tile, t.error);
        std::lock_guard<std::mutex> lock(mutex_);
        active_.erase(t.tile);
        ++stats_.failed;
        continue;
      }
      uint32_t layer = 0;
      const bool reserved = sink.reserveColour(t.tile, layer);
      if (reserved) sink.uploadColour(t, layer);
      std::lock_guard<std::mutex> lock(mutex_);
      active_.erase(t.tile);
      if (reserved) {
        ++stats_.delivered;
        for (const auto& m : t.mips) stats_.bytesToDevice += m.size();
        ++n;
      } else {
        ++stats_.dropped;
      }
    }
    return n;
  }

  // Submits a prepared batch: layers, then upload, decode, mips + BC1 into the PBO, GL copies.
  size_t submit(Pair& pr, ColourSink& sink) {
    const size_t count = pr.tiles.size();
    pr.layers.assign(count, -1);
    pr.cached.clear();
    size_t uploaded = 0, dropped = 0, failed = 0, staged = 0;
    for (size_t i = 0; i < count; ++i) {
      if (!pr.hostErrors[i].empty()) {
        if (pr.preload) continue;  // reported if the tile is ever requested
        sink.colourFailed(pr.tiles[i], archive_.imageryTileName(pr.tiles[i]) + ": " + pr.hostErrors[i]);
        ++failed;
        continue;
      }
      ++staged;
      if (pr.preload) continue;
      uint32_t layer = 0;
      if (sink.reserveColour(pr.tiles[i], layer)) {
        pr.layers[i] = long(layer);
        ++uploaded;
      } else {
        ++dropped;  // asked again by a later request
      }
    }
    const bool toPool = cacheOn() && pool_ != 0 && staged > 0;
    if (uploaded > 0 || toPool) {
      const size_t pixels = count * size_t(tileSize_) * size_t(tileSize_) * 4;
      pr.rgba.reserve(pixels);
      pr.scratch.reserve(std::max<size_t>(1, hfgpu::mipScratchBytes(tileSize_, levels_, count)));
      pr.decoder.uploadAsync(pr.stream);
      pr.decoder.decodeAsync(pr.rgba.get(), pr.stream);
      CUDA_CHECK(cudaGraphicsMapResources(1, &pr.resource, pr.stream));
      void* mapped = nullptr;
      size_t mappedBytes = 0;
      CUDA_CHECK(cudaGraphicsResourceGetMappedPointer(&mapped, &mappedBytes, pr.resource));
      if (mappedBytes < count * chainBytes_) throw std::runtime_error("pixel-unpack buffer smaller than a batch");
      hfgpu::encodeTileChainsAsync(pr.rgba.get(), tileSize_, levels_, count, mode_, pr.scratch.get(),
                                   static_cast<uint8_t*>(mapped), pr.stream);
      CUDA_CHECK(cudaGraphicsUnmapResources(1, &pr.resource, pr.stream));
      pr.decoder.fetchStatusesAsync(pr.stream);
      pr.done.record(pr.stream);
      for (size_t i = 0; i < count; ++i)
        if (pr.layers[i] >= 0) sink.uploadColourChainFromBuffer(uint32_t(pr.layers[i]), pr.pbo, i * chainBytes_);
      if (toPool) keepChains(pr);
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (!pr.preload)
      for (size_t t : pr.tiles) active_.erase(t);
    stats_.delivered += uploaded;
    stats_.dropped += dropped;
    stats_.failed += failed;
    if (uploaded > 0 || toPool) {
      stats_.bytesToDevice += pr.decoder.stagedBytes();
      pr.state = Pair::Submitted;
    } else {
      release(pr);
    }
    return uploaded;
  }

  // --cache vram: copies the batch's chains into the pool (GL copies after the GL uploads, so
  // after the CUDA writes), as kPending entries until the batch is seen finished.
  void keepChains(Pair& pr) {
    for (size_t i = 0; i < pr.tiles.size(); ++i) {
      if (!pr.hostErrors[i].empty()) continue;
      const size_t t = pr.tiles[i];
      int64_t at = -1;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (cache_->state[t] != kAbsent) continue;  // kept by another batch already
        std::vector<size_t> evicted;
        at = cache_->index.insert(t, chainBytes_, &evicted);
        for (size_t k : evicted) cache_->state[k] = kAbsent;
        if (at < 0) continue;
        cache_->state[t] = kPending;
      }
      glCopyNamedBufferSubData(pr.pbo, pool_, GLintptr(i * chainBytes_), GLintptr(at), GLsizeiptr(chainBytes_));
      pr.cached.push_back(t);
    }
  }

  // Batches whose GPU work has finished: kernel-detected corrupt tiles are released; the pair
  // is free for the loader again. `wait`: block until every submitted batch has finished.
  void collectFinished(ColourSink& sink, bool wait) {
    for (auto& p : pairs_) {
      if (p->state != Pair::Submitted) continue;
      if (!wait && !p->done.ready()) continue;
      p->done.synchronize();
      const std::vector<std::string> errors = p->decoder.errors();
      for (size_t i = 0; i < errors.size() && i < p->tiles.size(); ++i)
        if (!errors[i].empty() && p->layers[i] >= 0 && p->hostErrors[i].empty()) {
          sink.colourFailed(p->tiles[i], archive_.imageryTileName(p->tiles[i]) + ": " + errors[i]);
          std::lock_guard<std::mutex> lock(mutex_);
          ++stats_.failed;
          --stats_.delivered;
        }
      std::lock_guard<std::mutex> lock(mutex_);
      if (!p->cached.empty()) {  // the pool's new entries: usable now, or out when the kernel flagged them
        std::unordered_set<size_t> bad;
        for (size_t i = 0; i < errors.size() && i < p->tiles.size(); ++i)
          if (!errors[i].empty()) bad.insert(p->tiles[i]);
        for (size_t t : p->cached) {
          if (cache_->state[t] != kPending || !cache_->index.contains(t)) continue;
          if (bad.count(t)) {
            cache_->index.erase(t);
            cache_->state[t] = kAbsent;
          } else {
            cache_->state[t] = kReady;
          }
        }
        p->cached.clear();
      }
      release(*p);
    }
  }

  const hfa::ArchiveReader& archive_;
  const himg::Bc1Mode mode_;
  const size_t batchTiles_;
  int tileSize_ = 256, levels_ = 1;
  size_t chainBytes_ = 0;
  std::string tablesError_;
  himg::JpegTileDecoder cpuDecoder_;  // the loader thread's (non-JPEG tiles)
  bool cpuDecoderOk_ = false;
  std::vector<std::unique_ptr<Pair>> pairs_;
  bool interop_ = false;
  std::unique_ptr<Cache> cache_;  // --cache vram
  GLuint pool_ = 0;               // --cache vram: the chains (render thread)
  std::unique_ptr<ColourStrategy> fallback_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<size_t> queue_;
  std::deque<size_t> hits_;  // --cache vram: requested tiles in the pool (no decode)
  std::unordered_set<size_t> active_;
  std::deque<ColourTile> cpuDone_;
  std::vector<size_t> last_;
  std::string loaderError_;
  uint64_t orderCounter_ = 0;
  ColourStats stats_;
  bool stop_ = false;
  std::thread loader_;
};

}  // namespace

std::unique_ptr<ColourStream> makeCudaColourStream(const hfa::ArchiveReader& archive, himg::Bc1Mode mode,
                                                   std::string& note, int pairs, size_t batchTiles,
                                                   const StreamOptions& cache) {
  if (hfgpu::cudaDeviceCountOrZero() == 0) {
    note = "no CUDA device: imagery is decoded and BC1-coded on the CPU";
    return nullptr;
  }
  try {
    return std::make_unique<CudaColourStrategy>(archive, mode, pairs, batchTiles, cache);
  } catch (const std::exception& e) {
    note = std::string("CUDA imagery strategy: ") + e.what() + "; imagery is decoded on the CPU";
    return nullptr;
  }
}

}  // namespace hfr

#endif  // HF_HAVE_CUDA_COLOUR
