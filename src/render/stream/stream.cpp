// stream.cpp - atlas layout, LRU page table and the cpu streaming strategy.
#include "render/stream/stream.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "archive/archive.h"

namespace hfr {

AtlasSlot AtlasLayout::slot(uint32_t index) const {
  const uint32_t per = uint32_t(slotsPerLayer());
  const uint32_t s = index % per;
  AtlasSlot a;
  a.layer = index / per;
  a.x = (s % uint32_t(slotsPerSide)) * uint32_t(tileSize);
  a.y = (s / uint32_t(slotsPerSide)) * uint32_t(tileSize);
  return a;
}

AtlasLayout AtlasLayout::fromBudget(int tileSize, double budgetMiB, size_t maxTiles,
                                    size_t minTiles, int maxLayers, int maxTextureSize) {
  if (tileSize < 2 || maxLayers < 1 || maxTextureSize < tileSize)
    throw std::invalid_argument("atlas: bad tile size or limits");
  const double tileBytes = double(tileSize) * tileSize * 2;
  const size_t budgetTiles = size_t(std::max(0.0, budgetMiB) * 1048576.0 / tileBytes);
  // The whole archive fits: round up to whole layers. Else stay within the budget: round down.
  const bool whole = maxTiles <= budgetTiles;
  const size_t want = std::max<size_t>(whole ? maxTiles : budgetTiles, 1);
  AtlasLayout l;
  l.tileSize = tileSize;
  // Layers of up to 16 x 16 slots (2064 texels for p = 129); small atlases use one layer.
  const int maxSide = std::max(1, std::min(16, maxTextureSize / tileSize));
  int side = 1;
  if (whole) {
    while (side < maxSide && size_t(side) * size_t(side) < want) ++side;
  } else {
    while (side < maxSide && size_t(side + 1) * size_t(side + 1) <= want) ++side;
  }
  l.slotsPerSide = side;
  const size_t per = l.slotsPerLayer();
  size_t layers = whole ? (want + per - 1) / per : std::max<size_t>(1, want / per);
  while (layers * per < minTiles) ++layers;
  l.layers = uint32_t(std::min<size_t>(layers, size_t(maxLayers)));
  return l;
}

// ---- PageTable ----

PageTable::PageTable(size_t tiles, size_t capacity)
    : slotOf_(tiles, -1),
      slotTile_(capacity, -1),
      residency_(tiles, 0),
      pinned_(tiles, 0),
      pos_(tiles),
      inLru_(tiles, 0) {
  free_.reserve(capacity);
  for (size_t s = capacity; s-- > 0;) free_.push_back(uint32_t(s));  // slot 0 first
}

void PageTable::touch(size_t tile, uint64_t frame) {
  if (!inLru_[tile]) return;  // not resident or pinned
  lru_.splice(lru_.begin(), lru_, pos_[tile]);
  lru_.front().frame = frame;
}

void PageTable::pin(size_t tile) {
  if (slotOf_[tile] < 0) throw std::logic_error("page table: pin of a tile that is not resident");
  pinned_[tile] = 1;
  if (inLru_[tile]) {
    lru_.erase(pos_[tile]);
    inLru_[tile] = 0;
  }
}

bool PageTable::allocate(size_t tile, uint64_t frame, uint32_t& slot, long& evicted) {
  evicted = -1;
  if (slotOf_[tile] >= 0) {
    slot = uint32_t(slotOf_[tile]);
    touch(tile, frame);
    return true;
  }
  if (free_.empty()) {
    // Least recently used at the back; it must not be in use this frame.
    if (lru_.empty() || lru_.back().frame >= frame) return false;
    evicted = long(lru_.back().tile);
    release(size_t(evicted));
  }
  slot = free_.back();
  free_.pop_back();
  slotOf_[tile] = long(slot);
  slotTile_[slot] = long(tile);
  residency_[tile] = 1;
  ++resident_;
  lru_.push_front(Use{tile, frame});
  pos_[tile] = lru_.begin();
  inLru_[tile] = 1;
  return true;
}

void PageTable::release(size_t tile) {
  const long s = slotOf_[tile];
  if (s < 0) return;
  if (inLru_[tile]) {
    lru_.erase(pos_[tile]);
    inLru_[tile] = 0;
  }
  pinned_[tile] = 0;
  slotOf_[tile] = -1;
  slotTile_[size_t(s)] = -1;
  residency_[tile] = 0;
  --resident_;
  free_.push_back(uint32_t(s));
}

// ---- CpuStreamStrategy ----

CpuStreamStrategy::CpuStreamStrategy(const hfa::ArchiveReader& archive, int threads, bool progressive)
    : archive_(archive), progressive_(progressive) {
  if (progressive_) {
    lossy_.assign(archive.tiles().size(), 0);
    refine_.prefixBytes.assign(archive.tiles().size(), 0);
  }
  if (threads <= 0) threads = std::max(1, int(std::thread::hardware_concurrency()) - 1);
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { worker(); });
}

