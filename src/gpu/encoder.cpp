// encoder.cpp - host side of the batched GPU encoder (encoder.h): validates the batch, sizes the
// device scratch from the patch dimensions, uploads the patch descriptors and enqueues the
// kernels of cuda/encode.cu (pipeline in cuda/encode_kernels.cuh).
#include "gpu/encoder.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <string>

#include "encode_kernels.cuh"
#include "gpu/cuda_util.h"

namespace hfgpu {
namespace {

bool validPatch(const void* samples, size_t stride, int width, int height, hfpac::SampleType type) {
  return samples != nullptr && width >= 1 && height >= 1 && width <= hfpac::kMaxPatchSide &&
         height <= hfpac::kMaxPatchSide && stride >= size_t(width) &&
         (type == hfpac::SampleType::UInt16 || type == hfpac::SampleType::Int16);
}

}  // namespace

size_t gpuEncodeBound(int width, int height, int bits) {
  if (width < 1 || height < 1 || width > hfpac::kMaxPatchSide || height > hfpac::kMaxPatchSide)
    return 0;
  return size_t(enc::streamBound(width, height, bits));
}

struct BatchEncoder::Impl {
  DeviceBuffer<enc::PatchDesc> patches;
  DeviceBuffer<enc::PrepOut> prep;
  DeviceBuffer<enc::ComboOut> combos;
  DeviceBuffer<enc::PatchResult> results;
  DeviceBuffer<uint64_t> offsets;
  DeviceBuffer<uint16_t> fill;
  DeviceBuffer<int32_t> ctrl;
  DeviceBuffer<enc::AreaStat> areas;
  DeviceBuffer<uint32_t> output;
  DeviceBuffer<uint32_t> error;
  PinnedBuffer<enc::PatchDesc> descStaging;
  PinnedBuffer<uint64_t> hostOffsets;
  PinnedBuffer<uint32_t> hostError;
  Event uploaded{false};  // the descriptor upload of the last call is done
  Event finished{false};  // the whole last call is done
  bool pending = false;   // a call was enqueued (the events were recorded)
  size_t count = 0;

  // For encodeHost / benchGpuEncode.
  PinnedBuffer<uint16_t> hostSamples;
  DeviceBuffer<uint16_t> deviceSamples;
  PinnedBuffer<uint8_t> hostStreams;

