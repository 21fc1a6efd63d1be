// ans_decoder.cpp - see ans_decoder.h.
#include "gpu/ans_decoder.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "codec/ans.h"
#include "gpu/ans_launch.h"
#include "gpu/cuda_util.h"

namespace hfgpu {

namespace {

// The batch as the kernel takes it: streams back to back (each 4-aligned), one descriptor each.
struct PackedBatch {
  std::vector<detail::AnsPatchDesc> descs;
  std::vector<size_t> which;  // index into the caller's streams
  std::vector<uint8_t> bytes;
  uint64_t samples = 0;
};

// Checks every header on the host: statuses[i] gets the result (Unsupported for lanes > 32).
PackedBatch pack(const std::vector<std::vector<uint8_t>>& streams, std::vector<hfpac::Status>& statuses,
                 std::vector<std::vector<uint16_t>>* outputs) {
  PackedBatch b;
  statuses.assign(streams.size(), hfpac::Status::Ok);
  for (size_t i = 0; i < streams.size(); ++i) {
    hfpac::AnsInfo info;
    statuses[i] = hfpac::ansReadInfo(streams[i].data(), streams[i].size(), info);
    if (statuses[i] != hfpac::Status::Ok) continue;
    if (info.lanes > kAnsGpuMaxLanes) {
      statuses[i] = hfpac::Status::Unsupported;
      continue;
    }
    detail::AnsPatchDesc d{};
    d.streamOffset = b.bytes.size();
    d.streamBytes = info.streamBytes;  // a multiple of 4: every stream starts 4-aligned
    d.outOffset = b.samples;
    b.bytes.insert(b.bytes.end(), streams[i].begin(), streams[i].begin() + std::ptrdiff_t(info.streamBytes));
    b.samples += uint64_t(info.width) * uint64_t(info.height);
    if (outputs) (*outputs)[i].assign(size_t(info.width) * size_t(info.height), 0);
    b.descs.push_back(d);
    b.which.push_back(i);
  }
  return b;
}

// The batch on the device, ready to launch.
struct DeviceBatch {
  DeviceBuffer<uint8_t> streams;
  DeviceBuffer<detail::AnsPatchDesc> descs;
  DeviceBuffer<uint16_t> out;
  DeviceBuffer<int32_t> scratch, status;
  DeviceBatch(const PackedBatch& b, const Stream& stream)
      : streams(b.bytes.size()), descs(b.descs.size()), out(b.samples), scratch(b.samples), status(b.descs.size()) {
    CUDA_CHECK(cudaMemcpyAsync(streams.get(), b.bytes.data(), b.bytes.size(), cudaMemcpyHostToDevice, stream));
    CUDA_CHECK(cudaMemcpyAsync(descs.get(), b.descs.data(), b.descs.size() * sizeof(detail::AnsPatchDesc),
                               cudaMemcpyHostToDevice, stream));
  }
  void launch(const Stream& stream) {
    detail::launchAnsDecode(streams.get(), descs.get(), uint32_t(descs.size()), out.get(), scratch.get(), status.get(),
                            stream.get());
    CUDA_CHECK(cudaGetLastError());
  }
};

}  // namespace

void ansDecodeBatch(const std::vector<std::vector<uint8_t>>& streams, std::vector<std::vector<uint16_t>>& outputs,
                    std::vector<hfpac::Status>& statuses) {
  outputs.assign(streams.size(), {});
  const PackedBatch b = pack(streams, statuses, &outputs);
  if (b.descs.empty()) return;
  Stream stream;
  DeviceBatch d(b, stream);
  d.launch(stream);
  std::vector<int32_t> status(b.descs.size());
  std::vector<uint16_t> out(b.samples);
  CUDA_CHECK(cudaMemcpyAsync(status.data(), d.status.get(), status.size() * sizeof(int32_t), cudaMemcpyDeviceToHost,
                             stream));
  CUDA_CHECK(cudaMemcpyAsync(out.data(), d.out.get(), out.size() * sizeof(uint16_t), cudaMemcpyDeviceToHost, stream));
  stream.synchronize();
  for (size_t k = 0; k < b.descs.size(); ++k) {
    const size_t i = b.which[k];
    statuses[i] = hfpac::Status(status[k]);
    std::copy_n(out.begin() + std::ptrdiff_t(b.descs[k].outOffset), outputs[i].size(), outputs[i].begin());
  }
}

AnsKernelTiming ansDecodeKernelTime(const std::vector<std::vector<uint8_t>>& streams, int repeat) {
  std::vector<hfpac::Status> statuses;
  const PackedBatch b = pack(streams, statuses, nullptr);
  AnsKernelTiming t;
  t.samples = b.samples;
  t.patches = b.descs.size();
  if (b.descs.empty()) return t;
  Stream stream;
  DeviceBatch d(b, stream);
  d.launch(stream);  // warm-up
  Event start, stop;
  for (int run = 0; run < std::max(1, repeat); ++run) {
    start.record(stream);
    d.launch(stream);
    stop.record(stream);
    stop.synchronize();
    const double seconds = double(stop.elapsedMsSince(start)) / 1000.0;
    if (run == 0 || seconds < t.seconds) t.seconds = seconds;
  }
  return t;
}

// ---- AnsSurfaceDecoder ----

struct AnsSurfaceDecoder::Impl {
  // Staging and device layout: descriptors, copies, streams (each section 16-aligned).
  PinnedBuffer<uint8_t> staging;
  DeviceBuffer<uint8_t> blob;
  DeviceBuffer<uint16_t> out;
  DeviceBuffer<int32_t> scratch, status;
  PinnedBuffer<int32_t> statusHost;
  Event uploaded{false};
  bool uploadPending = false;
  size_t patches = 0;                      // given to prepare()
  std::vector<hfpac::Status> host;         // per given patch: the header's status
  std::vector<size_t> which;               // per valid patch: index among the given
  uint64_t samples = 0, bytes = 0, copiesAt = 0, streamsAt = 0;
  uint32_t maxSurface = 0;                 // the largest surface index of the valid patches
  bool fetched = false;
};

AnsSurfaceDecoder::AnsSurfaceDecoder() : impl_(std::make_unique<Impl>()) {}
AnsSurfaceDecoder::~AnsSurfaceDecoder() {
  if (impl_ && impl_->uploadPending) CUDA_LOG(cudaEventSynchronize(impl_->uploaded.get()));
}

size_t AnsSurfaceDecoder::prepare(const AnsSurfaceInput* patches, size_t count) {
  Impl& m = *impl_;
  if (m.uploadPending) {  // the staging is read by the previous upload until it has run
    m.uploaded.synchronize();
    m.uploadPending = false;
  }
  m.patches = count;
  m.host.assign(count, hfpac::Status::Ok);
  m.which.clear();
  m.fetched = false;
  std::vector<detail::AnsPatchDesc> descs;
  std::vector<detail::AnsCopyDesc> copies;
  uint64_t streamBytes = 0;
  m.samples = 0;
  m.maxSurface = 0;
  for (size_t i = 0; i < count; ++i) {
    const AnsSurfaceInput& in = patches[i];
    hfpac::AnsInfo info;
    hfpac::Status st = hfpac::ansReadInfo(in.data, in.size, info);
    if (st == hfpac::Status::Ok && info.lanes > kAnsGpuMaxLanes) st = hfpac::Status::Unsupported;
    if (st == hfpac::Status::Ok && (info.width != in.width || info.height != in.height || info.type != in.type))
      st = hfpac::Status::InvalidArgument;
    if (st == hfpac::Status::Ok && (in.surface >= uint32_t(detail::kAnsMaxSurfaces) || in.x < 0 || in.y < 0 ||
                                    in.x + in.width > 65535 || in.y + in.height > 65535))
      st = hfpac::Status::InvalidArgument;
    m.host[i] = st;
    if (st != hfpac::Status::Ok) continue;
    detail::AnsPatchDesc d{};
    d.streamOffset = streamBytes;
    d.streamBytes = info.streamBytes;  // a multiple of 4
    d.outOffset = m.samples;
    descs.push_back(d);
    copies.push_back({m.samples, in.surface, uint16_t(in.x), uint16_t(in.y), uint16_t(info.width),
                      uint16_t(info.height)});
    streamBytes += info.streamBytes;
    m.samples += uint64_t(info.width) * uint64_t(info.height);
    m.maxSurface = std::max(m.maxSurface, in.surface);
    m.which.push_back(i);
  }
  auto align16 = [](uint64_t v) { return (v + 15) & ~uint64_t(15); };
  m.copiesAt = align16(descs.size() * sizeof(detail::AnsPatchDesc));
  m.streamsAt = align16(m.copiesAt + copies.size() * sizeof(detail::AnsCopyDesc));
  m.bytes = m.which.empty() ? 0 : m.streamsAt + streamBytes;
  if (m.which.empty()) return 0;
  m.staging.reserve(size_t(m.bytes));
  uint8_t* base = m.staging.get();
  std::memcpy(base, descs.data(), descs.size() * sizeof(detail::AnsPatchDesc));
  std::memcpy(base + m.copiesAt, copies.data(), copies.size() * sizeof(detail::AnsCopyDesc));
  for (size_t k = 0; k < m.which.size(); ++k) {
    const AnsSurfaceInput& in = patches[m.which[k]];
    std::memcpy(base + m.streamsAt + descs[k].streamOffset, in.data, descs[k].streamBytes);
  }
  return m.which.size();
}

void AnsSurfaceDecoder::decodeAsync(const cudaSurfaceObject_t* surfaces, int surfaceCount, cudaStream_t stream) {
  Impl& m = *impl_;
  if (m.which.empty()) return;
  if (surfaceCount < 0 || surfaceCount > detail::kAnsMaxSurfaces || !surfaces || int64_t(m.maxSurface) >= surfaceCount)
    throw std::invalid_argument("hfgpu ans: " + std::to_string(surfaceCount) + " surfaces for surface index " +
                                std::to_string(m.maxSurface) + " (at most " + std::to_string(detail::kAnsMaxSurfaces) +
                                ")");
  detail::AnsSurfaces list{};
  for (int i = 0; i < surfaceCount; ++i) list.surface[i] = surfaces[i];
  const uint32_t count = uint32_t(m.which.size());
  m.blob.reserve(size_t(m.bytes));
  m.out.reserve(size_t(m.samples));
  m.scratch.reserve(size_t(m.samples));
  m.status.reserve(count);
  m.statusHost.reserve(count);
  CUDA_CHECK(cudaMemcpyAsync(m.blob.get(), m.staging.get(), size_t(m.bytes), cudaMemcpyHostToDevice, stream));
  m.uploaded.record(stream);
  m.uploadPending = true;
  const auto* descs = reinterpret_cast<const detail::AnsPatchDesc*>(m.blob.get());
  const auto* copies = reinterpret_cast<const detail::AnsCopyDesc*>(m.blob.get() + m.copiesAt);
  detail::launchAnsDecode(m.blob.get() + m.streamsAt, descs, count, m.out.get(), m.scratch.get(), m.status.get(),
                          stream);
  CUDA_CHECK(cudaGetLastError());
  detail::launchAnsCopyToSurfaces(m.out.get(), copies, m.status.get(), count, list, stream);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaMemcpyAsync(m.statusHost.get(), m.status.get(), count * sizeof(int32_t), cudaMemcpyDeviceToHost,
                             stream));
  m.fetched = true;
}

