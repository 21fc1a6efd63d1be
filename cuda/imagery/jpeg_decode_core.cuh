// jpeg_decode_core.cuh - the per-thread arithmetic of the CUDA JPEG tile decoder
// (cuda/imagery/jpeg_decode.cu) as __host__ __device__ functions, so that a plain C++ test
// (tests/gpu/jpeg_decode_core_test.cpp) drives it on the CPU exactly as the kernels do and
// compares with himg::JpegTileDecoder (libjpeg-turbo 2.1.5). Also the layouts that the host
// (src/gpu/imagery/jpeg_decode.cpp) stages for the kernels, and the host parser's declarations.
//
// What is replicated from libjpeg-turbo, and how (the decoder is bit-exact for every stream
// himg::encodeJpegTile writes; see "Differences" for corrupt streams):
// - Huffman decoding: jdhuff.c's canonical decoding (maxcode / valoffset per length, codes longer
//   than 16 bits are bad), here with a 9-bit lookahead table and the same slow path, plus
//   stb_image's "fast AC" table (code + value bits <= 9 decoded by one read). DC
//   prediction per component, reset at every restart; the DC value is stored as JCOEF (int16)
//   like libjpeg does. HUFF_EXTEND as in jdhuff.h.
// - IDCT: jidctint.c's jpeg_idct_islow (CONST_BITS 13, PASS1_BITS 2, the FIX_ constants, the
//   DESCALE rounding) and its output range-limit table idct_range_limit[x & 1023] from
//   jdmaster.c's prepare_range_limit_table, which is clamp(sign_extend_10(x) + 128, 0, 255). The
//   zero-AC shortcuts of jidctint.c give the same numbers as the full path (shown in the comments
//   of idctBlock), so only the whole-block one is taken. The SIMD IDCTs libjpeg-turbo runs on x86
//   are bit-exact with jidctint.c for in-range coefficients (everything a forward DCT of 8-bit
//   samples can produce); the CPU test confirms it on real and synthetic tiles.
// - Upsampling: jdsample.c's h2v2_fancy_upsample (triangle filter, 3/4 + 1/4 in both directions,
//   +8 bias for even output columns, +7 for odd ones), with jdmainct.c's context rows: the row
//   above the first and below the last chroma row repeat that row; at the left and right edges
//   the special-cased columns equal the general formula with the neighbour column clamped.
// - Colour: jdcolor.c's ycc_rgb_convert with build_ycc_rgb_table's integer tables (SCALEBITS 16,
//   FIX(x) = (long)(x * 65536 + 0.5)) computed inline instead of looked up.
//
// Differences from libjpeg (corrupt streams only; libjpeg accepts these with wrong pixels where
// this decoder rejects the tile, never the other way round):
// - a non-zero AC coefficient at zig-zag index > 63 (libjpeg writes it to index 63);
// - any bytes after an interval's last code beyond its < 8 padding bits (libjpeg warns about
//   extraneous data only when its bit buffer did not already reach the marker);
// - 0xFF fill bytes before a marker, or a marker other than the expected RSTn inside the
//   entropy-coded data.
// Integer overflow cannot happen for valid streams; for hostile coefficients the IDCT wraps
// modulo 2^32 (unsigned arithmetic: defined behaviour on the host too) instead of libjpeg's
// 64-bit / 16-bit SIMD arithmetic.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define HF_JDEC_HD __host__ __device__ __forceinline__
#else
#define HF_JDEC_HD inline
#endif