CpuStreamStrategy::~CpuStreamStrategy() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

void ReadAhead::advise(const hfa::ArchiveReader& archive) const { archive.willNeed(tiles, count); }

void CpuStreamStrategy::worker() {
  const size_t p = size_t(archive_.header().tileSize());
  for (;;) {
    size_t tile;
    bool refinement = false;
    uint32_t alreadyRead = 0;
    ReadAhead ahead;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      // Wanted tiles first, refinements when every requested tile has been delivered.
      wake_.wait(lock, [&] { return stop_ || refine_.ready(queue_, active_.size()); });
      if (stop_) return;
      tile = refine_.take(queue_, refinement, alreadyRead);
      if (!refinement) ahead.take(tile, queue_);
    }
    if (!refinement) ahead.advise(archive_);
    // Read (mmap) and decode off the render thread; ArchiveReader is thread-safe after open().
    Done d;
    d.tile = tile;
    d.refinement = refinement;
    d.samples.resize(p * p);
    std::string error;
    uint64_t bytes = 0;
    bool ok = false;
    if (progressive_ && !refinement) {
      bool exact = true;
      uint32_t read = 0;
      ok = archive_.decodeTileLossy(tile, d.samples.data(), exact, read, error);
      d.lossy = ok && !exact;
      bytes = read;
    } else {
      ok = archive_.decodeTile(tile, d.samples.data(), error, hfpac::Layers::All, alreadyRead);
      bytes = archive_.tiles()[tile].size - alreadyRead;
    }
    if (!ok) {
      d.error = error.empty() ? "decode failed" : error;
      d.samples.clear();
    }
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.bytesRead += bytes;
    if (d.lossy) refine_.prefixBytes[tile] = uint32_t(bytes);
    done_.push_back(std::move(d));
  }
}

void CpuStreamStrategy::request(const std::vector<size_t>& tiles) {
  std::lock_guard<std::mutex> lock(mutex_);
  // Drop the queued (not started) tiles, then queue the new list in its order.
  for (size_t t : queue_) active_.erase(t);
  queue_.clear();
  for (size_t t : tiles) {
    if (t >= archive_.tiles().size()) continue;
    if (active_.insert(t).second) queue_.push_back(t);
  }
  if (refine_.ready(queue_, active_.size())) wake_.notify_all();
}

double compressedDeliveryScale(const hfa::ArchiveReader& archive, bool (*decodedOnGpu)(hfa::Codec)) {
  const uint64_t tileBytes = uint64_t(archive.header().tileSize()) * uint64_t(archive.header().tileSize()) * 2;
  uint64_t raw = 0, sent = 0;
  for (const auto& t : archive.tiles()) {
    raw += tileBytes;
    sent += decodedOnGpu(t.codec) ? std::max<uint64_t>(t.size, 1) : tileBytes;
  }
  if (sent == 0) return 1.0;
  return std::min(kMaxDeliveryScale, std::max(1.0, double(raw) / double(sent)));
}

size_t deliveryBudget(size_t uploads, double scale) {
  if (!(scale > 1.0)) return uploads;
  const double budget = std::floor(double(uploads) * std::min(scale, kMaxDeliveryScale));
  return budget >= double(SIZE_MAX / 2) ? std::max(uploads, SIZE_MAX / 2) : std::max(uploads, size_t(budget));
}

