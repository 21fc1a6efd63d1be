// desc_build.h - a tile's decode descriptors built from its stream (internal; __host__
// __device__). Why: the descriptors are about 25% of a tile's compressed size (a 32-byte
// AreaDesc per 16 x 16 area), and they follow from the stream alone; built on the device, the
// bytes that cross PCIe are the payload plus a 48-byte TileRecord per tile (issue 13).
//
// cuda/descriptors.cu runs these steps with one thread block per tile and block-wide scans;
// buildTileDescriptors() at the end runs the same steps sequentially (the CPU emulation of the
// whole GPU decode in tests/gpu/decode_plan_test.cpp, which runs in CI). Both must give exactly
// the descriptors DecodePlan::build computes on the host from codec/stream_index.h, field by
// field (the tests compare them).
//
// Nothing here validates: a record is made only for a stream the host has validated with the
// CPU decoder's checks (DecodePlan::build, makeResidentEntry), so every offset read below lies
// inside the stream.
//
// Steps per tile: (1) the header -> TileLayout; (2) masked streams: per area the mask code and
// the bitmap bits, an exclusive scan gives each area's first bitmap bit, the total places the
// area table (finishMask); (3) layered streams: per area b and the prominent count, scans give
// the first layer-3 bit and the first prominent entry, the total places positions and highs
// (finishTable); (4) the AreaDescs.
#pragma once

#include <cstdint>

#include "codec/bitpack.h"
#include "codec/layout.h"
#include "gpu/decode_desc.h"

