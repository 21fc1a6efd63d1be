// decoder.h - batched HFPaC decoding on the GPU (DESIGN.md "GPU codec"; kernels in cuda/decode.cu).
//
// Bit-identical to hfpac::decode() for every stream and every layer choice (signed flip, masked
// points, stored and flat streams included). Many patches of any sizes, segment sizes and b go
// in one launch: one thread block per 16 x 16 area, one thread per point. 2DRBUC streams
// (PatchInfo::rbuc) may be mixed into any batch: their areas go to a second kernel
// (cuda/decode_rbuc.cu) launched right after the first on the same stream; for them L12 is the
// lossless decode (no layer 2) and reports OutOfRange like All.
//
//   hfgpu::GpuDecoder dec;
//   dec.prepare(patches, n);                    // host: validate every stream, pack one blob
//   dec.uploadAsync(stream);                    // one cudaMemcpyAsync (pinned -> device)
//   dec.decodeAsync(hfgpu::DecodeMode::All, hfgpu::Target::linear(dev_ptr), stream);
//   dec.fetchStatusesAsync(stream);             // per-patch OutOfRange flags -> pinned host
//   cudaStreamSynchronize(stream);              // (the caller's choice of when)
//   dec.statuses();                             // validation + kernel status per patch
// or simply `dec.decode(patches, n, mode, target, stream)` (all of the above + wait).
//
// Contract:
// - prepare() validates each stream on the host with the CPU decoder's own checks
//   (codec/stream_index.h). A corrupt stream gets its error status and is skipped: the kernel
//   never reads it and never writes its destination. Streams are read only during prepare().
// - Nothing here synchronises the host with the device except decode(), prepare() (which waits
//   until the previous upload from the pinned staging buffer has finished, never for a decode),
//   and the destructor. All work goes on the caller's stream.
// - Destinations: a linear device buffer (PatchInput::dstOffset/dstPitch in samples) or
//   surface objects of 16-bit texels (cudaArray with cudaArraySurfaceLoadStore, or a GL texture
//   layer mapped through CUDA: one plain 2D surface per layer, see DEVICE.md);
//   PatchInput::surface indexes Target::surfaces, PatchInput::x/y is the texel of the patch's
//   (0, 0). The caller guarantees that every patch fits inside its destination.
// - DecodeMode::Refine adds layers 2 and 3 to a destination that already holds this batch's
//   DecodeMode::L1 output (same patches, same destinations): the result equals DecodeMode::All.
// - At DecodeMode::All / Refine a decoded value outside 0..65535 (only corrupt streams that
//   pass validation produce one) is clamped and reported as Status::OutOfRange, like
//   hfpac::decode(); L1 and L12 clamp silently, like hfpac::decode().
// - One GpuDecoder holds one prepared batch; use one per stream (or the UploadRing,
//   upload_ring.h) to overlap batches. Not thread-safe.
// - Errors of the CUDA runtime throw std::runtime_error (CUDA_CHECK, cuda_util.h).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "codec/hfpac.h"

namespace hfgpu {

enum class DecodeMode : uint8_t {
  L1 = 1,      // layer 1: the smooth Bezier approximation (hfpac::Layers::L1)
  L12 = 2,     // layers 1 + 2 (hfpac::Layers::L12)
  All = 3,     // lossless (hfpac::Layers::All)
  Refine = 4,  // layers 2 + 3 onto a destination holding the L1 decode: = All
};

struct PatchInput {
  const uint8_t* data = nullptr;  // one HFPaC stream in host memory (read during prepare())
  size_t size = 0;
  // Linear destinations: sample (x, y) goes to linear[dstOffset + y * dstPitch + x].
  size_t dstOffset = 0;
  size_t dstPitch = 0;  // in samples; 0 = the patch's width
  // Surface destinations: texel (this->x + x, this->y + y) of surfaces[surface].
  uint32_t surface = 0;
  int x = 0, y = 0;
};

// Where a decode writes: a linear device buffer or up to kMaxSurfaces surface objects.
struct Target {
  uint16_t* linearBase = nullptr;
  const cudaSurfaceObject_t* surfaces = nullptr;  // host array, copied at launch
  int surfaceCount = 0;

  static Target linear(uint16_t* device_base) { return Target{device_base, nullptr, 0}; }
  static Target surfaceSet(const cudaSurfaceObject_t* list, int count) {
    return Target{nullptr, list, count};
  }
};
constexpr int kMaxSurfacesPerLaunch = 256;

hfpac::Layers toLayers(DecodeMode mode);  // Refine -> All

// A stream validated ahead of its batch, on any thread (a viewer's loader thread), so that the
// thread that builds the batch only packs bytes (DecodePlan::buildValidated): validation is the
// per-tile cost of a batch, the CPU decoder's full checks.
struct ValidatedStream {
  hfpac::Status status = hfpac::Status::InvalidArgument;
  hfpac::PatchInfo info;
  uint64_t streamBytes = 0;  // the stream's bytes (<= its buffer's size)
  uint16_t width = 0, height = 0;
  uint32_t areas = 0;        // its 16 x 16 areas
  bool rbuc = false;         // decoded by the 2DRBUC kernel
};
// The checks of DecodePlan::build for one stream (codec/stream_index.h). No CUDA calls.
ValidatedStream validateStream(const uint8_t* data, size_t size);

// The host half of a batch: validation results, descriptors, and the packed blob layout.
// Usable on its own (no CUDA calls), e.g. by the upload ring which packs into its own memory.
class DecodePlan {
 public:
  DecodePlan();
  ~DecodePlan();
  DecodePlan(DecodePlan&&) noexcept;
  DecodePlan& operator=(DecodePlan&&) noexcept;

