// archive.cpp - what writer and reader share: codec names, pyramid geometry, entry layout,
// checksums and the per-tile statistics (min/max, LOD error).
#include "archive/archive.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "archive/format.h"

namespace hfa {

const char* codecName(Codec c) {
  switch (c) {
    case Codec::Raw: return "raw";
    case Codec::Hfpac: return "hfpac";
    case Codec::HfpacRbuc: return "hfpac+rbuc";
    case Codec::Hfan: return "hfan";
    case Codec::Auto: return "auto";
  }
  return "unknown";
}

bool parseCodec(const std::string& s, Codec& c) {
  if (s == "raw") c = Codec::Raw;
  else if (s == "hfpac") c = Codec::Hfpac;
  else if (s == "hfpac+rbuc") c = Codec::HfpacRbuc;
  else if (s == "hfan") c = Codec::Hfan;
  else if (s == "auto") c = Codec::Auto;
  else return false;
  return true;
}

const char* imageryCodecName(ImageryCodec c) {
  switch (c) {
    case ImageryCodec::Raw: return "raw";
    case ImageryCodec::Jpeg: return "jpeg";
    case ImageryCodec::Bc1: return "bc1";
  }
  return "unknown";
}

bool parseImageryCodec(const std::string& s, ImageryCodec& c) {
  if (s == "raw") c = ImageryCodec::Raw;
  else if (s == "jpeg") c = ImageryCodec::Jpeg;
  else if (s == "bc1") c = ImageryCodec::Bc1;
  else return false;
  return true;
}

int imageryBc1Levels(int tileSize) {
  int n = 1;
  while (n < kImageryBc1MaxLevels && (tileSize >> n) >= 16) ++n;
  return n;
}

uint64_t imageryBc1LevelOffset(int tileSize, int level) {
  uint64_t offset = 0;
  for (int m = 0; m < level; ++m) {
    const uint64_t s = uint64_t(tileSize >> m);
    offset += s * s / 2;  // 16 texels per 8-byte block
  }
  return offset;
}

uint64_t imageryBc1ChainBytes(int tileSize) {
  return imageryBc1LevelOffset(tileSize, imageryBc1Levels(tileSize));
}

namespace {
uint32_t tilesAlong(uint32_t extent, int tileLog, int level) {
  if (extent <= 1) return 1;
  const uint64_t span = uint64_t(1) << (tileLog + level);  // (p - 1) 2^L
  const uint64_t n = (uint64_t(extent) - 1 + span - 1) / span;
  return uint32_t(std::max<uint64_t>(1, n));
}
}  // namespace

uint32_t Header::tilesX(int level) const { return tilesAlong(width, tileLog, level); }
uint32_t Header::tilesY(int level) const { return tilesAlong(height, tileLog, level); }

namespace {
uint32_t imageryTilesAlong(uint32_t heightTiles0, uint32_t heightTilesL, int finer, int k) {
  const int level = k - finer;
  if (level >= 0) return heightTilesL;
  return heightTiles0 << std::min(-level, kMaxImageryFinerLevels);
}
}  // namespace

uint32_t imageryTilesX(const Header& h, const ImageryHeader& im, int k) {
  return imageryTilesAlong(h.tilesX(0), h.tilesX(std::max(0, k - im.finerLevels)), im.finerLevels, k);
}
uint32_t imageryTilesY(const Header& h, const ImageryHeader& im, int k) {
  return imageryTilesAlong(h.tilesY(0), h.tilesY(std::max(0, k - im.finerLevels)), im.finerLevels, k);
}

int Header::naturalLevels(uint32_t width, uint32_t height, int tileLog) {
  int levels = 1;
  while (levels < kMaxLevels && (tilesAlong(width, tileLog, levels - 1) > 1 ||
                                 tilesAlong(height, tileLog, levels - 1) > 1))
    ++levels;
  return levels;
}

uint32_t crc32(const uint8_t* data, size_t size) {
  uLong c = ::crc32(0L, Z_NULL, 0);
  while (size > 0) {
    const uInt chunk = uInt(std::min<size_t>(size, 1u << 30));
    c = ::crc32(c, data, chunk);
    data += chunk;
    size -= chunk;
  }
  return uint32_t(c);
}

namespace detail {

// Imagery entry (32 bytes): level u8, codec u8, flags u16, x u32, y u32, size u32, offset u64,
// crc u32, reserved u32 (0).
void writeImageryEntry(const ImageryEntry& e, uint8_t* p) {
  std::memset(p, 0, kImageryEntryBytes);
  p[0] = e.level;
  p[1] = uint8_t(e.codec);
  put16(p + 2, e.flags);
  put32(p + 4, e.x);
  put32(p + 8, e.y);
  put32(p + 12, e.size);
  put64(p + 16, e.offset);
  put32(p + 24, e.crc);
}

void readImageryEntry(const uint8_t* p, ImageryEntry& e) {
  e.level = p[0];
  e.codec = ImageryCodec(p[1]);
  e.flags = get16(p + 2);
  e.x = get32(p + 4);
  e.y = get32(p + 8);
  e.size = get32(p + 12);
  e.offset = get64(p + 16);
  e.crc = get32(p + 24);
}

void writeEntry(const TileEntry& e, int tileLog, uint8_t* p) {
  std::memset(p, 0, entryBytes(tileLog));
  p[0] = e.level;
  p[1] = uint8_t(e.codec);
  put16(p + 2, e.flags);
  put32(p + 4, e.x);
  put32(p + 8, e.y);
  put32(p + 12, e.size);
  put64(p + 16, e.offset);
  put32(p + 24, e.crc);
  put32(p + 28, uint32_t(e.minSample));
  put32(p + 32, uint32_t(e.maxSample));
  put32(p + 36, e.filled);
  for (int k = 0; k <= tileLog; ++k)
    putF32(p + kEntryFixedBytes + 4 * k, k < int(e.lodError.size()) ? e.lodError[size_t(k)] : 0.f);
}

void readEntry(const uint8_t* p, int tileLog, TileEntry& e) {
  e.level = p[0];
  e.codec = Codec(p[1]);
  e.flags = get16(p + 2);
  e.x = get32(p + 4);
  e.y = get32(p + 8);
  e.size = get32(p + 12);
  e.offset = get64(p + 16);
  e.crc = get32(p + 24);
  e.minSample = int32_t(get32(p + 28));
  e.maxSample = int32_t(get32(p + 32));
  e.filled = get32(p + 36);
  e.lodError.resize(size_t(tileLog) + 1);
  for (int k = 0; k <= tileLog; ++k) e.lodError[size_t(k)] = getF32(p + kEntryFixedBytes + 4 * k);
}

}  // namespace detail

namespace {
inline double value(uint16_t s, hfpac::SampleType type) {
  return type == hfpac::SampleType::Int16 ? double(int16_t(s)) : double(s);
}
}  // namespace

// The surface of step k: squares of side s = 2^k; square (i, j) (column i, row j, rows going
// down) is split by the diagonal from (i, j) to (i+1, j+1) when i + j is even, else by the
// diagonal from (i+1, j) to (i, j+1) -- the 4-8 mesh's alternating ("union jack") diagonals.
// Every sample is compared with the linear interpolation over the triangle that contains it.
static float lodErrorImpl(const uint16_t* samples, int tileLog, hfpac::SampleType type, int k,
                          bool skip_nodata, uint16_t nodata) {
  if (k <= 0) return 0.f;
  const int p = (1 << tileLog) + 1;
  const int s = 1 << k;
  const int squares = 1 << (tileLog - k);
  const double inv = 1.0 / s;
  double worst = 0.0;
  for (int j = 0; j < squares; ++j) {
    for (int i = 0; i < squares; ++i) {
      const int x0 = i * s, y0 = j * s;
      const double h00 = value(samples[size_t(y0) * p + x0], type);
      const double h10 = value(samples[size_t(y0) * p + x0 + s], type);
      const double h01 = value(samples[size_t(y0 + s) * p + x0], type);
      const double h11 = value(samples[size_t(y0 + s) * p + x0 + s], type);
      const bool main_diagonal = ((i + j) & 1) == 0;
      for (int y = 0; y <= s; ++y) {
        const double v = y * inv;
        const uint16_t* row = samples + size_t(y0 + y) * p + x0;
        for (int x = 0; x <= s; ++x) {
          if (skip_nodata && row[x] == nodata) continue;
          const double u = x * inv;
          double h;
          if (main_diagonal) {
            h = u >= v ? h00 + u * (h10 - h00) + v * (h11 - h10)
                       : h00 + v * (h01 - h00) + u * (h11 - h01);
          } else {
            h = u + v <= 1.0 ? h00 + u * (h10 - h00) + v * (h01 - h00)
                             : h11 + (1.0 - u) * (h01 - h11) + (1.0 - v) * (h10 - h11);
          }
          worst = std::max(worst, std::fabs(value(row[x], type) - h));
        }
      }
    }
  }
  return float(worst);
}

float lodErrorAtStep(const uint16_t* samples, int tileLog, hfpac::SampleType type, int k) {
  return lodErrorImpl(samples, tileLog, type, k, false, 0);
}

void computeTileStats(const uint16_t* samples, int tileLog, hfpac::SampleType type,
                      bool hasNodata, uint16_t nodata, TileStats& out) {
  const int p = (1 << tileLog) + 1;
  const size_t n = size_t(p) * p;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  out.hasNodata = false;
  for (size_t i = 0; i < n; ++i) {
    if (hasNodata && samples[i] == nodata) {
      out.hasNodata = true;
      continue;
    }
    const double v = value(samples[i], type);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (lo > hi) lo = hi = value(nodata, type);  // every sample is nodata
  out.minSample = int32_t(lo);
  out.maxSample = int32_t(hi);
  out.lodError.assign(size_t(tileLog) + 1, 0.f);
  float envelope = 0.f;
  for (int k = 1; k <= tileLog; ++k) {
    envelope = std::max(envelope, lodErrorImpl(samples, tileLog, type, k, out.hasNodata, nodata));
    out.lodError[size_t(k)] = envelope;  // monotone: a coarser step never claims less error
  }
}

}  // namespace hfa
