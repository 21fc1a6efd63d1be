// encode.cu - the batched GPU HFPaC encoder (kernels; host API in src/gpu/encoder.cpp).
//
// Reproduces src/codec/encoder.cpp (docs/format.md section 8) byte for byte. Every decision is
// made with the same exact integer arithmetic as the CPU (layout.h's HFPAC_HD functions, int64
// edge sums, __int128 centre sums), and every choice keeps the CPU's order and tie rules:
// candidates none < nodata < most frequent, smaller segment first, strict "<" everywhere except
// the uniform-vs-per-area comparison ("<=", uniform wins ties). The pipeline and the scratch
// layout are described in encode_kernels.cuh.
#include "codec/layout.h"
#include "encode_kernels.cuh"

namespace hfgpu::enc {
namespace {

using hfpac::detail::bezierWeights;
using hfpac::detail::centreBase;
using hfpac::detail::evalSegment;
using hfpac::detail::floorDiv;
using hfpac::detail::halfStep;
using hfpac::detail::SegmentControls;

__extension__ typedef __int128 int128;

#ifdef __CUDACC__
#define HFGPU_UNROLL _Pragma("unroll")
#else
#define HFGPU_UNROLL
#endif

constexpr int kWarps = kThreads / 32;
constexpr int kMinBitsBins = 18;  // minBits() is 0..17
constexpr int32_t kMinControl = hfpac::detail::kMinControl;
constexpr int32_t kMaxControl = hfpac::detail::kMaxControl;
constexpr int kAreaSide = hfpac::kAreaSide;
static_assert(kAreaSide == 16, "areaCoords shifts by 4");
constexpr int kHeaderWords = hfpac::kHeaderBytes / 4;
constexpr int kFillStage = hfpac::kMaxPatchSide;  // uint16 samples staged by the fill kernel

// ---- small exact helpers (device twins of bitpack.h / encoder.cpp) ----

__device__ __forceinline__ uint32_t zigzag(int32_t v) {
  return (uint32_t(v) << 1) ^ uint32_t(v >> 31);
}
__device__ __forceinline__ int bitLength(uint32_t v) { return v ? 32 - __clz(int(v)) : 0; }
__device__ __forceinline__ uint32_t lowMask(int bits) {
  return bits >= 32 ? 0xffffffffu : ((1u << bits) - 1u);
}
__device__ __forceinline__ uint64_t sectionBytes(uint64_t bits) { return ((bits + 31) / 32) * 4; }

// Smallest b for which r is not prominent (encoder.cpp minBits).
__device__ __forceinline__ int minBits(int32_t r) {
  if (r == 0) return 0;
  return r > 0 ? bitLength(uint32_t(r)) + 1 : bitLength(uint32_t(-r - 1)) + 1;
}
__device__ __forceinline__ int32_t highPart(int32_t r, int b) { return (r + halfStep(b)) >> b; }
__device__ __forceinline__ int highFieldBits(int32_t high) {
  return high == 0 ? 0 : bitLength(zigzag(high) - 1u);
}
__device__ __forceinline__ int highBitsAt(const AreaStat& a, int b) {
  if (a.prominentAt[b] == 0) return 0;
  return max(highFieldBits(highPart(a.rmin, b)), highFieldBits(highPart(a.rmax, b)));
}
__device__ __forceinline__ int32_t clampControl(int64_t v) {
  return int32_t(v < kMinControl ? kMinControl : (v > kMaxControl ? kMaxControl : v));
}

// Unsigned-domain sample.
__device__ __forceinline__ uint32_t readU(const PatchDesc& p, int x, int y) {
  return uint32_t(p.samples[uint64_t(y) * p.stride + uint64_t(x)] ^ p.flip) & 0xffffu;
}

struct Geo {
  int w, h, segLog, n, segX, segY, areasX, areasY;
  uint32_t areas;
};
__device__ __forceinline__ Geo makeGeo(const PatchDesc& p, int segLog) {
  Geo g;
  g.w = p.width;
  g.h = p.height;
  g.segLog = segLog;
  g.n = 1 << segLog;
  g.segX = hfpac::detail::segmentCount(g.w, g.n);
  g.segY = hfpac::detail::segmentCount(g.h, g.n);
  g.areasX = (g.w + kAreaSide - 1) / kAreaSide;
  g.areasY = (g.h + kAreaSide - 1) / kAreaSide;
  g.areas = uint32_t(g.areasX) * uint32_t(g.areasY);
  return g;
}

// Walks the points k = first, first + step, ... of a row-major w-wide patch without divisions.
struct PointWalk {
  int x, y, dx, dy, w;
  __device__ PointWalk(uint32_t first, uint32_t step, int width) : w(width) {
    y = int(first / uint32_t(width));
    x = int(first % uint32_t(width));
    dy = int(step / uint32_t(width));
    dx = int(step % uint32_t(width));
  }
  __device__ void next() {
    x += dx;
    y += dy;
    if (x >= w) {
      x -= w;
      ++y;
    }
  }
};

// Area-local coordinates of point li (row-major, aw wide): shifts for full areas.
__device__ __forceinline__ void areaCoords(int li, int aw, int& lx, int& ly) {
  if (aw == kAreaSide) {
    lx = li & (kAreaSide - 1);
    ly = li >> 4;
  } else {
    lx = li % aw;
    ly = li / aw;
  }
}

// The control points of one combo (layout in encode_kernels.cuh).
struct Ctrl {
  int32_t *corners, *hedges, *vedges, *centres;
  int segX, segY;

  __device__ void controls(int sx, int sy, SegmentControls& c, bool withCentre) const {
    const int cw = segX + 1;
    c.p[0][0] = corners[sy * cw + sx];
    c.p[0][2] = corners[sy * cw + sx + 1];
    c.p[2][0] = corners[(sy + 1) * cw + sx];
    c.p[2][2] = corners[(sy + 1) * cw + sx + 1];
    c.p[0][1] = hedges[sy * segX + sx];
    c.p[2][1] = hedges[(sy + 1) * segX + sx];
    c.p[1][0] = vedges[sy * cw + sx];
    c.p[1][2] = vedges[sy * cw + sx + 1];
    c.p[1][1] = withCentre ? centres[sy * segX + sx] : 0;
  }
};

// The decoder's exact layer-1 prediction (layout.h's evalSegment), down a column: the x weights of
// the point's column applied to its segment's three control rows once (R_r = wx0 P[r][0] +
// wx1 P[r][1] + wx2 P[r][2]), then each point of the column in that segment needs only its y
// weights: evalSegment's integer expression, hoisted, so the same values. In 32-bit arithmetic
// for segLog <= 3, identical while n^4 * |P| < 2^31: the weights are non-negative and sum to
// n^4, |P| <= 2^17 (kMinControl..kMaxControl), so |S| <= 2^29 and every partial sum fits int32. The
// residual loops keep one per lane: with full 16-wide areas a lane's column is fixed and the rows
// come in order, so R is made once per segment row instead of per point.
struct ColumnPredictor {
  int keyX = -1, keyJ = -1;  // the column and segment row R was made for
  int64_t r[3] = {0, 0, 0};

