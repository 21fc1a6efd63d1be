// decode_plan_test.cpp - the GPU decoder's host half (DecodePlan: validation, descriptors, blob)
// checked WITHOUT a device: a straight host transcription of cuda/decode.cu's per-point
// arithmetic reads only the blob, and must reproduce hfpac::decode at every layer. This catches
// descriptor and offset mistakes in CI; the kernel itself is checked on the device
// (decode_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "codec/layout.h"
#include "gpu/decode_desc.h"
#include "gpu/desc_build.h"
#include "gpu/decode_math.h"
#include "gpu/decoder.h"
#include "test_util.h"

namespace {

using namespace hfgpu::detail;
using hfpac::Status;

uint32_t fieldAt(const uint32_t* w, uint64_t bit, int bits) {
  if (bits == 0) return 0;
  const uint64_t i = bit >> 5;
  const int sh = int(bit & 31);
  uint32_t v = w[i] >> sh;
  if (sh + bits > 32) v |= w[i + 1] << (32 - sh);
  return v & ((1u << bits) - 1u);
}
int32_t unzig(uint32_t z) { return int32_t(z >> 1) ^ -int32_t(z & 1); }

void loadSeg(const PatchDesc& p, const uint32_t* s, int sx, int sy, hfpac::detail::SegmentControls& c) {
  using namespace hfpac::detail;
  const int cb = p.cornerBits, eb = p.edgeBits, zb = p.centreBits;
  const uint64_t cw = uint64_t(p.segX) + 1, a0 = 256;
  auto corner = [&](int i, int j) { return int32_t(p.base) + int32_t(fieldAt(s, a0 + (uint64_t(j) * cw + i) * cb, cb)); };
  c.p[0][0] = corner(sx, sy);
  c.p[0][2] = corner(sx + 1, sy);
  c.p[2][0] = corner(sx, sy + 1);
  c.p[2][2] = corner(sx + 1, sy + 1);
  auto hedge = [&](int i, int j) { return unzig(fieldAt(s, p.hedgeBit + (uint64_t(j) * p.segX + i) * eb, eb)); };
  auto vedge = [&](int i, int j) { return unzig(fieldAt(s, p.vedgeBit + (uint64_t(j) * cw + i) * eb, eb)); };
  c.p[0][1] = edgeFromOffset(c.p[0][0], c.p[0][2], hedge(sx, sy));
  c.p[2][1] = edgeFromOffset(c.p[2][0], c.p[2][2], hedge(sx, sy + 1));
  c.p[1][0] = edgeFromOffset(c.p[0][0], c.p[2][0], vedge(sx, sy));
  c.p[1][2] = edgeFromOffset(c.p[0][2], c.p[2][2], vedge(sx + 1, sy));
  c.p[1][1] = centreBase(c) + unzig(fieldAt(s, p.centreBit + (uint64_t(sy) * p.segX + sx) * zb, zb));
}

int bitLen(uint32_t v) { return v == 0 ? 0 : 32 - __builtin_clz(v); }
int span(int extent, int node) { return std::min(4, extent - node * 4); }

// Host transcription of cuda/decode_rbuc.cu's decodeRbucAreas (linear target) for one area.
void emulateRbucArea(const AreaDesc& ad, const PatchDesc& p, const uint32_t* s, Mode mode,
                     std::vector<uint16_t>& dst, std::vector<uint32_t>& flags) {
  const int x0 = ad.ax * 16, y0 = ad.ay * 16;
  const int aw = std::min(16, int(p.width) - x0), ah = std::min(16, int(p.height) - y0);
  const bool residuals = mode != Mode::L1;
  const bool predict = mode != Mode::Refine || ad.maskCode != 0;
  // The block's nodes: width and first bit (prefix sum of the node sizes).
  const int bx0 = (ad.ax / 2) * 32, by0 = (ad.ay / 2) * 32;
  const int bw = std::min(32, int(p.width) - bx0), bh = std::min(32, int(p.height) - by0);
  const int nodesX = (bw + 3) / 4, nodes = nodesX * ((bh + 3) / 4);
  uint32_t nodeBit[64] = {};
  int nodeWidth[64] = {};
  if (residuals) {
    const int widthBits = bitLen(fieldAt(s, ad.lowBit, 5));
    uint32_t bit = ad.lowBit + 5u + uint32_t(nodes * widthBits);
    for (int n = 0; n < nodes; ++n) {
      nodeWidth[n] = int(fieldAt(s, uint64_t(ad.lowBit) + 5 + uint64_t(n * widthBits), widthBits));
      nodeBit[n] = bit;
      bit += uint32_t(nodeWidth[n] * span(bw, n % nodesX) * span(bh, n / nodesX));
    }
  }
  for (int ly = 0; ly < ah; ++ly)
    for (int lx = 0; lx < aw; ++lx) {
      const int x = x0 + lx, y = y0 + ly;
      uint16_t& out = dst[p.dstOffset + uint64_t(y) * p.dstPitch + uint64_t(x)];
      if (mode == Mode::L1 && ad.maskCode == 1) {
        out = p.maskOut;
        continue;
      }
      int32_t v;
      if (predict) {
        const int i = std::min(x >> p.segLog, int(p.segX) - 1), j = std::min(y >> p.segLog, int(p.segY) - 1);
        hfpac::detail::SegmentControls c;
        loadSeg(p, s, i, j, c);
        v = hfpac::detail::evalSegment(c, x - (i << p.segLog), y - (j << p.segLog), p.segLog);
      } else {
        v = int32_t(out ^ p.flip);
      }
      if (residuals) {
        const int bx = x - bx0, by = y - by0, ni = bx / 4, nj = by / 4, n = nj * nodesX + ni;
        const int w = nodeWidth[n];
        const uint32_t local = uint32_t((by % 4) * span(bw, ni) + bx % 4);
        v += unzig(fieldAt(s, uint64_t(nodeBit[n]) + uint64_t(local) * uint32_t(w), w));
        if (v < 0 || v > 65535) {
          flags[ad.patch] |= kFlagOutOfRange;
          v = v < 0 ? 0 : 65535;
        }
      }
      if (ad.maskCode == 1 || (ad.maskCode == 2 && fieldAt(s, uint64_t(ad.maskBit) + uint64_t(ly * aw + lx), 1))) {
        out = p.maskOut;
        continue;
      }
      out = uint16_t(uint16_t(v) ^ p.flip);
    }
}

// Host transcription of cuda/decode.cu's decodeStrips (linear target): blocks of kStripRange
// AreaDescs, the chunks that start in each, the chunk's shared tables (low-field run,
// 16 x 144 corrections, mask slots), then the units: one column x `unitRows` rows each (4: the
// strip kernel; 16 or 8: decodeChunkColumns, a whole or half column, with a new column
// polynomial where the unit enters the next segment row). Also checks that the chunks cover
// every layered area exactly once.
void emulateStrips(const std::vector<PatchDesc>& patches, const std::vector<AreaDesc>& areas,
                   const std::vector<uint32_t>& words, Mode mode, std::vector<uint16_t>& dst,
                   std::vector<uint32_t>& flags, int unitRows) {
  constexpr int kRange = kStripMaxAreas, kCols = kStripMaxAreas * 16, kSlot = 10;
  const bool residuals = mode != Mode::L1, lows = mode == Mode::All || mode == Mode::Refine;
  std::vector<int> covered(areas.size(), 0);
  for (size_t first = 0; first < areas.size(); first += kRange)
    for (size_t i0 = first; i0 < std::min(areas.size(), first + kRange); ++i0) {
      const AreaDesc& a0 = areas[i0];
      const PatchDesc& p = patches[a0.patch];
      const int width = p.width, areasX = (width + 15) / 16;
      if (a0.ax % stripChunkAreas(areasX) != 0) continue;
      const int na = std::min(stripChunkAreas(areasX), areasX - int(a0.ax));
      ASSERT_LE(i0 + size_t(na), areas.size());
      for (int a = 0; a < na; ++a) {
        const AreaDesc& ad = areas[i0 + size_t(a)];
        ASSERT_TRUE(ad.patch == a0.patch && ad.ay == a0.ay && ad.ax == a0.ax + a) << "chunk at " << i0;
        ++covered[i0 + size_t(a)];
      }
      const uint32_t* s = words.data() + p.streamWord;
      const int x0 = a0.ax * 16, y0 = a0.ay * 16;
      const int cw = std::min(na * 16, width - x0), ah = std::min(16, int(p.height) - y0);
      const bool coded = p.kind == kKindCoded;
      std::vector<uint32_t> run(kCols * 16 * 16 / 32 + 3, 0xDEADBEEF), mask(size_t(na) * kSlot, 0xDEADBEEF);
      std::vector<int32_t> corr(16 * kCols, 0);
      std::vector<uint32_t> lowShift(size_t(na), 0);
      if (coded) {
        uint32_t lowEnd = a0.lowBit;
        for (int a = 0; a < na; ++a) {
          const AreaDesc& ad = areas[i0 + size_t(a)];
          const int aw = std::min(16, width - (x0 + a * 16));
          lowEnd = std::max(lowEnd, ad.lowBit + uint32_t(aw * ah * ad.bits));
          lowShift[size_t(a)] = ad.lowBit - (a0.lowBit & ~31u);
          if (residuals)
            for (uint32_t k = 0; k < ad.count; ++k) {
              const uint8_t pos = reinterpret_cast<const uint8_t*>(s)[ad.posByte + k];
              int64_t c = int64_t(unzig(fieldAt(s, uint64_t(ad.highBit) + uint64_t(k) * p.highBits, p.highBits) + 1u)) *
                          (int64_t(1) << ad.bits);
              c = std::clamp<int64_t>(c, -(1 << 18), 1 << 18);
              corr[size_t((pos >> 4) * kCols + a * 16 + (pos & 15))] = int32_t(c);
            }
          if (ad.maskCode == 2) {
            const uint32_t fw = ad.maskBit >> 5;
            const int count = int(((ad.maskBit + uint32_t(aw * ah) - 1u) >> 5) - fw + 1u);
            for (int w = 0; w < kSlot; ++w)
              if (w < count) mask[size_t(a * kSlot + w)] = s[fw + uint32_t(w)];
              else if (w == count) mask[size_t(a * kSlot + w)] = 0;
          }
        }
        const uint32_t n = lowEnd > a0.lowBit ? ((lowEnd - 1u) >> 5) - (a0.lowBit >> 5) + 1u : 0u;
        EXPECT_LE(n, uint32_t(kCols * 16 * 16 / 32 + 2));
        for (uint32_t w = 0; w < n; ++w) run[w] = s[(a0.lowBit >> 5) + w];
        run[n] = 0;
      }
      auto shared = [](const std::vector<uint32_t>& w, size_t at, uint32_t bit, int bits) {
        const uint64_t v = (uint64_t(w[at + (bit >> 5) + 1]) << 32) | w[at + (bit >> 5)];
        return uint32_t(v >> (bit & 31)) & ((1u << bits) - 1u);
      };
      const int units = cw * ((ah + unitRows - 1) / unitRows);
      for (int u = 0; u < units; ++u) {
        const int qr = u / cw, xc = u - qr * cw, a = xc >> 4, lx = xc & 15, ly0 = qr * unitRows;
        const int x = x0 + xc, yb = y0 + ly0, rows = std::min(unitRows, ah - ly0);
        const AreaDesc& ad = areas[i0 + size_t(a)];
        const int aw = std::min(16, width - (x0 + a * 16));
        int64_t sum = 0, step = 0, step2 = 0;
        // The column polynomial of the segment row j, entered at its row c; the 4-row units make
        // one per unit (never crossing a segment row), the column units one per segment run.
        const int i = std::min(x >> p.segLog, int(p.segX) - 1);
        int j = std::min(yb >> p.segLog, int(p.segY) - 1), c = yb - (j << p.segLog), runEnd = 0;
        for (int k = 0; k < rows; ++k, sum += step, step += step2) {
          if (k == runEnd && coded && mode != Mode::Refine) {
            runEnd = j < int(p.segY) - 1 ? std::min(rows, k + (1 << p.segLog) - c) : rows;
            if (unitRows == 4) {
              EXPECT_EQ(runEnd, rows) << "a 4-row unit crosses a segment row";
            }
            hfpac::detail::SegmentControls net;
            loadSeg(p, s, i, j, net);
            const ColumnPoly cp = columnPoly(net.p, x - (i << p.segLog), p.segLog);
            sum = polyAt(cp, c);
            step = polyStep(cp, c);
            step2 = 2 * cp.q;
            ++j;
            c = 0;
          }
          const int y = yb + k;
          uint16_t& out = dst[p.dstOffset + uint64_t(y) * p.dstPitch + uint64_t(x)];
          if (p.kind == kKindFlat) { out = uint16_t(p.base ^ p.flip); continue; }
          if (p.kind == kKindStored) {
            out = uint16_t(fieldAt(s, ad.lowBit + (uint64_t(y) * p.width + uint64_t(x)) * 16, 16) ^ p.flip);
            continue;
          }
          const int index = (ly0 + k) * aw + lx;
          if (ad.maskCode == 1 ||
              (ad.maskCode == 2 && shared(mask, size_t(a * kSlot), (ad.maskBit & 31u) + uint32_t(index), 1))) {
            out = p.maskOut;
            continue;
          }
          int32_t v = mode == Mode::Refine ? int32_t(out ^ p.flip) : predictionOf(sum, p.segLog);
          if (residuals && ad.count > 0) v += corr[size_t((ly0 + k) * kCols + xc)];
          if (lows && ad.bits > 0)
            v += int32_t(shared(run, 0, lowShift[size_t(a)] + uint32_t(index * ad.bits), ad.bits)) -
                 hfpac::detail::halfStep(ad.bits);
          if (v < 0 || v > 65535) {
            if (lows) flags[ad.patch] |= kFlagOutOfRange;
            v = v < 0 ? 0 : 65535;
          }
          out = uint16_t(uint16_t(v) ^ p.flip);
        }
      }
    }
  for (size_t i = 0; i < covered.size(); ++i) ASSERT_EQ(covered[i], 1) << "area " << i;
}

// Host transcription of the device half of a batch: the descriptors built from the blob's
// records and streams (desc_build.h sequentially, which must equal what the plan computed on
// the host, field by field), then decodeAreas (linear target) per area, per point; then the
// 2DRBUC areas (decodeRbucAreas), which come after the layered ones.
// The decode kernels (HFGPU_DECODE_KERNEL=area|strip|cols|cols8).
enum class Kernel { Area, Strip, Columns, HalfColumns };
void emulate(const hfgpu::DecodePlan& plan, const std::vector<uint8_t>& blob, Mode mode,
             std::vector<uint16_t>& dst, std::vector<uint32_t>& flags,
             Kernel kernel = Kernel::Area) {
  const bool strips = kernel != Kernel::Area;
  const size_t n = plan.patchCount();
  const size_t wordsOffset = (n * sizeof(TileRecord) + 15) / 16 * 16;
  ASSERT_LE(wordsOffset, blob.size());
  std::vector<TileRecord> records(n);
  if (n) std::memcpy(records.data(), blob.data(), n * sizeof(TileRecord));
  std::vector<uint32_t> words((blob.size() - wordsOffset) / 4 + 1, 0xDEADBEEF);
  std::memcpy(words.data(), blob.data() + wordsOffset, blob.size() - wordsOffset);
  uint64_t layered = 0, rbuc = 0;
  for (const TileRecord& r : records) (r.rbuc ? rbuc : layered) += r.areas;
  std::vector<PatchDesc> patches(n);
  std::vector<AreaDesc> areas(layered), rbucAreas(rbuc);
  for (size_t i = 0; i < n; ++i) {
    const TileRecord& r = records[i];
    ASSERT_LE(r.areaStart + uint64_t(r.areas), r.rbuc ? rbuc : layered);
    buildTileDescriptors(words.data(), r, uint32_t(i), &patches[i], (r.rbuc ? rbucAreas : areas).data() + r.areaStart);
  }
  const HostDescriptors host = hostDescriptors(plan);
  ASSERT_EQ(host.patches.size(), n);
  ASSERT_EQ(host.areas.size(), areas.size());
  ASSERT_EQ(host.rbucAreas.size(), rbucAreas.size());
  for (size_t i = 0; i < n; ++i)
    ASSERT_EQ(std::memcmp(&host.patches[i], &patches[i], sizeof(PatchDesc)), 0) << "PatchDesc " << i;
  for (size_t i = 0; i < areas.size(); ++i)
    ASSERT_EQ(std::memcmp(&host.areas[i], &areas[i], sizeof(AreaDesc)), 0)
        << "AreaDesc " << i << " of patch " << host.areas[i].patch << ": lowBit " << host.areas[i].lowBit << " vs "
        << areas[i].lowBit << ", highBit " << host.areas[i].highBit << " vs " << areas[i].highBit << ", posByte "
        << host.areas[i].posByte << " vs " << areas[i].posByte << ", maskBit " << host.areas[i].maskBit << " vs "
        << areas[i].maskBit;
  for (size_t i = 0; i < rbucAreas.size(); ++i)
    ASSERT_EQ(std::memcmp(&host.rbucAreas[i], &rbucAreas[i], sizeof(AreaDesc)), 0) << "2DRBUC AreaDesc " << i;
  flags.assign(n, 0);
  const bool residuals = mode != Mode::L1, lows = mode == Mode::All || mode == Mode::Refine;
  if (strips)
    emulateStrips(patches, areas, words, mode, dst, flags,
                  kernel == Kernel::Columns       ? 16
                  : kernel == Kernel::HalfColumns ? 8
                                                  : 4);
  for (const AreaDesc& ad : areas) {
    if (strips) break;  // the strip kernel decoded them
    const PatchDesc& p = patches[ad.patch];
    EXPECT_NE(p.kind, kKindRbuc);
    const uint32_t* s = words.data() + p.streamWord;
    const int x0 = ad.ax * 16, y0 = ad.ay * 16;
    const int aw = std::min(16, int(p.width) - x0), ah = std::min(16, int(p.height) - y0);
    int32_t corr[256] = {};
    if (residuals)
      for (int e = 0; e < ad.count; ++e) {
        const uint8_t pos = reinterpret_cast<const uint8_t*>(s)[ad.posByte + uint32_t(e)];
        int64_t c = int64_t(unzig(fieldAt(s, uint64_t(ad.highBit) + uint64_t(e) * p.highBits, p.highBits) + 1u)) *
                    (int64_t(1) << ad.bits);
        c = std::clamp<int64_t>(c, -(1 << 18), 1 << 18);
        corr[pos] = int32_t(c);
      }
    for (int ly = 0; ly < ah; ++ly)
      for (int lx = 0; lx < aw; ++lx) {
        const int x = x0 + lx, y = y0 + ly;
        uint16_t& out = dst[p.dstOffset + uint64_t(y) * p.dstPitch + uint64_t(x)];
        if (p.kind == kKindFlat) { out = uint16_t(p.base ^ p.flip); continue; }
        if (p.kind == kKindStored) {
          out = uint16_t(fieldAt(s, ad.lowBit + (uint64_t(y) * p.width + uint64_t(x)) * 16, 16) ^ p.flip);
          continue;
        }
        const int index = ly * aw + lx;
        if (ad.maskCode == 1 || (ad.maskCode == 2 && fieldAt(s, uint64_t(ad.maskBit) + uint64_t(index), 1))) {
          out = p.maskOut;
          continue;
        }
        int32_t v;
        if (mode == Mode::Refine) {
          v = int32_t(out ^ p.flip);
        } else {
          // As the kernel: the thread owning rows yb..yb+3 of this column picks the segment of
          // row yb and steps down with forward differences.
          const int yb = y0 + (ly & ~3);
          const int i = std::min(x >> p.segLog, int(p.segX) - 1), j = std::min(yb >> p.segLog, int(p.segY) - 1);
          hfpac::detail::SegmentControls c;
          loadSeg(p, s, i, j, c);
          const ColumnPoly cp = columnPoly(c.p, x - (i << p.segLog), p.segLog);
          const int c0 = yb - (j << p.segLog);
          int64_t sum = polyAt(cp, c0), step = polyStep(cp, c0);
          for (int k = 0; k < (ly & 3); ++k) {
            sum += step;
            step += 2 * cp.q;
          }
          v = predictionOf(sum, p.segLog);
        }
        if (residuals) v += corr[ly * 16 + lx];
        if (lows && ad.bits > 0)
          v += int32_t(fieldAt(s, uint64_t(ad.lowBit) + uint64_t(index) * ad.bits, ad.bits)) - hfpac::detail::halfStep(ad.bits);
        if (v < 0 || v > 65535) {
          if (lows) flags[ad.patch] |= kFlagOutOfRange;
          v = v < 0 ? 0 : 65535;
        }
        out = uint16_t(uint16_t(v) ^ p.flip);
      }
  }
  for (const AreaDesc& ad : rbucAreas) {
    const PatchDesc& p = patches[ad.patch];
    EXPECT_EQ(p.kind, kKindRbuc);
    emulateRbucArea(ad, p, words.data() + p.streamWord, mode, dst, flags);
  }
}

// The kernel's layer-1 arithmetic (gpu/decode_math.h: a quadratic in the row per column, walked
// with forward differences from a row that is a multiple of 4) equals layout.h's evalSegment for
// every segment size, column and row, with control points up to the format's bound of 2^23.
TEST(GpuDecodePlan, ColumnPolynomialMatchesEvalSegment) {
  hftest::Rng rng(7);
  for (int segLog = hfpac::detail::kMinSegLog; segLog <= hfpac::detail::kMaxSegLog; ++segLog) {
    const int n = 1 << segLog;
    for (int trial = 0; trial < 400; ++trial) {
      hfpac::detail::SegmentControls c;
      const int range = trial % 4;  // heights, wide offsets, the hostile bound, extremes
      for (auto& r : c.p)
        for (int32_t& v : r) {
          const uint32_t u = rng.u32();
          v = range == 0 ? int32_t(u % 65536u)
              : range == 1 ? int32_t(u % 393216u) - 131072
              : range == 2 ? int32_t(u % (1u << 24)) - (1 << 23) + 1
                           : ((u & 1) ? (1 << 23) - 1 : -(1 << 23) + 1);
        }
      for (int a = 0; a <= n; ++a)
        for (int c0 = 0; c0 <= n; c0 += 4) {
          const ColumnPoly cp = columnPoly(c.p, a, segLog);
          int64_t sum = polyAt(cp, c0), step = polyStep(cp, c0);
          for (int k = 0; k < 4 && c0 + k <= n; ++k) {
            ASSERT_EQ(predictionOf(sum, segLog), hfpac::detail::evalSegment(c, a, c0 + k, segLog))
                << "s=" << segLog << " a=" << a << " c=" << c0 + k;
            sum += step;
            step += 2 * cp.q;
          }
        }
    }
  }
}

TEST(GpuDecodePlan, HostEmulationMatchesCpuDecode) {
  using hfpac::SampleType;
  std::vector<std::vector<uint8_t>> streams;
  std::vector<std::pair<int, int>> dims;
  auto add = [&](const hftest::Patch& p, hfpac::EncodeOptions o) {
    streams.push_back(hftest::encodeOrDie(p, o));
    dims.emplace_back(p.width, p.height);
  };
  int k = 0;
  for (int seg : {5, 9, 17, 33, 0})
    for (int b : {-1, 0, 3, 16}) {
      const SampleType t = (k++ % 2) ? SampleType::Int16 : SampleType::UInt16;
      add(hftest::rampBumps(37 + k, 29 + 2 * k, t, uint64_t(k)), hftest::opts(seg, b));
    }
  add(hftest::noise(50, 33), hftest::opts(9, -1));
  add(hftest::constant(20, 20, 77), hftest::opts(9, -1));
  add(hftest::seaMountain(129, 129), hftest::opts(9, -1));
  add(hftest::cliffs(40, 40, SampleType::Int16), hftest::opts(5, -1));
  add(hftest::rampBumps(300, 37, SampleType::UInt16, 99), hftest::opts(5, -1));  // strips of 3 chunks
  add(hftest::extremes(33, 33), hftest::opts(9, 2));
  for (SampleType t : {SampleType::UInt16, SampleType::Int16}) {
    hfpac::EncodeOptions o = hftest::opts(9, -1);
    o.hasNodata = true;
    o.nodata = t == SampleType::Int16 ? uint16_t(0x8000) : uint16_t(0xFFFF);
    add(hftest::withHoles(129, 129, t), o);
    add(hftest::withHoles(50, 70, t, 4), o);
  }
  // 2DRBUC streams, mixed into the same batch: every segment size, signed, masked (codes and
  // bitmaps), partial blocks and nodes.
  k = 0;
  for (int seg : {5, 9, 17, 33, 0}) {
    const SampleType t = (k++ % 2) ? SampleType::Int16 : SampleType::UInt16;
    add(hftest::rampBumps(45 + 3 * k, 38 + k, t, uint64_t(100 + k)), hftest::rbucOpts(seg));
    add(hftest::smooth(1 + 13 * k, 70 - 9 * k, t, uint64_t(200 + k)), hftest::rbucOpts(seg));
  }
  add(hftest::seaMountain(129, 129, SampleType::Int16, 7), hftest::rbucOpts(9));
  add(hftest::extremes(45, 70, 8), hftest::rbucOpts(9));
  add(hftest::cliffs(65, 33), hftest::rbucOpts(5));
  add(hftest::negative(31, 47, 9), hftest::rbucOpts(17));
  for (SampleType t : {SampleType::UInt16, SampleType::Int16}) {
    hfpac::EncodeOptions o = hftest::rbucOpts(9);
    o.hasNodata = true;
    o.nodata = t == SampleType::Int16 ? uint16_t(0x8000) : uint16_t(0xFFFF);
    add(hftest::withHoles(129, 129, t), o);
    add(hftest::withHoles(97, 61, t, 4), o);
  }
  size_t rbucStreams = 0;
  for (const auto& st : streams) {
    hfpac::PatchInfo info;
    if (hfpac::readInfo(st.data(), st.size(), info) == Status::Ok && info.rbuc) ++rbucStreams;
  }
  EXPECT_GE(rbucStreams, 14u);
  streams.push_back({1, 2, 3});  // corrupt
  dims.emplace_back(0, 0);
  std::vector<hfgpu::PatchInput> in(streams.size());
  size_t at = 3;
  for (size_t i = 0; i < streams.size(); ++i) {
    in[i].data = streams[i].data();
    in[i].size = streams[i].size();
    in[i].dstOffset = at;
    in[i].dstPitch = size_t(dims[i].first) + 2;
    at += (size_t(dims[i].first) + 2) * size_t(dims[i].second) + 1;
  }
  hfgpu::DecodePlan plan;
  EXPECT_EQ(plan.build(in.data(), in.size()), streams.size() - 1);
  EXPECT_NE(plan.statuses().back(), Status::Ok);
  std::vector<uint8_t> blob(plan.blobBytes());
  plan.writeBlob(blob.data());
  for (Kernel kernel : {Kernel::Area, Kernel::Strip, Kernel::Columns, Kernel::HalfColumns})
    for (Mode mode : {Mode::L1, Mode::L12, Mode::All, Mode::Refine}) {
      SCOPED_TRACE(int(mode) + 10 * int(kernel));
      std::vector<uint16_t> dst(at, 0x1234);
      std::vector<uint32_t> flags;
      if (mode == Mode::Refine) emulate(plan, blob, Mode::L1, dst, flags, kernel);
      emulate(plan, blob, mode, dst, flags, kernel);
      const hfpac::Layers layers = mode == Mode::L1    ? hfpac::Layers::L1
                                   : mode == Mode::L12 ? hfpac::Layers::L12
                                                       : hfpac::Layers::All;
      for (size_t i = 0; i + 1 < streams.size(); ++i) {
        std::vector<uint16_t> cpu;
        ASSERT_EQ(hftest::decodeTo(streams[i], dims[i].first, dims[i].second, cpu, layers),
                  Status::Ok);
        EXPECT_EQ(flags[i], 0u);
        for (int y = 0; y < dims[i].second; ++y)
          for (int x = 0; x < dims[i].first; ++x)
            ASSERT_EQ(dst[in[i].dstOffset + size_t(y) * in[i].dstPitch + size_t(x)],
                      cpu[size_t(y) * size_t(dims[i].first) + size_t(x)])
                << "patch " << i << " at " << x << "," << y;
      }
    }
}

// Corrupt 2DRBUC streams (flipped bits and bytes, truncations) mixed with valid layered and
// 2DRBUC ones: validation status + emulated kernel flags = hfpac::decode's status at every
// mode, and every patch that decodes is bit-identical. Exercises the kernel's OutOfRange path
// (residuals pushed out of 0..65535, masked points included) without a device.
TEST(GpuDecodePlan, CorruptRbucStreamsGetCpuStatus) {
  using hfpac::SampleType;
  struct Item {
    std::vector<uint8_t> stream;
    int w = 0, h = 0;
  };
  std::vector<Item> base;
  auto add = [&](const hftest::Patch& p, hfpac::EncodeOptions o) {
    base.push_back({hftest::encodeOrDie(p, o), p.width, p.height});
  };
  // Terrain touching 0 and 65535: corrupt residuals there leave the range.
  add(hftest::smooth(70, 50, SampleType::UInt16, 9, 3000, 3000), hftest::rbucOpts(9));
  add(hftest::smooth(40, 70, SampleType::UInt16, 10, 62535, 3000), hftest::rbucOpts(5));
  add(hftest::rampBumps(70, 45, SampleType::UInt16, 3), hftest::rbucOpts(5));
  hfpac::EncodeOptions o = hftest::rbucOpts(9);
  o.hasNodata = true;
  o.nodata = 0x8000;
  add(hftest::withHoles(64, 64, SampleType::Int16, 12), o);
  add(hftest::seaMountain(64, 64, SampleType::Int16, 5), hftest::rbucOpts(17));
  add(hftest::rampBumps(33, 20, SampleType::Int16, 4), hftest::opts(5, 4));  // layered
  std::vector<Item> items;
  hftest::Rng rng(7);
  for (const Item& b : base) {
    items.push_back(b);
    for (size_t cut : {size_t(0), size_t(40), b.stream.size() / 2, b.stream.size() - 4}) {
      Item t = b;
      t.stream.resize(cut);
      items.push_back(t);
    }
    for (int k = 0; k < 80; ++k) {
      Item t = b;
      // Mostly in sections B and D (the block index, widths and residuals), some anywhere.
      const uint32_t from = k % 4 == 0 ? 0u : uint32_t(t.stream.size() / 3);
      const size_t at = from + rng.below(uint32_t(t.stream.size()) - from);
      t.stream[at] = uint8_t(t.stream[at] ^ (1u << rng.below(8)));
      if (k % 3 == 0) t.stream[from + rng.below(uint32_t(t.stream.size()) - from)] = uint8_t(rng.u32());
      hfpac::PatchInfo info;
      if (hfpac::readInfo(t.stream.data(), t.stream.size(), info) == Status::Ok) {
        t.w = info.width;
        t.h = info.height;
      }
      items.push_back(t);
    }
  }
  std::vector<hfgpu::PatchInput> in(items.size());
  size_t at = 1;
  for (size_t i = 0; i < items.size(); ++i) {
    in[i].data = items[i].stream.data();
    in[i].size = items[i].stream.size();
    in[i].dstOffset = at;
    in[i].dstPitch = size_t(std::max(items[i].w, 1));
    at += in[i].dstPitch * size_t(std::max(items[i].h, 1)) + 1;
  }
  hfgpu::DecodePlan plan;
  plan.build(in.data(), in.size());
  std::vector<uint8_t> blob(plan.blobBytes());
  plan.writeBlob(blob.data());
  size_t outOfRange = 0, rejected = 0, decoded = 0;
  for (Mode mode : {Mode::L1, Mode::L12, Mode::All, Mode::Refine}) {
    SCOPED_TRACE(int(mode));
    std::vector<uint16_t> dst(at, 0x1234);
    std::vector<uint32_t> flags;
    if (mode == Mode::Refine) emulate(plan, blob, Mode::L1, dst, flags);
    emulate(plan, blob, mode, dst, flags);
    const std::vector<Status> st = hfgpu::mergeStatuses(plan.statuses(), flags.data());
    const hfpac::Layers layers = mode == Mode::L1 ? hfpac::Layers::L1 : mode == Mode::L12 ? hfpac::Layers::L12 : hfpac::Layers::All;
    for (size_t i = 0; i < items.size(); ++i) {
      std::vector<uint16_t> cpu(size_t(std::max(items[i].w, 1)) * size_t(std::max(items[i].h, 1)));
      const Status want = hfpac::decode(items[i].stream.data(), items[i].stream.size(), cpu.data(),
                                        size_t(std::max(items[i].w, 1)), cpu.size(), layers);
      ASSERT_EQ(hftest::statusName(st[i]), hftest::statusName(want)) << "item " << i;
      hfpac::PatchInfo info;
      outOfRange += want == Status::OutOfRange &&
                    hfpac::readInfo(items[i].stream.data(), items[i].stream.size(), info) == Status::Ok && info.rbuc;
      rejected += want != Status::Ok;
      if (want != Status::Ok) continue;
      ++decoded;
      for (int y = 0; y < items[i].h; ++y)
        for (int x = 0; x < items[i].w; ++x)
          ASSERT_EQ(dst[in[i].dstOffset + size_t(y) * in[i].dstPitch + size_t(x)], cpu[size_t(y) * size_t(items[i].w) + size_t(x)])
              << "item " << i << " at " << x << "," << y;
    }
  }
  EXPECT_GT(outOfRange, 0u);  // the test reaches the 2DRBUC kernel's range check
  EXPECT_GT(rejected, outOfRange);
  EXPECT_GT(decoded, 0u);
}

// Streams validated ahead (validateStream, a loader thread's job) give the batch build() gives:
// the same statuses, infos and blob byte for byte; a destination that cannot take the patch is
// still refused at build time, and a stream that failed validation keeps its status.
TEST(GpuDecodePlan, ValidatedStreamsGiveTheSameBlob) {
  using hfpac::SampleType;
  std::vector<std::vector<uint8_t>> streams;
  streams.push_back(hftest::encodeOrDie(hftest::rampBumps(129, 129, SampleType::Int16, 3), hftest::opts(9, -1)));
  streams.push_back(hftest::encodeOrDie(hftest::noise(50, 33), hftest::opts(5, 4)));
  streams.push_back(hftest::encodeOrDie(hftest::constant(20, 20, 77), hftest::opts(9, -1)));
  streams.push_back(hftest::encodeOrDie(hftest::extremes(33, 33), hftest::opts(9, 2)));
  streams.push_back(hftest::encodeOrDie(hftest::seaMountain(129, 129, SampleType::Int16, 7), hftest::rbucOpts(9)));
  hfpac::EncodeOptions masked = hftest::opts(9, -1);
  masked.hasNodata = true;
  masked.nodata = 0xFFFF;
  streams.push_back(hftest::encodeOrDie(hftest::withHoles(50, 70, SampleType::UInt16, 4), masked));
  std::vector<uint8_t> truncated = streams[0];
  truncated.resize(truncated.size() / 2);
  streams.push_back(truncated);
  streams.push_back(streams[1]);  // given a destination it does not fit below
  std::vector<hfgpu::PatchInput> in(streams.size());
  std::vector<hfgpu::ValidatedStream> checked(streams.size());
  for (size_t i = 0; i < streams.size(); ++i) {
    in[i].data = streams[i].data();
    in[i].size = streams[i].size();
    in[i].surface = uint32_t(i);
    in[i].x = int(3 * i);
    in[i].y = int(5 * i);
    checked[i] = hfgpu::validateStream(streams[i].data(), streams[i].size());
    EXPECT_EQ(checked[i].status == Status::Ok, streams[i].size() != truncated.size()) << i;
  }
  in.back().x = -1;
  hfgpu::DecodePlan a, b;
  EXPECT_EQ(a.build(in.data(), in.size()), streams.size() - 2);
  EXPECT_EQ(b.buildValidated(in.data(), checked.data(), in.size()), streams.size() - 2);
  ASSERT_EQ(a.statuses().size(), b.statuses().size());
  for (size_t i = 0; i < streams.size(); ++i) {
    EXPECT_EQ(hftest::statusName(a.statuses()[i]), hftest::statusName(b.statuses()[i])) << i;
    EXPECT_TRUE(a.infos()[i].width == b.infos()[i].width && a.infos()[i].rbuc == b.infos()[i].rbuc) << i;
  }
  EXPECT_EQ(a.areaCount(), b.areaCount());
  EXPECT_EQ(a.points(), b.points());
  EXPECT_EQ(a.streamBytes(), b.streamBytes());
  ASSERT_EQ(a.blobBytes(), b.blobBytes());
  std::vector<uint8_t> blobA(a.blobBytes(), 0xAB), blobB(b.blobBytes(), 0xCD);
  a.writeBlob(blobA.data());
  b.writeBlob(blobB.data());
  EXPECT_TRUE(blobA == blobB);
  // A validation that does not belong to the bytes given (shorter buffer) is refused, not trusted.
  in[0].size = 40;
  b.buildValidated(in.data(), checked.data(), 1);
  EXPECT_TRUE(b.statuses()[0] == Status::InvalidArgument);
}

}  // namespace
