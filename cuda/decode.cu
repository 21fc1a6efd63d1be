// decode.cu - the batched HFPaC decode kernels (docs/format.md; host side: src/gpu/decoder.cpp).
// The kernels decode the same bits (HFGPU_DECODE_KERNEL, launchMode below): decodeAreas (one
// group per 16 x 16 area, described first), decodeStrips with 4-row units (`strip`), with
// whole-column units (`cols`, the default since session 22: +19-24 % on the H100,
// bench/results/gpu-decode-s22/) and with half-column units (`cols8`, measured slower; kept for
// the A/B only until the next device session can check its removal).
//
// One group of 64 threads (two warps) per 16 x 16 area of any patch in the batch (AreaDesc ->
// PatchDesc); a block holds kGroups independent groups (each synchronises on its own named
// barrier). Thread t of a group owns column lx = t % 16 and the four rows 4 (t / 16) .. + 3, so
// every store instruction of a warp still writes two whole 32-byte area rows. Per group:
//   1. the (at most 4 x 4) segments the area touches: their 3 x 3 control nets are built once
//      into shared memory by the first threads (the same formulas as layout.h's loadSegment);
//   2. layers 2+: the area's prominent entries are scattered into a 16 x 16 table of
//      corrections in shared memory (no per-point search);
//   3. layer 3: the area's low fields are one contiguous run of words; the group loads them
//      coalesced into shared memory and every thread cuts its b-bit fields out of two words with
//      a funnel shift; a mask bitmap (code 2) comes along the same way.
// Then every thread evaluates its column of its segment as an exact integer quadratic in the
// row (gpu/decode_math.h: one set of 9 products per thread, then 64-bit forward differences per
// row; bit-identical to layout.h's evalSegment, since its four rows never leave one segment:
// n >= 4 and rows start at multiples of 4), adds the residual, applies the mask / clamp / signed
// flip and stores 16 bits per point.
//
// The host validated every stream (codec/stream_index.h) before any AreaDesc was written, so
// every field read here lies inside its section. Values outside 0..65535 at the lossless layer
// (only corrupt streams produce them) are clamped and flagged per patch (kFlagOutOfRange);
// the host turns the flag into hfpac::Status::OutOfRange.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "codec/layout.h"
#include "gpu/cuda_util.h"
#include "gpu/decode_desc.h"
#include "decode_device.cuh"
#include "gpu/decode_math.h"

