// fuzz_hfr.cpp - libFuzzer target for the .hfr raster reader (tools/demio/hfr.h): the input is
// the file; the header (with its georeferencing extension) is read from memory (fmemopen) as
// DemSource does, and a header that passes must describe a raster whose samples fit the input.
// Seeds: tests/fuzz/seeds/fuzz_hfr (hf_fuzz_make_seeds).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "demio/hfr.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::FILE* f = ::fmemopen(const_cast<uint8_t*>(data), size, "rb");
  if (!f) return 0;
  demio::Dem dem;
  std::string error;
  long offset = 0;
  if (demio::readHfrHeader(f, "fuzz.hfr", dem, error, &offset)) {
    if (dem.width <= 0 || dem.height <= 0 || offset < demio::kHfrHeaderBytes || offset > demio::kHfrMaxHeaderBytes) {
      std::fprintf(stderr, "fuzz_hfr: accepted %d x %d, header %ld\n", dem.width, dem.height, offset);
      std::abort();
    }
  } else if (error.empty()) {
    std::fprintf(stderr, "fuzz_hfr: refused without an error\n");
    std::abort();
  }
  std::fclose(f);
  return 0;
}
