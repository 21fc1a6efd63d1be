// hfr.cpp - see hfr.h. No GDAL here: this file is part of hf_demio in both builds.
#include "demio/hfr.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

namespace demio {
namespace {

constexpr size_t kHeader = size_t(kHfrHeaderBytes);
constexpr size_t kExtFixed = 56;  // flags, reserved, geotransform (before the two strings)
constexpr uint32_t kExtGeoTransform = 1u << 0;

template <class T>
void put(uint8_t* p, T v) {
  std::memcpy(p, &v, sizeof(T));  // x86-64 / aarch64 hosts are little-endian
}
template <class T>
T get(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

}  // namespace

bool isHfrPath(const std::string& path) {
  if (path.size() < 4) return false;
  std::string ext = path.substr(path.size() - 4);
  for (char& c : ext) c = char(std::tolower(static_cast<unsigned char>(c)));
  return ext == ".hfr";
}

bool writeHfr(const std::string& path, const Dem& dem, std::string& error) {
  // The georeferencing extension (hfr.h) only when there is something to carry.
  std::vector<uint8_t> ext;
  if (dem.hasGeoTransform || !dem.projectionWkt.empty() || !dem.verticalUnits.empty()) {
    ext.assign(kExtFixed, 0);
    put<uint32_t>(ext.data(), dem.hasGeoTransform ? kExtGeoTransform : 0u);
    for (int i = 0; i < 6; ++i) put<double>(ext.data() + 8 + 8 * i, dem.geoTransform[i]);
    for (const std::string* s : {&dem.projectionWkt, &dem.verticalUnits}) {
      uint8_t len[4];
      put<uint32_t>(len, uint32_t(s->size()));
      ext.insert(ext.end(), len, len + 4);
      ext.insert(ext.end(), s->begin(), s->end());
    }
    while (ext.size() % 8) ext.push_back(0);
    if (kHeader + ext.size() > size_t(kHfrMaxHeaderBytes)) {
      error = "cannot write " + path + ": CRS text too long for an .hfr header";
      return false;
    }
  }
  uint8_t h[kHeader] = {};
  std::memcpy(h, "HFR1", 4);
  put<uint32_t>(h + 4, uint32_t(kHeader + ext.size()));
  put<int32_t>(h + 8, dem.width);
  put<int32_t>(h + 12, dem.height);
  h[16] = uint8_t(dem.type);
  h[17] = dem.hasNodata ? 1 : 0;
  h[18] = dem.nodataInSamples ? 1 : 0;
  h[19] = dem.quant.applied ? 1 : 0;
  put<uint16_t>(h + 20, dem.nodataSample);
  put<double>(h + 24, dem.nodata);
  put<double>(h + 32, dem.quant.step);
  put<double>(h + 40, dem.quant.offset);
  put<double>(h + 48, dem.quant.maxError);
  put<uint64_t>(h + 56, uint64_t(dem.nodataCount));
  const std::string tmp = path + ".tmp";
  std::unique_ptr<std::FILE, FileCloser> f(std::fopen(tmp.c_str(), "wb"));
  if (!f) {
    error = "cannot write " + tmp + ": " + std::strerror(errno);
    return false;
  }
  const size_t n = dem.samples.size();
  bool ok = std::fwrite(h, 1, kHeader, f.get()) == kHeader &&
            std::fwrite(ext.data(), 1, ext.size(), f.get()) == ext.size() &&
            std::fwrite(dem.samples.data(), 2, n, f.get()) == n;
  ok = (std::fclose(f.release()) == 0) && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    error = "cannot write " + path + ": " + std::strerror(errno);
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

bool readHfrHeader(std::FILE* f, const std::string& path, Dem& out, std::string& error,
                   long* sampleOffset) {
  uint8_t h[kHeader] = {};
  const uint32_t header_bytes = std::fread(h, 1, kHeader, f) == kHeader ? get<uint32_t>(h + 4) : 0;
  if (std::memcmp(h, "HFR1", 4) != 0 ||
      (header_bytes != kHeader &&
       (header_bytes < kHeader + kExtFixed + 8 || header_bytes > uint32_t(kHfrMaxHeaderBytes) ||
        header_bytes % 8 != 0))) {
    error = "not an .hfr file (bad header)";
    return false;
  }
  out = Dem{};
  out.width = get<int32_t>(h + 8);
  out.height = get<int32_t>(h + 12);
  if (out.width <= 0 || out.height <= 0 || out.width > (1 << 20) || out.height > (1 << 20) || h[16] > 1) {
    error = "bad .hfr dimensions or type";
    return false;
  }
  out.type = hfpac::SampleType(h[16]);
  out.hasNodata = h[17] != 0;
  out.nodataInSamples = h[18] != 0;
  out.quant.applied = h[19] != 0;
  out.nodataSample = get<uint16_t>(h + 20);
  out.nodata = get<double>(h + 24);
  out.quant.step = get<double>(h + 32);
  out.quant.offset = get<double>(h + 40);
  out.quant.maxError = get<double>(h + 48);
  out.nodataCount = size_t(get<uint64_t>(h + 56));
  out.path = path;
  out.driver = "HFR";
  out.sourceType = out.type == hfpac::SampleType::Int16 ? "Int16" : "UInt16";
  out.bandCount = 1;
  if (header_bytes > kHeader) {
    std::vector<uint8_t> ext(header_bytes - kHeader);
    if (std::fread(ext.data(), 1, ext.size(), f) != ext.size()) {
      error = "truncated .hfr header";
      return false;
    }
    const uint32_t flags = get<uint32_t>(ext.data());
    out.hasGeoTransform = (flags & kExtGeoTransform) != 0;
    for (int i = 0; i < 6; ++i) out.geoTransform[i] = get<double>(ext.data() + 8 + 8 * i);
    size_t pos = kExtFixed;
    for (std::string* s : {&out.projectionWkt, &out.verticalUnits}) {
      if (ext.size() - pos < 4 || ext.size() - pos - 4 < get<uint32_t>(ext.data() + pos)) {
        error = "corrupt .hfr header (georeferencing)";
        return false;
      }
      const size_t len = get<uint32_t>(ext.data() + pos);
      s->assign(reinterpret_cast<const char*>(ext.data() + pos + 4), len);
      pos += 4 + len;
    }
    if (out.hasGeoTransform)
      for (double g : out.geoTransform)
        if (!std::isfinite(g)) {
          error = "corrupt .hfr header (geotransform)";
          return false;
        }
  }
  if (sampleOffset) *sampleOffset = long(header_bytes);
  return true;
}

bool readHfr(const std::string& path, Dem& out, std::string& error) {
  std::unique_ptr<std::FILE, FileCloser> f(std::fopen(path.c_str(), "rb"));
  if (!f) {
    error = std::string("cannot open: ") + std::strerror(errno);
    return false;
  }
  if (!readHfrHeader(f.get(), path, out, error)) return false;
  try {
    out.samples.resize(size_t(out.width) * size_t(out.height));
  } catch (const std::bad_alloc&) {
    error = "out of memory";
    return false;
  }
  if (std::fread(out.samples.data(), 2, out.samples.size(), f.get()) != out.samples.size()) {
    error = "truncated .hfr file";
    return false;
  }
  return true;
}

void cropDem(const Dem& dem, int x0, int y0, int w, int h, Dem& out) {
  x0 = std::clamp(x0, 0, dem.width - 1);
  y0 = std::clamp(y0, 0, dem.height - 1);
  w = std::clamp(w, 1, dem.width - x0);
  h = std::clamp(h, 1, dem.height - y0);
  out = dem;
  out.width = w;
  out.height = h;
  out.samples.assign(size_t(w) * size_t(h), 0);
  out.nodataCount = 0;
  for (int y = 0; y < h; ++y) {
    const uint16_t* src = dem.samples.data() + size_t(y0 + y) * size_t(dem.width) + size_t(x0);
    std::copy(src, src + w, out.samples.data() + size_t(y) * size_t(w));
    if (dem.nodataInSamples)
      out.nodataCount += size_t(std::count(src, src + w, dem.nodataSample));
  }
}

}  // namespace demio
