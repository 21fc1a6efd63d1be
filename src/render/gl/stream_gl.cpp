// stream_gl.cpp - the "raw" strategy (PBO uploads) and the strategy factory (stream_gl.h).
#include "render/gl/stream_gl.h"

#include <glad/gl.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_set>
#include <vector>

#include "archive/archive.h"

namespace hfr {

// stream_compute.cpp: the "gl" strategy.
std::unique_ptr<StreamStrategy> makeComputeStreamStrategy(const hfa::ArchiveReader& archive,
                                                          const StreamOptions& options);

#ifdef HF_HAVE_CUDA_STREAM
// stream_cuda.cpp: nullptr + note when CUDA cannot be used here (the caller falls back to cpu).
std::unique_ptr<StreamStrategy> makeCudaStreamStrategy(const hfa::ArchiveReader& archive,
                                                       const StreamOptions& options,
                                                       std::string& note);
bool cudaStreamBuilt() { return true; }
#else
bool cudaStreamBuilt() { return false; }
#endif

bool parseCacheOption(const std::string& text, StreamOptions& options, std::string& error) {
  // "host" / "vram" alone, or with ":MiB" (a number, > 0 for vram, >= 0 for host).
  auto mebibytes = [](const std::string& n, bool zeroAllowed, double& out) {
    char* end = nullptr;
    const double mib = std::strtod(n.c_str(), &end);
    if (n.empty() || !end || *end || !std::isfinite(mib) || mib < 0 || (mib == 0 && !zeroAllowed) ||
        mib > 1 << 24)
      return false;
    out = mib;
    return true;
  };
  double mib = 0;
  if (text == "host" || (text.rfind("host:", 0) == 0 && mebibytes(text.substr(5), true, mib))) {
    options.vramCache = false;
    options.cacheMiB = 0;
    if (text != "host") options.hostCacheMiB = mib;
    return true;
  }
  if (text == "vram" || (text.rfind("vram:", 0) == 0 && mebibytes(text.substr(5), false, mib))) {
    options.vramCache = true;
    options.cacheMiB = text == "vram" ? 0 : mib;
    return true;
  }
  error = "--cache: '" + text + "' is not host, host:MiB (MiB >= 0), vram or vram:MiB (MiB > 0)";
  return false;
}

#ifndef HF_HAVE_CUDA_COLOUR
std::unique_ptr<ColourStream> makeCudaColourStream(const hfa::ArchiveReader&, himg::Bc1Mode, std::string& note, int,
                                                   size_t, const StreamOptions&) {
  note = "this build has no GPU imagery codec (HF_CUDA=OFF): imagery is decoded on the CPU";
  return nullptr;
}
#endif

namespace {

class RawStreamStrategy final : public StreamStrategy {
 public:
  explicit RawStreamStrategy(const hfa::ArchiveReader& archive)
      : archive_(archive),
        p_(archive.header().tileSize()),
        tileBytes_(size_t(p_) * size_t(p_) * 2) {
    loader_ = std::thread([this] { load(); });
  }
  ~RawStreamStrategy() override { stopLoader(); }
  RawStreamStrategy(const RawStreamStrategy&) = delete;
  RawStreamStrategy& operator=(const RawStreamStrategy&) = delete;

  const char* name() const override { return "raw"; }

  void request(const std::vector<size_t>& tiles) override {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t t : queue_) active_.erase(t);
    queue_.clear();
    for (size_t t : tiles) {
      if (t >= archive_.tiles().size()) continue;
      if (active_.insert(t).second) queue_.push_back(t);
    }
    if (!queue_.empty()) wake_.notify_all();
  }

