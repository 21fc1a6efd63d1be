// jpeg_encode_core.cuh - the per-texel, per-block and per-interval arithmetic of the CUDA JPEG
// encoder (src/gpu/imagery/jpeg_encoder.h), as __host__ __device__ functions: the kernels of
// jpeg_encode.cu call them on the device, jpeg_encode_host.cpp and the CPU test on the host.
//
// Everything here reproduces libjpeg-turbo 2.1.5's arithmetic for the archive's tile format
// (himg::encodeJpegTile: baseline, YCbCr 4:2:0, islow DCT, standard Huffman tables, one MCU row
// per restart interval), so that the streams are byte for byte those of encodeJpegTile. The
// code is this project's own; the comments name the libjpeg step that each function matches.
// All arithmetic is integer: no float anywhere, so no -fmad concerns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__CUDACC__)
#define HF_JENC_HD __host__ __device__ __forceinline__
#else
#define HF_JENC_HD inline
#endif

namespace hfjenc {

constexpr int kBlocksPerMcu = 6;                       // Y00 Y01 Y10 Y11 Cb Cr (4:2:0)
constexpr int kCoefsPerMcu = kBlocksPerMcu * 64;
// Worst-case entropy-coded bytes of one 8x8 block: DC (code <= 9 + 11 bits) and 63 AC
// coefficients (code <= 16 + 10 bits), every byte possibly 0xFF (stuffed with a 0x00).
constexpr int kMaxBlockBytes = 2 * ((20 + 63 * 26 + 7) / 8);  // 416
constexpr int kMaxMcuBytes = kBlocksPerMcu * kMaxBlockBytes;

// ---- colour conversion (jccolor.c, rgb_ycc_convert) ----
// Fixed point with 16 fraction bits: FIX(x) = round(x * 65536). libjpeg's per-channel tables
// are these products; Y gets ONE_HALF (rounding), Cb and Cr get CBCR_OFFSET (128 << 16) plus
// ONE_HALF - 1 (the "-1" keeps the maximum at 255). The sums are never negative, so >> is a
// floor division as in libjpeg.
constexpr int32_t kFixR_Y = 19595, kFixG_Y = 38470, kFixB_Y = 7471;  // 0.29900 0.58700 0.11400
constexpr int32_t kFixR_Cb = 11059, kFixG_Cb = 21709;                // 0.16874 0.33126
constexpr int32_t kFixG_Cr = 27439, kFixB_Cr = 5329;                 // 0.41869 0.08131
constexpr int32_t kFixHalf = 32768;                                  // 0.5 and ONE_HALF
constexpr int32_t kCbCrOffset = (128 << 16) + kFixHalf - 1;

HF_JENC_HD int rgbToY(int r, int g, int b) {
  return (kFixR_Y * r + kFixG_Y * g + kFixB_Y * b + kFixHalf) >> 16;
}
HF_JENC_HD int rgbToCb(int r, int g, int b) {
  return (-kFixR_Cb * r - kFixG_Cb * g + kFixHalf * b + kCbCrOffset) >> 16;
}
HF_JENC_HD int rgbToCr(int r, int g, int b) {
  return (kFixHalf * r - kFixG_Cr * g - kFixB_Cr * b + kCbCrOffset) >> 16;
}

// ---- 4:2:0 subsampling (jcsample.c, h2v2_downsample, no smoothing) ----
// The sum of a 2x2 quad plus a bias that alternates 1, 2, 1, 2, ... along the output row,
// starting with 1 at the row's first output column: no systematic drift up or down.
HF_JENC_HD int downsample2x2(int a, int b, int c, int d, int outColumn) {
  return (a + b + c + d + 1 + (outColumn & 1)) >> 2;
}

// ---- forward DCT (jfdctint.c, jpeg_fdct_islow) ----
// Input: level-shifted samples (sample - 128, jcdctmgr.c). Output: the DCT scaled by 8.
// CONST_BITS 13, PASS1_BITS 2; DESCALE(x, n) = (x + 2^(n-1)) >> n, arithmetic shift.
constexpr int kConstBits = 13;
constexpr int kPass1Bits = 2;
constexpr int32_t kF0_298631336 = 2446, kF0_390180644 = 3196, kF0_541196100 = 4433,
                  kF0_765366865 = 6270, kF0_899976223 = 7373, kF1_175875602 = 9633,
                  kF1_501321110 = 12299, kF1_847759065 = 15137, kF1_961570560 = 16069,
                  kF2_053119869 = 16819, kF2_562915447 = 20995, kF3_072711026 = 25172;

HF_JENC_HD int32_t descale(int32_t x, int n) { return (x + (int32_t(1) << (n - 1))) >> n; }

// One 1-D pass over the 8 values p[0], p[stride], ..., p[7 * stride], in place. Pass 1 (rows)
// keeps PASS1_BITS of extra precision; pass 2 (columns) removes it.
template <int kPass>
HF_JENC_HD void fdct8(int32_t* p, int stride) {
  const int32_t d0 = p[0], d1 = p[stride], d2 = p[2 * stride], d3 = p[3 * stride];
  const int32_t d4 = p[4 * stride], d5 = p[5 * stride], d6 = p[6 * stride], d7 = p[7 * stride];
  const int32_t tmp0 = d0 + d7, tmp7 = d0 - d7, tmp1 = d1 + d6, tmp6 = d1 - d6;
  const int32_t tmp2 = d2 + d5, tmp5 = d2 - d5, tmp3 = d3 + d4, tmp4 = d3 - d4;
  // Even part.
  const int32_t tmp10 = tmp0 + tmp3, tmp13 = tmp0 - tmp3;
  const int32_t tmp11 = tmp1 + tmp2, tmp12 = tmp1 - tmp2;
  constexpr int kOddShift = kPass == 1 ? kConstBits - kPass1Bits : kConstBits + kPass1Bits;
  if (kPass == 1) {
    p[0] = (tmp10 + tmp11) * (1 << kPass1Bits);
    p[4 * stride] = (tmp10 - tmp11) * (1 << kPass1Bits);
  } else {
    p[0] = descale(tmp10 + tmp11, kPass1Bits);
    p[4 * stride] = descale(tmp10 - tmp11, kPass1Bits);
  }
  const int32_t z1e = (tmp12 + tmp13) * kF0_541196100;
  p[2 * stride] = descale(z1e + tmp13 * kF0_765366865, kOddShift);
  p[6 * stride] = descale(z1e - tmp12 * kF1_847759065, kOddShift);
  // Odd part.
  const int32_t z1 = -(tmp4 + tmp7) * kF0_899976223;
  const int32_t z2 = -(tmp5 + tmp6) * kF2_562915447;
  const int32_t z5 = (tmp4 + tmp6 + tmp5 + tmp7) * kF1_175875602;
  const int32_t z3 = -(tmp4 + tmp6) * kF1_961570560 + z5;
  const int32_t z4 = -(tmp5 + tmp7) * kF0_390180644 + z5;
  p[7 * stride] = descale(tmp4 * kF0_298631336 + z1 + z3, kOddShift);
  p[5 * stride] = descale(tmp5 * kF2_053119869 + z2 + z4, kOddShift);
  p[3 * stride] = descale(tmp6 * kF3_072711026 + z2 + z3, kOddShift);
  p[1 * stride] = descale(tmp7 * kF1_501321110 + z1 + z4, kOddShift);
}

// ---- quantisation (jcdctmgr.c) ----
// The divisor is the table entry times 8 (the islow DCT's scale); the quotient of the magnitude
// rounds half up, the sign is restored: libjpeg's reference C path, which its reciprocal
// multiply reproduces exactly for these ranges (|coefficient| < 2^14).
HF_JENC_HD int quantise(int32_t v, int q) {
  const int32_t d = q * 8;
  const int32_t m = v < 0 ? -v : v;
  const int32_t r = (m + (d >> 1)) / d;
  return v < 0 ? -r : r;
}

// Zig-zag position -> natural (row-major) index, as libjpeg's jpeg_natural_order.
constexpr uint8_t kZigzagToNatural[64] = {
    0,  1,  8,  16, 9,  2,  3,  10, 17, 24, 32, 25, 18, 11, 4,  5,  12, 19, 26, 33, 40, 48,
    41, 34, 27, 20, 13, 6,  7,  14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23,
    30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63};

// ---- Huffman coding (jchuff.c) ----
// Code tables: entry = length << 16 | code (code right-aligned). dc[t][category],
// ac[t][run << 4 | category]; t = 0 luma, 1 chroma.
struct HuffCodes {
  uint32_t dc[2][16];
  uint32_t ac[2][256];
};

// Number of bits of |v| (libjpeg's nbits; 0 for 0).
HF_JENC_HD int bitCount(uint32_t m) {
#if defined(__CUDA_ARCH__)
  return 32 - __clz(int(m));
#else
  return m ? 32 - __builtin_clz(m) : 0;
#endif
}

HF_JENC_HD int lowestBit(uint64_t m) {
#if defined(__CUDA_ARCH__)
  return __ffsll(static_cast<long long>(m)) - 1;
#else
  return __builtin_ctzll(m);
#endif
}

// MSB-first bit output with JPEG byte stuffing (0xFF -> 0xFF 0x00), into 32-bit words (bytes in
// memory order: little-endian words, as both the GPU and x86 store them). `out` must hold the
// worst case (kMaxMcuBytes per MCU, rounded up to words).
struct BitWriter {
  uint32_t* out;
  uint32_t words = 0;   // whole words stored
  uint32_t stage = 0;   // staged bytes, the first in the low byte
  int staged = 0;       // bytes in stage (0..3)
  uint64_t acc = 0;     // pending bits, right-aligned
  int pending = 0;      // pending bit count (< 8 between calls)

