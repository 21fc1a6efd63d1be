// decoder.cpp - the reference HFPaC decoder: validation, whole-patch decode, random access.
//
// Validation happens once, before any sample is written, and costs O(areas + prominent points):
// after it every field access is known to be inside its section, so the decoding loops need no
// bounds checks. Decoding never allocates in proportion to what the header claims; PatchView's
// per-area tables exist only when the stream holds per-area tables of at least that many bits.
#include <algorithm>
#include <array>
#include <cassert>
#include <utility>
#include <cstring>

#include "codec/layout.h"
#include "codec/simd_rows.h"
#include "codec/stream_index.h"

namespace hfpac {

using namespace detail;

// Friend of PatchView: gives the decoder access to the view's index vectors.
struct ViewAccess {
  static std::vector<uint32_t>& low(PatchView& v) { return v.areaLow_; }
  static std::vector<uint32_t>& first(PatchView& v) { return v.areaFirst_; }
  static std::vector<uint8_t>& bits(PatchView& v) { return v.areaBits_; }
  static std::vector<uint32_t>& mask(PatchView& v) { return v.areaMask_; }
  static uint32_t& maskBytes(PatchView& v) { return v.maskBytes_; }
  static void set(PatchView& v, const uint8_t* d, size_t s, const PatchInfo& i) {
    v.data_ = d;
    v.size_ = s;
    v.info_ = i;
  }
};

namespace {

// Everything a decoder needs to find a field, after validation.
struct Stream {
  Header h;
  Geometry g;
  Layer2Layout l2;
  BitReader a, table, highs, lows;
  const uint8_t* positions = nullptr;
  uint64_t prominent = 0;
  uint16_t flip = 0;
  BitReader maskCodes, maskBitmaps;  // masked streams only
  const uint8_t* lowsBase = nullptr;  // section D
  uint64_t lowsBytes = 0;
  uint16_t maskValue = 0;
  uint64_t maskBytes = 0;
  BitReader blockOffsets;  // 2DRBUC streams only: bit offset of each block in section D
  int offsetBits = 0;

  uint32_t maskCode(uint64_t k) const {
    return h.isMasked() ? maskCodes.field(k * 2, 2) : kMaskNone;
  }

