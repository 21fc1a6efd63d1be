// decode_entry.h - a tile's HFPaC stream laid out for the GL compute decoder (the "gl" streaming
// strategy, shaders/decode.comp). GL-free, so that unit tests check the layout without a context.
//
// An entry is [PatchDesc: 64 bytes][AreaDesc: 32 bytes per 16 x 16 area][the stream, padded to a
// multiple of 16 bytes + 16 zero bytes], the descriptors exactly those the CUDA decoder builds
// (gpu/desc_build.h, gpu/decode_desc.h), with PatchDesc::streamWord counted from the entry's
// first word, so an entry can sit at any 16-byte-aligned offset of the decoder's buffer. The
// shader reads the fields by word index; decode_entry.cpp pins those indices with static_asserts.
//
// The stream is validated first with the CPU decoder's checks (codec/stream_index.h), so every
// offset the shader reads lies inside the entry. 2DRBUC streams have no compute decoder yet:
// they are reported as CPU-only (the strategy decodes them on its loader thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "codec/hfpac.h"

namespace hfr {

struct ComputeEntry {
  std::vector<uint8_t> bytes;  // the entry (a multiple of 16 bytes)
  uint32_t areas = 0;          // AreaDescs = workgroups of its decode
};

// Words of the entry's descriptors (the shader's kPatchWords, kAreaWords).
constexpr uint32_t kEntryPatchWords = 16;
constexpr uint32_t kEntryAreaWords = 8;
// Streams at or above this size are refused (bit offsets are 32-bit in the shader).
constexpr uint64_t kMaxComputeStreamBytes = (uint64_t(1) << 29) - 64;

// Validates the stream `data` (`size` bytes) and lays it out into `out`. Ok, the validation's
// status for an invalid stream, or Unsupported for a valid stream the shader cannot decode
// (2DRBUC, or one too large): decode that one on the CPU.
hfpac::Status makeComputeEntry(const uint8_t* data, size_t size, ComputeEntry& out);

}  // namespace hfr
