// relief.cpp - hypsometric tint + hill shade (relief.h).
#include "relief.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <thread>

namespace hfterrain {

namespace {

struct Stop {
  double at;  // fraction of the highest land sample
  double r, g, b;
};
// A topographic map's ramp: lowland green to snow.
constexpr Stop kRamp[] = {{0.00, 70, 120, 60},   {0.08, 95, 140, 70},   {0.25, 170, 170, 100},
                          {0.45, 150, 120, 85},  {0.65, 125, 115, 110}, {0.82, 175, 170, 165},
                          {0.92, 240, 240, 245}, {1.00, 255, 255, 255}};
constexpr double kSea[3] = {28, 64, 110};

void tint(double f, double c[3]) {
  f = std::clamp(f, 0.0, 1.0);
  size_t i = 1;
  while (i + 1 < std::size(kRamp) && kRamp[i].at < f) ++i;
  const Stop& a = kRamp[i - 1];
  const Stop& b = kRamp[i];
  const double t = b.at > a.at ? std::clamp((f - a.at) / (b.at - a.at), 0.0, 1.0) : 0.0;
  c[0] = a.r + (b.r - a.r) * t;
  c[1] = a.g + (b.g - a.g) * t;
  c[2] = a.b + (b.b - a.b) * t;
}

}  // namespace

void shadedRelief(const std::vector<uint16_t>& heights, int n, double cellMetres, std::vector<uint8_t>& rgb) {
  rgb.assign(size_t(n) * size_t(n) * 3, 0);
  if (n <= 0) return;
  const uint16_t top = std::max<uint16_t>(1, *std::max_element(heights.begin(), heights.end()));
  // Sun from the north-west (azimuth 315 degrees), 45 degrees above the horizon; x east, y south.
  const double elev = 45.0 * M_PI / 180.0, az = 315.0 * M_PI / 180.0;
  const double sun[3] = {std::sin(az) * std::cos(elev), -std::cos(az) * std::cos(elev), std::sin(elev)};
  const auto at = [&](int x, int y) {
    return double(heights[size_t(std::clamp(y, 0, n - 1)) * size_t(n) + size_t(std::clamp(x, 0, n - 1))]);
  };
  const auto rows = [&](int y0, int y1) {
    for (int y = y0; y < y1; ++y)
      for (int x = 0; x < n; ++x) {
        const double hgt = at(x, y);
        double c[3];
        if (hgt <= 0) {
          std::copy(kSea, kSea + 3, c);
        } else {
          tint(hgt / top, c);
          // Central differences; normal (-dz/dx, -dz/dy, 1) in metres.
          const double dx = (at(x + 1, y) - at(x - 1, y)) / (2 * cellMetres);
          const double dy = (at(x, y + 1) - at(x, y - 1)) / (2 * cellMetres);
          const double len = std::sqrt(dx * dx + dy * dy + 1);
          const double lambert = std::max(0.0, (-dx * sun[0] - dy * sun[1] + sun[2]) / len);
          const double light = 0.35 + 0.85 * lambert;
          for (double& v : c) v *= light;
        }
        uint8_t* out = &rgb[(size_t(y) * size_t(n) + size_t(x)) * 3];
        for (int b = 0; b < 3; ++b) out[b] = uint8_t(std::clamp(std::lround(c[b]), 0L, 255L));
      }
  };
  const int threads = int(std::clamp<unsigned>(std::thread::hardware_concurrency(), 1u, 64u));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(rows, int(int64_t(n) * t / threads), int(int64_t(n) * (t + 1) / threads));
  for (std::thread& t : pool) t.join();
}

bool writePpm(const std::string& path, const std::vector<uint8_t>& rgb, int width, int height, std::string& why) {
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) {
    why = "cannot create " + tmp + ": " + std::strerror(errno);
    return false;
  }
  bool ok = std::fprintf(f, "P6\n%d %d\n255\n", width, height) > 0 &&
            std::fwrite(rgb.data(), 1, rgb.size(), f) == rgb.size();
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) {
    why = "writing " + tmp + " failed: " + std::strerror(errno);
    std::remove(tmp.c_str());
    return false;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    why = "cannot rename " + tmp + " to " + path + ": " + std::strerror(errno);
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

}  // namespace hfterrain
