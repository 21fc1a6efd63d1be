// encoder.cpp - the reference HFPaC encoder.
//
// Pipeline for one patch: map to the unsigned domain -> fit layer 1 (corners, then edge control
// points by least squares along each edge with the corners fixed, then centres by least squares
// over the whole segment) -> residuals against the exact integer prediction the decoder will
// compute -> choose b per 16 x 16 area (or one b) from residual histograms -> pack.
// Every fit is computed in exact integer arithmetic (int64 / __int128) so that the GPU encoder
// can reproduce the same bytes without depending on floating-point summation order.
#include <algorithm>
#include <array>
#include <cstring>
#include <optional>

#include "codec/layout.h"

namespace hfpac {
namespace {

using namespace detail;

__extension__ typedef __int128 int128;  // __extension__: -Wpedantic knows no 128-bit type

int128 floorDiv128(int128 a, int128 b) {  // b > 0
  int128 q = a / b;
  if ((a % b) != 0 && a < 0) --q;
  return q;
}

int32_t clampControl(int64_t v) {
  return int32_t(std::clamp<int64_t>(v, kMinControl, kMaxControl));
}

// Smallest b for which residual r is not prominent: -2^(b-1) <= r < 2^(b-1). 0 only for r = 0;
// 17 for r = 65535 (always prominent, even at b = 16).
int minBits(int32_t r) {
  if (r == 0) return 0;
  return r > 0 ? bitLength(uint32_t(r)) + 1 : bitLength(uint32_t(-r - 1)) + 1;
}

int32_t highPart(int32_t r, int b) { return (r + halfStep(b)) >> b; }  // arithmetic = floor

// Width of the stored high field for a prominent point: zigzag(high) - 1.
int highFieldBits(int32_t high) { return high == 0 ? 0 : bitLength(zigzag(high) - 1u); }

constexpr int kMinBitsBins = 18;  // minBits() is 0..17

struct AreaStats {
  uint32_t points = 0;
  int32_t rmin = 0, rmax = 0;
  std::array<uint32_t, kMinBitsBins> hist{};  // points by minBits
  std::array<uint32_t, kMaxBits + 1> prominentAt{};

  void finish() {
    uint32_t above = 0;  // points with minBits > b
    for (int b = kMinBitsBins - 1; b >= 0; --b) {
      if (b <= kMaxBits) prominentAt[size_t(b)] = above;
      above += hist[size_t(b)];
    }
  }
  int highBitsAt(int b) const {
    if (prominentAt[size_t(b)] == 0) return 0;
    return std::max(highFieldBits(highPart(rmin, b)), highFieldBits(highPart(rmax, b)));
  }
};

struct Layer1 {
  int n = 0, segX = 0, segY = 0;
  std::vector<int32_t> corners, hedges, vedges, centres;  // reconstructed control values
  std::vector<uint32_t> hedgeZ, vedgeZ, centreZ;          // stored (zigzag) offsets
  int cornerBits = 0, edgeBits = 0, centreBits = 0;

  SegmentControls controls(int sx, int sy) const {
    SegmentControls c;
    const int cw = segX + 1;
    c.p[0][0] = corners[size_t(sy * cw + sx)];
    c.p[0][2] = corners[size_t(sy * cw + sx + 1)];
    c.p[2][0] = corners[size_t((sy + 1) * cw + sx)];
    c.p[2][2] = corners[size_t((sy + 1) * cw + sx + 1)];
    c.p[0][1] = hedges[size_t(sy * segX + sx)];
    c.p[2][1] = hedges[size_t((sy + 1) * segX + sx)];
    c.p[1][0] = vedges[size_t(sy * cw + sx)];
    c.p[1][2] = vedges[size_t(sy * cw + sx + 1)];
    c.p[1][1] = centres.empty() ? 0 : centres[size_t(sy * segX + sx)];
    return c;
  }
};

class PatchEncoder {
 public:
  // `mask`: the masked value (unsigned domain), if this encoding masks one. The patch must have
  // at least one point that is not masked.
  PatchEncoder(const std::vector<uint16_t>& u, int w, int h, bool isSigned,
               std::optional<uint16_t> mask)
      : u_(u), w_(w), h_(h), signed_(isSigned), mask_(mask) {
    min_ = 0xffff;
    if (mask_) {
      masked_.assign(u.size(), 0);
      for (size_t k = 0; k < u.size(); ++k) masked_[k] = u[k] == *mask_;
      fillMasked();
    }
    for (size_t k = 0; k < u.size(); ++k)
      if (!isMasked(k)) min_ = std::min(min_, u[k]);
  }

