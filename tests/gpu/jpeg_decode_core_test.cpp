// jpeg_decode_core_test.cpp - the CUDA JPEG tile decoder's per-thread arithmetic
// (cuda/imagery/jpeg_decode_core.cuh) and host parser (src/gpu/imagery/jpeg_decode.cpp) run on
// the CPU against the reference, himg::JpegTileDecoder (libjpeg-turbo): runs everywhere (CI has
// no GPU). cpuDecode() drives the core the way cuda/imagery/jpeg_decode.cu does: the marker scan
// 128 bytes per step, 32 "lanes" of 4 bytes with the warp's prefix sums done in order; every
// restart interval decoded on its own; the pixel stage region by region (the same regions, block
// jobs and texel quads as the kernel's thread blocks). The device tests (jpeg_decode_test.cpp)
// reuse the tile generators defined here (namespace jdectest).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#define STB_IMAGE_IMPLEMENTATION
#include <stb/stb_image.h>

#include "imagery/imagery.h"
#include "imagery/jpeg_decode_core.cuh"

namespace jdectest {

// ---- tile content ----

// size x size RGBA8 of pattern p (0..6); coverage: some texels get alpha 0.
std::vector<uint8_t> syntheticRgba(int size, int p, uint32_t seed, bool coverage) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> img(size_t(size) * size_t(size) * 4, 255);
  const uint8_t flat[3] = {uint8_t(rng()), uint8_t(rng()), uint8_t(rng())};
  const int cell = 1 + int(rng() % 5);
  for (int y = 0; y < size; ++y) {
    for (int x = 0; x < size; ++x) {
      uint8_t* t = &img[(size_t(y) * size_t(size) + size_t(x)) * 4];
      int c[3];
      switch (p) {
        case 0:  // smooth gradient
          c[0] = x * 255 / (size - 1);
          c[1] = y * 255 / (size - 1);
          c[2] = (x + y) * 255 / (2 * size - 2);
          break;
        case 1:  // noise: every coefficient in use, IDCT output beyond 0..255
          c[0] = int(rng() & 255);
          c[1] = int(rng() & 255);
          c[2] = int(rng() & 255);
          break;
        case 2: {  // saturated checkerboard: ringing, clamping in the IDCT and colour
          const bool on = ((x / cell) + (y / cell)) & 1;
          const int k = (x / cell / 2 + y / cell) % 3;
          for (int i = 0; i < 3; ++i) c[i] = on ? (i == k ? 255 : 0) : (i == k ? 0 : 255);
          break;
        }
        case 3:  // flat colour (DC only blocks)
          for (int i = 0; i < 3; ++i) c[i] = flat[i];
          break;
        case 4: {  // sinusoids
          const double fx = double(x) / size, fy = double(y) / size;
          c[0] = int(127.5 + 127.5 * std::sin(fx * 37.0 + fy * 3.0));
          c[1] = int(127.5 + 127.5 * std::sin(fy * 21.0 - fx * 11.0));
          c[2] = int(127.5 + 127.5 * std::cos((fx - fy) * 53.0));
          break;
        }
        case 5: {  // blocks of different kinds
          const int k = ((x / 24) * 7 + (y / 20) * 3) % 4;
          for (int i = 0; i < 3; ++i)
            c[i] = k == 0 ? int(rng() & 255) : k == 1 ? flat[i] : k == 2 ? ((x ^ y) & 8 ? 250 : 5) : (x * 3 + y * i) & 255;
          break;
        }
        default:  // extremes: black, white and pure primaries in stripes
          c[0] = (x / 7) % 2 ? 255 : 0;
          c[1] = (y / 5) % 2 ? 255 : 0;
          c[2] = ((x + y) / 9) % 2 ? 255 : 0;
          break;
      }
      for (int i = 0; i < 3; ++i) t[i] = uint8_t(std::clamp(c[i], 0, 255));
      if (coverage) {
        const int dx = x - size / 3, dy = y - size / 2;
        const bool in = dx * dx + dy * dy < size * size / 5 || (x % 17 == 3 && y > size / 2);
        t[3] = in ? 255 : 0;
      }
    }
  }
  return img;
}

