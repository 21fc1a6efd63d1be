// gpu_encode_bench.h - `hfbench codec --device cuda`: the GPU encoder's figures, written into
// GpuResult::extra (the JSON hook of gpu_bench.h) as gpu_encode_* fields:
//   gpu_encode_identical       1 if the GPU streams of the input's patches equal the CPU streams
//   gpu_encode_mismatches      number of patches whose GPU stream differs
//   gpu_encode_pts_per_s       large batch (input patches replicated to >= 64 M points), the
//                              run's options (--segment / --bits), kernels only (CUDA events)
//   gpu_encode_batch_patches, gpu_encode_batch_points   that batch
//   gpu_encode_fixed_b_pts_per_s  the same batch with a fixed b (--bits N, or 6 with --bits auto)
//   gpu_encode_fixed_b            that b
//   gpu_encode16_us            16 patches of the input (replicated if fewer), run's options, us
//   gpu_vs_cpu_encode          gpu_encode_pts_per_s / single-thread CPU encode points per second
// On failure the figures are absent and `error` (GpuResult::error) is set if it was empty.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "codec/hfpac.h"

namespace hfbench {

// `patches` / `cpuStreams`: the input's patches and their CPU streams (same options).
// `cpuPointsPerSecond`: the single-thread CPU encode speed (0 = unknown). Never throws.
void addGpuEncodeFigures(const std::vector<hfpac::PatchIn>& patches,
                         const std::vector<std::vector<uint8_t>>& cpuStreams,
                         const hfpac::EncodeOptions& options, int repeat, double cpuPointsPerSecond,
                         std::map<std::string, double>& extra, std::string& error);

}  // namespace hfbench
