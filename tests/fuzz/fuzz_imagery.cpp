// fuzz_imagery.cpp - libFuzzer target for the imagery codec (src/imagery/imagery.h): the JPEG
// tile decoder and the BC1 encoder / decoder on untrusted bytes.
//
// Byte 0 picks the mode, byte 1 the tile size (16 << (b & 3) % 3) and JPEG quality (1 + b % 100):
// - mode 0: a tile is built from the input (bytes 2.. repeated as RGB, with some texels
//   transparent), encoded (encodeJpegTile), then corrupted at the positions the input's tail
//   names; the decoder must never crash, and must decode the uncorrupted stream exactly to the
//   encoded coverage. The spliced stream must be well formed (completeJpegStream).
// - mode 1: bytes 2.. are an abbreviated tile stream handed straight to the decoder.
// - mode 2: bytes 2.. are BC1 blocks (decoded) and RGBA blocks (encoded in both modes): the
//   punch-through rule must hold (alpha < 128 texels decode transparent, the others opaque).
// Build: -DHF_FUZZ=ON with clang; run e.g. ./tests/fuzz/fuzz_imagery -max_total_time=60 corpus/
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "imagery/imagery.h"

namespace {

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_imagery: %s\n", what);
  std::abort();
}

void encodeCorruptDecode(const uint8_t* data, size_t size, int tile, int quality) {
  std::vector<uint8_t> rgba(size_t(tile) * size_t(tile) * 4);
  const size_t body = size > 2 ? (size - 2) / 2 + 1 : 1;  // the first half paints the tile
  for (size_t i = 0; i < size_t(tile) * size_t(tile); ++i) {
    for (size_t c = 0; c < 3; ++c) rgba[i * 4 + c] = size > 2 ? data[2 + (i * 3 + c) % body] : uint8_t(i);
    rgba[i * 4 + 3] = size > 2 && (data[2 + i % body] & 0x81) == 0x81 ? 0 : 255;
  }
  std::vector<uint8_t> stream, tables = himg::makeJpegTables(quality), full;
  std::string error;
  if (!himg::encodeJpegTile(rgba.data(), tile, quality, stream, error)) fail("encode failed");
  if (!himg::completeJpegStream(tables.data(), tables.size(), stream.data(), stream.size(), full, error))
    fail("splice failed");
  himg::JpegTileDecoder decoder;
  if (!decoder.setTables(tables.data(), tables.size(), error)) fail("tables refused");
  std::vector<uint8_t> out(rgba.size());
  if (!decoder.decode(stream.data(), stream.size(), tile, out.data(), error)) fail("clean stream refused");
  for (size_t i = 3; i < out.size(); i += 4)
    if ((out[i] == 0) != (rgba[i] == 0)) fail("coverage differs");
  // Corrupt: pairs (position, xor) from the second half of the input; truncate by the last byte.
  std::vector<uint8_t> bad = stream;
  for (size_t k = 2 + body; k + 1 < size; k += 2) bad[data[k] * 131u % bad.size()] ^= uint8_t(data[k + 1] | 1);
  if (size > 3 && (data[size - 1] & 7) == 0) bad.resize(data[size - 2] * 17u % bad.size());
  decoder.decode(bad.data(), bad.size(), tile, out.data(), error);  // any result, no crash
}

// At most kBc1Blocks blocks of each kind per input: the encoder's cluster fit is the costliest
// step of this target, and more blocks per input only repeat it (libFuzzer explores by inputs).
constexpr size_t kBc1Blocks = 2;

void bc1(const uint8_t* data, size_t size) {
  uint8_t rgba[64], out[64], block[8];
  for (size_t k = 0; k + 8 <= size && k < 8 * kBc1Blocks; k += 8) himg::decodeBc1Block(data + k, out);
  for (size_t k = 0; (k + 64 <= size || (k == 0 && size > 0)) && k < 64 * kBc1Blocks; k += 64) {
    for (size_t i = 0; i < 64; ++i) rgba[i] = data[(k + i) % size];
    for (himg::Bc1Mode mode : {himg::Bc1Mode::Fast, himg::Bc1Mode::Quality}) {
      himg::encodeBc1Block(rgba, mode, block);
      himg::decodeBc1Block(block, out);
      for (int t = 0; t < 16; ++t)
        if ((rgba[t * 4 + 3] < 128) != (out[t * 4 + 3] == 0)) fail("punch-through alpha broken");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const int tile = 16 << ((data[1] & 3) % 3);  // 16, 32, 64 (bigger tiles only repeat the loops)
  const int quality = 1 + data[1] % 100;
  switch (data[0] % 3) {
    case 0:
      encodeCorruptDecode(data, size, tile, quality);
      break;
    case 1: {
      std::vector<uint8_t> tables = himg::makeJpegTables(quality), out(size_t(tile) * size_t(tile) * 4);
      std::string error;
      himg::JpegTileDecoder decoder;
      if (!decoder.setTables(tables.data(), tables.size(), error)) fail("tables refused");
      decoder.decode(data + 2, size - 2, tile, out.data(), error);
      decoder.setTables(data + 2, size - 2, error);  // hostile tables too
      break;
    }
    default:
      bc1(data + 2, size - 2);
  }
  return 0;
}
