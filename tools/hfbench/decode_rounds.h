// decode_rounds.h - the single-thread decode timings of `hfbench codec`, taken in interleaved
// rounds across codecs.
//
// Each codec registers its decode over every patch once it has checked it (a first, untimed
// decode that the lossless check reads); run(rounds) then runs every registered decode once per
// round, in turn, and keeps each one's best round. On a shared machine a slow phase (a busy
// neighbour, a frequency drop) can last seconds: timed one codec after the other, it fell on
// one codec's whole best-of block and moved the decode ratios the bench reports by up to 1.5x
// (session 19, dev machine); interleaved, it slows one round of every codec alike.
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

#include "timer.h"

namespace hfbench {

class DecodeRounds {
 public:
  using Decode = std::function<bool()>;  // decodes every patch; false: a patch failed

  // Registers a decode; its index for best().
  size_t add(Decode decode) {
    entries_.push_back(Entry{std::move(decode), 0.0, false});
    return entries_.size() - 1;
  }

  void run(int rounds) {
    for (int r = 0; r < std::max(1, rounds); ++r)
      for (Entry& e : entries_) {
        if (e.failed) continue;
        Stopwatch watch;
        if (!e.decode()) {
          e.failed = true;
          continue;
        }
        const double seconds = watch.seconds();
        if (e.best == 0 || seconds < e.best) e.best = seconds;
      }
  }

  // The best round of decode i in seconds; 0 if it never ran or failed in a round.
  double best(size_t i) const { return i < entries_.size() && !entries_[i].failed ? entries_[i].best : 0.0; }

 private:
  struct Entry {
    Decode decode;
    double best;
    bool failed;
  };
  std::vector<Entry> entries_;
};

}  // namespace hfbench