namespace hfgpu::detail {
namespace {

using hfpac::detail::SegmentControls;
using hfpac::detail::centreBase;
using hfpac::detail::edgeFromOffset;
using hfpac::detail::halfStep;

constexpr int kArea = hfpac::kAreaSide;               // 16
constexpr int kGroupThreads = 64;                     // threads per area
constexpr int kRowsPerThread = kArea * kArea / kGroupThreads;  // 4 consecutive rows
constexpr int kMaxAreaSegments = 16;                  // 4 x 4 segments of m = 5 touch one area
constexpr int kMaxLowWords = (kArea * kArea * hfpac::kMaxBits) / 32 + 1;  // 129
constexpr int kDefaultGroups = 2;                    // areas per block
constexpr int kMaxMaskWords = (kArea * kArea) / 32 + 1;                   // 9
static_assert(kGroupThreads == 4 * kArea && kRowsPerThread == 4, "thread <-> point mapping");
// Resident threads per SM the register budget is set for (__launch_bounds__): 1024 of 2048
// leave 64 registers a thread, enough for no spills (1280 spills a few words).
#ifndef HFGPU_DECODE_RESIDENT
#define HFGPU_DECODE_RESIDENT 1024
#endif
constexpr int kResidentThreads = HFGPU_DECODE_RESIDENT;

// What one area's group keeps in shared memory.
struct GroupShared {
  SegmentControls nets[kMaxAreaSegments];
  int32_t corr[kArea * kArea];
  uint32_t lows[kMaxLowWords + 1];   // + 1: the funnel shift always reads the next word
  uint32_t mask[kMaxMaskWords + 1];
};

// Destination access. Linear: `row` points at sample (0, y) of the patch's rows.
template <bool kSurface>
__device__ __forceinline__ uint16_t loadDst(const PatchDesc& p, const uint16_t* row,
                                            const SurfaceParams& surf, int x, int y) {
  if constexpr (kSurface) {
    unsigned short v;
    surf2Dread(&v, surf.s[p.surface], (p.dstX + x) * int(sizeof(unsigned short)), p.dstY + y);
    return v;
  } else {
    return row[x];
  }
}

template <bool kSurface>
__device__ __forceinline__ void storeDst(const PatchDesc& p, uint16_t* row,
                                         const SurfaceParams& surf, int x, int y, uint16_t v) {
  if constexpr (kSurface) {
    surf2Dwrite(static_cast<unsigned short>(v), surf.s[p.surface],
                (p.dstX + x) * int(sizeof(unsigned short)), p.dstY + y);
  } else {
    row[x] = v;
  }
}

// Barrier of one area's group: the whole block when it holds one group, else named barrier
// 1 + g over the group's two warps (groups never wait for each other, and a group may leave
// early as a whole).
template <int kGroups>
__device__ __forceinline__ void groupSync(int g) {
  if constexpr (kGroups == 1) {
    __syncthreads();
  } else {
    // Immediate barrier ids (a register id would reserve all 16 of the block's barriers).
    switch (g) {
      case 0: asm volatile("bar.sync 1, %0;" ::"n"(kGroupThreads) : "memory"); break;
      case 1: asm volatile("bar.sync 2, %0;" ::"n"(kGroupThreads) : "memory"); break;
      case 2: asm volatile("bar.sync 3, %0;" ::"n"(kGroupThreads) : "memory"); break;
      default: asm volatile("bar.sync 4, %0;" ::"n"(kGroupThreads) : "memory"); break;
    }
  }
}

template <Mode kMode, bool kSurface, int kGroups>
__global__ void __launch_bounds__(kGroups * kGroupThreads, kResidentThreads / (kGroups * kGroupThreads))
    decodeAreas(const PatchDesc* __restrict__ patches, const AreaDesc* __restrict__ areas,
                uint64_t areaCount, const uint32_t* __restrict__ words, uint32_t* __restrict__ flags,
                uint16_t* __restrict__ linear, const __grid_constant__ SurfaceParams surf) {
  constexpr bool kResiduals = kMode != Mode::L1;
  constexpr bool kLows = kMode == Mode::All || kMode == Mode::Refine;

  __shared__ GroupShared shared[kGroups];
  const int g = int(threadIdx.x) / kGroupThreads;  // uniform per warp
  const uint64_t area = uint64_t(blockIdx.x) * kGroups + uint64_t(g);
  if (area >= areaCount) return;  // the whole group
  GroupShared& m = shared[g];

  const AreaDesc ad = areas[area];
  const PatchDesc p = patches[ad.patch];
  const uint32_t* __restrict__ s = words + p.streamWord;

  const int t = int(threadIdx.x) % kGroupThreads;
  const int lx = t & (kArea - 1), ly0 = (t >> 4) * kRowsPerThread;
  const int x0 = int(ad.ax) * kArea, y0 = int(ad.ay) * kArea;
  const int aw = min(kArea, int(p.width) - x0), ah = min(kArea, int(p.height) - y0);
  const int x = x0 + lx, yb = y0 + ly0;
  const int rows = lx < aw ? min(kRowsPerThread, ah - ly0) : 0;  // this thread's points
  uint16_t* row = nullptr;
  if constexpr (!kSurface) row = linear + (p.dstOffset + uint64_t(yb) * p.dstPitch);

  if (p.kind == kKindFlat || ad.maskCode == hfpac::detail::kMaskAll) {
    const uint16_t v = p.kind == kKindFlat ? uint16_t(p.base ^ p.flip) : p.maskOut;
#pragma unroll
    for (int k = 0; k < kRowsPerThread; ++k)
      if (k < rows) storeDst<kSurface>(p, row + (kSurface ? 0 : k * uint64_t(p.dstPitch)), surf, x, yb + k, v);
    return;
  }
  if (p.kind == kKindStored) {
    // Every layer of a stored patch is exact (refine rewrites the same values).
#pragma unroll
    for (int k = 0; k < kRowsPerThread; ++k)
      if (k < rows) {
        const uint32_t bit = ad.lowBit + (uint32_t(yb + k) * p.width + uint32_t(x)) * hfpac::kMaxBits;
        storeDst<kSurface>(p, row + (kSurface ? 0 : k * uint64_t(p.dstPitch)), surf, x, yb + k,
                           uint16_t(fieldAt(s, bit, hfpac::kMaxBits) ^ p.flip));
      }
    return;
  }

  const int segLog = p.segLog;
  const int sx0 = min(x0 >> segLog, int(p.segX) - 1), sx1 = min((x0 + aw - 1) >> segLog, int(p.segX) - 1);
  const int sy0 = min(y0 >> segLog, int(p.segY) - 1), sy1 = min((y0 + ah - 1) >> segLog, int(p.segY) - 1);
  const int nsx = sx1 - sx0 + 1;
  const int b = ad.bits;
  const int points = aw * ah;

  // 1. control nets (not needed for refine: the destination holds the layer-1 prediction).
  if constexpr (kMode != Mode::Refine) {
    if (t < nsx * (sy1 - sy0 + 1)) loadSegmentDev(p, s, sx0 + t % nsx, sy0 + t / nsx, m.nets[t]);
  }
  // 2. prominent corrections, saturated to +-2^18: a valid stream has |high * 2^b| <= 2^17, and
  //    with |P|, |low - half| < 2^16 the clamped result is the same as with the exact value.
  const bool hasCorr = kResiduals && ad.count > 0;
  if (hasCorr) {
#pragma unroll
    for (int k = 0; k < kRowsPerThread; ++k) m.corr[t + k * kGroupThreads] = 0;
    groupSync<kGroups>(g);
    for (int e = t; e < int(ad.count); e += kGroupThreads) {
      const uint8_t pos = reinterpret_cast<const uint8_t*>(s)[ad.posByte + uint32_t(e)];
      const int32_t high =
          unzigzag(fieldAt(s, ad.highBit + uint32_t(e) * p.highBits, p.highBits) + 1u);
      int64_t c = int64_t(high) * (int64_t(1) << b);
      constexpr int64_t kSat = int64_t(1) << 18;
      c = c < -kSat ? -kSat : (c > kSat ? kSat : c);
      m.corr[pos] = int32_t(c);
    }
  }
  // 3. the area's low fields, one coalesced run of words (and its word after: 0).
  if (kLows && b > 0) {
    const uint32_t firstWord = ad.lowBit >> 5;
    const uint32_t count = ((ad.lowBit + uint32_t(points * b) - 1u) >> 5) - firstWord + 1u;
    for (uint32_t w = uint32_t(t); w < count; w += kGroupThreads) m.lows[w] = __ldg(s + firstWord + w);
    if (t == 0) m.lows[count] = 0;
  }
  // 3b. the mask bitmap of a mixed area (aw * ah bits).
  const bool bitmap = ad.maskCode == hfpac::detail::kMaskBitmap;
  if (bitmap) {
    const uint32_t firstWord = ad.maskBit >> 5;
    const uint32_t count = ((ad.maskBit + uint32_t(points) - 1u) >> 5) - firstWord + 1u;
    if (uint32_t(t) < count) m.mask[t] = __ldg(s + firstWord + t);
    if (t == 0) m.mask[count] = 0;
  }
  groupSync<kGroups>(g);
  if (rows <= 0) return;

  // Layer 1 along this thread's column: one segment for all its rows.
  int64_t sum = 0, step = 0, step2 = 0;
  if constexpr (kMode != Mode::Refine) {
    const int i = min(x >> segLog, int(p.segX) - 1), j = min(yb >> segLog, int(p.segY) - 1);
    const ColumnPoly cp =
        columnPoly(m.nets[(j - sy0) * nsx + (i - sx0)].p, x - (i << segLog), segLog);
    const int c0 = yb - (j << segLog);
    sum = polyAt(cp, c0);
    step = polyStep(cp, c0);
    step2 = 2 * cp.q;
  }
  const uint32_t lowMask = (1u << b) - 1u;
  const int32_t half = halfStep(b);
  const uint32_t lowShift = ad.lowBit & 31u, maskShift = ad.maskBit & 31u;
#pragma unroll
  for (int k = 0; k < kRowsPerThread; ++k) {
    if (k < rows) {
      const int y = yb + k;
      uint16_t* r = kSurface ? nullptr : row + k * uint64_t(p.dstPitch);
      const int index = (ly0 + k) * aw + lx;  // raster order inside the area (layer 3, mask bitmap)
      if (bitmap && sharedField(m.mask, maskShift + uint32_t(index), 1u)) {
        storeDst<kSurface>(p, r, surf, x, y, p.maskOut);
      } else {
        int32_t v;
        if constexpr (kMode == Mode::Refine) {
          v = int32_t(loadDst<kSurface>(p, r, surf, x, y) ^ p.flip);
        } else {
          v = predictionOf(sum, segLog);
        }
        if (hasCorr) v += m.corr[(ly0 + k) * kArea + lx];
        if constexpr (kLows) {
          if (b > 0) v += int32_t(sharedField(m.lows, lowShift + uint32_t(index * b), lowMask)) - half;
        }
        if (v < 0 || v > 65535) {
          if constexpr (kLows) atomicOr(flags + ad.patch, kFlagOutOfRange);
          v = v < 0 ? 0 : 65535;
        }
        storeDst<kSurface>(p, r, surf, x, y, uint16_t(uint16_t(v) ^ p.flip));
      }
    }
    sum += step;
    step += step2;
  }
}

// ---------------------------------------------------------------- strip kernel
//
// decodeStrips: one block of kStripThreads threads per chunk of a strip (gpu/decode_math.h,
// stripChunkAreas: up to 9 areas of one 16-row strip of a patch, 144 x 16 points; a 129 x 129
// patch is 9 chunks, its 1-wide last area column folded into the chunk). The work unit is the
// area kernel's: one column x four rows (rows start at multiples of 4, so they never leave one
// segment), numbered column-fastest over the whole chunk, so the lanes of a warp hold 32
// neighbouring columns (whole store rows) and the 1-wide areas no longer run a group nearly
// empty. The per-area arithmetic is the area kernel's, bit for bit; only the setup is shared by
// the chunk: the control nets of every segment the chunk touches, one 16 x 144 correction table,
// the chunk's low fields as ONE coalesced run of words (the areas of a strip are consecutive in
// layer-3 order) and the mask bitmaps.
//
// Finding the chunks needs no host list: block b scans the AreaDescs b * kStripRange ..
// + kStripRange - 1 and decodes every chunk that STARTS there (a 129-wide batch: exactly one).
constexpr int kStripThreads = 192;                      // 6 warps: 516 units of a 129-wide strip
// Threads of a strip block by unit height: 4-row units 192 (above), whole columns 160 (5 warps:
// the 129 columns of a 129-wide strip), half columns 288 (9 warps: its 258 units).
constexpr int stripThreads(int unitRows) { return unitRows == 4 ? kStripThreads : unitRows == 8 ? 288 : 160; }
constexpr int kStripRange = kStripMaxAreas;             // AreaDescs scanned per block
constexpr int kStripCols = kStripMaxAreas * kArea;      // 144
constexpr int kStripMaxNets = (kStripCols / 4 + 1) * 4; // segments of n = 4 a chunk touches
constexpr int kStripLowWords = (kStripCols * kArea * hfpac::kMaxBits) / 32 + 2;
constexpr int kMaskSlot = kMaxMaskWords + 1;
static_assert(kStripRange <= 32, "one warp scans the block's AreaDescs");

struct StripArea {   // what the units read of their area
  uint32_t lowShift;   // first low field, bits from the start of the shared run
  uint32_t maskShift;  // first bitmap bit inside its first word
  uint32_t corrFirst;  // entries of the areas before this one (flattened scatter)
  uint16_t count;
  uint8_t bits, maskCode;
};

struct StripShared {
  SegmentControls nets[kStripMaxNets];
  int32_t corr[kArea * kStripCols];  // [row][chunk column]
  uint32_t lows[kStripLowWords + 1];
  uint32_t mask[kStripMaxAreas * kMaskSlot];
  AreaDesc ad[kStripMaxAreas];
  StripArea sa[kStripMaxAreas];
  PatchDesc p;
  uint32_t lowFirstWord, lowWords, corrTotal;
  int na;
};

// The running state of one column unit (decodeChunkColumns): everything a row needs is in
// registers and stepped per row, so a point costs its arithmetic, two shared loads for its low
// field and one store (the per-point address, flag and branch work of the 4-row units is gone).
struct ColumnRows {
  int64_t sum, step, step2;            // the column polynomial's forward differences
  uint32_t lowPos, lowStride, lowMask;  // low fields in the chunk's shared run
  uint32_t maskPos, maskStride;         // bitmap bits in the area's mask slot
  int32_t half;
  uint32_t flip, maskOut;
  uint32_t bad;                         // a value outside 0..65535 was clamped (unmasked points)
  bool hasCorr;
  const int32_t* corr;                  // [row][chunk column] of this column
  uint16_t* dst;                        // linear: the unit's next point
  uint32_t pitch;
  cudaSurfaceObject_t surface;          // surface: x in bytes, next row
  int sx, sy;
};

// Rows k .. end - 1 of one segment run (end - k <= n + 1). Values outside 0..65535 (corrupt
// streams only) are clamped and remembered in w.bad; masked points store the mask value.
template <Mode kMode, bool kSurface, bool kBitmap>
__device__ __forceinline__ void columnRows(ColumnRows& w, const uint32_t* lows, const uint32_t* mask, int segLog,
                                           int k, int end) {
  constexpr bool kLows = kMode == Mode::All || kMode == Mode::Refine;
#pragma unroll 2
  for (; k < end; ++k) {
    int32_t v;
    if constexpr (kMode == Mode::Refine) {
      unsigned short d;
      if constexpr (kSurface) {
        surf2Dread(&d, w.surface, w.sx, w.sy);
      } else {
        d = *w.dst;
      }
      v = int32_t(d ^ w.flip);
    } else {
      v = predictionOf(w.sum, segLog);
    }
    if (w.hasCorr) v += w.corr[k * kStripCols];
    if constexpr (kLows) v += int32_t(sharedField(lows, w.lowPos, w.lowMask)) - w.half;
    const bool masked = kBitmap && sharedField(mask, w.maskPos, 1u) != 0u;
    const bool outside = uint32_t(v) > 65535u;
    w.bad |= uint32_t(outside && !masked);
    v = min(max(v, 0), 65535);
    const uint16_t out = masked ? uint16_t(w.maskOut) : uint16_t(uint32_t(v) ^ w.flip);
    if constexpr (kSurface) {
      surf2Dwrite(static_cast<unsigned short>(out), w.surface, w.sx, w.sy);
      ++w.sy;
    } else {
      *w.dst = out;
      w.dst += w.pitch;
    }
    if constexpr (kMode != Mode::Refine) {
      w.sum += w.step;
      w.step += w.step2;
    }
    if constexpr (kLows) w.lowPos += w.lowStride;
    if constexpr (kBitmap) w.maskPos += w.maskStride;
  }
}

// The column units of decodeStrips<..., kUnitRows = 16 or 8> (HFGPU_DECODE_KERNEL=cols, cols8):
// a unit is a whole column of the chunk (or half of one), units numbered column-fastest, so the
// per-unit work (area fields, control-net index, the column polynomial) is paid once per segment
// row the unit crosses (two for the default m = 9 segments) instead of once per four rows. The rows
// of one segment run are walked with the same exact forward differences; a new polynomial is made
// where the column enters the next segment row (rows c = 0 .. n - 1 of a segment belong to it, the
// last segment row also owns its row c = n). Per point the arithmetic is the 4-row units', bit
// for bit.
template <Mode kMode, bool kSurface, int kThreads, int kUnitRows>
__device__ __forceinline__ void decodeChunkColumns(const StripShared& m, const uint32_t* __restrict__ words,
                                                   uint32_t* __restrict__ flags, uint16_t* rowBase,
                                                   const SurfaceParams& surf, int t, int x0, int y0, int cw,
                                                   int ah) {
  constexpr bool kResiduals = kMode != Mode::L1;
  constexpr bool kLows = kMode == Mode::All || kMode == Mode::Refine;
  const PatchDesc& p = m.p;
  const int kind = p.kind;
  const uint32_t pitch = p.dstPitch;
  const int units = kUnitRows >= kArea ? cw : cw * ((ah + kUnitRows - 1) / kUnitRows);
  for (int u = t; u < units; u += kThreads) {
    const int unitRow = kUnitRows >= kArea ? 0 : u / cw;
    const int xc = u - unitRow * cw;
    const int a = xc >> 4, lx = xc & (kArea - 1);
    const int x = x0 + xc;
    const int k0 = unitRow * kUnitRows, k1 = min(ah, k0 + kUnitRows);  // rows k0 .. k1 - 1
    uint16_t* col = rowBase;  // linear: storeDst adds x
    const int maskCode = kind == kKindCoded ? int(m.sa[a].maskCode) : 0;
    if (kind == kKindFlat || maskCode == hfpac::detail::kMaskAll) {
      const uint16_t v = kind == kKindFlat ? uint16_t(p.base ^ p.flip) : p.maskOut;
      for (int k = k0; k < k1; ++k)
        storeDst<kSurface>(p, col + (kSurface ? 0 : k * uint64_t(pitch)), surf, x, y0 + k, v);
      continue;
    }
    if (kind == kKindStored) {
      const uint32_t lowBit = m.ad[a].lowBit;
      const uint32_t* __restrict__ s = words + p.streamWord;
      for (int k = k0; k < k1; ++k) {
        const uint32_t bit = lowBit + (uint32_t(y0 + k) * p.width + uint32_t(x)) * hfpac::kMaxBits;
        storeDst<kSurface>(p, col + (kSurface ? 0 : k * uint64_t(pitch)), surf, x, y0 + k,
                           uint16_t(fieldAt(s, bit, hfpac::kMaxBits) ^ p.flip));
      }
      continue;
    }
    const StripArea& sa = m.sa[a];
    const int aw = min(kArea, cw - a * kArea);
    const int b = sa.bits;
    ColumnRows w;
    w.hasCorr = kResiduals && sa.count > 0;
    w.lowMask = (1u << b) - 1u;  // b = 0: every low field reads 0 (no branch per point)
    w.half = halfStep(b);
    w.flip = p.flip;
    w.maskOut = p.maskOut;
    // raster order inside the area (layer 3, mask bitmap): index = row * aw + lx
    w.maskPos = sa.maskShift + uint32_t(k0 * aw + lx);
    w.lowPos = sa.lowShift + uint32_t((k0 * aw + lx) * b);
    w.lowStride = uint32_t(aw * b);
    w.maskStride = uint32_t(aw);
    w.corr = m.corr + xc;
    w.bad = 0;
    if constexpr (kSurface) {
      w.surface = surf.s[p.surface];
      w.sx = (p.dstX + x) * int(sizeof(unsigned short));
      w.sy = p.dstY + y0 + k0;
    } else {
      w.dst = col + uint64_t(k0) * pitch + uint64_t(x);
      w.pitch = pitch;
    }
    const bool bitmap = maskCode == hfpac::detail::kMaskBitmap;
    const uint32_t* mask = m.mask + a * kMaskSlot;
    const int segLog = p.segLog;
    // the same net numbering as setup 2; j / c: the segment row and the row inside it
    const int sx0 = min(x0 >> segLog, int(p.segX) - 1), sy0 = min(y0 >> segLog, int(p.segY) - 1);
    const int nsx = min((x0 + cw - 1) >> segLog, int(p.segX) - 1) - sx0 + 1;
    const int i = min(x >> segLog, int(p.segX) - 1);
    int j = min((y0 + k0) >> segLog, int(p.segY) - 1), c = y0 + k0 - (j << segLog);
    int k = k0;
    while (k < k1) {
      int end = k1;
      if constexpr (kMode != Mode::Refine) {
        if (j < int(p.segY) - 1) end = min(k1, k + (1 << segLog) - c);
        const ColumnPoly cp = columnPoly(m.nets[(j - sy0) * nsx + (i - sx0)].p, x - (i << segLog), segLog);
        w.sum = polyAt(cp, c);
        w.step = polyStep(cp, c);
        w.step2 = 2 * cp.q;
        ++j;
        c = 0;
      }
      // Two loops, so that only the rare mixed areas pay for the bitmap (lanes of one warp
      // differ only where a warp spans areas of both kinds).
      if (bitmap)
        columnRows<kMode, kSurface, true>(w, m.lows, mask, segLog, k, end);
      else
        columnRows<kMode, kSurface, false>(w, m.lows, mask, segLog, k, end);
      k = end;
    }
    if (kLows && w.bad) atomicOr(flags + m.ad[0].patch, kFlagOutOfRange);
  }
}

// Registers a thread of the strip kernel may use (__maxnreg__): 40 leave room for 8 blocks of
// 192 threads per SM (48 of 64 warps; with the whole carveout as shared memory, their ~20 KB
// of shared memory fit as well). ptxas spills a few words in two instances (setup state).
#ifndef HFGPU_DECODE_STRIP_REGS
#define HFGPU_DECODE_STRIP_REGS 40
#endif

template <Mode kMode, bool kSurface, int kUnitRows>
__global__ void __maxnreg__(HFGPU_DECODE_STRIP_REGS)
    decodeStrips(const PatchDesc* __restrict__ patches, const AreaDesc* __restrict__ areas,
                 uint64_t areaCount, const uint32_t* __restrict__ words, uint32_t* __restrict__ flags,
                 uint16_t* __restrict__ linear, const __grid_constant__ SurfaceParams surf) {
  constexpr bool kResiduals = kMode != Mode::L1;
  constexpr bool kLows = kMode == Mode::All || kMode == Mode::Refine;
  constexpr int kThreads = stripThreads(kUnitRows);
  __shared__ StripShared m;
  __shared__ uint32_t starts;
  const int t = int(threadIdx.x);
  const int lane = t & 31;
  const uint64_t first = uint64_t(blockIdx.x) * kStripRange;
  if (t < 32) {
    bool start = false;
    if (t < kStripRange && first + uint64_t(t) < areaCount) {
      const AreaDesc& ad = areas[first + uint64_t(t)];
      const int areasX = (int(patches[ad.patch].width) + kArea - 1) / kArea;
      start = int(ad.ax) % stripChunkAreas(areasX) == 0;
    }
    const uint32_t ballot = __ballot_sync(0xffffffffu, start);
    if (t == 0) starts = ballot;
  }
  __syncthreads();
  uint32_t todo = starts;
  while (todo != 0) {
    const uint64_t i0 = first + uint64_t(__ffs(todo) - 1);
    todo &= todo - 1;
    __syncthreads();  // the previous chunk is done with the shared memory
    // Setup 1 (warp 0, lane a = area a of the chunk): the descriptors and what the units read of
    // them; the correction offsets by a warp prefix sum, the end of the low-field run by a warp
    // maximum (the area kernel's values, computed in parallel).
    if (t < 32) {
      const uint32_t patch0 = areas[i0].patch;
      const AreaDesc& a0 = areas[i0];
      const PatchDesc* __restrict__ pd = patches + patch0;
      const int width = int(pd->width), height = int(pd->height);
      const int areasX = (width + kArea - 1) / kArea;
      const int ax0 = int(a0.ax), y0 = int(a0.ay) * kArea;
      const int na = min(stripChunkAreas(areasX), areasX - ax0);
      const bool coded = pd->kind == kKindCoded;
      const uint32_t lowBit0 = a0.lowBit;
      const int ah = min(kArea, height - y0);
      uint32_t count = 0, lowEnd = lowBit0;
      if (lane < na) {
        const AreaDesc ad = areas[i0 + uint64_t(lane)];
        m.ad[lane] = ad;
        const int aw = min(kArea, width - (ax0 + lane) * kArea);
        lowEnd = max(lowEnd, ad.lowBit + uint32_t(aw * ah * int(ad.bits)));
        count = ad.count;
        StripArea sa;
        sa.lowShift = ad.lowBit - (lowBit0 & ~31u);
        sa.maskShift = ad.maskBit & 31u;
        sa.count = ad.count;
        sa.bits = ad.bits;
        sa.maskCode = ad.maskCode;
        sa.corrFirst = 0;
        m.sa[lane] = sa;
      }
      uint32_t incl = count;
#pragma unroll
      for (int off = 1; off < 16; off <<= 1) {
        const uint32_t v = __shfl_up_sync(0xffffffffu, incl, off);
        if (lane >= off) incl += v;
      }
#pragma unroll
      for (int off = 8; off > 0; off >>= 1) lowEnd = max(lowEnd, __shfl_xor_sync(0xffffffffu, lowEnd, off));
      const uint32_t corrTotal = __shfl_sync(0xffffffffu, incl, 15);  // lanes >= na add 0
      if (lane < na) m.sa[lane].corrFirst = incl - count;
      if (lane < int(sizeof(PatchDesc) / 4))
        reinterpret_cast<uint32_t*>(&m.p)[lane] = reinterpret_cast<const uint32_t*>(pd)[lane];
      if (lane == 0) {
        m.na = na;
        m.lowFirstWord = lowBit0 >> 5;
        m.lowWords = coded && lowEnd > lowBit0
                         ? min(((lowEnd - 1u) >> 5) - (lowBit0 >> 5) + 1u, uint32_t(kStripLowWords))
                         : 0u;
        m.corrTotal = kResiduals && coded ? corrTotal : 0u;
      }
    }
    __syncthreads();
    const int na = m.na;
    const int x0 = int(m.ad[0].ax) * kArea, y0 = int(m.ad[0].ay) * kArea;
    const int cw = min(na * kArea, int(m.p.width) - x0), ah = min(kArea, int(m.p.height) - y0);
    const int kind = m.p.kind;
    const bool coded = kind == kKindCoded;
    const uint32_t* __restrict__ s = words + m.p.streamWord;
    if (coded) {
      // Setup 2: control nets (not for refine: the destination holds the prediction).
      if constexpr (kMode != Mode::Refine) {
        const int segLog = m.p.segLog;
        const int sx0 = min(x0 >> segLog, int(m.p.segX) - 1), sy0 = min(y0 >> segLog, int(m.p.segY) - 1);
        const int nsx = min((x0 + cw - 1) >> segLog, int(m.p.segX) - 1) - sx0 + 1;
        const int sy1 = min((y0 + ah - 1) >> segLog, int(m.p.segY) - 1);
        const int nets = nsx * (sy1 - sy0 + 1);
        for (int q = t; q < nets; q += kThreads) {
          const int qy = q / nsx;
          loadSegmentDev(m.p, s, sx0 + q - qy * nsx, sy0 + qy, m.nets[q]);
        }
      }
      // Setup 3: prominent corrections, saturated as in the area kernel.
      const uint32_t corrTotal = m.corrTotal;
      if (corrTotal > 0) {
        for (int q = t; q < kArea * kStripCols; q += kThreads) m.corr[q] = 0;
        __syncthreads();
        const int highBits = m.p.highBits;
        for (uint32_t e = uint32_t(t); e < corrTotal; e += kThreads) {
          int a = 0;
          while (a + 1 < na && m.sa[a + 1].corrFirst <= e) ++a;
          const AreaDesc& ad = m.ad[a];
          const uint32_t k = e - m.sa[a].corrFirst;
          const uint8_t pos = reinterpret_cast<const uint8_t*>(s)[ad.posByte + k];
          const int32_t high = unzigzag(fieldAt(s, ad.highBit + k * uint32_t(highBits), highBits) + 1u);
          int64_t c = int64_t(high) * (int64_t(1) << ad.bits);
          constexpr int64_t kSat = int64_t(1) << 18;
          c = c < -kSat ? -kSat : (c > kSat ? kSat : c);
          m.corr[(pos >> 4) * kStripCols + a * kArea + (pos & 15)] = int32_t(c);
        }
      }
      // Setup 4: the chunk's low fields (one run) and the word after it.
      if constexpr (kLows) {
        const uint32_t n = m.lowWords, w0 = m.lowFirstWord;
        for (uint32_t w = uint32_t(t); w < n; w += kThreads) m.lows[w] = __ldg(s + w0 + w);
        if (t == 0) m.lows[n] = 0;
      }
      // Setup 5: mask bitmaps of the mixed areas (slot q / kMaskSlot, word q % kMaskSlot).
      for (int q = t; q < na * kMaskSlot; q += kThreads) {
        const int a = q / kMaskSlot, w = q - a * kMaskSlot;
        const StripArea& sa = m.sa[a];
        if (sa.maskCode != hfpac::detail::kMaskBitmap) continue;
        const int aw = min(kArea, cw - a * kArea);
        const uint32_t maskBit = m.ad[a].maskBit, fw = maskBit >> 5;
        const int count = int(((maskBit + uint32_t(aw * ah) - 1u) >> 5) - fw + 1u);
        if (w < count) m.mask[q] = __ldg(s + fw + uint32_t(w));
        else if (w == count) m.mask[q] = 0;
      }
      __syncthreads();
    }

    uint16_t* rowBase = nullptr;  // linear: sample (0, y0) of the patch
    if constexpr (!kSurface) rowBase = linear + (m.p.dstOffset + uint64_t(y0) * m.p.dstPitch);
    if constexpr (kUnitRows != kRowsPerThread) {
      decodeChunkColumns<kMode, kSurface, kThreads, kUnitRows>(m, words, flags, rowBase, surf, t, x0, y0, cw,
                                                               ah);
      continue;
    }
    // The units: column xc of the chunk, rows 4 qr .. 4 qr + 3 of the strip; unit u = qr * cw
    // + xc, walked by kThreads without a divide per unit.
    const int rowsQ = (ah + 3) >> 2;  // unit rows
    const int dq = kThreads / cw, dx = kThreads - dq * cw;
    int qr = t / cw, xc = t - qr * cw;
    while (qr < rowsQ) {
      const int a = xc >> 4, lx = xc & (kArea - 1), ly0 = qr * kRowsPerThread;
      const int x = x0 + xc, yb = y0 + ly0;
      const int rows = min(kRowsPerThread, ah - ly0);
      const PatchDesc& p = m.p;
      const uint32_t pitch = p.dstPitch;
      uint16_t* row = nullptr;
      if constexpr (!kSurface) row = rowBase + uint64_t(ly0) * pitch;  // storeDst adds x
      const int maskCode = coded ? int(m.sa[a].maskCode) : 0;
      if (kind == kKindFlat || maskCode == hfpac::detail::kMaskAll) {
        const uint16_t v = kind == kKindFlat ? uint16_t(p.base ^ p.flip) : p.maskOut;
#pragma unroll
        for (int k = 0; k < kRowsPerThread; ++k)
          if (k < rows) storeDst<kSurface>(p, row + (kSurface ? 0 : k * uint64_t(pitch)), surf, x, yb + k, v);
      } else if (kind == kKindStored) {
        const uint32_t lowBit = m.ad[a].lowBit;
        const uint32_t* __restrict__ s = words + p.streamWord;
#pragma unroll
        for (int k = 0; k < kRowsPerThread; ++k)
          if (k < rows) {
            const uint32_t bit = lowBit + (uint32_t(yb + k) * p.width + uint32_t(x)) * hfpac::kMaxBits;
            storeDst<kSurface>(p, row + (kSurface ? 0 : k * uint64_t(pitch)), surf, x, yb + k,
                               uint16_t(fieldAt(s, bit, hfpac::kMaxBits) ^ p.flip));
          }
      } else {
        const StripArea& sa = m.sa[a];
        const int aw = min(kArea, cw - a * kArea);
        int64_t sum = 0, step = 0, step2 = 0;
        const int segLog = p.segLog;
        if constexpr (kMode != Mode::Refine) {
          // the same net numbering as setup 2
          const int sx0 = min(x0 >> segLog, int(p.segX) - 1), sy0 = min(y0 >> segLog, int(p.segY) - 1);
          const int nsx = min((x0 + cw - 1) >> segLog, int(p.segX) - 1) - sx0 + 1;
          const int i = min(x >> segLog, int(p.segX) - 1), j = min(yb >> segLog, int(p.segY) - 1);
          const ColumnPoly cp = columnPoly(m.nets[(j - sy0) * nsx + (i - sx0)].p, x - (i << segLog), segLog);
          const int c0 = yb - (j << segLog);
          sum = polyAt(cp, c0);
          step = polyStep(cp, c0);
          step2 = 2 * cp.q;
        }
        const int b = sa.bits;
        const bool hasCorr = kResiduals && sa.count > 0;
        const bool bitmap = maskCode == hfpac::detail::kMaskBitmap;
        const uint32_t lowMask = (1u << b) - 1u;
        const int32_t half = halfStep(b);
        const uint32_t* mask = m.mask + a * kMaskSlot;
        // raster order inside the area (layer 3, mask bitmap): index = (ly0 + k) * aw + lx
        const uint32_t index0 = uint32_t(ly0 * aw + lx);
        uint32_t lowPos = sa.lowShift + index0 * uint32_t(b);
        const uint32_t lowStride = uint32_t(aw * b);
        const int32_t* corr = m.corr + ly0 * kStripCols + xc;
#pragma unroll
        for (int k = 0; k < kRowsPerThread; ++k) {
          if (k < rows) {
            const int y = yb + k;
            uint16_t* r = kSurface ? nullptr : row + k * uint64_t(pitch);
            if (bitmap && sharedField(mask, sa.maskShift + index0 + uint32_t(k * aw), 1u)) {
              storeDst<kSurface>(p, r, surf, x, y, p.maskOut);
            } else {
              int32_t v;
              if constexpr (kMode == Mode::Refine) {
                v = int32_t(loadDst<kSurface>(p, r, surf, x, y) ^ p.flip);
              } else {
                v = predictionOf(sum, segLog);
              }
              if (hasCorr) v += corr[k * kStripCols];
              if constexpr (kLows) {
                if (b > 0) v += int32_t(sharedField(m.lows, lowPos, lowMask)) - half;
              }
              if (v < 0 || v > 65535) {
                if constexpr (kLows) atomicOr(flags + m.ad[0].patch, kFlagOutOfRange);
                v = v < 0 ? 0 : 65535;
              }
              storeDst<kSurface>(p, r, surf, x, y, uint16_t(uint16_t(v) ^ p.flip));
            }
          }
          sum += step;
          step += step2;
          lowPos += lowStride;
        }
      }
      xc += dx;
      qr += dq;
      if (xc >= cw) {
        xc -= cw;
        ++qr;
      }
    }
  }
}

template <Mode kMode, int kUnitRows>
void launchStrips(const DecodeLaunch& l, const SurfaceParams& surf, cudaStream_t stream) {
  // A chunk belongs to the block whose range holds its first AreaDesc; it may reach past a
  // piece's end (the AreaDescs are one array).
  constexpr uint64_t kMaxAreas = 0x7fffffffull * kStripRange;
  constexpr unsigned kThreads = stripThreads(kUnitRows);
  for (uint64_t first = 0; first < l.areaCount; first += kMaxAreas) {
    const uint64_t n = l.areaCount - first < kMaxAreas ? l.areaCount - first : kMaxAreas;
    const unsigned blocks = unsigned((n + kStripRange - 1) / kStripRange);
    // The whole carveout as shared memory: 8 blocks of ~20 KB are resident only then.
    static const bool carveout = [] {
      CUDA_CHECK(cudaFuncSetAttribute(decodeStrips<kMode, false, kUnitRows>,
                                      cudaFuncAttributePreferredSharedMemoryCarveout,
                                      int(cudaSharedmemCarveoutMaxShared)));
      CUDA_CHECK(cudaFuncSetAttribute(decodeStrips<kMode, true, kUnitRows>,
                                      cudaFuncAttributePreferredSharedMemoryCarveout,
                                      int(cudaSharedmemCarveoutMaxShared)));
      return true;
    }();
    (void)carveout;
    if (l.linear)
      decodeStrips<kMode, false, kUnitRows><<<blocks, kThreads, 0, stream>>>(
          l.patches, l.areas + first, n, l.words, l.flags, l.linear, surf);
    else
      decodeStrips<kMode, true, kUnitRows><<<blocks, kThreads, 0, stream>>>(
          l.patches, l.areas + first, n, l.words, l.flags, nullptr, surf);
    CUDA_CHECK(cudaGetLastError());
  }
}

// HFGPU_DECODE_KERNEL=cols|strip|cols8|area picks the layered-coding kernel (default cols: the
// strip kernel with whole-column units; strip: 4-row units; cols8: half-column units; area: one
// group per 16 x 16 area). All decode the same bits. H100, session 22, lossless linear / surface
// G points/s on 5 DEMs: cols 161-177 / 170-189, strip 134-149 / 134-153, cols8 111-125.
enum class Kernel { Area, Strip, Columns, HalfColumns };
Kernel decodeKernel() {
  static const Kernel kernel = [] {
    const char* env = std::getenv("HFGPU_DECODE_KERNEL");
    const std::string_view v = env ? env : "";
    return v == "area"    ? Kernel::Area
           : v == "strip" ? Kernel::Strip
           : v == "cols8" ? Kernel::HalfColumns
                          : Kernel::Columns;
  }();
  return kernel;
}

// Areas per block (groups of 64 threads): HFGPU_DECODE_GROUPS=1|2|4 overrides the default (a
// tuning knob for benchmarks; every value decodes the same).
int groupsPerBlock() {
  static const int groups = [] {
    const char* env = std::getenv("HFGPU_DECODE_GROUPS");
    const int v = env ? std::atoi(env) : 0;
    return (v == 1 || v == 2 || v == 4) ? v : kDefaultGroups;
  }();
  return groups;
}

template <Mode kMode, int kGroups>
void launchGroups(const DecodeLaunch& l, const SurfaceParams& surf, cudaStream_t stream) {
  // Grid x holds up to 2^31 - 1 blocks; larger batches go in pieces.
  constexpr uint64_t kMaxAreas = 0x7fffffffull * kGroups;
  for (uint64_t first = 0; first < l.areaCount; first += kMaxAreas) {
    const uint64_t n = l.areaCount - first < kMaxAreas ? l.areaCount - first : kMaxAreas;
    const unsigned blocks = unsigned((n + kGroups - 1) / kGroups);
    constexpr unsigned threads = kGroups * kGroupThreads;
    if (l.linear)
      decodeAreas<kMode, false, kGroups><<<blocks, threads, 0, stream>>>(
          l.patches, l.areas + first, n, l.words, l.flags, l.linear, surf);
    else
      decodeAreas<kMode, true, kGroups><<<blocks, threads, 0, stream>>>(
          l.patches, l.areas + first, n, l.words, l.flags, nullptr, surf);
    CUDA_CHECK(cudaGetLastError());
  }
}

template <Mode kMode>
void launchMode(const DecodeLaunch& l, const SurfaceParams& surf, cudaStream_t stream) {
  switch (decodeKernel()) {
    case Kernel::Strip: launchStrips<kMode, kRowsPerThread>(l, surf, stream); return;
    case Kernel::Columns: launchStrips<kMode, kArea>(l, surf, stream); return;
    case Kernel::HalfColumns: launchStrips<kMode, 8>(l, surf, stream); return;
    case Kernel::Area: break;
  }
  switch (groupsPerBlock()) {
    case 1: launchGroups<kMode, 1>(l, surf, stream); break;
    case 4: launchGroups<kMode, 4>(l, surf, stream); break;
    default: launchGroups<kMode, 2>(l, surf, stream); break;
  }
}

}  // namespace

void launchDecode(const DecodeLaunch& l, void* streamPtr) {
  if (l.areaCount == 0) return;
  const cudaStream_t stream = static_cast<cudaStream_t>(streamPtr);
  const SurfaceParams surf = surfaceParamsFor(l);
  switch (l.mode) {
    case Mode::L1: launchMode<Mode::L1>(l, surf, stream); break;
    case Mode::L12: launchMode<Mode::L12>(l, surf, stream); break;
    case Mode::All: launchMode<Mode::All>(l, surf, stream); break;
    case Mode::Refine: launchMode<Mode::Refine>(l, surf, stream); break;
  }
}

}  // namespace hfgpu::detail
