// retry.h - when a tile whose load failed is asked for again. A local archive's failures are
// final (a corrupt payload stays corrupt: the tile is drawn from an ancestor). A URL archive's
// are usually not (the server was down, a request timed out), so the renderer asks for such a
// tile again after a back-off: 1 s after its first failure, doubling up to kMaxSeconds, so that
// the view recovers when the server returns without hammering it while it is away. A tile that
// is corrupt on the server is fetched again every 30 s (its warning printed once).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace hfr {

class FailureRetry {
 public:
  static constexpr double kFirstSeconds = 1, kMaxSeconds = 30;

  void reset(size_t tiles) {
    due_.assign(tiles, 0);
    failures_.assign(tiles, 0);
    nextDue_ = kNever;
  }
  // The tile's load failed at `now` (seconds on any monotonic clock).
  void failed(size_t tile, double now) {
    if (tile >= due_.size()) return;
    const int n = std::min<int>(failures_[tile], 5);
    due_[tile] = now + std::min(kMaxSeconds, kFirstSeconds * double(1 << n));
    nextDue_ = std::min(nextDue_, due_[tile]);
    if (failures_[tile] < 255) ++failures_[tile];
  }
  // Clears flags[t] (the caller's "failed, do not ask" mark, set only by failures reported
  // here) of the tiles whose back-off has passed; returns how many. Called every frame: nothing
  // is scanned before the earliest back-off ends.
  size_t releaseDue(std::vector<uint8_t>& flags, double now) {
    if (now < nextDue_) return 0;
    size_t n = 0;
    nextDue_ = kNever;
    for (size_t t = 0; t < flags.size() && t < due_.size(); ++t) {
      if (!flags[t]) continue;
      if (now >= due_[t]) {
        flags[t] = 0;
        ++n;
      } else {
        nextDue_ = std::min(nextDue_, due_[t]);
      }
    }
    return n;
  }
  // Failures so far of one tile (0: never failed; the first prints a warning).
  unsigned failures(size_t tile) const { return tile < failures_.size() ? failures_[tile] : 0; }

 private:
  static constexpr double kNever = 1e300;
  std::vector<double> due_;
  std::vector<uint8_t> failures_;
  double nextDue_ = kNever;  // the earliest back-off end of a flagged tile
};

}  // namespace hfr
