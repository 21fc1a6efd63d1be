// layout.h - where everything lives in an HFPaC stream, and the exact integer arithmetic that
// turns control points into heights (internal; shared by the CPU encoder, the CPU decoder and
// the CUDA kernels, hence HFPAC_HD). docs/format.md is the normative description; the names
// here follow it.
#pragma once

#include <cstdint>

#include "codec/bitpack.h"
#include "codec/hfpac.h"

// HFPAC_HD (codec/bitpack.h): __host__ __device__ under nvcc.

namespace hfpac::detail {

// Header flag bits.
constexpr uint8_t kFlagSigned = 1u << 0;
constexpr uint8_t kFlagFlat = 1u << 1;
constexpr uint8_t kFlagPerAreaBits = 1u << 2;
constexpr uint8_t kFlagStored = 1u << 3;  // incompressible patch: 16-bit samples, no layers 1/2
constexpr uint8_t kFlagMasked = 1u << 4;  // section B starts with the masked-value part
constexpr uint8_t kFlagRbuc = 1u << 5;    // residuals coded with 2DRBUC (no layer-2 list)
constexpr uint8_t kKnownFlags =
    kFlagSigned | kFlagFlat | kFlagPerAreaBits | kFlagStored | kFlagMasked | kFlagRbuc;

// 2DRBUC: 32 x 32 blocks of 4 x 4 nodes; widths up to 17 bits (zigzag of +-65535).
constexpr int kBlockSide = 32;
constexpr int kNodeSide = 4;
constexpr int kMaxRbucWidth = 17;
constexpr int kRbucRootBits = 5;
constexpr int kMaxBlockOffsetBits = 32;

// Masked-area codes (2 bits per area).
constexpr uint32_t kMaskNone = 0, kMaskAll = 1, kMaskBitmap = 2;

// Field width limits (docs/format.md explains each bound).
constexpr int kMaxCornerBits = 16;
constexpr int kMaxOffsetBits = 20;
constexpr int kMaxHighBits = 18;
constexpr int kMaxCountBits = 9;
constexpr int kAreaBitsFieldBits = 5;  // width of one entry of the per-area b table
constexpr int kMinSegLog = 2, kMaxSegLog = 5;

// Fitted control points are clamped to this range, which bounds every offset field.
constexpr int32_t kMinControl = -65536;
constexpr int32_t kMaxControl = 131071;

struct Header {
  uint8_t version = kVersion;
  uint8_t flags = 0;
  uint8_t segLog = 0;       // s: segments are (2^s + 1)^2 samples
  uint8_t uniformBits = 0;  // b when the per-area flag is clear
  uint16_t width = 0, height = 0;
  uint16_t base = 0;  // minimum sample (unsigned domain), or the value of a flat patch
  uint8_t cornerBits = 0, edgeBits = 0, centreBits = 0, highBits = 0, countBits = 0;
  uint32_t layer1Bytes = 0, layer2Bytes = 0, layer3Bytes = 0;  // section sizes after the header