namespace hfjdec {

// ---- tables (built on the host from the tables-only stream, uploaded once by setTables) ----

constexpr int kLookBits = 9;  // Huffman lookahead: codes of up to 9 bits take one table read

struct HuffTable {
  uint16_t look[1 << kLookBits];  // top 9 bits -> (code length << 8) | symbol; 0: longer code
  // AC tables: top 9 bits -> a whole non-zero coefficient when its code and value bits fit in
  // 9 and the value in int8: (value << 8) | (run << 4) | (code + value bits); 0: not such.
  int16_t fastac[1 << kLookBits];
  int32_t maxcode[18];            // [l]: largest code of length l (-1: none), l = 1..16
  int32_t valoffset[18];          // huffval index of a length-l code = code + valoffset[l]
  uint8_t huffval[256];
};

struct alignas(16) Tables {
  HuffTable dc[2];
  HuffTable ac[2];
  uint16_t quant[2][64];  // natural (row-major) order
  uint8_t natural[64];    // zig-zag index -> natural index (jpeg_natural_order)
  uint8_t have_quant[2], have_dc[2], have_ac[2];
  uint8_t pad_[10];
};
static_assert(sizeof(Tables) % 16 == 0, "Tables is copied in 16-byte words");

// ---- the staged batch ----
//
// One pinned buffer, one copy: [TileDesc x count][coverage masks][entropy-coded bytes],
// every part at a multiple of 16 bytes. Each tile's entropy-coded bytes are followed by zero
// bytes up to the next multiple of 16, which the marker scan's word loads may read.

constexpr uint64_t kNoMask = ~uint64_t(0);

// How a tile's coverage is staged. kMaskBits: size * size bits, row-major, the first texel in
// a byte's 0x80 bit (the HFCOV segment inflated). kMaskBands, when every row's covered texels
// form one run (possibly empty): uint16 n, then n bands {yEnd, x0, x1}, yEnd increasing, the
// last = size; row y belongs to the first band with y < yEnd and covers x0 <= x < x1. A tile
// cut by the DEM's edge is 1 or 2 bands (14-20 bytes instead of 8 KiB at 256^2): what crosses
// PCIe stays close to the compressed payload.
enum MaskKind : uint8_t { kMaskBits = 0, kMaskBands = 1 };

struct alignas(16) TileDesc {
  uint64_t data;       // offset of the entropy-coded bytes (a multiple of 16)
  uint64_t mask;       // offset of the staged coverage (mask_kind), or kNoMask
  uint32_t bytes;      // entropy-coded bytes (markers included, SOS header and EOI excluded)
  uint8_t quant[3];    // quantisation table per component (0 or 1)
  uint8_t dc[3];       // DC Huffman table per component
  uint8_t ac[3];       // AC Huffman table per component
  uint8_t valid;       // 0: failed the host checks; the kernels leave the tile alone
  uint8_t mask_kind;   // MaskKind of `mask`
};
static_assert(sizeof(TileDesc) == 32, "TileDesc layout");

// Per-tile failure flags (bits), set by the kernels with atomicOr.
enum Failure : uint32_t {
  kFailMarker = 1u << 0,     // 0xFF followed by neither 0x00 nor RSTn, or ending the data
  kFailRstOrder = 1u << 1,   // RSTn out of sequence
  kFailRstCount = 1u << 2,   // not exactly one RST between consecutive MCU rows
  kFailHuffman = 1u << 3,    // a code longer than 16 bits (no such code in the table)
  kFailCoefIndex = 1u << 4,  // a coefficient past zig-zag index 63
  kFailOverrun = 1u << 5,    // an interval needs more bits than it has
  kFailTrailing = 1u << 6,   // an interval has whole bytes left after its last MCU
};

// ---- marker scan: one warp per tile, 4 bytes per lane per step ----
//
// Byte rules (libjpeg's, restricted to what a tile may hold): 0xFF 0x00 is a data byte 0xFF;
// 0xFF 0xD0..0xD7 is a restart marker (both bytes dropped, the next interval starts after it);
// any other byte after 0xFF, or 0xFF as the last byte, is corrupt.

struct LaneScan {
  uint32_t keep;    // bit i: byte i is an entropy-coded data byte
  uint32_t marker;  // bit i: byte i is the code byte of an RSTn marker
  bool error;
};

// b: the lane's bytes, `valid` (0..4) of them inside the data; prev: the byte before b[0] (-1
// at the start of the data); next: the byte after b[3] (-1 past the end).
HF_JDEC_HD LaneScan scanLane(int prev, const uint8_t b[4], int next, int valid) {
  LaneScan s{0u, 0u, false};
  for (int i = 0; i < 4; ++i) {
    if (i >= valid) break;
    const int p = i == 0 ? prev : int(b[i - 1]);
    const int n = i == 3 ? next : (i + 1 < valid ? int(b[i + 1]) : -1);
    if (b[i] == 0xFF) {
      if (n == 0x00) s.keep |= 1u << i;
      else if (!(n >= 0xD0 && n <= 0xD7)) s.error = true;
    } else if (p == 0xFF) {
      if (b[i] != 0x00) s.marker |= 1u << i;  // validated when its 0xFF was looked at
    } else {
      s.keep |= 1u << i;
    }
  }
  return s;
}

// Places lane's bytes: `ord` = RST markers before the lane's first byte in the tile, `o` = kept
// bytes before it (warp prefix sums). Writes kept bytes to out[o..], the start of interval
// ord + 1 to st[ord + 1] for each marker (rows intervals: at most rows - 1 markers). Returns
// Failure bits.
HF_JDEC_HD uint32_t placeLane(const LaneScan& s, const uint8_t b[4], int ord, uint32_t o, int rows,
                              uint32_t* st, uint8_t* out) {
  uint32_t fail = s.error ? uint32_t(kFailMarker) : 0u;
  for (int i = 0; i < 4; ++i) {
    if (s.marker & (1u << i)) {
      if (b[i] != 0xD0 + (ord & 7)) fail |= kFailRstOrder;
      if (ord >= rows - 1) fail |= kFailRstCount;
      else st[ord + 1] = o;
      ++ord;
    }
    if (s.keep & (1u << i)) out[o++] = b[i];
  }
  return fail;
}

// ---- Huffman decoding of one restart interval ----

struct BitReader {
  const uint8_t* data;  // the interval's unstuffed bytes
  uint32_t len;         // bytes
  uint32_t pos;         // next byte to load (loads past len give zeros, as libjpeg's do)
  int bits;             // valid bits in buf (MSB-aligned)
  uint64_t buf;
};

HF_JDEC_HD void brFill(BitReader& br) {
  while (br.bits <= 56) {
    const uint64_t v = br.pos < br.len ? uint64_t(br.data[br.pos]) : 0u;
    br.buf |= v << (56 - br.bits);
    br.bits += 8;
    ++br.pos;
  }
}
// Bits consumed so far (may exceed 8 * len: then the interval overran).
HF_JDEC_HD uint64_t brConsumed(const BitReader& br) { return uint64_t(br.pos) * 8u - uint64_t(br.bits); }
HF_JDEC_HD uint32_t brGet(BitReader& br, int n) {  // 1 <= n <= 16, br.bits >= n
  const uint32_t v = uint32_t(br.buf >> (64 - n));
  br.buf <<= n;
  br.bits -= n;
  return v;
}
// jdhuff.h HUFF_EXTEND: the s-bit magnitude category value r as a signed coefficient.
HF_JDEC_HD int huffExtend(uint32_t r, int s) {
  return int(r) < (1 << (s - 1)) ? int(r) - (1 << s) + 1 : int(r);
}

// One symbol; -1 for a bad code. Needs br.bits >= 16.
HF_JDEC_HD int decodeSymbol(BitReader& br, const HuffTable& h) {
  const uint32_t e = h.look[uint32_t(br.buf >> (64 - kLookBits))];
  if (e) {
    const int l = int(e >> 8);
    br.buf <<= l;
    br.bits -= l;
    return int(e & 0xFFu);
  }
  int l = kLookBits + 1;
  int32_t code = int32_t(br.buf >> (64 - l));
  while (code > h.maxcode[l]) {
    if (++l > 16) return -1;
    code = int32_t(br.buf >> (64 - l));
  }
  br.buf <<= l;
  br.bits -= l;
  return int(h.huffval[(h.valoffset[l] + code) & 0xFF]);
}

// Which tables each component uses (from SOF / SOS).
struct Selectors {
  uint8_t quant[3], dc[3], ac[3];
};

// Decodes one restart interval (`mcus` MCUs of 4 Y + Cb + Cr blocks) from its unstuffed bytes.
// blk: 64 int16 of scratch, all zero on entry. sink(blockIndex, blk) receives every block in MCU
// order (index = mcu * 6 + {Y0, Y1, Y2, Y3, Cb, Cr}); it must copy it out and zero it again (the
// kernel does both with 16-byte accesses). Returns 0 or Failure bits (blk is then not zero).
//
// One loop iteration per Huffman symbol (DC or AC), whatever block it belongs to: the 32 threads
// of a warp decode 32 different intervals, and a flat loop keeps them in step (nested block /
// coefficient loops let every thread sit at a different loop level: 5x the issued instructions).
template <class Sink>
HF_JDEC_HD uint32_t decodeInterval(const uint8_t* data, uint32_t len, int mcus, const Tables& t,
                                   const Selectors& sel, int16_t* blk, Sink& sink) {
  BitReader br{data, len, 0u, 0, 0u};
  brFill(br);
  int pred0 = 0, pred1 = 0, pred2 = 0;  // DC predictors: reset at every restart
  const uint64_t limit = uint64_t(len) * 8u;
  const int blocks = mcus * 6;
  int index = 0;  // block in the interval (mcu * 6 + {Y0, Y1, Y2, Y3, Cb, Cr})
  int b = 0;      // block in the MCU
  int k = 0;      // next zig-zag index in the block (0: its DC)
  while (index < blocks) {
    if (br.bits < 32) brFill(br);  // a code (<= 16 bits) and its value (<= 15 bits)
    const int c = b < 4 ? 0 : b - 3;
    if (k == 0) {
      // (selects, not sel.dc[c]: a dynamically indexed local array would live in memory)
      const int s = decodeSymbol(br, t.dc[c == 0 ? sel.dc[0] : c == 1 ? sel.dc[1] : sel.dc[2]]);
      if (s < 0) return kFailHuffman;
      const int diff = s ? huffExtend(brGet(br, s), s) : 0;  // s <= 15: the tables are checked
      int pred = c == 0 ? pred0 : c == 1 ? pred1 : pred2;
      pred += diff;
      if (c == 0) pred0 = pred;
      else if (c == 1) pred1 = pred;
      else pred2 = pred;
      blk[0] = int16_t(pred);  // JCOEF, as libjpeg stores it
      k = 1;
    } else {
      const HuffTable& ac = t.ac[c == 0 ? sel.ac[0] : c == 1 ? sel.ac[1] : sel.ac[2]];
      const int fa = ac.fastac[uint32_t(br.buf >> (64 - kLookBits))];
      if (fa) {  // the common case: run, size and value in one table read
        k += (fa >> 4) & 15;
        if (k > 63) return kFailCoefIndex;
        br.buf <<= (fa & 15);
        br.bits -= (fa & 15);
        blk[t.natural[k]] = int16_t(fa >> 8);
        ++k;
      } else {
        const int rs = decodeSymbol(br, ac);
        if (rs < 0) return kFailHuffman;
        const int r = rs >> 4, s = rs & 15;
        if (s) {
          k += r;
          if (k > 63) return kFailCoefIndex;
          blk[t.natural[k]] = int16_t(huffExtend(brGet(br, s), s));
          ++k;
        } else {
          k = r == 15 ? k + 16 : 64;  // ZRL (past 63 ends the block, as in libjpeg) or EOB
        }
      }
    }
    if (k >= 64) {
      sink(index, blk);
      ++index;
      k = 0;
      if (++b == 6) {
        b = 0;
        if (brConsumed(br) > limit) return kFailOverrun;
      }
    }
  }
  // libjpeg: process_restart discards the padding bits; whole bytes left are extraneous data.
  if (limit - brConsumed(br) >= 8u) return kFailTrailing;
  return 0;
}

// ---- IDCT (jidctint.c jpeg_idct_islow), unsigned arithmetic = two's complement int32 ----

constexpr int kConstBits = 13;
constexpr int kPass1Bits = 2;
constexpr uint32_t kFix0_298631336 = 2446u;
constexpr uint32_t kFix0_390180644 = 3196u;
constexpr uint32_t kFix0_541196100 = 4433u;
constexpr uint32_t kFix0_765366865 = 6270u;
constexpr uint32_t kFix0_899976223 = 7373u;
constexpr uint32_t kFix1_175875602 = 9633u;
constexpr uint32_t kFix1_501321110 = 12299u;
constexpr uint32_t kFix1_847759065 = 15137u;
constexpr uint32_t kFix1_961570560 = 16069u;
constexpr uint32_t kFix2_053119869 = 16819u;
constexpr uint32_t kFix2_562915447 = 20995u;
constexpr uint32_t kFix3_072711026 = 25172u;

HF_JDEC_HD int32_t descale(uint32_t x, int n) { return int32_t(x + (1u << (n - 1))) >> n; }
// idct_range_limit[x & RANGE_MASK] of jdmaster.c's table.
HF_JDEC_HD uint32_t rangeLimit(int32_t x) {
  const int v = int((uint32_t(x) & 1023u) ^ 512u) - 512 + 128;
  return uint32_t(v < 0 ? 0 : v > 255 ? 255 : v);
}

// One 1-D pass on 8 values (the even/odd decomposition of jidctint.c); out0..7 before DESCALE.
HF_JDEC_HD void idct1d(uint32_t i0, uint32_t i1, uint32_t i2, uint32_t i3, uint32_t i4, uint32_t i5, uint32_t i6,
                       uint32_t i7, uint32_t o[8]) {
  // Even part.
  uint32_t z2 = i2, z3 = i6;
  uint32_t z1 = (z2 + z3) * kFix0_541196100;
  uint32_t tmp2 = z1 + z3 * (0u - kFix1_847759065);
  uint32_t tmp3 = z1 + z2 * kFix0_765366865;
  uint32_t tmp0 = (i0 + i4) << kConstBits;
  uint32_t tmp1 = (i0 - i4) << kConstBits;
  const uint32_t tmp10 = tmp0 + tmp3, tmp13 = tmp0 - tmp3;
  const uint32_t tmp11 = tmp1 + tmp2, tmp12 = tmp1 - tmp2;
  // Odd part.
  tmp0 = i7;
  tmp1 = i5;
  tmp2 = i3;
  tmp3 = i1;
  z1 = tmp0 + tmp3;
  z2 = tmp1 + tmp2;
  z3 = tmp0 + tmp2;
  uint32_t z4 = tmp1 + tmp3;
  const uint32_t z5 = (z3 + z4) * kFix1_175875602;
  tmp0 *= kFix0_298631336;
  tmp1 *= kFix2_053119869;
  tmp2 *= kFix3_072711026;
  tmp3 *= kFix1_501321110;
  z1 *= 0u - kFix0_899976223;
  z2 *= 0u - kFix2_562915447;
  z3 *= 0u - kFix1_961570560;
  z4 *= 0u - kFix0_390180644;
  z3 += z5;
  z4 += z5;
  tmp0 += z1 + z3;
  tmp1 += z2 + z4;
  tmp2 += z2 + z3;
  tmp3 += z1 + z4;
  o[0] = tmp10 + tmp3;
  o[7] = tmp10 - tmp3;
  o[1] = tmp11 + tmp2;
  o[6] = tmp11 - tmp2;
  o[2] = tmp12 + tmp1;
  o[5] = tmp12 - tmp1;
  o[3] = tmp13 + tmp0;
  o[4] = tmp13 - tmp0;
}

// Coefficient k (natural order) of a block stored as 32 words of two int16 (little-endian).
HF_JDEC_HD int32_t coefAt(const uint32_t* cw, int k) {
  return int32_t(int16_t(uint16_t(cw[k >> 1] >> (16 * (k & 1)))));
}

// Dequantisation + jpeg_idct_islow of one block. out: 16 words, row r's 8 samples in words 2r
// (columns 0-3) and 2r + 1 (columns 4-7), column c in byte c & 3.
HF_JDEC_HD void idctBlock(const uint32_t cw[32], const uint16_t q[64], uint32_t out[16]) {
  // All AC zero: every column pass gives dq0 << PASS1_BITS in column 0 only, every row pass the
  // zero-row shortcut DESCALE(dq0 << 2, 5) = (dq0 + 4) >> 3 - what the full path computes too.
  uint32_t any = cw[0] >> 16;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int i = 1; i < 32; ++i) any |= cw[i];
  if (!any) {
    const uint32_t dq0 = uint32_t(coefAt(cw, 0) * int32_t(q[0]));
    const uint32_t v = rangeLimit(descale(dq0 << kPass1Bits, kPass1Bits + 3));
    const uint32_t w = v * 0x01010101u;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int i = 0; i < 16; ++i) out[i] = w;
    return;
  }
  uint32_t ws[64];
  // Pass 1: columns (the zero-AC column shortcut of jidctint.c equals the full path:
  // DESCALE(dq0 << 13, 11) = dq0 << 2).
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int c = 0; c < 8; ++c) {
    uint32_t in[8];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int r = 0; r < 8; ++r) in[r] = uint32_t(coefAt(cw, 8 * r + c) * int32_t(q[8 * r + c]));
    uint32_t o[8];
    idct1d(in[0], in[1], in[2], in[3], in[4], in[5], in[6], in[7], o);
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int r = 0; r < 8; ++r) ws[8 * r + c] = uint32_t(descale(o[r], kConstBits - kPass1Bits));
  }
  // Pass 2: rows (the zero-AC row shortcut DESCALE(w0, 5) equals DESCALE(w0 << 13, 18)).
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int r = 0; r < 8; ++r) {
    const uint32_t* w = ws + 8 * r;
    uint32_t o[8];
    idct1d(w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], o);
    uint32_t lo = 0, hi = 0;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int c = 0; c < 4; ++c) {
      lo |= rangeLimit(descale(o[c], kConstBits + kPass1Bits + 3)) << (8 * c);
      hi |= rangeLimit(descale(o[c + 4], kConstBits + kPass1Bits + 3)) << (8 * c);
    }
    out[2 * r] = lo;
    out[2 * r + 1] = hi;
  }
}