  int areaBits(uint64_t k) const {
    return h.perAreaBits() ? int(table.field(l2.bitsTableBit + k * kAreaBitsFieldBits,
                                             kAreaBitsFieldBits))
                           : h.uniformBits;
  }
  uint32_t areaCount(uint64_t k) const {
    return table.field(l2.countsBit + k * h.countBits, h.countBits);
  }
  int32_t high(uint64_t entry) const {
    return unzigzag(highs.field(entry * h.highBits, h.highBits) + 1u);
  }
};

// Header fields, plus the masked value: the first word of section B, still O(1). The caller has
// parsed the header, so the sections fit in the stream.
PatchInfo infoFrom(const uint8_t* data, const Header& h) {
  PatchInfo i;
  if (h.isMasked() && h.layer2Bytes >= 4)
    i.maskValue = uint16_t(loadWordLE(data + kHeaderBytes + h.layer1Bytes) ^
                           (h.isSigned() ? 0x8000u : 0u));
  i.width = h.width;
  i.height = h.height;
  i.type = h.isSigned() ? SampleType::Int16 : SampleType::UInt16;
  i.flat = h.isFlat();
  i.stored = h.isStored();
  i.perAreaBits = h.perAreaBits();
  i.masked = h.isMasked();
  i.rbuc = h.isRbuc();
  i.segment = (h.isFlat() || h.isStored()) ? 0 : (1 << h.segLog) + 1;
  i.uniformBits = h.uniformBits;
  i.layer1Bytes = uint32_t(kHeaderBytes) + h.layer1Bytes;
  i.layer2Bytes = h.layer2Bytes;
  i.layer3Bytes = h.layer3Bytes;
  i.streamBytes = i.layer1Bytes + i.layer2Bytes + i.layer3Bytes;
  return i;
}

// Bits of the 2DRBUC block starting at bit `start` of section D, checking every width it reads
// and that the block ends inside the section.
Status rbucBlockBits(const Stream& s, const RbucBlock& b, uint64_t start, uint64_t sectionBits,
                     uint64_t& bits) {
  if (start + kRbucRootBits > sectionBits) return Status::InvalidBlock;
  const int root = int(s.lows.field(start, kRbucRootBits));
  if (root > kMaxRbucWidth) return Status::InvalidBlock;
  const int widthBits = bitLength(uint32_t(root));
  const uint64_t nodes = uint64_t(b.nodesX) * uint64_t(b.nodesY);
  uint64_t total = kRbucRootBits + nodes * uint64_t(widthBits);
  if (start + total > sectionBits) return Status::InvalidBlock;
  for (int j = 0; j < b.nodesY; ++j)
    for (int i = 0; i < b.nodesX; ++i) {
      const uint64_t n = uint64_t(j) * uint64_t(b.nodesX) + uint64_t(i);
      const int w = int(s.lows.field(start + kRbucRootBits + n * uint64_t(widthBits), widthBits));
      if (w > root) return Status::InvalidBlock;
      total += uint64_t(w) * uint64_t(nodeSpan(b.width, i) * nodeSpan(b.height, j));
    }
  if (start + total > sectionBits) return Status::InvalidBlock;
  bits = total;
  return Status::Ok;
}

// Section B after the mask part of a 2DRBUC stream: the block index. Blocks must follow each
// other exactly, so the index is canonical and every block lies inside section D.
Status openRbuc(Stream& s, const uint8_t* indexStart, const uint8_t* sectionD) {
  const Header& h = s.h;
  const Geometry& g = s.g;
  if (s.maskBytes + 4 > h.layer2Bytes) return Status::SizeMismatch;
  const uint32_t offsetBits = loadWordLE(indexStart);
  if (offsetBits > uint32_t(kMaxBlockOffsetBits)) return Status::InvalidBlock;
  if (h.layer2Bytes != s.maskBytes + rbucIndexBytes(g, int(offsetBits))) return Status::SizeMismatch;
  s.offsetBits = int(offsetBits);
  s.blockOffsets = BitReader(indexStart + 4, sectionBytes(g.blocks * offsetBits) / 4);
  s.lows = BitReader(sectionD, h.layer3Bytes / 4);
  s.lowsBase = sectionD;
  s.lowsBytes = h.layer3Bytes;
  const uint64_t sectionBits = uint64_t(h.layer3Bytes) * 8;
  uint64_t expected = 0;
  for (int q = 0; q < g.blocksY; ++q)
    for (int p = 0; p < g.blocksX; ++p) {
      const uint64_t k = uint64_t(q) * uint64_t(g.blocksX) + uint64_t(p);
      if (s.blockOffsets.field(k * offsetBits, int(offsetBits)) != expected)
        return Status::InvalidBlock;
      uint64_t bits = 0;
      if (Status st = rbucBlockBits(s, rbucBlock(g, p, q), expected, sectionBits, bits);
          st != Status::Ok)
        return st;
      expected += bits;
    }
  if (sectionBytes(expected) != h.layer3Bytes) return Status::SizeMismatch;
  return Status::Ok;
}

// Adds the 2DRBUC residuals to the layer-1 prediction in dst (unsigned domain, before the mask
// and the flip). Validation has checked every width and that every block fits.
Status addRbucResiduals(const Stream& s, uint16_t* dst, size_t stride) {
  const Geometry& g = s.g;
  uint32_t outside = 0;
  for (int q = 0; q < g.blocksY; ++q)
    for (int p = 0; p < g.blocksX; ++p) {
      const RbucBlock b = rbucBlock(g, p, q);
      const uint64_t k = uint64_t(q) * uint64_t(g.blocksX) + uint64_t(p);
      uint64_t bit = s.blockOffsets.field(k * uint64_t(s.offsetBits), s.offsetBits);
      const int root = int(s.lows.field(bit, kRbucRootBits));
      const int widthBits = bitLength(uint32_t(root));
      const uint64_t widthsBit = bit + kRbucRootBits;
      bit = widthsBit + uint64_t(b.nodesX * b.nodesY) * uint64_t(widthBits);
      for (int j = 0; j < b.nodesY; ++j)
        for (int i = 0; i < b.nodesX; ++i) {
          const int w = int(s.lows.field(
              widthsBit + uint64_t(j * b.nodesX + i) * uint64_t(widthBits), widthBits));
          const int x0 = b.x0 + i * kNodeSide, y0 = b.y0 + j * kNodeSide;
          const int nw = nodeSpan(b.width, i), nh = nodeSpan(b.height, j);
          for (int y = y0; y < y0 + nh; ++y) {
            uint16_t* row = dst + size_t(y) * stride;
            for (int x = x0; x < x0 + nw; ++x, bit += uint64_t(w)) {
              const int32_t v = int32_t(row[x]) + unzigzag(s.lows.field(bit, w));
              outside |= uint32_t(v) >> 16;
              row[x] = uint16_t(v);
            }
          }
        }
    }
  return outside ? Status::OutOfRange : Status::Ok;
}

// Validates the whole stream. If `view` is non-null, also builds its per-area index; if `areas`
// is non-null, fills it with one AreaIndex per area (the GPU decoder's tables, stream_index.h).
Status openStream(const uint8_t* data, size_t size, Stream& s, PatchView* view,
                  std::vector<AreaIndex>* areas = nullptr) {
  if (Status st = parseHeader(data, size, s.h); st != Status::Ok) return st;
  const Header& h = s.h;
  s.g = makeGeometry(h);
  s.flip = h.isSigned() ? 0x8000u : 0u;
  if (h.isFlat() || h.isStored()) return Status::Ok;
  const Geometry& g = s.g;
  s.l2 = makeLayer2Layout(h, g);
  const uint8_t* sectionA = data + kHeaderBytes;
  const uint8_t* sectionB = sectionA + h.layer1Bytes;
  const uint8_t* sectionD = sectionB + h.layer2Bytes;
  s.a = BitReader(sectionA, h.layer1Bytes / 4);

  const uint8_t* tableStart = sectionB;
  if (areas) areas->assign(size_t(g.areas), AreaIndex{});
  if (h.isMasked()) {
    const uint64_t codesBytes = maskCodesBytes(g);
    if (4 + codesBytes > h.layer2Bytes) return Status::SizeMismatch;
    const uint32_t word = loadWordLE(sectionB);
    if ((word >> 16) != 0) return Status::InvalidMask;
    s.maskValue = uint16_t(word);
    s.maskCodes = BitReader(sectionB + 4, codesBytes / 4);
    std::vector<uint32_t>* maskIndex = nullptr;
    if (view) {
      maskIndex = &ViewAccess::mask(*view);
      maskIndex->assign(size_t(g.areas), 0);  // bounded: the codes alone take 2 bits per area
    }
    uint64_t bitmapBits = 0;
    for (int ay = 0; ay < g.areasY; ++ay)
      for (int ax = 0; ax < g.areasX; ++ax) {
        const uint64_t k = uint64_t(ay) * uint64_t(g.areasX) + uint64_t(ax);
        const uint32_t code = s.maskCode(k);
        if (code > kMaskBitmap) return Status::InvalidMask;
        if (areas) (*areas)[size_t(k)].maskCode = uint8_t(code);
        if (code == kMaskBitmap) {
          if (maskIndex) (*maskIndex)[size_t(k)] = uint32_t(bitmapBits);
          if (areas) (*areas)[size_t(k)].maskBit = bitmapBits;
          bitmapBits += uint64_t(areaWidth(g, ax) * areaHeight(g, ay));
        }
      }
    s.maskBytes = maskPartBytes(g, bitmapBits);
    if (s.maskBytes > h.layer2Bytes) return Status::SizeMismatch;
    s.maskBitmaps = BitReader(sectionB + 4 + codesBytes, sectionBytes(bitmapBits) / 4);
    tableStart = sectionB + s.maskBytes;
    if (view) ViewAccess::maskBytes(*view) = uint32_t(s.maskBytes);
  }
  if (h.isRbuc()) return openRbuc(s, tableStart, sectionD);
  if (s.maskBytes + s.l2.tableBytes > h.layer2Bytes) return Status::SizeMismatch;
  s.table = BitReader(tableStart, s.l2.tableBytes / 4);

  std::vector<uint32_t>* lowIndex = nullptr;
  std::vector<uint32_t>* firstIndex = nullptr;
  std::vector<uint8_t>* bitsIndex = nullptr;
  if (view) {
    // Sizes are bounded by the table bits present in the stream (checked above), so these
    // allocations are at most a small multiple of the stream size.
    if (h.perAreaBits()) {
      lowIndex = &ViewAccess::low(*view);
      bitsIndex = &ViewAccess::bits(*view);
      lowIndex->assign(size_t(g.areas), 0);
      bitsIndex->assign(size_t(g.areas), 0);
    }
    if (h.countBits > 0) {
      firstIndex = &ViewAccess::first(*view);
      firstIndex->assign(size_t(g.areas) + 1, 0);
    }
  }

  uint64_t prominent = 0, lowBits = 0;
  for (int ay = 0; ay < g.areasY; ++ay)
    for (int ax = 0; ax < g.areasX; ++ax) {
      const uint64_t k = uint64_t(ay) * uint64_t(g.areasX) + uint64_t(ax);
      const int b = s.areaBits(k);
      const uint32_t points = uint32_t(areaWidth(g, ax) * areaHeight(g, ay));
      const uint32_t count = s.areaCount(k);
      if (b > kMaxBits || count > points) return Status::InvalidAreaTable;
      if (lowIndex) {
        (*lowIndex)[size_t(k)] = uint32_t(lowBits);
        (*bitsIndex)[size_t(k)] = uint8_t(b);
      }
      if (firstIndex) (*firstIndex)[size_t(k)] = uint32_t(prominent);
      if (areas) {
        AreaIndex& a = (*areas)[size_t(k)];
        a.lowBit = lowBits;
        a.first = uint32_t(prominent);
        a.count = uint16_t(count);
        a.bits = uint8_t(b);
      }
      prominent += count;
      lowBits += uint64_t(points) * uint64_t(b);
    }
  if (firstIndex) (*firstIndex)[size_t(g.areas)] = uint32_t(prominent);
  if (h.layer2Bytes != s.maskBytes + layer2Bytes(s.l2, h, prominent)) return Status::SizeMismatch;
  if (h.layer3Bytes != sectionBytes(lowBits)) return Status::SizeMismatch;
  s.prominent = prominent;
  s.positions = tableStart + s.l2.tableBytes;
  s.highs = BitReader(s.positions + sectionBytes(prominent * 8),
                      sectionBytes(prominent * h.highBits) / 4);
  s.lows = BitReader(sectionD, h.layer3Bytes / 4);
  s.lowsBase = sectionD;
  s.lowsBytes = h.layer3Bytes;

  // Prominent positions: inside their area, strictly increasing (so each point has at most one
  // entry and a binary search finds it).
  uint64_t entry = 0;
  for (int ay = 0; ay < g.areasY; ++ay)
    for (int ax = 0; ax < g.areasX; ++ax) {
      const uint64_t k = uint64_t(ay) * uint64_t(g.areasX) + uint64_t(ax);
      const int aw = areaWidth(g, ax), ah = areaHeight(g, ay);
      const uint32_t count = s.areaCount(k);
      int previous = -1;
      for (uint32_t e = 0; e < count; ++e, ++entry) {
        const int pos = s.positions[entry];
        if (pos <= previous || (pos % kAreaSide) >= aw || (pos / kAreaSide) >= ah)
          return Status::InvalidProminent;
        previous = pos;
      }
    }
  return Status::Ok;
}

// Layer-1 prediction of the whole patch into dst (clamped, unsigned domain).
void predictPatch(const Stream& s, uint16_t* dst, size_t stride) {
  const Geometry& g = s.g;
  const int n = g.n, shift = 4 * g.segLog;
  const int64_t half = int64_t(1) << (shift - 1);
  int64_t wt[33][3];
  for (int t = 0; t <= n; ++t) bezierWeights(t, n, wt[t]);
  const bool avx2 = hasAvx2();
  // Corners and edge points are shared between neighbouring segments: decode each once per
  // segment row (the bottom row of one segment row is the top row of the next) instead of nine
  // fields per segment. Wide patches (hostile or huge) fall back to per-segment loads.
  constexpr int kRowCache = 1024;
  const bool cached = g.segX <= kRowCache;
  int32_t rowsA[2][kRowCache + 1], edgesA[2][kRowCache];
  int32_t* cornersTop = rowsA[0];
  int32_t* cornersBottom = rowsA[1];
  int32_t* hedgesTop = edgesA[0];
  int32_t* hedgesBottom = edgesA[1];
  const Header& h = s.h;
  const uint64_t cornerStride = uint64_t(g.segX) + 1;
  auto loadRow = [&](int j, int32_t* corners, int32_t* hedges) {
    for (int i = 0; i <= g.segX; ++i)
      corners[i] = int32_t(h.base) + int32_t(s.a.field(
                                         g.cornerBit + (uint64_t(j) * cornerStride + uint64_t(i)) *
                                                           h.cornerBits,
                                         h.cornerBits));
    for (int i = 0; i < g.segX; ++i)
      hedges[i] = edgeFromOffset(
          corners[i], corners[i + 1],
          unzigzag(s.a.field(g.hedgeBit + (uint64_t(j) * uint64_t(g.segX) + uint64_t(i)) *
                                              h.edgeBits,
                             h.edgeBits)));
  };
  if (cached) loadRow(0, cornersTop, hedgesTop);
  for (int sy = 0; sy < g.segY; ++sy) {
    const int y0 = sy * n;
    const int y1 = std::min(sy == g.segY - 1 ? g.height : y0 + n, g.height);
    if (cached) loadRow(sy + 1, cornersBottom, hedgesBottom);
    int32_t leftEdge = 0;
    for (int sx = 0; sx < g.segX; ++sx) {
      SegmentControls c;
      if (cached) {
        auto vedge = [&](int i) {
          return edgeFromOffset(
              cornersTop[i], cornersBottom[i],
              unzigzag(s.a.field(g.vedgeBit + (uint64_t(sy) * cornerStride + uint64_t(i)) *
                                                  h.edgeBits,
                                 h.edgeBits)));
        };
        if (sx == 0) leftEdge = vedge(0);
        c.p[0][0] = cornersTop[sx];
        c.p[0][1] = hedgesTop[sx];
        c.p[0][2] = cornersTop[sx + 1];
        c.p[1][0] = leftEdge;
        c.p[1][2] = vedge(sx + 1);
        c.p[2][0] = cornersBottom[sx];
        c.p[2][1] = hedgesBottom[sx];
        c.p[2][2] = cornersBottom[sx + 1];
        c.p[1][1] = centreBase(c) +
                    unzigzag(s.a.field(g.centreBit + (uint64_t(sy) * uint64_t(g.segX) +
                                                      uint64_t(sx)) * h.centreBits,
                                       h.centreBits));
        leftEdge = c.p[1][2];
      } else {
        loadSegment(s.h, g, s.a, sx, sy, c);
      }
      const int x0 = sx * n;
      const int x1 = std::min(sx == g.segX - 1 ? g.width : x0 + n, g.width);
      if (avx2) {
        predictSegmentAvx2(c.p, g.segLog, 0, y1 - y0, x1 - x0, dst + size_t(y0) * stride + x0,
                           stride);
        continue;
      }
      for (int y = y0; y < y1; ++y) {
        const int64_t* wy = wt[y - y0];
        // Collapse the rows first: col[k] = sum_r wy[r] P[r][k]. Along the row the sum is then
        // the quadratic S(a) = n^2 col0 + 2n (col1 - col0) a + (col0 - 2 col1 + col2) a^2, walked
        // with exact integer forward differences: same S as evalSegment(), two adds a point.
        int64_t col[3];
        for (int k = 0; k < 3; ++k)
          col[k] = wy[0] * c.p[0][k] + wy[1] * c.p[1][k] + wy[2] * c.p[2][k];
        const int64_t curve = col[0] - 2 * col[1] + col[2];
        int64_t sum = int64_t(n) * n * col[0];
        int64_t delta = 2 * int64_t(n) * (col[1] - col[0]) + curve;
        const int64_t delta2 = 2 * curve;
        uint16_t* row = dst + size_t(y) * stride;
        int x = x0;
        for (; x < x1; ++x) {
          const int64_t v = (sum + half) >> shift;
          row[x] = uint16_t(v < 0 ? 0 : (v > 65535 ? 65535 : v));
          sum += delta;
          delta += delta2;
        }
      }
    }
    std::swap(cornersTop, cornersBottom);
    std::swap(hedgesTop, hedgesBottom);
  }
}

constexpr bool kLittleEndianHost = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;

// Reads consecutive fields of one width from a bit-packed section, 64 bits at a time where
// 8 bytes remain in the section (the common case), word by word near its end.
class FieldCursor {
 public:
  FieldCursor(const uint8_t* base, uint64_t bytes, uint64_t bit) : base_(base), bytes_(bytes), bit_(bit) {}
  uint32_t next(int bits) {
    const uint64_t byte = bit_ >> 3;
    uint32_t v;
    if (kLittleEndianHost && byte + 8 <= bytes_) {
      uint64_t word;
      std::memcpy(&word, base_ + byte, 8);  // the stream's byte order is the host's
      v = uint32_t(word >> (bit_ & 7)) & lowMask(bits);
    } else {
      v = BitReader(base_, bytes_ / 4).field(bit_, bits);
    }
    bit_ += uint64_t(bits);
    return v;
  }

