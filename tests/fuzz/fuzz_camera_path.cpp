// fuzz_camera_path.cpp - libFuzzer target for the camera path text format
// (src/render/camera/camera_path.h): any bytes parse or fail with a one-line `FILE:LINE: what`
// error; a parsed path has at least one key, strictly increasing times, finite values, and
// round-trips through toText() to the same keys; sampling it anywhere gives finite cameras.
// Seeds: tests/fuzz/seeds/fuzz_camera_path (hf_fuzz_make_seeds).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "render/camera/camera_path.h"

namespace {
[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_camera_path: %s\n", what);
  std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  hfr::CameraPath path;
  std::string error;
  if (!path.parse(text, "fuzz.txt", error)) {
    if (error.empty() || error.find('\n') != std::string::npos) fail("a refusal that is not one line");
    if (path.size() != 0) fail("a failed parse left keys");  // parse replaces the keys only on success
    return 0;
  }
  if (path.size() == 0) fail("parsed to no keys");
  std::string text1, text2;
  if (!path.toText(text1, error)) fail("a parsed path has no text");
  hfr::CameraPath again;
  if (!again.parse(text1, "again.txt", error)) fail("toText() does not parse back");
  if (!again.toText(text2, error) || text2 != text1) fail("the text does not round-trip");
  const double t0 = path.startTime(), t1 = path.endTime();
  if (!(t0 <= t1)) fail("times out of order");
  for (int i = -1; i <= 8; ++i) {
    const hfr::Camera c = path.at(t0 + (t1 - t0) * double(i) / 7.0);
    if (!std::isfinite(c.x) || !std::isfinite(c.y) || !std::isfinite(c.z) || !std::isfinite(c.yaw) ||
        !std::isfinite(c.pitch))
      fail("a sampled camera is not finite");
  }
  return 0;
}
