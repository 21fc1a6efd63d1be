// stream_cuda.cpp - the "cuda" strategy (stream_gl.h; built only with the GPU codec,
// HF_HAVE_CUDA_STREAM).
//
// A loader thread reads each compressed payload from the archive mmap (CRC checked, so the pages
// are in memory before the render thread sees the tile) and checks its geometry. The render
// thread, in deliver(), takes up to `maxTiles` loaded tiles, reserves their atlas slots and
// hands them as one batch to the next of K (GpuDecoder, CUDA stream) pairs, round-robin:
// prepare() validates and packs the compressed streams into the decoder's pinned staging, one
// cudaMemcpyAsync moves them to the device, then, with the atlas texture (registered once with
// cudaGraphicsRegisterFlagsSurfaceLoadStore) mapped on that stream, one launch decodes every
// tile of the batch into its layer through one surface object per touched layer
// (cudaGraphicsSubResourceGetMappedArray(layer), made per map and destroyed when that pair is
// reused); unmap on the same stream orders the writes before GL's next use of the texture. No
// decompressed sample crosses PCIe or touches the CPU; the host never waits for the GPU except
// when a pair is reused while its previous batch is still running.
#ifdef HF_HAVE_CUDA_STREAM

#include <glad/gl.h>
// After glad (which defines __gl_h_): cuda_gl_interop.h then does not pull in GL/gl.h.
#include <cuda_gl_interop.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <unordered_set>
#include <vector>

#include "archive/archive.h"
#include "gpu/cuda_util.h"
#include "gpu/decoder.h"
#include "render/gl/stream_gl.h"

namespace hfr {

namespace {

class CudaStreamStrategy final : public StreamStrategy {
 public:
  CudaStreamStrategy(const hfa::ArchiveReader& archive, int streams)
      : archive_(archive), p_(archive.header().tileSize()) {
    pairs_.resize(size_t(std::max(1, streams)));
    for (auto& pr : pairs_) pr = std::make_unique<Pair>();
    loader_ = std::thread([this] { load(); });
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

  void request(const std::vector<size_t>& tiles) override {
    if (fallback_) return fallback_->request(tiles);
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t t : queue_) active_.erase(t);
    queue_.clear();
    for (size_t t : tiles) {
      if (t >= archive_.tiles().size()) continue;
      if (active_.insert(t).second) queue_.push_back(t);
    }
    last_ = tiles;
    if (!queue_.empty()) wake_.notify_all();
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
    return active_.size();
  }
  StreamStats stats() const override {
    StreamStats s;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      s = stats_;
      s.requested = active_.size();
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
    }
    return s;
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
  };
  struct Pair {
    hfgpu::GpuDecoder decoder;
    hfgpu::Stream stream;
    hfgpu::Event start;  // timing events: StreamStats::deviceMs (copy + decode of a batch)
    hfgpu::Event done;
    bool busy = false;
    std::vector<size_t> tiles;  // of the batch in flight (for the OutOfRange report)
    std::vector<cudaSurfaceObject_t> surfaces;
  };

  Loaded read(size_t tile) const {
    Loaded l{tile, nullptr, 0, {}};
    if (!archive_.payload(tile, l.data, l.size, l.error)) {
      if (l.error.empty()) l.error = archive_.tileName(tile) + ": unreadable";
      return l;
    }
    hfpac::PatchInfo info;
    const hfpac::Status s = hfpac::readInfo(l.data, l.size, info);
    if (s != hfpac::Status::Ok)
      l.error = archive_.tileName(tile) + ": " + hfpac::statusMessage(s);
    else if (archive_.tiles()[tile].codec == hfa::Codec::Raw || info.width != p_ ||
             info.height != p_ || info.type != archive_.header().sampleType)
      l.error = archive_.tileName(tile) + ": patch geometry or sample type disagrees with the header";
    return l;
  }

  void load() {
    for (;;) {
      size_t tile;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (stop_) return;
        tile = queue_.front();
        queue_.pop_front();
      }
      Loaded l = read(tile);
      std::lock_guard<std::mutex> lock(mutex_);
      stats_.bytesRead += archive_.tiles()[tile].size;
      ready_.push_back(std::move(l));
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
    fallback_ = std::make_unique<CpuStreamStrategy>(archive_);
    std::vector<size_t> again;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      again = last_;
      queue_.clear();
      ready_.clear();
      active_.clear();
    }
    fallback_->request(again);
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
    const std::vector<hfpac::Status> st = pr.decoder.statuses();
    for (size_t i = 0; i < st.size() && i < pr.tiles.size(); ++i)
      if (st[i] == hfpac::Status::OutOfRange)
        std::fprintf(stderr, "Warning: %s: %s (clamped)\n", archive_.tileName(pr.tiles[i]).c_str(),
                     hfpac::statusMessage(st[i]));
    for (cudaSurfaceObject_t s : pr.surfaces) CUDA_LOG(cudaDestroySurfaceObject(s));
    pr.surfaces.clear();
  }