 private:
  const uint8_t* base_;
  uint64_t bytes_, bit_;
};

// The hot loop of a lossless decode: one full-width (16-point) area row. row[] holds the layer-1
// prediction on entry and the decoded samples on exit: row + corr + low - half, range-checked
// and flipped. b is a template argument so masks and the half step are constants; the caller
// guarantees 8 readable bytes from the byte of every field's first bit.
template <int B>
uint32_t lowRow16(const uint8_t* base, uint64_t bit, const int32_t* corr, uint16_t* row,
                  uint16_t flip, uint32_t maskBits, uint16_t maskOut) {
  constexpr int32_t half = B > 0 ? (1 << (B - 1)) : 0;
  constexpr uint64_t mask = (uint64_t(1) << B) - 1;
  const uint8_t* p = base + (bit >> 3);
  const int s0 = int(bit & 7);
  uint32_t bad = 0;
  for (int lx = 0; lx < kAreaSide; ++lx) {
    int32_t v = int32_t(row[lx]) + corr[lx] - half;
    if constexpr (B > 0) {
      const int o = s0 + lx * B;
      uint64_t word;
      std::memcpy(&word, p + (o >> 3), 8);
      v += int32_t((word >> (o & 7)) & mask);
    }
    bad |= uint32_t(v) >> 16;  // non-zero for v < 0 (sign bits) and v > 65535
    row[lx] = (maskBits >> lx & 1u) ? maskOut : uint16_t(uint16_t(v) ^ flip);
  }
  return bad;
}

using LowRowFn = uint32_t (*)(const uint8_t*, uint64_t, const int32_t*, uint16_t*, uint16_t, uint32_t,
                              uint16_t);
constexpr int32_t kNoCorrections[kAreaSide] = {};
template <int... Bs>
constexpr std::array<LowRowFn, sizeof...(Bs)> makeLowRowTable(std::integer_sequence<int, Bs...>) {
  return {&lowRow16<Bs>...};
}
constexpr auto kLowRow = makeLowRowTable(std::make_integer_sequence<int, kMaxBits + 1>{});

// Everything after the layer-1 prediction, in one pass over each area: residuals (layers 2, 3),
// masked points, the signed-domain flip, and the range check of a lossless decode.
Status finishAreas(const Stream& s, uint16_t* dst, size_t stride, Layers layers) {
  const Geometry& g = s.g;
  const bool lossless = layers == Layers::All, withResiduals = layers != Layers::L1;
  uint64_t entry = 0, lowBit = 0, bitmapBit = 0;
  const uint16_t maskOut = uint16_t(s.maskValue ^ s.flip);
  // Prominent corrections of the current area; int64 since a hostile high part times 2^b
  // overflows int32.
  int64_t correction[kAreaSide * kAreaSide];
  for (int ay = 0; ay < g.areasY; ++ay)
    for (int ax = 0; ax < g.areasX; ++ax) {
      const uint64_t k = uint64_t(ay) * uint64_t(g.areasX) + uint64_t(ax);
      const int aw = areaWidth(g, ax), ah = areaHeight(g, ay);
      const int b = s.areaBits(k);
      const uint32_t count = s.areaCount(k);
      const uint32_t maskCode = s.maskCode(k);
      const uint64_t areaLowBit = lowBit, areaEntry = entry;
      lowBit += uint64_t(aw * ah) * uint64_t(b);
      entry += count;
      uint16_t* origin = dst + size_t(ay * kAreaSide) * stride + size_t(ax * kAreaSide);
      if (maskCode == kMaskAll) {
        for (int ly = 0; ly < ah; ++ly) std::fill_n(origin + size_t(ly) * stride, aw, maskOut);
        continue;
      }
      // Fast path, every area of a lossless decode: 16 fields per row step (lowRow16*), which
      // reads up to 16 bytes from the byte of a row's first field and 8 from any field's. A
      // partial-width area (the last column of areas) steps through a 16-wide scratch row; the
      // areas at the end of the section read a zero-padded copy of its tail. Masked points of a bitmap area take the
      // masked value in the same step: a valid stream gives them residual 0, so the range check
      // cannot trip on them (a corrupt one may, which is an error anyway).
      if (kLittleEndianHost && lossless) {
        const uint8_t* lowsBase = s.lowsBase;
        uint64_t lowsBit = areaLowBit;
        const uint64_t readEnd = areaLowBit + uint64_t((ah - 1) * aw + kAreaSide) * uint64_t(b);
        // An area's fields take at most 512 bytes, so the tail copied here fits kTailBytes.
        constexpr size_t kTailBytes = kAreaSide * kAreaSide * kMaxBits / 8 + 64;
        alignas(8) uint8_t tail[kTailBytes];
        if ((readEnd >> 3) + 16 > s.lowsBytes) {
          const uint64_t first = areaLowBit >> 3;
          const size_t have = size_t(s.lowsBytes - first);
          if (have + 32 > kTailBytes) return Status::SizeMismatch;  // not reachable: validated sizes
          std::memcpy(tail, s.lowsBase + first, have);
          std::memset(tail + have, 0, kTailBytes - have);
          lowsBase = tail;
          lowsBit = areaLowBit - 8 * first;
        }
        // Prominent corrections, only for areas that have some.
        int32_t corr[kAreaSide * kAreaSide];
        if (count > 0) {
          std::fill_n(corr, ah * kAreaSide, 0);
          for (uint64_t e = areaEntry; e < areaEntry + count; ++e) {
            // Valid high parts keep |high * 2^b| <= 2^17; anything larger is corrupt.
            const int64_t c = int64_t(s.high(e)) * (int64_t(1) << b);
            if (c < -(int64_t(1) << 17) || c > (int64_t(1) << 17)) return Status::OutOfRange;
            corr[s.positions[e]] = int32_t(c);
          }
        }
        uint32_t bad = 0;
        const bool avx2 = hasAvx2();
        if (avx2 && aw == kAreaSide) {
          // The common case in one call: the row kernel's constants set up once per area.
          uint32_t maskRows[kAreaSide];
          if (maskCode == kMaskBitmap)
            for (int ly = 0; ly < ah; ++ly, bitmapBit += kAreaSide)
              maskRows[ly] = s.maskBitmaps.field(bitmapBit, kAreaSide);
          if (lowArea16Avx2(lowsBase, lowsBit, b, ah, count > 0 ? corr : nullptr, origin, stride, s.flip,
                            maskCode == kMaskBitmap ? maskRows : nullptr, maskOut))
            return Status::OutOfRange;
          continue;
        }
        const LowRowFn lowRow = kLowRow[size_t(b)];
        // Scratch lanes past a partial area predict mid-range, so whatever fields they read
        // (the next row's) stay in range: 32768 + low - half is within 0..65535 for every b.
        alignas(16) uint16_t scratch[kAreaSide];
        for (int ly = 0; ly < ah; ++ly) {
          const int32_t* corrRow = count > 0 ? corr + ly * kAreaSide : kNoCorrections;
          const uint64_t rowBit = lowsBit + uint64_t(ly * aw) * uint64_t(b);
          uint16_t* row = origin + size_t(ly) * stride;
          uint16_t* target = row;
          if (aw < kAreaSide) {
            std::copy_n(row, aw, scratch);
            std::fill(scratch + aw, scratch + kAreaSide, uint16_t(0x8000));
            target = scratch;
          }
          uint32_t maskBits = 0;
          if (maskCode == kMaskBitmap) {
            maskBits = s.maskBitmaps.field(bitmapBit, aw);
            bitmapBit += uint64_t(aw);
          }
          bad |= avx2 ? lowRow16Avx2(lowsBase, rowBit, b, corrRow, target, s.flip, maskBits, maskOut)
                      : lowRow(lowsBase, rowBit, corrRow, target, s.flip, maskBits, maskOut);
          if (aw < kAreaSide) std::copy_n(scratch, aw, row);
        }
        if (bad) return Status::OutOfRange;
        continue;
      }
      const bool hasCorrections = withResiduals && count > 0;
      if (hasCorrections) {
        for (int ly = 0; ly < ah; ++ly)
          std::fill_n(correction + ly * kAreaSide, aw, int64_t(0));
        for (uint64_t e = areaEntry; e < areaEntry + count; ++e)
          correction[s.positions[e]] = int64_t(s.high(e)) * (int64_t(1) << b);
      }
      const int64_t half = lossless ? halfStep(b) : 0;
      FieldCursor lows(s.lowsBase, s.lowsBytes, areaLowBit);
      const bool bitmap = maskCode == kMaskBitmap;
      uint32_t outside = 0;  // OR of out-of-range flags: one branch per area, not per point
      for (int ly = 0; ly < ah; ++ly) {
        uint16_t* row = origin + size_t(ly) * stride;
        for (int lx = 0; lx < aw; ++lx) {
          int64_t v = row[lx];
          if (lossless) v += int64_t(lows.next(b)) - half;
          if (hasCorrections) v += correction[ly * kAreaSide + lx];
          if (bitmap && s.maskBitmaps.field(bitmapBit++, 1)) {
            row[lx] = maskOut;  // masked points decode to the masked value, whatever v is
            continue;
          }
          const bool bad = v < 0 || v > 65535;
          outside |= uint32_t(bad);
          if (bad) v = v < 0 ? 0 : 65535;
          row[lx] = uint16_t(uint16_t(v) ^ s.flip);
        }
      }
      if (lossless && outside) return Status::OutOfRange;
    }
  return Status::Ok;
}

}  // namespace

namespace detail {

Status indexStream(const uint8_t* data, size_t size, StreamIndex& out) {
  out.areas.clear();
  out.blockBits.clear();
  if (data == nullptr) return Status::TruncatedHeader;
  Stream s;
  if (Status st = openStream(data, size, s, nullptr, &out.areas); st != Status::Ok) return st;
  out.h = s.h;
  out.g = s.g;
  out.maskValue = s.maskValue;
  out.prominent = s.prominent;
  out.sectionA = kHeaderBytes;
  out.sectionD = uint64_t(kHeaderBytes) + s.h.layer1Bytes + s.h.layer2Bytes;
  out.streamBytes = out.sectionD + s.h.layer3Bytes;
  if (s.h.isFlat() || s.h.isStored()) {
    out.areas.clear();
    return Status::Ok;
  }
  const uint64_t sectionB = uint64_t(kHeaderBytes) + s.h.layer1Bytes;
  out.maskBitmaps = s.h.isMasked() ? sectionB + 4 + maskCodesBytes(s.g) : 0;
  if (s.h.isRbuc()) {
    // No layer-2 list; the residuals are found through the (validated) block index.
    out.positions = out.highs = 0;
    out.blockBits.resize(size_t(s.g.blocks));
    for (uint64_t k = 0; k < s.g.blocks; ++k)
      out.blockBits[size_t(k)] = s.blockOffsets.field(k * uint64_t(s.offsetBits), s.offsetBits);
    return Status::Ok;
  }
  out.positions = uint64_t(s.positions - data);
  out.highs = out.positions + sectionBytes(s.prominent * 8);
  return Status::Ok;
}

}  // namespace detail

Status readInfo(const uint8_t* data, size_t size, PatchInfo& info) {
  if (data == nullptr && size > 0) return Status::InvalidArgument;  // (null, 0) is just empty
  Header h;
  if (Status st = parseHeader(data, size, h); st != Status::Ok) return st;
  info = infoFrom(data, h);
  return Status::Ok;
}

Status decode(const uint8_t* data, size_t size, uint16_t* dst, size_t dstStride,
              size_t dstCapacity, Layers layers) {
  if ((data == nullptr && size > 0) ||
      (layers != Layers::L1 && layers != Layers::L12 && layers != Layers::All))
    return Status::InvalidArgument;
  Stream s;
  if (Status st = openStream(data, size, s, nullptr); st != Status::Ok) return st;
  const Geometry& g = s.g;
  if (dst == nullptr || dstStride < size_t(g.width) ||
      dstCapacity < size_t(g.height - 1) * dstStride + size_t(g.width))
    return Status::InvalidArgument;
  if (s.h.isFlat()) {
    for (int y = 0; y < g.height; ++y)
      std::fill_n(dst + size_t(y) * dstStride, g.width, uint16_t(s.h.base ^ s.flip));
    return Status::Ok;
  }
  if (s.h.isStored()) {
    // Every layer of a stored patch is exact. Its fields are 16 bits wide in little-endian
    // 32-bit words, so sample i is the little-endian uint16 at byte 2i of the section (read
    // byte by byte: one loop the compiler vectorises, whatever the host's byte order).
    static_assert(kMaxBits == 16, "stored samples are 16-bit fields");
    const uint8_t* stored = data + kHeaderBytes;
    for (int y = 0; y < g.height; ++y) {
      const uint8_t* in = stored + size_t(y) * size_t(g.width) * 2;
      uint16_t* out = dst + size_t(y) * dstStride;
      for (int x = 0; x < g.width; ++x)
        out[x] = uint16_t((uint32_t(in[2 * x]) | uint32_t(in[2 * x + 1]) << 8) ^ s.flip);
    }
    return Status::Ok;
  }
  predictPatch(s, dst, dstStride);
  if (s.h.isRbuc()) {
    // Two levels only: layer 1, or lossless (L12 has no layer 2 to stop at).
    if (layers != Layers::L1)
      if (Status st = addRbucResiduals(s, dst, dstStride); st != Status::Ok) return st;
    return finishAreas(s, dst, dstStride, Layers::L1);  // masked points and the flip
  }
  return finishAreas(s, dst, dstStride, layers);
}

Status PatchView::open(const uint8_t* data, size_t size, PatchView& view) {
  view = PatchView{};
  if (data == nullptr && size > 0) return Status::InvalidArgument;  // (null, 0) is just empty
  Stream s;
  if (Status st = openStream(data, size, s, &view); st != Status::Ok) {
    view = PatchView{};
    return st;
  }
  ViewAccess::set(view, data, size, infoFrom(data, s.h));
  return Status::Ok;
}

uint16_t PatchView::sample(int x, int y, Layers layers) const {
  assert(x >= 0 && y >= 0 && x < info_.width && y < info_.height);
  // Re-deriving the Stream from the already validated header is O(1).
  Stream s;
  parseHeader(data_, size_, s.h);
  s.g = makeGeometry(s.h);
  s.flip = s.h.isSigned() ? 0x8000u : 0u;
  if (s.h.isFlat()) return uint16_t(s.h.base ^ s.flip);
  const Geometry& g = s.g;
  if (s.h.isStored()) {
    const BitReader stored(data_ + kHeaderBytes, s.h.layer3Bytes / 4);
    const uint64_t index = uint64_t(y) * uint64_t(g.width) + uint64_t(x);
    return uint16_t(uint16_t(stored.field(index * kMaxBits, kMaxBits)) ^ s.flip);
  }
  s.l2 = makeLayer2Layout(s.h, g);
  const uint8_t* sectionB = data_ + kHeaderBytes + s.h.layer1Bytes;
  s.a = BitReader(data_ + kHeaderBytes, s.h.layer1Bytes / 4);
  const uint8_t* tableStart = sectionB + maskBytes_;
  s.table = BitReader(tableStart, s.l2.tableBytes / 4);
  const int ax = x / kAreaSide, ay = y / kAreaSide;
  const int lx = x % kAreaSide, ly = y % kAreaSide;
  const uint64_t k = uint64_t(ay) * uint64_t(g.areasX) + uint64_t(ax);
  const int aw = areaWidth(g, ax);
  if (s.h.isMasked()) {
    const uint16_t maskValue = uint16_t(loadWordLE(sectionB));
    const BitReader codes(sectionB + 4, maskCodesBytes(g) / 4);
    const uint32_t code = codes.field(k * 2, 2);
    if (code == kMaskAll) return uint16_t(maskValue ^ s.flip);
    if (code == kMaskBitmap) {
      const BitReader bitmaps(sectionB + 4 + maskCodesBytes(g),
                              (maskBytes_ - 4 - maskCodesBytes(g)) / 4);
      if (bitmaps.field(areaMask_[size_t(k)] + uint64_t(ly * aw + lx), 1))
        return uint16_t(maskValue ^ s.flip);
    }
  }

  const int sx = std::min(x / g.n, g.segX - 1), sy = std::min(y / g.n, g.segY - 1);
  SegmentControls c;
  loadSegment(s.h, g, s.a, sx, sy, c);
  int64_t v = evalSegment(c, x - sx * g.n, y - sy * g.n, g.segLog);
  if (s.h.isRbuc()) {
    if (layers != Layers::L1) v += rbucResidual(tableStart, sectionB + s.h.layer2Bytes, x, y);
  } else if (layers != Layers::L1) {
    const int b = s.h.perAreaBits() ? areaBits_[size_t(k)] : s.h.uniformBits;
    int64_t r = 0;
    if (layers == Layers::All) {
      const uint64_t areaLow =
          s.h.perAreaBits() ? areaLow_[size_t(k)] : pointsBeforeArea(g, ax, ay) * uint64_t(b);
      const uint64_t bit = areaLow + uint64_t(ly * aw + lx) * uint64_t(b);
      const BitReader lows(sectionB + s.h.layer2Bytes, s.h.layer3Bytes / 4);
      r = int64_t(lows.field(bit, b)) - halfStep(b);
    }
    if (s.h.countBits > 0) {
      const uint32_t first = areaFirst_[size_t(k)], last = areaFirst_[size_t(k) + 1];
      const uint8_t* positions = tableStart + s.l2.tableBytes;
      const uint8_t target = uint8_t(ly * kAreaSide + lx);
      const uint8_t* it = std::lower_bound(positions + first, positions + last, target);
      if (it != positions + last && *it == target) {
        const uint64_t entry = uint64_t(it - positions);
        const uint64_t total = areaFirst_.back();
        BitReader highs(positions + sectionBytes(total * 8), sectionBytes(total * s.h.highBits) / 4);
        r += int64_t(unzigzag(highs.field(entry * s.h.highBits, s.h.highBits) + 1u)) *
             (int64_t(1) << b);
      }
    }
    v += r;
  }
  v = v < 0 ? 0 : (v > 65535 ? 65535 : v);
  return uint16_t(uint16_t(v) ^ s.flip);
}

// The 2DRBUC residual of point (x, y): the block's offset from the index, then the widths of
// the nodes before the point's node in its block (at most 63: bounded work, no table).
int32_t PatchView::rbucResidual(const uint8_t* index, const uint8_t* sectionD, int x,
                                int y) const {
  Header h;
  parseHeader(data_, size_, h);
  const Geometry g = makeGeometry(h);
  const int offsetBits = int(loadWordLE(index));
  const BitReader offsets(index + 4, sectionBytes(g.blocks * uint64_t(offsetBits)) / 4);
  const BitReader d(sectionD, h.layer3Bytes / 4);
  const int p = x / kBlockSide, q = y / kBlockSide;
  const RbucBlock b = rbucBlock(g, p, q);
  const uint64_t k = uint64_t(q) * uint64_t(g.blocksX) + uint64_t(p);
  const uint64_t start = offsets.field(k * uint64_t(offsetBits), offsetBits);
  const int widthBits = bitLength(d.field(start, kRbucRootBits));
  const uint64_t widthsBit = start + kRbucRootBits;
  const int ni = (x - b.x0) / kNodeSide, nj = (y - b.y0) / kNodeSide;
  const int target = nj * b.nodesX + ni;
  uint64_t bit = widthsBit + uint64_t(b.nodesX * b.nodesY) * uint64_t(widthBits);
  for (int n = 0; n < target; ++n) {
    const int w = int(d.field(widthsBit + uint64_t(n) * uint64_t(widthBits), widthBits));
    bit += uint64_t(w) * uint64_t(nodeSpan(b.width, n % b.nodesX) * nodeSpan(b.height, n / b.nodesX));
  }
  const int w = int(d.field(widthsBit + uint64_t(target) * uint64_t(widthBits), widthBits));
  const int nw = nodeSpan(b.width, ni);
  const int lx = x - b.x0 - ni * kNodeSide, ly = y - b.y0 - nj * kNodeSide;
  bit += uint64_t(ly * nw + lx) * uint64_t(w);
  return unzigzag(d.field(bit, w));
}

Status decodePoint(const uint8_t* data, size_t size, int x, int y, uint16_t& value,
                   Layers layers) {
  PatchView view;
  if (Status st = PatchView::open(data, size, view); st != Status::Ok) return st;
  if (x < 0 || y < 0 || x >= view.info().width || y >= view.info().height)
    return Status::InvalidArgument;
  if (layers != Layers::L1 && layers != Layers::L12 && layers != Layers::All)
    return Status::InvalidArgument;
  value = view.sample(x, y, layers);
  return Status::Ok;
}

}  // namespace hfpac
