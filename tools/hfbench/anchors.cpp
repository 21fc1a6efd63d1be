// anchors.cpp - zstd and LERC reference measurements (anchors.h).
#include "anchors.h"

#include <algorithm>
#include <memory>

#include <Lerc_c_api.h>
#include <zstd.h>

#include "timer.h"

namespace hfbench {

namespace {

// ---- zstd with a horizontal-difference predictor ----

// Row-wise differences, wrap-around uint16. kSplit: all high bytes, then all low bytes;
// otherwise little-endian pairs. The first sample of a row is predicted from 0, i.e. kept.
template <bool kSplit>
void predictRows(const uint16_t* src, int width, int height, uint8_t* out) {
  const size_t n = static_cast<size_t>(width) * height;
  for (int y = 0; y < height; ++y) {
    const size_t row = static_cast<size_t>(y) * width;
    uint16_t prev = 0;
    for (int x = 0; x < width; ++x) {
      const size_t i = row + x;
      const uint16_t v = src[i];
      const uint16_t d = static_cast<uint16_t>(v - prev);
      prev = v;
      if (kSplit) {
        out[i] = static_cast<uint8_t>(d >> 8);
        out[n + i] = static_cast<uint8_t>(d & 0xff);
      } else {
        out[2 * i] = static_cast<uint8_t>(d & 0xff);
        out[2 * i + 1] = static_cast<uint8_t>(d >> 8);
      }
    }
  }
}

template <bool kSplit>
void unpredictRows(const uint8_t* in, int width, int height, uint16_t* dst) {
  const size_t n = static_cast<size_t>(width) * height;
  for (int y = 0; y < height; ++y) {
    const size_t row = static_cast<size_t>(y) * width;
    uint16_t prev = 0;
    for (int x = 0; x < width; ++x) {
      const size_t i = row + x;
      const uint16_t d = kSplit ? static_cast<uint16_t>((in[i] << 8) | in[n + i])
                                : static_cast<uint16_t>(in[2 * i] | (in[2 * i + 1] << 8));
      prev = static_cast<uint16_t>(prev + d);
      dst[i] = prev;
    }
  }
}

void predict(bool split, const uint16_t* src, int width, int height, uint8_t* out) {
  if (split)
    predictRows<true>(src, width, height, out);
  else
    predictRows<false>(src, width, height, out);
}

void unpredict(bool split, const uint8_t* in, int width, int height, uint16_t* dst) {
  if (split)
    unpredictRows<true>(in, width, height, dst);
  else
    unpredictRows<false>(in, width, height, dst);
}

struct CCtxFree {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};
struct DCtxFree {
  void operator()(ZSTD_DCtx* c) const { ZSTD_freeDCtx(c); }
};

}  // namespace

AnchorResult benchZstd(const PatchSet& set, int level, std::vector<uint16_t>& decoded, DecodeRounds& rounds) {
  AnchorResult result;
  const size_t count = set.rects.size();
  std::unique_ptr<ZSTD_CCtx, CCtxFree> cctx(ZSTD_createCCtx());
  std::shared_ptr<ZSTD_DCtx> dctx(ZSTD_createDCtx(), DCtxFree());
  if (!cctx || !dctx) {
    result.error = "zstd: cannot create a context";
    return result;
  }
  std::vector<uint8_t> scratch(2 * set.maxPatchPoints());
  std::vector<uint8_t> trial(ZSTD_compressBound(scratch.size()));

  // Byte split or not: try both on up to 16 evenly spread patches, keep the smaller.
  const size_t samples = std::min<size_t>(16, count);
  uint64_t trial_bytes[2] = {0, 0};
  for (int split = 0; split < 2; ++split) {
    for (size_t k = 0; k < samples; ++k) {
      const PatchRect& r = set.rects[k * count / samples];
      predict(split != 0, set.packed.data() + r.offset, r.width, r.height, scratch.data());
      const size_t size = ZSTD_compressCCtx(cctx.get(), trial.data(), trial.size(),
                                            scratch.data(), 2 * r.points(), level);
      if (ZSTD_isError(size)) {
        result.error = std::string("zstd: ") + ZSTD_getErrorName(size);
        return result;
      }
      trial_bytes[split] += size;
    }
  }
  const bool split = trial_bytes[1] < trial_bytes[0];
  result.method = std::string("row delta (uint16 wrap-around)") +
                  (split ? " + high/low byte planes" : ", little-endian") + ", zstd level " +
                  std::to_string(level) + ", one frame per patch";
  result.detail = "byte split chosen on " + std::to_string(samples) +
                  " sample patches: interleaved " + std::to_string(trial_bytes[0]) +
                  " B, split " + std::to_string(trial_bytes[1]) + " B";

  auto streamsOwner = std::make_shared<std::vector<std::vector<uint8_t>>>(count);
  std::vector<std::vector<uint8_t>>& streams = *streamsOwner;
  for (size_t i = 0; i < count; ++i)
    streams[i].resize(ZSTD_compressBound(2 * set.rects[i].points()));

  Stopwatch encode_watch;
  for (size_t i = 0; i < count; ++i) {
    const PatchRect& r = set.rects[i];
    predict(split, set.packed.data() + r.offset, r.width, r.height, scratch.data());
    const size_t size = ZSTD_compressCCtx(cctx.get(), streams[i].data(), streams[i].size(),
                                          scratch.data(), 2 * r.points(), level);
    if (ZSTD_isError(size)) {
      result.error = std::string("zstd: ") + ZSTD_getErrorName(size);
      return result;
    }
    streams[i].resize(size);  // shrinking: no reallocation
  }
  result.encodeSeconds = encode_watch.seconds();
  for (const auto& s : streams) result.compressedBytes += s.size();

  decoded.assign(set.points(), 0);
  auto scratchOwner = std::make_shared<std::vector<uint8_t>>(std::move(scratch));
  auto error = std::make_shared<std::string>();
  const DecodeRounds::Decode decode = [&set, &decoded, dctx, streamsOwner, scratchOwner, split, error] {
    std::vector<uint8_t>& out = *scratchOwner;
    for (size_t i = 0; i < set.rects.size(); ++i) {
      const PatchRect& r = set.rects[i];
      const std::vector<uint8_t>& in = (*streamsOwner)[i];
      const size_t got = ZSTD_decompressDCtx(dctx.get(), out.data(), out.size(), in.data(), in.size());
      if (ZSTD_isError(got) || got != 2 * r.points()) {
        *error = std::string("zstd decode failed on patch ") + std::to_string(i) + ": " +
                 (ZSTD_isError(got) ? ZSTD_getErrorName(got) : "wrong size");
        return false;
      }
      unpredict(split, out.data(), r.width, r.height, decoded.data() + r.offset);
    }
    return true;
  };
  if (!decode()) {
    result.error = *error;
    return result;
  }
  result.lossless = comparePatches(set, decoded.data(), result.mismatch);
  result.decodeRound = rounds.add(decode);
  result.ok = true;
  return result;
}

AnchorResult benchLerc(const PatchSet& set, std::vector<uint16_t>& decoded, DecodeRounds& rounds) {
  AnchorResult result;
  const size_t count = set.rects.size();
  // Lerc_types.h: short = 2, unsigned short = 3.
  const unsigned int data_type = set.type == hfpac::SampleType::Int16 ? 2u : 3u;
  constexpr double kMaxZErr = 0.5;
  constexpr lerc_status kBufferTooSmall = 3;
  result.method = std::string("lerc_encode (LERC ") + lercVersion() + " C API), " +
                  (data_type == 2 ? "short" : "unsigned short") +
                  ", maxZErr 0.5, no mask, one blob per patch";

  auto streamsOwner = std::make_shared<std::vector<std::vector<uint8_t>>>(count);
  std::vector<std::vector<uint8_t>>& streams = *streamsOwner;
  for (size_t i = 0; i < count; ++i) streams[i].resize(2 * set.rects[i].points() + 4096);

  Stopwatch encode_watch;
  for (size_t i = 0; i < count; ++i) {
    const PatchRect& r = set.rects[i];
    const void* src = set.packed.data() + r.offset;
    unsigned int written = 0;
    lerc_status st = lerc_encode(src, data_type, 1, r.width, r.height, 1, 0, nullptr, kMaxZErr,
                                 streams[i].data(), static_cast<unsigned int>(streams[i].size()),
                                 &written);
    if (st == kBufferTooSmall) {  // not expected; size it exactly and retry
      unsigned int need = 0;
      st = lerc_computeCompressedSize(src, data_type, 1, r.width, r.height, 1, 0, nullptr,
                                      kMaxZErr, &need);
      if (st == 0) {
        streams[i].resize(need);
        st = lerc_encode(src, data_type, 1, r.width, r.height, 1, 0, nullptr, kMaxZErr,
                         streams[i].data(), need, &written);
      }
    }
    if (st != 0) {
      result.error = "lerc_encode failed on patch " + std::to_string(i) + " (status " +
                     std::to_string(st) + ")";
      return result;
    }
    streams[i].resize(written);
  }
  result.encodeSeconds = encode_watch.seconds();
  for (const auto& s : streams) result.compressedBytes += s.size();

  decoded.assign(set.points(), 0);
  auto error = std::make_shared<std::string>();
  const DecodeRounds::Decode decode = [&set, &decoded, streamsOwner, data_type, error] {
    for (size_t i = 0; i < set.rects.size(); ++i) {
      const PatchRect& r = set.rects[i];
      const std::vector<uint8_t>& in = (*streamsOwner)[i];
      const lerc_status st = lerc_decode(in.data(), static_cast<unsigned int>(in.size()), 0, nullptr, 1, r.width,
                                         r.height, 1, data_type, decoded.data() + r.offset);
      if (st != 0) {
        *error = "lerc_decode failed on patch " + std::to_string(i) + " (status " + std::to_string(st) + ")";
        return false;
      }
    }
    return true;
  };
  if (!decode()) {
    result.error = *error;
    return result;
  }
  result.lossless = comparePatches(set, decoded.data(), result.mismatch);
  result.decodeRound = rounds.add(decode);
  result.ok = true;
  return result;
}

std::string zstdVersion() { return ZSTD_versionString(); }

std::string lercVersion() {
  return std::to_string(LERC_VERSION_MAJOR) + "." + std::to_string(LERC_VERSION_MINOR) + "." +
         std::to_string(LERC_VERSION_PATCH);
}

}  // namespace hfbench
