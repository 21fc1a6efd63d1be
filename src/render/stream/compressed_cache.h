// compressed_cache.h - the bookkeeping of a byte pool of compressed tiles: the VRAM-resident
// cache of issue 13 (`--cache vram[:MiB]`: compressed tiles kept in device memory, atlas fills
// decoded from there with no PCIe transfer). GL- and CUDA-free: the strategy that owns the
// device memory copies each tile to the offset handed out here and decodes from it.
//
// Entries are variable-size byte ranges (one tile's compressed stream, `alignment`-aligned)
// keyed by tile index. Placement is first fit over the free ranges (kept coalesced); when no
// free range fits, least recently used entries are evicted one by one until one does. Entries
// in use by work still in flight on the GPU are pinned (pin/unpin, counted) and never evicted.
//
// Not thread-safe: the render thread (or the strategy's own thread) only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <unordered_map>
#include <vector>

namespace hfr {

class CompressedCache {
 public:
  struct Stats {
    uint64_t hits = 0, misses = 0;  // find() answers
    uint64_t inserted = 0, evicted = 0, rejected = 0;  // rejected: insert() found no room
  };

  // `capacity` bytes; offsets and sizes are rounded up to `alignment` (a power of two).
  explicit CompressedCache(uint64_t capacity, uint32_t alignment = 256);

  // The entry's offset (and it becomes the most recently used), or -1 when not cached.
  int64_t find(size_t key);
  bool contains(size_t key) const { return entries_.count(key) != 0; }
  // Places `bytes` for `key` (which must not be cached), evicting least recently used entries
  // that are not pinned until a free range fits. Returns the offset, or -1 when it cannot fit
  // (larger than the capacity, or the pinned entries leave no room); `evicted` (optional) gets
  // the keys removed, in eviction order.
  int64_t insert(size_t key, uint64_t bytes, std::vector<size_t>* evicted = nullptr);
  // Pins an entry while work reads it (counted: pin twice, unpin twice). Ignored for keys
  // not cached.
  void pin(size_t key);
  void unpin(size_t key);
  // Removes an entry (pinned or not: the caller knows it is no longer read).
  void erase(size_t key);

  uint64_t capacity() const { return capacity_; }
  uint64_t usedBytes() const { return used_; }      // aligned sizes of the entries
  size_t size() const { return entries_.size(); }
  // The largest free range (what the next insert can take without evicting).
  uint64_t largestFree() const;
  const Stats& stats() const { return stats_; }

 private:
  struct Entry {
    uint64_t offset = 0, bytes = 0;  // aligned
    uint32_t pins = 0;
    std::list<size_t>::iterator lru;  // position in lru_ (front = most recent)
  };
  uint64_t align(uint64_t v) const { return (v + alignment_ - 1) & ~uint64_t(alignment_ - 1); }
  int64_t takeFree(uint64_t bytes);  // first fit; -1 when no range fits
  void release(uint64_t offset, uint64_t bytes);  // back to the free ranges, coalesced

  uint64_t capacity_;
  uint32_t alignment_;
  uint64_t used_ = 0;
  std::map<uint64_t, uint64_t> free_;  // offset -> size, disjoint and not adjacent
  std::unordered_map<size_t, Entry> entries_;
  std::list<size_t> lru_;
  Stats stats_;
};

}  // namespace hfr