void AnsSurfaceDecoder::reserve(size_t patches, uint64_t streamBytes, uint64_t samples) {
  Impl& m = *impl_;
  if (m.uploadPending) {  // a copy in flight may still read the staging buffer
    m.uploaded.synchronize();
    m.uploadPending = false;
  }
  auto align16 = [](uint64_t v) { return (v + 15) & ~uint64_t(15); };
  // prepare's layout: descriptors, copies, streams.
  const uint64_t bytes = align16(align16(patches * sizeof(detail::AnsPatchDesc)) +
                                 patches * sizeof(detail::AnsCopyDesc)) +
                         streamBytes;
  m.staging.reserve(size_t(bytes));
  m.blob.reserve(size_t(bytes));
  m.out.reserve(size_t(samples));
  m.scratch.reserve(size_t(samples));
  m.status.reserve(std::max<size_t>(patches, 1));
  m.statusHost.reserve(std::max<size_t>(patches, 1));
}

std::vector<hfpac::Status> AnsSurfaceDecoder::statuses() const {
  const Impl& m = *impl_;
  std::vector<hfpac::Status> st = m.host;
  if (m.fetched)
    for (size_t k = 0; k < m.which.size(); ++k) st[m.which[k]] = hfpac::Status(m.statusHost[k]);
  return st;
}

const std::vector<hfpac::Status>& AnsSurfaceDecoder::headerStatuses() const { return impl_->host; }
uint64_t AnsSurfaceDecoder::uploadBytes() const { return impl_->bytes; }
size_t AnsSurfaceDecoder::patchCount() const { return impl_->patches; }

}  // namespace hfgpu