std::vector<uint8_t> encodeTile(const std::vector<uint8_t>& rgba, int size, int quality) {
  std::vector<uint8_t> out;
  std::string error;
  if (!himg::encodeJpegTile(rgba.data(), size, quality, out, error)) ADD_FAILURE() << error;
  return out;
}

// size x size crops of the shared real imagery (Puget Sound texture, Blue Marble); empty when
// the files are missing.
std::vector<std::vector<uint8_t>> realRgbaTiles(int size, size_t max_tiles) {
  std::vector<std::vector<uint8_t>> tiles;
  const std::string dir = std::string(HF_SHARED_DEM_DIR) + "/../imagery/";
  for (const char* name : {"ps_texture_1k.png", "world.topo.200412.3x5400x2700.jpg"}) {
    int w = 0, h = 0, n = 0;
    unsigned char* px = stbi_load((dir + name).c_str(), &w, &h, &n, 4);
    if (!px) continue;
    const int step_x = std::max(size, (w - size) / 5), step_y = std::max(size, (h - size) / 3);
    for (int y0 = 0; y0 + size <= h && tiles.size() < max_tiles; y0 += step_y) {
      for (int x0 = 0; x0 + size <= w && tiles.size() < max_tiles; x0 += step_x) {
        std::vector<uint8_t> t(size_t(size) * size_t(size) * 4);
        for (int y = 0; y < size; ++y)
          std::memcpy(&t[size_t(y) * size_t(size) * 4], px + (size_t(y0 + y) * size_t(w) + size_t(x0)) * 4,
                      size_t(size) * 4);
        tiles.push_back(std::move(t));
      }
    }
    stbi_image_free(px);
    max_tiles += tiles.size();  // each image gets its share
  }
  return tiles;
}

// ---- the CPU model of the kernels ----

struct CpuResult {
  std::string host_error;  // parser / coverage (prepare())
  uint32_t flags = 0;      // the kernels' Failure bits
  bool ok() const { return host_error.empty() && flags == 0; }
};

// True when a block's dequantised coefficients or first-pass IDCT values leave int16, or an
// output sample before the range limit leaves [-512, 511]: no forward DCT of 8-bit samples
// produces such a block (only corrupt data does), and for it libjpeg-turbo's own paths disagree:
// jidctint.c computes in 64 bits and wraps through its range-limit table (x & 1023), the x86
// SIMD IDCTs multiply and pack in 16 bits (wrap-around / saturation) and clamp the output. This
// decoder follows jidctint.c, so there is no single reference to match for such blocks.
bool outOfRangeBlock(const uint32_t cw[32], const uint16_t q[64]) {
  using namespace hfjdec;
  uint32_t ws[64];
  for (int c = 0; c < 8; ++c) {
    uint32_t in[8], o[8];
    for (int r = 0; r < 8; ++r) {
      const int32_t v = coefAt(cw, 8 * r + c) * int32_t(q[8 * r + c]);
      if (v < -32768 || v > 32767) return true;
      in[r] = uint32_t(v);
    }
    idct1d(in[0], in[1], in[2], in[3], in[4], in[5], in[6], in[7], o);
    for (int r = 0; r < 8; ++r) {
      const int32_t w = descale(o[r], kConstBits - kPass1Bits);
      if (w < -32768 || w > 32767) return true;
      ws[8 * r + c] = uint32_t(w);
    }
  }
  for (int r = 0; r < 8; ++r) {
    uint32_t o[8];
    const uint32_t* w = ws + 8 * r;
    idct1d(w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], o);
    for (int c = 0; c < 8; ++c) {
      const int32_t x = descale(o[c], kConstBits + kPass1Bits + 3);
      if (x < -512 || x > 511) return true;
    }
  }
  return false;
}

size_t align16(size_t v) { return (v + 15) & ~size_t(15); }