// ---- h2v2 fancy upsampling and colour conversion ----

// One upsampled chroma sample: `near`/`far` are the chroma samples of the nearer and the other
// input row at this output column's chroma column, `near2`/`far2` those at the neighbouring
// chroma column (left for even output columns, right for odd; the column itself at the edges).
HF_JDEC_HD int fancySample(int near, int far, int near2, int far2, bool odd) {
  const int thiscolsum = near * 3 + far;
  const int othercolsum = near2 * 3 + far2;
  return (thiscolsum * 3 + othercolsum + (odd ? 7 : 8)) >> 4;
}

// jdcolor.c's tables: FIX(x) = (JLONG)(x * 65536 + 0.5).
constexpr int32_t kFixCrR = int32_t(1.40200 * 65536.0 + 0.5);
constexpr int32_t kFixCbB = int32_t(1.77200 * 65536.0 + 0.5);
constexpr int32_t kFixCrG = int32_t(0.71414 * 65536.0 + 0.5);
constexpr int32_t kFixCbG = int32_t(0.34414 * 65536.0 + 0.5);

HF_JDEC_HD uint32_t clamp255(int v) { return uint32_t(v < 0 ? 0 : v > 255 ? 255 : v); }

// RGBA8 (little-endian word: R in the low byte) with alpha 255 of one YCbCr sample.
HF_JDEC_HD uint32_t yccToRgba(int y, int cb, int cr) {
  const int xcb = cb - 128, xcr = cr - 128;
  const int r = y + ((kFixCrR * xcr + (1 << 15)) >> 16);             // Cr_r_tab
  const int g = y + ((-kFixCbG * xcb + (1 << 15) - kFixCrG * xcr) >> 16);  // Cb_g_tab + Cr_g_tab
  const int b = y + ((kFixCbB * xcb + (1 << 15)) >> 16);             // Cb_b_tab
  return clamp255(r) | clamp255(g) << 8 | clamp255(b) << 16 | 0xFF000000u;
}

