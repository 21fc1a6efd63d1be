// fuzz_gpu_desc.cpp - libFuzzer target for the GPU decoder's host side (issue 16): a stream that
// passes the CPU decoder's validation (codec/stream_index.h, what hfgpu::validateStream runs) is
// given to the decode-descriptor builder (gpu/desc_build.h, the code cuda/descriptors.cu runs on
// the device) in a buffer of exactly its words, so that ASan catches any read the validation
// did not bound. Byte 0 bit 0: give it only the header and layers 1 + 2 (what the cuda strategy
// sends for a progressive tile's lossy decode), which the builder must never read past.
// Seeds: tests/fuzz/seeds/ (the codec's streams, with a mode byte added by the fuzzer).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "codec/hfpac.h"
#include "codec/stream_index.h"
#include "gpu/desc_build.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const bool prefixOnly = data[0] & 1;
  ++data;
  --size;
  hfpac::detail::StreamIndex idx;
  if (hfpac::detail::indexStream(data, size, idx) != hfpac::Status::Ok) return 0;
  hfpac::PatchInfo info;
  if (hfpac::readInfo(data, size, info) != hfpac::Status::Ok) {
    std::fprintf(stderr, "fuzz_gpu_desc: indexed but no info\n");
    std::abort();
  }
  const bool rbuc = idx.h.isRbuc() && !idx.h.isFlat() && !idx.h.isStored();
  const bool layered = !info.flat && !info.stored && !info.rbuc;
  const uint64_t bytes = prefixOnly && layered ? uint64_t(info.layer1Bytes) + info.layer2Bytes : idx.streamBytes;
  if (bytes > size || bytes % 4) {
    std::fprintf(stderr, "fuzz_gpu_desc: %llu stream bytes of %zu\n", (unsigned long long)bytes, size);
    std::abort();
  }
  // Exactly the stream's words on the heap: a read past them is an ASan report.
  std::vector<uint32_t> words(size_t(bytes / 4));
  if (bytes) std::memcpy(words.data(), data, size_t(bytes));
  hfgpu::detail::TileRecord r{};
  r.areas = uint32_t(idx.g.areasX * idx.g.areasY);
  r.rbuc = rbuc ? 1u : 0u;
  hfgpu::detail::PatchDesc patch{};
  std::vector<hfgpu::detail::AreaDesc> areas(r.areas);
  hfgpu::detail::buildTileDescriptors(words.data(), r, 0, &patch, areas.data());
  return 0;
}
