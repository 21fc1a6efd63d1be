// resident_decoder.h - decoding from compressed tiles that live in device memory (issue 13:
// the VRAM-resident compressed cache; kernels in cuda/resident.cu).
//
// Why: the batch decoder (decoder.h) sends every tile's stream and descriptors over PCIe each
// time it is decoded. A viewer that evicts and re-fills atlas slots as the camera moves decodes
// the same tiles again and again; kept compressed in device memory (3-20x smaller than the
// samples) they are decoded with no transfer but a 48-byte record per tile.
//
// The pool is one device allocation; the caller decides where each tile's entry goes (the
// strategy's CompressedCache, render/stream/compressed_cache.h) and tells a batch:
//
//   std::vector<uint8_t> bytes; hfgpu::ResidentEntry e;
//   hfgpu::makeResidentEntry(data, size, bytes, e);   // host, any thread: validate + lay out
//   e.offset = <place of bytes.size() bytes in the pool, a multiple of 16>;
//   hfgpu::ResidentBatch batch;                       // one per CUDA stream in flight
//   batch.addMiss(bytes.data(), e, dst);              // copied into the pool by this batch
//   batch.addHit(other, dst2);                        // already in the pool
//   batch.launchAsync(pool, hfgpu::DecodeMode::All, target, stream);
//   ... synchronise ...; batch.statuses();
//
// Contract:
// - An entry is one stream validated by the CPU decoder's own checks (like DecodePlan::build):
//   its words, zero-padded to a multiple of 16 bytes. A stream that fails validation gives its
//   status and no entry: it never reaches the device.
// - launchAsync() uploads the batch (records, and the bytes of its misses) with ONE copy, then on
//   the same stream copies the misses into the pool, builds the per-patch and per-area
//   descriptors from the pool entries (decode_desc.h, as for any batch), and runs the same
//   decode kernels as GpuDecoder (so the result is bit-identical to hfpac::decode). Entries of a
//   batch must not overlap each other.
// - Hits must have been placed by a miss whose batch was ordered before this one (same stream,
//   or the caller waited for it): nothing here tracks which entries are valid.
// - The caller must not overwrite an entry (by a later miss at the same place) while a batch
//   that reads it may still run: pin it (CompressedCache::pin) until the batch has finished.
// - Like GpuDecoder: a new batch (clear()) waits only until the previous upload from the pinned
//   staging has run, never for a decode. Not thread-safe; one ResidentBatch per stream.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "codec/hfpac.h"
#include "gpu/cuda_util.h"
#include "gpu/decoder.h"

namespace hfgpu {

// One tile's compressed entry as the batch needs to know it.
struct ResidentEntry {
  uint64_t offset = 0;   // bytes from the pool's start: set by the caller, a multiple of 16
  uint32_t bytes = 0;    // the entry's size (makeResidentEntry)
  uint32_t areas = 0;    // its AreaDescs
  uint16_t width = 0, height = 0;
  bool rbuc = false;     // its areas go to the 2DRBUC kernel
};

// Where a tile of a batch is decoded to (the destination fields of PatchInput).
struct ResidentTarget {
  size_t dstOffset = 0;  // linear: sample index of (0, 0)
  size_t dstPitch = 0;   // linear: row pitch in samples (0 = the patch's width)
  uint32_t surface = 0;  // surfaces: index into Target::surfaces (< kMaxSurfacesPerLaunch)
  int x = 0, y = 0;      // surfaces: texel of (0, 0)
};

// Validates one stream and lays it out as an entry into `bytes` (resized to entry.bytes);
// entry.offset is left 0. No CUDA calls: safe on any thread.
hfpac::Status makeResidentEntry(const uint8_t* data, size_t size, std::vector<uint8_t>& bytes,
                                ResidentEntry& entry);
// Upper bound of the entry bytes of a tile of `payload` bytes (for budgets, without reading the
// stream): the stream words padded to 16 bytes.
uint64_t residentEntryBound(uint64_t payload);

// The device memory the entries live in (one cudaMalloc).
class ResidentPool {
 public:
  explicit ResidentPool(uint64_t bytes);
  uint8_t* base() const { return memory_.get(); }
  uint64_t capacity() const { return memory_.size(); }

 private:
  DeviceBuffer<uint8_t> memory_;
};

class ResidentBatch {
 public:
  ResidentBatch();
  ~ResidentBatch();
  ResidentBatch(const ResidentBatch&) = delete;
  ResidentBatch& operator=(const ResidentBatch&) = delete;

  // Starts a new batch (waits until the previous batch's upload has left the staging buffer).
  void clear();
  // A tile whose entry (`bytes`, entry.bytes of them, from makeResidentEntry; read by
  // launchAsync(), so keep them until then) this batch copies into the pool at entry.offset
  // before decoding it. False (nothing added) when the
  // destination is invalid for the patch (negative texel, surface index >= 256, pitch < width).
  bool addMiss(const uint8_t* bytes, const ResidentEntry& entry, const ResidentTarget& dst);
  // A tile whose entry is in the pool already.
  bool addHit(const ResidentEntry& entry, const ResidentTarget& dst);
  size_t size() const;            // tiles added since clear()
  uint64_t uploadBytes() const;   // what launchAsync copies host -> device
  uint64_t missBytes() const;     // the part of it that is entries (the rest: records)

  // Allocates now the pinned staging and device memory of any later batch of at most `tiles`
  // tiles whose misses total at most `missBytes` entry bytes and whose entries total at most
  // `areas` areas (GpuDecoder::reserve says why). Larger batches still work (they grow).
  void reserve(size_t tiles, uint64_t missBytes, uint64_t areas);
  // Upload, copy the misses into `pool`, build the descriptors, decode, fetch the per-tile flags.
  void launchAsync(const ResidentPool& pool, DecodeMode mode, const Target& target, cudaStream_t stream);
  // Per tile in add order: Ok or OutOfRange (clamped values, as GpuDecoder); valid once the
  // stream of the last launchAsync() has been synchronised.
  std::vector<hfpac::Status> statuses() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hfgpu
