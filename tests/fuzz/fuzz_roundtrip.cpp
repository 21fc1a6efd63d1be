// fuzz_roundtrip.cpp - libFuzzer target for the HFPaC encoder: encode-then-decode of a patch
// described by the input.
//
// Bytes 0..5 pick width, height, type, segment, bits, masking and how samples are formed; the
// rest become the samples. The patch is encoded, decoded at one layer count (picked from its
// shape) and read back through PatchView; it must round-trip exactly (and within 2^(b-1) at
// layers 1+2 for a fixed b), else abort. Hostile streams are fuzz_decode.cpp's job.
//
// Build: configure with -DHF_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++; run e.g.
//   ./tests/fuzz/fuzz_roundtrip -max_total_time=60 corpus/ ../tests/fuzz/seeds/fuzz_roundtrip
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "codec/hfpac.h"

namespace {

[[noreturn]] void fail(const char* what, int a = 0, int b = 0, int c = 0) {
  std::fprintf(stderr, "fuzz_roundtrip: %s (%d, %d, %d)\n", what, a, b, c);
  std::abort();
}

void check(bool ok, const char* what, int a = 0, int b = 0, int c = 0) {
  if (!ok) fail(what, a, b, c);
}

// Encode-then-decode of a patch described by the input.
void fuzzRoundTrip(const uint8_t* data, size_t size) {
  if (size < 6) return;
  // Sides up to 40: a 33-sample segment and a partial second one fit (and 5, 9, 17-sample
  // segments several times over), and the cost per input, which grows with the points, stays low.
  const int w = 1 + data[0] % 40;
  const int h = 1 + data[1] % 40;
  const uint8_t cfg = data[2];
  const hfpac::SampleType type = (cfg & 1) ? hfpac::SampleType::Int16 : hfpac::SampleType::UInt16;
  static const int kSegments[5] = {0, 5, 9, 17, 33};
  hfpac::EncodeOptions o;
  o.segment = kSegments[(cfg >> 1) % 5];
  o.bits = int(data[3] % 18) - 1;  // -1 .. 16
  o.autoMask = (cfg & 0x10) != 0;
  o.hasNodata = (cfg & 0x20) != 0;
  o.rbuc = (data[3] & 0x80) != 0;  // the top bit of the bits byte (bits uses % 18)
  const int sampleMode = (cfg >> 6) & 3;  // 0 raw 16-bit, 1 deltas (smooth), 2 8-bit, 3 few values
  o.nodata = uint16_t(data[4] | (data[5] << 8));
  const uint8_t* s = data + 6;
  const size_t n = size - 6;

  const size_t stride = size_t(w) + (data[4] & 3);
  std::vector<uint16_t> samples(stride * size_t(h), 0x5A5A);
  int32_t acc = int32_t(data[5]) << 8;
  size_t k = 0;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      uint16_t v = 0;
      const uint8_t b0 = n ? s[k % n] : 0, b1 = n ? s[(k + 1) % n] : 0;
      switch (sampleMode) {
        case 0: v = uint16_t(b0 | (b1 << 8)); k += 2; break;
        case 1: acc += int8_t(b0); v = uint16_t(acc); k += 1; break;
        case 2: v = b0; k += 1; break;
        default: v = (b0 & 3) == 0 ? o.nodata : uint16_t(b0 >> 2); k += 1; break;
      }
      samples[size_t(y) * stride + size_t(x)] = v;
    }

  std::vector<uint8_t> stream;
  hfpac::EncodeStats stats;
  const hfpac::Status es = hfpac::encode(samples.data(), stride, w, h, type, o, stream, &stats);
  check(es == hfpac::Status::Ok, "encode failed", int(es), w, h);
  check(stream.size() % 4 == 0 && stream.size() <= hfpac::maxEncodedSize(w, h), "stream size", int(stream.size()));
  hfpac::PatchInfo info;
  check(hfpac::readInfo(stream.data(), stream.size(), info) == hfpac::Status::Ok, "readInfo of own stream");
  check(info.width == w && info.height == h && info.type == type, "readInfo fields");
  // Copy into an exactly sized buffer so reads past the end are caught.
  const std::vector<uint8_t> exact(stream.begin(), stream.end());

  std::vector<uint16_t> out(size_t(w) * size_t(h));
  // One decode per input, its layers picked from the shape: every layer count is met across
  // inputs, and the input is not decoded three times over (the target's cost is per point).
  static const hfpac::Layers kLayers[3] = {hfpac::Layers::L1, hfpac::Layers::L12, hfpac::Layers::All};
  for (hfpac::Layers layers : {kLayers[size_t(w * 7 + h) % 3]}) {
    const hfpac::Status ds = hfpac::decode(exact.data(), exact.size(), out.data(), size_t(w), out.size(), layers);
    check(ds == hfpac::Status::Ok, "decode of own stream", int(ds), int(layers));
    int maxBits = 0;
    for (int b = 0; b <= hfpac::kMaxBits; ++b)
      if (stats.bitsHistogram[b]) maxBits = b;
    const int32_t bound = layers == hfpac::Layers::All ? 0 : (maxBits > 0 ? (int32_t(1) << (maxBits - 1)) : 0);
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        const uint16_t a = out[size_t(y) * size_t(w) + size_t(x)], b = samples[size_t(y) * stride + size_t(x)];
        const int32_t ha = type == hfpac::SampleType::Int16 ? int32_t(int16_t(a)) : int32_t(a);
        const int32_t hb = type == hfpac::SampleType::Int16 ? int32_t(int16_t(b)) : int32_t(b);
        if (layers != hfpac::Layers::L1) check(std::abs(ha - hb) <= bound, "round trip error", x, y, int(layers));
      }
  }
  hfpac::PatchView view;
  check(hfpac::PatchView::open(exact.data(), exact.size(), view) == hfpac::Status::Ok, "open own stream");
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      check(view.sample(x, y) == samples[size_t(y) * stride + size_t(x)], "PatchView::sample not lossless", x, y);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzzRoundTrip(data, size);
  return 0;
}