  HF_JENC_HD explicit BitWriter(uint32_t* o) : out(o) {}

  HF_JENC_HD void putByte(uint32_t b) {
    stage |= b << (8 * staged);
    if (++staged == 4) {
      out[words++] = stage;
      stage = 0;
      staged = 0;
    }
  }
  // Appends the low `len` bits of `bits` (len <= 32, the bits above len zero).
  HF_JENC_HD void put(uint32_t bits, int len) {
    acc = (acc << len) | bits;
    pending += len;
    while (pending >= 8) {
      pending -= 8;
      const uint32_t b = uint32_t(acc >> pending) & 0xffu;
      putByte(b);
      if (b == 0xffu) putByte(0);
    }
  }
  // jchuff.c flush_bits: the last partial byte is filled with 1-bits.
  HF_JENC_HD void padToByte() {
    if (pending > 0) put((1u << (8 - pending)) - 1u, 8 - pending);
  }
  // Stores the staged bytes (the rest of that word is zero). Returns the byte count.
  HF_JENC_HD uint32_t finish() {
    if (staged) out[words] = stage;
    return words * 4 + uint32_t(staged);
  }
};

// The 64-bit mask of the nonzero coefficients of a zig-zag ordered block (bit k: coefficient k).
HF_JENC_HD uint64_t nonzeroMask(const int16_t* zz) {
  uint64_t m = 0;
#if defined(__CUDA_ARCH__)
  const int4* v = reinterpret_cast<const int4*>(zz);  // 16-byte aligned: blocks are 128 bytes
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int4 w = v[i];
    const uint32_t x[4] = {uint32_t(w.x), uint32_t(w.y), uint32_t(w.z), uint32_t(w.w)};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      if (x[j] & 0xffffu) m |= uint64_t(1) << (8 * i + 2 * j);
      if (x[j] >> 16) m |= uint64_t(1) << (8 * i + 2 * j + 1);
    }
  }