size_t CpuStreamStrategy::deliver(TileSink& sink, size_t maxTiles) {
  std::deque<Done> ready;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    while (!done_.empty() && ready.size() < maxTiles) {
      ready.push_back(std::move(done_.front()));
      done_.pop_front();
    }
  }
  size_t n = 0, delivered = 0, failed = 0, dropped = 0, deliveredLossy = 0, refined = 0;
  uint64_t uploaded = 0;
  std::vector<size_t> finished, refinedTiles, toRefine;
  for (Done& d : ready) {
    if (d.refinement) {
      // In place: the exact samples over the lossy ones, in the tile's slot. A tile evicted
      // since stays unrefined (loaded again, lossy, when it is wanted again); a corrupt
      // payload (the CRC covers the whole of it) is reported and its lossy heights dropped.
      refinedTiles.push_back(d.tile);
      if (!lossy_[d.tile]) continue;
      AtlasSlot slot;
      if (!d.error.empty()) {
        lossy_[d.tile] = 0;
        sink.failed(d.tile, d.error);
        ++failed;
      } else if (sink.residentSlot(d.tile, slot)) {
        sink.uploadSamples(d.tile, slot, d.samples.data());
        uploaded += uint64_t(d.samples.size()) * 2;
        lossy_[d.tile] = 0;
        ++refined;
        ++n;
      } else {
        lossy_[d.tile] = 0;
      }
      continue;
    }
    finished.push_back(d.tile);
    if (!d.error.empty()) {
      sink.failed(d.tile, d.error);
      ++failed;
      continue;
    }
    AtlasSlot slot;
    if (!sink.reserve(d.tile, slot)) {
      ++dropped;
      continue;
    }
    sink.uploadSamples(d.tile, slot, d.samples.data());
    ++delivered;
    uploaded += uint64_t(d.samples.size()) * 2;
    ++n;
    if (progressive_) {
      lossy_[d.tile] = d.lossy;
      if (d.lossy) {
        ++deliveredLossy;
        toRefine.push_back(d.tile);
      }
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t t : finished) active_.erase(t);
  refine_.update(refinedTiles, toRefine);
  if (refine_.ready(queue_, active_.size())) wake_.notify_all();
  stats_.delivered += delivered;
  stats_.failed += failed;
  stats_.dropped += dropped;
  stats_.samplesToDevice += uploaded;
  stats_.deliveredLossy += deliveredLossy;
  stats_.refined += refined;
  return n;
}

bool CpuStreamStrategy::loadNow(size_t tile, TileSink& sink, std::string& error) {
  const size_t p = size_t(archive_.header().tileSize());
  std::vector<uint16_t> samples(p * p);
  if (!archive_.decodeTile(tile, samples.data(), error)) {
    sink.failed(tile, error);
    return false;
  }
  AtlasSlot slot;
  if (!sink.reserve(tile, slot)) {
    error = "atlas has no free slot for " + archive_.tileName(tile);
    return false;
  }
  sink.uploadSamples(tile, slot, samples.data());
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.bytesRead += archive_.tiles()[tile].size;
  stats_.samplesToDevice += uint64_t(samples.size()) * 2;
  ++stats_.delivered;
  return true;
}

size_t CpuStreamStrategy::pending() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return active_.size() + refine_.pending.size();
}

StreamStats CpuStreamStrategy::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  StreamStats s = stats_;
  s.requested = active_.size();
  s.lossyResident = size_t(std::count(lossy_.begin(), lossy_.end(), uint8_t(1)));
  return s;
}

std::unique_ptr<StreamStrategy> makeStreamStrategy(const std::string& name,
                                                   const hfa::ArchiveReader& archive,
                                                   std::string& error, int threads, bool progressive) {
  if (name == "cpu") return std::make_unique<CpuStreamStrategy>(archive, threads, progressive);
  if (name == "raw" || name == "cuda") {
    error = "--stream " + name + " needs the GL renderer (hfr::makeRenderStreamStrategy)";
    return nullptr;
  }
  error = "unknown --stream '" + name + "' (cpu, raw, cuda)";
  return nullptr;
}

}  // namespace hfr
