// encode_kernels.cuh - the interface between the GPU encoder's host API (src/gpu/encoder.cpp)
// and its kernels (cuda/encode.cu). Internal. Plain C++ (no CUDA syntax) so that the host code
// compiles with the ordinary C++ compiler; the structs are shared byte for byte with the kernels.
//
// Pipeline (all on one stream, no host synchronisation; docs/format.md section 8 is what each
// step reproduces):
//   1. prepare   block per patch: unsigned-domain min/max (flat?), nodata presence, most
//                frequent value (two-level shared-memory histogram) -> mask candidates.
//   2. fill      block per (patch, mask candidate): masked points interpolated along rows,
//                then along columns for rows with no unmasked point; minimum of unmasked points.
//   3. analyse   block per (patch, candidate, segment size): layer-1 fit (corners; edges by
//                int64 least squares; centres by warp sums of wx1 wy1 f, finished in __int128
//                one segment per lane), field widths,
//                per-area residual statistics, the b choice (fixed or auto) and the exact stream
//                size - without writing the stream.
//   4. select    one block: per patch the smallest candidate (CPU order and tie rules), the
//                stored fallback, and an exclusive scan of the sizes -> output offsets.
//   5. write     block per patch: zero its output words, then header, section A, mask part,
//                area table, positions, high parts and section D (atomicOr into the zeroed words,
//                prefix sums over areas for positions, bitmap offsets and low-field offsets).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "codec/hfpac.h"
#include "codec/layout.h"

#ifdef __CUDACC__
#define HFGPU_HD __host__ __device__
#else
#define HFGPU_HD
#endif