  __device__ __forceinline__ int32_t predict(const Ctrl& ctrl, const Geo& g, int x, int y) {
    const int n = g.n;
    const int j = min(y >> g.segLog, ctrl.segY - 1);
    if (x != keyX || j != keyJ) {
      const int i = min(x >> g.segLog, ctrl.segX - 1);
      SegmentControls c;
      ctrl.controls(i, j, c, true);
      const int xi = x - i * n;
      if (g.segLog <= 3) {
        const int32_t wx0 = (n - xi) * (n - xi), wx1 = 2 * xi * (n - xi), wx2 = xi * xi;
        for (int k = 0; k < 3; ++k) r[k] = wx0 * c.p[k][0] + wx1 * c.p[k][1] + wx2 * c.p[k][2];
      } else {
        int64_t wx[3];
        bezierWeights(xi, n, wx);
        for (int k = 0; k < 3; ++k)
          r[k] = wx[0] * c.p[k][0] + wx[1] * c.p[k][1] + wx[2] * c.p[k][2];
      }
      keyX = x;
      keyJ = j;
    }
    const int yj = y - j * n;
    const int shift = 4 * g.segLog;
    if (g.segLog <= 3) {
      const int32_t wy0 = (n - yj) * (n - yj), wy1 = 2 * yj * (n - yj), wy2 = yj * yj;
      const int32_t s = wy0 * int32_t(r[0]) + wy1 * int32_t(r[1]) + wy2 * int32_t(r[2]);
      const int32_t v = (s + (int32_t(1) << (shift - 1))) >> shift;
      return v < 0 ? 0 : (v > 65535 ? 65535 : v);
    }
    int64_t wy[3];
    bezierWeights(yj, n, wy);
    int64_t s = 0;
    for (int k = 0; k < 3; ++k) s += wy[k] * r[k];
    const int64_t v = (s + (int64_t(1) << (shift - 1))) >> shift;
    return int32_t(v < 0 ? 0 : (v > 65535 ? 65535 : v));
  }
};

__device__ Ctrl makeCtrl(const Workspace& ws, const PatchDesc& p, const Params& prm, int cand,
                         int segIdx, const Geo& g) {
  uint64_t perCand = 0, before = 0;
  for (int s = 0; s < prm.segments; ++s) {
    const uint64_t c = controlCount(p.width, p.height, prm.segLog[s]);
    if (s < segIdx) before += c;
    perCand += c;
  }
  int32_t* base = ws.ctrl + p.ctrlOffset + uint64_t(cand) * perCand + before;
  const uint64_t sx = uint64_t(g.segX), sy = uint64_t(g.segY);
  Ctrl c;
  c.corners = base;
  c.hedges = c.corners + (sx + 1) * (sy + 1);
  c.vedges = c.hedges + sx * (sy + 1);
  c.centres = c.vedges + (sx + 1) * sy;
  c.segX = g.segX;
  c.segY = g.segY;
  return c;
}

// ORs a field of `bits` (0..32) bits at bit offset `bit` of a zeroed word array.
__device__ __forceinline__ void putBits(uint32_t* words, uint64_t bit, uint32_t value, int bits) {
  if (bits == 0) return;
  value &= lowMask(bits);
  const uint64_t w = bit >> 5;
  const int sh = int(bit & 31);
  atomicOr(&words[w], value << sh);
  if (sh + bits > 32) atomicOr(&words[w + 1], value >> (32 - sh));
}

// Block-wide exclusive prefix sums of N values per thread (all kThreads threads call it);
// `total` receives the block sums. Hand-written (warp shuffles + one shared array) rather than
// cub::BlockScan so that the kernels stay plain C++ plus intrinsics: tests/gpu/encode_emu_test.cpp
// runs this very file on the CPU under a small SIMT emulator.
template <int N>
__device__ void blockExclusiveSum(unsigned long long (&v)[N], unsigned long long (&total)[N]) {
  __shared__ unsigned long long sWarp[N][kWarps];
  const int tid = int(threadIdx.x), lane = tid & 31, warp = tid >> 5;
  unsigned long long incl[N];
  for (int i = 0; i < N; ++i) incl[i] = v[i];
  for (int off = 1; off < 32; off <<= 1) {
    for (int i = 0; i < N; ++i) {
      const unsigned long long y = __shfl_up_sync(0xffffffffu, incl[i], unsigned(off));
      if (lane >= off) incl[i] += y;
    }
  }
  if (lane == 31)
    for (int i = 0; i < N; ++i) sWarp[i][warp] = incl[i];
  __syncthreads();
  for (int i = 0; i < N; ++i) {
    unsigned long long before = 0, all = 0;
    for (int w = 0; w < kWarps; ++w) {
      if (w < warp) before += sWarp[i][w];
      all += sWarp[i][w];
    }
    v[i] = before + incl[i] - v[i];
    total[i] = all;
  }
  __syncthreads();  // sWarp is reused by the next call
}

// ---- 1. prepare: min / max, nodata presence, most frequent value ----

__global__ void __launch_bounds__(kThreads) prepareKernel(Workspace ws, Params prm) {
  const PatchDesc p = ws.patches[blockIdx.x];
  const int tid = int(threadIdx.x);
  const uint64_t points = uint64_t(p.width) * uint64_t(p.height);
  const uint32_t nodataU = (prm.nodata ^ p.flip) & 0xffffu;
  bool wantMode = false;
  for (int c = 0; c < prm.candidates; ++c) wantMode |= prm.candKind[c] == kCandMode;

  __shared__ uint32_t sLo, sHi, sFound;
  __shared__ uint32_t hist1[256];                 // by high byte
  __shared__ uint32_t hist2[16 * 256];            // heavy high bytes (>= 1/16 of the points) by low byte
  __shared__ int16_t slotOf[256];
  __shared__ uint32_t slotBucket[16];
  __shared__ int nSlots;
  __shared__ unsigned long long sBest;
  if (tid == 0) {
    sLo = 0xffffu;
    sHi = 0;
    sFound = 0;
    sBest = 0;
  }
  for (int k = tid; k < 256; k += kThreads) hist1[k] = 0;
  __syncthreads();

  // Histogram increments are run-length merged per thread (neighbouring DEM samples share their
  // high byte): few shared atomics, hence few same-address conflicts.
  uint32_t lo = 0xffffu, hi = 0, found = 0;
  uint32_t runKey = 0, runCount = 0;
  {
    PointWalk pw(uint32_t(tid), uint32_t(kThreads), p.width);
    for (uint32_t k = uint32_t(tid); k < uint32_t(points); k += kThreads, pw.next()) {
      const uint32_t v = readU(p, pw.x, pw.y);
      lo = min(lo, v);
      hi = max(hi, v);
      found |= uint32_t(v == nodataU);
      if (wantMode) {
        if (runCount != 0 && (v >> 8) != runKey) {
          atomicAdd(&hist1[runKey], runCount);
          runCount = 0;
        }
        runKey = v >> 8;
        ++runCount;
      }
    }
    if (runCount != 0) atomicAdd(&hist1[runKey], runCount);
  }
  lo = __reduce_min_sync(0xffffffffu, lo);
  hi = __reduce_max_sync(0xffffffffu, hi);
  found = __reduce_or_sync(0xffffffffu, found);
  if ((tid & 31) == 0) {
    atomicMin(&sLo, lo);
    atomicMax(&sHi, hi);
    atomicOr(&sFound, found);
  }
  __syncthreads();
  lo = sLo;
  hi = sHi;
  const bool flat = lo == hi;

  // Most frequent value (smallest on ties), only where it can reach 1/16 of the points: such a
  // value's high byte holds >= 1/16 of the points, and at most 16 high bytes can.
  uint32_t modeValue = 0;
  bool modeValid = false;
  if (wantMode && !flat) {
    if (tid == 0) {
      int slots = 0;
      for (int b = 0; b < 256; ++b) {
        if (uint64_t(hist1[b]) * 16 >= points && slots < 16) {
          slotOf[b] = int16_t(slots);
          slotBucket[slots++] = uint32_t(b);
        } else {
          slotOf[b] = -1;
        }
      }
      nSlots = slots;
    }
    __syncthreads();
    const int slots = nSlots;
    for (int k = tid; k < slots * 256; k += kThreads) hist2[k] = 0;
    __syncthreads();
    if (slots > 0) {
      int runBin = -1;
      uint32_t count = 0;
      PointWalk pw(uint32_t(tid), uint32_t(kThreads), p.width);
      for (uint32_t k = uint32_t(tid); k < uint32_t(points); k += kThreads, pw.next()) {
        const uint32_t v = readU(p, pw.x, pw.y);
        const int s = slotOf[v >> 8];
        const int bin = s >= 0 ? s * 256 + int(v & 255u) : -1;
        if (bin != runBin) {
          if (count != 0) atomicAdd(&hist2[runBin], count);
          runBin = bin;
          count = 0;
        }
        if (bin >= 0) ++count;
      }
      if (count != 0) atomicAdd(&hist2[runBin], count);
    }
    __syncthreads();
    unsigned long long best = 0;  // (count << 32) | (0xffff - value): max = most, then smallest
    for (int k = tid; k < slots * 256; k += kThreads) {
      const uint32_t value = (slotBucket[k >> 8] << 8) | uint32_t(k & 255);
      const unsigned long long key =
          (static_cast<unsigned long long>(hist2[k]) << 32) | (0xffffu - value);
      best = max(best, key);
    }
    atomicMax(&sBest, best);
    __syncthreads();
    const uint64_t count = sBest >> 32;
    modeValue = 0xffffu - uint32_t(sBest & 0xffffffffu);
    modeValid = count > 0 && count * 16 >= points;
  }

  if (tid == 0) {
    PrepOut o{};
    o.lo = lo;
    o.hi = hi;
    bool nodataValid = false;
    for (int c = 0; c < prm.candidates; ++c) {
      const int kind = prm.candKind[c];
      if (flat) continue;
      if (kind == kCandNone) {
        o.candValid[c] = 1;
        o.candMin[c] = lo;
      } else if (kind == kCandNodata) {
        nodataValid = sFound != 0;
        o.candValid[c] = nodataValid;
        o.candValue[c] = nodataU;
      } else {
        // encoder.cpp: not added when it equals the nodata candidate just added.
        o.candValid[c] = modeValid && !(nodataValid && modeValue == nodataU);
        o.candValue[c] = modeValue;
      }
    }
    ws.prep[blockIdx.x] = o;
  }
}

// ---- 2. fill: masked points interpolated along rows, then columns (format.md 8.1) ----

// encoder.cpp's floorDiv(a * wa + b * wb, d) for a gap point between known samples a and b
// (unsigned domain, < 2^16) with wa + wb = d <= kMaxPatchSide: the numerator is >= 0 and below
// 2^30, so 32-bit unsigned division gives the same floor, at a fraction of a 64-bit division's
// cost (one per gap point: voids are most of what this kernel does on nodata inputs).
__device__ __forceinline__ int64_t gapValue(int64_t a, int64_t b, int wa, int wb, int d) {
  static_assert(uint64_t(0xffff) * hfpac::kMaxPatchSide < (uint64_t(1) << 32), "32-bit numerator");
  return int64_t((uint32_t(a) * uint32_t(wa) + uint32_t(b) * uint32_t(wb)) / uint32_t(d));
}

__global__ void __launch_bounds__(kThreads) fillKernel(Workspace ws) {
  const int slot = int(blockIdx.y) + 1;
  const PrepOut prep = ws.prep[blockIdx.x];
  if (!prep.candValid[slot]) return;
  const PatchDesc p = ws.patches[blockIdx.x];
  const int tid = int(threadIdx.x);
  const int w = p.width, h = p.height;
  const uint32_t mv = prep.candValue[slot];
  uint16_t* fill = ws.fill + p.fillOffset + uint64_t(slot - 1) * uint64_t(w) * uint64_t(h);

  __shared__ uint32_t rowKnown[hfpac::kMaxPatchSide / 32];
  __shared__ uint32_t sMin;
  for (int k = tid; k < hfpac::kMaxPatchSide / 32; k += kThreads) rowKnown[k] = 0;
  if (tid == 0) sMin = 0xffffu;
  __syncthreads();

  // Rows: staged through shared memory in chunks of whole rows (coalesced loads and stores), one
  // warp per row of a chunk; unmasked points are kept, gaps between them interpolated in place.
  __shared__ uint16_t sRows[kFillStage];
  const int chunkRows = min(kThreads, kFillStage / w);  // >= 1: w <= kMaxPatchSide = kFillStage
  uint32_t minimum = 0xffffu;
  for (int y0 = 0; y0 < h; y0 += chunkRows) {
    const int rows = min(chunkRows, h - y0);
    const uint32_t n = uint32_t(rows) * uint32_t(w);
    {
      PointWalk pw(uint32_t(tid), uint32_t(kThreads), w);
      for (uint32_t k = uint32_t(tid); k < n; k += kThreads, pw.next())
        sRows[k] = uint16_t(readU(p, pw.x, y0 + pw.y));
    }
    __syncthreads();
    // One warp per row, 32 points a step (the serial walk of encoder.cpp, same values): a chunk's
    // known points by ballot; the gap from the last known point before the chunk to its first
    // known one filled by the whole warp (it may span earlier chunks: long voids), each masked
    // lane between two known lanes of the chunk by itself; masked lanes after the chunk's last
    // known point wait for the next known point (or the row's end). Gaps are only ever written
    // behind (or between) points already classified, and known points are never written.
    const int lane = tid & 31;
    for (int r = tid >> 5; r < rows; r += kWarps) {
      uint16_t* row = sRows + uint32_t(r) * uint32_t(w);
      int previous = -1;  // the last known point before the current chunk (warp-uniform)
      uint32_t prevValue = 0;
      for (int base = 0; base < w; base += 32) {
        const int x = base + lane;
        const uint32_t v = x < w ? uint32_t(row[x]) : mv;
        const bool known = x < w && v != mv;
        if (known) minimum = min(minimum, v);
        const uint32_t ballot = __ballot_sync(0xffffffffu, known);
        if (ballot == 0) continue;  // all masked: the gap goes on
        const int first = base + __ffs(int(ballot)) - 1;
        const uint32_t firstValue = row[first];
        for (int g = previous + 1 + lane; g < first; g += 32)
          row[g] = uint16_t(previous < 0 ? int64_t(firstValue)
                                         : gapValue(prevValue, firstValue, first - g, g - previous, first - previous));
        if (!known && x < w) {
          const uint32_t below = ballot & ((1u << lane) - 1u);
          const uint32_t above = lane == 31 ? 0u : ballot & ~((2u << lane) - 1u);
          if (below != 0 && above != 0) {
            const int a = base + 31 - __clz(int(below)), b = base + __ffs(int(above)) - 1;
            row[x] = uint16_t(gapValue(row[a], row[b], b - x, x - a, b - a));
          }
        }
        previous = base + 31 - __clz(int(ballot));
        prevValue = row[previous];
        __syncwarp();
      }
      if (previous >= 0) {
        for (int g = previous + 1 + lane; g < w; g += 32) row[g] = uint16_t(prevValue);
        if (lane == 0) atomicOr(&rowKnown[(y0 + r) >> 5], 1u << ((y0 + r) & 31));
      }
      __syncwarp();
    }
    __syncthreads();
    uint16_t* dst = fill + uint64_t(y0) * uint64_t(w);
    for (uint32_t k = uint32_t(tid); k < n; k += kThreads) dst[k] = sRows[k];
    __syncthreads();
  }
  minimum = __reduce_min_sync(0xffffffffu, minimum);
  if ((tid & 31) == 0) atomicMin(&sMin, minimum);
  __syncthreads();

  // Columns: rows with no unmasked point take the column interpolation of the row-filled values.
  bool allKnown = true;
  for (int y = 0; y < h && allKnown; ++y) allKnown = (rowKnown[y >> 5] >> (y & 31)) & 1u;
  if (!allKnown) {
    for (int x = tid; x < w; x += kThreads) {
      int previous = -1;
      int64_t prevValue = 0;
      for (int t = 0; t <= h; ++t) {
        int64_t value = 0;
        if (t < h) {
          if (!((rowKnown[t >> 5] >> (t & 31)) & 1u)) continue;
          value = fill[uint64_t(t) * uint64_t(w) + uint64_t(x)];
        }
        if (!(previous < 0 && t == h)) {
          for (int g = previous + 1; g < t; ++g) {
            int64_t v;
            if (previous < 0) {
              v = value;
            } else if (t == h) {
              v = prevValue;
            } else {
              v = gapValue(prevValue, value, t - g, g - previous, t - previous);
            }
            fill[uint64_t(g) * uint64_t(w) + uint64_t(x)] = uint16_t(v);
          }
        }
        previous = t;
        prevValue = value;
      }
    }
  }
  if (tid == 0) ws.prep[blockIdx.x].candMin[slot] = sMin;
}

// ---- 3. analyse: fit, statistics, b choice, exact size ----

struct Choice {
  uint64_t bytes;  // layers 2 + 3 without the mask part
  uint64_t tBytes, prominent;
  int perArea, uniformBits, highBits, countBits;
};

__device__ __forceinline__ Choice makeChoice(uint64_t areas, uint64_t prominent, uint32_t maxCount,
                                             int highBits, uint64_t lowBits, bool perArea) {
  Choice c;
  c.perArea = perArea;
  c.uniformBits = 0;
  c.prominent = prominent;
  c.highBits = highBits;
  c.countBits = bitLength(maxCount);
  c.tBytes = sectionBytes((perArea ? areas * hfpac::detail::kAreaBitsFieldBits : 0) +
                          areas * uint64_t(c.countBits));
  c.bytes = c.tBytes + sectionBytes(prominent * 8) + sectionBytes(prominent * uint64_t(highBits)) +
            sectionBytes(lowBits);
  return c;
}

__global__ void __launch_bounds__(kThreads, 3) analyseKernel(Workspace ws, Params prm) {
  const int ncombo = prm.candidates * prm.segments;
  const int combo = int(blockIdx.y);
  const int cand = combo / prm.segments, segIdx = combo % prm.segments;
  const int tid = int(threadIdx.x), lane = tid & 31, warp = tid >> 5;
  ComboOut& out = ws.combos[uint64_t(blockIdx.x) * uint64_t(ncombo) + uint64_t(combo)];
  const PrepOut prep = ws.prep[blockIdx.x];
  if (prep.lo == prep.hi || !prep.candValid[cand]) {
    if (tid == 0) out.size = ~0ull;
    return;
  }
  const PatchDesc p = ws.patches[blockIdx.x];
  const Geo g = makeGeo(p, prm.segLog[segIdx]);
  const int n = g.n;
  const bool masked = cand != 0;
  const uint32_t mv = prep.candValue[cand];
  const int32_t base = int32_t(prep.candMin[cand]);
  const uint16_t* fill =
      masked ? ws.fill + p.fillOffset + uint64_t(cand - 1) * uint64_t(g.w) * uint64_t(g.h) : nullptr;
  const Ctrl ctrl = makeCtrl(ws, p, prm, cand, segIdx, g);
  AreaStat* areas = ws.areas + p.areaOffset + uint64_t(combo) * g.areas;

  // The sample the surface is fitted to: clamp-extended, masked points filled.
  auto fitSample = [&](int x, int y) -> int64_t {
    x = min(x, g.w - 1);
    y = min(y, g.h - 1);
    return fill ? int64_t(fill[uint64_t(y) * uint64_t(g.w) + uint64_t(x)]) : int64_t(readU(p, x, y));
  };

  __shared__ uint32_t sMaxCorner, sMaxEdge, sMaxCentre;
  __shared__ unsigned long long sBitmapBits;
  __shared__ uint32_t sHist[kWarps][kMinBitsBins];
  __shared__ unsigned long long sProm[kBitsOptions];
  __shared__ uint32_t sMaxCount[kBitsOptions];
  __shared__ int sMaxHigh[kBitsOptions];
  __shared__ int sRoundHw[4];
  __shared__ unsigned long long sPaProm, sPaLow;
  __shared__ uint32_t sPaMaxCount;
  __shared__ int sPaMaxHigh;
  if (tid == 0) {
    sMaxCorner = sMaxEdge = sMaxCentre = 0;
    sBitmapBits = 0;
    sPaProm = sPaLow = 0;
    sPaMaxCount = 0;
    sPaMaxHigh = 0;
  }
  if (tid < kBitsOptions) {
    sProm[tid] = 0;
    sMaxCount[tid] = 0;
    sMaxHigh[tid] = 0;
  }
  if (tid < 4) sRoundHw[tid] = 0;
  __syncthreads();

  // Corners.
  const int cw = g.segX + 1, ch = g.segY + 1;
  uint32_t maxCorner = 0;
  for (int idx = tid; idx < cw * ch; idx += kThreads) {
    const int i = idx % cw, j = idx / cw;
    const int32_t v = int32_t(fitSample(i * n, j * n));
    ctrl.corners[idx] = v;
    maxCorner = max(maxCorner, uint32_t(v - base));
  }
  __syncthreads();

  // Edges: least squares along the edge with the corners fixed (int64, as the CPU).
  int64_t den1 = 0;
  for (int t = 1; t < n; ++t) {
    const int64_t w1 = 2 * int64_t(t) * (n - t);
    den1 += w1 * w1;
  }
  const int64_t n2 = int64_t(n) * n;
  const int nh = g.segX * ch, nv = cw * g.segY;
  uint32_t maxEdge = 0;
  for (int idx = tid; idx < nh + nv; idx += kThreads) {
    int32_t a, b;
    int x0, y0, dx, dy;
    int32_t* dst;
    if (idx < nh) {
      const int i = idx % g.segX, j = idx / g.segX;
      a = ctrl.corners[j * cw + i];
      b = ctrl.corners[j * cw + i + 1];
      x0 = i * n;
      y0 = j * n;
      dx = 1;
      dy = 0;
      dst = ctrl.hedges + idx;
    } else {
      const int k = idx - nh;
      const int i = k % cw, j = k / cw;
      a = ctrl.corners[j * cw + i];
      b = ctrl.corners[(j + 1) * cw + i];
      x0 = i * n;
      y0 = j * n;
      dx = 0;
      dy = 1;
      dst = ctrl.vedges + k;
    }
    int64_t num = 0;
    for (int t = 1; t < n; ++t) {
      int64_t wt[3];
      bezierWeights(t, n, wt);
      num += wt[1] * (n2 * fitSample(x0 + t * dx, y0 + t * dy) - wt[0] * a - wt[2] * b);
    }
    const int32_t c = clampControl(floorDiv(2 * num + den1, 2 * den1));
    *dst = c;
    maxEdge = max(maxEdge, zigzag(c - int32_t(floorDiv(int64_t(a) + b, 2))));
  }
  __syncthreads();

  // Centres: one warp per segment. The CPU's sum S1 = sum_ij wy1 wx1 (n^4 f - sum_rc wy_r wx_c P_rc)
  // (P_11 = 0) is rearranged exactly as n^4 F - sum_rc G_r G_c P_rc with F = sum_ij wx1 wy1 f
  // (non-negative, uint64 per lane, reduced across the warp) and G_c = sum_i w1(i) w_c(i): the
  // same integer, with one multiply-add per point instead of __int128 arithmetic.
  const int64_t n4 = n2 * n2;
  const int128 s2 = int128(den1) * den1;
  int64_t gw[3] = {0, 0, 0};
  for (int t = 1; t < n; ++t) {
    int64_t wt[3];
    bezierWeights(t, n, wt);
    for (int r = 0; r < 3; ++r) gw[r] += wt[1] * wt[r];
  }
  // Each warp takes `batch` consecutive segments; lane t keeps segment t's F, and the final
  // __int128 step runs on all lanes at once (one segment each) instead of on lane 0 per segment.
  uint32_t maxCentre = 0;
  const int nseg = g.segX * g.segY;
  const int batch = max(1, min(32, (nseg + kWarps - 1) / kWarps));
  // The sum runs over all n x n samples of the segment from its corner (i = q mod n, j = q div n
  // by shifts: n is a power of two): the terms with i = 0 or j = 0 have w11 = 0, so F is the same
  // integer as over the interior alone, without a division by n - 1 per sample.
  const int nn = n * n, mask = n - 1;
  for (int s0 = warp * batch; s0 < nseg; s0 += kWarps * batch) {
    const int cnt = min(batch, nseg - s0);
    uint64_t mineF = 0;
    int tx = s0 % g.segX, ty = s0 / g.segX;  // segment s0 + t, stepped along the rows
    for (int t = 0; t < cnt; ++t) {
      if (t > 0 && ++tx == g.segX) {
        tx = 0;
        ++ty;
      }
      uint64_t f = 0;
      for (int q = lane; q < nn; q += 32) {
        const int i = q & mask, j = q >> g.segLog;
        const uint32_t w11 = uint32_t(2 * i * (n - i)) * uint32_t(2 * j * (n - j));  // <= 2^18
        f += uint64_t(w11) * uint64_t(fitSample(tx * n + i, ty * n + j));
      }
      if (g.segLog <= 3) {
        f = __reduce_add_sync(0xffffffffu, uint32_t(f));  // F < 49 * 2^26 < 2^32
      } else {
        for (int off = 16; off > 0; off >>= 1) f += __shfl_down_sync(0xffffffffu, f, unsigned(off));
        if (t > 0) f = __shfl_up_sync(0xffffffffu, f, unsigned(t));  // lane 0's total to lane t
      }
      if (lane == t) mineF = f;
    }
    if (lane < cnt) {
      const int s = s0 + lane;
      const int sx = s % g.segX, sy = s / g.segX;
      SegmentControls c;
      ctrl.controls(sx, sy, c, false);
      int128 t = 0;
      for (int r = 0; r < 3; ++r)
        for (int cc = 0; cc < 3; ++cc) t += int128(gw[r] * gw[cc]) * c.p[r][cc];
      const int128 s1 = int128(n4) * int128(mineF) - t;
      // floor((2 S1 + S2) / (2 S2)) clamped to the control range, without a 128-bit division:
      // |2 S2| < 2^47, so the clamp bounds times 2 S2 and any quotient inside them fit int64.
      const int128 num = 2 * s1 + s2;
      const int64_t den = int64_t(2 * s2);
      int32_t value;
      if (num >= int128(int64_t(kMaxControl) + 1) * den) {
        value = kMaxControl;
      } else if (num < int128(kMinControl) * den) {
        value = kMinControl;
      } else {
        value = int32_t(floorDiv(int64_t(num), den));
      }
      ctrl.centres[s] = value;
      maxCentre = max(maxCentre, zigzag(value - centreBase(c)));
    }
  }
  maxCorner = __reduce_max_sync(0xffffffffu, maxCorner);
  maxEdge = __reduce_max_sync(0xffffffffu, maxEdge);
  maxCentre = __reduce_max_sync(0xffffffffu, maxCentre);
  if (lane == 0) {
    atomicMax(&sMaxCorner, maxCorner);
    atomicMax(&sMaxEdge, maxEdge);
    atomicMax(&sMaxCentre, maxCentre);
  }
  __syncthreads();
  const int bc = bitLength(sMaxCorner), be = bitLength(sMaxEdge), bz = bitLength(sMaxCentre);
  const uint64_t aBits = uint64_t(cw) * uint64_t(ch) * uint64_t(bc) + uint64_t(nh + nv) * uint64_t(be) +
                         uint64_t(g.segX) * uint64_t(g.segY) * uint64_t(bz);

  // Residual statistics, one warp per 16 x 16 area (with a fixed b only its prominent count).
  const bool autoBits = prm.bits < 0;
  const int32_t fixedHalf = autoBits ? 0 : halfStep(prm.bits);
  const uint32_t fixedRange = autoBits ? 0u : (1u << prm.bits);
  ColumnPredictor column;
  for (uint32_t k = uint32_t(warp); k < g.areas; k += kWarps) {
    const int ax = int(k % uint32_t(g.areasX)), ay = int(k / uint32_t(g.areasX));
    const int x0 = ax * kAreaSide, y0 = ay * kAreaSide;
    const int aw = min(kAreaSide, g.w - x0), ah = min(kAreaSide, g.h - y0);
    const int pts = aw * ah;
    if (lane < kMinBitsBins) sHist[warp][lane] = 0;
    __syncwarp();
    int32_t rmin = INT32_MAX, rmax = INT32_MIN;
    uint32_t maskedCount = 0, promFixed = 0;
    for (int first = 0; first < pts; first += 32) {
      const int li = first + lane;
      // Fixed b: prominent (minBits(r) > b, i.e. r + half outside 0 .. 2^b - 1).
      bool above = false;
      if (li < pts) {
        int lx, ly;
        areaCoords(li, aw, lx, ly);
        const int x = x0 + lx, y = y0 + ly;
        const uint32_t u = readU(p, x, y);
        const bool isMasked = masked && u == mv;
        const int32_t r = isMasked ? 0 : int32_t(u) - column.predict(ctrl, g, x, y);
        rmin = min(rmin, r);
        rmax = max(rmax, r);
        maskedCount += isMasked;
        if (autoBits) {
          atomicAdd(&sHist[warp][minBits(r)], 1u);
        } else {
          above = uint32_t(r + fixedHalf) >= fixedRange;
        }
      }
      // Fixed b: only prominentAt[b] is read (uniform choice, write pass).
      if (!autoBits) promFixed += uint32_t(__popc(__ballot_sync(0xffffffffu, above)));
    }
    rmin = __reduce_min_sync(0xffffffffu, rmin);
    rmax = __reduce_max_sync(0xffffffffu, rmax);
    maskedCount = __reduce_add_sync(0xffffffffu, maskedCount);
    __syncwarp();
    AreaStat& a = areas[k];
    if (lane < kBitsOptions) {
      uint32_t above = 0;
      if (autoBits) {
        for (int bb = lane + 1; bb < kMinBitsBins; ++bb) above += sHist[warp][bb];
      } else if (lane == prm.bits) {
        above = promFixed;
      }
      a.prominentAt[lane] = uint16_t(above);
    }
    if (lane == 0) {
      a.rmin = rmin;
      a.rmax = rmax;
      a.masked = uint16_t(maskedCount);
      a.bits = 0;
      if (maskedCount > 0 && int(maskedCount) < pts) atomicAdd(&sBitmapBits, uint64_t(pts));
    }
    __syncwarp();
  }
  __syncthreads();

  // Uniform b: prominent counts, largest count and high width per b (one pass over the areas).
  const int bLo = autoBits ? 0 : prm.bits, bHi = autoBits ? hfpac::kMaxBits : prm.bits;
  // One pass over the areas per b (the areas are few; no per-b register arrays).
  for (int b = bLo; b <= bHi; ++b) {
    uint32_t prom = 0, maxCount = 0;
    int maxHigh = 0;
    for (uint32_t k = uint32_t(tid); k < g.areas; k += kThreads) {
      const AreaStat& a = areas[k];
      prom += a.prominentAt[b];
      maxCount = max(maxCount, uint32_t(a.prominentAt[b]));
      maxHigh = max(maxHigh, highBitsAt(a, b));
    }
    const uint64_t pr = __reduce_add_sync(0xffffffffu, prom);  // <= 2^28 points
    const uint32_t mc = __reduce_max_sync(0xffffffffu, maxCount);
    const int mh = int(__reduce_max_sync(0xffffffffu, uint32_t(maxHigh)));
    if (lane == 0) {
      atomicAdd(&sProm[b], static_cast<unsigned long long>(pr));
      atomicMax(&sMaxCount[b], mc);
      atomicMax(&sMaxHigh[b], mh);
    }
  }
  __syncthreads();
  const uint64_t totalPoints = uint64_t(g.w) * uint64_t(g.h);
  auto uniform = [&](int b) {
    Choice c = makeChoice(g.areas, sProm[b], sMaxCount[b], sMaxHigh[b], totalPoints * uint64_t(b), false);
    c.uniformBits = b;
    return c;
  };

  Choice best;
  if (!autoBits) {
    best = uniform(prm.bits);
  } else {
    // Per-area b minimising points * b + prominent * (8 + max(hw, h_k(b))), hw iterated.
    int hw = 0;
    for (int round = 0; round < 4; ++round) {
      int newHw = 0;
      for (uint32_t k = uint32_t(tid); k < g.areas; k += kThreads) {
        const AreaStat a = areas[k];
        const int ax = int(k % uint32_t(g.areasX)), ay = int(k / uint32_t(g.areasX));
        const uint64_t pts = uint64_t(min(kAreaSide, g.w - ax * kAreaSide)) *
                             uint64_t(min(kAreaSide, g.h - ay * kAreaSide));
        uint64_t bestCost = ~0ull;
        int bestB = 0;
        for (int b = 0; b <= hfpac::kMaxBits; ++b) {
          const uint64_t pr = a.prominentAt[b];
          const uint64_t cost = pts * uint64_t(b) + pr * uint64_t(8 + max(hw, highBitsAt(a, b)));
          if (cost < bestCost) {
            bestCost = cost;
            bestB = b;
          }
        }
        areas[k].bits = uint8_t(bestB);
        newHw = max(newHw, highBitsAt(a, bestB));
      }
      newHw = int(__reduce_max_sync(0xffffffffu, uint32_t(newHw)));
      if (lane == 0) atomicMax(&sRoundHw[round], newHw);
      __syncthreads();
      newHw = sRoundHw[round];
      if (newHw == hw) break;
      hw = newHw;
    }
    // The per-area choice's exact size.
    uint64_t prom = 0, low = 0;
    uint32_t maxCount = 0;
    int maxHigh = 0;
    for (uint32_t k = uint32_t(tid); k < g.areas; k += kThreads) {
      const AreaStat a = areas[k];
      const int ax = int(k % uint32_t(g.areasX)), ay = int(k / uint32_t(g.areasX));
      const uint64_t pts = uint64_t(min(kAreaSide, g.w - ax * kAreaSide)) *
                           uint64_t(min(kAreaSide, g.h - ay * kAreaSide));
      prom += a.prominentAt[a.bits];
      maxCount = max(maxCount, uint32_t(a.prominentAt[a.bits]));
      maxHigh = max(maxHigh, highBitsAt(a, a.bits));
      low += pts * a.bits;
    }
    atomicAdd(&sPaProm, static_cast<unsigned long long>(prom));
    atomicAdd(&sPaLow, static_cast<unsigned long long>(low));
    atomicMax(&sPaMaxCount, maxCount);
    atomicMax(&sPaMaxHigh, maxHigh);
    __syncthreads();
    best = makeChoice(g.areas, sPaProm, sPaMaxCount, sPaMaxHigh, sPaLow, true);
    for (int b = 0; b <= hfpac::kMaxBits; ++b) {
      const Choice u = uniform(b);
      if (u.bytes <= best.bytes) best = u;  // the table costs bytes: ties go uniform
    }
  }

  if (tid == 0) {
    const uint64_t kBytes =
        masked ? 4 + sectionBytes(uint64_t(g.areas) * 2) + sectionBytes(sBitmapBits) : 0;
    const uint64_t aBytes = sectionBytes(aBits);
    // Split best.bytes into section B (table, positions, highs) and section D (lows).
    const uint64_t lowBits = best.perArea ? sPaLow : totalPoints * uint64_t(best.uniformBits);
    const uint64_t dBytes = sectionBytes(lowBits);
    ComboOut o{};
    o.size = uint64_t(hfpac::kHeaderBytes) + aBytes + kBytes + best.bytes;
    o.aBytes = uint32_t(aBytes);
    o.bBytes = uint32_t(kBytes + best.bytes - dBytes);
    o.dBytes = uint32_t(dBytes);
    o.perArea = best.perArea;
    o.uniformBits = best.perArea ? 0 : best.uniformBits;
    o.highBits = best.highBits;
    o.countBits = best.countBits;
    o.cornerBits = bc;
    o.edgeBits = be;
    o.centreBits = bz;
    o.base = uint32_t(base);
    o.kBytes = uint32_t(kBytes);
    o.tBytes = uint32_t(best.tBytes);
    o.prominent = best.prominent;
    out = o;
  }
}

// ---- 4. select + scan (one block) ----

__global__ void __launch_bounds__(kThreads) selectKernel(Workspace ws, Params prm, uint64_t count) {
  const int ncombo = prm.candidates * prm.segments;
  const int tid = int(threadIdx.x);
  unsigned long long carry = 0;
  for (uint64_t first = 0; first < count; first += kThreads) {
    const uint64_t i = first + uint64_t(tid);
    unsigned long long size = 0;
    if (i < count) {
      const PatchDesc p = ws.patches[i];
      const PrepOut prep = ws.prep[i];
      PatchResult r{};
      if (prep.lo == prep.hi) {
        r.kind = kResultFlat;
        r.size = uint64_t(hfpac::kHeaderBytes);
      } else {
        uint64_t best = ~0ull;
        int bestCombo = 0;
        for (int c = 0; c < ncombo; ++c) {
          const uint64_t s = ws.combos[i * uint64_t(ncombo) + uint64_t(c)].size;
          if (s < best) {
            best = s;
            bestCombo = c;
          }
        }
        const uint64_t raw = uint64_t(hfpac::kHeaderBytes) +
                             sectionBytes(uint64_t(p.width) * uint64_t(p.height) * hfpac::kMaxBits);
        if (prm.bits < 0 && best > raw) {
          r.kind = kResultStored;
          r.size = raw;
        } else {
          r.kind = kResultCoded;
          r.size = best;
          r.combo = bestCombo;
        }
      }
      ws.results[i] = r;
      size = r.size;
    }
    unsigned long long offset[1] = {size}, total[1];
    blockExclusiveSum<1>(offset, total);
    if (i < count) ws.offsets[i] = carry + offset[0];
    carry += total[0];
  }
  if (tid == 0) {
    ws.offsets[count] = carry;
    *ws.error = carry > prm.capacity ? 1u : 0u;
  }
}

// ---- 5. write ----

__device__ void writeHeader(uint32_t* out, uint32_t flags, uint32_t segLog, uint32_t b, const PatchDesc& p,
                            uint32_t base, uint32_t bc, uint32_t be, uint32_t bz, uint32_t hw,
                            uint32_t cw, uint32_t aBytes, uint32_t bBytes, uint32_t dBytes) {
  out[0] = hfpac::kMagic;
  out[1] = uint32_t(hfpac::kVersion) | (flags << 8) | (segLog << 16) | (b << 24);
  out[2] = uint32_t(p.width) | (uint32_t(p.height) << 16);
  out[3] = base | (bc << 16) | (be << 24);
  out[4] = bz | (hw << 8) | (cw << 16);
  out[5] = aBytes;
  out[6] = bBytes;
  out[7] = dBytes;
}

__global__ void __launch_bounds__(kThreads, 3) writeKernel(Workspace ws, Params prm) {
  if (*ws.error) return;
  const int tid = int(threadIdx.x), lane = tid & 31, warp = tid >> 5;
  const PatchResult res = ws.results[blockIdx.x];
  const PatchDesc p = ws.patches[blockIdx.x];
  uint32_t* out = ws.output + ws.offsets[blockIdx.x] / 4;
  const uint64_t words = res.size / 4;
  const PrepOut prep = ws.prep[blockIdx.x];
  const uint32_t signedFlag = p.flip ? hfpac::detail::kFlagSigned : 0u;

  if (res.kind == kResultFlat) {
    if (tid == 0)
      writeHeader(out, hfpac::detail::kFlagFlat | signedFlag, 0, 0, p, prep.lo, 0, 0, 0, 0, 0, 0, 0, 0);
    return;
  }
  if (res.kind == kResultStored) {
    const uint64_t points = uint64_t(p.width) * uint64_t(p.height);
    const uint64_t dWords = words - kHeaderWords;
    for (uint64_t w = uint64_t(tid); w < dWords; w += kThreads) {
      uint32_t v = 0;
      for (int half = 0; half < 2; ++half) {
        const uint64_t k = 2 * w + uint64_t(half);
        if (k < points) {
          const int y = int(k / uint64_t(p.width)), x = int(k % uint64_t(p.width));
          v |= readU(p, x, y) << (16 * half);
        }
      }
      out[kHeaderWords + w] = v;
    }
    if (tid == 0)
      writeHeader(out, hfpac::detail::kFlagStored | signedFlag, 0, hfpac::kMaxBits, p, 0, 0, 0, 0, 0,
                  0, 0, 0, uint32_t(dWords * 4));
    return;
  }

  // Coded: zero the stream's words (fields are ORed in), then fill every part.
  for (uint64_t w = uint64_t(tid); w < words; w += kThreads) out[w] = 0;
  __syncthreads();

  const int ncombo = prm.candidates * prm.segments;
  const int combo = res.combo;
  const int cand = combo / prm.segments, segIdx = combo % prm.segments;
  const ComboOut co = ws.combos[uint64_t(blockIdx.x) * uint64_t(ncombo) + uint64_t(combo)];
  const Geo g = makeGeo(p, prm.segLog[segIdx]);
  const Ctrl ctrl = makeCtrl(ws, p, prm, cand, segIdx, g);
  const AreaStat* areas = ws.areas + p.areaOffset + uint64_t(combo) * g.areas;
  const bool masked = cand != 0;
  const uint32_t mv = prep.candValue[cand];
  const int32_t base = int32_t(co.base);

  if (tid == 0) {
    const uint32_t flags = signedFlag | (co.perArea ? hfpac::detail::kFlagPerAreaBits : 0u) |
                           (masked ? hfpac::detail::kFlagMasked : 0u);
    writeHeader(out, flags, uint32_t(g.segLog), uint32_t(co.perArea ? 0 : co.uniformBits), p,
                uint32_t(base), uint32_t(co.cornerBits), uint32_t(co.edgeBits),
                uint32_t(co.centreBits), uint32_t(co.highBits), uint32_t(co.countBits), co.aBytes,
                co.bBytes, co.dBytes);
  }

  // Section A: corners, horizontal edges, vertical edges, centres.
  uint32_t* secA = out + kHeaderWords;
  const int cw = g.segX + 1, ch = g.segY + 1;
  const int nc = cw * ch, nh = g.segX * ch, nv = cw * g.segY, nz = g.segX * g.segY;
  const int bc = co.cornerBits, be = co.edgeBits, bz = co.centreBits;
  for (int idx = tid; idx < nc + nh + nv + nz; idx += kThreads) {
    if (idx < nc) {
      putBits(secA, uint64_t(idx) * uint64_t(bc), uint32_t(ctrl.corners[idx] - base), bc);
    } else if (idx < nc + nh) {
      const int k = idx - nc, i = k % g.segX, j = k / g.segX;
      const int32_t a = ctrl.corners[j * cw + i], b = ctrl.corners[j * cw + i + 1];
      const uint32_t z = zigzag(ctrl.hedges[k] - int32_t(floorDiv(int64_t(a) + b, 2)));
      putBits(secA, uint64_t(nc) * uint64_t(bc) + uint64_t(k) * uint64_t(be), z, be);
    } else if (idx < nc + nh + nv) {
      const int k = idx - nc - nh, i = k % cw, j = k / cw;
      const int32_t a = ctrl.corners[j * cw + i], b = ctrl.corners[(j + 1) * cw + i];
      const uint32_t z = zigzag(ctrl.vedges[k] - int32_t(floorDiv(int64_t(a) + b, 2)));
      putBits(secA, uint64_t(nc) * uint64_t(bc) + uint64_t(nh + k) * uint64_t(be), z, be);
    } else {
      const int k = idx - nc - nh - nv;
      SegmentControls c;
      ctrl.controls(k % g.segX, k / g.segX, c, true);
      const uint32_t z = zigzag(c.p[1][1] - centreBase(c));
      putBits(secA,
              uint64_t(nc) * uint64_t(bc) + uint64_t(nh + nv) * uint64_t(be) + uint64_t(k) * uint64_t(bz),
              z, bz);
    }
  }

  // Section B parts and section D.
  uint32_t* secB = secA + co.aBytes / 4;
  uint32_t* maskCodes = secB + 1;
  uint32_t* maskBitmaps = maskCodes + sectionBytes(uint64_t(g.areas) * 2) / 4;
  uint32_t* table = secB + co.kBytes / 4;
  uint32_t* positions = table + co.tBytes / 4;
  uint32_t* highs = positions + sectionBytes(co.prominent * 8) / 4;
  uint32_t* secD = secB + co.bBytes / 4;
  if (masked && tid == 0) atomicOr(&secB[0], mv);
  const int hw = co.highBits, cwBits = co.countBits;
  const uint64_t countsBit = co.perArea ? uint64_t(g.areas) * hfpac::detail::kAreaBitsFieldBits : 0;

  // Per chunk of kThreads areas: prefix sums of (prominent count, low bits, bitmap bits) give
  // each area's first prominent entry, first low bit and first bitmap bit.
  __shared__ unsigned long long sStart[3][kThreads];
  unsigned long long carry[3] = {0, 0, 0};
  for (uint32_t first = 0; first < g.areas; first += kThreads) {
    const uint32_t k = first + uint32_t(tid);
    unsigned long long mine[3] = {0, 0, 0};  // prominent, low bits, bitmap bits
    if (k < g.areas) {
      const AreaStat a = areas[k];
      const int ax = int(k % uint32_t(g.areasX)), ay = int(k / uint32_t(g.areasX));
      const int pts = min(kAreaSide, g.w - ax * kAreaSide) * min(kAreaSide, g.h - ay * kAreaSide);
      const int b = co.perArea ? a.bits : co.uniformBits;
      const uint32_t cnt = a.prominentAt[b];
      mine[0] = cnt;
      mine[1] = uint64_t(pts) * uint64_t(b);
      if (co.perArea) putBits(table, uint64_t(k) * hfpac::detail::kAreaBitsFieldBits, uint32_t(b),
                              hfpac::detail::kAreaBitsFieldBits);
      putBits(table, countsBit + uint64_t(k) * uint64_t(cwBits), cnt, cwBits);
      if (masked) {
        const uint32_t code = a.masked == 0 ? hfpac::detail::kMaskNone
                              : (int(a.masked) == pts ? hfpac::detail::kMaskAll
                                                      : hfpac::detail::kMaskBitmap);
        putBits(maskCodes, uint64_t(k) * 2, code, 2);
        if (code == hfpac::detail::kMaskBitmap) mine[2] = uint64_t(pts);
      }
    }
    unsigned long long total[3];
    blockExclusiveSum<3>(mine, total);
    for (int i = 0; i < 3; ++i) {
      sStart[i][tid] = carry[i] + mine[i];
      carry[i] += total[i];
    }
    __syncthreads();

    const uint32_t chunk = min(uint32_t(kThreads), g.areas - first);
    ColumnPredictor column;
    for (uint32_t c = uint32_t(warp); c < chunk; c += kWarps) {
      const uint32_t kk = first + c;
      const AreaStat a = areas[kk];
      const unsigned long long promStart = sStart[0][c], lowStart = sStart[1][c],
                               bitmapStart = sStart[2][c];
      const int ax = int(kk % uint32_t(g.areasX)), ay = int(kk / uint32_t(g.areasX));
      const int x0 = ax * kAreaSide, y0 = ay * kAreaSide;
      const int aw = min(kAreaSide, g.w - x0), ah = min(kAreaSide, g.h - y0);
      const int pts = aw * ah;
      const int b = co.perArea ? a.bits : co.uniformBits;
      const bool bitmap = masked && a.masked != 0 && int(a.masked) != pts;
      const int32_t half = halfStep(b);
      uint64_t rank = promStart;
      for (int firstPoint = 0; firstPoint < pts; firstPoint += 32) {
        const int li = firstPoint + lane;
        const bool valid = li < pts;
        bool isMasked = false, prominent = false;
        int32_t high = 0;
        int lx = 0, ly = 0;
        uint32_t low = 0;
        if (valid) {
          areaCoords(li, aw, lx, ly);
          const int x = x0 + lx, y = y0 + ly;
          const uint32_t u = readU(p, x, y);
          isMasked = masked && u == mv;
          const int32_t r = isMasked ? 0 : int32_t(u) - column.predict(ctrl, g, x, y);
          const int32_t q = r + half;
          low = uint32_t(q) & lowMask(b);
          high = q >> b;
          prominent = high != 0;
        }
        if (b > 0) {
          // The warp's low fields (32 x b bits at most, contiguous) packed into whole words:
          // word wi is the OR of the lanes' parts; words fully inside this run are stored, the
          // two ends (shared with the neighbouring runs) ORed in.
          const uint64_t runBit = lowStart + uint64_t(firstPoint) * uint64_t(b);
          const int sh = int(runBit & 31);
          const int runBits = min(32, pts - firstPoint) * b;
          const int nWords = (sh + runBits + 31) >> 5;
          const int o = sh + lane * b, w0 = o >> 5, s0 = o & 31;
          uint32_t packed = 0;
          for (int wi = 0; wi < nWords; ++wi) {
            uint32_t part = 0;
            if (valid) {
              if (w0 == wi) part = low << s0;
              else if (w0 + 1 == wi && s0 + b > 32) part = low >> (32 - s0);
            }
            const uint32_t word = __reduce_or_sync(0xffffffffu, part);
            if (lane == wi) packed = word;
          }
          if (lane < nWords) {
            uint32_t* dst = &secD[(runBit >> 5) + uint64_t(lane)];
            const bool whole = 32 * lane >= sh && 32 * lane + 32 <= sh + runBits;
            if (whole) {
              *dst = packed;
            } else if (packed != 0) {
              atomicOr(dst, packed);
            }
          }
        }
        const uint32_t promBallot = __ballot_sync(0xffffffffu, prominent);
        if (prominent) {
          const uint64_t e = rank + uint64_t(__popc(promBallot & ((1u << lane) - 1u)));
          atomicOr(&positions[e >> 2], uint32_t(ly * kAreaSide + lx) << (8 * int(e & 3)));
          putBits(highs, e * uint64_t(hw), zigzag(high) - 1u, hw);
        }
        rank += uint64_t(__popc(promBallot));
        const uint32_t maskBallot = __ballot_sync(0xffffffffu, isMasked);
        if (bitmap && lane == 0)
          putBits(maskBitmaps, bitmapStart + uint64_t(firstPoint), maskBallot, min(32, pts - firstPoint));
      }
    }
    __syncthreads();
  }
}

}  // namespace

#ifndef HFGPU_ENCODE_EMULATION
cudaError_t launchEncode(const Workspace& ws, const Params& params, size_t count,
                         cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  const unsigned int patches = static_cast<unsigned int>(count);
  prepareKernel<<<patches, kThreads, 0, stream>>>(ws, params);
  if (params.candidates > 1)
    fillKernel<<<dim3(patches, unsigned(params.candidates - 1)), kThreads, 0, stream>>>(ws);
  analyseKernel<<<dim3(patches, unsigned(params.candidates * params.segments)), kThreads, 0, stream>>>(
      ws, params);
  selectKernel<<<1, kThreads, 0, stream>>>(ws, params, uint64_t(count));
  writeKernel<<<patches, kThreads, 0, stream>>>(ws, params);
  return cudaGetLastError();
}
#endif  // HFGPU_ENCODE_EMULATION

}  // namespace hfgpu::enc