namespace hfgpu::detail {

// Field of `bits` bits at bit offset `bit` of the stream `s` (little-endian words; the host is
// little-endian, as is every CUDA device). The second word is read only when the field spans it.
HFPAC_HD inline uint32_t streamField(const uint32_t* s, uint64_t bit, int bits) {
  if (bits == 0) return 0;
  const uint64_t w = bit >> 5;
  const int shift = int(bit & 31);
  uint64_t v = s[w];
  if (shift + bits > 32) v |= uint64_t(s[w + 1]) << 32;
  return uint32_t(v >> shift) & hfpac::detail::lowMask(bits);
}

struct TileLayout {
  hfpac::detail::Header h;
  hfpac::detail::Geometry g;
  hfpac::detail::Layer2Layout l2;
  uint8_t kind = kKindCoded;
  uint16_t maskValue = 0;     // unsigned domain (masked streams), else 0
  uint64_t sectionB = 0;      // bytes from the stream start
  uint64_t sectionD = 0;
  uint64_t maskBitmaps = 0;   // masked streams: the first bitmap byte, else 0
  uint64_t tableStart = 0;    // the area table (layered) or block index (2DRBUC): finishMask
  uint32_t offsetBits = 0;    // 2DRBUC block offsets: finishMask
  uint64_t positions = 0;     // finishTable
  uint64_t highs = 0;
};

// (1) The header (as hfpac::detail::parseHeader reads it, without its checks).
HFPAC_HD inline TileLayout tileLayout(const uint32_t* s) {
  using namespace hfpac::detail;
  TileLayout t;
  Header& h = t.h;
  const uint32_t w1 = s[1], w2 = s[2], w3 = s[3], w4 = s[4];
  h.version = uint8_t(w1);
  h.flags = uint8_t(w1 >> 8);
  h.segLog = uint8_t(w1 >> 16);
  h.uniformBits = uint8_t(w1 >> 24);
  h.width = uint16_t(w2);
  h.height = uint16_t(w2 >> 16);
  h.base = uint16_t(w3);
  h.cornerBits = uint8_t(w3 >> 16);
  h.edgeBits = uint8_t(w3 >> 24);
  h.centreBits = uint8_t(w4);
  h.highBits = uint8_t(w4 >> 8);
  h.countBits = uint8_t(w4 >> 16);
  h.layer1Bytes = s[5];
  h.layer2Bytes = s[6];
  h.layer3Bytes = s[7];
  t.g = makeGeometry(h);
  t.kind = h.isFlat() ? kKindFlat : h.isStored() ? kKindStored : h.isRbuc() ? kKindRbuc : kKindCoded;
  t.sectionB = uint64_t(hfpac::kHeaderBytes) + h.layer1Bytes;
  t.sectionD = t.sectionB + h.layer2Bytes;
  t.tableStart = t.sectionB;
  if (t.kind == kKindCoded || t.kind == kKindRbuc) {
    t.l2 = makeLayer2Layout(h, t.g);
    if (h.isMasked()) {
      t.maskValue = uint16_t(s[t.sectionB / 4]);
      t.maskBitmaps = t.sectionB + 4 + maskCodesBytes(t.g);
    }
  }
  return t;
}

// (2) Area k's mask code (kMaskNone unless masked) and the bitmap bits it takes.
HFPAC_HD inline uint32_t areaMaskCode(const TileLayout& t, const uint32_t* s, uint64_t k) {
  if (!t.h.isMasked()) return hfpac::detail::kMaskNone;
  return streamField(s, (t.sectionB + 4) * 8 + k * 2, 2);
}
HFPAC_HD inline uint64_t areaPoints(const hfpac::detail::Geometry& g, uint64_t k) {
  const int ax = int(k % uint64_t(g.areasX)), ay = int(k / uint64_t(g.areasX));
  return uint64_t(hfpac::detail::areaWidth(g, ax)) * uint64_t(hfpac::detail::areaHeight(g, ay));
}
HFPAC_HD inline uint64_t areaBitmapBits(const TileLayout& t, uint32_t code, uint64_t k) {
  return code == hfpac::detail::kMaskBitmap ? areaPoints(t.g, k) : 0;
}
// After the scan of areaBitmapBits over all areas (`bitmapBits` = the total).
HFPAC_HD inline void finishMask(TileLayout& t, const uint32_t* s, uint64_t bitmapBits) {
  if (t.h.isMasked()) t.tableStart = t.sectionB + hfpac::detail::maskPartBytes(t.g, bitmapBits);
  if (t.kind == kKindRbuc) t.offsetBits = s[t.tableStart / 4];
}

// (3) Layered streams: area k's b and prominent count.
HFPAC_HD inline int areaB(const TileLayout& t, const uint32_t* s, uint64_t k) {
  if (!t.h.perAreaBits()) return t.h.uniformBits;
  return int(streamField(s, t.tableStart * 8 + t.l2.bitsTableBit + k * hfpac::detail::kAreaBitsFieldBits,
                         hfpac::detail::kAreaBitsFieldBits));
}
HFPAC_HD inline uint32_t areaCount(const TileLayout& t, const uint32_t* s, uint64_t k) {
  return streamField(s, t.tableStart * 8 + t.l2.countsBit + k * t.h.countBits, t.h.countBits);
}
// After the scan of the counts (`prominent` = the total).
HFPAC_HD inline void finishTable(TileLayout& t, uint64_t prominent) {
  t.positions = t.tableStart + t.l2.tableBytes;
  t.highs = t.positions + hfpac::detail::sectionBytes(prominent * 8);
}

// The tile's PatchDesc for its record (as DecodePlan::build writes it).
HFPAC_HD inline PatchDesc patchDescriptor(const TileLayout& t, const TileRecord& r) {
  PatchDesc d{};
  d.streamWord = r.streamByte / 4;
  d.dstOffset = r.dstOffset;
  d.dstPitch = r.dstPitch;
  d.surface = r.surface;
  d.dstX = r.dstX;
  d.dstY = r.dstY;
  d.width = t.h.width;
  d.height = t.h.height;
  d.base = t.h.base;
  d.flip = t.h.isSigned() ? 0x8000u : 0u;
  d.maskOut = uint16_t(t.maskValue ^ d.flip);
  d.kind = t.kind;
  d.segLog = t.h.segLog;
  d.cornerBits = t.h.cornerBits;
  d.edgeBits = t.h.edgeBits;
  d.centreBits = t.h.centreBits;
  d.highBits = t.h.highBits;
  d.segX = uint16_t(t.g.segX);
  d.segY = uint16_t(t.g.segY);
  const uint64_t a0 = uint64_t(hfpac::kHeaderBytes) * 8;
  d.hedgeBit = uint32_t(a0 + t.g.hedgeBit);
  d.vedgeBit = uint32_t(a0 + t.g.vedgeBit);
  d.centreBit = uint32_t(a0 + t.g.centreBit);
  return d;
}

// Per-area values the scans produce (bit and entry offsets relative to their parts).
struct AreaScan {
  uint32_t maskCode = 0;
  uint64_t maskBit = 0;   // first bitmap bit of the area (code kMaskBitmap), in the bitmaps part
  int bits = 0;           // b (layered)
  uint32_t count = 0;     // prominent entries (layered)
  uint64_t lowBit = 0;    // first layer-3 bit, in section D (layered)
  uint64_t first = 0;     // first prominent entry (layered)
};

// (4) Area k's descriptor, for the tile at index `patch` of the launch.
HFPAC_HD inline AreaDesc areaDescriptor(const TileLayout& t, const uint32_t* s, uint32_t patch, uint64_t k,
                                        const AreaScan& a) {
  AreaDesc d{};
  d.patch = patch;
  d.ax = uint16_t(k % uint64_t(t.g.areasX));
  d.ay = uint16_t(k / uint64_t(t.g.areasX));
  if (t.kind == kKindFlat || t.kind == kKindStored) {
    d.lowBit = uint32_t(t.sectionD * 8);
    return d;
  }
  d.maskBit = uint32_t(t.maskBitmaps * 8 + (a.maskCode == hfpac::detail::kMaskBitmap ? a.maskBit : 0));
  d.maskCode = uint8_t(a.maskCode);
  if (t.kind == kKindRbuc) {
    // The residuals through the block index: the start of the 32 x 32 block holding the area.
    const uint64_t block = uint64_t(d.ay / 2) * uint64_t(t.g.blocksX) + uint64_t(d.ax / 2);
    d.lowBit = uint32_t(t.sectionD * 8 +
                        streamField(s, (t.tableStart + 4) * 8 + block * t.offsetBits, int(t.offsetBits)));
    return d;
  }
  d.lowBit = uint32_t(t.sectionD * 8 + a.lowBit);
  d.highBit = uint32_t(t.highs * 8 + a.first * t.h.highBits);
  d.posByte = uint32_t(t.positions + a.first);
  d.count = uint16_t(a.count);
  d.bits = uint8_t(a.bits);
  return d;
}

// Area k's values before its scans: everything but the offsets.
HFPAC_HD inline AreaScan areaValues(const TileLayout& t, const uint32_t* s, uint64_t k) {
  AreaScan a;
  a.maskCode = areaMaskCode(t, s, k);
  if (t.kind == kKindCoded) {
    a.bits = areaB(t, s, k);
    a.count = areaCount(t, s, k);
  }
  return a;
}
HFPAC_HD inline uint64_t areaLowBits(const TileLayout& t, uint64_t k, const AreaScan& a) {
  return areaPoints(t.g, k) * uint64_t(a.bits);
}

// All of the above for one tile, sequentially (the reference for the kernel, which does the
// same passes with block-wide reductions and scans): (2) the bitmap total, (3) the prominent
// total, then every area with running offsets. Writes *patch, and r.areas AreaDescs at `areas`
// (the tile's first one); `index` is the tile's place in the launch.
inline void buildTileDescriptors(const uint32_t* words, const TileRecord& r, uint32_t index, PatchDesc* patch,
                                 AreaDesc* areas) {
  if (r.areas == 0) {
    *patch = PatchDesc{};
    return;
  }
  const uint32_t* s = words + r.streamByte / 4;
  TileLayout t = tileLayout(s);
  *patch = patchDescriptor(t, r);
  const uint64_t n = t.g.areas;
  uint64_t bitmapBits = 0;
  for (uint64_t k = 0; k < n; ++k) bitmapBits += areaBitmapBits(t, areaMaskCode(t, s, k), k);
  finishMask(t, s, bitmapBits);
  uint64_t prominent = 0;
  if (t.kind == kKindCoded)
    for (uint64_t k = 0; k < n; ++k) prominent += areaCount(t, s, k);
  finishTable(t, prominent);
  uint64_t maskBit = 0, lowBit = 0, first = 0;
  for (uint64_t k = 0; k < n; ++k) {
    AreaScan a = areaValues(t, s, k);
    a.maskBit = maskBit;
    a.lowBit = lowBit;
    a.first = first;
    maskBit += areaBitmapBits(t, a.maskCode, k);
    lowBit += areaLowBits(t, k, a);
    first += a.count;
    areas[k] = areaDescriptor(t, s, index, k, a);
  }
}

}  // namespace hfgpu::detail
