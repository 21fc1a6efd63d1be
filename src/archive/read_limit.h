// read_limit.h - a bandwidth limit for archive reads, to model slow storage in benchmarks
// (hfbench flythrough --io-limit MB/s: a SATA disk, a network share; issue 13).
//
// The model is one channel of `bytesPerSecond`: every read is a transfer that starts when the
// channel is free (or now) and takes bytes / rate; acquire() blocks the calling thread until its
// transfer has ended. Concurrent readers therefore share the bandwidth (the total never exceeds
// it) and each waits for the transfers queued before its own, as on a real disk queue. Reads
// smaller than the channel's granularity are not special-cased: a 4 KiB tile at 100 MB/s waits
// 41 us.
//
// Thread-safe. The clock can be replaced (tests drive a fake one; production uses
// std::chrono::steady_clock and std::this_thread::sleep_until).
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>

namespace hfa {

class ReadLimiter {
 public:
  // Seconds on some monotonic clock, and a wait until such a time.
  struct Clock {
    std::function<double()> now;
    std::function<void(double)> sleepUntil;
  };
  // bytesPerSecond > 0 (finite). Without `clock`: steady_clock.
  explicit ReadLimiter(double bytesPerSecond, Clock clock = Clock());

  // Blocks until a transfer of `bytes` has passed through the channel.
  void acquire(uint64_t bytes);

  double bytesPerSecond() const { return rate_; }
  uint64_t bytes() const;          // transferred so far
  double waitedSeconds() const;    // summed over all callers (queueing + transfer)

 private:
  double rate_;
  Clock clock_;
  mutable std::mutex mutex_;
  double busyUntil_ = 0;  // when the channel is free again
  uint64_t bytes_ = 0;
  double waited_ = 0;
};

}  // namespace hfa
