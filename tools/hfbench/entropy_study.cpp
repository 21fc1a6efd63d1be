// entropy_study.cpp - see entropy_study.h.
#include "entropy_study.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <exception>

#include "anchors.h"
#include "codec/bitpack.h"
#include "codec/hfpac.h"
#include "json.h"
#include "patches.h"
#include "timer.h"

namespace hfbench {
namespace {

// Residual tokens (JPEG XL's "hybrid uint" with 2 mantissa bits in the token): z < 16 is its own
// token; a larger z is the token 16 + 4 (bitLength - 5) + the two bits under its top bit,
// followed by bitLength - 3 raw bits.
constexpr int kDirectSymbols = 16;
constexpr int kSymbols = kDirectSymbols + 14 * 4;  // bit lengths 5..18
constexpr double kTableBitsPerSymbol = 12;

using hfpac::detail::bitLength;
using hfpac::detail::zigzag;


// Cost of one patch's residuals under the model of entropy_study.h, in bytes: one order-0
// model per context (contexts = 1: plain order-0).
class ResidualCost {
 public:
  explicit ResidualCost(int contexts = 1) : counts_(size_t(contexts)), n_(size_t(contexts)) {}
  void add(int32_t v, int context = 0) {
    const uint32_t z = zigzag(v);
    auto& counts = counts_[size_t(context)];
    if (z < uint32_t(kDirectSymbols)) {
      ++counts[z];
    } else {
      const int len = bitLength(z);
      ++counts[size_t(kDirectSymbols + (len - 5) * 4 + int((z >> (len - 3)) & 3u))];
      rawBits_ += len - 3;
    }
    ++n_[size_t(context)];
  }
  double bytes() const {
    double bits = rawBits_;
    for (size_t k = 0; k < counts_.size(); ++k)
      for (uint64_t c : counts_[k])
        if (c) bits += -double(c) * std::log2(double(c) / double(n_[k])) + kTableBitsPerSymbol;
    return bits / 8;
  }

 private:
  std::vector<std::array<uint64_t, kSymbols>> counts_;
  std::vector<uint64_t> n_;
  double rawBits_ = 0;
};

// The context of a residual from its left neighbour's: 0 for |r| = 0, 1 up to 2, 2 up to 8,
// 3 beyond (LOCO-I's idea: the local activity predicts the spread).
constexpr int kActivityContexts = 4;
int activity(int32_t leftResidual) {
  const uint32_t z = zigzag(leftResidual);
  return z == 0 ? 0 : z <= 4 ? 1 : z <= 16 ? 2 : 3;
}

// Order-1 cost of a patch's mask (context: the left neighbour's bit), in bytes; 0 when the
// patch is all masked or all unmasked (one flag, counted nowhere: the header has room).
double maskBytes(const std::vector<uint8_t>& masked, int w, int h) {
  uint64_t c[2][2] = {};
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const int ctx = x > 0 ? masked[size_t(y) * w + x - 1] : (y > 0 ? masked[size_t(y - 1) * w] : 0);
      ++c[ctx][masked[size_t(y) * w + x]];
    }
  if ((c[0][1] + c[1][1]) == 0 || (c[0][0] + c[1][0]) == 0) return 0;
  double bits = 0;
  for (auto& row : c) {
    const double n = double(row[0] + row[1]);
    for (uint64_t k : row)
      if (k) bits += -double(k) * std::log2(double(k) / n);
  }
  return bits / 8;
}

}  // namespace

