// block_table.h - internal to http_source.cpp: the bookkeeping of an HTTP archive's sparse
// local mirror, per block (kHttpBlockBytes): absent, present or in flight, how many readers pin it,
// and when it was last used (LRU).
//
// Sparse: only blocks that are not absent, or are pinned, have an entry, so memory follows the
// cache's budget and what is in flight, not the archive's size (a 4 TB archive has a billion 4 KiB
// blocks: dense per-block arrays of 9 bytes would take 9 GB before any tile was read). Walks
// (eviction, clearing, saving the cache's map) visit the entries only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

namespace hfa::detail {

class BlockTable {
 public:
  enum State : uint8_t { kAbsent = 0, kPresent = 1, kInFlight = 2 };

  void clear() { entries_.clear(); }
  size_t entries() const { return entries_.size(); }

  State state(size_t block) const {
    const auto it = entries_.find(block);
    return it == entries_.end() ? kAbsent : it->second.state;
  }
  void setState(size_t block, State s) {
    if (s == kAbsent) {
      const auto it = entries_.find(block);
      if (it == entries_.end()) return;
      it->second.state = kAbsent;
      dropIfEmpty(it);
      return;
    }
    entries_[block].state = s;
  }
  uint32_t pins(size_t block) const {
    const auto it = entries_.find(block);
    return it == entries_.end() ? 0 : it->second.pins;
  }
  // A reader uses the block (pinned until unpin) at `tick` (LRU order).
  void pin(size_t block, uint32_t tick) {
    Entry& e = entries_[block];
    ++e.pins;
    e.used = tick;
  }
  void unpin(size_t block) {
    const auto it = entries_.find(block);
    if (it == entries_.end() || it->second.pins == 0) return;
    --it->second.pins;
    dropIfEmpty(it);
  }
  uint32_t used(size_t block) const {
    const auto it = entries_.find(block);
    return it == entries_.end() ? 0 : it->second.used;
  }
  // Present since `tick` (arrived).
  void arrived(size_t block, uint32_t tick) {
    Entry& e = entries_[block];
    e.state = kPresent;
    e.used = tick;
  }

  // The present, unpinned blocks outside [keepFirst, keepLast], least recently used first (the
  // age tick - used, wrap-safe; ties by block): the order in which eviction drops them.
  std::vector<size_t> evictionOrder(uint32_t tick, size_t keepFirst, size_t keepLast) const {
    std::vector<std::pair<uint32_t, size_t>> aged;  // (age, block)
    for (const auto& [block, e] : entries_)
      if (e.state == kPresent && e.pins == 0 && (block < keepFirst || block > keepLast))
        aged.emplace_back(uint32_t(tick - e.used), block);
    std::sort(aged.begin(), aged.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    std::vector<size_t> order;
    order.reserve(aged.size());
    for (const auto& a : aged) order.push_back(a.second);
    return order;
  }

  // f(block, state, pins, used) for every entry, in no particular order. f must not add or
  // remove entries.
  template <class F>
  void forEach(F&& f) const {
    for (const auto& [block, e] : entries_) f(block, e.state, e.pins, e.used);
  }

 private:
  struct Entry {
    State state = kAbsent;
    uint32_t pins = 0;
    uint32_t used = 0;
  };
  using Map = std::unordered_map<size_t, Entry>;
  void dropIfEmpty(Map::iterator it) {
    if (it->second.state == kAbsent && it->second.pins == 0) entries_.erase(it);
  }
  Map entries_;
};

}  // namespace hfa::detail
