// upload_ring.cpp - see upload_ring.h.
#include "gpu/upload_ring.h"

#include <algorithm>

#include "gpu/cuda_util.h"

namespace hfgpu {

using hfpac::Status;

namespace {

// Upper bound of the blob bytes one patch adds (header-only read; an unreadable stream adds
// only its record).
size_t blobEstimate(const PatchInput& p) {
  hfpac::PatchInfo info;
  size_t bytes = 48 + 16;  // its TileRecord (and alignment)
  if (hfpac::readInfo(p.data, p.size, info) == Status::Ok) bytes += std::min<size_t>(p.size, info.streamBytes) + 16;
  return bytes;
}

}  // namespace

struct UploadRing::Impl {
  struct Chunk {
    DecodePlan plan;
    PinnedBuffer<uint8_t> staging;
    PinnedBuffer<uint32_t> flags;
    DeviceBatch device;
    Event done{false};
    bool busy = false;
    size_t firstPatch = 0;  // index in `statuses` of the chunk's first patch
  };
  size_t chunkBytes = 0;
  std::vector<Chunk> chunks;
  std::vector<Stream> streams;
  size_t next = 0, issued = 0;
  std::vector<Status> statuses;
  bool fresh = true;  // the next decodeAsync starts a new status list

  // Waits for the chunk's last use and moves its flags into `statuses`.
  void retire(Chunk& c) {
    if (!c.busy) return;
    c.done.synchronize();
    const std::vector<Status> merged = mergeStatuses(c.plan.statuses(), c.flags.get());
    std::copy(merged.begin(), merged.end(), statuses.begin() + std::ptrdiff_t(c.firstPatch));
    c.busy = false;
  }
};

UploadRing::UploadRing(size_t chunkBytes, int chunks, int streams) : impl_(std::make_unique<Impl>()) {
  impl_->chunkBytes = std::max<size_t>(chunkBytes, 4096);
  impl_->chunks.resize(size_t(std::max(chunks, 2)));
  for (int i = 0; i < std::max(streams, 1); ++i) impl_->streams.emplace_back();
  for (auto& c : impl_->chunks) c.staging.allocate(impl_->chunkBytes);
}

UploadRing::~UploadRing() {
  if (!impl_) return;
  for (auto& c : impl_->chunks)
    if (c.busy) CUDA_LOG(cudaEventSynchronize(c.done.get()));
}

void UploadRing::decodeAsync(const PatchInput* patches, size_t count, DecodeMode mode,
                             const Target& target) {
  Impl& m = *impl_;
  if (m.fresh) {
    m.statuses.clear();
    m.fresh = false;
  }
  const size_t base = m.statuses.size();
  m.statuses.resize(base + count, Status::Ok);
  size_t first = 0;
  while (first < count) {
    // Greedy: as many patches as fit the chunk's size (at least one).
    size_t last = first, bytes = 256;
    do {
      bytes += blobEstimate(patches[last]);
      ++last;
    } while (last < count && bytes + blobEstimate(patches[last]) <= m.chunkBytes);
    Impl::Chunk& c = m.chunks[m.next % m.chunks.size()];
    const Stream& stream = m.streams[m.issued % m.streams.size()];
    m.retire(c);
    c.plan.build(patches + first, last - first);
    c.staging.reserve(std::max<size_t>(c.plan.blobBytes(), 256));
    c.flags.reserve(std::max<size_t>(last - first, 1));
    c.plan.writeBlob(c.staging.get());
    c.firstPatch = base + first;
    c.device.uploadAsync(c.plan, c.staging.get(), stream);
    c.device.decodeAsync(mode, target, stream);
    c.device.fetchFlagsAsync(c.flags.get(), stream);
    c.done.record(stream);
    c.busy = true;
    ++m.next;
    ++m.issued;
    first = last;
  }
  // Patch offsets in the chunk plans are relative to the chunk; PatchInput carries absolute
  // destinations, so nothing else needs adjusting.
}

void UploadRing::joinInto(cudaStream_t stream) {
  for (auto& c : impl_->chunks)
    if (c.busy) CUDA_CHECK(cudaStreamWaitEvent(stream, c.done.get(), 0));
}

void UploadRing::synchronize() {
  for (auto& c : impl_->chunks) impl_->retire(c);
  impl_->fresh = true;
}

const std::vector<Status>& UploadRing::statuses() const { return impl_->statuses; }
size_t UploadRing::chunkBytes() const { return impl_->chunkBytes; }
size_t UploadRing::chunksIssued() const { return impl_->issued; }

}  // namespace hfgpu