  size_t deliver(TileSink& sink, size_t maxTiles) override {
    std::string error;
    if (!ensureGl(sink, error)) {
      std::fprintf(stderr, "Error: --stream raw: %s\n", error.c_str());
      return 0;
    }
    retire();
    std::deque<Done> ready;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      while (!done_.empty() && ready.size() < maxTiles) {
        ready.push_back(done_.front());
        done_.pop_front();
      }
    }
    if (ready.empty()) return 0;
    std::vector<uint32_t> used, unused;
    std::vector<size_t> finished;
    size_t failed = 0, dropped = 0;
    glBindBuffer(GL_PIXEL_UNPACK_BUFFER, pbo_);
    glPixelStorei(GL_UNPACK_ALIGNMENT, 2);
    for (const Done& d : ready) {
      finished.push_back(d.tile);
      if (!d.error.empty()) {
        sink.failed(d.tile, d.error);
        ++failed;
        if (d.pboSlot != kNoSlot) unused.push_back(d.pboSlot);
        continue;
      }
      AtlasSlot slot;
      if (!sink.reserve(d.tile, slot)) {
        ++dropped;
        unused.push_back(d.pboSlot);
        continue;
      }
      // Source: the PBO slot the loader filled (offset into the bound unpack buffer).
      glTextureSubImage3D(sink.atlasTexture(), 0, GLint(slot.x), GLint(slot.y),
                          GLint(slot.layer), p_, p_, 1, GL_RED_INTEGER, GL_UNSIGNED_SHORT,
                          reinterpret_cast<const void*>(uintptr_t(d.pboSlot) * tileBytes_));
      sink.commit(d.tile, slot);
      used.push_back(d.pboSlot);
    }
    glBindBuffer(GL_PIXEL_UNPACK_BUFFER, 0);
    // The slots just read by GL are reused once the GPU has consumed them.
    if (!used.empty()) inFlight_.push_back({glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0), used});
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t t : finished) active_.erase(t);
    for (uint32_t s : unused) free_.push_back(s);
    if (!unused.empty()) wake_.notify_all();
    stats_.delivered += used.size();
    stats_.failed += failed;
    stats_.dropped += dropped;
    stats_.samplesToDevice += uint64_t(used.size()) * tileBytes_;
    return used.size();
  }

  bool loadNow(size_t tile, TileSink& sink, std::string& error) override {
    if (!ensureGl(sink, error)) return false;
    std::vector<uint16_t> samples(size_t(p_) * size_t(p_));
    if (!readTile(tile, reinterpret_cast<uint8_t*>(samples.data()), error)) {
      sink.failed(tile, error);
      return false;
    }
    AtlasSlot slot;
    if (!sink.reserve(tile, slot)) {
      error = "atlas has no free slot for " + archive_.tileName(tile);
      return false;
    }
    glBindBuffer(GL_PIXEL_UNPACK_BUFFER, 0);
    sink.uploadSamples(tile, slot, samples.data());
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.delivered;
    stats_.bytesRead += archive_.tiles()[tile].size;
    stats_.samplesToDevice += tileBytes_;
    return true;
  }

  size_t pending() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return active_.size();
  }
  StreamStats stats() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    StreamStats s = stats_;
    s.requested = active_.size();
    return s;
  }

  void releaseGl() override {
    stopLoader();  // it writes into the mapping
    for (auto& f : inFlight_) glDeleteSync(f.fence);
    inFlight_.clear();
    if (pbo_) {
      glUnmapNamedBuffer(pbo_);
      glDeleteBuffers(1, &pbo_);
    }
    pbo_ = 0;
    mapped_ = nullptr;
  }

 private:
  static constexpr uint32_t kNoSlot = ~0u;
  static constexpr uint32_t kSlots = 64;  // PBO slots (tiles in flight between disk and GL)
  struct Done {
    size_t tile;
    uint32_t pboSlot;
    std::string error;
  };
  struct Batch {
    GLsync fence;
    std::vector<uint32_t> slots;
  };

  // Copies the tile's raw payload (little-endian u16 = the host order on x86-64 and AArch64).
  bool readTile(size_t tile, uint8_t* dst, std::string& error) const {
    thread_local std::vector<uint8_t> bytes;  // out of the mapping: a file changed on disk is an error
    if (!archive_.copyPayload(tile, bytes, error)) return false;
    const uint8_t* data = bytes.data();
    const size_t size = bytes.size();
    if (archive_.tiles()[tile].codec != hfa::Codec::Raw || size != tileBytes_) {
      error = archive_.tileName(tile) + ": not a raw payload of " + std::to_string(tileBytes_) +
              " bytes";
      return false;
    }
    std::memcpy(dst, data, size);
    return true;
  }

  bool ensureGl(TileSink& sink, std::string& error) {
    if (pbo_) return true;
    if (!sink.atlasTexture()) {
      error = "the sink has no GL atlas texture";
      return false;
    }
    const GLbitfield flags = GL_MAP_WRITE_BIT | GL_MAP_PERSISTENT_BIT | GL_MAP_COHERENT_BIT;
    const GLsizeiptr bytes = GLsizeiptr(tileBytes_) * kSlots;
    glCreateBuffers(1, &pbo_);
    glNamedBufferStorage(pbo_, bytes, nullptr, flags);
    mapped_ = static_cast<uint8_t*>(glMapNamedBufferRange(pbo_, 0, bytes, flags));
    if (!mapped_) {
      glDeleteBuffers(1, &pbo_);
      pbo_ = 0;
      error = "cannot map a persistent pixel-unpack buffer";
      return false;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    for (uint32_t s = 0; s < kSlots; ++s) free_.push_back(s);
    mapBase_ = mapped_;
    wake_.notify_all();
    return true;
  }

  void retire() {
    std::vector<uint32_t> freed;
    while (!inFlight_.empty()) {
      const GLenum r = glClientWaitSync(inFlight_.front().fence, GL_SYNC_FLUSH_COMMANDS_BIT, 0);
      if (r != GL_ALREADY_SIGNALED && r != GL_CONDITION_SATISFIED) break;
      glDeleteSync(inFlight_.front().fence);
      freed.insert(freed.end(), inFlight_.front().slots.begin(), inFlight_.front().slots.end());
      inFlight_.pop_front();
    }
    if (freed.empty()) return;
    std::lock_guard<std::mutex> lock(mutex_);
    free_.insert(free_.end(), freed.begin(), freed.end());
    wake_.notify_all();
  }

  void load() {
    for (;;) {
      size_t tile;
      uint32_t slot;
      uint8_t* base;
      ReadAhead ahead;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || (!queue_.empty() && !free_.empty()); });
        if (stop_) return;
        tile = queue_.front();
        queue_.pop_front();
        slot = free_.back();
        free_.pop_back();
        base = mapBase_;
        ahead.take(tile, queue_);
      }
      ahead.advise(archive_);
      Done d{tile, slot, {}};
      if (!readTile(tile, base + size_t(slot) * tileBytes_, d.error)) {
        if (d.error.empty()) d.error = archive_.tileName(tile) + ": unreadable";
      }
      std::lock_guard<std::mutex> lock(mutex_);
      stats_.bytesRead += archive_.tiles()[tile].size;
      done_.push_back(std::move(d));
    }
  }

  void stopLoader() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    if (loader_.joinable()) loader_.join();
  }

  const hfa::ArchiveReader& archive_;
  const int p_;
  const size_t tileBytes_;
  GLuint pbo_ = 0;
  uint8_t* mapped_ = nullptr;
  std::deque<Batch> inFlight_;  // render thread only

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<size_t> queue_;
  std::unordered_set<size_t> active_;
  std::deque<Done> done_;
  std::vector<uint32_t> free_;  // PBO slots the loader may fill
  uint8_t* mapBase_ = nullptr;
  StreamStats stats_;
  bool stop_ = false;
  std::thread loader_;
};

}  // namespace

