// resident_decoder.cpp - host side of resident batches (resident_decoder.h): entries are
// validated by DecodePlan (the same checks as a normal batch), a batch is records + miss entries
// in one pinned upload, and the descriptors are built on the device from the pool (as for any
// batch) before GpuDecoder's kernels decode, reading their stream words from the pool.
#include "gpu/resident_decoder.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "gpu/cuda_util.h"
#include "gpu/decode_desc.h"

namespace hfgpu {

using detail::AreaDesc;
using detail::PatchDesc;
using detail::ResidentCopy;
using detail::TileRecord;
using hfpac::Status;

namespace {
constexpr uint64_t align16(uint64_t v) { return (v + 15) / 16 * 16; }
}  // namespace

Status makeResidentEntry(const uint8_t* data, size_t size, std::vector<uint8_t>& bytes, ResidentEntry& entry) {
  entry = ResidentEntry{};
  bytes.clear();
  PatchInput in;
  in.data = data;
  in.size = size;
  DecodePlan plan;
  if (plan.build(&in, 1) != 1) return plan.statuses().empty() ? Status::InvalidArgument : plan.statuses()[0];
  const hfpac::PatchInfo& info = plan.infos()[0];
  bytes.resize(plan.entryBytes(0));
  plan.writeEntry(0, bytes.data());
  entry.bytes = uint32_t(bytes.size());
  entry.areas = uint32_t(plan.entryAreas(0));
  entry.width = uint16_t(info.width);
  entry.height = uint16_t(info.height);
  entry.rbuc = info.rbuc;
  return Status::Ok;
}

uint64_t residentEntryBound(uint64_t payload) { return align16(payload); }

ResidentPool::ResidentPool(uint64_t bytes) : memory_(size_t(std::max<uint64_t>(bytes, 256))) {}

struct ResidentBatch::Impl {
  std::vector<TileRecord> records;
  std::vector<ResidentCopy> copies;       // srcByte relative to the entries part for now
  std::vector<const uint8_t*> missData;   // per copy
  uint64_t missBytes = 0, layeredAreas = 0, rbucAreas = 0;
  PinnedBuffer<uint8_t> staging;
  DeviceBuffer<uint8_t> batch;
  DeviceBuffer<PatchDesc> patches;
  DeviceBuffer<AreaDesc> areas;
  DeviceBuffer<uint32_t> flags;
  PinnedBuffer<uint32_t> hostFlags;
  std::unique_ptr<Event> uploaded;  // made at the first launch (no CUDA call before)
  bool uploadPending = false, flagsFetched = false;
  size_t launched = 0;  // tiles of the last launch (the flags' count)

  uint64_t recordsBytes() const { return align16(records.size() * sizeof(TileRecord)); }
  uint64_t copiesBytes() const { return align16(copies.size() * sizeof(ResidentCopy)); }

