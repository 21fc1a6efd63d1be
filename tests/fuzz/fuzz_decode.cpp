// fuzz_decode.cpp - libFuzzer target for the HFPaC CPU codec.
//
// Two modes, chosen by the input:
// - Input starting with the stream magic "HFPC": it is a stream. readInfo, decode at all three
//   layers (buffers sized from the header; patches over kMaxSamples are skipped), PatchView::open and sample
//   points; where decode and the view both accept, they must agree (else abort).
// - Anything else: a patch description. Bytes 0..5 pick width, height, type, segment, bits,
//   masking and how samples are formed; the rest become the samples. The patch is encoded,
//   decoded, and must round-trip exactly (and within 2^(b-1) at layers 1+2 for a fixed b);
//   any failure aborts. The raw input is also handed to the decoders (BadMagic path).
//
// Build: configure with -DHF_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++; run e.g.
//   ./tests/fuzz/fuzz_decode -max_total_time=60 -max_len=4096 corpus/ ../tests/fuzz/seeds/
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "codec/hfpac.h"

namespace {

constexpr size_t kMaxSamples = size_t(1) << 18;  // 512 x 512: keeps executions fast

[[noreturn]] void fail(const char* what, int a = 0, int b = 0, int c = 0) {
  std::fprintf(stderr, "fuzz_decode: %s (%d, %d, %d)\n", what, a, b, c);
  std::abort();
}

void check(bool ok, const char* what, int a = 0, int b = 0, int c = 0) {
  if (!ok) fail(what, a, b, c);
}

// Every decoder entry point on untrusted bytes; crashes, sanitizer reports and disagreements
// between decode() and PatchView are the findings.
void fuzzDecoders(const uint8_t* data, size_t size) {
  hfpac::PatchInfo info;
  const hfpac::Status is = hfpac::readInfo(data, size, info);
  if (is != hfpac::Status::Ok) {
    uint16_t dst[16];
    check(hfpac::decode(data, size, dst, 4, 16) != hfpac::Status::Ok, "decode accepts what readInfo refuses");
    hfpac::PatchView v;
    check(hfpac::PatchView::open(data, size, v) != hfpac::Status::Ok, "open accepts what readInfo refuses");
    return;
  }
  check(info.width >= 1 && info.width <= hfpac::kMaxPatchSide && info.height >= 1 &&
            info.height <= hfpac::kMaxPatchSide,
        "readInfo: size out of range", info.width, info.height);
  check(info.streamBytes <= size, "readInfo: streamBytes > size");
  check(uint64_t(info.layer1Bytes) + info.layer2Bytes + info.layer3Bytes == info.streamBytes,
        "readInfo: layer sizes do not add up");

  const size_t w = size_t(info.width), h = size_t(info.height);
  const hfpac::Layers layers[3] = {hfpac::Layers::L1, hfpac::Layers::L12, hfpac::Layers::All};
  std::vector<uint16_t> out[3];
  hfpac::Status ds[3] = {hfpac::Status::InvalidArgument, hfpac::Status::InvalidArgument,
                         hfpac::Status::InvalidArgument};
  const bool decodable = w * h <= kMaxSamples;
  if (decodable) {
    for (int i = 0; i < 3; ++i) {
      out[i].resize(w * h);
      ds[i] = hfpac::decode(data, size, out[i].data(), w, out[i].size(), layers[i]);
    }
  }

  hfpac::PatchView view;
  const hfpac::Status vs = hfpac::PatchView::open(data, size, view);
  if (decodable && ds[2] == hfpac::Status::Ok) check(vs == hfpac::Status::Ok, "decode Ok but open fails", int(vs));
  if (vs != hfpac::Status::Ok) return;
  // A handful of points: the corners, the centre and a few spread by the stream's own bytes.
  int pts[8][2] = {{0, 0},
                   {info.width - 1, 0},
                   {0, info.height - 1},
                   {info.width - 1, info.height - 1},
                   {info.width / 2, info.height / 2},
                   {0, 0},
                   {0, 0},
                   {0, 0}};
  for (int k = 5; k < 8; ++k) {
    const uint32_t r = size >= 4 ? uint32_t(data[(size_t(k) * 7) % size]) * 131u + uint32_t(data[size - 1]) : 0;
    pts[k][0] = int(r % uint32_t(info.width));
    pts[k][1] = int((r / 7) % uint32_t(info.height));
  }
  for (int i = 0; i < 3; ++i)
    for (auto& p : pts) {
      const uint16_t v = view.sample(p[0], p[1], layers[i]);
      if (decodable && ds[i] == hfpac::Status::Ok)
        check(v == out[i][size_t(p[1]) * w + size_t(p[0])], "PatchView::sample != decode", p[0], p[1], i + 1);
    }
  uint16_t v = 0;
  check(hfpac::decodePoint(data, size, info.width - 1, info.height - 1, v) == hfpac::Status::Ok,
        "decodePoint fails where open succeeds");
}

// Encode-then-decode of a patch described by the input.
void fuzzRoundTrip(const uint8_t* data, size_t size) {
  if (size < 6) return;
  const int w = 1 + data[0] % 64;
  const int h = 1 + data[1] % 64;
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
  for (hfpac::Layers layers : {hfpac::Layers::L1, hfpac::Layers::L12, hfpac::Layers::All}) {
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
  // The stream is also a decoder input (exercises the same checks as the decode mode).
  fuzzDecoders(exact.data(), exact.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Copy to a heap buffer of exactly `size` bytes (libFuzzer's own is too, but be explicit).
  std::vector<uint8_t> in(data, data + size);
  const uint8_t* p = in.empty() ? nullptr : in.data();
  const bool isStream = size >= 4 && std::memcmp(data, "HFPC", 4) == 0;
  if (isStream) {
    fuzzDecoders(p, size);
  } else {
    fuzzDecoders(p, size);  // cheap: refused at the magic
    fuzzRoundTrip(p, size);
  }
  return 0;
}
