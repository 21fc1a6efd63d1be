// compressed_cache.cpp - CompressedCache (compressed_cache.h).
#include "render/stream/compressed_cache.h"

#include <algorithm>

namespace hfr {

CompressedCache::CompressedCache(uint64_t capacity, uint32_t alignment)
    : alignment_(alignment && (alignment & (alignment - 1)) == 0 ? alignment : 256) {
  capacity_ = capacity & ~uint64_t(alignment_ - 1);  // whole aligned units only
  if (capacity_) free_[0] = capacity_;
}

int64_t CompressedCache::find(size_t key) {
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    ++stats_.misses;
    return -1;
  }
  ++stats_.hits;
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  return int64_t(it->second.offset);
}

int64_t CompressedCache::takeFree(uint64_t bytes) {
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < bytes) continue;
    const uint64_t offset = it->first, rest = it->second - bytes;
    free_.erase(it);
    if (rest) free_[offset + bytes] = rest;
    return int64_t(offset);
  }
  return -1;
}

void CompressedCache::release(uint64_t offset, uint64_t bytes) {
  auto next = free_.lower_bound(offset);
  if (next != free_.end() && next->first == offset + bytes) {  // merge with the range after
    bytes += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {  // and with the one before
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      prev->second += bytes;
      return;
    }
  }
  free_[offset] = bytes;
}

int64_t CompressedCache::insert(size_t key, uint64_t bytes, std::vector<size_t>* evicted) {
  const uint64_t need = align(std::max<uint64_t>(bytes, 1));
  if (entries_.count(key) || need > capacity_) {
    ++stats_.rejected;
    return -1;
  }
  int64_t offset = takeFree(need);
  // Evict from the least recently used end, skipping pinned entries, until a range fits.
  for (auto it = lru_.end(); offset < 0 && it != lru_.begin();) {
    --it;
    Entry& e = entries_[*it];
    if (e.pins) continue;
    const size_t victim = *it;
    release(e.offset, e.bytes);
    used_ -= e.bytes;
    it = lru_.erase(it);
    entries_.erase(victim);
    ++stats_.evicted;
    if (evicted) evicted->push_back(victim);
    offset = takeFree(need);
  }
  if (offset < 0) {
    ++stats_.rejected;
    return -1;
  }
  lru_.push_front(key);
  entries_[key] = Entry{uint64_t(offset), need, 0, lru_.begin()};
  used_ += need;
  ++stats_.inserted;
  return offset;
}

void CompressedCache::pin(size_t key) {
  auto it = entries_.find(key);
  if (it != entries_.end()) ++it->second.pins;
}

void CompressedCache::unpin(size_t key) {
  auto it = entries_.find(key);
  if (it != entries_.end() && it->second.pins) --it->second.pins;
}

void CompressedCache::erase(size_t key) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return;
  release(it->second.offset, it->second.bytes);
  used_ -= it->second.bytes;
  lru_.erase(it->second.lru);
  entries_.erase(it);
}

uint64_t CompressedCache::largestFree() const {
  uint64_t m = 0;
  for (const auto& [offset, bytes] : free_) m = std::max(m, bytes);
  return m;
}

}  // namespace hfr