#else
  for (int k = 0; k < 64; ++k)
    if (zz[k]) m |= uint64_t(1) << k;
#endif
  return m;
}

// Codes one block (jchuff.c encode_one_block): DC difference to the component's predictor,
// then the AC coefficients as (run, size) symbols with ZRL for runs over 15 and EOB when the
// block ends with zeros. Updates the predictor.
template <typename Writer>
HF_JENC_HD void encodeBlock(const int16_t* zz, int& predictor, const uint32_t* dcCodes,
                            const uint32_t* acCodes, Writer& w) {
  const int dc = zz[0];
  const int diff = dc - predictor;
  predictor = dc;
  {
    const uint32_t mag = uint32_t(diff < 0 ? -diff : diff);
    const int n = bitCount(mag);
    const uint32_t e = dcCodes[n];
    const uint32_t extra = uint32_t(diff < 0 ? diff - 1 : diff) & ((1u << n) - 1u);
    w.put(((e & 0xffffu) << n) | extra, int(e >> 16) + n);
  }
  uint64_t m = nonzeroMask(zz) & ~uint64_t(1);
  int last = 0;
  while (m) {
    const int k = lowestBit(m);
    m &= m - 1;
    int run = k - last - 1;
    last = k;
    while (run > 15) {
      const uint32_t zrl = acCodes[0xf0];
      w.put(zrl & 0xffffu, int(zrl >> 16));
      run -= 16;
    }
    const int v = zz[k];
    const uint32_t mag = uint32_t(v < 0 ? -v : v);
    const int n = bitCount(mag);
    const uint32_t e = acCodes[(run << 4) | n];
    const uint32_t extra = uint32_t(v < 0 ? v - 1 : v) & ((1u << n) - 1u);
    w.put(((e & 0xffffu) << n) | extra, int(e >> 16) + n);
  }
  if (last != 63) {
    const uint32_t eob = acCodes[0x00];
    w.put(eob & 0xffffu, int(eob >> 16));
  }
}

