// writer.cpp - ArchiveWriter: payloads appended to a temporary file, index and header written
// last, fsync, then an atomic rename. Every write is checked, so a full disk (ENOSPC) or a file
// size limit (EFBIG) is an error and the temporary file is removed.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "archive/archive.h"
#include "archive/format.h"
#include "archive/temp_file.h"

namespace hfa {

using namespace detail;

namespace {

std::vector<uint8_t> encodeStrings(const Header& h) {
  std::vector<uint8_t> out;
  for (const std::string* s : {&h.crsWkt, &h.verticalUnits, &h.codecOptions}) {
    uint8_t len[4];
    put32(len, uint32_t(s->size()));
    out.insert(out.end(), len, len + 4);
    out.insert(out.end(), s->begin(), s->end());
  }
  while (out.size() % 8) out.push_back(0);
  return out;
}

std::string dirOf(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}
}  // namespace

ArchiveWriter::~ArchiveWriter() { abort(); }

void ArchiveWriter::abort() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  if (!tmpPath_.empty()) {
    ::unlink(tmpPath_.c_str());
    tmpPath_.clear();
  }
}

bool ArchiveWriter::writeAt(uint64_t offset, const void* data, size_t size, std::string& error) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  while (size > 0) {
    const ssize_t n = ::pwrite(fd_, p, std::min<size_t>(size, size_t(1) << 30), off_t(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      error = "writing " + path_ + ": " + std::strerror(errno);
      return false;
    }
    if (n == 0) {
      error = "writing " + path_ + ": no progress (disk full?)";
      return false;
    }
    p += n;
    offset += uint64_t(n);
    size -= size_t(n);
  }
  return true;
}

bool ArchiveWriter::open(const std::string& path, const Header& header, size_t maxTiles,
                         std::string& error, const ImageryHeader* imagery, size_t maxImageryTiles) {
  abort();
  entries_.clear();
  imageryEntries_.clear();
  hasImagery_ = imagery != nullptr;
  imagery_ = imagery ? *imagery : ImageryHeader();
  maxImageryTiles_ = imagery ? maxImageryTiles : 0;
  if (hasImagery_) {
    imagery_.levels = header.levels + imagery_.finerLevels;
    const ImageryHeader& im = imagery_;
    if (im.tileSize < 16 || im.tileSize > 4096 || im.tileSize % 16 || im.border < 0 ||
        im.border * 4 >= im.tileSize || im.finerLevels < 0 ||
        im.finerLevels > kMaxImageryFinerLevels || im.levels > 255 || im.quality < 0 ||
        im.quality > 100 || maxImageryTiles > 0xffffffffu || im.jpegTables.size() > (1u << 20) ||
        uint8_t(im.codec) > uint8_t(ImageryCodec::Bc1)) {
      error = "invalid imagery geometry";
      return false;
    }
  }
  path_ = path;
  header_ = header;
  maxTiles_ = maxTiles;
  if (header.tileLog < kMinTileLog || header.tileLog > kMaxTileLog || header.levels < 1 ||
      header.levels > kMaxLevels || header.width < 1 || header.height < 1) {
    error = "invalid archive geometry";
    return false;
  }
  if (maxTiles > 0xffffffffu) {
    error = "too many tiles";
    return false;
  }
  fd_ = createWriterTemporary(path, tmpPath_, error);
  if (fd_ < 0) return false;
  const std::vector<uint8_t> strings = encodeStrings(header_);
  payloadStart_ = kHeaderBytes + strings.size() + uint64_t(maxTiles) * entryBytes(header.tileLog);
  payloadStart_ = (payloadStart_ + 7) & ~uint64_t(7);
  imageryOffset_ = 0;
  if (hasImagery_) {
    imageryOffset_ = payloadStart_;
    payloadStart_ += kImDescriptorBytes + imageryTablesPadded(imagery_.jpegTables.size()) +
                     uint64_t(maxImageryTiles_) * kImageryEntryBytes;
  }
  payloadEnd_ = payloadStart_;
  // Header placeholder (zero magic: a crash before finish() leaves nothing that opens).
  std::vector<uint8_t> zero(kHeaderBytes, 0);
  if (!writeAt(0, zero.data(), zero.size(), error) ||
      !writeAt(kHeaderBytes, strings.data(), strings.size(), error)) {
    abort();
    return false;
  }
  return true;
}

bool ArchiveWriter::addTile(TileEntry entry, const uint8_t* payload, size_t size,
                            std::string& error) {
  if (fd_ < 0) {
    error = "archive writer is not open";
    return false;
  }
  if (entries_.size() >= maxTiles_) {
    error = "more tiles than reserved in the index";
    return false;
  }
  if (uint8_t(entry.codec) > uint8_t(Codec::Hfan)) {  // auto is the header's, never a tile's
    error = "tile codec " + std::string(codecName(entry.codec)) + " cannot be stored in an index entry";
    return false;
  }
  if (!tileCodecAllowed(header_.codec, entry.codec)) {
    error = "tile codec " + std::string(codecName(entry.codec)) + " in an archive of codec " +
            codecName(header_.codec);
    return false;
  }
  if (!appendPayload(payload, size, "tile", entry.offset, entry.size, entry.crc, error)) return false;
  entries_.push_back(std::move(entry));
  return true;
}