namespace hfgpu::enc {

constexpr int kThreads = 256;        // threads per block for every per-patch kernel
constexpr int kMaxCandidates = 3;    // no mask, the caller's nodata value, the most frequent value
constexpr int kMaxSegments = 4;      // segment sizes tried per candidate (4 with segment = 0)
constexpr int kBitsOptions = 17;     // b = 0..16

// Kinds of mask candidate, in the CPU's order (docs/format.md 8.1).
constexpr int32_t kCandNone = 0, kCandNodata = 1, kCandMode = 2;

// One patch, filled on the host.
struct PatchDesc {
  const uint16_t* samples;  // device pointer, row-major, `stride` samples per row
  uint64_t stride;
  int32_t width, height;
  uint32_t flip;            // 0x8000 for Int16 samples, else 0
  uint32_t reserved;
  uint64_t fillOffset;      // uint16 elements into the fill scratch ((candidates - 1) * W * H)
  uint64_t ctrlOffset;      // int32 elements into the control-point scratch
  uint64_t areaOffset;      // AreaStat elements into the area scratch (combos * areas)
  uint64_t bound;           // upper bound of the final stream's bytes (output capacity share)
};

// Options shared by the whole batch.
struct Params {
  int32_t candidates;                 // 1..3
  int32_t candKind[kMaxCandidates];   // kCandNone first, then kCandNodata / kCandMode
  int32_t segments;                   // 1 or 4
  int32_t segLog[kMaxSegments];       // ascending (the CPU's tie order)
  int32_t bits;                       // -1 = auto, else 0..16
  uint32_t nodata;                    // caller's bit pattern (flip applied per patch)
  uint64_t capacity;                  // output buffer bytes
};

// Result of the prepare and fill kernels for one patch.
struct PrepOut {
  uint32_t lo, hi;                         // unsigned-domain min / max of all points
  uint32_t candValid[kMaxCandidates];      // 1 if this candidate is tried
  uint32_t candValue[kMaxCandidates];      // masked value (unsigned domain)
  uint32_t candMin[kMaxCandidates];        // base: min of the points not masked by it
};

// Result of the analyse kernel for one (patch, candidate, segment size).
struct ComboOut {
  uint64_t size;         // exact stream bytes; UINT64_MAX when the candidate is not tried
  uint32_t aBytes, bBytes, dBytes;
  int32_t perArea;       // 1: PER_AREA_BITS (AreaStat::bits), 0: uniformBits for every area
  int32_t uniformBits;
  int32_t highBits, countBits;
  int32_t cornerBits, edgeBits, centreBits;
  uint32_t base;
  uint32_t kBytes, tBytes;  // mask part, area table (the first parts of section B)
  uint64_t prominent;       // entries in the prominent list
};

// Per-area residual statistics of one combo (written by analyse, read by write).
struct AreaStat {
  int32_t rmin, rmax;
  uint16_t prominentAt[kBitsOptions];  // points with minBits(r) > b
  uint16_t masked;                     // masked points in the area
  uint8_t bits;                        // chosen b (auto, per area)
  uint8_t reserved[3];
};

// Per-patch decision of the select kernel.
struct PatchResult {
  uint64_t size;     // final stream bytes
  int32_t kind;      // kResultFlat, kResultStored, or kResultCoded (combo index in `combo`)
  int32_t combo;
};
constexpr int32_t kResultFlat = 0, kResultStored = 1, kResultCoded = 2;

// Control points of one combo: corners (segX+1)(segY+1), horizontal edges segX(segY+1),
// vertical edges (segX+1)segY, centres segX*segY (int32 values, not offsets).
HFGPU_HD inline uint64_t controlCount(int width, int height, int segLog) {
  const int n = 1 << segLog;
  const uint64_t sx = uint64_t(width <= 1 ? 1 : (width - 1 + n - 1) / n);
  const uint64_t sy = uint64_t(height <= 1 ? 1 : (height - 1 + n - 1) / n);
  return (sx + 1) * (sy + 1) + sx * (sy + 1) + (sx + 1) * sy + sx * sy;
}

// ---- Host-side planning (shared by src/gpu/encoder.cpp and the emulated test) ----

using hfpac::detail::segLogForSize;

// 2DRBUC (EncodeOptions::rbuc, format version 2) is not implemented on the GPU: rejected.
inline bool validOptions(const hfpac::EncodeOptions& o) {
  if (o.rbuc) return false;
  if (o.segment != 0 && segLogForSize(o.segment) < 0) return false;
  return o.bits >= -1 && o.bits <= hfpac::kMaxBits;
}

// Candidates and segment sizes in the CPU's order (options must be valid).
inline Params makeParams(const hfpac::EncodeOptions& o) {
  Params p{};
  p.candidates = 0;
  p.candKind[p.candidates++] = kCandNone;
  if (o.hasNodata) p.candKind[p.candidates++] = kCandNodata;
  if (o.autoMask) p.candKind[p.candidates++] = kCandMode;
  p.segments = 0;
  if (o.segment != 0) {
    p.segLog[p.segments++] = segLogForSize(o.segment);
  } else {
    for (int s = 2; s <= 5; ++s) p.segLog[p.segments++] = s;
  }
  p.bits = o.bits;
  p.nodata = o.nodata;
  return p;
}

// Upper bound of a final stream: the stored size with automatic b (the stored fallback caps
// every stream; flat streams are 32 bytes), hfpac::maxEncodedSize with a fixed b (a masked
// candidate wins only when smaller than the unmasked stream, which it bounds).
inline uint64_t streamBound(int width, int height, int bits) {
  if (bits < 0) {
    const uint64_t points = uint64_t(width) * uint64_t(height);
    return uint64_t(hfpac::kHeaderBytes) + (points * hfpac::kMaxBits + 31) / 32 * 4;
  }
  return hfpac::maxEncodedSize(width, height);
}

struct Plan {
  Params params;
  uint64_t combos = 0;  // per patch
  uint64_t fillElems = 0, ctrlElems = 0, areaElems = 0, capacity = 0;
};

// Completes descs[i] (samples, stride, width, height and flip already set; validated) with the
// scratch offsets and bounds, and sizes the scratch.
inline Plan planEncode(const hfpac::EncodeOptions& options, PatchDesc* descs, size_t count) {
  Plan plan;
  plan.params = makeParams(options);
  const Params& prm = plan.params;
  plan.combos = uint64_t(prm.candidates) * uint64_t(prm.segments);
  for (size_t i = 0; i < count; ++i) {
    PatchDesc& d = descs[i];
    const uint64_t points = uint64_t(d.width) * uint64_t(d.height);
    const uint64_t areas = uint64_t((d.width + hfpac::kAreaSide - 1) / hfpac::kAreaSide) *
                           uint64_t((d.height + hfpac::kAreaSide - 1) / hfpac::kAreaSide);
    d.reserved = 0;
    d.fillOffset = plan.fillElems;
    d.ctrlOffset = plan.ctrlElems;
    d.areaOffset = plan.areaElems;
    d.bound = streamBound(d.width, d.height, options.bits);
    plan.fillElems += uint64_t(prm.candidates - 1) * points;
    uint64_t perCand = 0;
    for (int s = 0; s < prm.segments; ++s) perCand += controlCount(d.width, d.height, prm.segLog[s]);
    plan.ctrlElems += uint64_t(prm.candidates) * perCand;
    plan.areaElems += plan.combos * areas;
    plan.capacity += d.bound;
  }
  plan.params.capacity = plan.capacity;
  return plan;
}

// Device scratch the pipeline uses; sizes come from the host (see encoder.cpp).
struct Workspace {
  const PatchDesc* patches;
  PrepOut* prep;
  ComboOut* combos;        // count * candidates * segments
  PatchResult* results;    // count
  uint64_t* offsets;       // count + 1 (byte offsets of each stream, then the total)
  uint16_t* fill;
  int32_t* ctrl;
  AreaStat* areas;
  uint32_t* output;        // capacity / 4 words
  uint32_t* error;         // set to 1 when the total exceeds the capacity (no stream is written)
};

// Enqueues the whole pipeline on `stream`. Returns the launch error (cudaGetLastError), if any.
cudaError_t launchEncode(const Workspace& ws, const Params& params, size_t count,
                         cudaStream_t stream);

}  // namespace hfgpu::enc
