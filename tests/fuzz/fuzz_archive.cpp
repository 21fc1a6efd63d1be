// fuzz_archive.cpp - libFuzzer target for the tile archive reader (src/archive) as the viewer
// uses it: the input is a whole .hfa file (placed in a memfd, opened by path and mapped), then
// every height tile is fetched (CRC), decoded whole, decoded lossy (layers 1 + 2, no CRC) and
// refined, every imagery tile fetched, and the lookups asked out of range. Nothing may crash,
// hang or read outside the mapping; a decoded lossy tile must be refined to the whole decode.
// Seeds: tests/fuzz/seeds/fuzz_archive (hf_fuzz_make_seeds).
// Build: -DHF_FUZZ=ON with clang; run e.g. ./tests/fuzz/fuzz_archive -max_total_time=60 corpus/
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "archive/archive.h"

namespace {

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_archive: %s\n", what);
  std::abort();
}

// One memfd for the whole run, rewritten per input (no file system traffic).
int memfd() {
  static const int fd = ::memfd_create("fuzz_archive", MFD_CLOEXEC);
  if (fd < 0) fail("memfd_create failed");
  return fd;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = memfd();
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, data, size, 0) != ssize_t(size)) fail("cannot write the memfd");
  hfa::ArchiveReader r;
  std::string error;
  if (!r.open("/proc/self/fd/" + std::to_string(fd), error)) {
    if (error.empty()) fail("open failed without an error");
    return 0;
  }
  const hfa::Header& h = r.header();
  const size_t p = size_t(h.tileSize());
  if (p == 0 || p > 4097) fail("open accepted an impossible tile size");
  std::vector<uint16_t> whole(p * p), lossy(p * p);
  const size_t tiles = std::min<size_t>(r.tiles().size(), 64);
  for (size_t t = 0; t < tiles; ++t) {
    const uint8_t* payload = nullptr;
    size_t bytes = 0;
    (void)r.payload(t, payload, bytes, error);
    const bool ok = r.decodeTile(t, whole.data(), error);
    bool exact = false;
    uint32_t read = 0;
    if (r.decodeTileLossy(t, lossy.data(), exact, read, error) && ok) {
      std::vector<uint16_t> refined(p * p);
      if (!r.decodeTile(t, refined.data(), error, hfpac::Layers::All, read)) fail("refinement failed after a decode");
      if (refined != whole) fail("refinement differs from the whole decode");
      if (exact && lossy != whole) fail("an exact lossy decode differs from the whole decode");
    }
    (void)r.tileName(t);
  }
  uint32_t dummy = 0;
  bool exact = false;
  if (r.decodeTileLossy(r.tiles().size(), lossy.data(), exact, dummy, error)) fail("a tile past the end decoded");
  for (int level = -1; level <= int(h.levels); ++level) {
    size_t first = 0, count = 0;
    if (level >= 0 && level < int(h.levels)) r.levelRange(level, first, count);
    (void)r.find(level, 0, 0);
    (void)r.find(level, 0xffffffffu, 1);
  }
  if (r.hasImagery()) {
    const size_t n = std::min<size_t>(r.imageryTiles().size(), 64);
    for (size_t t = 0; t < n; ++t) {
      const uint8_t* payload = nullptr;
      size_t bytes = 0;
      (void)r.imageryPayload(t, payload, bytes, error);
      (void)r.imageryTileName(t);
    }
    (void)r.findImagery(0, 0, 0);
    (void)r.findImagery(255, 1, 1);
  }
  return 0;
}