CpuResult cpuDecode(const hfjdec::Tables& t, const uint8_t* tile, size_t n, int size, uint8_t* rgba,
                    bool* out_of_range) {
  using namespace hfjdec;
  CpuResult res;
  TileInfo info;
  if (!parseTile(tile, n, size, t, info, res.host_error)) return res;
  std::vector<uint8_t> mask;
  if (info.coverage) {
    mask.resize(size_t(size) * size_t(size) / 8);
    if (!inflateCoverage(info.coverage, info.coverage_bytes, mask.data(), mask.size())) {
      res.host_error = "corrupt JPEG tile coverage";
      return res;
    }
  }
  // Staged bytes: the entropy-coded data zero-padded to 16, as prepare() stages them.
  const uint32_t nb = uint32_t(info.bytes);
  std::vector<uint8_t> data(align16(nb) + 16, 0), unstuffed(data.size(), 0xCD);
  std::memcpy(data.data(), tile + info.data, nb);
  const int rows = size / 16;
  std::vector<uint32_t> st(size_t(rows) + 1, 0xFFFFFFFFu);
  // 1. The scan kernel's warp.
  {
    int carry = -1, markers = 0;
    uint32_t out_base = 0, fail = 0;
    for (uint32_t base = 0; base < nb; base += 128) {
      uint8_t b[32][4];
      for (int lane = 0; lane < 32; ++lane) {
        const uint32_t pos = base + 4u * uint32_t(lane);
        for (int i = 0; i < 4; ++i) b[lane][i] = pos < nb ? data[pos + uint32_t(i)] : 0;
      }
      int kin = 0, min_ = 0;
      for (int lane = 0; lane < 32; ++lane) {
        const uint32_t pos = base + 4u * uint32_t(lane);
        const int valid = pos >= nb ? 0 : (nb - pos >= 4u ? 4 : int(nb - pos));
        const int prev = lane == 0 ? carry : int(b[lane - 1][3]);
        const int next = pos + 4u >= nb ? -1 : (lane == 31 ? int(data[pos + 4u]) : int(b[lane + 1][0]));
        const LaneScan s = scanLane(prev, b[lane], next, valid);
        fail |= placeLane(s, b[lane], markers + min_, out_base + uint32_t(kin), rows, st.data(), unstuffed.data());
        kin += __builtin_popcount(s.keep);
        min_ += __builtin_popcount(s.marker);
      }
      if (fail) break;
      out_base += uint32_t(kin);
      markers += min_;
      carry = b[31][3];
    }
    if (!fail && markers != rows - 1) fail |= kFailRstCount;
    if (fail) {
      res.flags = fail;
      return res;
    }
    st[0] = 0;
    st[size_t(rows)] = out_base;
  }
  // 2. One Huffman "thread" per interval.
  std::vector<int16_t> coef(size_t(rows) * size_t(rows) * 6 * 64, 0x5555);
  for (int r = 0; r < rows; ++r) {
    EXPECT_LE(st[size_t(r)], st[size_t(r) + 1]);
    int16_t blk[64] = {};
    int16_t* dst = coef.data() + size_t(r) * size_t(rows) * 6 * 64;
    auto sink = [dst](int index, int16_t* b) {
      std::memcpy(dst + size_t(index) * 64, b, 128);
      std::memset(b, 0, 128);
    };
    res.flags |= decodeInterval(unstuffed.data() + st[size_t(r)], st[size_t(r) + 1] - st[size_t(r)], rows, t,
                                info.sel, blk, sink);
  }
  if (res.flags) return res;
  if (out_of_range) {
    for (size_t b = 0; b < coef.size() / 64 && !*out_of_range; ++b) {
      uint32_t cw[32];
      std::memcpy(cw, coef.data() + b * 64, 128);
      const int comp = b % 6 < 4 ? 0 : int(b % 6) - 3;
      *out_of_range = outOfRangeBlock(cw, t.quant[info.sel.quant[comp]]);
    }
  }
  // 3. The pixel kernel's blocks.
  std::vector<uint8_t> ybuf(kYBytes), cbuf0(kCBytes), cbuf1(kCBytes);
  for (int band = 0; band < regionBands(size); ++band) {
    for (int chunk = 0; chunk < regionChunks(size); ++chunk) {
      const Region g = makeRegion(size, band, chunk);
      std::fill(ybuf.begin(), ybuf.end(), 0xAB);  // catches reads of samples no block wrote
      std::fill(cbuf0.begin(), cbuf0.end(), 0xAB);
      std::fill(cbuf1.begin(), cbuf1.end(), 0xAB);
      for (int item = 0; item < regionBlocks(g); ++item) {
        const BlockJob j = blockJob(g, item);
        uint32_t cw[32];
        std::memcpy(cw, coef.data() + ((size_t(j.mr) * size_t(rows) + size_t(j.mc)) * 6 + size_t(j.blk)) * 64, 128);
        uint32_t px[16];
        idctBlock(cw, t.quant[info.sel.quant[j.comp]], px);
        uint8_t* dst = (j.comp == 0 ? ybuf.data() : j.comp == 1 ? cbuf0.data() : cbuf1.data()) + j.offset;
        for (int r = 0; r < 8; ++r)
          for (int c = 0; c < 8; ++c) dst[r * j.stride + c] = uint8_t(px[2 * r + c / 4] >> (8 * (c & 3)));
      }
      for (int q = 0; q < regionQuads(g); ++q) {
        uint32_t px[4];
        int gx = 0, gy = 0;
        pixelQuad(g, q, ybuf.data(), cbuf0.data(), cbuf1.data(), mask.empty() ? nullptr : mask.data(), kMaskBits, px, gx,
                  gy);
        for (int k = 0; k < 4; ++k)
          for (int i = 0; i < 4; ++i)
            rgba[(size_t(gy) * size_t(size) + size_t(gx + k)) * 4 + size_t(i)] = uint8_t(px[k] >> (8 * i));
      }
    }
  }
  return res;
}