bool ArchiveWriter::appendPayload(const uint8_t* payload, size_t size, const char* what, uint64_t& offset,
                                  uint32_t& storedSize, uint32_t& crc, std::string& error) {
  if (size > 0xffffffffu) {
    error = std::string(what) + " payload too large";
    return false;
  }
  offset = payloadEnd_;
  storedSize = uint32_t(size);
  crc = crc32(payload, size);
  if (!writeAt(payloadEnd_, payload, size, error)) return false;
  payloadEnd_ += size;
  return true;
}

bool ArchiveWriter::addImageryTile(ImageryEntry entry, const uint8_t* payload, size_t size,
                                   std::string& error) {
  if (fd_ < 0 || !hasImagery_) {
    error = fd_ < 0 ? "archive writer is not open" : "archive writer has no imagery section";
    return false;
  }
  if (imageryEntries_.size() >= maxImageryTiles_) {
    error = "more imagery tiles than reserved in the index";
    return false;
  }
  // What the reader refuses is refused here, so that no archive is written that cannot be opened.
  const std::string name = "imagery tile (k" + std::to_string(entry.level) + ", x" + std::to_string(entry.x) +
                           ", y" + std::to_string(entry.y) + ")";
  const uint64_t T = uint64_t(imagery_.tileSize);
  if (entry.codec == ImageryCodec::Raw && size != T * T * 4) {
    error = name + ": raw payload of " + std::to_string(size) + " bytes, not " + std::to_string(T * T * 4);
    return false;
  }
  if (entry.codec == ImageryCodec::Bc1 && size != imageryBc1ChainBytes(imagery_.tileSize)) {
    error = name + ": bc1 payload of " + std::to_string(size) + " bytes, not the " +
            std::to_string(imageryBc1ChainBytes(imagery_.tileSize)) + " of a BC1 mip chain";
    return false;
  }
  if (entry.codec == ImageryCodec::Jpeg && imagery_.jpegTables.empty()) {
    error = name + ": jpeg tile without JPEG tables in the imagery header";
    return false;
  }
  if (entry.codec != ImageryCodec::Raw && entry.codec != ImageryCodec::Jpeg && entry.codec != ImageryCodec::Bc1) {
    error = name + ": unknown codec " + std::to_string(int(entry.codec));
    return false;
  }
  if (!appendPayload(payload, size, "imagery tile", entry.offset, entry.size, entry.crc, error)) return false;
  imageryEntries_.push_back(entry);
  return true;
}