  std::vector<uint8_t> encode(int segLog, int bitsOption, bool rbuc, EncodeStats* stats) {
    fitLayer1(segLog);
    computeResiduals(segLog);
    if (rbuc) return packRbuc(segLog, stats);
    chooseBits(bitsOption);
    return pack(segLog, stats);
  }

 private:
  bool isMasked(size_t k) const { return mask_ && masked_[k]; }

  // The sample the surface is fitted to: clamp-extended beyond the patch, and with masked
  // points replaced by an interpolation of their unmasked neighbours.
  int32_t sample(int x, int y) const {
    const size_t k = size_t(std::min(y, h_ - 1)) * size_t(w_) + size_t(std::min(x, w_ - 1));
    return mask_ ? fill_[k] : u_[k];
  }

  // Linear interpolation along rows between the nearest unmasked samples (copying at the ends),
  // then the same along columns for rows that had none. Integer and order-independent, so the
  // GPU encoder can reproduce it row- and column-parallel.
  void fillMasked() {
    fill_.assign(u_.begin(), u_.end());
    std::vector<uint8_t> known(u_.size());
    for (size_t k = 0; k < u_.size(); ++k) known[k] = !masked_[k];
    auto interpolateLine = [&](size_t first, size_t step, int count, std::vector<uint8_t>& in,
                               std::vector<uint8_t>& out) {
      int previous = -1;
      for (int t = 0; t <= count; ++t) {
        if (t < count && !in[first + size_t(t) * step]) continue;
        // Gap (previous, t): fill it from the known ends.
        for (int g = previous + 1; g < t; ++g) {
          const size_t k = first + size_t(g) * step;
          if (previous < 0 && t == count) break;  // nothing known on this line
          int32_t v;
          if (previous < 0) {
            v = fill_[first + size_t(t) * step];
          } else if (t == count) {
            v = fill_[first + size_t(previous) * step];
          } else {
            const int64_t a = fill_[first + size_t(previous) * step];
            const int64_t b = fill_[first + size_t(t) * step];
            v = int32_t(floorDiv(a * (t - g) + b * (g - previous), t - previous));
          }
          fill_[k] = uint16_t(v);
          out[k] = 1;
        }
        previous = t;
      }
    };
    std::vector<uint8_t> afterRows = known;
    for (int y = 0; y < h_; ++y) interpolateLine(size_t(y) * size_t(w_), 1, w_, known, afterRows);
    std::vector<uint8_t> afterColumns = afterRows;
    for (int x = 0; x < w_; ++x)
      interpolateLine(size_t(x), size_t(w_), h_, afterRows, afterColumns);
  }