hfjdec::Tables parsedTables(int quality) {
  const std::vector<uint8_t> tb = himg::makeJpegTables(quality);
  hfjdec::Tables t;
  std::string error;
  EXPECT_TRUE(hfjdec::parseTables(tb.data(), tb.size(), t, error)) << error;
  return t;
}

struct Diff {
  size_t channels = 0;  // channel values that differ
  int max = 0;
};
Diff compare(const uint8_t* a, const uint8_t* b, size_t bytes) {
  Diff d;
  for (size_t i = 0; i < bytes; ++i) {
    const int e = std::abs(int(a[i]) - int(b[i]));
    if (e) ++d.channels;
    d.max = std::max(d.max, e);
  }
  return d;
}

}  // namespace jdectest

namespace {

using namespace jdectest;

// Reference decode; false when libjpeg rejects the tile.
bool refDecode(himg::JpegTileDecoder& dec, const std::vector<uint8_t>& tile, int size, std::vector<uint8_t>& rgba) {
  std::string error;
  rgba.assign(size_t(size) * size_t(size) * 4, 0);
  return dec.decode(tile.data(), tile.size(), size, rgba.data(), error);
}

// Decodes `tile` both ways; expects both to succeed and returns the difference.
Diff checkTile(const std::vector<uint8_t>& tile, int size, int quality, const hfjdec::Tables& t,
               himg::JpegTileDecoder& dec, const std::string& what) {
  std::vector<uint8_t> ref, got(size_t(size) * size_t(size) * 4, 0);
  EXPECT_TRUE(refDecode(dec, tile, size, ref)) << what;
  bool extreme = false;
  const CpuResult r = cpuDecode(t, tile.data(), tile.size(), size, got.data(), &extreme);
  EXPECT_FALSE(extreme) << what;
  EXPECT_TRUE(r.ok()) << what << ": " << r.host_error << " flags " << r.flags << " (q" << quality << ")";
  const Diff d = compare(ref.data(), got.data(), ref.size());
  EXPECT_EQ(d.max, 0) << what << " q" << quality << ": " << d.channels << " channels differ";
  return d;
}

TEST(JpegDecodeCore, TablesMatchTheStandard) {
  for (int q : {1, 50, 90, 100}) {
    const hfjdec::Tables t = parsedTables(q);
    EXPECT_TRUE(t.have_quant[0] && t.have_quant[1] && t.have_dc[0] && t.have_dc[1] && t.have_ac[0] && t.have_ac[1]);
  }
  // Garbage is refused, never crashes.
  std::mt19937 rng(5);
  std::vector<uint8_t> tb = himg::makeJpegTables(90);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<uint8_t> bad = tb;
    if (trial % 2) bad.resize(rng() % bad.size());
    else bad[rng() % bad.size()] ^= uint8_t(1u << (rng() % 8));
    hfjdec::Tables t;
    std::string error;
    hfjdec::parseTables(bad.data(), bad.size(), t, error);
  }
}

