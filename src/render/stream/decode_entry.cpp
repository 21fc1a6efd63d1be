// decode_entry.cpp - see decode_entry.h.
#include "render/stream/decode_entry.h"

#include <cstddef>
#include <cstring>

#include "codec/stream_index.h"
#include "gpu/desc_build.h"

namespace hfr {

namespace {
using hfgpu::detail::AreaDesc;
using hfgpu::detail::PatchDesc;

// The word indices shaders/decode.comp reads (keep both in step).
static_assert(sizeof(PatchDesc) == kEntryPatchWords * 4 && sizeof(AreaDesc) == kEntryAreaWords * 4, "entry layout");
static_assert(offsetof(PatchDesc, streamWord) == 0 * 4, "word 0: stream word (low half)");
static_assert(offsetof(PatchDesc, width) == 8 * 4 && offsetof(PatchDesc, height) == 8 * 4 + 2, "word 8");
static_assert(offsetof(PatchDesc, base) == 9 * 4 && offsetof(PatchDesc, maskOut) == 9 * 4 + 2, "word 9");
static_assert(offsetof(PatchDesc, flip) == 10 * 4 && offsetof(PatchDesc, kind) == 10 * 4 + 2 &&
                  offsetof(PatchDesc, segLog) == 10 * 4 + 3, "word 10");
static_assert(offsetof(PatchDesc, cornerBits) == 11 * 4 && offsetof(PatchDesc, highBits) == 11 * 4 + 3, "word 11");
static_assert(offsetof(PatchDesc, segX) == 12 * 4 && offsetof(PatchDesc, segY) == 12 * 4 + 2, "word 12");
static_assert(offsetof(PatchDesc, hedgeBit) == 13 * 4 && offsetof(PatchDesc, vedgeBit) == 14 * 4 &&
                  offsetof(PatchDesc, centreBit) == 15 * 4, "words 13-15");
static_assert(offsetof(AreaDesc, ax) == 1 * 4 && offsetof(AreaDesc, ay) == 1 * 4 + 2, "area word 1");
static_assert(offsetof(AreaDesc, lowBit) == 2 * 4 && offsetof(AreaDesc, maskBit) == 3 * 4 &&
                  offsetof(AreaDesc, highBit) == 4 * 4 && offsetof(AreaDesc, posByte) == 5 * 4, "area words 2-5");
static_assert(offsetof(AreaDesc, count) == 6 * 4 && offsetof(AreaDesc, bits) == 6 * 4 + 2 &&
                  offsetof(AreaDesc, maskCode) == 6 * 4 + 3, "area word 6");
}  // namespace

hfpac::Status makeComputeEntry(const uint8_t* data, size_t size, ComputeEntry& out) {
  out = ComputeEntry{};
  hfpac::detail::StreamIndex idx;
  const hfpac::Status st = hfpac::detail::indexStream(data, size, idx);
  if (st != hfpac::Status::Ok) return st;
  const bool flatOrStored = idx.h.isFlat() || idx.h.isStored();
  if ((idx.h.isRbuc() && !flatOrStored) || idx.streamBytes > kMaxComputeStreamBytes) return hfpac::Status::Unsupported;
  const uint32_t areas = uint32_t(idx.g.areasX * idx.g.areasY);
  const uint64_t head = sizeof(PatchDesc) + uint64_t(areas) * sizeof(AreaDesc);  // a multiple of 32
  const uint64_t streamPadded = (idx.streamBytes + 15) / 16 * 16 + 16;
  out.bytes.assign(size_t(head + streamPadded), 0);
  std::memcpy(out.bytes.data() + head, data, size_t(idx.streamBytes));
  hfgpu::detail::TileRecord r{};
  r.streamByte = head;
  r.areas = areas;
  std::vector<uint32_t> words(out.bytes.size() / 4);
  std::memcpy(words.data(), out.bytes.data(), out.bytes.size());
  PatchDesc patch{};
  std::vector<AreaDesc> descs(areas);
  hfgpu::detail::buildTileDescriptors(words.data(), r, 0, &patch, descs.data());
  std::memcpy(out.bytes.data(), &patch, sizeof patch);
  std::memcpy(out.bytes.data() + sizeof patch, descs.data(), descs.size() * sizeof(AreaDesc));
  out.areas = areas;
  return hfpac::Status::Ok;
}

}  // namespace hfr
