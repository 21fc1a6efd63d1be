// anchors.h - the reference codecs HFPaC is compared with, run on the same patches.
//
//   zstd  horizontal-difference predictor per row (first sample as is, then
//         sample[i] - sample[i-1] as uint16 wrap-around), optionally split into a high-byte
//         plane followed by a low-byte plane, then ZSTD_compress at `level`, one frame per
//         patch. Whether the byte split is used is decided per input on a sample of patches
//         (the smaller total wins) and reported in `method`.
//   lerc  LERC 4 C API, lerc_encode / lerc_decode, data type short (Int16) or unsigned short
//         (UInt16), maxZErr 0.5 (lossless for integers), no validity mask (nodata samples are
//         coded as values, as HFPaC codes them), one blob per patch.
//
// Encode time is one run over all patches (it includes the predictor). The decode
// (ZSTD_decompress + undoing the predictor; lerc_decode; single thread, into a buffer laid out
// like PatchSet::packed, sized before any clock starts) is run once for the lossless check and
// then registered with `rounds` (decode_rounds.h), which times it interleaved with the other
// codecs' decodes; AnchorResult::decodeRound names it there.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "decode_rounds.h"
#include "patches.h"

namespace hfbench {

struct AnchorResult {
  bool ok = false;              // ran to the end (false: `error` says why)
  std::string error;
  std::string method;           // what exactly was measured, one line
  std::string detail;           // extra, e.g. the byte-split trial sizes
  uint64_t compressedBytes = 0;
  double encodeSeconds = 0;
  double decodeSeconds = 0;     // set from `rounds` once they have run (DecodeRounds::best)
  size_t decodeRound = 0;       // the decode's index in `rounds` (when ok)
  bool lossless = false;
  Mismatch mismatch;
};

// `decoded` must outlive the rounds' run (the registered decodes write into it).
AnchorResult benchZstd(const PatchSet& set, int level, std::vector<uint16_t>& decoded, DecodeRounds& rounds);
AnchorResult benchLerc(const PatchSet& set, std::vector<uint16_t>& decoded, DecodeRounds& rounds);

std::string zstdVersion();
std::string lercVersion();

}  // namespace hfbench