  bool add(const ResidentEntry& e, const ResidentTarget& dst) {
    const uint64_t pitch = dst.dstPitch ? dst.dstPitch : e.width;
    if (dst.x < 0 || dst.y < 0 || dst.surface >= uint32_t(kMaxSurfacesPerLaunch) || pitch < e.width ||
        pitch > 0xffffffffull || e.offset % 16 != 0 || e.bytes < uint32_t(hfpac::kHeaderBytes) ||
        e.areas == 0)
      return false;
    TileRecord r{};
    r.streamByte = e.offset;
    r.dstOffset = dst.dstOffset;
    r.dstPitch = uint32_t(pitch);
    r.surface = dst.surface;
    r.dstX = dst.x;
    r.dstY = dst.y;
    r.areas = e.areas;
    r.rbuc = e.rbuc ? 1u : 0u;
    uint64_t& counter = e.rbuc ? rbucAreas : layeredAreas;
    r.areaStart = uint32_t(counter);
    counter += e.areas;
    records.push_back(r);
    return true;
  }
};

ResidentBatch::ResidentBatch() : impl_(std::make_unique<Impl>()) {}
ResidentBatch::~ResidentBatch() {
  if (impl_ && impl_->uploadPending) CUDA_LOG(cudaEventSynchronize(impl_->uploaded->get()));
}

void ResidentBatch::clear() {
  Impl& m = *impl_;
  if (m.uploadPending) {
    m.uploaded->synchronize();  // the previous upload still reads the staging buffer
    m.uploadPending = false;
  }
  m.records.clear();
  m.copies.clear();
  m.missData.clear();
  m.missBytes = m.layeredAreas = m.rbucAreas = 0;
  m.flagsFetched = false;
}

bool ResidentBatch::addMiss(const uint8_t* bytes, const ResidentEntry& entry, const ResidentTarget& dst) {
  Impl& m = *impl_;
  if (!bytes || entry.bytes % 16 != 0 || !m.add(entry, dst)) return false;
  m.copies.push_back(ResidentCopy{m.missBytes, entry.offset, entry.bytes});
  m.missData.push_back(bytes);
  m.missBytes += entry.bytes;
  return true;
}

void ResidentBatch::reserve(size_t tiles, uint64_t missBytes, uint64_t areas) {
  Impl& m = *impl_;
  if (m.uploadPending) {
    m.uploaded->synchronize();  // a copy in flight may still read the staging buffer
    m.uploadPending = false;
  }
  // launchAsync's layout: [records][copies][miss entries]
  const uint64_t total =
      align16(tiles * sizeof(TileRecord)) + align16(tiles * sizeof(ResidentCopy)) + missBytes;
  m.staging.reserve(size_t(total));
  m.batch.reserve(size_t(total));
  m.patches.reserve(std::max<size_t>(tiles, 1));
  m.areas.reserve(std::max<size_t>(size_t(areas), 1));
  m.flags.reserve(std::max<size_t>(tiles, 1));
  m.hostFlags.reserve(std::max<size_t>(tiles, 1));
}

bool ResidentBatch::addHit(const ResidentEntry& entry, const ResidentTarget& dst) { return impl_->add(entry, dst); }

size_t ResidentBatch::size() const { return impl_->records.size(); }
uint64_t ResidentBatch::missBytes() const { return impl_->missBytes; }
uint64_t ResidentBatch::uploadBytes() const {
  const Impl& m = *impl_;
  return m.records.empty() ? 0 : m.recordsBytes() + m.copiesBytes() + m.missBytes;
}

void ResidentBatch::launchAsync(const ResidentPool& pool, DecodeMode mode, const Target& target,
                                cudaStream_t stream) {
  Impl& m = *impl_;
  m.launched = m.records.size();
  if (m.records.empty()) return;
  if (!target.linearBase && (target.surfaceCount < 1 || target.surfaceCount > kMaxSurfacesPerLaunch || !target.surfaces))
    throw std::invalid_argument("hfgpu: resident decode needs a linear base or 1..256 surfaces");
  for (const ResidentCopy& c : m.copies)
    if (c.dstByte + c.bytes > pool.capacity()) throw std::invalid_argument("hfgpu: resident entry outside the pool");
  for (const TileRecord& r : m.records)
    if (r.streamByte + uint64_t(hfpac::kHeaderBytes) > pool.capacity())
      throw std::invalid_argument("hfgpu: resident entry outside the pool");
  // [records][copies][miss entries]
  const uint64_t recordsAt = 0, copiesAt = m.recordsBytes(), entriesAt = copiesAt + m.copiesBytes();
  const uint64_t total = entriesAt + m.missBytes;
  m.staging.reserve(size_t(total));
  uint8_t* s = m.staging.get();
  std::memset(s, 0, size_t(entriesAt));
  std::memcpy(s + recordsAt, m.records.data(), m.records.size() * sizeof(TileRecord));
  for (size_t i = 0; i < m.copies.size(); ++i) {
    ResidentCopy c = m.copies[i];
    std::memcpy(s + entriesAt + c.srcByte, m.missData[i], size_t(c.bytes));
    c.srcByte += entriesAt;
    std::memcpy(s + copiesAt + i * sizeof(ResidentCopy), &c, sizeof c);
  }
  m.batch.reserve(size_t(total));
  CUDA_CHECK(cudaMemcpyAsync(m.batch.get(), s, size_t(total), cudaMemcpyHostToDevice, stream));
  if (!m.uploaded) m.uploaded = std::make_unique<Event>(false);
  m.uploaded->record(stream);
  m.uploadPending = true;

  const size_t n = m.records.size();
  m.patches.reserve(n);
  m.areas.reserve(size_t(std::max<uint64_t>(m.layeredAreas + m.rbucAreas, 1)));
  m.flags.reserve(n);
  m.hostFlags.reserve(n);
  detail::launchResidentCopies(reinterpret_cast<const ResidentCopy*>(m.batch.get() + copiesAt), m.copies.size(),
                               m.batch.get(), pool.base(), stream);
  detail::DescriptorLaunch dl;
  dl.records = reinterpret_cast<const TileRecord*>(m.batch.get() + recordsAt);
  dl.recordCount = n;
  dl.words = reinterpret_cast<const uint32_t*>(pool.base());
  dl.patches = m.patches.get();
  dl.areas = m.areas.get();
  dl.layeredAreas = m.layeredAreas;
  detail::launchBuildDescriptors(dl, stream);

  CUDA_CHECK(cudaMemsetAsync(m.flags.get(), 0, n * sizeof(uint32_t), stream));
  detail::DecodeLaunch l;
  l.patches = m.patches.get();
  l.areas = m.areas.get();
  l.words = reinterpret_cast<const uint32_t*>(pool.base());
  l.flags = m.flags.get();
  l.areaCount = m.layeredAreas;
  l.rbucAreas = m.areas.get() + m.layeredAreas;
  l.rbucAreaCount = m.rbucAreas;
  l.mode = detail::Mode(uint8_t(mode));
  l.linear = target.linearBase;
  l.surfaces = reinterpret_cast<const unsigned long long*>(target.surfaces);
  l.surfaceCount = target.surfaceCount;
  if (l.areaCount) detail::launchDecode(l, stream);
  detail::launchDecodeRbuc(l, stream);
  CUDA_CHECK(cudaMemcpyAsync(m.hostFlags.get(), m.flags.get(), n * sizeof(uint32_t), cudaMemcpyDeviceToHost, stream));
  m.flagsFetched = true;
}

std::vector<Status> ResidentBatch::statuses() const {
  const Impl& m = *impl_;
  std::vector<Status> out(m.launched, Status::Ok);
  if (!m.flagsFetched) return out;
  return mergeStatuses(out, m.hostFlags.get());
}

}  // namespace hfgpu
