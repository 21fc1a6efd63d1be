// gpu_bench.h - `hfbench codec --device cuda`: GPU decode figures for one input (timed with
// CUDA events on the device, in the same run as the CPU figures). Built when hfpac_gpu is.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "patches.h"

namespace hfbench {

struct GpuResult {
  bool measured = false;
  std::string error;              // why nothing was measured (no device, ...)
  std::string device;             // e.g. "NVIDIA H100 80GB HBM3 (sm_90)"
  bool lossless = false;          // GPU All decode of the input's patches == the input
  bool l1MatchesCpu = false;      // GPU L1 decode == hfpac::decode(Layers::L1)
  uint64_t batchPatches = 0, batchPoints = 0, batchCompressedBytes = 0;
  int replicas = 0;               // copies of the input's patches in the large batch
  double decodeSeconds = 0, decodeL1Seconds = 0, decodeSurfaceSeconds = 0;  // per batch, best
  double d2dBytesPerSecond = 0;   // cudaMemcpy device-to-device, (read + written) bytes / s
  double decode16Us = 0;          // 16 patches of 129 x 129, All, best of many, microseconds
  // Hook for further GPU figures (e.g. the encoder's gpu_encode_*): written as they are.
  std::map<std::string, double> extra;
};

// Measures GPU decode of `streams` (one per patch of `set`). Never throws.
GpuResult benchGpuDecode(const PatchSet& set, const std::vector<std::vector<uint8_t>>& streams,
                         int repeat);

}  // namespace hfbench