TEST(JpegDecodeCore, IdctRangeLimitIsLibjpegsTable) {
  // jdmaster.c prepare_range_limit_table, post-IDCT part, rebuilt literally.
  std::vector<int> table(5 * 256 + 128);
  int* t = table.data() + 256;
  for (int i = -256; i < 0; ++i) t[i] = 0;
  for (int i = 0; i <= 255; ++i) t[i] = i;
  int* u = t + 128;
  for (int i = 128; i < 512; ++i) u[i] = 255;
  for (int i = 512; i < 512 + 512 - 128; ++i) u[i] = 0;
  for (int i = 0; i < 128; ++i) u[1024 - 128 + i] = t[i];
  for (int x = -5000; x < 5000; ++x) ASSERT_EQ(hfjdec::rangeLimit(x), uint32_t(u[x & 1023])) << x;
}

TEST(JpegDecodeCore, SyntheticTilesBitExact) {
  himg::JpegTileDecoder dec;
  size_t tiles = 0;
  for (int quality : {50, 90, 100, 10, 75}) {
    const std::vector<uint8_t> tb = himg::makeJpegTables(quality);
    std::string error;
    ASSERT_TRUE(dec.setTables(tb.data(), tb.size(), error)) << error;
    const hfjdec::Tables t = parsedTables(quality);
    for (int p = 0; p <= 6; ++p) {
      for (bool cov : {false, true}) {
        const int size = 256;
        const std::vector<uint8_t> tile = encodeTile(syntheticRgba(size, p, uint32_t(p * 31 + quality), cov), size, quality);
        checkTile(tile, size, quality, t, dec, "pattern " + std::to_string(p) + (cov ? " with coverage" : ""));
        ++tiles;
      }
    }
  }
  EXPECT_EQ(tiles, 70u);
}

TEST(JpegDecodeCore, OtherSizesBitExact) {
  // Partial regions (bands of fewer than 4 MCU rows, chunks of fewer than 16 MCUs, several
  // chunks per row) and the smallest tiles.
  himg::JpegTileDecoder dec;
  const int quality = 90;
  const std::vector<uint8_t> tb = himg::makeJpegTables(quality);
  std::string error;
  ASSERT_TRUE(dec.setTables(tb.data(), tb.size(), error)) << error;
  const hfjdec::Tables t = parsedTables(quality);
  for (int size : {16, 32, 48, 80, 272, 528}) {
    for (int p : {1, 2, 4, 5}) {
      const std::vector<uint8_t> tile = encodeTile(syntheticRgba(size, p, uint32_t(size + p), p == 4), size, quality);
      checkTile(tile, size, quality, t, dec, "size " + std::to_string(size) + " pattern " + std::to_string(p));
    }
  }
}

TEST(JpegDecodeCore, RealImageryBitExact) {
  const std::vector<std::vector<uint8_t>> rgba = realRgbaTiles(256, 12);
  if (rgba.empty()) GTEST_SKIP() << "shared imagery not found next to " << HF_SHARED_DEM_DIR;
  himg::JpegTileDecoder dec;
  for (int quality : {50, 90, 100}) {
    const std::vector<uint8_t> tb = himg::makeJpegTables(quality);
    std::string error;
    ASSERT_TRUE(dec.setTables(tb.data(), tb.size(), error)) << error;
    const hfjdec::Tables t = parsedTables(quality);
    for (size_t i = 0; i < rgba.size(); ++i) {
      std::vector<uint8_t> img = rgba[i];
      if (i % 3 == 1) {  // some with coverage (a diagonal edge of the source imagery)
        for (int y = 0; y < 256; ++y)
          for (int x = 0; x < 256; ++x)
            if (x + y < 100) img[(size_t(y) * 256 + size_t(x)) * 4 + 3] = 0;
      }
      checkTile(encodeTile(img, 256, quality), 256, quality, t, dec, "real tile " + std::to_string(i));
    }
  }
  std::printf("[          ] %zu real tiles x 3 qualities bit-exact\n", rgba.size());
}