  void fitLayer1(int segLog) {
    const int n = 1 << segLog;
    Layer1& l = l1_;
    l.n = n;
    l.segX = segmentCount(w_, n);
    l.segY = segmentCount(h_, n);
    const int cw = l.segX + 1, ch = l.segY + 1;
    l.corners.assign(size_t(cw) * size_t(ch), 0);
    for (int j = 0; j < ch; ++j)
      for (int i = 0; i < cw; ++i) l.corners[size_t(j * cw + i)] = sample(i * n, j * n);

    std::vector<std::array<int64_t, 3>> wt(size_t(n) + 1);
    for (int t = 0; t <= n; ++t) bezierWeights(t, n, wt[size_t(t)].data());
    int64_t den1 = 0;
    for (int t = 1; t < n; ++t) den1 += wt[size_t(t)][1] * wt[size_t(t)][1];
    const int64_t n2 = int64_t(n) * n;

    // Edge control point: least squares along the edge, corners fixed.
    auto fitEdge = [&](int32_t a, int32_t b, auto&& edgeSample, int32_t& value, uint32_t& zz) {
      int64_t num = 0;
      for (int t = 1; t < n; ++t) {
        const auto& w = wt[size_t(t)];
        num += w[1] * (n2 * edgeSample(t) - w[0] * a - w[2] * b);
      }
      const int32_t c = clampControl(floorDiv(2 * num + den1, 2 * den1));
      const int32_t offset = c - int32_t(floorDiv(int64_t(a) + b, 2));
      value = c;
      zz = zigzag(offset);
    };
    l.hedges.assign(size_t(l.segX) * size_t(ch), 0);
    l.hedgeZ.assign(l.hedges.size(), 0);
    for (int j = 0; j < ch; ++j)
      for (int i = 0; i < l.segX; ++i) {
        const size_t k = size_t(j * l.segX + i);
        fitEdge(l.corners[size_t(j * cw + i)], l.corners[size_t(j * cw + i + 1)],
                [&](int t) { return int64_t(sample(i * n + t, j * n)); }, l.hedges[k], l.hedgeZ[k]);
      }
    l.vedges.assign(size_t(cw) * size_t(l.segY), 0);
    l.vedgeZ.assign(l.vedges.size(), 0);
    for (int j = 0; j < l.segY; ++j)
      for (int i = 0; i < cw; ++i) {
        const size_t k = size_t(j * cw + i);
        fitEdge(l.corners[size_t(j * cw + i)], l.corners[size_t((j + 1) * cw + i)],
                [&](int t) { return int64_t(sample(i * n, j * n + t)); }, l.vedges[k], l.vedgeZ[k]);
      }

    // Centre control point: least squares over the segment with the 8 others fixed.
    // S1 = sum w1(i) w1(j) (n^4 s_ij - T_ij) can reach 2^64, hence __int128.
    l.centres.clear();
    l.centreZ.assign(size_t(l.segX) * size_t(l.segY), 0);
    std::vector<int32_t> centres(l.centreZ.size(), 0);
    const int64_t n4 = n2 * n2;
    const int128 s2 = int128(den1) * den1;
    for (int sy = 0; sy < l.segY; ++sy)
      for (int sx = 0; sx < l.segX; ++sx) {
        SegmentControls c = l.controls(sx, sy);  // centre = 0 while centres is empty
        c.p[1][1] = 0;
        int128 s1 = 0;
        for (int j = 1; j < n; ++j) {
          const auto& wy = wt[size_t(j)];
          for (int i = 1; i < n; ++i) {
            const auto& wx = wt[size_t(i)];
            int64_t t = 0;
            for (int r = 0; r < 3; ++r)
              t += wy[size_t(r)] * (wx[0] * c.p[r][0] + wx[1] * c.p[r][1] + wx[2] * c.p[r][2]);
            const int64_t e = n4 * sample(sx * n + i, sy * n + j) - t;
            s1 += int128(wy[1] * wx[1]) * e;
          }
        }
        const int32_t value = clampControl(int64_t(floorDiv128(2 * s1 + s2, 2 * s2)));
        const size_t k = size_t(sy * l.segX + sx);
        centres[k] = value;
        l.centreZ[k] = zigzag(value - centreBase(c));
      }
    l.centres = std::move(centres);

    uint32_t maxCorner = 0, maxEdge = 0, maxCentre = 0;
    for (int32_t v : l.corners) maxCorner = std::max(maxCorner, uint32_t(v - min_));
    for (uint32_t z : l.hedgeZ) maxEdge = std::max(maxEdge, z);
    for (uint32_t z : l.vedgeZ) maxEdge = std::max(maxEdge, z);
    for (uint32_t z : l.centreZ) maxCentre = std::max(maxCentre, z);
    l.cornerBits = bitLength(maxCorner);
    l.edgeBits = bitLength(maxEdge);
    l.centreBits = bitLength(maxCentre);
  }

