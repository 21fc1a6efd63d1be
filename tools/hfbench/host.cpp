// host.cpp - host and build description (host.h).
#include "host.h"

#include <fstream>
#include <thread>

#ifdef HF_BENCH_GDAL
#include <gdal.h>
#endif
#include <sys/utsname.h>

#include "anchors.h"

namespace hfbench {

HostInfo hostInfo() {
  HostInfo info;
  info.cpu = "unknown";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.compare(0, 10, "model name") != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const size_t start = line.find_first_not_of(" \t", colon + 1);
    if (start != std::string::npos) info.cpu = line.substr(start);
    break;
  }
  info.threads = std::thread::hardware_concurrency();
  struct utsname u;
  if (uname(&u) == 0) info.os = std::string(u.sysname) + " " + u.release + " " + u.machine;
#ifdef __VERSION__
  info.compiler = __VERSION__;
#endif
#if defined(NDEBUG) && defined(__OPTIMIZE__)
  info.optimized = true;
#endif
#ifdef HF_BENCH_GDAL
  info.gdal = GDALVersionInfo("RELEASE_NAME");
#else
  info.gdal = "none (HF_WITH_GDAL=OFF: .hfr input only)";
#endif
  info.zstd = zstdVersion();
  info.lerc = lercVersion();
  return info;
}

}  // namespace hfbench
