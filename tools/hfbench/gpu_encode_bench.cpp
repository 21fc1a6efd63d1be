// gpu_encode_bench.cpp - see gpu_encode_bench.h.
#include "gpu_encode_bench.h"

#include <algorithm>

#include "gpu/encoder.h"

namespace hfbench {
namespace {

constexpr uint64_t kTargetPoints = uint64_t(64) << 20;  // fill the GPU, as the decode figures
constexpr int kDefaultFixedBits = 6;

std::vector<hfpac::PatchIn> replicate(const std::vector<hfpac::PatchIn>& patches, uint64_t minPoints,
                                      size_t minPatches) {
  uint64_t points = 0;
  for (const auto& p : patches) points += uint64_t(p.width) * uint64_t(p.height);
  std::vector<hfpac::PatchIn> out;
  if (patches.empty() || points == 0) return out;
  uint64_t have = 0;
  while (have < minPoints || out.size() < minPatches) {
    const hfpac::PatchIn& p = patches[out.size() % patches.size()];
    out.push_back(p);
    have += uint64_t(p.width) * uint64_t(p.height);
  }
  return out;
}

}  // namespace

void addGpuEncodeFigures(const std::vector<hfpac::PatchIn>& patches,
                         const std::vector<std::vector<uint8_t>>& cpuStreams,
                         const hfpac::EncodeOptions& options, int repeat, double cpuPointsPerSecond,
                         std::map<std::string, double>& extra, std::string& error) {
  const int runs = std::max(repeat, 5);
  std::string why;
  hfgpu::GpuEncodeBench r;
  // 1. Byte identity on the input's own patches.
  if (!hfgpu::benchGpuEncode(patches.data(), patches.size(), options, 1, &cpuStreams, r, why)) {
    if (error.empty()) error = "gpu encode: " + why;
    return;
  }
  extra["gpu_encode_identical"] = r.mismatches == 0 ? 1 : 0;
  extra["gpu_encode_mismatches"] = double(r.mismatches);
  // 2. Throughput on a large batch, the run's options and a fixed b.
  const std::vector<hfpac::PatchIn> big = replicate(patches, kTargetPoints, 1);
  if (!hfgpu::benchGpuEncode(big.data(), big.size(), options, runs, nullptr, r, why)) {
    if (error.empty()) error = "gpu encode (batch): " + why;
    return;
  }
  extra["gpu_encode_pts_per_s"] = r.pointsPerSecond;
  extra["gpu_encode_batch_patches"] = double(r.patches);
  extra["gpu_encode_batch_points"] = double(r.points);
  if (cpuPointsPerSecond > 0) extra["gpu_vs_cpu_encode"] = r.pointsPerSecond / cpuPointsPerSecond;
  hfpac::EncodeOptions fixed = options;
  if (fixed.bits < 0) fixed.bits = kDefaultFixedBits;
  if (hfgpu::benchGpuEncode(big.data(), big.size(), fixed, runs, nullptr, r, why)) {
    extra["gpu_encode_fixed_b_pts_per_s"] = r.pointsPerSecond;
    extra["gpu_encode_fixed_b"] = fixed.bits;
  }
  // 3. The small workload: 16 patches.
  std::vector<hfpac::PatchIn> sixteen = replicate(patches, 0, 16);
  sixteen.resize(std::min<size_t>(sixteen.size(), 16));
  if (hfgpu::benchGpuEncode(sixteen.data(), sixteen.size(), options, std::max(runs, 20), nullptr, r, why))
    extra["gpu_encode16_us"] = r.seconds * 1e6;
}

}  // namespace hfbench
