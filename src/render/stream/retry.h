// retry.h - when a tile whose load failed is asked for again. A local archive's failures are
// final (a corrupt payload stays corrupt: the tile is drawn from an ancestor). A URL archive's
// are usually not (the server was down, a request timed out), so the renderer asks for such a
// tile again after a back-off: 1 s after its first failure, doubling up to kMaxSeconds, so that
// the view recovers when the server returns without hammering it while it is away.
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
  }
  // The tile's load failed at `now` (seconds on any monotonic clock).
  void failed(size_t tile, double now) {
    if (tile >= due_.size()) return;
    const int n = std::min<int>(failures_[tile], 5);
    due_[tile] = now + std::min(kMaxSeconds, kFirstSeconds * double(1 << n));
    if (failures_[tile] < 255) ++failures_[tile];
  }
  // Clears flags[t] (the caller's "failed, do not ask" mark) of the tiles whose back-off has
  // passed; returns how many. Tiles never failed are untouched.
  size_t releaseDue(std::vector<uint8_t>& flags, double now) const {
    size_t n = 0;
    for (size_t t = 0; t < flags.size() && t < due_.size(); ++t)
      if (flags[t] && now >= due_[t]) {
        flags[t] = 0;
        ++n;
      }
    return n;
  }
  // Failures so far of one tile (0: never failed; the first prints a warning).
  unsigned failures(size_t tile) const { return tile < failures_.size() ? failures_[tile] : 0; }

 private:
  std::vector<double> due_;
  std::vector<uint8_t> failures_;
};

}  // namespace hfr
