// fuzz_decode.cpp - libFuzzer target for the HFPaC CPU decoders on untrusted bytes.
//
// The input is a tile stream (seeds start with the magic "HFPC", or "HFAN" for the entropy-coded
// patches of codec/ans.h, decoded whole): readInfo, decode at all three
// layers (buffers sized from the header; patches over kMaxSamples are skipped), PatchView::open
// and sample points, decodePoint. Crashes, sanitizer reports and disagreements between decode()
// and PatchView are the findings (abort). The encoder's round trip is fuzz_roundtrip.cpp.
//
// Build: configure with -DHF_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++; run e.g.
//   ./tests/fuzz/fuzz_decode -max_total_time=60 -max_len=4096 corpus/ ../tests/fuzz/seeds/fuzz_decode
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "codec/ans.h"
#include "codec/hfpac.h"

namespace {

// Whole-patch decodes up to 257 x 257 (hfpack's default tile is 129 x 129); bigger ones are still
// parsed, opened and sampled point by point. Keeps an execution within a millisecond or so.
constexpr size_t kMaxSamples = size_t(257) * 257;

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

// The entropy-coded streams (codec/ans.h): header checks, and a whole decode into an exactly
// sized buffer when the header is valid (patches over kMaxSamples skipped).
void fuzzAns(const uint8_t* data, size_t size) {
  hfpac::AnsInfo info;
  if (hfpac::ansReadInfo(data, size, info) != hfpac::Status::Ok) {
    uint16_t dst[4];
    check(hfpac::ansDecode(data, size, dst, 2, 4) != hfpac::Status::Ok, "ansDecode accepts what ansReadInfo refuses");
    return;
  }
  check(info.streamBytes <= size && info.width >= 1 && info.height >= 1, "ansReadInfo fields");
  const size_t n = size_t(info.width) * size_t(info.height);
  if (n > kMaxSamples) return;
  std::vector<uint16_t> out(n);
  hfpac::ansDecode(data, size, out.data(), size_t(info.width), n);  // any status, no crash
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Copy to a heap buffer of exactly `size` bytes, so that any read past the end is reported.
  std::vector<uint8_t> in(data, data + size);
  const uint8_t* p = in.empty() ? nullptr : in.data();
  if (hfpac::isAnsStream(p, size)) {
    fuzzAns(p, size);
  } else {
    fuzzDecoders(p, size);
  }
  return 0;
}
