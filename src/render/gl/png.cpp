// png.cpp - PNG output through stb_image_write (Debian libstb-dev; never vendored).
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STBI_WRITE_NO_STDIO_UNUSED
#include <stb/stb_image_write.h>

#include "render/gl/renderer.h"

namespace hfr {

bool writePng(const std::string& path, int width, int height, const std::vector<uint8_t>& rgba,
              std::string& error) {
  if (rgba.size() != size_t(width) * size_t(height) * 4) {
    error = "writePng: pixel buffer has the wrong size";
    return false;
  }
  if (!stbi_write_png(path.c_str(), width, height, 4, rgba.data(), width * 4)) {
    error = "cannot write " + path;
    return false;
  }
  return true;
}

}  // namespace hfr
