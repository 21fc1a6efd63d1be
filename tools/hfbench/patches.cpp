// patches.cpp - patch cutting and comparison (patches.h).
#include "patches.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace hfbench {

size_t PatchSet::maxPatchPoints() const {
  size_t m = 0;
  for (const PatchRect& r : rects) m = std::max(m, r.points());
  return m;
}

std::vector<int> patchStarts(int size, int side) {
  std::vector<int> starts;
  if (size <= 0 || side < 2) return starts;
  for (int start = 0;; start += side - 1) {
    starts.push_back(start);
    // This patch ends at start + side - 1; stop once it reaches the last sample.
    if (static_cast<long long>(start) + side - 1 >= size - 1) break;
  }
  return starts;
}

PatchSet cutPatches(const uint16_t* samples, int width, int height, int side,
                    hfpac::SampleType type) {
  PatchSet set;
  set.side = side;
  set.type = type;
  const std::vector<int> xs = patchStarts(width, side);
  const std::vector<int> ys = patchStarts(height, side);
  size_t total = 0;
  for (int y0 : ys) {
    for (int x0 : xs) {
      PatchRect r;
      r.x0 = x0;
      r.y0 = y0;
      r.width = std::min(side, width - x0);
      r.height = std::min(side, height - y0);
      r.offset = total;
      total += r.points();
      set.rects.push_back(r);
    }
  }
  set.packed.resize(total);
  for (const PatchRect& r : set.rects) {
    for (int y = 0; y < r.height; ++y) {
      const uint16_t* src = samples + static_cast<size_t>(r.y0 + y) * width + r.x0;
      std::memcpy(set.packed.data() + r.offset + static_cast<size_t>(y) * r.width, src,
                  static_cast<size_t>(r.width) * sizeof(uint16_t));
    }
  }
  return set;
}

bool comparePatches(const PatchSet& set, const uint16_t* decoded, Mismatch& mismatch) {
  mismatch = Mismatch();
  for (size_t i = 0; i < set.rects.size(); ++i) {
    const PatchRect& r = set.rects[i];
    const uint16_t* a = set.packed.data() + r.offset;
    const uint16_t* b = decoded + r.offset;
    if (std::memcmp(a, b, r.points() * sizeof(uint16_t)) == 0) continue;
    if (!mismatch.any) {
      size_t k = 0;
      while (a[k] == b[k]) ++k;
      mismatch.any = true;
      mismatch.patch = i;
      mismatch.patchX0 = r.x0;
      mismatch.patchY0 = r.y0;
      mismatch.patchWidth = r.width;
      mismatch.patchHeight = r.height;
      mismatch.x = static_cast<int>(k % r.width);
      mismatch.y = static_cast<int>(k / r.width);
      mismatch.expected = sampleValue(a[k], set.type);
      mismatch.got = sampleValue(b[k], set.type);
    }
    ++mismatch.patches;
  }
  return !mismatch.any;
}

long maxAbsError(const PatchSet& set, size_t patch, const uint16_t* decoded) {
  const PatchRect& r = set.rects[patch];
  const uint16_t* a = set.packed.data() + r.offset;
  const uint16_t* b = decoded + r.offset;
  long worst = 0;
  const size_t n = r.points();
  for (size_t k = 0; k < n; ++k)
    worst = std::max(worst, std::labs(sampleValue(a[k], set.type) - sampleValue(b[k], set.type)));
  return worst;
}

}  // namespace hfbench
