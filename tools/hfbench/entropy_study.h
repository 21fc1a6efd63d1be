// entropy_study.h - `hfbench entropy`: how small could an entropy stage make each DEM? (issue 17)
//
// A design study, not a codec: for every P x P patch of a DEM (the patches `hfbench codec`
// measures, patches.h) it computes what an order-0 entropy coder with one static model per
// patch would spend on the residuals of several predictors, and compares the totals with
// today's HFPaC streams and with zstd-19 on the same patches (anchors.h). It decides which
// predictor the entropy stage should code before any format is written.
//
// Residual model (what an rANS or Huffman stage with a per-patch table really pays): a residual
// v is zigzagged (z = 2|v| or 2|v| - 1); z < 16 is its own symbol, a larger z is the symbol
// 16 + 4 (bitLength(z) - 5) + the two bits under its top bit, followed by bitLength(z) - 3 raw
// bits (JPEG XL's hybrid integers). Cost = sum of -log2 p over the patch's symbols + the raw
// bits + a table of 12 bits per symbol used. Masked points (the
// DEM's nodata) are not coded; the mask costs the order-1 entropy of its bits (context: the
// left neighbour's bit) in patches that have both kinds; predictors read a masked neighbour as
// the last unmasked sample before it in raster order (the decoder knows the mask first).
//
// Predictors, per point:
//   bezier     s - L1, HFPaC's layer-1 surface (its layer-1 bytes are added as they are today):
//              residuals independent per point, layers 1 / lossless progressive as today
//   bezier_dx  (s - L1) - (left's s - L1): a row prefix sum on top of layer 1
//   dx         s - left (the first column: s - up): zstd's predictor; decode is a row scan
//   dx_context dx with four models per patch, chosen by the left neighbour's |dx| (0, <= 2,
//              <= 8, more): what context modelling adds to the same predictor
//   med        LOCO-I / JPEG-LS median of left, up, up-left: the strongest here, but each point
//              needs its decoded neighbours (a wavefront on the GPU, no random access)
//   best       per patch the smallest of today's stream, bezier, bezier_dx and dx (all of them
//              decode with one GPU thread per point or per row)
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "demio/dem_io.h"

namespace hfbench {

struct EntropyStudyOptions {
  int patch = 129;
  int zstdLevel = 19;
  demio::ReadOptions read;
};

struct EntropyStudyResult {
  bool ok = false;
  std::string input, error;
  int width = 0, height = 0;
  uint64_t points = 0, patches = 0;
  uint64_t rawBytes = 0;          // 2 bytes per point
  uint64_t hfpacBytes = 0;        // today's streams (default options, the DEM's nodata as mask)
  uint64_t layer1Bytes = 0;       // their layer-1 sections (header included)
  uint64_t zstdBytes = 0;         // zstd-19 with the horizontal-difference predictor
  double maskBytes = 0;           // the mask's estimated cost, added to every predictor below
  double bezierBytes = 0, bezierDxBytes = 0, dxBytes = 0, dxContextBytes = 0, medBytes = 0, bestBytes = 0;
  uint64_t bestPatches[4] = {};   // how often best chose: today's stream, bezier, bezier_dx, dx
  double totalSeconds = 0;
};

EntropyStudyResult runEntropyStudy(const std::string& path, const EntropyStudyOptions& options,
                                   const std::function<void(const std::string&)>& log);

// The report: {"command", "results": [{input, ratios ...}]}; ratios are raw bytes / bytes.
std::string entropyStudyJson(const std::string& command, const std::vector<EntropyStudyResult>& results);

}  // namespace hfbench
