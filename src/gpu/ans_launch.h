// ans_launch.h - the launch of cuda/ans.cu (internal: src/gpu/ans_decoder.cpp calls it after
// checking every header on the host; plain C++, the stream as void*).
#pragma once

#include <cstdint>

namespace hfgpu::detail {

// One HFAN patch for the kernel: where its stream and its output and scratch live.
struct AnsPatchDesc {
  uint64_t streamOffset;  // bytes into the streams buffer (4-aligned)
  uint32_t streamBytes;   // the header's stream size, already checked against the buffer
  uint32_t pad;
  uint64_t outOffset;     // samples into the output (and int32 scratch) buffer
};

// Decodes `count` patches; status[i] receives an hfpac::Status value.
void launchAnsDecode(const uint8_t* streams, const AnsPatchDesc* patches, uint32_t count, uint16_t* out,
                     int32_t* scratch, int32_t* status, void* stream);

// Where a decoded patch goes: texel (x + i, y + j) of surfaces[surface] gets out[outOffset + j *
// width + i] (16-bit texels).
struct AnsCopyDesc {
  uint64_t outOffset;
  uint32_t surface;
  uint16_t x, y, width, height;
};
constexpr int kAnsMaxSurfaces = 256;
struct AnsSurfaces {
  unsigned long long surface[kAnsMaxSurfaces];  // cudaSurfaceObject_t
};
// Copies `count` decoded patches into their surfaces (after launchAnsDecode on the same stream),
// those whose status is Ok only.
void launchAnsCopyToSurfaces(const uint16_t* out, const AnsCopyDesc* copies, const int32_t* status, uint32_t count,
                             const AnsSurfaces& surfaces, void* stream);

}  // namespace hfgpu::detail