  void computeResiduals(int segLog) {
    const int n = l1_.n;
    residual_.assign(size_t(w_) * size_t(h_), 0);
    for (int y = 0; y < h_; ++y) {
      const int sy = std::min(y / n, l1_.segY - 1);
      const int j = y - sy * n;
      for (int sx = 0; sx < l1_.segX; ++sx) {
        const SegmentControls c = l1_.controls(sx, sy);
        const int x0 = sx * n;
        const int x1 = std::min(sx == l1_.segX - 1 ? w_ : x0 + n, w_);
        for (int x = x0; x < x1; ++x) {
          const size_t k = size_t(y) * size_t(w_) + size_t(x);
          // A masked point's residual is never decoded; 0 keeps it out of every statistic.
          residual_[k] = isMasked(k) ? 0 : int32_t(u_[k]) - evalSegment(c, x - x0, j, segLog);
        }
      }
    }
    areasX_ = (w_ + kAreaSide - 1) / kAreaSide;
    areasY_ = (h_ + kAreaSide - 1) / kAreaSide;
    areas_.assign(size_t(areasX_) * size_t(areasY_), AreaStats{});
    for (int ay = 0; ay < areasY_; ++ay)
      for (int ax = 0; ax < areasX_; ++ax) {
        AreaStats& a = areas_[size_t(ay * areasX_ + ax)];
        a.rmin = INT32_MAX;
        a.rmax = INT32_MIN;
        forEachAreaPoint(ax, ay, [&](int, int, int32_t r) {
          ++a.points;
          a.rmin = std::min(a.rmin, r);
          a.rmax = std::max(a.rmax, r);
          ++a.hist[size_t(minBits(r))];
        });
        a.finish();
      }
  }

  template <class F>
  void forEachAreaPoint(int ax, int ay, F&& f) const {
    const int x0 = ax * kAreaSide, y0 = ay * kAreaSide;
    const int aw = std::min(kAreaSide, w_ - x0), ah = std::min(kAreaSide, h_ - y0);
    for (int ly = 0; ly < ah; ++ly)
      for (int lx = 0; lx < aw; ++lx)
        f(lx, ly, residual_[size_t(y0 + ly) * size_t(w_) + size_t(x0 + lx)]);
  }

  struct Choice {
    std::vector<uint8_t> bits;  // per area
    bool perArea = false;
    int highBits = 0, countBits = 0;
    uint64_t prominent = 0, bytes = 0;  // bytes of layers 2 + 3
  };

  Choice evaluate(std::vector<uint8_t> bits, bool perArea) const {
    Choice c;
    c.bits = std::move(bits);
    c.perArea = perArea;
    uint64_t lowBits = 0;
    uint32_t maxCount = 0;
    for (size_t k = 0; k < areas_.size(); ++k) {
      const AreaStats& a = areas_[k];
      const int b = c.bits[k];
      const uint32_t p = a.prominentAt[size_t(b)];
      c.prominent += p;
      maxCount = std::max(maxCount, p);
      c.highBits = std::max(c.highBits, a.highBitsAt(b));
      lowBits += uint64_t(a.points) * uint64_t(b);
    }
    c.countBits = bitLength(maxCount);
    const uint64_t areas = areas_.size();
    c.bytes = sectionBytes((perArea ? areas * kAreaBitsFieldBits : 0) + areas * c.countBits) +
              sectionBytes(c.prominent * 8) + sectionBytes(c.prominent * uint64_t(c.highBits)) +
              sectionBytes(lowBits);
    return c;
  }

  void chooseBits(int bitsOption) {
    const size_t areas = areas_.size();
    if (bitsOption >= 0) {
      choice_ = evaluate(std::vector<uint8_t>(areas, uint8_t(bitsOption)), false);
      return;
    }
    // Per-area choice: minimise b * points + prominent * (8 + high bits). The patch-wide high
    // width couples the areas, so iterate on it a few times (it settles in 1-3 rounds).
    std::vector<uint8_t> bits(areas, 0);
    int hw = 0;
    for (int round = 0; round < 4; ++round) {
      int newHw = 0;
      for (size_t k = 0; k < areas; ++k) {
        const AreaStats& a = areas_[k];
        uint64_t best = UINT64_MAX;
        for (int b = 0; b <= kMaxBits; ++b) {
          const uint64_t p = a.prominentAt[size_t(b)];
          const uint64_t cost = uint64_t(a.points) * uint64_t(b) +
                                p * uint64_t(8 + std::max(hw, a.highBitsAt(b)));
          if (cost < best) {
            best = cost;
            bits[k] = uint8_t(b);
          }
        }
        newHw = std::max(newHw, a.highBitsAt(bits[k]));
      }
      if (newHw == hw) break;
      hw = newHw;
    }
    Choice best = evaluate(bits, true);
    for (int b = 0; b <= kMaxBits; ++b) {
      Choice uniform = evaluate(std::vector<uint8_t>(areas, uint8_t(b)), false);
      if (uniform.bytes <= best.bytes) best = std::move(uniform);  // the table costs bytes: ties go uniform
    }
    choice_ = std::move(best);
  }

