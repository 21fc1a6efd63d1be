// upload_ring.h - many small compressed patches to the GPU in few large copies, overlapped
// with decoding (DESIGN.md data path: "pinned ring + CUDA stream --> device buffer").
//
// The ring owns `chunks` pinned staging chunks (each with a device twin) and `streams` CUDA
// streams. decodeAsync() packs consecutive patches into a chunk (validation, descriptors and
// streams: DecodePlan) until it holds about chunkBytes, then issues ONE cudaMemcpyAsync and ONE
// decode launch for it on the next stream (round-robin), records the chunk's event, and moves
// to the next chunk. So while chunk k decodes on stream A, chunk k+1 is packed on the host and
// crosses PCIe on stream B. A chunk is reused only after its event has completed (the host
// waits there, and only there, when the ring wraps). A patch larger than a chunk gets a chunk
// grown to fit.
//
// Statuses (validation + OutOfRange) are collected per patch, in the order given, over all
// decodeAsync() calls since the last synchronize(); they are complete after synchronize().
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "gpu/decoder.h"

namespace hfgpu {

class UploadRing {
 public:
  explicit UploadRing(size_t chunkBytes = size_t(32) << 20, int chunks = 4, int streams = 2);
  ~UploadRing();  // waits for the work in flight (its memory is in use)
  UploadRing(const UploadRing&) = delete;
  UploadRing& operator=(const UploadRing&) = delete;

  // Enqueues the decode of `count` patches into `target`. Streams are read before it returns.
  void decodeAsync(const PatchInput* patches, size_t count, DecodeMode mode, const Target& target);
  // Makes `stream` wait (on the device, not the host) for everything enqueued so far.
  void joinInto(cudaStream_t stream);
  // Waits for everything enqueued; statuses() is then complete. Starts a new status list on
  // the next decodeAsync().
  void synchronize();
  const std::vector<hfpac::Status>& statuses() const;

  size_t chunkBytes() const;
  size_t chunksIssued() const;  // copies (= launches) issued since construction

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hfgpu