  // One batch: at most maxTiles loaded tiles (only `only` when given) decoded into the atlas.
  size_t deliverBatch(TileSink& sink, size_t maxTiles, const size_t* only = nullptr) {
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
        while (!ready_.empty() && batch.size() < maxTiles) {
          batch.push_back(std::move(ready_.front()));
          ready_.pop_front();
        }
      }
    }
    if (batch.empty()) return 0;
    std::vector<hfgpu::PatchInput> patches;
    std::vector<size_t> tiles, finished;
    std::vector<AtlasSlot> slots;
    std::map<uint32_t, uint32_t> layerIndex;  // atlas layer -> surface index
    size_t failed = 0, dropped = 0;
    for (const Loaded& l : batch) {
      finished.push_back(l.tile);
      if (!l.error.empty()) {
        sink.failed(l.tile, l.error);
        ++failed;
        continue;
      }
      AtlasSlot slot;
      if (!sink.reserve(l.tile, slot)) {
        ++dropped;
        continue;
      }
      hfgpu::PatchInput in;
      in.data = l.data;
      in.size = l.size;
      in.surface = layerIndex.emplace(slot.layer, uint32_t(layerIndex.size())).first->second;
      in.x = int(slot.x);
      in.y = int(slot.y);
      patches.push_back(in);
      tiles.push_back(l.tile);
      slots.push_back(slot);
    }
    size_t committed = 0;
    uint64_t blob = 0;
    if (!patches.empty()) {
      Pair& pr = *pairs_[next_++ % pairs_.size()];
      finish(pr);  // the pair's previous batch (its staging and surfaces)
      pr.decoder.prepare(patches.data(), patches.size());
      pr.start.record(pr.stream);
      const std::vector<hfpac::Status> valid = pr.decoder.plan().statuses();
      blob = pr.decoder.plan().blobBytes();
      pr.decoder.uploadAsync(pr.stream);
      CUDA_CHECK(cudaGraphicsMapResources(1, &resource_, pr.stream));
      std::vector<cudaSurfaceObject_t> surfaces(layerIndex.size());
      for (const auto& [layer, index] : layerIndex) {
        cudaArray_t array = nullptr;
        CUDA_CHECK(cudaGraphicsSubResourceGetMappedArray(&array, resource_, layer, 0));
        cudaResourceDesc rd{};
        rd.resType = cudaResourceTypeArray;
        rd.res.array.array = array;
        CUDA_CHECK(cudaCreateSurfaceObject(&surfaces[index], &rd));
      }
      pr.surfaces = surfaces;
      pr.decoder.decodeAsync(hfgpu::DecodeMode::All,
                             hfgpu::Target::surfaceSet(pr.surfaces.data(), int(pr.surfaces.size())),
                             pr.stream);
      pr.decoder.fetchStatusesAsync(pr.stream);
      CUDA_CHECK(cudaGraphicsUnmapResources(1, &resource_, pr.stream));
      pr.done.record(pr.stream);
      pr.busy = true;
      pr.tiles = tiles;
      for (size_t i = 0; i < tiles.size(); ++i) {
        if (i < valid.size() && valid[i] != hfpac::Status::Ok) {
          sink.failed(tiles[i], archive_.tileName(tiles[i]) + ": " + hfpac::statusMessage(valid[i]));
          ++failed;
          continue;
        }
        sink.commit(tiles[i], slots[i]);
        ++committed;
      }
    }
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t t : finished) active_.erase(t);
    stats_.delivered += committed;
    stats_.failed += failed;
    stats_.dropped += dropped;
    stats_.compressedToDevice += blob;
    return committed;
  }

  const hfa::ArchiveReader& archive_;
  const int p_;
  std::vector<std::unique_ptr<Pair>> pairs_;
  size_t next_ = 0;
  cudaGraphicsResource_t resource_ = nullptr;
  std::unique_ptr<StreamStrategy> fallback_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<size_t> queue_;
  std::unordered_set<size_t> active_;
  std::deque<Loaded> ready_;
  std::vector<size_t> last_;
  StreamStats stats_;
  bool stop_ = false;
  std::thread loader_;
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
    return std::make_unique<CudaStreamStrategy>(archive, options.streams);
  } catch (const std::exception& e) {
    note = std::string("CUDA error: ") + e.what();
    return nullptr;
  }
}

}  // namespace hfr

#endif  // HF_HAVE_CUDA_STREAM