// Corrupt tiles: never a crash or an out-of-bounds access (run under ASan/UBSan too); every tile
// libjpeg rejects is rejected; where both accept, the pixels are identical.
TEST(JpegDecodeCore, CorruptTilesAreReported) {
  himg::JpegTileDecoder dec;
  const int size = 64, quality = 90;
  const std::vector<uint8_t> tb = himg::makeJpegTables(quality);
  std::string error;
  ASSERT_TRUE(dec.setTables(tb.data(), tb.size(), error)) << error;
  const hfjdec::Tables t = parsedTables(quality);
  std::mt19937 rng(1234);
  size_t cases = 0, both_reject = 0, stricter = 0, both_accept = 0, out_of_range = 0;
  std::vector<uint8_t> ref, got(size_t(size) * size_t(size) * 4);
  auto run = [&](const std::vector<uint8_t>& bad, const std::string& what) {
    ++cases;
    const bool ref_ok = refDecode(dec, bad, size, ref);
    bool extreme = false;
    const CpuResult r = cpuDecode(t, bad.data(), bad.size(), size, got.data(), &extreme);
    if (!ref_ok) {
      EXPECT_FALSE(r.ok()) << what << ": libjpeg rejects, the GPU core accepts";
      ++both_reject;
    } else if (!r.ok()) {
      ++stricter;
    } else if (extreme) {
      ++out_of_range;  // no single reference (outOfRangeBlock); only "no crash" is checked
    } else {
      ++both_accept;
      const Diff d = compare(ref.data(), got.data(), ref.size());
      EXPECT_EQ(d.max, 0) << what << ": both accept, " << d.channels << " channels differ";
    }
  };
  for (int p : {1, 4, 5}) {
    const std::vector<uint8_t> tile = encodeTile(syntheticRgba(size, p, 99, p == 4), size, quality);
    // The entropy-coded data's range and its RST markers.
    hfjdec::TileInfo info;
    ASSERT_TRUE(hfjdec::parseTile(tile.data(), tile.size(), size, t, info, error)) << error;
    std::vector<size_t> rst;
    for (size_t i = info.data; i + 1 < info.data + info.bytes; ++i)
      if (tile[i] == 0xFF && tile[i + 1] >= 0xD0 && tile[i + 1] <= 0xD7) rst.push_back(i);
    ASSERT_EQ(rst.size(), size_t(size / 16 - 1));
    // Truncated at every length (then closed with EOI, as a cut stream would be repaired, and raw).
    for (size_t len = 0; len < tile.size(); ++len) {
      std::vector<uint8_t> bad(tile.begin(), tile.begin() + long(len));
      run(bad, "truncated raw " + std::to_string(len));
      bad.push_back(0xFF);
      bad.push_back(0xD9);
      run(bad, "truncated + EOI " + std::to_string(len));
    }
    // Every RST removed in turn; renumbered; doubled.
    for (size_t k = 0; k < rst.size(); ++k) {
      std::vector<uint8_t> bad = tile;
      bad.erase(bad.begin() + long(rst[k]), bad.begin() + long(rst[k]) + 2);
      run(bad, "RST removed");
      bad = tile;
      bad[rst[k] + 1] = uint8_t(0xD0 + ((bad[rst[k] + 1] - 0xD0 + 1) & 7));
      run(bad, "RST renumbered");
      bad = tile;
      bad.insert(bad.begin() + long(rst[k]), {0xFF, uint8_t(0xD0 + k % 8)});
      run(bad, "RST doubled");
    }
    // Single bit flips anywhere (headers included), random bytes, inserted and deleted bytes.
    for (int trial = 0; trial < 3000; ++trial) {
      std::vector<uint8_t> bad = tile;
      const size_t at = rng() % bad.size();
      switch (trial % 4) {
        case 0: bad[at] ^= uint8_t(1u << (rng() % 8)); break;
        case 1: bad[at] = uint8_t(rng()); break;
        case 2: bad.insert(bad.begin() + long(at), uint8_t(rng())); break;
        default: bad.erase(bad.begin() + long(at)); break;
      }
      run(bad, "mutation " + std::to_string(trial) + " kind " + std::to_string(trial % 4) + " at " +
                   std::to_string(long(at) - long(info.data)) + " of " + std::to_string(info.bytes));
    }
    // Garbage entropy-coded data, random lengths, with and without the correct RSTs.
    for (int trial = 0; trial < 300; ++trial) {
      std::vector<uint8_t> bad(tile.begin(), tile.begin() + long(info.data));
      const size_t n = rng() % (2 * info.bytes + 1);
      for (size_t i = 0; i < n; ++i) bad.push_back(uint8_t(rng()));
      if (trial % 2)
        for (size_t k = 0; k < rst.size() && !bad.empty(); ++k) {
          const size_t at = info.data + (n * (k + 1)) / (rst.size() + 1);
          if (at + 1 < bad.size()) {
            bad[at] = 0xFF;
            bad[at + 1] = uint8_t(0xD0 + k % 8);
          }
        }
      bad.push_back(0xFF);
      bad.push_back(0xD9);
      run(bad, "garbage " + std::to_string(trial));
    }
  }
  std::printf("[          ] %zu corrupt tiles: %zu rejected by both, %zu only by the GPU core (stricter), "
              "%zu accepted by both (identical), %zu accepted by both with out-of-range coefficients\n",
              cases, both_reject, stricter, both_accept, out_of_range);
}

}  // namespace

