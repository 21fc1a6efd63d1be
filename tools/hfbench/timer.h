// timer.h - wall-clock timing for benchmarks (std::chrono::steady_clock).
#pragma once

#include <chrono>
#include <limits>

namespace hfbench {

class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  void restart() { start_ = std::chrono::steady_clock::now(); }
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

// Best (smallest) time of `repeat` runs of f(). f returns false to stop early (error).
template <class F>
double bestOf(int repeat, F&& f) {
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < repeat; ++r) {
    Stopwatch watch;
    if (!f()) break;
    const double s = watch.seconds();
    if (s < best) best = s;
  }
  return best;
}

// points / seconds, 0 when the time is not usable.
inline double rate(double points, double seconds) {
  return seconds > 0 && seconds < std::numeric_limits<double>::infinity() ? points / seconds : 0.0;
}

}  // namespace hfbench