// Unstuffed MSB-first bits into 32-bit words (word i holds bits 32 i .. 32 i + 31, the first
// in bit 31): what the per-MCU pass writes, before concatenation and byte stuffing.
struct BitPacker {
  uint32_t* out;
  uint32_t words = 0;
  uint64_t acc = 0;
  int pending = 0;  // < 32 between calls

  HF_JENC_HD explicit BitPacker(uint32_t* o) : out(o) {}
  HF_JENC_HD void put(uint32_t bits, int len) {
    acc = (acc << len) | bits;
    pending += len;
    if (pending >= 32) {
      pending -= 32;
      out[words++] = uint32_t(acc >> pending);
    }
  }
  // Stores the last partial word (left-aligned). Returns the bit count.
  HF_JENC_HD uint32_t finish() {
    if (pending) out[words] = uint32_t(acc << (32 - pending));
    return words * 32 + uint32_t(pending);
  }
};

// Worst-case unstuffed words of one MCU's bits.
constexpr int kMcuBitWords = kBlocksPerMcu * ((20 + 63 * 26 + 31) / 32);

// The DC predictors at the start of MCU `col` of an interval (jchuff.c: zero after a restart,
// else the DC of the component's previous block: Y block 3, Cb, Cr of the MCU before).
HF_JENC_HD void mcuPredictors(const int16_t* mcu, int col, int pred[3]) {
  if (col == 0) {
    pred[0] = pred[1] = pred[2] = 0;
    return;
  }
  const int16_t* prev = mcu - kCoefsPerMcu;
  pred[0] = prev[3 * 64];
  pred[1] = prev[4 * 64];
  pred[2] = prev[5 * 64];
}

