// decoder.cpp - host side of the GPU decoder: validation, descriptors, blob, launches.
//
// Why one blob: a batch of small patches must cross PCIe in one copy, and the kernel must find
// any point's bits without a host round trip. So the plan writes a 48-byte record per patch in
// front of the concatenated streams, the whole thing goes up in one cudaMemcpyAsync, and a first
// kernel builds the per-patch and per-area descriptors from the records and the streams
// (gpu/desc_build.h; detail::hostDescriptors() computes them here from the CPU decoder's stream
// index, the reference the tests compare the device build with). Validation (codec/stream_index.h) is the CPU decoder's own code, so the GPU accepts
// exactly the streams the CPU accepts.
#include "gpu/decoder.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "codec/stream_index.h"
#include "gpu/cuda_util.h"
#include "gpu/decode_desc.h"

namespace hfgpu {

using detail::AreaDesc;
using detail::PatchDesc;
using detail::TileRecord;
using hfpac::Status;

namespace {

constexpr uint64_t kAlign = 16;
constexpr uint64_t alignUp(uint64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }
// Bit offsets inside a stream are 32-bit in the descriptors.
constexpr uint64_t kMaxStreamBytes = (uint64_t(1) << 29) - 64;

}  // namespace

hfpac::Layers toLayers(DecodeMode mode) {
  switch (mode) {
    case DecodeMode::L1: return hfpac::Layers::L1;
    case DecodeMode::L12: return hfpac::Layers::L12;
    default: return hfpac::Layers::All;
  }
}

// ---------------------------------------------------------------- DecodePlan

struct DecodePlan::Impl {
  std::vector<Status> statuses;
  std::vector<hfpac::PatchInfo> infos;
  std::vector<TileRecord> records;      // per patch (no areas: invalid)
  std::vector<const uint8_t*> sources;  // stream bytes to copy (null for invalid patches)
  std::vector<uint64_t> sourceBytes;
  uint64_t wordsBytes = 0, points = 0, streamBytes = 0;
  uint64_t layeredAreas = 0, rbucAreas = 0;  // AreaDescs the device builds
  uint64_t wordsOffset = 0, blobBytes = 0;   // the blob: [TileRecord x patches][words]
};

DecodePlan::DecodePlan() : impl_(std::make_unique<Impl>()) {}
DecodePlan::~DecodePlan() = default;
DecodePlan::DecodePlan(DecodePlan&&) noexcept = default;
DecodePlan& DecodePlan::operator=(DecodePlan&&) noexcept = default;

ValidatedStream validateStream(const uint8_t* data, size_t size) {
  ValidatedStream v;
  hfpac::detail::StreamIndex idx;
  v.status = hfpac::detail::indexStream(data, size, idx);
  if (v.status == Status::Ok) v.status = hfpac::readInfo(data, size, v.info);
  if (v.status != Status::Ok) return v;
  v.streamBytes = idx.streamBytes;
  v.width = uint16_t(idx.g.width);
  v.height = uint16_t(idx.g.height);
  v.areas = uint32_t(idx.g.areasX * idx.g.areasY);
  v.rbuc = idx.h.isRbuc() && !idx.h.isFlat() && !idx.h.isStored();
  return v;
}

size_t DecodePlan::build(const PatchInput* in, size_t count) {
  std::vector<ValidatedStream> checked(count);
  for (size_t i = 0; i < count; ++i) checked[i] = validateStream(in[i].data, in[i].size);
  return buildValidated(in, checked.data(), count);
}

size_t DecodePlan::buildValidated(const PatchInput* in, const ValidatedStream* checked, size_t count) {
  Impl& m = *impl_;
  m.statuses.assign(count, Status::Ok);
  m.infos.assign(count, hfpac::PatchInfo{});
  m.records.assign(count, TileRecord{});
  m.sources.assign(count, nullptr);
  m.sourceBytes.assign(count, 0);
  m.wordsBytes = m.points = m.streamBytes = m.layeredAreas = m.rbucAreas = 0;
  size_t valid = 0;
  for (size_t i = 0; i < count; ++i) {
    const PatchInput& p = in[i];
    const ValidatedStream& v = checked[i];
    Status st = v.status;
    if (st == Status::Ok) m.infos[i] = v.info;  // known even if the destination is refused
    if (st == Status::Ok && (!p.data || p.size < v.streamBytes || v.streamBytes < uint64_t(hfpac::kHeaderBytes)))
      st = Status::InvalidArgument;  // not the stream that was validated
    const uint64_t pitch = p.dstPitch ? p.dstPitch : v.width;
    if (st == Status::Ok && (v.streamBytes > kMaxStreamBytes || pitch < v.width || pitch > 0xffffffffull ||
                             p.x < 0 || p.y < 0 || p.surface >= uint32_t(kMaxSurfacesPerLaunch)))
      st = Status::InvalidArgument;
    m.statuses[i] = st;
    if (st != Status::Ok) continue;
    ++valid;
    TileRecord& r = m.records[i];
    r.streamByte = m.wordsBytes;
    r.dstOffset = p.dstOffset;
    r.dstPitch = uint32_t(pitch);
    r.surface = p.surface;
    r.dstX = p.x;
    r.dstY = p.y;
    uint64_t& counter = v.rbuc ? m.rbucAreas : m.layeredAreas;
    r.areaStart = uint32_t(counter);
    r.areas = v.areas;
    r.rbuc = v.rbuc ? 1u : 0u;
    counter += v.areas;
    m.sources[i] = p.data;
    m.sourceBytes[i] = v.streamBytes;
    m.wordsBytes += alignUp(v.streamBytes);
    m.points += uint64_t(v.width) * uint64_t(v.height);
    m.streamBytes += v.streamBytes;
  }
  m.wordsOffset = alignUp(count * sizeof(TileRecord));
  m.blobBytes = m.wordsOffset + m.wordsBytes;
  return valid;
}

size_t DecodePlan::blobBytes() const { return size_t(impl_->blobBytes); }

void DecodePlan::writeBlob(uint8_t* dst) const {
  const Impl& m = *impl_;
  if (!m.records.empty()) std::memcpy(dst, m.records.data(), m.records.size() * sizeof(TileRecord));
  const size_t recordsEnd = m.records.size() * sizeof(TileRecord);
  std::memset(dst + recordsEnd, 0, size_t(m.wordsOffset - recordsEnd));
  uint8_t* words = dst + m.wordsOffset;
  for (size_t i = 0; i < m.sources.size(); ++i) {
    if (!m.sources[i]) continue;
    const uint64_t at = m.records[i].streamByte, n = m.sourceBytes[i];
    std::memcpy(words + at, m.sources[i], size_t(n));
    std::memset(words + at + n, 0, size_t(alignUp(n) - n));
  }
}

size_t DecodePlan::entryAreas(size_t i) const {
  return i < impl_->records.size() && impl_->sources[i] ? impl_->records[i].areas : 0;
}

size_t DecodePlan::entryBytes(size_t i) const {
  const Impl& m = *impl_;
  if (i >= m.sources.size() || !m.sources[i]) return 0;
  return size_t(alignUp(m.sourceBytes[i]));
}

void DecodePlan::writeEntry(size_t i, uint8_t* dst) const {
  const Impl& m = *impl_;
  if (i >= m.sources.size() || !m.sources[i]) return;
  const uint64_t bytes = m.sourceBytes[i];
  std::memcpy(dst, m.sources[i], size_t(bytes));
  std::memset(dst + bytes, 0, size_t(alignUp(bytes) - bytes));
}

size_t DecodePlan::patchCount() const { return impl_->records.size(); }
const std::vector<Status>& DecodePlan::statuses() const { return impl_->statuses; }
const std::vector<hfpac::PatchInfo>& DecodePlan::infos() const { return impl_->infos; }
uint64_t DecodePlan::areaCount() const { return impl_->layeredAreas + impl_->rbucAreas; }
uint64_t DecodePlan::points() const { return impl_->points; }
uint64_t DecodePlan::streamBytes() const { return impl_->streamBytes; }

namespace detail {

// The reference: every descriptor from the CPU decoder's own stream index, independently of
// desc_build.h.
HostDescriptors hostDescriptors(const DecodePlan& plan) {
  const DecodePlan::Impl& m = plan.impl();
  HostDescriptors out;
  out.patches.assign(m.records.size(), PatchDesc{});
  hfpac::detail::StreamIndex idx;
  for (size_t i = 0; i < m.records.size(); ++i) {
    if (!m.sources[i]) continue;
    if (hfpac::detail::indexStream(m.sources[i], size_t(m.sourceBytes[i]), idx) != Status::Ok) continue;
    const TileRecord& r = m.records[i];
    const hfpac::detail::Header& h = idx.h;
    const hfpac::detail::Geometry& g = idx.g;
    PatchDesc& d = out.patches[i];
    d.streamWord = r.streamByte / 4;
    d.dstOffset = r.dstOffset;
    d.dstPitch = r.dstPitch;
    d.surface = r.surface;
    d.dstX = r.dstX;
    d.dstY = r.dstY;
    d.width = uint16_t(g.width);
    d.height = uint16_t(g.height);
    d.base = h.base;
    d.flip = h.isSigned() ? 0x8000u : 0u;
    d.maskOut = uint16_t(idx.maskValue ^ d.flip);
    d.kind = h.isFlat()     ? kKindFlat
             : h.isStored() ? kKindStored
             : h.isRbuc()   ? kKindRbuc
                            : kKindCoded;
    d.segLog = h.segLog;
    d.cornerBits = h.cornerBits;
    d.edgeBits = h.edgeBits;
    d.centreBits = h.centreBits;
    d.highBits = h.highBits;
    d.segX = uint16_t(g.segX);
    d.segY = uint16_t(g.segY);
    const uint64_t a0 = idx.sectionA * 8;
    d.hedgeBit = uint32_t(a0 + g.hedgeBit);
    d.vedgeBit = uint32_t(a0 + g.vedgeBit);
    d.centreBit = uint32_t(a0 + g.centreBit);
    for (int ay = 0; ay < g.areasY; ++ay)
      for (int ax = 0; ax < g.areasX; ++ax) {
        AreaDesc a{};
        a.patch = uint32_t(i);
        a.ax = uint16_t(ax);
        a.ay = uint16_t(ay);
        if (d.kind == kKindRbuc) {
          // Residuals through the block index: the area's block start; masks as layered.
          const hfpac::detail::AreaIndex& e = idx.areas[size_t(ay) * size_t(g.areasX) + size_t(ax)];
          a.lowBit = uint32_t(idx.sectionD * 8 + idx.blockBits[size_t(ay / 2) * size_t(g.blocksX) + size_t(ax / 2)]);
          a.maskBit = uint32_t(idx.maskBitmaps * 8 + e.maskBit);
          a.maskCode = e.maskCode;
          out.rbucAreas.push_back(a);
          continue;
        }
        if (d.kind == kKindCoded) {
          const hfpac::detail::AreaIndex& e = idx.areas[size_t(ay) * size_t(g.areasX) + size_t(ax)];
          a.lowBit = uint32_t(idx.sectionD * 8 + e.lowBit);
          a.maskBit = uint32_t(idx.maskBitmaps * 8 + e.maskBit);
          a.highBit = uint32_t(idx.highs * 8 + uint64_t(e.first) * h.highBits);
          a.posByte = uint32_t(idx.positions + e.first);
          a.count = e.count;
          a.bits = e.bits;
          a.maskCode = e.maskCode;
        } else {
          a.lowBit = uint32_t(idx.sectionD * 8);
        }
        out.areas.push_back(a);
      }
  }
  return out;
}

}  // namespace detail

// ---------------------------------------------------------------- DeviceBatch

struct DeviceBatch::Impl {
  DeviceBuffer<uint8_t> blob;
  DeviceBuffer<PatchDesc> patchDescs;  // built on the device from the blob
  DeviceBuffer<AreaDesc> areaDescs;    // layered areas, then the 2DRBUC ones
  DeviceBuffer<uint32_t> flags;
  uint64_t patches = 0, areas = 0, rbucAreas = 0, wordsOffset = 0;
};

DeviceBatch::DeviceBatch() : impl_(std::make_unique<Impl>()) {}
DeviceBatch::~DeviceBatch() = default;
DeviceBatch::DeviceBatch(DeviceBatch&&) noexcept = default;
DeviceBatch& DeviceBatch::operator=(DeviceBatch&&) noexcept = default;

void DeviceBatch::uploadAsync(const DecodePlan& plan, const uint8_t* pinned_blob,
                              cudaStream_t stream) {
  Impl& m = *impl_;
  const DecodePlan::Impl& p = plan.impl();
  m.blob.reserve(std::max<size_t>(p.blobBytes, 256));
  m.flags.reserve(std::max<size_t>(p.records.size(), 1));
  m.patches = p.records.size();
  m.areas = p.layeredAreas;
  m.rbucAreas = p.rbucAreas;
  m.wordsOffset = p.wordsOffset;
  if (p.blobBytes == 0) return;
  CUDA_CHECK(cudaMemcpyAsync(m.blob.get(), pinned_blob, size_t(p.blobBytes),
                             cudaMemcpyHostToDevice, stream));
  m.patchDescs.reserve(std::max<size_t>(size_t(m.patches), 1));
  m.areaDescs.reserve(std::max<size_t>(size_t(m.areas + m.rbucAreas), 1));
  detail::DescriptorLaunch dl;
  dl.records = reinterpret_cast<const TileRecord*>(m.blob.get());
  dl.recordCount = m.patches;
  dl.words = reinterpret_cast<const uint32_t*>(m.blob.get() + m.wordsOffset);
  dl.patches = m.patchDescs.get();
  dl.areas = m.areaDescs.get();
  dl.layeredAreas = m.areas;
  detail::launchBuildDescriptors(dl, stream);
}

void DeviceBatch::reserve(uint64_t blobBytes, size_t patches, uint64_t areas) {
  Impl& m = *impl_;
  m.blob.reserve(std::max<size_t>(size_t(blobBytes), 256));
  m.flags.reserve(std::max<size_t>(patches, 1));
  m.patchDescs.reserve(std::max<size_t>(patches, 1));
  m.areaDescs.reserve(std::max<size_t>(size_t(areas), 1));
}

void DeviceBatch::decodeAsync(DecodeMode mode, const Target& target, cudaStream_t stream) {
  Impl& m = *impl_;
  if (m.patches == 0) return;
  if (!target.linearBase && (target.surfaceCount < 0 || target.surfaceCount > kMaxSurfacesPerLaunch ||
                             (target.surfaceCount > 0 && !target.surfaces)))
    throw std::invalid_argument("hfgpu: decodeAsync needs a linear base or 1..256 surfaces");
  CUDA_CHECK(cudaMemsetAsync(m.flags.get(), 0, size_t(m.patches) * sizeof(uint32_t), stream));
  detail::DecodeLaunch l;
  l.patches = m.patchDescs.get();
  l.areas = m.areaDescs.get();
  l.words = reinterpret_cast<const uint32_t*>(m.blob.get() + m.wordsOffset);
  l.flags = m.flags.get();
  l.areaCount = m.areas;
  l.rbucAreas = l.areas + m.areas;
  l.rbucAreaCount = m.rbucAreas;
  l.mode = detail::Mode(uint8_t(mode));
  l.linear = target.linearBase;
  static_assert(sizeof(cudaSurfaceObject_t) == sizeof(unsigned long long), "surface object size");
  l.surfaces = reinterpret_cast<const unsigned long long*>(target.surfaces);
  l.surfaceCount = target.surfaceCount;
  detail::launchDecode(l, stream);
  detail::launchDecodeRbuc(l, stream);  // 2DRBUC patches (disjoint destinations), if any
}

void DeviceBatch::fetchFlagsAsync(uint32_t* pinned_flags, cudaStream_t stream) const {
  if (impl_->patches == 0) return;
  CUDA_CHECK(cudaMemcpyAsync(pinned_flags, impl_->flags.get(),
                             size_t(impl_->patches) * sizeof(uint32_t), cudaMemcpyDeviceToHost,
                             stream));
}

size_t DeviceBatch::patchCount() const { return size_t(impl_->patches); }

std::vector<Status> mergeStatuses(const std::vector<Status>& validation, const uint32_t* flags) {
  std::vector<Status> out = validation;
  if (!flags) return out;
  for (size_t i = 0; i < out.size(); ++i)
    if (out[i] == Status::Ok && (flags[i] & detail::kFlagOutOfRange)) out[i] = Status::OutOfRange;
  return out;
}

// ---------------------------------------------------------------- GpuDecoder

struct GpuDecoder::Impl {
  DecodePlan plan;
  PinnedBuffer<uint8_t> staging;
  PinnedBuffer<uint32_t> flags;
  DeviceBatch device;
  Event uploaded{false};
  bool uploadPending = false;
  bool flagsFetched = false;