  template <typename T>
  void grow(DeviceBuffer<T>& b, size_t n) {
    if (n <= b.size()) return;
    if (pending) finished.synchronize();  // the old buffer may still be in use
    b.allocate(n + n / 4);
  }
  template <typename T>
  void growPinned(PinnedBuffer<T>& b, size_t n) {
    if (n <= b.size()) return;
    if (pending) finished.synchronize();
    b.allocate(n + n / 4);
  }
};

BatchEncoder::BatchEncoder() : impl_(std::make_unique<Impl>()) {}
BatchEncoder::~BatchEncoder() = default;
BatchEncoder::BatchEncoder(BatchEncoder&&) noexcept = default;
BatchEncoder& BatchEncoder::operator=(BatchEncoder&&) noexcept = default;

size_t BatchEncoder::count() const { return impl_->count; }
const uint8_t* BatchEncoder::deviceStreams() const {
  return reinterpret_cast<const uint8_t*>(impl_->output.get());
}
const uint64_t* BatchEncoder::deviceOffsets() const { return impl_->offsets.get(); }
const uint64_t* BatchEncoder::hostOffsets() const { return impl_->hostOffsets.get(); }
bool BatchEncoder::hostOutputOk() const { return impl_->hostError && impl_->hostError[0] == 0; }

hfpac::Status BatchEncoder::encodeAsync(const DevicePatch* patches, size_t count,
                                        const hfpac::EncodeOptions& options, cudaStream_t stream) {
  if ((patches == nullptr && count > 0) || !enc::validOptions(options)) return hfpac::Status::InvalidArgument;
  if (count > size_t(0x7fffffff)) return hfpac::Status::InvalidArgument;  // grid x limit
  for (size_t i = 0; i < count; ++i) {
    const DevicePatch& p = patches[i];
    if (!validPatch(p.samples, p.stride, p.width, p.height, p.type)) return hfpac::Status::InvalidArgument;
  }
  Impl& m = *impl_;
  m.growPinned(m.descStaging, std::max<size_t>(count, 1));
  if (m.pending) m.uploaded.synchronize();  // the staging of the previous call is free again
  for (size_t i = 0; i < count; ++i) {
    const DevicePatch& p = patches[i];
    enc::PatchDesc& d = m.descStaging[i];
    d.samples = p.samples;
    d.stride = p.stride;
    d.width = p.width;
    d.height = p.height;
    d.flip = p.type == hfpac::SampleType::Int16 ? 0x8000u : 0u;
  }
  const enc::Plan plan = enc::planEncode(options, m.descStaging.get(), count);
  const enc::Params& params = plan.params;
  const uint64_t ncombo = plan.combos, fillElems = plan.fillElems, ctrlElems = plan.ctrlElems,
                 areaElems = plan.areaElems, capacity = plan.capacity;

  const size_t n1 = std::max<size_t>(count, 1);
  m.grow(m.patches, n1);
  m.grow(m.prep, n1);
  m.grow(m.combos, n1 * ncombo);
  m.grow(m.results, n1);
  m.grow(m.offsets, n1 + 1);
  m.grow(m.fill, std::max<uint64_t>(fillElems, 1));
  m.grow(m.ctrl, std::max<uint64_t>(ctrlElems, 1));
  m.grow(m.areas, std::max<uint64_t>(areaElems, 1));
  m.grow(m.output, std::max<uint64_t>(capacity / 4, 1));
  m.grow(m.error, 1);
  m.growPinned(m.hostOffsets, n1 + 1);
  m.growPinned(m.hostError, 1);
  m.count = count;

  if (count == 0) {
    CUDA_CHECK(cudaMemsetAsync(m.offsets.get(), 0, sizeof(uint64_t), stream));
    CUDA_CHECK(cudaMemsetAsync(m.error.get(), 0, sizeof(uint32_t), stream));
  } else {
    CUDA_CHECK(cudaMemcpyAsync(m.patches.get(), m.descStaging.get(), count * sizeof(enc::PatchDesc),
                               cudaMemcpyHostToDevice, stream));
    m.uploaded.record(stream);
    enc::Workspace ws{};
    ws.patches = m.patches.get();
    ws.prep = m.prep.get();
    ws.combos = m.combos.get();
    ws.results = m.results.get();
    ws.offsets = m.offsets.get();
    ws.fill = m.fill.get();
    ws.ctrl = m.ctrl.get();
    ws.areas = m.areas.get();
    ws.output = m.output.get();
    ws.error = m.error.get();
    CUDA_CHECK(enc::launchEncode(ws, params, count, stream));
  }
  CUDA_CHECK(cudaMemcpyAsync(m.hostOffsets.get(), m.offsets.get(), (count + 1) * sizeof(uint64_t),
                             cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaMemcpyAsync(m.hostError.get(), m.error.get(), sizeof(uint32_t),
                             cudaMemcpyDeviceToHost, stream));
  if (count == 0) m.uploaded.record(stream);
  m.finished.record(stream);
  m.pending = true;
  return hfpac::Status::Ok;
}

hfpac::Status BatchEncoder::encode(const DevicePatch* patches, size_t count,
                                   const hfpac::EncodeOptions& options, cudaStream_t stream,
                                   std::vector<std::vector<uint8_t>>& out) {
  const hfpac::Status st = encodeAsync(patches, count, options, stream);
  if (st != hfpac::Status::Ok) return st;
  Impl& m = *impl_;
  CUDA_CHECK(cudaStreamSynchronize(stream));
  if (!hostOutputOk()) throw std::runtime_error("hfgpu::BatchEncoder: output capacity exceeded (internal error)");
  const uint64_t total = m.hostOffsets[count];
  // One download of the contiguous streams, then split.
  if (total > m.hostStreams.size()) m.hostStreams.allocate(total + total / 4);
  if (total > 0) {
    CUDA_CHECK(cudaMemcpyAsync(m.hostStreams.get(), m.output.get(), total, cudaMemcpyDeviceToHost, stream));
    m.finished.record(stream);
    CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  out.resize(count);
  for (size_t i = 0; i < count; ++i) {
    const uint64_t begin = m.hostOffsets[i], end = m.hostOffsets[i + 1];
    out[i].assign(m.hostStreams.get() + begin, m.hostStreams.get() + end);
  }
  return hfpac::Status::Ok;
}

namespace {

// Packs host patches into `staging` (stride = width) and returns device patches pointing into
// `device` at the same offsets. Grows both buffers as needed (caller has waited for prior use).
std::vector<DevicePatch> stageHostPatches(const hfpac::PatchIn* patches, size_t count,
                                          PinnedBuffer<uint16_t>& staging,
                                          DeviceBuffer<uint16_t>& device, cudaStream_t stream,
                                          hfpac::Status& status) {
  status = hfpac::Status::Ok;
  std::vector<DevicePatch> out(count);
  uint64_t total = 0;
  for (size_t i = 0; i < count; ++i) {
    const hfpac::PatchIn& p = patches[i];
    if (!validPatch(p.samples, p.stride, p.width, p.height, p.type)) {
      status = hfpac::Status::InvalidArgument;
      return {};
    }
    total += uint64_t(p.width) * uint64_t(p.height);
  }
  staging.reserve(std::max<uint64_t>(total, 1));
  device.reserve(std::max<uint64_t>(total, 1));
  uint64_t at = 0;
  for (size_t i = 0; i < count; ++i) {
    const hfpac::PatchIn& p = patches[i];
    for (int y = 0; y < p.height; ++y)
      std::memcpy(staging.get() + at + uint64_t(y) * uint64_t(p.width), p.samples + size_t(y) * p.stride,
                  size_t(p.width) * sizeof(uint16_t));
    out[i].samples = device.get() + at;
    out[i].stride = size_t(p.width);
    out[i].width = p.width;
    out[i].height = p.height;
    out[i].type = p.type;
    at += uint64_t(p.width) * uint64_t(p.height);
  }
  if (total > 0)
    CUDA_CHECK(cudaMemcpyAsync(device.get(), staging.get(), total * sizeof(uint16_t),
                               cudaMemcpyHostToDevice, stream));
  return out;
}

}  // namespace

hfpac::Status BatchEncoder::encodeHost(const hfpac::PatchIn* patches, size_t count,
                                       const hfpac::EncodeOptions& options, cudaStream_t stream,
                                       std::vector<std::vector<uint8_t>>& out) {
  if ((patches == nullptr && count > 0) || !enc::validOptions(options)) return hfpac::Status::InvalidArgument;
  Impl& m = *impl_;
  if (m.pending) m.finished.synchronize();  // the sample buffers may still be in use
  hfpac::Status st;
  const std::vector<DevicePatch> device =
      stageHostPatches(patches, count, m.hostSamples, m.deviceSamples, stream, st);
  if (st != hfpac::Status::Ok) return st;
  return encode(device.data(), count, options, stream, out);
}

bool benchGpuEncode(const hfpac::PatchIn* patches, size_t count, const hfpac::EncodeOptions& options,
                    int repeat, const std::vector<std::vector<uint8_t>>* reference,
                    GpuEncodeBench& result, std::string& error) {
  result = GpuEncodeBench{};
  try {
    if (cudaDeviceCountOrZero() == 0) {
      error = "no CUDA device";
      return false;
    }
    if ((patches == nullptr && count > 0) || !enc::validOptions(options) || repeat < 1) {
      error = options.rbuc ? "2DRBUC (rbuc) is not supported by the GPU encoder" : "invalid options";
      return false;
    }
    Stream stream;
    BatchEncoder encoder;
    PinnedBuffer<uint16_t> staging;
    DeviceBuffer<uint16_t> device;
    hfpac::Status st;
    const std::vector<DevicePatch> dev = stageHostPatches(patches, count, staging, device, stream, st);
    if (st != hfpac::Status::Ok) {
      error = std::string("invalid patch: ") + hfpac::statusMessage(st);
      return false;
    }
    // Warm-up (allocates the workspace) and the streams for the comparison.
    std::vector<std::vector<uint8_t>> streams;
    st = encoder.encode(dev.data(), count, options, stream, streams);
    if (st != hfpac::Status::Ok) {
      error = std::string("encode: ") + hfpac::statusMessage(st);
      return false;
    }
    Event start, stop;
    double best = 0;
    for (int r = 0; r < repeat; ++r) {
      start.record(stream);
      st = encoder.encodeAsync(dev.data(), count, options, stream);
      stop.record(stream);
      stop.synchronize();
      const double s = double(stop.elapsedMsSince(start)) * 1e-3;
      if (r == 0 || s < best) best = s;
    }
    result.patches = count;
    for (size_t i = 0; i < count; ++i) result.points += uint64_t(patches[i].width) * uint64_t(patches[i].height);
    for (const auto& s : streams) result.bytes += s.size();
    result.seconds = best;
    result.pointsPerSecond = best > 0 ? double(result.points) / best : 0;
    if (reference) {
      for (size_t i = 0; i < count; ++i) {
        if (i >= reference->size() || (*reference)[i] != streams[i]) {
          if (result.mismatches == 0) result.firstMismatch = long(i);
          ++result.mismatches;
        }
      }
    }
    return true;
  } catch (const std::exception& e) {
    error = e.what();
    return false;
  }
}

}  // namespace hfgpu
