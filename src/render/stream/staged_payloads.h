// staged_payloads.h - compressed payloads kept in host memory outside the atlas (issues 13 and
// 18): what a strategy that decodes on the GPU (cuda or gl with --cache host) has read, requested
// or staged ahead of being wanted (StreamStrategy::stage), so that a request for such a tile is
// batched in the frame it is made instead of waiting a frame or more for a loader and the disk,
// network or throttled channel behind it.
//
// Why compressed only: a tile here costs its payload (1/ratio of p * p * 2 bytes), so the same
// memory holds `ratio` times the tiles a sample cache would; a raw strategy's atlas is its only
// cache. Sized in bytes (StreamOptions::hostCacheMiB), least recently used out (the bookkeeping
// is a CompressedCache whose offsets are not used).
//
// Not thread-safe: the owning strategy's mutex guards it (loaders insert and take staged tiles,
// the render thread looks up requests and replaces the staged list).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <unordered_map>
#include <utility>
#include <vector>

#include "render/stream/compressed_cache.h"

namespace hfr {

template <class Item>
class StagedPayloads {
 public:
  explicit StagedPayloads(uint64_t capacityBytes) : index_(capacityBytes, 64) {}

  // The cached item for `tile` (now the most recently used), or nullptr.
  const Item* find(size_t tile) {
    if (index_.find(tile) < 0) return nullptr;
    auto it = items_.find(tile);
    return it == items_.end() ? nullptr : &it->second;
  }
  bool contains(size_t tile) const { return index_.contains(tile); }

  // Keeps `item` (`bytes` of payload) for `tile`, evicting least recently used ones; an item
  // larger than the whole capacity is not kept. A tile already cached is refreshed.
  void insert(size_t tile, uint64_t bytes, Item item) {
    if (index_.contains(tile)) index_.erase(tile);
    items_.erase(tile);
    std::vector<size_t> evicted;
    if (index_.insert(tile, bytes, &evicted) < 0) return;
    for (size_t e : evicted) items_.erase(e);
    items_.emplace(tile, std::move(item));
  }

  // Replaces the staged list with `tiles` minus those cached or for which `busy(tile)` is true
  // (being requested or loaded); their order is kept (coarse first, as planned).
  template <class Busy>
  void stage(const std::vector<size_t>& tiles, Busy busy) {
    staged_.clear();
    for (size_t t : tiles)
      if (!index_.contains(t) && !busy(t)) staged_.push_back(t);
  }
  bool hasStaged() const { return !staged_.empty(); }
  // The next staged tile to read (a loader with no requested tile waiting takes it).
  size_t takeStaged() {
    const size_t t = staged_.front();
    staged_.pop_front();
    return t;
  }
  const std::deque<size_t>& staged() const { return staged_; }  // for ReadAhead

  // A loader has read `tile` (`readOk`: without error; `bytes`: what `item` holds): keeps a
  // readable one and says whether it joins the strategy's ready list: a requested tile always; a
  // staged one only when it was requested while it was read (then taken out of `queue`, the
  // strategy's requested tiles, instead of being read again; an unreadable one is read again when
  // requested, which reports its error).
  template <class Queue>
  bool keepRead(size_t tile, bool staged, bool readOk, uint64_t bytes, const Item& item,
                Queue& queue) {
    if (readOk) insert(tile, bytes, item);
    if (!staged) return true;
    const auto queued = std::find(queue.begin(), queue.end(), tile);
    if (queued == queue.end() || !readOk) return false;
    queue.erase(queued);
    return true;
  }

  uint64_t bytes() const { return index_.usedBytes(); }
  uint64_t capacity() const { return index_.capacity(); }
  size_t size() const { return items_.size(); }

 private:
  CompressedCache index_;
  std::unordered_map<size_t, Item> items_;
  std::deque<size_t> staged_;
};

}  // namespace hfr