  // Validates `count` streams and lays them out. Returns the number of valid patches.
  // The PatchInput array and the streams must stay valid until writeBlob() has run.
  size_t build(const PatchInput* patches, size_t count);
  // The same for streams validated beforehand (validateStream on the same bytes, which must not
  // have changed since): no stream is parsed here, only destinations are checked. build() is
  // validateStream on each stream, then this.
  size_t buildValidated(const PatchInput* patches, const ValidatedStream* validated, size_t count);
  // Bytes of the blob (records + stream words) for the patches given to build().
  size_t blobBytes() const;
  // Writes the blob (blobBytes() bytes, 16-byte aligned dst) into host memory.
  void writeBlob(uint8_t* dst) const;

  size_t patchCount() const;                             // patches given to build()
  const std::vector<hfpac::Status>& statuses() const;    // validation status per patch
  const std::vector<hfpac::PatchInfo>& infos() const;    // per patch (valid patches only)
  uint64_t areaCount() const;                            // thread blocks of a launch
  uint64_t points() const;                               // samples of the valid patches
  uint64_t streamBytes() const;                          // compressed bytes of valid patches

  // Resident entries (resident_decoder.h): valid patch i's stream words, zero-padded to a
  // multiple of 16 bytes (the device builds the descriptors from them, like from a blob).
  // entryBytes() is 0 for an invalid patch; writeEntry() writes entryBytes(i) bytes.
  size_t entryBytes(size_t i) const;
  size_t entryAreas(size_t i) const;   // AreaDescs in the entry (layered or 2DRBUC ones)
  void writeEntry(size_t i, uint8_t* dst) const;

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

// Device half: an uploaded blob and the per-patch flags; launches the kernel.
class DeviceBatch {
 public:
  DeviceBatch();
  ~DeviceBatch();
  DeviceBatch(DeviceBatch&&) noexcept;
  DeviceBatch& operator=(DeviceBatch&&) noexcept;

  // Copies blobBytes bytes from pinned host memory (written by DecodePlan::writeBlob) to the
  // device on `stream` and records the plan's shape. The host memory must stay untouched
  // until the copy has run (record an event after this call to know when).
  void uploadAsync(const DecodePlan& plan, const uint8_t* pinned_blob, cudaStream_t stream);
  // Sizes the device memory for any batch of at most these totals, so that uploadAsync never
  // allocates (an allocation may free first, and cudaFree synchronises the whole device).
  void reserve(uint64_t blobBytes, size_t patches, uint64_t areas);
  // Launches the decode of the uploaded batch. Clears and then sets the per-patch flags.
  void decodeAsync(DecodeMode mode, const Target& target, cudaStream_t stream);
  // Copies the per-patch flags to `pinned_flags` (patchCount() uint32 values) on `stream`.
  void fetchFlagsAsync(uint32_t* pinned_flags, cudaStream_t stream) const;
  size_t patchCount() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// Merges validation statuses with kernel flags (OutOfRange).
std::vector<hfpac::Status> mergeStatuses(const std::vector<hfpac::Status>& validation,
                                         const uint32_t* flags);

// One batch at a time, with its own pinned staging and device memory (grown as needed, or sized
// once by reserve()).
class GpuDecoder {
 public:
  GpuDecoder();
  ~GpuDecoder();
  GpuDecoder(const GpuDecoder&) = delete;
  GpuDecoder& operator=(const GpuDecoder&) = delete;

  // Validates and packs the batch into pinned staging. Returns the number of valid patches.
  size_t prepare(const PatchInput* patches, size_t count);
  // Packs a batch of streams validated beforehand (validateStream; DecodePlan::buildValidated).
  size_t prepareValidated(const PatchInput* patches, const ValidatedStream* validated, size_t count);
  // Allocates now, for every later batch of at most `patches` streams of `streamBytes` bytes and
  // `areas` 16 x 16 areas in all, the pinned staging and device memory that prepare and
  // uploadAsync would otherwise grow batch by batch (a pinned allocation costs about a
  // millisecond and a device one synchronises the device). Larger batches still work (they grow).
  void reserve(size_t patches, uint64_t streamBytes, uint64_t areas);
  void uploadAsync(cudaStream_t stream);
  void decodeAsync(DecodeMode mode, const Target& target, cudaStream_t stream);
  void fetchStatusesAsync(cudaStream_t stream);
  // Validation statuses merged with the flags of the last fetchStatusesAsync() (which must have
  // completed: synchronise its stream first).
  std::vector<hfpac::Status> statuses() const;

  // prepare + upload + decode + fetch + wait. Returns the per-patch statuses.
  std::vector<hfpac::Status> decode(const PatchInput* patches, size_t count, DecodeMode mode,
                                    const Target& target, cudaStream_t stream = nullptr);

  const DecodePlan& plan() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hfgpu