// Pass 1 of the parallel coding: one MCU's blocks (Y x4, Cb, Cr) as unstuffed bits (at most
// kMcuBitWords words at `out`). Returns the bit count.
HF_JENC_HD uint32_t encodeMcuBits(const int16_t* mcu, int pred[3], const HuffCodes& codes,
                                  uint32_t* out) {
  BitPacker w(out);
  for (int b = 0; b < 4; ++b) encodeBlock(mcu + b * 64, pred[0], codes.dc[0], codes.ac[0], w);
  encodeBlock(mcu + 4 * 64, pred[1], codes.dc[1], codes.ac[1], w);
  encodeBlock(mcu + 5 * 64, pred[2], codes.dc[1], codes.ac[1], w);
  return w.finish();
}

HF_JENC_HD uint32_t byteSwap(uint32_t x) {
#if defined(__CUDA_ARCH__)
  return __byte_perm(x, 0, 0x0123);
#else
  return __builtin_bswap32(x);
#endif
}

// Byte output in memory order into 32-bit words, with a fast path for 4 bytes at once.
struct ByteWriter {
  uint32_t* out;
  uint32_t words = 0;
  uint64_t stage = 0;  // staged bytes, the first in the low byte
  int staged = 0;      // < 4 between calls

  HF_JENC_HD explicit ByteWriter(uint32_t* o) : out(o) {}
  HF_JENC_HD void flushWord() {
    if (staged >= 4) {
      out[words++] = uint32_t(stage);
      stage >>= 32;
      staged -= 4;
    }
  }
  HF_JENC_HD void putByte(uint32_t b) {
    stage |= uint64_t(b) << (8 * staged);
    ++staged;
    flushWord();
  }
  HF_JENC_HD void putStuffed(uint32_t b) {
    putByte(b);
    if (b == 0xffu) putByte(0);
  }
  // Four entropy-coded bytes, the first in bits 31..24, each 0xFF followed by a stuffed 0x00.
  HF_JENC_HD void putStuffed32(uint32_t x) {
    if ((~x - 0x01010101u) & x & 0x80808080u) {  // some byte is 0xFF
      putStuffed(x >> 24);
      putStuffed((x >> 16) & 0xffu);
      putStuffed((x >> 8) & 0xffu);
      putStuffed(x & 0xffu);
      return;
    }
    stage |= uint64_t(byteSwap(x)) << (8 * staged);
    staged += 4;
    flushWord();
  }
  HF_JENC_HD uint32_t finish() {
    if (staged) out[words] = uint32_t(stage);
    return words * 4 + uint32_t(staged);
  }
};

// Pass 2: one interval's MCU bit strings (MCU m: mcuBits[m] bits at mcuWords + m * stride)
// concatenated, byte-stuffed, padded with 1-bits to a byte, and followed by RSTn unless
// restartIndex < 0 (as encodeInterval). Returns the byte count written at `out`.
HF_JENC_HD uint32_t packInterval(const uint32_t* mcuWords, size_t stride, const uint32_t* mcuBits,
                                 int mcus, int restartIndex, uint32_t* out) {
  ByteWriter w(out);
  uint64_t acc = 0;
  int pending = 0;  // < 32
  for (int m = 0; m < mcus; ++m) {
    const uint32_t* src = mcuWords + size_t(m) * stride;
    const uint32_t bits = mcuBits[m];
    const uint32_t full = bits >> 5;
    const int rest = int(bits & 31u);
    for (uint32_t i = 0; i < full; ++i) {
      acc = (acc << 32) | src[i];
      w.putStuffed32(uint32_t(acc >> pending));
    }
    if (rest) {
      acc = (acc << rest) | (src[full] >> (32 - rest));
      pending += rest;
      if (pending >= 32) {
        pending -= 32;
        w.putStuffed32(uint32_t(acc >> pending));
      }
    }
  }
  if (pending & 7) {  // jchuff.c flush_bits: 1-bits to the byte boundary
    const int k = 8 - (pending & 7);
    acc = (acc << k) | ((1u << k) - 1u);
    pending += k;
  }
  while (pending >= 8) {
    pending -= 8;
    w.putStuffed(uint32_t(acc >> pending) & 0xffu);
  }
  if (restartIndex >= 0) {
    w.putByte(0xffu);
    w.putByte(0xd0u + uint32_t(restartIndex & 7));
  }
  return w.finish();
}