  // Header + section A (layer 1); returns the stream so far.
  std::vector<uint8_t> startStream() const {
    BitWriter a;
    for (int32_t v : l1_.corners) a.put(uint32_t(v - min_), l1_.cornerBits);
    for (uint32_t z : l1_.hedgeZ) a.put(z, l1_.edgeBits);
    for (uint32_t z : l1_.vedgeZ) a.put(z, l1_.edgeBits);
    for (uint32_t z : l1_.centreZ) a.put(z, l1_.centreBits);
    std::vector<uint8_t> out(size_t(kHeaderBytes), 0);
    a.flushTo(out);
    return out;
  }

  // The mask part that opens section B of a masked stream.
  void appendMaskPart(std::vector<uint8_t>& out) const {
    if (!mask_) return;
    BitWriter maskCodes, maskBitmaps;
    for (int ay = 0; ay < areasY_; ++ay)
      for (int ax = 0; ax < areasX_; ++ax) {
        const int x0 = ax * kAreaSide, y0 = ay * kAreaSide;
        const int aw = std::min(kAreaSide, w_ - x0), ah = std::min(kAreaSide, h_ - y0);
        int count = 0;
        for (int ly = 0; ly < ah; ++ly)
          for (int lx = 0; lx < aw; ++lx)
            count += masked_[size_t(y0 + ly) * size_t(w_) + size_t(x0 + lx)];
        const uint32_t code = count == 0 ? kMaskNone : (count == aw * ah ? kMaskAll : kMaskBitmap);
        maskCodes.put(code, 2);
        if (code == kMaskBitmap)
          for (int ly = 0; ly < ah; ++ly)
            for (int lx = 0; lx < aw; ++lx)
              maskBitmaps.put(masked_[size_t(y0 + ly) * size_t(w_) + size_t(x0 + lx)], 1);
      }
    out.insert(out.end(), {uint8_t(*mask_), uint8_t(*mask_ >> 8), 0, 0});
    maskCodes.flushTo(out);
    maskBitmaps.flushTo(out);
  }

  // Fills the header fields common to both residual codings and writes the header.
  void finishStream(std::vector<uint8_t>& out, Header& h, int segLog, size_t layer1End,
                    size_t layer2End) const {
    h.flags = uint8_t(h.flags | (signed_ ? kFlagSigned : 0) | (mask_ ? kFlagMasked : 0));
    h.segLog = uint8_t(segLog);
    h.width = uint16_t(w_);
    h.height = uint16_t(h_);
    h.base = min_;
    h.cornerBits = uint8_t(l1_.cornerBits);
    h.edgeBits = uint8_t(l1_.edgeBits);
    h.centreBits = uint8_t(l1_.centreBits);
    h.layer1Bytes = uint32_t(layer1End - size_t(kHeaderBytes));
    h.layer2Bytes = uint32_t(layer2End - layer1End);
    h.layer3Bytes = uint32_t(out.size() - layer2End);
    writeHeader(h, out.data());
  }