// ---- pixel regions: up to kBandMcus MCU rows x kChunkMcus MCU columns of a tile ----
//
// The pixel stage IDCTs a region's Y blocks and the chroma blocks of the region plus the ring of
// blocks around it (clipped to the tile: the triangle filter reaches one chroma sample beyond the
// region) into a Y buffer and two chroma buffers, then converts texels 4 at a time.

constexpr int kBandMcus = 4;
constexpr int kChunkMcus = 16;
constexpr int kYStride = kChunkMcus * 16;       // 256 bytes per Y buffer row
constexpr int kYBytes = kBandMcus * 16 * kYStride;
constexpr int kCStride = (kChunkMcus + 2) * 8;  // 144: region + one block each side
constexpr int kCBytes = (kBandMcus + 2) * 8 * kCStride;

struct Region {
  int size;      // tile side
  int mr0, nr;   // first MCU row, MCU rows
  int mc0, nc;   // first MCU column, MCU columns
  int cr0, cc0;  // first chroma block row / column held (one before the region unless at 0)
  int ccn;       // chroma block columns held
  int ny, nch;   // Y blocks, chroma blocks per component
};

HF_JDEC_HD int regionBands(int size) { return (size / 16 + kBandMcus - 1) / kBandMcus; }
HF_JDEC_HD int regionChunks(int size) { return (size / 16 + kChunkMcus - 1) / kChunkMcus; }

