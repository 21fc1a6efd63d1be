// layout.cpp - header serialisation and validation, geometry of a stream.
#include "codec/layout.h"

namespace hfpac::detail {
namespace {

void put16(uint8_t* p, uint16_t v) {
  p[0] = uint8_t(v);
  p[1] = uint8_t(v >> 8);
}
void put32(uint8_t* p, uint32_t v) {
  put16(p, uint16_t(v));
  put16(p + 2, uint16_t(v >> 16));
}
uint16_t get16(const uint8_t* p) { return uint16_t(p[0] | (p[1] << 8)); }

}  // namespace

void writeHeader(const Header& h, uint8_t* out) {
  put32(out + 0, kMagic);
  out[4] = h.version;
  out[5] = h.flags;
  out[6] = h.segLog;
  out[7] = h.uniformBits;
  put16(out + 8, h.width);
  put16(out + 10, h.height);
  put16(out + 12, h.base);
  out[14] = h.cornerBits;
  out[15] = h.edgeBits;
  out[16] = h.centreBits;
  out[17] = h.highBits;
  out[18] = h.countBits;
  out[19] = 0;
  put32(out + 20, h.layer1Bytes);
  put32(out + 24, h.layer2Bytes);
  put32(out + 28, h.layer3Bytes);
}

Status parseHeader(const uint8_t* data, size_t size, Header& h) {
  if (data == nullptr || size < size_t(kHeaderBytes)) return Status::TruncatedHeader;
  if (loadWordLE(data) != kMagic) return Status::BadMagic;
  h.version = data[4];
  if (h.version > kVersion) return Status::UnsupportedVersion;
  if (h.version == 0) return Status::InvalidHeader;
  h.flags = data[5];
  h.segLog = data[6];
  h.uniformBits = data[7];
  h.width = get16(data + 8);
  h.height = get16(data + 10);
  h.base = get16(data + 12);
  h.cornerBits = data[14];
  h.edgeBits = data[15];
  h.centreBits = data[16];
  h.highBits = data[17];
  h.countBits = data[18];
  h.layer1Bytes = loadWordLE(data + 20);
  h.layer2Bytes = loadWordLE(data + 24);
  h.layer3Bytes = loadWordLE(data + 28);

  if ((h.flags & ~kKnownFlags) != 0 || data[19] != 0) return Status::InvalidHeader;
  if (h.width < 1 || h.width > kMaxPatchSide || h.height < 1 || h.height > kMaxPatchSide)
    return Status::InvalidHeader;
  if (h.isStored()) {
    // Stored patch: layer 3 alone, 16 bits per sample in raster order.
    if (h.isFlat() || h.perAreaBits() || h.isMasked() || h.isRbuc() || h.segLog || h.uniformBits != kMaxBits || h.base ||
        h.cornerBits || h.edgeBits || h.centreBits || h.highBits || h.countBits ||
        h.layer1Bytes || h.layer2Bytes)
      return Status::InvalidHeader;
    if (h.layer3Bytes != sectionBytes(uint64_t(h.width) * h.height * kMaxBits))
      return Status::SizeMismatch;
    if (uint64_t(kHeaderBytes) + h.layer3Bytes > size) return Status::TruncatedStream;
    return Status::Ok;
  }
  if (h.isFlat()) {
    // A flat patch is the header alone; everything else must be zero so that one patch has
    // exactly one encoding.
    if (h.perAreaBits() || h.isMasked() || h.isRbuc() || h.segLog || h.uniformBits || h.cornerBits || h.edgeBits ||
        h.centreBits || h.highBits || h.countBits || h.layer1Bytes || h.layer2Bytes ||
        h.layer3Bytes)
      return Status::InvalidHeader;
    return Status::Ok;
  }
  if (h.segLog < kMinSegLog || h.segLog > kMaxSegLog) return Status::InvalidHeader;
  if (h.uniformBits > kMaxBits || (h.perAreaBits() && h.uniformBits != 0))
    return Status::InvalidHeader;
  // 2DRBUC replaces the area table, the prominent list and the fixed-width lows.
  if (h.isRbuc() && (h.perAreaBits() || h.uniformBits || h.highBits || h.countBits))
    return Status::InvalidHeader;
  if (h.cornerBits > kMaxCornerBits || h.edgeBits > kMaxOffsetBits ||
      h.centreBits > kMaxOffsetBits || h.highBits > kMaxHighBits || h.countBits > kMaxCountBits)
    return Status::InvalidHeader;
  if ((h.layer1Bytes | h.layer2Bytes | h.layer3Bytes) & 3u) return Status::InvalidHeader;
  const uint64_t total =
      uint64_t(kHeaderBytes) + h.layer1Bytes + uint64_t(h.layer2Bytes) + h.layer3Bytes;
  if (total > size) return Status::TruncatedStream;
  const Geometry g = makeGeometry(h);
  if (h.layer1Bytes != sectionBytes(g.layer1Bits)) return Status::SizeMismatch;
  return Status::Ok;
}

}  // namespace hfpac::detail
