// stream_index.h - validation of a whole stream plus the per-area tables a parallel decoder
// needs (internal; used by the GPU decoder's host side, src/gpu/). It runs exactly the checks of
// hfpac::decode() / PatchView::open() (docs/format.md section 6, the same code in decoder.cpp),
// so a stream the CPU decoder rejects is rejected here with the same status.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "codec/layout.h"

namespace hfpac::detail {

// One 16 x 16 area, in area order k = q * Ax + p. Bit offsets are relative to the start of the
// part they index (section D, the mask bitmaps part, the high-parts part). In a 2DRBUC stream
// only maskBit and maskCode are set (the residuals are indexed per block: StreamIndex::blockBits).
struct AreaIndex {
  uint64_t lowBit = 0;     // first layer-3 field of the area, in section D
  uint64_t maskBit = 0;    // first bitmap bit (mask code 2 only), in the bitmaps part
  uint32_t first = 0;      // index of the area's first prominent entry
  uint16_t count = 0;      // prominent entries of the area (<= 256)
  uint8_t bits = 0;        // b of the area
  uint8_t maskCode = 0;    // kMaskNone / kMaskAll / kMaskBitmap
};

// Where everything is, as byte offsets from the start of the stream (all multiples of 4).
struct StreamIndex {
  Header h;
  Geometry g;
  uint16_t maskValue = 0;         // unsigned domain (masked streams)
  uint64_t prominent = 0;         // entries in the layer-2 list
  uint64_t sectionA = 0;          // layer-1 control points
  uint64_t maskBitmaps = 0;       // mask bitmaps part (masked streams)
  uint64_t positions = 0;         // prominent position bytes
  uint64_t highs = 0;             // prominent high parts (bit-packed)
  uint64_t sectionD = 0;          // layer-3 low fields (or the samples of a stored stream)
  uint64_t streamBytes = 0;       // 32 + A + B + D
  std::vector<AreaIndex> areas;   // g.areas entries (empty for flat and stored streams)
  // 2DRBUC streams only (empty otherwise): the first bit of every 32 x 32 block in section D,
  // in block order k = q * Bx + p (the block index of section B, validated: blocks back to back,
  // each one inside section D). A 16 x 16 area (ax, ay) lies inside block (ax / 2, ay / 2).
  std::vector<uint64_t> blockBits;
};

// Validates `data` like hfpac::decode() does and fills `out`. On a non-Ok status `out` is
// unspecified. Never reads outside [data, data + size).
Status indexStream(const uint8_t* data, size_t size, StreamIndex& out);

}  // namespace hfpac::detail