// The serial reference of passes 1 and 2 together (the CPU test checks that they agree).
// Codes one restart interval: `mcus` MCUs of 6 zig-zag blocks each (coefs, MCU-major), the DC
// predictors starting at 0 (jchuff.c resets them at every restart), padded to a byte with
// 1-bits; then, unless `restartIndex` < 0, the marker RSTn, n = restartIndex mod 8. Returns the
// byte count written at `out`.
HF_JENC_HD uint32_t encodeInterval(const int16_t* coefs, int mcus, const HuffCodes& codes,
                                   int restartIndex, uint32_t* out) {
  BitWriter w(out);
  int pred[3] = {0, 0, 0};
  for (int m = 0; m < mcus; ++m) {
    const int16_t* mcu = coefs + size_t(m) * kCoefsPerMcu;
    for (int b = 0; b < 4; ++b) encodeBlock(mcu + b * 64, pred[0], codes.dc[0], codes.ac[0], w);
    encodeBlock(mcu + 4 * 64, pred[1], codes.dc[1], codes.ac[1], w);
    encodeBlock(mcu + 5 * 64, pred[2], codes.dc[1], codes.ac[1], w);
  }
  w.padToByte();
  if (restartIndex >= 0) {
    w.putByte(0xffu);
    w.putByte(0xd0u + uint32_t(restartIndex & 7));
  }
  return w.finish();
}

// Worst-case 32-bit words of one interval of `mcus` MCUs (with its RST marker).
HF_JENC_HD uint32_t intervalWords(int mcus) {
  return (uint32_t(mcus) * uint32_t(kMaxMcuBytes) + 2u + 3u) / 4u;
}

}  // namespace hfjenc

// ---- host side (src/gpu/imagery/jpeg_encode_host.cpp) ----

namespace hfjenc {

// The coding tables of `quality` (1..100), taken from the tables-only stream the archive stores
// (himg::makeJpegTables: libjpeg's jpeg_set_quality scaling of the Annex K tables with
// force_baseline, and the Annex K Huffman tables), so tiles and tables agree by construction.
struct Tables {
  uint16_t quant[2][64];  // luma, chroma; natural order
  HuffCodes codes;
};
// False when the tables stream is not what it should be (never, for a valid quality).
bool makeTables(int quality, Tables& t);

// The CPU model of the transform kernel for one size x size tile: uncovered texels (alpha <
// 128) as grey 128, YCbCr, 4:2:0, FDCT, quantisation, zig-zag. coefs: (size / 16)^2 MCUs in
// raster order, 6 blocks of 64 each. coverage: size * size / 8 bytes, 1 bit per texel, MSB
// first. Returns true when some texel is uncovered.
bool transformTile(const uint8_t* rgba, int size, const Tables& t, int16_t* coefs,
                   uint8_t* coverage);

// Stream assembly (himg::encodeJpegTile's marker layout): SOI, APP9 "HFCOV" + zlib level 9 of the
// coverage bits (when `coverage` is not null), SOF0, DRI, SOS, the entropy-coded data (every
// interval with its RST marker but the last), EOI. False when the coverage does not fit one
// marker segment.
bool assembleStream(int size, const uint8_t* coverage, const uint8_t* entropy, size_t entropyBytes,
                    std::vector<uint8_t>& out);

// The whole encoder on the CPU, through the same core functions as the kernels (tests).
bool encodeTileModel(const uint8_t* rgba, int size, int quality, std::vector<uint8_t>& out);

}  // namespace hfjenc