EntropyStudyResult runEntropyStudy(const std::string& path, const EntropyStudyOptions& options,
                                   const std::function<void(const std::string&)>& log) {
  EntropyStudyResult r;
  r.input = path;
  auto say = [&](const char* stage) {
    if (log) log(stage);
  };
  try {
    Stopwatch total;
    say("read");
    demio::Dem dem;
    if (!demio::readDem(path, dem, r.error, options.read)) return r;
    r.width = dem.width;
    r.height = dem.height;
    PatchSet set = cutPatches(dem.samples.data(), dem.width, dem.height, options.patch, dem.type);
    r.patches = set.rects.size();
    r.points = set.points();
    r.rawBytes = 2 * r.points;

    say("zstd");
    {
      std::vector<uint16_t> decoded;
      DecodeRounds untimed;  // the study reads sizes only
      const AnchorResult z = benchZstd(set, options.zstdLevel, decoded, untimed);
      if (!z.ok) {
        r.error = "zstd: " + z.error;
        return r;
      }
      r.zstdBytes = z.compressedBytes;
    }

    say("hfpac + residuals");
    hfpac::EncodeOptions o;
    if (dem.nodataInSamples) {
      o.hasNodata = true;
      o.nodata = dem.nodataSample;
    }
    const bool isSigned = dem.type == hfpac::SampleType::Int16;
    auto value = [&](uint16_t u) { return isSigned ? int32_t(int16_t(u)) : int32_t(u); };
    std::vector<uint8_t> stream, masked;
    std::vector<uint16_t> layer1;
    std::vector<int32_t> context, surface;
    for (const PatchRect& rect : set.rects) {
      const int w = rect.width, h = rect.height;
      const uint16_t* s = set.packed.data() + rect.offset;
      if (hfpac::encode(s, size_t(w), w, h, dem.type, o, stream) != hfpac::Status::Ok) {
        r.error = "hfpac encode failed";
        return r;
      }
      hfpac::PatchInfo info;
      hfpac::readInfo(stream.data(), stream.size(), info);
      r.hfpacBytes += stream.size();
      const size_t n = size_t(w) * size_t(h);
      layer1.resize(n);
      if (hfpac::decode(stream.data(), stream.size(), layer1.data(), size_t(w), n, hfpac::Layers::L1) !=
          hfpac::Status::Ok) {
        r.error = "hfpac decode failed";
        return r;
      }
      // Masked points, and the context the predictors read: a masked sample reads as the last
      // unmasked one before it in raster order (0 before the first).
      masked.assign(n, 0);
      context.resize(n);
      surface.resize(n);
      int32_t last = 0, lastSurface = 0;
      for (size_t i = 0; i < n; ++i) {
        masked[i] = o.hasNodata && s[i] == o.nodata;
        if (!masked[i]) {
          last = value(s[i]);
          lastSurface = value(layer1[i]);
        }
        context[i] = last;
        surface[i] = masked[i] ? lastSurface : value(layer1[i]);
      }
      const double mask = maskBytes(masked, w, h);
      r.maskBytes += mask;
      const double l1 = info.flat || info.stored ? double(hfpac::kHeaderBytes) : double(info.layer1Bytes);
      r.layer1Bytes += uint64_t(l1);
      ResidualCost bezier, bezierDx, dx, med, dxContext(kActivityContexts);
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
          const size_t i = size_t(y) * size_t(w) + size_t(x);
          if (masked[i]) continue;
          const int32_t v = context[i], res = v - surface[i];
          const int32_t a = x > 0 ? context[i - 1] : (y > 0 ? context[i - size_t(w)] : 0);
          const int32_t b = y > 0 ? context[i - size_t(w)] : a;
          const int32_t c = x > 0 && y > 0 ? context[i - size_t(w) - 1] : a;
          const int32_t leftRes = x > 0 ? context[i - 1] - surface[i - 1] : 0;
          bezier.add(res);
          bezierDx.add(res - leftRes);
          dx.add(v - a);
          const int32_t leftDx = x > 1 ? context[i - 1] - context[i - 2] : 0;
          dxContext.add(v - a, activity(leftDx));
          const int32_t pred = c >= std::max(a, b) ? std::min(a, b) : (c <= std::min(a, b) ? std::max(a, b) : a + b - c);
          med.add(v - pred);
        }
      const double candidates[4] = {double(stream.size()), l1 + bezier.bytes() + mask,
                                    l1 + bezierDx.bytes() + mask, dx.bytes() + mask};
      r.dxContextBytes += dxContext.bytes() + mask;
      r.bezierBytes += candidates[1];
      r.bezierDxBytes += candidates[2];
      r.dxBytes += candidates[3];
      r.medBytes += med.bytes() + mask;
      const int best = int(std::min_element(candidates, candidates + 4) - candidates);
      r.bestBytes += candidates[best];
      ++r.bestPatches[best];
    }
    r.totalSeconds = total.seconds();
    r.ok = true;
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  return r;
}

std::string entropyStudyJson(const std::string& command, const std::vector<EntropyStudyResult>& results) {
  std::string out;
  JsonWriter j(out);
  j.beginObject();
  j.field("command", command);
  j.field("model", "order-0 per patch: z < 16 direct, else bit length + 2 mantissa bits, raw rest; 12-bit table "
                   "entries; mask: order-1 bits (entropy_study.h)");
  j.key("results").beginArray();
  for (const EntropyStudyResult& r : results) {
    j.beginObject();
    j.field("input", r.input);
    j.field("ok", r.ok);
    if (!r.ok) {
      j.field("error", r.error);
      j.endObject();
      continue;
    }
    const double raw = double(r.rawBytes);
    auto ratio = [&](double bytes) { return bytes > 0 ? raw / bytes : 0.0; };
    j.field("width", r.width).field("height", r.height).field("patches", r.patches).field("points", r.points);
    j.field("raw_bytes", r.rawBytes).field("hfpac_bytes", r.hfpacBytes).field("zstd_bytes", r.zstdBytes);
    j.field("layer1_bytes", r.layer1Bytes).field("mask_bytes", r.maskBytes);
    j.field("ratio_hfpac", ratio(double(r.hfpacBytes))).field("ratio_zstd", ratio(double(r.zstdBytes)));
    j.field("ratio_bezier", ratio(r.bezierBytes)).field("ratio_bezier_dx", ratio(r.bezierDxBytes));
    j.field("ratio_dx", ratio(r.dxBytes)).field("ratio_dx_context", ratio(r.dxContextBytes)).field("ratio_med", ratio(r.medBytes)).field("ratio_best", ratio(r.bestBytes));
    j.key("best_patches").beginObject();
    j.field("hfpac", r.bestPatches[0]).field("bezier", r.bestPatches[1]).field("bezier_dx", r.bestPatches[2]);
    j.field("dx", r.bestPatches[3]);
    j.endObject();
    j.endObject();
  }
  j.endArray();
  j.endObject();
  return out;
}

}  // namespace hfbench
