// encoder.h - batched HFPaC encoding on the GPU, byte-identical to hfpac::encode.
//
// Many patches (of any sizes, 1..16384 per side) are encoded in five kernel launches on one
// stream, with no host synchronisation: analysis of every candidate encoding (mask candidates x
// segment sizes) in parallel, then a size pass and a scan, then one write pass into a single
// contiguous output buffer (stream i at offsets[i], offsets[count] = total bytes). The streams are
// the same bytes hfpac::encode produces for the same samples and options (docs/format.md
// section 8); tests/gpu/encode_test.cpp checks that.
//
// Supported options: everything hfpac::EncodeOptions allows -
//   segment 5, 9, 17, 33, and 0 (all four are analysed and the smallest kept, like the CPU);
//   bits 0..16 (uniform) and -1 (auto: per-area choice with the hw iteration, exact size
//   comparison with every uniform b, stored fallback when larger than the stored form);
//   hasNodata / nodata and autoMask (most frequent value covering >= 1/16 of the points);
//   flat patches; Int16 and UInt16 samples.
// Not supported: rbuc (2DRBUC residuals) - encodeAsync returns InvalidArgument.
//
// Threading: a BatchEncoder is not thread-safe; use one per host thread (or per stream). The
// results of an encodeAsync call stay valid until the next call on the same encoder.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "codec/hfpac.h"

namespace hfgpu {

// One patch whose samples are in device memory (row-major, `stride` samples per row; Int16
// samples as their uint16_t bit patterns, as for hfpac::encode).
struct DevicePatch {
  const uint16_t* samples = nullptr;
  size_t stride = 0;
  int width = 0, height = 0;
  hfpac::SampleType type = hfpac::SampleType::UInt16;
};

// Upper bound of the stream bytes the GPU (and the CPU) encoder can produce for one patch with
// the given bits option: the stored size with automatic b, hfpac::maxEncodedSize with a fixed b.
size_t gpuEncodeBound(int width, int height, int bits);

// Needs a CUDA device: the constructor throws std::runtime_error without one.
class BatchEncoder {
 public:
  BatchEncoder();
  ~BatchEncoder();
  BatchEncoder(BatchEncoder&&) noexcept;
  BatchEncoder& operator=(BatchEncoder&&) noexcept;
  BatchEncoder(const BatchEncoder&) = delete;
  BatchEncoder& operator=(const BatchEncoder&) = delete;

  // Enqueues the encoding of `count` patches on `stream` and returns without waiting. The
  // samples must stay valid until the stream has passed this work. Returns InvalidArgument
  // (and enqueues nothing) for a null pointer, a size outside 1..16384, stride < width, or bad
  // options - the same rules as hfpac::encode - and for options.rbuc (not implemented here). CUDA failures throw std::runtime_error
  // (CUDA_CHECK). The only host waits: when the workspace must grow (a larger batch than
  // before) the previous call's work is waited for before its buffers are replaced, and the
  // pinned descriptor staging of the previous call is reused only once its upload is done.
  hfpac::Status encodeAsync(const DevicePatch* patches, size_t count,
                            const hfpac::EncodeOptions& options, cudaStream_t stream);

  // Results of the last encodeAsync (valid once `stream` has passed it):
  size_t count() const;
  const uint8_t* deviceStreams() const;   // stream i: deviceStreams() + deviceOffsets()[i]
  const uint64_t* deviceOffsets() const;  // count() + 1 entries; the last is the total
  const uint64_t* hostOffsets() const;    // pinned copy of deviceOffsets() (copied on the stream)
  // After synchronising: false if the output capacity was exceeded (an internal error: then no
  // stream was written). encode()/encodeHost() check it and throw.
  bool hostOutputOk() const;

  // encodeAsync + wait + copy the streams into `out` (resized to count).
  hfpac::Status encode(const DevicePatch* patches, size_t count, const hfpac::EncodeOptions& options,
                       cudaStream_t stream, std::vector<std::vector<uint8_t>>& out);

  // Host samples: packs them into pinned memory, uploads them in one copy, encodes and
  // downloads the streams into `out` (resized to count). Synchronous.
  hfpac::Status encodeHost(const hfpac::PatchIn* patches, size_t count,
                           const hfpac::EncodeOptions& options, cudaStream_t stream,
                           std::vector<std::vector<uint8_t>>& out);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// ---- For hfbench (`hfbench codec --device cuda`) ----

struct GpuEncodeBench {
  size_t patches = 0;
  uint64_t points = 0;            // sum of width * height
  uint64_t bytes = 0;             // total stream bytes
  double seconds = 0;             // best GPU time of one batch encode (CUDA events, samples on the device)
  double pointsPerSecond = 0;     // points / seconds
  size_t mismatches = 0;          // streams that differ from `reference` (when given)
  long firstMismatch = -1;        // index of the first such stream
};

// Uploads the patches once, then encodes the whole batch `repeat` times (>= 1) on one stream,
// timing each batch with CUDA events (kernels only: no PCIe transfers), and keeps the best.
// With `reference` (the CPU streams, one per patch) the GPU streams are compared byte for byte.
// Returns false with `error` set (one line) when options or patches are invalid or CUDA fails
// (never throws).
bool benchGpuEncode(const hfpac::PatchIn* patches, size_t count, const hfpac::EncodeOptions& options,
                    int repeat, const std::vector<std::vector<uint8_t>>* reference,
                    GpuEncodeBench& result, std::string& error);

}  // namespace hfgpu
