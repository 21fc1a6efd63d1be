// stream_compute.cpp - the "gl" strategy (stream_gl.h): HFPaC tiles decoded into the atlas by a
// GL compute shader (shaders/decode.comp), inside the context that draws.
//
// Why: the cuda strategy's fills cost a CUDA-GL hand-over per batch (map, launches, unmap: the
// GPU switches contexts), about 0.6 ms for a few microseconds of decoding (issue 13,
// bench/results/compression); a compute dispatch in the drawing context is ordered with the
// draws by the GL command stream alone. It also runs on any GPU with OpenGL 4.5 and 64-bit
// shader integers (GL_ARB_gpu_shader_int64), CUDA or not, llvmpipe included (CI).
//
// Loader threads read each payload (CRC checked), check its geometry and lay it out as a
// compute entry (render/stream/decode_entry.h: the stream validated with the CPU decoder's
// checks, descriptors built from it); tiles the shader cannot decode (2DRBUC streams, HFAN
// tiles of hfan/auto archives) are decoded on the loader thread and laid out as stored streams
// (hfpac::encodeStored), which the shader copies into the atlas in the same dispatch: no
// per-tile texture upload on the render thread, and no glTextureSubImage3D into an atlas that
// dispatches in flight still write (seen on the H100 as one 18 ms deliver step in a fill of an
// auto archive; session 20). Those entries are transient: with --cache vram they go to a
// region of the pool buffer beside the cache (room for one dispatch of them, rewritten by the
// next batch), so the cache keeps compressed entries only and they never evict one.
//
// The render thread, in deliver(), places entries in one GL buffer (the pool, bookkept by a
// CompressedCache), writes one 16-byte job per tile and dispatches one workgroup per 16 x 16
// area, then a memory barrier orders the image stores before the next draw's fetches. GL
// orders buffer updates after earlier dispatches, so an entry's bytes can be replaced as soon
// as its dispatch is issued: entries are pinned only while their batch is built, and nothing
// waits for a dispatch to finish (--cache vram).
//
// --cache host: every decode sends its tile. Entries laid out before (requested, or staged ahead
// by the planner: StreamStrategy::stage, read when no requested tile waits) are kept in host
// memory (render/stream/staged_payloads.h, StreamOptions::hostCacheMiB), and a request for one is
// delivered in the frame it is made. The render thread copies each batch's entries
// into a persistently mapped ring (a memcpy, no GL call per tile) and issues one GPU copy of
// the batch's bytes into the same offsets of the pool, which the dispatch reads; a ring range
// is reused once its batch's fence has signalled. --cache vram[:MiB]: entries stay (least
// recently used out); when the whole
// archive fits, a preload thread lays out every tile in archive order and the render thread
// uploads them (up to kPreloadBytesPerDeliver per deliver; finishPrefetch uploads the rest), after
// which only the 16-byte jobs cross PCIe.
#include <glad/gl.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_set>
#include <vector>

#include "archive/archive.h"
#include "render/gl/shader.h"
#include "render/gl/stream_gl.h"
#include "render/stream/compressed_cache.h"
#include "render/stream/decode_entry.h"
#include "render/stream/staged_payloads.h"

namespace hfr {

namespace {

constexpr uint32_t kEntryAlignment = 256;           // pool offsets (>= the SSBO offset alignment)
constexpr size_t kMaxJobs = 256;                    // tiles per dispatch
constexpr int kRing = 16;                           // job / flag slots in flight
constexpr uint64_t kStagingPool = uint64_t(64) << 20;   // --cache host: the ring and the pool
constexpr uint64_t kPreloadQueueBytes = uint64_t(64) << 20;
constexpr uint64_t kPreloadBytesPerDeliver = uint64_t(32) << 20;
constexpr uint64_t kStagingBytes = uint64_t(16) << 20;  // host-writable ring the pool is filled from

// Bytes a tile's entry takes at most: its stream, the descriptors, the padding.
uint64_t entryBound(uint64_t payload, int tileSize) {
  const uint64_t areas = uint64_t((tileSize + 15) / 16) * uint64_t((tileSize + 15) / 16);
  const uint64_t bytes = 64 + 32 * areas + (payload + 15) / 16 * 16 + 16;
  return (bytes + kEntryAlignment - 1) / kEntryAlignment * kEntryAlignment;
}

class ComputeStreamStrategy final : public StreamStrategy {
 public:
  ComputeStreamStrategy(const hfa::ArchiveReader& archive, const StreamOptions& options)
      : archive_(archive), p_(archive.header().tileSize()), options_(options) {
    inPool_.assign(archive.tiles().size(), Placed{});
    size_t decodedHere = 0;  // tiles the shader cannot decode (HFAN, 2DRBUC): they never stay in the pool
    for (const auto& t : archive.tiles()) {
      if (t.codec == hfa::Codec::Hfpac) wholeBytes_ += entryBound(t.size, p_);
      else ++decodedHere;
    }
    if (options.vramCache) {
      // The transient region: one dispatch of stored entries (at least one).
      const uint64_t storedBytes = uint64_t(hfpac::kHeaderBytes) + uint64_t(p_) * uint64_t(p_) * 2 + 4;
      transientSize_ = uint64_t(std::clamp<size_t>(decodedHere, 1, kMaxJobs)) * entryBound(storedBytes, p_);
    }
    // Two loaders read and lay out HFPaC entries (cheap: validation only). Tiles decoded here
    // (HFAN of auto archives) take the cpu strategy's decode threads: with two, an auto archive's
    // fills on the H100 took 2-3x the cpu strategy's (session 20).
    int loaders = 2;
    if (decodedHere > 0)
      loaders = std::max(loaders, options.threads > 0 ? options.threads
                                                      : int(std::thread::hardware_concurrency()) - 1);
    if (!options.vramCache && options.hostCacheMiB > 0)
      host_ = std::make_unique<StagedPayloads<Loaded>>(uint64_t(options.hostCacheMiB * 1048576));
    for (int i = 0; i < loaders; ++i) loaders_.emplace_back([this] { load(); });
    // HFPaC tiles travel compressed; HFAN and 2DRBUC ones as stored samples.
    deliveryScale_ = compressedDeliveryScale(archive, [](hfa::Codec c) { return c == hfa::Codec::Hfpac; });
  }
  ~ComputeStreamStrategy() override { stopThreads(); }
  ComputeStreamStrategy(const ComputeStreamStrategy&) = delete;
  ComputeStreamStrategy& operator=(const ComputeStreamStrategy&) = delete;

