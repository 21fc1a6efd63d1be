// codec_bench.h - `hfbench codec`: HFPaC against zstd and LERC on the patches of real DEMs.
//
// For each input: read band 1 with demio (16-bit as is, 8-bit widened, wider types quantised),
// cut it into P x P patches stepping by P - 1 (patches.h), then on exactly those patches:
//   HFPaC  encode (one run, single thread: hfpac::encode; and hfpac::encodeBatch on `threads`
//          threads, which must give identical bytes), decode (best of `repeat`, single thread:
//          hfpac::decode; and hfpac::decodeBatch), lossless check of every sample, layer sizes
//          and encoder statistics, max error of the L1 and L12 approximations (and whether L12
//          keeps the documented 2^(b-1) bound), and a spot check of PatchView::sample.
//   anchors  zstd and LERC (anchors.h).
// Throughput is points (samples, counting shared rows / columns once per patch) per second of
// wall time over all patches of the input. Nothing here prints; the caller reports.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "anchors.h"
#include "gpu_bench.h"
#include "demio/dem_io.h"
#include "patches.h"

namespace hfbench {

struct CodecBenchOptions {
  int patch = 129;       // P, 2..hfpac::kMaxPatchSide
  int segment = 9;       // hfpac::EncodeOptions::segment (0 = try all)
  int bits = -1;         // hfpac::EncodeOptions::bits (-1 = auto)
  int threads = 0;       // for encodeBatch / decodeBatch; 0 = hardware concurrency
  int repeat = 3;        // decode runs; the best is reported
  int zstdLevel = 19;
  bool passNodata = true;  // give the DEM's nodata sample to the encoder as its mask candidate
  bool autoMask = true;    // hfpac::EncodeOptions::autoMask
  bool cuda = false;       // --device cuda: add the GPU figures (gpu_bench.h)
  demio::ReadOptions read;
};

struct HfpacResult {
  uint64_t compressedBytes = 0;
  std::vector<uint32_t> patchBytes;  // each patch's stream (for the per-patch codec choice)
  uint64_t layer1Bytes = 0, layer2Bytes = 0, layer3Bytes = 0;
  uint64_t bitsHistogram[hfpac::kMaxBits + 1] = {};
  uint64_t prominentPoints = 0;
  size_t flatPatches = 0;
  size_t perAreaBitsPatches = 0;
  size_t storedPatches = 0;      // kept as raw 16-bit samples (incompressible)
  size_t maskedPatches = 0;      // with masked points (nodata / most frequent value)
  std::map<int, size_t> segmentHistogram;  // m -> patches (flat patches have m = 0)

  double encodeSeconds = 0, encodeMtSeconds = 0;
  double decodeSeconds = 0, decodeMtSeconds = 0;  // single thread: the best decode round
  size_t decodeRound = 0;                           // the single-thread decode's index in the rounds

  bool lossless = false;       // single-thread decode (Layers::All) equals the input everywhere
  bool losslessMt = false;     // the same for decodeBatch
  bool deterministicMt = false;  // encodeBatch produced the same bytes as encode
  Mismatch mismatch;           // first difference of the single-thread decode
  std::string decodeError;     // first non-Ok decode status on our own streams, if any

  long maxErrL1 = 0, maxErrL12 = 0;  // stored units
  size_t l12BoundViolations = 0;     // patches where L12 error > 2^(max b of the patch - 1)
  size_t l12FirstViolation = 0;
  bool pointDecodeOk = true;         // PatchView::sample agreed with whole-patch decode
  size_t pointsChecked = 0;

  std::vector<std::string> notes;    // codec inconsistencies found on the way
};

struct InputResult {
  std::string input;
  bool ok = false;          // measured (false: `error` says why; the fields below may be partial)
  std::string error;        // one line
  demio::Dem dem;           // metadata only (samples released after cutting)
  int patchSide = 0;
  size_t patches = 0;
  size_t points = 0;
  double readSeconds = 0;
  double totalSeconds = 0;
  HfpacResult hfpac;
  AnchorResult zstd, lerc;
  AnchorResult rbuc;        // HFPaC with 2DRBUC residuals (same patches and options)
  AnchorResult ans;         // the entropy stage alone (codec/ans.h): every patch an HFAN stream
  uint64_t autoBytes = 0;   // per patch the smaller of the HFPaC stream and the HFAN stream
  GpuResult gpu;            // with CodecBenchOptions::cuda

  bool allLossless() const {
    return ok && hfpac.lossless && hfpac.losslessMt && zstd.lossless && lerc.lossless &&
           (!rbuc.ok || rbuc.lossless) && (!ans.ok || ans.lossless);
  }
  uint64_t originalBytes() const { return 2 * static_cast<uint64_t>(points); }
};

// Progress messages ("hfpac encode", ...); may be empty.
using LogFn = std::function<void(const std::string&)>;

// Benchmarks one input. Never throws (std::bad_alloc and other exceptions become `error`).
InputResult benchCodecInput(const std::string& path, const CodecBenchOptions& options,
                            const LogFn& log = {});

}  // namespace hfbench