std::unique_ptr<StreamStrategy> makeRenderStreamStrategy(const std::string& name,
                                                         const hfa::ArchiveReader& archive,
                                                         std::string& error, std::string& note,
                                                         const StreamOptions& options) {
  note.clear();
  const hfa::Codec codec = archive.header().codec;
  if (name == "raw") {
    if (codec != hfa::Codec::Raw) {
      error = std::string("--stream raw needs a raw archive (hfpack --codec raw); this one is ") +
              hfa::codecName(codec) + " (use --stream cpu or cuda)";
      return nullptr;
    }
    if (options.progressive) note = "--progressive: a raw archive has no layers; tiles load whole";
    return std::make_unique<RawStreamStrategy>(archive);
  }
  if (name == "gl") {
    if (codec == hfa::Codec::Raw) {
      error = "--stream gl needs a compressed archive (hfpac); this one is raw (use --stream raw)";
      return nullptr;
    }
    if (options.progressive) note = "--progressive: --stream gl loads tiles whole";
    return makeComputeStreamStrategy(archive, options);
  }
  if (name == "cuda") {
    if (codec == hfa::Codec::Raw) {
      error = "--stream cuda needs a compressed archive (hfpac); this one is raw (use --stream raw)";
      return nullptr;
    }
    if ((codec == hfa::Codec::Hfan || codec == hfa::Codec::Auto) && options.vramCache) {
      // The CUDA strategy decodes HFAN tiles (hfpack --codec hfan or auto) with the GPU's ANS
      // decoder, but its VRAM cache holds HFPaC entries only: the CPU strategy's threads then.
      note = std::string("--stream cuda --cache vram: this archive's tiles are ") +
             (codec == hfa::Codec::Hfan ? "hfan" : "hfpac and hfan (codec auto)") +
             ", which the VRAM cache cannot hold yet; falling back to cpu (--cache vram does not apply to the heights)";
      return std::make_unique<CpuStreamStrategy>(archive, options.threads, options.progressive);
    }
#ifdef HF_HAVE_CUDA_STREAM
    auto s = makeCudaStreamStrategy(archive, options, note);
    if (s) {
      if (options.progressive && options.vramCache)
        note = "--progressive: with --cache vram the compressed tiles are in video memory already; tiles load whole";
      return s;
    }
#else
    note = "this build has no CUDA codec (HF_CUDA=OFF)";
#endif
    note = "--stream cuda: " + note + "; falling back to cpu";
    return std::make_unique<CpuStreamStrategy>(archive, options.threads, options.progressive);
  }
  return makeStreamStrategy(name, archive, error, options.threads, options.progressive);
}

}  // namespace hfr
