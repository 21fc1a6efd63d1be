// patches.h - cutting a DEM into the patches every codec in a benchmark is measured on.
//
// Patches are P x P samples stepping by P - 1, so neighbours share one row / column (like the
// archive's tiles); the last patches at the right and bottom edges are smaller (at least 2
// samples wide unless the raster itself is 1 wide). Every patch is copied into one contiguous
// buffer (patch i at rects[i].offset, stride rects[i].width) so that all codecs read and write
// the same memory layout; shared rows / columns are counted once per patch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "codec/hfpac.h"

namespace hfbench {

struct PatchRect {
  int x0 = 0, y0 = 0;         // position in the DEM
  int width = 0, height = 0;
  size_t offset = 0;          // first sample in PatchSet::packed
  size_t points() const { return static_cast<size_t>(width) * static_cast<size_t>(height); }
};

struct PatchSet {
  int side = 0;                   // P
  hfpac::SampleType type = hfpac::SampleType::UInt16;
  std::vector<PatchRect> rects;   // row-major order of patches
  std::vector<uint16_t> packed;   // all patches, back to back
  size_t points() const { return packed.size(); }
  size_t maxPatchPoints() const;
};

// Patch start positions along one axis of `size` samples: 0, P-1, 2(P-1), ... such that the
// patches [start, start + P) cover 0..size-1. `side` >= 2.
std::vector<int> patchStarts(int size, int side);

// Cuts a width x height row-major raster (stride = width) into patches of side `side` >= 2.
PatchSet cutPatches(const uint16_t* samples, int width, int height, int side,
                    hfpac::SampleType type);

// Where a decoded buffer (same layout as packed) first differs from the original.
struct Mismatch {
  bool any = false;
  size_t patch = 0;            // index into rects
  int patchX0 = 0, patchY0 = 0, patchWidth = 0, patchHeight = 0;  // that patch in the DEM
  int x = 0, y = 0;            // position inside that patch
  long expected = 0, got = 0;  // sample values (signed for Int16)
  size_t patches = 0;          // number of patches with at least one wrong sample
};

// Sample value as a number: signed for Int16, unsigned for UInt16.
inline long sampleValue(uint16_t bits, hfpac::SampleType type) {
  return type == hfpac::SampleType::Int16 ? static_cast<long>(static_cast<int16_t>(bits))
                                          : static_cast<long>(bits);
}

// Compares every sample of `decoded` with set.packed. True when identical.
bool comparePatches(const PatchSet& set, const uint16_t* decoded, Mismatch& mismatch);

// Largest |decoded - original| of one patch, in stored units.
long maxAbsError(const PatchSet& set, size_t patch, const uint16_t* decoded);

}  // namespace hfbench