  HFPAC_HD bool isSigned() const { return flags & kFlagSigned; }
  HFPAC_HD bool isFlat() const { return flags & kFlagFlat; }
  HFPAC_HD bool perAreaBits() const { return flags & kFlagPerAreaBits; }
  HFPAC_HD bool isStored() const { return flags & kFlagStored; }
  HFPAC_HD bool isMasked() const { return flags & kFlagMasked; }
  HFPAC_HD bool isRbuc() const { return flags & kFlagRbuc; }
};

void writeHeader(const Header& h, uint8_t* out);  // kHeaderBytes bytes
// Parses and range-checks the fixed header and checks that the announced sections fit in
// `size` bytes. Does not look inside the sections.
Status parseHeader(const uint8_t* data, size_t size, Header& h);

// Sizes and offsets that follow from the header alone.
struct Geometry {
  int width = 0, height = 0;
  int segLog = 0, n = 0;           // n = m - 1 = 2^s
  int segX = 0, segY = 0;          // M x N segments
  int areasX = 0, areasY = 0;      // 16 x 16 areas
  uint64_t areas = 0;
  int blocksX = 0, blocksY = 0;    // 32 x 32 2DRBUC blocks
  uint64_t blocks = 0;
  // Section A (layer 1): bit offsets of the four groups of control points.
  uint64_t cornerBit = 0, hedgeBit = 0, vedgeBit = 0, centreBit = 0, layer1Bits = 0;
};

// s for a segment size m = 2^s + 1 (5, 9, 17, 33), or -1 for any other size.
inline int segLogForSize(int segment) {
  switch (segment) {
    case 5: return 2;
    case 9: return 3;
    case 17: return 4;
    case 33: return 5;
    default: return -1;
  }
}

HFPAC_HD inline int segmentCount(int samples, int n) {
  // Segments needed to cover `samples` samples; samples beyond the patch are clamp-extended.
  return samples <= 1 ? 1 : (samples - 1 + n - 1) / n;
}

HFPAC_HD inline Geometry makeGeometry(const Header& h) {
  Geometry g;
  g.width = h.width;
  g.height = h.height;
  g.areasX = (g.width + kAreaSide - 1) / kAreaSide;
  g.areasY = (g.height + kAreaSide - 1) / kAreaSide;
  g.areas = uint64_t(g.areasX) * uint64_t(g.areasY);
  g.blocksX = (g.width + kBlockSide - 1) / kBlockSide;
  g.blocksY = (g.height + kBlockSide - 1) / kBlockSide;
  g.blocks = uint64_t(g.blocksX) * uint64_t(g.blocksY);
  if (h.isFlat() || h.isStored()) return g;
  g.segLog = h.segLog;
  g.n = 1 << h.segLog;
  g.segX = segmentCount(g.width, g.n);
  g.segY = segmentCount(g.height, g.n);
  const uint64_t sx = uint64_t(g.segX), sy = uint64_t(g.segY);
  g.cornerBit = 0;
  g.hedgeBit = g.cornerBit + (sx + 1) * (sy + 1) * h.cornerBits;
  g.vedgeBit = g.hedgeBit + sx * (sy + 1) * h.edgeBits;
  g.centreBit = g.vedgeBit + (sx + 1) * sy * h.edgeBits;
  g.layer1Bits = g.centreBit + sx * sy * h.centreBits;
  return g;
}

HFPAC_HD inline int areaWidth(const Geometry& g, int ax) {
  const int w = g.width - ax * kAreaSide;
  return w < kAreaSide ? w : kAreaSide;
}
HFPAC_HD inline int areaHeight(const Geometry& g, int ay) {
  const int h = g.height - ay * kAreaSide;
  return h < kAreaSide ? h : kAreaSide;
}

// Points before area (ax, ay) in layer-3 order (areas in raster order, points in raster order
// inside each area).
inline uint64_t pointsBeforeArea(const Geometry& g, int ax, int ay) {
  const int ah = areaHeight(g, ay);
  return uint64_t(ay) * kAreaSide * uint64_t(g.width) + uint64_t(ax) * kAreaSide * uint64_t(ah);
}

HFPAC_HD inline int64_t floorDiv(int64_t a, int64_t b) {  // b > 0
  int64_t q = a / b;
  if ((a % b) != 0 && a < 0) --q;
  return q;
}

// The 3 x 3 control points of one segment, P[row][col]: row 0 = top edge (y = 0), col 0 = left.
struct SegmentControls {
  int32_t p[3][3];
};

// Quadratic Bernstein weights scaled by n^2 at sample i of a segment (0 <= i <= n).
HFPAC_HD inline void bezierWeights(int i, int n, int64_t w[3]) {
  w[0] = int64_t(n - i) * (n - i);
  w[1] = 2 * int64_t(i) * (n - i);
  w[2] = int64_t(i) * i;
}

// The layer-1 prediction at sample (i, j) of a segment: round(S / n^4) with
// S = sum_rc wy[r] wx[c] P[r][c], rounding half up, clamped to 0..65535. All integer: this exact
// expression is what makes CPU and GPU decoders bit-identical.
HFPAC_HD inline int32_t evalSegment(const SegmentControls& c, int i, int j, int segLog) {
  const int n = 1 << segLog;
  int64_t wx[3], wy[3];
  bezierWeights(i, n, wx);
  bezierWeights(j, n, wy);
  int64_t s = 0;
  for (int r = 0; r < 3; ++r) {
    const int64_t row = wx[0] * c.p[r][0] + wx[1] * c.p[r][1] + wx[2] * c.p[r][2];
    s += wy[r] * row;
  }
  const int shift = 4 * segLog;
  int64_t v = (s + (int64_t(1) << (shift - 1))) >> shift;  // arithmetic shift = floor
  return int32_t(v < 0 ? 0 : (v > 65535 ? 65535 : v));
}

// Reconstructions of the stored offsets (docs/format.md, "Layer 1").
HFPAC_HD inline int32_t edgeFromOffset(int32_t c0, int32_t c2, int32_t offset) {
  return int32_t(floorDiv(int64_t(c0) + c2, 2)) + offset;
}
HFPAC_HD inline int32_t centreBase(const SegmentControls& c) {
  const int64_t edges = int64_t(c.p[0][1]) + c.p[2][1] + c.p[1][0] + c.p[1][2];
  const int64_t corners = int64_t(c.p[0][0]) + c.p[0][2] + c.p[2][0] + c.p[2][2];
  return int32_t(floorDiv(2 * edges - corners, 4));
}

// Reads the 9 control points of segment (sx, sy) from section A.
inline void loadSegment(const Header& h, const Geometry& g, const BitReader& a, int sx, int sy,
                        SegmentControls& c) {
  const int cb = h.cornerBits, eb = h.edgeBits;
  const uint64_t cw = uint64_t(g.segX) + 1;
  auto corner = [&](int i, int j) {
    return int32_t(h.base) + int32_t(a.field(g.cornerBit + (uint64_t(j) * cw + i) * cb, cb));
  };
  c.p[0][0] = corner(sx, sy);
  c.p[0][2] = corner(sx + 1, sy);
  c.p[2][0] = corner(sx, sy + 1);
  c.p[2][2] = corner(sx + 1, sy + 1);
  auto hedge = [&](int i, int j) {
    return unzigzag(a.field(g.hedgeBit + (uint64_t(j) * g.segX + i) * eb, eb));
  };
  auto vedge = [&](int i, int j) {
    return unzigzag(a.field(g.vedgeBit + (uint64_t(j) * cw + i) * eb, eb));
  };
  c.p[0][1] = edgeFromOffset(c.p[0][0], c.p[0][2], hedge(sx, sy));
  c.p[2][1] = edgeFromOffset(c.p[2][0], c.p[2][2], hedge(sx, sy + 1));
  c.p[1][0] = edgeFromOffset(c.p[0][0], c.p[2][0], vedge(sx, sy));
  c.p[1][2] = edgeFromOffset(c.p[0][2], c.p[2][2], vedge(sx + 1, sy));
  const int zb = h.centreBits;
  c.p[1][1] = centreBase(c) +
              unzigzag(a.field(g.centreBit + (uint64_t(sy) * g.segX + sx) * zb, zb));
}

// Residual coding of one point with b bits (docs/format.md, "Layers 2 and 3"):
// q = r + half(b); low = q mod 2^b goes to layer 3; high = floor(q / 2^b) != 0 makes the point
// prominent, and zigzag(high) - 1 goes to layer 2.
HFPAC_HD inline int32_t halfStep(int b) { return b > 0 ? (1 << (b - 1)) : 0; }

// Section B: [mask part, if masked] | area table | positions | high parts.
// The mask part is: one word (u16 masked value, u16 0), 2-bit codes per area (whole words),
// then the bitmaps of areas with code kMaskBitmap (aw * ah bits each, whole words).
HFPAC_HD inline uint64_t maskCodesBytes(const Geometry& g) { return sectionBytes(g.areas * 2); }
HFPAC_HD inline uint64_t maskPartBytes(const Geometry& g, uint64_t bitmapBits) {
  return 4 + maskCodesBytes(g) + sectionBytes(bitmapBits);
}

// Offsets inside the area table (relative to the table's start).
struct Layer2Layout {
  uint64_t bitsTableBit = 0;  // per-area b table (only with the per-area flag)
  uint64_t countsBit = 0;
  uint64_t tableBytes = 0;    // bytes of the b table + counts part
};
HFPAC_HD inline Layer2Layout makeLayer2Layout(const Header& h, const Geometry& g) {
  Layer2Layout l;
  const uint64_t tableBits = h.perAreaBits() ? g.areas * kAreaBitsFieldBits : 0;
  l.countsBit = tableBits;
  l.tableBytes = sectionBytes(tableBits + g.areas * h.countBits);
  return l;
}
// Bytes of section B after the mask part.
inline uint64_t layer2Bytes(const Layer2Layout& l, const Header& h, uint64_t prominent) {
  return l.tableBytes + sectionBytes(prominent * 8) + sectionBytes(prominent * h.highBits);
}

// 2DRBUC block (p, q): its size and node grid.
struct RbucBlock {
  int x0 = 0, y0 = 0, width = 0, height = 0, nodesX = 0, nodesY = 0;
};
inline RbucBlock rbucBlock(const Geometry& g, int p, int q) {
  RbucBlock b;
  b.x0 = p * kBlockSide;
  b.y0 = q * kBlockSide;
  b.width = g.width - b.x0 < kBlockSide ? g.width - b.x0 : kBlockSide;
  b.height = g.height - b.y0 < kBlockSide ? g.height - b.y0 : kBlockSide;
  b.nodesX = (b.width + kNodeSide - 1) / kNodeSide;
  b.nodesY = (b.height + kNodeSide - 1) / kNodeSide;
  return b;
}
inline int nodeSpan(int extent, int node) {  // samples of node `node` along an axis
  const int rest = extent - node * kNodeSide;
  return rest < kNodeSide ? rest : kNodeSide;
}
// The block index part of section B (after the mask part): a word holding the offset width,
// then one offset per block.
inline uint64_t rbucIndexBytes(const Geometry& g, int offsetBits) {
  return 4 + sectionBytes(g.blocks * uint64_t(offsetBits));
}

}  // namespace hfpac::detail
