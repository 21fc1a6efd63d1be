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

}  // namespace hfgpu::detail
