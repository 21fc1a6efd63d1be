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

// Host transcription of decodeAreas (linear target): per area, per point.
void emulate(const std::vector<uint8_t>& blob, Mode mode, std::vector<uint16_t>& dst, std::vector<uint32_t>& flags) {
  BatchHeader bh;
  std::memcpy(&bh, blob.data(), sizeof(bh));
  std::vector<PatchDesc> patches(bh.patches);
  std::vector<AreaDesc> areas(bh.areas);
  if (bh.patches) std::memcpy(patches.data(), blob.data() + bh.patchOffset, bh.patches * sizeof(PatchDesc));
  if (bh.areas) std::memcpy(areas.data(), blob.data() + bh.areaOffset, bh.areas * sizeof(AreaDesc));
  std::vector<uint32_t> words(bh.wordsBytes / 4 + 1, 0xDEADBEEF);
  std::memcpy(words.data(), blob.data() + bh.wordsOffset, bh.wordsBytes);
  flags.assign(bh.patches, 0);
  const bool residuals = mode != Mode::L1, lows = mode == Mode::All || mode == Mode::Refine;
  for (const AreaDesc& ad : areas) {
    const PatchDesc& p = patches[ad.patch];
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
          const int i = std::min(x >> p.segLog, int(p.segX) - 1), j = std::min(y >> p.segLog, int(p.segY) - 1);
          hfpac::detail::SegmentControls c;
          loadSeg(p, s, i, j, c);
          v = hfpac::detail::evalSegment(c, x - (i << p.segLog), y - (j << p.segLog), p.segLog);
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
  add(hftest::extremes(33, 33), hftest::opts(9, 2));
  for (SampleType t : {SampleType::UInt16, SampleType::Int16}) {
    hfpac::EncodeOptions o = hftest::opts(9, -1);
    o.hasNodata = true;
    o.nodata = t == SampleType::Int16 ? uint16_t(0x8000) : uint16_t(0xFFFF);
    add(hftest::withHoles(129, 129, t), o);
    add(hftest::withHoles(50, 70, t, 4), o);
  }
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
  for (Mode mode : {Mode::L1, Mode::L12, Mode::All, Mode::Refine}) {
    SCOPED_TRACE(int(mode));
    std::vector<uint16_t> dst(at, 0x1234);
    std::vector<uint32_t> flags;
    if (mode == Mode::Refine) emulate(blob, Mode::L1, dst, flags);
    emulate(blob, mode, dst, flags);
    const hfpac::Layers layers = mode == Mode::L1 ? hfpac::Layers::L1 : mode == Mode::L12 ? hfpac::Layers::L12 : hfpac::Layers::All;
    for (size_t i = 0; i + 1 < streams.size(); ++i) {
      std::vector<uint16_t> cpu;
      ASSERT_EQ(hftest::decodeTo(streams[i], dims[i].first, dims[i].second, cpu, layers), Status::Ok);
      EXPECT_EQ(flags[i], 0u);
      for (int y = 0; y < dims[i].second; ++y)
        for (int x = 0; x < dims[i].first; ++x)
          ASSERT_EQ(dst[in[i].dstOffset + size_t(y) * in[i].dstPitch + size_t(x)], cpu[size_t(y) * size_t(dims[i].first) + size_t(x)])
              << "patch " << i << " at " << x << "," << y;
    }
  }
}

}  // namespace
