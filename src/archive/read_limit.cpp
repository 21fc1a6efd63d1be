// read_limit.cpp - ReadLimiter (read_limit.h).
#include "archive/read_limit.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace hfa {

namespace {
ReadLimiter::Clock steadyClock() {
  using C = std::chrono::steady_clock;
  const C::time_point origin = C::now();
  ReadLimiter::Clock c;
  c.now = [origin] { return std::chrono::duration<double>(C::now() - origin).count(); };
  c.sleepUntil = [origin](double t) {
    std::this_thread::sleep_until(origin + std::chrono::duration_cast<C::duration>(std::chrono::duration<double>(t)));
  };
  return c;
}
}  // namespace

ReadLimiter::ReadLimiter(double bytesPerSecond, Clock clock)
    : rate_(bytesPerSecond > 0 ? bytesPerSecond : 1), clock_(clock.now ? std::move(clock) : steadyClock()) {}

void ReadLimiter::acquire(uint64_t bytes) {
  double start, end;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    start = clock_.now();
    end = std::max(start, busyUntil_) + double(bytes) / rate_;
    busyUntil_ = end;
    bytes_ += bytes;
    waited_ += end - start;
  }
  clock_.sleepUntil(end);
}

uint64_t ReadLimiter::bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return bytes_;
}

double ReadLimiter::waitedSeconds() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return waited_;
}

}  // namespace hfa
