// gpu_bench.cpp - see gpu_bench.h.
#include "gpu_bench.h"

#include <algorithm>
#include <exception>

#include "gpu/cuda_util.h"
#include "gpu/decoder.h"

namespace hfbench {
namespace {

constexpr uint64_t kTargetPoints = uint64_t(64) << 20;  // fill the GPU: >= 64 M points

// Best (smallest) seconds of `repeat` timed runs of `body` on `stream`, with CUDA events.
template <class F>
double timeBest(int repeat, cudaStream_t stream, F&& body) {
  hfgpu::Event start, stop;
  body();  // warm-up
  double best = 1e30;
  for (int k = 0; k < repeat; ++k) {
    start.record(stream);
    body();
    stop.record(stream);
    stop.synchronize();
    best = std::min(best, double(stop.elapsedMsSince(start)) * 1e-3);
  }
  return best;
}

}  // namespace

GpuResult benchGpuDecode(const PatchSet& set, const std::vector<std::vector<uint8_t>>& streams,
                         int repeat) {
  GpuResult g;
  try {
    if (hfgpu::cudaDeviceCountOrZero() == 0) {
      g.error = "no CUDA device";
      return g;
    }
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    g.device = std::string(prop.name) + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ")";
    const int runs = std::max(repeat, 5);
    hfgpu::Stream stream;
    const size_t count = set.rects.size();
    const uint64_t points = set.points();

    // 1. Correctness on the input itself: All and L1 against the CPU.
    {
      std::vector<hfgpu::PatchInput> in(count);
      for (size_t i = 0; i < count; ++i) {
        in[i].data = streams[i].data();
        in[i].size = streams[i].size();
        in[i].dstOffset = set.rects[i].offset;
        in[i].dstPitch = size_t(set.rects[i].width);
      }
      hfgpu::DeviceBuffer<uint16_t> dst(std::max<uint64_t>(points, 1));
      hfgpu::GpuDecoder dec;
      std::vector<uint16_t> got(points), cpu(points);
      auto st = dec.decode(in.data(), count, hfgpu::DecodeMode::All, hfgpu::Target::linear(dst.get()), stream);
      CUDA_CHECK(cudaMemcpy(got.data(), dst.get(), points * 2, cudaMemcpyDeviceToHost));
      Mismatch mm;
      g.lossless = std::all_of(st.begin(), st.end(), [](hfpac::Status s) { return s == hfpac::Status::Ok; }) &&
                   comparePatches(set, got.data(), mm);
      st = dec.decode(in.data(), count, hfgpu::DecodeMode::L1, hfgpu::Target::linear(dst.get()), stream);
      CUDA_CHECK(cudaMemcpy(got.data(), dst.get(), points * 2, cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < count; ++i) {
        const PatchRect& r = set.rects[i];
        (void)hfpac::decode(streams[i].data(), streams[i].size(), cpu.data() + r.offset, size_t(r.width),
                            r.points(), hfpac::Layers::L1);
      }
      g.l1MatchesCpu = got == cpu;
    }

    // 2. The large batch: the input's patches replicated to >= 64 M points.
    g.replicas = int(std::max<uint64_t>(1, (kTargetPoints + points - 1) / std::max<uint64_t>(points, 1)));
    const size_t total = count * size_t(g.replicas);
    std::vector<hfgpu::PatchInput> in(total);
    // Surface layout: slots of side x side texels, 64 slots per row, one surface.
    const int side = std::max(set.side, 1);
    const int cols = std::max(1, std::min(64, 16384 / side));
    const int rows = int((total + size_t(cols) - 1) / size_t(cols));
    for (size_t k = 0; k < total; ++k) {
      const size_t i = k % count;
      const uint64_t rep = k / count;
      in[k].data = streams[i].data();
      in[k].size = streams[i].size();
      in[k].dstOffset = rep * points + set.rects[i].offset;
      in[k].dstPitch = size_t(set.rects[i].width);
      in[k].surface = 0;
      in[k].x = int(k % size_t(cols)) * side;
      in[k].y = int(k / size_t(cols)) * side;
      g.batchCompressedBytes += streams[i].size();
    }
    g.batchPatches = total;
    g.batchPoints = points * uint64_t(g.replicas);
    hfgpu::DeviceBuffer<uint16_t> dst(g.batchPoints);
    hfgpu::GpuDecoder dec;
    dec.prepare(in.data(), total);
    dec.uploadAsync(stream);
    const hfgpu::Target linear = hfgpu::Target::linear(dst.get());
    g.decodeSeconds = timeBest(runs, stream, [&] { dec.decodeAsync(hfgpu::DecodeMode::All, linear, stream); });
    g.decodeL1Seconds = timeBest(runs, stream, [&] { dec.decodeAsync(hfgpu::DecodeMode::L1, linear, stream); });
    if (rows * side <= 65536) {
      hfgpu::SurfaceArray16 atlas(cols * side, rows * side);
      const cudaSurfaceObject_t surf = atlas.surface();
      const hfgpu::Target target = hfgpu::Target::surfaceSet(&surf, 1);
      g.decodeSurfaceSeconds = timeBest(runs, stream, [&] { dec.decodeAsync(hfgpu::DecodeMode::All, target, stream); });
    }
    // 3. Roofline: device-to-device copy of as many bytes as the decode writes.
    {
      const size_t bytes = size_t(g.batchPoints) * 2;
      hfgpu::DeviceBuffer<uint8_t> a(bytes), b(bytes);
      CUDA_CHECK(cudaMemsetAsync(a.get(), 1, bytes, stream));
      const double s = timeBest(runs, stream, [&] {
        CUDA_CHECK(cudaMemcpyAsync(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice, stream));
      });
      g.d2dBytesPerSecond = 2.0 * double(bytes) / s;
    }
    // 4. 16 patches of 129 x 129 (the input's full-size patches, repeated if there are fewer).
    {
      std::vector<size_t> full;
      for (size_t i = 0; i < count; ++i)
        if (set.rects[i].width == 129 && set.rects[i].height == 129) full.push_back(i);
      if (!full.empty()) {
        std::vector<hfgpu::PatchInput> small(16);
        for (size_t k = 0; k < 16; ++k) {
          const size_t i = full[k % full.size()];
          small[k].data = streams[i].data();
          small[k].size = streams[i].size();
          small[k].dstOffset = k * 129 * 129;
          small[k].dstPitch = 129;
        }
        hfgpu::GpuDecoder d16;
        d16.prepare(small.data(), small.size());
        d16.uploadAsync(stream);
        const double s = timeBest(std::max(runs, 50), stream, [&] {
          d16.decodeAsync(hfgpu::DecodeMode::All, linear, stream);
        });
        g.decode16Us = s * 1e6;
      }
    }
    stream.synchronize();
    g.measured = true;
  } catch (const std::exception& e) {
    g.error = e.what();
  }
  return g;
}

}  // namespace hfbench
