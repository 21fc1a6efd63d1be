// encode_cases.h - the patches and option sets of the GPU encoder's parity tests
// (encode_test.cpp on the device, encode_emu_test.cpp on the CPU emulator).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "test_util.h"

namespace hftest {

// Every shape and content the GPU encoder must reproduce byte for byte.
inline std::vector<Patch> encodeParityPatches(bool small = false) {
  using hfpac::SampleType;
  std::vector<Patch> v;
  auto add = [&](Patch p, const std::string& suffix) {
    p.name += "_" + suffix;
    v.push_back(std::move(p));
  };
  add(smooth(129, 129, SampleType::UInt16, 1), "129u");
  add(smooth(129, 129, SampleType::Int16, 2, 100, 900, 3), "129s_stride");
  add(rampBumps(65, 65, SampleType::UInt16, 4), "65u");
  add(noise(48, 40, SampleType::UInt16, 7), "48x40_stored");
  add(cliffs(65, 65, SampleType::UInt16), "65u");
  add(cliffs(40, 33, SampleType::Int16), "40x33s");
  add(constant(40, 40, 1234), "flat");
  add(constant(1, 1, 7, SampleType::Int16), "1x1");
  add(withHoles(129, 129, SampleType::UInt16, 11), "129u");
  add(withHoles(70, 50, SampleType::Int16, 12), "70x50s");
  add(seaMountain(129, 129, SampleType::Int16, 3), "129s");
  add(seaMountain(64, 80, SampleType::UInt16, 4), "64x80u");
  add(quadratic(33, 17, SampleType::UInt16), "33x17");
  add(negative(100, 50), "100x50");
  add(extremes(33, 33), "33");
  add(checkerboard(64, 64, 4), "64");
  add(rampBumps(1, 77, SampleType::UInt16, 5), "1x77");
  add(rampBumps(300, 1, SampleType::Int16, 6), "300x1");
  add(rampBumps(7, 300, SampleType::UInt16, 7), "7x300");
  add(smooth(130, 65, SampleType::UInt16, 8, 3000, 2000, 1), "130x65");
  add(boundedNoise(50, 50, SampleType::UInt16, 100, 103, 9), "fewvalues");
  {
    // Two values with exactly equal counts: the mode is the smaller one.
    Patch p = generate("tie", 32, 32, SampleType::UInt16, [](int x, int y) { return ((x + y) % 2) ? 900 : 300; });
    v.push_back(std::move(p));
  }
  {
    // Whole rows masked (the column pass of the fill), masked corners, a lone unmasked point row.
    Patch p = smooth(45, 38, SampleType::UInt16, 13, 5000, 400);
    p.name = "maskedRows_45x38";
    for (int y = 0; y < 38; ++y)
      for (int x = 0; x < 45; ++x)
        if (y < 6 || y == 20 || (y > 30 && x != 17) || (x < 3 && y < 12)) p.at(x, y) = 0xFFFF;
    v.push_back(std::move(p));
  }
  {
    // Everything masked but one point.
    Patch p = constant(20, 20, 0xFFFF);
    p.at(13, 4) = 77;
    p.name = "oneUnmasked_20";
    v.push_back(std::move(p));
  }
  {
    // Heavy values in many high bytes (the mode search's second level), the mode in the middle.
    Patch p = generate("manyBuckets", 64, 64, SampleType::UInt16, [](int x, int y) {
      const int k = (x * 7 + y * 3) % 10;
      return k < 2 ? 4096 * 3 + 5 : 256 * (k + 1) + (x % 2);
    });
    v.push_back(std::move(p));
  }
  if (!small) {
    add(smooth(257, 257, SampleType::UInt16, 21, 30000, 8000), "257");
    add(withHoles(257, 200, SampleType::UInt16, 22), "257x200");
  }
  return v;
}

struct OptionCase {
  std::string name;
  hfpac::EncodeOptions options;
};
inline void PrintTo(const OptionCase& c, std::ostream* os) { *os << c.name; }  // gtest names

// Segment sizes x bits; mask variants (none / nodata / both) for a few bits.
inline std::vector<OptionCase> encodeParityOptions(bool small = false) {
  std::vector<OptionCase> v;
  const int segments[] = {5, 9, 17, 33, 0};
  for (int segment : segments) {
    for (int bits = -1; bits <= hfpac::kMaxBits; ++bits) {
      if (small && !(bits == -1 || bits == 0 || bits == 3 || bits == 16)) continue;
      if (small && segment == 0 && bits != -1) continue;
      hfpac::EncodeOptions o = opts(segment, bits);
      v.push_back({optionsName(o), o});
      const bool maskVariants = bits == -1 || bits == 0 || bits == 4 || bits == 16;
      if (!maskVariants) continue;
      hfpac::EncodeOptions n = o;
      n.hasNodata = true;
      n.nodata = 0xFFFF;
      v.push_back({optionsName(n) + "_nodataFFFF", n});
      n.nodata = 0x8000;
      v.push_back({optionsName(n) + "_nodata8000", n});
      hfpac::EncodeOptions none = o;
      none.autoMask = false;
      v.push_back({optionsName(none) + "_noAutoMask", none});
      if (!small) {
        none.hasNodata = true;
        none.nodata = 0xFFFF;
        v.push_back({optionsName(none) + "_nodataOnly", none});
      }
    }
  }
  return v;
}

}  // namespace hftest