  const char* name() const override { return fallback_ ? fallback_->name() : "gl"; }
  double deliveryScale() const override { return fallback_ ? fallback_->deliveryScale() : deliveryScale_; }

  void request(const std::vector<size_t>& tiles) override {
    if (fallback_) return fallback_->request(tiles);
    last_ = tiles;
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t t : queue_) active_.erase(t);
    queue_.clear();
    for (size_t t : hits_) active_.erase(t);
    hits_.clear();
    std::vector<Loaded> inMemory;  // --cache host: laid out before, batched this frame
    for (size_t t : tiles) {
      if (t >= archive_.tiles().size()) continue;
      if (!active_.insert(t).second) continue;
      if (inPool_[t].valid) hits_.push_back(t);  // in the VRAM pool: no read
      else if (const Loaded* kept = host_ ? host_->find(t) : nullptr)
        inMemory.push_back(*kept);
      else queue_.push_back(t);
    }
    // Ahead of tiles loaded for earlier requests: these are wanted now (most important first).
    ready_.insert(ready_.begin(), std::make_move_iterator(inMemory.begin()),
                  std::make_move_iterator(inMemory.end()));
    stats_.hostHits += inMemory.size();
    if (!queue_.empty()) wake_.notify_all();
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
    if (!ensureGl(sink)) return fallback_->deliver(sink, maxTiles);
    uploadPreloaded(kPreloadBytesPerDeliver);
    size_t delivered = 0, taken = 0;
    for (size_t budget = maxTiles; budget > 0; budget -= taken) {
      delivered += deliverBatch(sink, std::min(budget, kMaxJobs), nullptr, taken);
      if (taken == 0) break;
    }
    return delivered;
  }

  bool loadNow(size_t tile, TileSink& sink, std::string& error) override {
    if (fallback_) return fallback_->loadNow(tile, sink, error);
    if (!ensureGl(sink)) return fallback_->loadNow(tile, sink, error);
    Loaded l = read(tile);
    if (!l.error.empty()) {
      error = l.error;
      sink.failed(tile, error);
      return false;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      active_.insert(tile);
    }
    std::deque<Loaded> one;
    one.push_back(std::move(l));
    size_t taken = 0;
    if (deliverBatch(sink, 1, &one, taken) != 1) {
      error = archive_.tileName(tile) + ": not decoded";
      return false;
    }
    return true;
  }

  size_t pending() const override {
    if (fallback_) return fallback_->pending();
    std::lock_guard<std::mutex> lock(mutex_);
    return active_.size();
  }

  StreamStats stats() const override {
    if (fallback_) return fallback_->stats();
    std::lock_guard<std::mutex> lock(mutex_);
    StreamStats s = stats_;
    s.requested = active_.size();
    if (host_) s.hostBytes = host_->bytes();
    if (index_ && options_.vramCache) {
      s.cacheBytes = index_->usedBytes();
      s.cacheCapacity = index_->capacity();
    }
    return s;
  }

  void pollCompleted() override {
    if (fallback_) return fallback_->pollCompleted();
    while (!inFlight_.empty() && signalled(inFlight_.front().fence, false)) retire();
  }