  void stage(size_t count) {
    staging.reserve(std::max<size_t>(plan.blobBytes(), 256));
    flags.reserve(std::max<size_t>(count, 1));
    plan.writeBlob(staging.get());
    flagsFetched = false;
  }
};

GpuDecoder::GpuDecoder() : impl_(std::make_unique<Impl>()) {}
GpuDecoder::~GpuDecoder() {
  // The staging buffer may still be the source of a copy in flight.
  if (impl_ && impl_->uploadPending) CUDA_LOG(cudaEventSynchronize(impl_->uploaded.get()));
}

size_t GpuDecoder::prepare(const PatchInput* patches, size_t count) {
  Impl& m = *impl_;
  if (m.uploadPending) {
    m.uploaded.synchronize();  // the previous upload still reads the staging buffer
    m.uploadPending = false;
  }
  const size_t valid = m.plan.build(patches, count);
  m.stage(count);
  return valid;
}

size_t GpuDecoder::prepareValidated(const PatchInput* patches, const ValidatedStream* validated, size_t count) {
  Impl& m = *impl_;
  if (m.uploadPending) {
    m.uploaded.synchronize();  // the previous upload still reads the staging buffer
    m.uploadPending = false;
  }
  const size_t valid = m.plan.buildValidated(patches, validated, count);
  m.stage(count);
  return valid;
}

void GpuDecoder::reserve(size_t patches, uint64_t streamBytes, uint64_t areas) {
  Impl& m = *impl_;
  if (m.uploadPending) {
    m.uploaded.synchronize();  // a copy in flight may still read the staging buffer
    m.uploadPending = false;
  }
  // The blob of writeBlob: the records, then every stream padded to kAlign.
  const uint64_t blob =
      alignUp(patches * sizeof(TileRecord)) + streamBytes + uint64_t(patches) * (kAlign - 1);
  m.staging.reserve(std::max<size_t>(size_t(blob), 256));
  m.flags.reserve(std::max<size_t>(patches, 1));
  m.device.reserve(blob, patches, areas);
}

void GpuDecoder::uploadAsync(cudaStream_t stream) {
  Impl& m = *impl_;
  m.device.uploadAsync(m.plan, m.staging.get(), stream);
  m.uploaded.record(stream);
  m.uploadPending = true;
}

void GpuDecoder::decodeAsync(DecodeMode mode, const Target& target, cudaStream_t stream) {
  impl_->device.decodeAsync(mode, target, stream);
}

void GpuDecoder::fetchStatusesAsync(cudaStream_t stream) {
  impl_->device.fetchFlagsAsync(impl_->flags.get(), stream);
  impl_->flagsFetched = true;
}

std::vector<Status> GpuDecoder::statuses() const {
  return mergeStatuses(impl_->plan.statuses(), impl_->flagsFetched ? impl_->flags.get() : nullptr);
}

std::vector<Status> GpuDecoder::decode(const PatchInput* patches, size_t count, DecodeMode mode,
                                       const Target& target, cudaStream_t stream) {
  prepare(patches, count);
  uploadAsync(stream);
  decodeAsync(mode, target, stream);
  fetchStatusesAsync(stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  impl_->uploadPending = false;
  return statuses();
}

const DecodePlan& GpuDecoder::plan() const { return impl_->plan; }

}  // namespace hfgpu
