// ans_decoder.h - the entropy-coded patches of codec/ans.h (HFAN) decoded on the GPU: one warp
// per patch, the patch's rANS lanes in lockstep (a ballot and a prefix count place each lane's
// refill in the shared word stream), then each row rebuilt from its residuals by warp scans.
// Output equals hfpac::ansDecode's sample for sample; a stream the CPU decoder refuses is
// refused here too (per-patch status).
//
// Limits: lanes <= 32 (one warp: the encoder picks 32, 16 or 8). Streams are checked on the host
// first (ansReadInfo); a patch the GPU cannot take gets Status::Unsupported.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "codec/hfpac.h"

namespace hfgpu {

constexpr int kAnsGpuMaxLanes = 32;

// Decodes every stream into outputs[i] (width * height samples, stride = width), statuses[i]
// its result. Synchronous (its own CUDA stream); throws std::runtime_error on a CUDA error.
void ansDecodeBatch(const std::vector<std::vector<uint8_t>>& streams, std::vector<std::vector<uint16_t>>& outputs,
                    std::vector<hfpac::Status>& statuses);

// The decode kernel alone on a device-resident batch (CUDA events): the best of `repeat` runs,
// in seconds, and the samples one run decodes. Streams the GPU cannot take are left out.
struct AnsKernelTiming {
  double seconds = 0;
  uint64_t samples = 0, patches = 0;
};
AnsKernelTiming ansDecodeKernelTime(const std::vector<std::vector<uint8_t>>& streams, int repeat);

// A batch of HFAN patches decoded straight into 16-bit surfaces (the cuda streaming strategy's
// atlas layers), asynchronously on the caller's stream: the compressed streams are what crosses
// PCIe. prepare() checks each header on the host (ansReadInfo; lanes <= 32; the given
// geometry) and packs the valid streams into this decoder's pinned staging, waiting for the
// previous batch's upload to have left it; decodeAsync() uploads, decodes (into device scratch)
// and writes the surfaces of the patches the kernel accepted, then fetches the per-patch
// statuses. statuses() is valid once the stream has passed that work: a patch refused on the
// host keeps its header's status, one the kernel refuses (a corrupt word stream: the archive's
// CRC makes this rare) the decoder's error; neither is written. One batch at a time per decoder:
// the previous batch must have completed before the next prepare() (its device buffers are
// reused). Not thread-safe. CUDA errors throw std::runtime_error; decodeAsync throws
// std::invalid_argument when a patch's surface index is not below surfaceCount (<= 256).
struct AnsSurfaceInput {
  const uint8_t* data = nullptr;  // read during prepare() only
  size_t size = 0;
  int width = 0, height = 0;      // the geometry the stream must have
  hfpac::SampleType type = hfpac::SampleType::UInt16;
  uint32_t surface = 0;           // index into decodeAsync's surfaces (< 256)
  int x = 0, y = 0;               // the texel of the patch's (0, 0)
};

class AnsSurfaceDecoder {
 public:
  AnsSurfaceDecoder();
  ~AnsSurfaceDecoder();
  AnsSurfaceDecoder(const AnsSurfaceDecoder&) = delete;
  AnsSurfaceDecoder& operator=(const AnsSurfaceDecoder&) = delete;

  // Returns the number of patches that will be decoded.
  size_t prepare(const AnsSurfaceInput* patches, size_t count);
  void decodeAsync(const cudaSurfaceObject_t* surfaces, int surfaceCount, cudaStream_t stream);
  // Allocates now the pinned staging and device memory of any later batch of at most
  // `patches` streams of `streamBytes` bytes and `samples` samples in all (GpuDecoder::reserve
  // says why). Larger batches still work (they grow).
  void reserve(size_t patches, uint64_t streamBytes, uint64_t samples);
  std::vector<hfpac::Status> statuses() const;
  // Right after prepare(): per patch, Ok or why the host refused it (never decoded).
  const std::vector<hfpac::Status>& headerStatuses() const;
  uint64_t uploadBytes() const;  // what decodeAsync sends: streams + descriptors
  size_t patchCount() const;     // given to the last prepare()

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace hfgpu