HF_JDEC_HD Region makeRegion(int size, int band, int chunk) {
  Region g;
  const int mcus = size / 16;
  g.size = size;
  g.mr0 = band * kBandMcus;
  g.nr = mcus - g.mr0 < kBandMcus ? mcus - g.mr0 : kBandMcus;
  g.mc0 = chunk * kChunkMcus;
  g.nc = mcus - g.mc0 < kChunkMcus ? mcus - g.mc0 : kChunkMcus;
  g.cr0 = g.mr0 > 0 ? g.mr0 - 1 : 0;
  g.cc0 = g.mc0 > 0 ? g.mc0 - 1 : 0;
  const int cr1 = g.mr0 + g.nr < mcus ? g.mr0 + g.nr : mcus - 1;
  const int cc1 = g.mc0 + g.nc < mcus ? g.mc0 + g.nc : mcus - 1;
  g.ccn = cc1 - g.cc0 + 1;
  g.ny = g.nr * g.nc * 4;
  g.nch = (cr1 - g.cr0 + 1) * g.ccn;
  return g;
}
HF_JDEC_HD int regionBlocks(const Region& g) { return g.ny + 2 * g.nch; }

struct BlockJob {
  int mr, mc, blk;  // MCU (tile coordinates) and block in it (0-3 Y, 4 Cb, 5 Cr)
  int comp;         // 0 Y, 1 Cb, 2 Cr: the buffer written
  int offset;       // of the block's top-left sample in that buffer
  int stride;
};
HF_JDEC_HD BlockJob blockJob(const Region& g, int item) {
  BlockJob j;
  if (item < g.ny) {
    const int m = item >> 2;
    j.blk = item & 3;
    j.mr = g.mr0 + m / g.nc;
    j.mc = g.mc0 + m % g.nc;
    j.comp = 0;
    j.stride = kYStride;
    j.offset = ((j.mr - g.mr0) * 16 + (j.blk >> 1) * 8) * kYStride + (j.mc - g.mc0) * 16 + (j.blk & 1) * 8;
  } else {
    const int c = item - g.ny;
    j.comp = c >= g.nch ? 2 : 1;
    const int m = c - (j.comp - 1) * g.nch;
    j.mr = g.cr0 + m / g.ccn;
    j.mc = g.cc0 + m % g.ccn;
    j.blk = 3 + j.comp;
    j.stride = kCStride;
    j.offset = (j.mr - g.cr0) * 8 * kCStride + (j.mc - g.cc0) * 8;
  }
  return j;
}