bool ArchiveWriter::finish(std::string& error) {
  if (fd_ < 0) {
    error = "archive writer is not open";
    return false;
  }
  std::sort(entries_.begin(), entries_.end(), [](const TileEntry& a, const TileEntry& b) {
    if (a.level != b.level) return a.level < b.level;
    if (a.y != b.y) return a.y < b.y;
    return a.x < b.x;
  });
  for (size_t i = 1; i < entries_.size(); ++i) {
    const TileEntry &a = entries_[i - 1], &b = entries_[i];
    if (a.level == b.level && a.x == b.x && a.y == b.y) {
      error = "tile (L" + std::to_string(a.level) + ", x" + std::to_string(a.x) + ", y" +
              std::to_string(a.y) + ") added twice";
      abort();
      return false;
    }
  }
  std::sort(imageryEntries_.begin(), imageryEntries_.end(), [](const ImageryEntry& a, const ImageryEntry& b) {
    if (a.level != b.level) return a.level < b.level;
    if (a.y != b.y) return a.y < b.y;
    return a.x < b.x;
  });
  for (size_t i = 1; i < imageryEntries_.size(); ++i) {
    const ImageryEntry &a = imageryEntries_[i - 1], &b = imageryEntries_[i];
    if (a.level == b.level && a.x == b.x && a.y == b.y) {
      error = "imagery tile (k" + std::to_string(a.level) + ", x" + std::to_string(a.x) + ", y" +
              std::to_string(a.y) + ") added twice";
      abort();
      return false;
    }
  }
  // The imagery section: descriptor, tables, used entries (the rest of the reserved room is 0).
  std::vector<uint8_t> imagery;
  if (hasImagery_) {
    const ImageryHeader& im = imagery_;
    const size_t tables = size_t(imageryTablesPadded(im.jpegTables.size()));
    uint8_t d[kImDescriptorBytes] = {};
    put32(d + kImMagic, kImageryMagic);
    d[kImCodec] = uint8_t(im.codec);
    d[kImFinerLevels] = uint8_t(im.finerLevels);
    d[kImLevels] = uint8_t(im.levels);
    d[kImQuality] = uint8_t(im.quality);
    put16(d + kImTileSize, uint16_t(im.tileSize));
    put16(d + kImBorder, uint16_t(im.border));
    put32(d + kImFlags, im.flags);
    put32(d + kImTablesBytes, uint32_t(im.jpegTables.size()));
    put32(d + kImTileCount, uint32_t(imageryEntries_.size()));
    put32(d + kImCapacity, uint32_t(maxImageryTiles_));
    put32(d + kImEntryBytes, kImageryEntryBytes);
    putF64(d + kImTexelsPerSample, im.texelsPerSample);
    imagery.insert(imagery.end(), d, d + kImDescriptorBytes);
    imagery.insert(imagery.end(), im.jpegTables.begin(), im.jpegTables.end());
    imagery.resize(kImDescriptorBytes + tables, 0);
    for (const ImageryEntry& e : imageryEntries_) {
      uint8_t entry[kImageryEntryBytes];
      writeImageryEntry(e, entry);
      imagery.insert(imagery.end(), entry, entry + kImageryEntryBytes);
    }
  }
  const int n = header_.tileLog;
  const uint32_t eb = entryBytes(n);
  const std::vector<uint8_t> strings = encodeStrings(header_);
  const uint64_t index_offset = kHeaderBytes + strings.size();
  std::vector<uint8_t> index(entries_.size() * eb);
  for (size_t i = 0; i < entries_.size(); ++i) writeEntry(entries_[i], n, index.data() + i * eb);
  std::vector<uint8_t> crc_input(strings);
  crc_input.insert(crc_input.end(), index.begin(), index.end());

  uint8_t h[kHeaderBytes] = {};
  put32(h + kOffMagic, kMagic);
  put16(h + kOffVersion, kVersion);
  put16(h + kOffHeaderBytes, uint16_t(kHeaderBytes));
  put64(h + kOffFileSize, payloadEnd_);
  put32(h + kOffFlags, header_.flags);
  h[kOffTileLog] = uint8_t(n);
  h[kOffLevels] = uint8_t(header_.levels);
  h[kOffCodec] = uint8_t(header_.codec);
  h[kOffSampleType] = uint8_t(header_.sampleType);
  put32(h + kOffWidth, header_.width);
  put32(h + kOffHeight, header_.height);
  put16(h + kOffNodata, header_.nodata);
  put32(h + kOffEntryBytes, eb);
  for (int i = 0; i < 6; ++i) putF64(h + kOffGeo + 8 * i, header_.geoTransform[i]);
  putF64(h + kOffSpacingX, header_.spacingX);
  putF64(h + kOffSpacingY, header_.spacingY);
  putF64(h + kOffVScale, header_.verticalScale);
  putF64(h + kOffVOffset, header_.verticalOffset);
  putF64(h + kOffQuantError, header_.quantError);
  put64(h + kOffFilled, header_.filledSamples);
  put64(h + kOffValid, header_.sourceValidSamples);
  put64(h + kOffStringsOffset, kHeaderBytes);
  put32(h + kOffStringsBytes, uint32_t(strings.size()));
  put32(h + kOffTileCount, uint32_t(entries_.size()));
  put64(h + kOffIndexOffset, index_offset);
  put32(h + kOffIndexCapacity, uint32_t(maxTiles_));
  put32(h + kOffIndexCrc, crc32(crc_input.data(), crc_input.size()));
  put64(h + kOffPayloadOffset, payloadStart_);
  put64(h + kOffPayloadBytes, payloadEnd_ - payloadStart_);
  if (hasImagery_) {
    put64(h + kOffImageryOffset, imageryOffset_);
    put32(h + kOffImageryBytes, uint32_t(imagery.size()));
    put32(h + kOffImageryCrc, crc32(imagery.data(), imagery.size()));
  }
  put32(h + kOffHeaderCrc, crc32(h, kOffHeaderCrc));

  // Payloads may not have reached the end of the reserved index region: extend the file so its
  // size is exactly what the header says.
  if (::ftruncate(fd_, off_t(payloadEnd_)) != 0) {
    error = "writing " + path_ + ": " + std::strerror(errno);
    abort();
    return false;
  }
  if (!writeAt(index_offset, index.data(), index.size(), error) ||
      (!imagery.empty() && !writeAt(imageryOffset_, imagery.data(), imagery.size(), error)) ||
      !writeAt(0, h, sizeof h, error)) {
    abort();
    return false;
  }
  if (::fsync(fd_) != 0) {
    error = "writing " + path_ + ": " + std::strerror(errno);
    abort();
    return false;
  }
  if (::close(fd_) != 0) {
    fd_ = -1;
    error = "writing " + path_ + ": " + std::strerror(errno);
    abort();
    return false;
  }
  fd_ = -1;
  if (::rename(tmpPath_.c_str(), path_.c_str()) != 0) {
    error = "cannot rename the temporary file onto " + path_ + ": " + std::strerror(errno);
    abort();
    return false;
  }
  tmpPath_.clear();
  const int dir = ::open(dirOf(path_).c_str(), O_RDONLY | O_DIRECTORY);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return true;
}

}  // namespace hfa
