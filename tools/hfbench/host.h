// host.h - what machine and build a benchmark ran on (for the report's "host" object).
#pragma once

#include <string>

namespace hfbench {

struct HostInfo {
  std::string cpu;          // /proc/cpuinfo "model name" (or "unknown")
  unsigned threads = 0;     // std::thread::hardware_concurrency()
  std::string os;           // uname: sysname release machine
  std::string compiler;     // __VERSION__
  bool optimized = false;   // built with optimisation (NDEBUG and __OPTIMIZE__)
  std::string gdal, zstd, lerc;
};

HostInfo hostInfo();

}  // namespace hfbench
