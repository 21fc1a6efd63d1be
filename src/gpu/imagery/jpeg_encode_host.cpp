// jpeg_encode_host.cpp - the host side of the CUDA JPEG encoder: coding tables, stream assembly
// (headers and the coverage segment) and a CPU model of the kernels (declared in
// cuda/imagery/jpeg_encode_core.cuh).
//
// Byte identity with himg::encodeJpegTile (libjpeg-turbo): the tables are read back from the
// archive's own tables stream (himg::makeJpegTables), the per-block arithmetic is the core's
// replica of libjpeg's integer steps, and the markers below are those libjpeg writes for the
// tile format's parameters (no JFIF, no Adobe marker, tables suppressed): SOI, [APP9], SOF0,
// DRI, SOS, data, EOI. The CPU test checks all of it byte for byte against encodeJpegTile.
#include <zlib.h>

#include <cstring>
#include <vector>

#include "imagery/imagery.h"
#include "imagery/jpeg_encode_core.cuh"

namespace hfjenc {

namespace {

constexpr char kCoverageTag[] = "HFCOV";  // + its '\0': 6 bytes
constexpr size_t kCoverageTagBytes = sizeof kCoverageTag;

// Canonical Huffman codes from a DHT's counts and symbols (JPEG Annex C; libjpeg's
// jpeg_make_c_derived_tbl).
bool deriveCodes(const uint8_t counts[16], const uint8_t* symbols, size_t nsymbols, uint32_t* table,
                 size_t tableSize) {
  uint32_t code = 0;
  size_t k = 0;
  for (int len = 1; len <= 16; ++len) {
    for (int i = 0; i < counts[len - 1]; ++i, ++k) {
      if (k >= nsymbols || symbols[k] >= tableSize) return false;
      table[symbols[k]] = uint32_t(len) << 16 | code;
      ++code;
    }
    code <<= 1;
  }
  return true;
}

void put16(std::vector<uint8_t>& out, size_t v) {
  out.push_back(uint8_t(v >> 8));
  out.push_back(uint8_t(v & 0xff));
}

}  // namespace

bool makeTables(int quality, Tables& t) {
  std::memset(&t, 0, sizeof t);
  const std::vector<uint8_t> s = himg::makeJpegTables(quality);
  if (s.size() < 4 || s[0] != 0xff || s[1] != 0xd8) return false;
  int have = 0;  // bits: DQT 0, 1; DHT DC 0, 1, AC 0, 1
  size_t p = 2;
  while (p + 4 <= s.size()) {
    if (s[p] != 0xff) return false;
    const uint8_t marker = s[p + 1];
    if (marker == 0xd9) break;
    const size_t len = size_t(s[p + 2]) << 8 | s[p + 3];
    const size_t end = p + 2 + len;
    if (len < 2 || end > s.size()) return false;
    size_t q = p + 4;
    if (marker == 0xdb) {  // DQT: Pq/Tq, 64 entries in zig-zag order
      while (q < end) {
        const int pq = s[q] >> 4, tq = s[q] & 15;
        const size_t n = pq ? 128 : 64;
        if (tq > 1 || q + 1 + n > end) return false;
        for (int k = 0; k < 64; ++k)
          t.quant[tq][kZigzagToNatural[k]] =
              pq ? uint16_t(s[q + 1 + 2 * size_t(k)] << 8 | s[q + 2 + 2 * size_t(k)]) : s[q + 1 + size_t(k)];
        have |= 1 << tq;
        q += 1 + n;
      }
    } else if (marker == 0xc4) {  // DHT: Tc/Th, 16 counts, symbols
      while (q < end) {
        const int tc = s[q] >> 4, th = s[q] & 15;
        if (tc > 1 || th > 1 || q + 17 > end) return false;
        const uint8_t* counts = &s[q + 1];
        size_t n = 0;
        for (int i = 0; i < 16; ++i) n += counts[i];
        if (q + 17 + n > end) return false;
        const bool ok = tc == 0 ? deriveCodes(counts, &s[q + 17], n, t.codes.dc[th], 16)
                                : deriveCodes(counts, &s[q + 17], n, t.codes.ac[th], 256);
        if (!ok) return false;
        have |= 1 << (2 + 2 * tc + th);
        q += 17 + n;
      }
    }
    p = end;
  }
  return have == 63;
}

bool transformTile(const uint8_t* rgba, int size, const Tables& t, int16_t* coefs,
                   uint8_t* coverage) {
  const size_t texels = size_t(size) * size_t(size);
  std::memset(coverage, 0, texels / 8);
  bool partial = false;
  for (size_t i = 0; i < texels; ++i) {
    if (rgba[4 * i + 3] >= 128) coverage[i / 8] |= uint8_t(0x80u >> (i % 8));
    else partial = true;
  }
  const int mcusPerRow = size / 16;
  int32_t block[kBlocksPerMcu][64];
  for (int my = 0; my < mcusPerRow; ++my)
    for (int mx = 0; mx < mcusPerRow; ++mx) {
      int y[16][16], cb[16][16], cr[16][16];
      for (int j = 0; j < 16; ++j)
        for (int i = 0; i < 16; ++i) {
          const uint8_t* px = rgba + (size_t(my * 16 + j) * size_t(size) + size_t(mx * 16 + i)) * 4;
          const bool covered = px[3] >= 128;
          const int r = covered ? px[0] : 128, g = covered ? px[1] : 128, b = covered ? px[2] : 128;
          y[j][i] = rgbToY(r, g, b);
          cb[j][i] = rgbToCb(r, g, b);
          cr[j][i] = rgbToCr(r, g, b);
        }
      for (int j = 0; j < 8; ++j)
        for (int i = 0; i < 8; ++i) {
          for (int b = 0; b < 4; ++b) block[b][j * 8 + i] = y[(b >> 1) * 8 + j][(b & 1) * 8 + i] - 128;
          block[4][j * 8 + i] =
              downsample2x2(cb[2 * j][2 * i], cb[2 * j][2 * i + 1], cb[2 * j + 1][2 * i],
                            cb[2 * j + 1][2 * i + 1], i) - 128;
          block[5][j * 8 + i] =
              downsample2x2(cr[2 * j][2 * i], cr[2 * j][2 * i + 1], cr[2 * j + 1][2 * i],
                            cr[2 * j + 1][2 * i + 1], i) - 128;
        }
      int16_t* out = coefs + (size_t(my) * size_t(mcusPerRow) + size_t(mx)) * kCoefsPerMcu;
      for (int b = 0; b < kBlocksPerMcu; ++b) {
        for (int r = 0; r < 8; ++r) fdct8<1>(block[b] + 8 * r, 1);
        for (int c = 0; c < 8; ++c) fdct8<2>(block[b] + c, 8);
        const uint16_t* q = t.quant[b < 4 ? 0 : 1];
        for (int k = 0; k < 64; ++k) {
          const int n = kZigzagToNatural[k];
          out[b * 64 + k] = int16_t(quantise(block[b][n], q[n]));
        }
      }
    }
  return partial;
}

bool assembleStream(int size, const uint8_t* coverage, const uint8_t* entropy, size_t entropyBytes,
                    std::vector<uint8_t>& out) {
  out.clear();
  out.reserve(entropyBytes + 64);
  out.push_back(0xff);
  out.push_back(0xd8);  // SOI
  if (coverage) {
    const uLong bits = uLong(size_t(size) * size_t(size) / 8);
    uLongf zlen = compressBound(bits);
    std::vector<uint8_t> z(zlen);
    if (compress2(z.data(), &zlen, coverage, bits, 9) != Z_OK) return false;
    const size_t payload = kCoverageTagBytes + zlen;
    if (payload > 65533) return false;
    out.push_back(0xff);
    out.push_back(0xe9);  // APP9
    put16(out, payload + 2);
    out.insert(out.end(), kCoverageTag, kCoverageTag + kCoverageTagBytes);
    out.insert(out.end(), z.begin(), z.begin() + std::ptrdiff_t(zlen));
  }
  // SOF0: 8-bit, size x size, 3 components: Y 2x2 table 0, Cb and Cr 1x1 table 1.
  static const uint8_t kComponents[9] = {1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1};
  out.push_back(0xff);
  out.push_back(0xc0);
  put16(out, 17);
  out.push_back(8);
  put16(out, size_t(size));
  put16(out, size_t(size));
  out.push_back(3);
  out.insert(out.end(), kComponents, kComponents + 9);
  // DRI: one MCU row.
  out.push_back(0xff);
  out.push_back(0xdd);
  put16(out, 4);
  put16(out, size_t(size / 16));
  // SOS: 3 components (Y: DC 0 AC 0; Cb, Cr: DC 1 AC 1), Ss 0, Se 63, Ah/Al 0.
  static const uint8_t kScan[12] = {0xff, 0xda, 0, 12, 3, 1, 0x00, 2, 0x11, 3, 0x11, 0};
  out.insert(out.end(), kScan, kScan + 12);
  out.push_back(63);
  out.push_back(0);
  out.insert(out.end(), entropy, entropy + entropyBytes);
  out.push_back(0xff);
  out.push_back(0xd9);  // EOI
  return true;
}

bool encodeTileModel(const uint8_t* rgba, int size, int quality, std::vector<uint8_t>& out) {
  out.clear();
  if (!rgba || size < 16 || size > 4096 || size % 16 || quality < 1 || quality > 100) return false;
  Tables t;
  if (!makeTables(quality, t)) return false;
  const int n = size / 16;
  std::vector<int16_t> coefs(size_t(n) * size_t(n) * kCoefsPerMcu);
  std::vector<uint8_t> coverage(size_t(size) * size_t(size) / 8);
  const bool partial = transformTile(rgba, size, t, coefs.data(), coverage.data());
  // As the kernels: every MCU's bits on their own (pass 1), then every interval packed (pass 2).
  std::vector<uint32_t> bits(size_t(n) * size_t(n) * kMcuBitWords);
  std::vector<uint32_t> bitCounts(size_t(n) * size_t(n));
  for (size_t g = 0; g < bitCounts.size(); ++g) {
    int pred[3];
    const int16_t* mcu = coefs.data() + g * kCoefsPerMcu;
    mcuPredictors(mcu, int(g % size_t(n)), pred);
    bitCounts[g] = encodeMcuBits(mcu, pred, t.codes, bits.data() + g * kMcuBitWords);
  }
  std::vector<uint32_t> scratch(intervalWords(n));
  std::vector<uint8_t> entropy;
  for (int i = 0; i < n; ++i) {
    const size_t first = size_t(i) * size_t(n);
    const uint32_t bytes = packInterval(bits.data() + first * kMcuBitWords, kMcuBitWords, bitCounts.data() + first,
                                        n, i + 1 < n ? i : -1, scratch.data());
    const size_t at = entropy.size();
    entropy.resize(at + bytes);
    std::memcpy(entropy.data() + at, scratch.data(), bytes);
  }
  return assembleStream(size, partial ? coverage.data() : nullptr, entropy.data(), entropy.size(), out);
}

}  // namespace hfjenc