HF_JDEC_HD int regionQuads(const Region& g) { return g.nc * 4 * g.nr * 16; }

// Coverage of texels gx .. gx + 3 of row gy: bits 0x80 .. 0x10 (texel gx first), from the
// staged coverage `mask` of kind `kind` (kMaskBands: 2-byte aligned).
HF_JDEC_HD uint32_t coverageQuad(const uint8_t* mask, uint8_t kind, int size, int gx, int gy) {
  if (kind == kMaskBits) {
    const size_t bit = size_t(gy) * size_t(size) + size_t(gx);
    return (uint32_t(mask[bit >> 3]) << (bit & 7)) & 0xF0u;
  }
  const uint16_t* b = reinterpret_cast<const uint16_t*>(mask);
  int lo = 0, hi = int(b[0]) - 1;  // the first band with gy < yEnd (binary search)
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (gy < int(b[1 + 3 * mid])) hi = mid;
    else lo = mid + 1;
  }
  const int x0 = b[2 + 3 * lo], x1 = b[3 + 3 * lo];
  uint32_t m = 0;
  for (int k = 0; k < 4; ++k)
    if (gx + k >= x0 && gx + k < x1) m |= 0x80u >> k;
  return m;
}

// Texels gx .. gx + 3 of row gy (tile coordinates) of quad q of the region, RGBA8 words; mask:
// the tile's staged coverage of kind maskKind, or nullptr.
HF_JDEC_HD void pixelQuad(const Region& g, int q, const uint8_t* ybuf, const uint8_t* cbbuf, const uint8_t* crbuf,
                          const uint8_t* mask, uint8_t maskKind, uint32_t px[4], int& gx, int& gy) {
  const int quads_per_row = g.nc * 4;
  const int ly = q / quads_per_row, lx = (q % quads_per_row) * 4;
  gy = g.mr0 * 16 + ly;
  gx = g.mc0 * 16 + lx;
  const int csize = g.size / 2;
  const int ci = gy >> 1;
  const int cfar = (gy & 1) ? (ci + 1 < csize ? ci + 1 : csize - 1) : (ci > 0 ? ci - 1 : 0);
  const int rn = (ci - g.cr0 * 8) * kCStride, rf = (cfar - g.cr0 * 8) * kCStride;
  for (int k = 0; k < 4; ++k) {
    const int x = gx + k, j = x >> 1;
    const bool odd = (x & 1) != 0;
    const int jn = odd ? (j + 1 < csize ? j + 1 : csize - 1) : (j > 0 ? j - 1 : 0);
    const int lj = j - g.cc0 * 8, ljn = jn - g.cc0 * 8;
    const int cb = fancySample(cbbuf[rn + lj], cbbuf[rf + lj], cbbuf[rn + ljn], cbbuf[rf + ljn], odd);
    const int cr = fancySample(crbuf[rn + lj], crbuf[rf + lj], crbuf[rn + ljn], crbuf[rf + ljn], odd);
    px[k] = yccToRgba(ybuf[ly * kYStride + lx + k], cb, cr);
  }
  if (mask) {
    const uint32_t m = coverageQuad(mask, maskKind, g.size, gx, gy);
    for (int k = 0; k < 4; ++k)
      if (!(m & (0x80u >> k))) px[k] &= 0x00FFFFFFu;
  }
}

}  // namespace hfjdec

