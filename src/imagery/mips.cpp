// mips.cpp - the mip levels inside an imagery tile, and RGB PSNR.
#include <cmath>
#include <limits>

#include "imagery/imagery.h"

namespace himg {

void buildMipChain(const uint8_t* rgba, int size, int count, std::vector<std::vector<uint8_t>>& levels) {
  levels.assign(size_t(count > 0 ? count : 0), {});
  if (count <= 0) return;
  // Level 0: the tile, with the colour of uncovered texels zeroed (filtering then blends them
  // as transparent black, which the shader divides out: a premultiplied view of coverage).
  const size_t texels = size_t(size) * size_t(size);
  levels[0].assign(rgba, rgba + texels * 4);
  for (size_t i = 0; i < texels; ++i)
    if (levels[0][4 * i + 3] < 128) {
      levels[0][4 * i] = levels[0][4 * i + 1] = levels[0][4 * i + 2] = levels[0][4 * i + 3] = 0;
    } else {
      levels[0][4 * i + 3] = 255;
    }
  for (int l = 1; l < count; ++l) {
    const int src = size >> (l - 1), dst = size >> l;
    const std::vector<uint8_t>& a = levels[size_t(l - 1)];
    std::vector<uint8_t>& b = levels[size_t(l)];
    b.assign(size_t(dst) * size_t(dst) * 4, 0);
    for (int y = 0; y < dst; ++y)
      for (int x = 0; x < dst; ++x) {
        int sum[3] = {0, 0, 0}, covered = 0;
        for (int q = 0; q < 4; ++q) {
          const size_t s = (size_t(2 * y + (q >> 1)) * size_t(src) + size_t(2 * x + (q & 1))) * 4;
          if (a[s + 3] < 128) continue;
          ++covered;
          for (int k = 0; k < 3; ++k) sum[k] += a[s + size_t(k)];
        }
        uint8_t* o = &b[(size_t(y) * size_t(dst) + size_t(x)) * 4];
        if (covered >= 2) {
          for (int k = 0; k < 3; ++k) o[k] = uint8_t((sum[k] + covered / 2) / covered);
          o[3] = 255;
        }
      }
  }
}

double psnrRgb(const uint8_t* a, const uint8_t* b, size_t texels, bool maskAlpha) {
  double se = 0;
  size_t n = 0;
  for (size_t i = 0; i < texels; ++i) {
    if (maskAlpha && a[4 * i + 3] < 128) continue;
    for (int k = 0; k < 3; ++k) {
      const double d = double(a[4 * i + size_t(k)]) - double(b[4 * i + size_t(k)]);
      se += d * d;
    }
    ++n;
  }
  if (n == 0 || se == 0) return std::numeric_limits<double>::infinity();
  const double mse = se / (3.0 * double(n));
  return 10.0 * std::log10(255.0 * 255.0 / mse);
}

}  // namespace himg
