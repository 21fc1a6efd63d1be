// format.h - byte layout of the .hfa header and index entries (internal; docs/archive.md).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "archive/archive.h"

namespace hfa {
namespace detail {

// Header field offsets (docs/archive.md, table "Header").
enum HeaderOffset : uint32_t {
  kOffMagic = 0, kOffVersion = 4, kOffHeaderBytes = 6, kOffFileSize = 8, kOffFlags = 16,
  kOffTileLog = 20, kOffLevels = 21, kOffCodec = 22, kOffSampleType = 23, kOffWidth = 24,
  kOffHeight = 28, kOffNodata = 32, kOffReserved34 = 34, kOffEntryBytes = 36, kOffGeo = 40,
  kOffSpacingX = 88, kOffSpacingY = 96, kOffVScale = 104, kOffVOffset = 112,
  kOffQuantError = 120, kOffFilled = 128, kOffValid = 136, kOffStringsOffset = 144,
  kOffStringsBytes = 152, kOffTileCount = 156, kOffIndexOffset = 160, kOffIndexCapacity = 168,
  kOffIndexCrc = 172, kOffPayloadOffset = 176, kOffPayloadBytes = 184,
  // version 2: the imagery section (0 = none)
  kOffImageryOffset = 192, kOffImageryBytes = 200, kOffImageryCrc = 204, kOffHeaderCrc = 252,
};

// Imagery section (docs/archive.md section 5): a 64-byte descriptor, the JPEG tables (padded to
// 8), then `capacity` entries of kImageryEntryBytes.
enum ImageryOffset : uint32_t {
  kImMagic = 0, kImCodec = 4, kImFinerLevels = 5, kImLevels = 6, kImQuality = 7,
  kImTileSize = 8, kImBorder = 10, kImFlags = 12, kImTablesBytes = 16, kImTileCount = 20,
  kImCapacity = 24, kImEntryBytes = 28, kImTexelsPerSample = 32, kImDescriptorBytes = 64,
};
inline uint64_t imageryTablesPadded(uint64_t bytes) { return (bytes + 7) & ~uint64_t(7); }
void writeImageryEntry(const ImageryEntry& e, uint8_t* p);
void readImageryEntry(const uint8_t* p, ImageryEntry& e);

inline void put16(uint8_t* p, uint16_t v) { p[0] = uint8_t(v); p[1] = uint8_t(v >> 8); }
inline void put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = uint8_t(v >> (8 * i));
}
inline void put64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = uint8_t(v >> (8 * i));
}
inline void putF64(uint8_t* p, double d) {
  uint64_t v;
  std::memcpy(&v, &d, 8);
  put64(p, v);
}
inline void putF32(uint8_t* p, float f) {
  uint32_t v;
  std::memcpy(&v, &f, 4);
  put32(p, v);
}
inline uint16_t get16(const uint8_t* p) { return uint16_t(p[0] | (p[1] << 8)); }
inline uint32_t get32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
inline uint64_t get64(const uint8_t* p) { return uint64_t(get32(p)) | uint64_t(get32(p + 4)) << 32; }
inline double getF64(const uint8_t* p) {
  const uint64_t v = get64(p);
  double d;
  std::memcpy(&d, &v, 8);
  return d;
}
inline float getF32(const uint8_t* p) {
  const uint32_t v = get32(p);
  float f;
  std::memcpy(&f, &v, 4);
  return f;
}

inline uint32_t entryBytes(int tileLog) { return kEntryFixedBytes + 4u * uint32_t(tileLog + 1); }

void writeEntry(const TileEntry& e, int tileLog, uint8_t* p);
void readEntry(const uint8_t* p, int tileLog, TileEntry& e);

}  // namespace detail
}  // namespace hfa