  std::vector<uint8_t> pack(int segLog, EncodeStats* stats) const {
    const Choice& ch = choice_;
    BitWriter table, highs, lows;
    std::vector<uint8_t> positions;
    std::vector<uint32_t> counts(areas_.size(), 0);
    for (int ay = 0; ay < areasY_; ++ay)
      for (int ax = 0; ax < areasX_; ++ax) {
        const size_t k = size_t(ay * areasX_ + ax);
        const int b = ch.bits[k];
        forEachAreaPoint(ax, ay, [&](int lx, int ly, int32_t r) {
          const int32_t q = r + halfStep(b);
          lows.put(uint32_t(q) & lowMask(b), b);
          const int32_t high = q >> b;
          if (high != 0) {
            positions.push_back(uint8_t(ly * kAreaSide + lx));
            highs.put(zigzag(high) - 1u, ch.highBits);
            ++counts[k];
          }
        });
      }
    if (ch.perArea)
      for (uint8_t b : ch.bits) table.put(b, kAreaBitsFieldBits);
    for (uint32_t c : counts) table.put(c, ch.countBits);

    std::vector<uint8_t> out = startStream();
    const size_t layer1End = out.size();
    appendMaskPart(out);
    table.flushTo(out);
    out.insert(out.end(), positions.begin(), positions.end());
    out.resize((out.size() + 3) & ~size_t(3), 0);
    highs.flushTo(out);
    const size_t layer2End = out.size();
    lows.flushTo(out);

    Header h;
    h.flags = ch.perArea ? kFlagPerAreaBits : 0;
    h.uniformBits = ch.perArea ? 0 : ch.bits.front();
    h.highBits = uint8_t(ch.highBits);
    h.countBits = uint8_t(ch.countBits);
    finishStream(out, h, segLog, layer1End, layer2End);

    if (stats) {
      *stats = EncodeStats{};
      readInfo(out.data(), out.size(), stats->info);
      stats->prominentPoints = uint32_t(ch.prominent);
      for (size_t k = 0; k < areas_.size(); ++k) stats->bitsHistogram[ch.bits[k]] += areas_[k].points;
    }
    return out;
  }

  // 2DRBUC: per 32 x 32 block a 5-bit root width, each 4 x 4 node's width in
  // bitLength(root) bits, then every point's zigzag residual in its node's width.
  std::vector<uint8_t> packRbuc(int segLog, EncodeStats* stats) const {
    Header geometryHeader;
    geometryHeader.width = uint16_t(w_);
    geometryHeader.height = uint16_t(h_);
    geometryHeader.flags = kFlagFlat;  // geometry only: no segments needed here
    const Geometry g = makeGeometry(geometryHeader);
    BitWriter data;
    std::vector<uint64_t> offsets;
    uint32_t pointsByWidth[kMaxBits + 1] = {};
    for (int q = 0; q < g.blocksY; ++q)
      for (int p = 0; p < g.blocksX; ++p) {
        const RbucBlock b = rbucBlock(g, p, q);
        offsets.push_back(data.bitCount());
        int widths[(kBlockSide / kNodeSide) * (kBlockSide / kNodeSide)];
        int root = 0;
        auto z = [&](int x, int y) {
          return zigzag(residual_[size_t(y) * size_t(w_) + size_t(x)]);
        };
        for (int j = 0; j < b.nodesY; ++j)
          for (int i = 0; i < b.nodesX; ++i) {
            uint32_t largest = 0;
            const int x0 = b.x0 + i * kNodeSide, y0 = b.y0 + j * kNodeSide;
            for (int y = y0; y < y0 + nodeSpan(b.height, j); ++y)
              for (int x = x0; x < x0 + nodeSpan(b.width, i); ++x) largest = std::max(largest, z(x, y));
            const int w = bitLength(largest);
            widths[j * b.nodesX + i] = w;
            root = std::max(root, w);
            pointsByWidth[std::min(w, kMaxBits)] +=
                uint32_t(nodeSpan(b.height, j) * nodeSpan(b.width, i));
          }
        data.put(uint32_t(root), kRbucRootBits);
        const int widthBits = bitLength(uint32_t(root));
        for (int n = 0; n < b.nodesX * b.nodesY; ++n) data.put(uint32_t(widths[n]), widthBits);
        for (int j = 0; j < b.nodesY; ++j)
          for (int i = 0; i < b.nodesX; ++i) {
            const int w = widths[j * b.nodesX + i];
            const int x0 = b.x0 + i * kNodeSide, y0 = b.y0 + j * kNodeSide;
            for (int y = y0; y < y0 + nodeSpan(b.height, j); ++y)
              for (int x = x0; x < x0 + nodeSpan(b.width, i); ++x) data.put(z(x, y), w);
          }
      }
    const int offsetBits = bitLength(uint32_t(offsets.back()));
    BitWriter index;
    index.put(uint32_t(offsetBits), 32);
    for (uint64_t o : offsets) index.put(uint32_t(o), offsetBits);

    std::vector<uint8_t> out = startStream();
    const size_t layer1End = out.size();
    appendMaskPart(out);
    index.flushTo(out);
    const size_t layer2End = out.size();
    data.flushTo(out);
    Header h;
    h.flags = kFlagRbuc;
    finishStream(out, h, segLog, layer1End, layer2End);
    if (stats) {
      *stats = EncodeStats{};
      readInfo(out.data(), out.size(), stats->info);
      std::copy(std::begin(pointsByWidth), std::end(pointsByWidth), stats->bitsHistogram);
    }
    return out;
  }

