// roundtrip.h - the checks every encoded patch must pass (gtest assertions; include from tests).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "codec/hfpac.h"
#include "test_util.h"

namespace hftest {

inline bool allEqual(const Patch& p) {
  for (int y = 0; y < p.height; ++y)
    for (int x = 0; x < p.width; ++x)
      if (p.at(x, y) != p.at(0, 0)) return false;
  return true;
}

// Largest |decoded - original| in heights (signed domain for Int16).
inline int32_t maxAbsError(const Patch& p, const std::vector<uint16_t>& decoded, size_t stride) {
  int32_t worst = 0;
  for (int y = 0; y < p.height; ++y)
    for (int x = 0; x < p.width; ++x) {
      const int32_t d = p.toHeight(decoded[size_t(y) * stride + size_t(x)]) - p.height_at(x, y);
      worst = std::max(worst, std::abs(d));
    }
  return worst;
}

inline void expectSameInfo(const hfpac::PatchInfo& a, const hfpac::PatchInfo& b) {
  EXPECT_EQ(a.width, b.width);
  EXPECT_EQ(a.height, b.height);
  EXPECT_EQ(a.type, b.type);
  EXPECT_EQ(a.flat, b.flat);
  EXPECT_EQ(a.stored, b.stored);
  EXPECT_EQ(a.masked, b.masked);
  EXPECT_EQ(a.rbuc, b.rbuc);
  EXPECT_EQ(a.maskValue, b.maskValue);
  EXPECT_EQ(a.perAreaBits, b.perAreaBits);
  EXPECT_EQ(a.segment, b.segment);
  EXPECT_EQ(a.uniformBits, b.uniformBits);
  EXPECT_EQ(a.layer1Bytes, b.layer1Bytes);
  EXPECT_EQ(a.layer2Bytes, b.layer2Bytes);
  EXPECT_EQ(a.layer3Bytes, b.layer3Bytes);
  EXPECT_EQ(a.streamBytes, b.streamBytes);
}

struct RoundTrip {
  std::vector<uint8_t> stream;
  hfpac::PatchInfo info;
  hfpac::EncodeStats stats;
  int maxBits = 0;  // the largest b any point was coded with (from the stats histogram)
};

// Encodes p with o and checks everything the header promises about the stream and its decode:
// status, size bounds, header fields, stats, lossless decode at All (into a padded and into an
// exactly sized buffer, without touching anything outside the patch), the layer-1+2 error bound,
// and that a too-small buffer is refused. Use ASSERT_NO_FATAL_FAILURE(verifyRoundTrip(...)).
inline void verifyRoundTrip(const Patch& p, const hfpac::EncodeOptions& o, RoundTrip* result = nullptr) {
  SCOPED_TRACE(p.name + " " + std::to_string(p.width) + "x" + std::to_string(p.height) +
               (p.type == hfpac::SampleType::Int16 ? " int16 " : " uint16 ") + "stride " +
               std::to_string(p.stride) + " " + optionsName(o));
  RoundTrip rt;
  hfpac::Status s = hfpac::Status::Ok;
  rt.stream = encodeOrDie(p, o, &s, &rt.stats);
  ASSERT_EQ(s, hfpac::Status::Ok) << statusName(s);
  const std::vector<uint8_t>& st = rt.stream;

  // Size contract.
  ASSERT_GE(st.size(), size_t(hfpac::kHeaderBytes));
  EXPECT_EQ(st.size() % 4, 0u);
  EXPECT_LE(st.size(), hfpac::maxEncodedSize(p.width, p.height));

  // Header.
  hfpac::PatchInfo& info = rt.info;
  ASSERT_EQ(hfpac::readInfo(st.data(), st.size(), info), hfpac::Status::Ok);
  EXPECT_EQ(info.width, p.width);
  EXPECT_EQ(info.height, p.height);
  EXPECT_EQ(info.type, p.type);
  EXPECT_EQ(info.streamBytes, st.size());
  EXPECT_EQ(uint64_t(info.layer1Bytes) + info.layer2Bytes + info.layer3Bytes, uint64_t(info.streamBytes));
  EXPECT_GE(info.layer1Bytes, uint32_t(hfpac::kHeaderBytes));
  EXPECT_EQ(info.layer1Bytes % 4, 0u);
  EXPECT_EQ(info.layer2Bytes % 4, 0u);
  EXPECT_EQ(info.layer3Bytes % 4, 0u);
  const bool flat = allEqual(p);
  EXPECT_EQ(info.flat, flat);
  if (flat) {
    EXPECT_EQ(st.size(), size_t(hfpac::kHeaderBytes)) << "a flat patch is just the header";
    EXPECT_EQ(info.segment, 0);
    EXPECT_FALSE(info.stored);
    EXPECT_FALSE(info.masked);
  } else if (info.stored) {
    // docs/format.md 2.3: samples kept as 16-bit fields; only chosen with automatic b.
    EXPECT_TRUE(o.bits < 0 || o.rbuc) << "a stored stream for a fixed b";
    EXPECT_EQ(info.segment, 0);
    EXPECT_FALSE(info.perAreaBits);
    EXPECT_FALSE(info.masked);
    EXPECT_EQ(info.uniformBits, hfpac::kMaxBits);
    EXPECT_EQ(info.layer1Bytes, uint32_t(hfpac::kHeaderBytes));
    EXPECT_EQ(info.layer2Bytes, 0u);
    EXPECT_EQ(uint64_t(info.layer3Bytes), 4 * ((uint64_t(p.width) * uint64_t(p.height) + 1) / 2));
  } else {
    if (o.segment != 0) {
      EXPECT_EQ(info.segment, o.segment);
    } else {
      EXPECT_TRUE(info.segment == 5 || info.segment == 9 || info.segment == 17 || info.segment == 33)
          << info.segment;
    }
    if (o.bits >= 0 && !o.rbuc) {
      EXPECT_FALSE(info.perAreaBits);
      EXPECT_EQ(info.uniformBits, o.bits);
    }
    EXPECT_EQ(info.rbuc, o.rbuc) << "2DRBUC exactly when asked for (patches this small)";
    if (info.rbuc) {
      EXPECT_FALSE(info.perAreaBits);
      EXPECT_EQ(info.uniformBits, 0);
    }
    if (!info.perAreaBits) {
      EXPECT_GE(info.uniformBits, 0);
      EXPECT_LE(info.uniformBits, hfpac::kMaxBits);
    }
  }
  if (!info.masked) {
    EXPECT_EQ(info.maskValue, 0);
  }
  if (info.masked) {
    // The mask value is one of the patch's samples (bit pattern as in the input).
    bool found = false;
    for (int y = 0; y < p.height && !found; ++y)
      for (int x = 0; x < p.width && !found; ++x) found = p.at(x, y) == info.maskValue;
    EXPECT_TRUE(found) << "mask value " << info.maskValue << " is not in the patch";
  }
  // With automatic b no stream is larger than the stored form (docs/format.md 1, 2.3).
  if (o.bits < 0) {
    EXPECT_LE(st.size(), size_t(hfpac::kHeaderBytes) + 4 * ((size_t(p.width) * size_t(p.height) + 1) / 2));
  }
  // readInfo accepts a longer buffer and still reports the stream's own size.
  {
    std::vector<uint8_t> longer = st;
    longer.resize(st.size() + 12, 0xEE);
    hfpac::PatchInfo li;
    EXPECT_EQ(hfpac::readInfo(longer.data(), longer.size(), li), hfpac::Status::Ok);
    EXPECT_EQ(li.streamBytes, st.size());
  }

  // Stats.
  expectSameInfo(rt.stats.info, info);
  uint64_t histSum = 0;
  for (int b = 0; b <= hfpac::kMaxBits; ++b) {
    histSum += rt.stats.bitsHistogram[b];
    if (rt.stats.bitsHistogram[b]) rt.maxBits = b;
  }
  EXPECT_EQ(histSum, uint64_t(p.width) * uint64_t(p.height));
  EXPECT_LE(rt.stats.prominentPoints, uint32_t(p.width * p.height));
  if (flat) {
    EXPECT_EQ(rt.stats.prominentPoints, 0u);
    EXPECT_EQ(rt.stats.bitsHistogram[0], uint32_t(p.width * p.height));
  } else {
    if (o.bits >= 0 && !info.rbuc && !info.stored) {
      EXPECT_EQ(rt.stats.bitsHistogram[o.bits], uint32_t(p.width * p.height));
    }
    if (!info.perAreaBits && !info.rbuc) {
      EXPECT_EQ(rt.maxBits, info.uniformBits);
    }
  }

  // Lossless decode into a padded buffer; the padding must stay untouched.
  const size_t w = size_t(p.width), h = size_t(p.height);
  {
    const size_t stride = w + 5;
    const size_t cap = (h - 1) * stride + w;
    std::vector<uint16_t> dst(cap + 7, 0xA5A5);
    s = hfpac::decode(st.data(), st.size(), dst.data(), stride, cap, hfpac::Layers::All);
    ASSERT_EQ(s, hfpac::Status::Ok) << statusName(s);
    size_t bad = 0;
    for (size_t y = 0; y < h; ++y)
      for (size_t x = 0; x < stride && y * stride + x < dst.size(); ++x) {
        const uint16_t got = dst[y * stride + x];
        if (x < w) {
          if (got != p.at(int(x), int(y)) && bad++ < 5)
            ADD_FAILURE() << "lossless mismatch at (" << x << "," << y << "): got " << got << " want "
                          << p.at(int(x), int(y));
        } else if (got != 0xA5A5 && bad++ < 5) {
          ADD_FAILURE() << "decode wrote outside the patch at row " << y << " col " << x;
        }
      }
    for (size_t i = cap; i < dst.size(); ++i) EXPECT_EQ(dst[i], 0xA5A5) << "wrote past dstCapacity";
    ASSERT_EQ(bad, 0u);
  }
  // Exactly sized buffer at stride = width; one sample less is refused.
  std::vector<uint16_t> out;
  ASSERT_EQ(decodeTo(st, p.width, p.height, out), hfpac::Status::Ok);
  ASSERT_EQ(maxAbsError(p, out, w), 0);
  EXPECT_EQ(hfpac::decode(st.data(), st.size(), out.data(), w, out.size() - 1, hfpac::Layers::All),
            hfpac::Status::InvalidArgument);
  if (w > 1) {
    EXPECT_EQ(hfpac::decode(st.data(), st.size(), out.data(), w - 1, out.size(), hfpac::Layers::All),
              hfpac::Status::InvalidArgument)
        << "dstStride < width";
  }

  // Layers 1+2: within 2^(b-1) of the original (b = the largest b used; lossless for b = 0).
  ASSERT_EQ(decodeTo(st, p.width, p.height, out, hfpac::Layers::L12), hfpac::Status::Ok);
  // 2DRBUC streams have no layer 2 to stop at: their L12 is the lossless decode.
  const int32_t bound = info.rbuc ? 0 : (rt.maxBits > 0 ? (int32_t(1) << (rt.maxBits - 1)) : 0);
  EXPECT_LE(maxAbsError(p, out, w), bound) << "layers 1+2 with b <= " << rt.maxBits;
  // Layer 1 decodes; a flat patch is exact even there.
  if (info.stored) {
    EXPECT_EQ(maxAbsError(p, out, w), 0) << "stored: every layer is exact";
  }
  ASSERT_EQ(decodeTo(st, p.width, p.height, out, hfpac::Layers::L1), hfpac::Status::Ok);
  if (flat || info.stored) {
    EXPECT_EQ(maxAbsError(p, out, w), 0) << "flat / stored: layer 1 is exact";
  }
  if (info.masked) {
    // A masked point decodes exactly at every layer.
    size_t bad = 0;
    for (size_t y = 0; y < h; ++y)
      for (size_t x = 0; x < w; ++x)
        if (p.at(int(x), int(y)) == info.maskValue && out[y * w + x] != info.maskValue && bad++ < 3)
          ADD_FAILURE() << "masked point (" << x << "," << y << ") decodes to " << out[y * w + x] << " at layer 1";
    EXPECT_EQ(bad, 0u);
  }

  if (result) *result = std::move(rt);
}

}  // namespace hftest