// ---- host side (src/gpu/imagery/jpeg_decode.cpp, and the launcher in jpeg_decode.cu) ----
#include <cuda_runtime_api.h>

#include <string>

namespace hfjdec {

// What the kernels (cuda/imagery/jpeg_decode.cu) work on; all pointers are device memory.
struct LaunchArgs {
  const uint8_t* staged = nullptr;  // the uploaded batch ([TileDesc x count]...)
  const Tables* tables = nullptr;   // the archive's tables (uploaded once, not per batch: ~10 KiB)
  uint64_t descs = 0;               // offset of the descriptors in it
  size_t count = 0;
  int size = 0;                     // tile side in texels (multiple of 16, <= 4096)
  uint8_t* unstuffed = nullptr;     // as large as the batch: unstuffed bytes at their tile's offset
  uint32_t* starts = nullptr;       // count x (size / 16 + 1): interval starts, then the end
  int16_t* coef = nullptr;          // count x (size / 16)^2 MCUs x 6 blocks x 64 coefficients
  uint32_t* flags = nullptr;        // count Failure bit sets (cleared by the caller)
  uint8_t* rgba = nullptr;          // count x size x size x 4
};
// Marker scan, Huffman decoding, IDCT + upsampling + colour: three kernels on `stream`.
void launchDecodeKernels(const LaunchArgs& a, cudaStream_t stream);

// Parses a tables-only stream (SOI, DQT/DHT segments in any number and order, other segments
// skipped, EOI) into t, with the checks of libjpeg's get_dqt / get_dht / jpeg_make_d_derived_tbl.
// Supported: 8-bit quantisation tables 0 and 1, Huffman tables 0 and 1 of each class.
bool parseTables(const uint8_t* p, size_t n, Tables& t, std::string& error);

// The facts prepare() needs about one abbreviated tile stream.
struct TileInfo {
  size_t data = 0, bytes = 0;         // entropy-coded bytes: p + data, `bytes` of them
  const uint8_t* coverage = nullptr;  // the zlib data of the HFCOV segment (nullptr: none)
  size_t coverage_bytes = 0;
  Selectors sel{};
};
// Checks one tile's marker segments against the tile format (size x size, baseline, YCbCr
// 4:2:0, DRI = one MCU row, one scan of the 3 components, tables present in t, EOI last).
bool parseTile(const uint8_t* p, size_t n, int size, const Tables& t, TileInfo& info, std::string& error);
// Inflates a coverage segment's zlib data into exactly `bytes` bytes (size * size / 8).
bool inflateCoverage(const uint8_t* z, size_t n, uint8_t* bits, size_t bytes);
// The kMaskBands form of a size x size coverage bitmap into `out` (capacity: size * size / 8
// bytes); returns its bytes, or 0 when some row has more than one run or the bands would not be
// smaller than the bitmap (then stage the bits).
size_t coverageBands(const uint8_t* bits, int size, uint8_t* out);

}  // namespace hfjdec