  const std::vector<uint16_t>& u_;
  int w_, h_;
  bool signed_;
  std::optional<uint16_t> mask_;
  std::vector<uint8_t> masked_;  // per point: equals *mask_
  std::vector<uint16_t> fill_;   // samples with masked points interpolated (masked encodings)
  uint16_t min_;                 // minimum of the unmasked points: the corners' base
  Layer1 l1_;
  std::vector<int32_t> residual_;
  int areasX_ = 0, areasY_ = 0;
  std::vector<AreaStats> areas_;
  Choice choice_;
};

// The most frequent value and its count.
std::pair<uint16_t, size_t> mostFrequent(const std::vector<uint16_t>& u) {
  std::vector<uint16_t> sorted(u);
  std::sort(sorted.begin(), sorted.end());
  std::pair<uint16_t, size_t> best{sorted.front(), 0};
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i;
    while (j < sorted.size() && sorted[j] == sorted[i]) ++j;
    if (j - i > best.second) best = {sorted[i], j - i};
    i = j;
  }
  return best;
}

void writeStored(const std::vector<uint16_t>& u, int width, int height, bool isSigned,
                  std::vector<uint8_t>& out, EncodeStats* stats) {
  BitWriter samples;
  for (uint16_t v : u) samples.put(v, kMaxBits);
  out.assign(size_t(kHeaderBytes), 0);
  samples.flushTo(out);
  Header h;
  h.flags = uint8_t(kFlagStored | (isSigned ? kFlagSigned : 0));
  h.uniformBits = kMaxBits;
  h.width = uint16_t(width);
  h.height = uint16_t(height);
  h.layer3Bytes = uint32_t(out.size() - size_t(kHeaderBytes));
  writeHeader(h, out.data());
  if (stats) {
    *stats = EncodeStats{};
    readInfo(out.data(), out.size(), stats->info);
    stats->bitsHistogram[kMaxBits] = uint32_t(u.size());
  }
}

}  // namespace

size_t maxEncodedSize(int width, int height) {
  if (width < 1 || height < 1 || width > kMaxPatchSide || height > kMaxPatchSide) return 0;
  // Worst case of every section at the smallest segment (most control points) and widest fields.
  const uint64_t n = 4, sx = uint64_t(segmentCount(width, 4)), sy = uint64_t(segmentCount(height, 4));
  (void)n;
  const uint64_t l1 = sectionBytes((sx + 1) * (sy + 1) * kMaxCornerBits +
                                   (sx * (sy + 1) + (sx + 1) * sy + sx * sy) * kMaxOffsetBits);
  const uint64_t points = uint64_t(width) * uint64_t(height);
  const uint64_t areas = uint64_t((width + kAreaSide - 1) / kAreaSide) *
                         uint64_t((height + kAreaSide - 1) / kAreaSide);
  const uint64_t l2 = sectionBytes(areas * (kAreaBitsFieldBits + kMaxCountBits)) +
                      sectionBytes(points * 8) + sectionBytes(points * kMaxHighBits);
  const uint64_t l3 = sectionBytes(points * kMaxBits);
  return size_t(uint64_t(kHeaderBytes) + l1 + l2 + l3);
}