  // Uploads what the preload has read until it is done, then waits for the copies to land (so
  // that a benchmark's next GPU wait is its own work's).
  void finishPrefetch() override {
    if (fallback_ || !preloadStarted_ || preloadLanded_) return;
    while (uploadPreloaded(UINT64_MAX)) {
      std::unique_lock<std::mutex> lock(mutex_);
      preloadCv_.wait_for(lock, std::chrono::milliseconds(20),
                          [&] { return preloadDone_ || !preloaded_.empty(); });
    }
    // The driver copies asynchronously: wait until the last upload has reached the pool (the
    // frames since start-up may have uploaded all of it already). glFinish, not only a fence:
    // on NVIDIA (580) the fence signalled but the preload left work that the next glFinish paid,
    // the first fill's wait on the 16385^2 terrain (198 MiB preloaded in ~5000 uploads): 6.7-10.4
    // ms with the fence alone, 0.09 ms after a glFinish here.
    GLsync landed = glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0);
    signalled(landed, true);
    glDeleteSync(landed);
    glFinish();
    preloadLanded_ = true;
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.preloadMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - preloadStart_).count();
  }

  void releaseGl() override {
    stopThreads();
    while (!inFlight_.empty()) retire();
    if (pool_) glDeleteBuffers(1, &pool_);
    if (staging_) glDeleteBuffers(1, &staging_);
    if (ring_) {
      glUnmapNamedBuffer(ring_);
      glDeleteBuffers(1, &ring_);
    }
    ring_ = 0;
    ringMap_ = nullptr;
    if (jobs_) glDeleteBuffers(1, &jobs_);
    if (flags_) glDeleteBuffers(1, &flags_);
    if (program_) glDeleteProgram(program_);
    if (queries_[0]) glDeleteQueries(2 * kRing, queries_);
    queries_[0] = 0;
    pool_ = staging_ = jobs_ = flags_ = program_ = 0;
    if (fallback_) fallback_->releaseGl();
  }

 private:
  struct Loaded {
    size_t tile = 0;
    std::string error;
    ComputeEntry entry;             // decoded by the shader (areas > 0 or a flat/stored patch)
    bool decoded = false;           // the entry is a stored stream of `samples`, decoded here
    std::vector<uint16_t> samples;  // decoded here; uploaded as samples when onCpu
    bool onCpu = false;
    bool hit = false;               // in the pool already
  };
  struct Placed {
    bool valid = false;
    uint64_t offset = 0;
    uint32_t areas = 0;
  };
  struct Batch {
    GLsync fence = nullptr;
    int slot = 0;  // its jobs, flags and timestamp queries
    std::vector<size_t> tiles;
    uint64_t ringBytes = 0;  // --cache host: ring bytes it holds until its fence (wrap included)
  };

  // `entryOnly` (the preload): a tile for the CPU is marked onCpu without decoding it.
  Loaded read(size_t tile, bool entryOnly = false) const {
    Loaded l;
    l.tile = tile;
    hfpac::Status st = hfpac::Status::Unsupported;
    if (hfa::isHfpacCodec(archive_.tiles()[tile].codec)) {  // others: decodeTile reads the payload once
      std::vector<uint8_t> bytes;
      if (!archive_.copyPayload(tile, bytes, l.error)) {
        if (l.error.empty()) l.error = archive_.tileName(tile) + ": unreadable";
        return l;
      }
      hfpac::PatchInfo info;
      st = hfpac::readInfo(bytes.data(), bytes.size(), info);
      if (st == hfpac::Status::Ok && (info.width != p_ || info.height != p_ || info.type != archive_.header().sampleType)) {
        l.error = archive_.tileName(tile) + ": patch geometry or sample type disagrees with the header";
        return l;
      }
      if (st == hfpac::Status::Ok) st = makeComputeEntry(bytes.data(), bytes.size(), l.entry);
    }
    if (st == hfpac::Status::Unsupported) {  // HFAN, 2DRBUC: decoded here (checks included)
      l.onCpu = true;
      if (entryOnly) return l;
      l.samples.resize(size_t(p_) * size_t(p_));
      if (!archive_.decodeTile(tile, l.samples.data(), l.error)) {
        if (l.error.empty()) l.error = archive_.tileName(tile) + ": not decodable";
        l.samples = {};
        return l;
      }
      std::vector<uint8_t> stored;
      if (hfpac::encodeStored(l.samples.data(), size_t(p_), p_, p_, archive_.header().sampleType, stored) ==
              hfpac::Status::Ok &&
          makeComputeEntry(stored.data(), stored.size(), l.entry) == hfpac::Status::Ok) {
        l.onCpu = false;
        l.decoded = true;  // the samples stay, for an entry larger than the ring or the pool
      }
    } else if (st != hfpac::Status::Ok) {
      l.error = archive_.tileName(tile) + ": " + hfpac::statusMessage(st);
    }
    return l;
  }

  // Requested tiles first; staged ones (--cache host) when no requested tile waits.
  void load() {
    for (;;) {
      size_t tile;
      ReadAhead ahead;
      bool staged = false;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || !queue_.empty() || (host_ && host_->hasStaged()); });
        if (stop_) return;
        staged = queue_.empty();
        if (staged) {
          tile = host_->takeStaged();
          ahead.take(tile, host_->staged());
        } else {
          tile = queue_.front();
          queue_.pop_front();
          ahead.take(tile, queue_);
        }
      }
      ahead.advise(archive_);
      Loaded l = read(tile);
      std::lock_guard<std::mutex> lock(mutex_);
      stats_.bytesRead += l.error.empty() ? archive_.tiles()[tile].size : 0;
      if (staged && l.error.empty()) ++stats_.hostStaged;
      const uint64_t kept = l.entry.bytes.size() + l.samples.size() * sizeof(uint16_t);
      if (!host_ || host_->keepRead(tile, staged, l.error.empty(), kept, l, queue_))
        ready_.push_back(std::move(l));
    }
  }

  // --cache vram with the whole archive fitting: every tile's entry in archive order (coarse
  // levels first), handed to the render thread through a bounded queue.
  void preload() {
    for (size_t t = 0; t < archive_.tiles().size(); ++t) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        preloadCv_.wait(lock, [&] { return stop_ || preloadedBytes_ < kPreloadQueueBytes; });
        if (stop_) break;
      }
      if (!hfa::isHfpacCodec(archive_.tiles()[t].codec)) continue;
      Loaded l = read(t, true);
      if (!l.error.empty() || l.onCpu) continue;  // the demand path reports or decodes it
      std::lock_guard<std::mutex> lock(mutex_);
      stats_.bytesRead += archive_.tiles()[t].size;
      preloadedBytes_ += l.entry.bytes.size();
      preloaded_.push_back(std::move(l));
      preloadCv_.notify_all();
    }
    std::lock_guard<std::mutex> lock(mutex_);
    preloadDone_ = true;
    preloadCv_.notify_all();
  }

  // Render thread: places up to `budget` bytes of preloaded entries in the pool. True while the
  // preload has more to give.
  bool uploadPreloaded(uint64_t budget) {
    if (!preloading_) return false;
    uint64_t sent = 0;
    for (;;) {
      Loaded l;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (preloaded_.empty() || sent >= budget) {
          if (preloadDone_ && preloaded_.empty()) {
            preloading_ = false;
            stats_.preloadMs =
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - preloadStart_).count();
            return false;
          }
          return true;
        }
        l = std::move(preloaded_.front());
        preloaded_.pop_front();
        preloadedBytes_ -= l.entry.bytes.size();
        preloadCv_.notify_all();
      }
      if (inPool_[l.tile].valid) continue;
      if (!place(l)) {  // full after all: stop preloading
        std::lock_guard<std::mutex> lock(mutex_);
        preloaded_.clear();
        preloadedBytes_ = 0;
        preloadCv_.notify_all();
        continue;
      }
      sent += l.entry.bytes.size();
    }
  }

  // Copies `n` bytes to the pool at `at`: into the staging ring (glNamedBufferSubData), then a
  // GPU copy. Why not glNamedBufferSubData into the pool: the pool would need
  // GL_DYNAMIC_STORAGE_BIT, with which a driver may keep it in host memory; without flags it is
  // GPU-only storage. GL orders both steps after earlier commands, so the ring needs no fences.
  void upload(const uint8_t* bytes, uint64_t n, uint64_t at) {
    for (uint64_t done = 0; done < n;) {
      const uint64_t chunk = std::min(n - done, kStagingBytes);
      if (stagingHead_ + chunk > kStagingBytes) stagingHead_ = 0;
      glNamedBufferSubData(staging_, GLintptr(stagingHead_), GLsizeiptr(chunk), bytes + done);
      glCopyNamedBufferSubData(staging_, pool_, GLintptr(stagingHead_), GLintptr(at + done), GLsizeiptr(chunk));
      stagingHead_ = (stagingHead_ + chunk + kEntryAlignment - 1) / kEntryAlignment * kEntryAlignment;
      done += chunk;
    }
  }

  // Puts a loaded entry into the pool (evicting least recently used entries); false when it
  // cannot fit.
  bool place(const Loaded& l) {
    std::vector<size_t> evicted;
    const int64_t at = index_->insert(l.tile, l.entry.bytes.size(), &evicted);
    for (size_t k : evicted) inPool_[k] = Placed{};
    if (at < 0) return false;
    upload(l.entry.bytes.data(), l.entry.bytes.size(), uint64_t(at));
    inPool_[l.tile] = Placed{true, uint64_t(at), l.entry.areas};
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.compressedToDevice += l.entry.bytes.size();
    return true;
  }

  void stopThreads() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    preloadCv_.notify_all();
    for (auto& t : loaders_)
      if (t.joinable()) t.join();
    loaders_.clear();
    if (preloader_.joinable()) preloader_.join();
  }

  void fallBack(const std::string& why) {
    std::fprintf(stderr, "Note: --stream gl: %s; falling back to cpu\n", why.c_str());
    stopThreads();
    fallback_ = std::make_unique<CpuStreamStrategy>(archive_, options_.threads, options_.progressive);
    fallback_->request(last_);
  }

  // The program and buffers, made on the render thread at the first deliver/loadNow.
  bool ensureGl(TileSink& sink) {
    if (program_) return true;
    atlas_ = sink.atlasTexture();
    if (!atlas_) {
      fallBack("the atlas is not a GL texture");
      return false;
    }
    if (!hasGlExtension("GL_ARB_gpu_shader_int64")) {
      fallBack("this GL implementation has no 64-bit shader integers (GL_ARB_gpu_shader_int64)");
      return false;
    }
    std::string error;
    const std::string dir = resolveShaderDir(options_.shaderDir, error);
    if (!dir.empty()) program_ = compileComputeProgram(dir, "decode.comp", error);
    if (!program_) {
      // One line: the driver's log joined (the first errors are what matters).
      std::string line;
      for (char c : error) line += c == '\n' ? ' ' : c;
      fallBack(line.substr(0, 600));
      return false;
    }
    GLint64 maxBlock = 0;
    glGetInteger64v(GL_MAX_SHADER_STORAGE_BLOCK_SIZE, &maxBlock);
    const uint64_t limit = uint64_t(std::max<GLint64>(maxBlock, 1 << 20)) / kEntryAlignment * kEntryAlignment;
    uint64_t bytes = options_.stagingMiB > 0 ? std::max<uint64_t>(uint64_t(options_.stagingMiB * 1048576), 1 << 16)
                                             : kStagingPool;
    if (options_.vramCache) {
      uint64_t budget = options_.cacheMiB > 0 ? uint64_t(options_.cacheMiB * 1024 * 1024) : wholeBytes_;
      if (options_.cacheMiB <= 0 && hasGlExtension("GL_NVX_gpu_memory_info")) {
        GLint freeKiB = 0;  // GL_GPU_MEMORY_INFO_CURRENT_AVAILABLE_VIDMEM_NVX
        glGetIntegerv(0x9049, &freeKiB);
        if (freeKiB > 0) budget = std::min<uint64_t>(budget, uint64_t(freeKiB) * 1024 / 2);
      }
      bytes = std::max<uint64_t>(budget, 1 << 20);
    }
    if (bytes + transientSize_ > limit) {
      std::fprintf(stderr, "Note: --stream gl: the tile pool is limited to %llu MiB (GL_MAX_SHADER_STORAGE_BLOCK_SIZE)\n",
                   static_cast<unsigned long long>(limit >> 20));
      transientSize_ = std::min(transientSize_, limit / 2);
      bytes = limit - transientSize_;
    }
    bytes = (bytes + kEntryAlignment - 1) / kEntryAlignment * kEntryAlignment;
    while (glGetError() != GL_NO_ERROR) {
    }
    glCreateBuffers(1, &pool_);
    // The pool is GPU-only storage (flags 0, so a driver places it in video memory); entries
    // reach it through the staging buffer and a GPU copy (upload()).
    glNamedBufferStorage(pool_, GLsizeiptr(bytes + transientSize_), nullptr, 0);
    transientBase_ = bytes;  // --cache vram: [bytes, bytes + transientSize_) holds stored entries
    if (options_.vramCache) {
      glCreateBuffers(1, &staging_);
      glNamedBufferStorage(staging_, GLsizeiptr(kStagingBytes), nullptr, GL_DYNAMIC_STORAGE_BIT);
    } else {  // the ring mirrors the pool: an entry has the same offset in both
      const GLbitfield map = GL_MAP_WRITE_BIT | GL_MAP_PERSISTENT_BIT | GL_MAP_COHERENT_BIT;
      glCreateBuffers(1, &ring_);
      glNamedBufferStorage(ring_, GLsizeiptr(bytes), nullptr, map);
      ringMap_ = static_cast<uint8_t*>(glMapNamedBufferRange(ring_, 0, GLsizeiptr(bytes), map));
      ringSize_ = bytes;
      if (!ringMap_) {
        fallBack("cannot map a " + std::to_string(bytes >> 20) + " MiB staging ring");
        return false;
      }
    }
    glCreateBuffers(1, &jobs_);
    glNamedBufferStorage(jobs_, GLsizeiptr(kRing * kJobSlotBytes), nullptr, GL_DYNAMIC_STORAGE_BIT);
    glCreateQueries(GL_TIMESTAMP, 2 * kRing, queries_);
    glCreateBuffers(1, &flags_);
    glNamedBufferStorage(flags_, GLsizeiptr(kRing * kJobSlotBytes), nullptr, GL_DYNAMIC_STORAGE_BIT);
    if (glGetError() != GL_NO_ERROR) {
      fallBack("cannot allocate the " + std::to_string(bytes >> 20) + " MiB tile pool in video memory");
      return false;
    }
    // The pool's bookkeeping for --cache vram; --cache host mirrors the ring instead.
    if (options_.vramCache) index_ = std::make_unique<CompressedCache>(bytes, kEntryAlignment);
    if (options_.vramCache && wholeBytes_ <= bytes) {
      preloading_ = preloadStarted_ = true;
      preloadStart_ = std::chrono::steady_clock::now();
      preloader_ = std::thread([this] { preload(); });
    }
    return true;
  }

  static bool signalled(GLsync fence, bool wait) {
    const GLenum r = glClientWaitSync(fence, wait ? GL_SYNC_FLUSH_COMMANDS_BIT : 0, wait ? GLuint64(10e9) : 0);
    return r == GL_ALREADY_SIGNALED || r == GL_CONDITION_SATISFIED;
  }

  // --cache host: `n` bytes at the ring's head for the batch being built (retiring batches in
  // flight until they fit); false when they cannot fit beside this batch's own entries. The
  // bytes in use are one circular run of ringUsed_ bytes ending at ringHead_.
  bool ringAlloc(uint64_t n, uint64_t& at) {
    for (;;) {
      if (ringUsed_ == 0) ringHead_ = 0;
      at = ringHead_;
      uint64_t waste = 0;
      if (at + n > ringSize_) {
        waste = ringSize_ - at;
        at = 0;
      }
      if (ringUsed_ + waste + n <= ringSize_) {
        ringHead_ = at + n;
        ringUsed_ += waste + n;
        batchRingBytes_ += waste + n;
        return true;
      }
      if (inFlight_.empty()) return false;
      retire();
    }
  }

  // The oldest batch in flight: waits for it and reports tiles the shader clamped.
  void retire() {
    Batch b = std::move(inFlight_.front());
    inFlight_.pop_front();
    signalled(b.fence, true);
    glDeleteSync(b.fence);
    ringUsed_ -= b.ringBytes;
    GLuint64 t0 = 0, t1 = 0;  // GPU timestamps around the dispatch: StreamStats::deviceMs
    glGetQueryObjectui64v(queries_[2 * b.slot], GL_QUERY_RESULT, &t0);
    glGetQueryObjectui64v(queries_[2 * b.slot + 1], GL_QUERY_RESULT, &t1);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stats_.deviceMs += t1 > t0 ? double(t1 - t0) * 1e-6 : 0.0;
    }
    std::vector<uint32_t> flags(b.tiles.size());
    glGetNamedBufferSubData(flags_, GLintptr(b.slot * kJobSlotBytes), GLsizeiptr(flags.size() * 4), flags.data());
    for (size_t i = 0; i < flags.size(); ++i)
      if (flags[i] != 0)
        std::fprintf(stderr, "Warning: %s: %s (clamped)\n", archive_.tileName(b.tiles[i]).c_str(),
                     hfpac::statusMessage(hfpac::Status::OutOfRange));
  }

  // One dispatch: at most maxTiles tiles of `only` (loadNow) or of the hits and loaded tiles.
  // Returns the tiles delivered; `taken` = those taken off the queues (failed ones included).
  size_t deliverBatch(TileSink& sink, size_t maxTiles, std::deque<Loaded>* only, size_t& taken) {
    std::deque<Loaded> batch;
    if (only) {
      batch = std::move(*only);
    } else {
      std::lock_guard<std::mutex> lock(mutex_);
      while (!hits_.empty() && batch.size() < maxTiles) {
        Loaded l;
        l.tile = hits_.front();
        l.hit = true;
        hits_.pop_front();
        batch.push_back(std::move(l));
      }
      while (!ready_.empty() && batch.size() < maxTiles) {
        batch.push_back(std::move(ready_.front()));
        ready_.pop_front();
      }
    }
    taken = batch.size();
    if (batch.empty()) return 0;
    std::vector<uint32_t> jobs;  // 4 words per tile
    std::vector<size_t> tiles, finished, again, pinned;
    std::vector<AtlasSlot> slots;
    std::deque<Loaded> later;
    size_t failed = 0, dropped = 0, hits = 0, misses = 0, onCpu = 0;
    std::vector<std::pair<uint64_t, uint64_t>> copies;  // --cache host: ring ranges (offset, bytes)
    uint64_t sentBytes = 0, sentSampleBytes = 0;
    uint64_t transientHead = 0;  // --cache vram: bytes of the transient region this batch uses
    const uint64_t ringHead0 = ringHead_;
    batchRingBytes_ = 0;
    for (Loaded& l : batch) {
      const size_t t = l.tile;
      if (!l.error.empty()) {
        finished.push_back(t);
        sink.failed(t, l.error);
        ++failed;
        continue;
      }
      if (l.hit && !inPool_[t].valid) {  // evicted since it was requested: read it
        again.push_back(t);
        continue;
      }
      AtlasSlot slot;
      // A stored entry larger than the ring or the pool (large tiles, a small --staging or
      // --cache vram:MiB) goes as samples instead.
      if (l.decoded && l.entry.bytes.size() > (options_.vramCache ? transientSize_ : ringSize_)) {
        l.decoded = false;
        l.onCpu = true;
      }
      if (l.onCpu) {
        finished.push_back(t);
        if (!sink.reserve(t, slot)) {
          ++dropped;
          continue;
        }
        sink.uploadSamples(t, slot, l.samples.data());
        ++onCpu;
        continue;
      }
      if (!options_.vramCache) {  // into the ring (and, by the batch's copy, the pool)
        const uint64_t bytes = l.entry.bytes.size();
        uint64_t at = 0;
        if (bytes > ringSize_) {
          finished.push_back(t);
          sink.failed(t, archive_.tileName(t) + ": larger than the whole tile pool");
          ++failed;
          continue;
        }
        if (!ringAlloc(bytes, at)) {  // the ring is full of this batch's entries: the next batch
          later.push_back(std::move(l));
          continue;
        }
        std::memcpy(ringMap_ + at, l.entry.bytes.data(), bytes);
        if (!copies.empty() && copies.back().first + copies.back().second == at) copies.back().second += bytes;
        else copies.emplace_back(at, bytes);
        finished.push_back(t);
        if (!sink.reserve(t, slot)) {
          ++dropped;
          continue;
        }
        ++misses;
        (l.decoded ? sentSampleBytes : sentBytes) += bytes;
        jobs.insert(jobs.end(), {uint32_t(at / 4), l.entry.areas, slot.layer, slot.x | (slot.y << 16)});
        tiles.push_back(t);
        slots.push_back(slot);
        continue;
      }
      if (l.decoded) {  // --cache vram: a stored entry, into the transient region for this dispatch
        const uint64_t bytes = l.entry.bytes.size();
        if (transientHead + bytes > transientSize_) {  // the region is full: the next batch
          later.push_back(std::move(l));
          continue;
        }
        finished.push_back(t);
        if (!sink.reserve(t, slot)) {
          ++dropped;
          continue;
        }
        const uint64_t at = transientBase_ + transientHead;
        upload(l.entry.bytes.data(), bytes, at);
        transientHead = (transientHead + bytes + kEntryAlignment - 1) / kEntryAlignment * kEntryAlignment;
        ++misses;
        sentSampleBytes += bytes;
        jobs.insert(jobs.end(), {uint32_t(at / 4), l.entry.areas, slot.layer, slot.x | (slot.y << 16)});
        tiles.push_back(t);
        slots.push_back(slot);
        continue;
      }
      // The entry first, pinned until the dispatch is issued: a later tile of this batch must
      // not evict it and overwrite its bytes before the shader reads them.
      bool miss = false;
      if (l.hit || inPool_[t].valid) {
        index_->find(t);  // most recently used
      } else if (place(l)) {
        miss = true;
      } else if (l.entry.bytes.size() > index_->capacity()) {
        finished.push_back(t);
        sink.failed(t, archive_.tileName(t) + ": larger than the whole tile pool (--cache vram:MiB)");
        ++failed;
        continue;
      } else {  // the pool is full of this batch's entries: the next batch
        later.push_back(std::move(l));
        continue;
      }
      index_->pin(t);
      pinned.push_back(t);
      finished.push_back(t);
      if (!sink.reserve(t, slot)) {
        ++dropped;
        continue;
      }
      (miss ? misses : hits) += 1;
      const Placed& e = inPool_[t];
      jobs.insert(jobs.end(), {uint32_t(e.offset / 4), e.areas, slot.layer, slot.x | (slot.y << 16)});
      tiles.push_back(t);
      slots.push_back(slot);
    }
    if (!tiles.empty()) {
      if (inFlight_.size() >= size_t(kRing)) retire();
      const int ring = int(next_++ % kRing);
      const GLintptr at = GLintptr(ring * kJobSlotBytes);
      glNamedBufferSubData(jobs_, at, GLsizeiptr(jobs.size() * 4), jobs.data());
      const uint32_t zero = 0;
      glClearNamedBufferSubData(flags_, GL_R32UI, at, GLsizeiptr(tiles.size() * 4), GL_RED_INTEGER, GL_UNSIGNED_INT,
                                &zero);
      uint32_t maxAreas = 0;
      for (size_t i = 0; i < tiles.size(); ++i) maxAreas = std::max(maxAreas, jobs[i * 4 + 1]);
      // One GPU copy per contiguous run of the batch's ring bytes (two where it wrapped).
      for (const auto& [from, size] : copies)
        glCopyNamedBufferSubData(ring_, pool_, GLintptr(from), GLintptr(from), GLsizeiptr(size));
      glUseProgram(program_);
      glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 0, pool_);
      glBindBufferRange(GL_SHADER_STORAGE_BUFFER, 1, jobs_, at, GLsizeiptr(tiles.size() * 16));
      glBindBufferRange(GL_SHADER_STORAGE_BUFFER, 2, flags_, at, GLsizeiptr(tiles.size() * 4));
      glBindImageTexture(0, atlas_, 0, GL_TRUE, 0, GL_WRITE_ONLY, GL_R16UI);
      glQueryCounter(queries_[2 * ring], GL_TIMESTAMP);
      glDispatchCompute(std::max<GLuint>(maxAreas, 1), GLuint(tiles.size()), 1);
      glQueryCounter(queries_[2 * ring + 1], GL_TIMESTAMP);
      glMemoryBarrier(GL_TEXTURE_FETCH_BARRIER_BIT | GL_TEXTURE_UPDATE_BARRIER_BIT | GL_SHADER_IMAGE_ACCESS_BARRIER_BIT);
      inFlight_.push_back(Batch{glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0), ring, tiles, batchRingBytes_});
      for (size_t i = 0; i < tiles.size(); ++i) sink.commit(tiles[i], slots[i]);
    } else if (batchRingBytes_ > 0) {  // entries staged, nothing dispatched: nothing reads them
      ringHead_ = ringHead0;  // where the run of the batches in flight ends
      ringUsed_ -= batchRingBytes_;
    }
    // GL orders later writes to the pool after this dispatch: the entries may move from now on.
    for (size_t t : pinned) index_->unpin(t);
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = later.rbegin(); it != later.rend(); ++it) ready_.push_front(std::move(*it));
    for (size_t t : finished) active_.erase(t);
    for (size_t t : again) queue_.push_front(t);
    if (!again.empty()) wake_.notify_all();
    stats_.delivered += tiles.size() + onCpu;
    stats_.failed += failed;
    stats_.dropped += dropped;
    stats_.samplesToDevice += uint64_t(onCpu) * uint64_t(p_) * uint64_t(p_) * 2 + sentSampleBytes;
    stats_.sampleUploads += onCpu;
    stats_.compressedToDevice += sentBytes;
    if (options_.vramCache) {
      stats_.cacheHits += hits;
      stats_.cacheMisses += misses;
    }
    return tiles.size() + onCpu;
  }

  static constexpr size_t kJobSlotBytes = kMaxJobs * 16;

  const hfa::ArchiveReader& archive_;
  const int p_;
  const StreamOptions options_;
  uint64_t wholeBytes_ = 0;  // every HFPaC tile's entry bound (--cache vram)
  uint64_t transientSize_ = 0;  // --cache vram: the pool buffer's region for stored entries, after the cache
  uint64_t transientBase_ = 0;  // its offset (the cache's capacity)
  double deliveryScale_ = 1;
  // --cache host: tiles laid out before (requested or staged), kept in host memory outside the
  // atlas (render/stream/staged_payloads.h); guarded by mutex_.
  std::unique_ptr<StagedPayloads<Loaded>> host_;
  std::unique_ptr<StreamStrategy> fallback_;
  std::vector<size_t> last_;  // the last request (replayed to a fallback)

  // Render thread only.
  GLuint atlas_ = 0, program_ = 0, pool_ = 0, staging_ = 0, jobs_ = 0, flags_ = 0;
  uint64_t stagingHead_ = 0;
  GLuint ring_ = 0;             // --cache host: persistently mapped, mirrors the pool
  uint8_t* ringMap_ = nullptr;
  uint64_t ringSize_ = 0, ringHead_ = 0, ringUsed_ = 0, batchRingBytes_ = 0;
  GLuint queries_[2 * kRing] = {};
  std::unique_ptr<CompressedCache> index_;  // --cache vram only
  std::vector<Placed> inPool_;  // per tile
  std::deque<Batch> inFlight_;
  size_t next_ = 0;
  bool preloading_ = false;  // entries still to upload
  bool preloadStarted_ = false, preloadLanded_ = false;
  std::chrono::steady_clock::time_point preloadStart_;

  mutable std::mutex mutex_;
  std::condition_variable wake_, preloadCv_;
  std::deque<size_t> queue_, hits_;
  std::unordered_set<size_t> active_;
  std::deque<Loaded> ready_, preloaded_;
  uint64_t preloadedBytes_ = 0;
  bool preloadDone_ = false;
  StreamStats stats_;
  bool stop_ = false;
  std::vector<std::thread> loaders_;
  std::thread preloader_;
};

}  // namespace

std::unique_ptr<StreamStrategy> makeComputeStreamStrategy(const hfa::ArchiveReader& archive,
                                                          const StreamOptions& options) {
  return std::make_unique<ComputeStreamStrategy>(archive, options);
}

}  // namespace hfr