// The staged coverage: bands (one run per row) answer every quad exactly as the bitmap they
// come from; a row with two runs, or bands no smaller than the bitmap, stay bits.
TEST(JpegDecodeCore, CoverageBandsEqualTheBitmap) {
  auto makeBits = [](int size, const std::function<bool(int, int)>& covered) {
    std::vector<uint8_t> b(size_t(size) * size_t(size) / 8, 0);
    for (int y = 0; y < size; ++y)
      for (int x = 0; x < size; ++x)
        if (covered(x, y)) b[size_t(y * size + x) >> 3] |= uint8_t(0x80u >> ((y * size + x) & 7));
    return b;
  };
  struct Case {
    const char* name;
    int size;
    std::function<bool(int, int)> covered;
    long bandBytes;  // 0: stays a bitmap; -1: bands, any size
  };
  const Case cases[] = {
      {"left part (the DEM's east edge)", 64, [](int x, int) { return x < 37; }, 2 + 6},
      {"top-left corner", 64, [](int x, int y) { return x < 21 && y < 50; }, 2 + 12},
      {"empty rows, then a run", 64, [](int x, int y) { return y >= 10 && x >= 5 && x < 60; }, 2 + 12},
      {"a diagonal edge: a band per row", 64, [](int x, int y) { return x <= y; }, 2 + 6 * 64},
      {"a disc", 64, [](int x, int y) { return (x - 32) * (x - 32) + (y - 32) * (y - 32) < 400; }, -1},
      {"fully covered", 256, [](int, int) { return true; }, 2 + 6},
      {"a diagonal on a 16^2 tile: bands larger than the bits", 16, [](int x, int y) { return x <= y; }, 0},
      {"two runs in a row", 64, [](int x, int) { return x < 10 || x > 50; }, 0},
      {"a checkerboard", 64, [](int x, int y) { return ((x ^ y) & 1) != 0; }, 0},
  };
  for (const Case& c : cases) {
    const std::vector<uint8_t> bits = makeBits(c.size, c.covered);
    std::vector<uint16_t> store(bits.size() / 2 + 1, 0xCDCD);  // 2-byte aligned, as staged
    uint8_t* bands = reinterpret_cast<uint8_t*>(store.data());
    const size_t n = hfjdec::coverageBands(bits.data(), c.size, bands);
    if (c.bandBytes >= 0) EXPECT_EQ(long(n), c.bandBytes) << c.name;
    else EXPECT_GT(n, 0u) << c.name;
    if (!n) continue;
    EXPECT_LT(n, bits.size()) << c.name;
    for (int y = 0; y < c.size; ++y)
      for (int x = 0; x < c.size; x += 4)
        ASSERT_EQ(hfjdec::coverageQuad(bits.data(), hfjdec::kMaskBits, c.size, x, y),
                  hfjdec::coverageQuad(bands, hfjdec::kMaskBands, c.size, x, y))
            << c.name << ": quad x " << x << " y " << y;
  }
}