Status encode(const uint16_t* samples, size_t stride, int width, int height, SampleType type,
              const EncodeOptions& options, std::vector<uint8_t>& out, EncodeStats* stats) {
  if (samples == nullptr || width < 1 || height < 1 || width > kMaxPatchSide ||
      height > kMaxPatchSide || stride < size_t(width))
    return Status::InvalidArgument;
  if (type != SampleType::UInt16 && type != SampleType::Int16) return Status::InvalidArgument;
  if (options.segment != 0 && segLogForSize(options.segment) < 0) return Status::InvalidArgument;
  if (options.bits < -1 || options.bits > kMaxBits) return Status::InvalidArgument;

  // Signed samples are offset by 2^15 (xor of the sign bit) into the unsigned domain.
  const bool isSigned = type == SampleType::Int16;
  const uint16_t flip = isSigned ? 0x8000u : 0u;
  std::vector<uint16_t> u(size_t(width) * size_t(height));
  uint16_t lo = 0xffff, hi = 0;
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      const uint16_t v = uint16_t(samples[size_t(y) * stride + size_t(x)] ^ flip);
      u[size_t(y) * size_t(width) + size_t(x)] = v;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }

  if (lo == hi) {
    Header h;
    h.flags = uint8_t(kFlagFlat | (isSigned ? kFlagSigned : 0));
    h.width = uint16_t(width);
    h.height = uint16_t(height);
    h.base = lo;
    out.assign(size_t(kHeaderBytes), 0);
    writeHeader(h, out.data());
    if (stats) {
      *stats = EncodeStats{};
      readInfo(out.data(), out.size(), stats->info);
      stats->bitsHistogram[0] = uint32_t(width) * uint32_t(height);
    }
    return Status::Ok;
  }

  // Candidates: no mask, the nodata value, the most frequent value. Keep the smallest stream
  // (the earliest candidate on ties: no mask, then smaller segments first).
  std::vector<std::optional<uint16_t>> masks{std::nullopt};
  if (options.hasNodata) {
    const uint16_t nodata = uint16_t(options.nodata ^ flip);
    if (std::find(u.begin(), u.end(), nodata) != u.end()) masks.push_back(nodata);
  }
  if (options.autoMask) {
    const auto [value, count] = mostFrequent(u);
    if (count * 16 >= u.size() && (masks.size() < 2 || *masks.back() != value))
      masks.push_back(value);
  }
  std::vector<int> segLogs;
  if (options.segment != 0) {
    segLogs.push_back(segLogForSize(options.segment));
  } else {
    for (int segLog = kMinSegLog; segLog <= kMaxSegLog; ++segLog) segLogs.push_back(segLog);
  }
  // 2DRBUC block offsets are 32-bit: very large patches keep layers 2 + 3.
  const uint64_t worstRbucBits =
      uint64_t(width) * uint64_t(height) * kMaxRbucWidth +
      uint64_t((width + kBlockSide - 1) / kBlockSide) * uint64_t((height + kBlockSide - 1) / kBlockSide) *
          (kRbucRootBits + 64 * 5);
  const bool rbuc = options.rbuc && worstRbucBits < (uint64_t(1) << 32);
  EncodeStats candidateStats;
  bool first = true;
  for (const auto& mask : masks) {
    PatchEncoder encoder(u, width, height, isSigned, mask);
    for (int segLog : segLogs) {
      std::vector<uint8_t> candidate = encoder.encode(segLog, options.bits, rbuc, &candidateStats);
      if (first || candidate.size() < out.size()) {
        out = std::move(candidate);
        if (stats) *stats = candidateStats;
        first = false;
      }
    }
  }
  // Incompressible data (white noise, random cliffs) would grow; store it instead, so no patch
  // ever costs more than the header plus its 16-bit samples. Not for a fixed b: the caller asked
  // for that layering.
  const uint64_t rawBytes = uint64_t(kHeaderBytes) + sectionBytes(u.size() * kMaxBits);
  if ((options.bits < 0 || rbuc) && out.size() > rawBytes)
    writeStored(u, width, height, isSigned, out, stats);
  return Status::Ok;
}

Status encodeStored(const uint16_t* samples, size_t stride, int width, int height, SampleType type,
                    std::vector<uint8_t>& out) {
  if (samples == nullptr || width < 1 || height < 1 || width > kMaxPatchSide ||
      height > kMaxPatchSide || stride < size_t(width))
    return Status::InvalidArgument;
  if (type != SampleType::UInt16 && type != SampleType::Int16) return Status::InvalidArgument;
  const bool isSigned = type == SampleType::Int16;
  const uint16_t flip = isSigned ? 0x8000u : 0u;
  std::vector<uint16_t> u(size_t(width) * size_t(height));
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      u[size_t(y) * size_t(width) + size_t(x)] = uint16_t(samples[size_t(y) * stride + size_t(x)] ^ flip);
  writeStored(u, width, height, isSigned, out, nullptr);
  return Status::Ok;
}

}  // namespace hfpac
