// reader.cpp - ArchiveReader: mmap, up-front validation of header, strings and index; payload
// access with bounds and CRC checks. Every check is against the file's real size, so a
// truncated or bit-flipped archive gives a message, never an out-of-bounds read.
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <atomic>
#include <cstring>
#include <mutex>

#include "archive/archive.h"
#include "archive/format.h"
#include "codec/ans.h"

namespace hfa {

using namespace detail;

namespace {

// The file under a mapping can shrink (another program truncates or rewrites it in place):
// touching a page past its new end raises SIGBUS. The copy functions read the mapping only
// inside guardedCopy, a plain memcpy (no C++ object lives across it), and the SIGBUS handler
// jumps back out of it when the fault is one of ours; any other SIGBUS goes to the handler that
// was there before (a sanitizer's) or to the default action.
// volatile: the handler reads it, so the stores around the memcpy must not be merged away.
thread_local sigjmp_buf* volatile t_busGuard = nullptr;
struct sigaction g_previousBus;

void onSigbus(int sig, siginfo_t* info, void* context) {
  if (sigjmp_buf* guard = t_busGuard) siglongjmp(*guard, 1);
  if (g_previousBus.sa_flags & SA_SIGINFO) {
    if (g_previousBus.sa_sigaction) return g_previousBus.sa_sigaction(sig, info, context);
  } else if (g_previousBus.sa_handler != SIG_DFL && g_previousBus.sa_handler != SIG_IGN) {
    return g_previousBus.sa_handler(sig);
  }
  ::signal(SIGBUS, SIG_DFL);
  ::raise(SIGBUS);
}

void installSigbusGuard() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_sigaction = onSigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGBUS, &sa, &g_previousBus);
  });
}

// memcpy from the mapping; false when a page of it is gone (SIGBUS: the file shrank).
bool guardedCopy(uint8_t* dst, const uint8_t* src, size_t n) {
  sigjmp_buf guard;
  sigjmp_buf* const outer = t_busGuard;
  if (sigsetjmp(guard, 1)) {
    t_busGuard = outer;
    return false;
  }
  t_busGuard = &guard;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  std::memcpy(dst, src, n);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  t_busGuard = outer;
  return true;
}

std::string changedOnDisk(const std::string& what) {
  return what + ": the archive file changed on disk while open (truncated or rewritten); reopen it";
}

}  // namespace

ArchiveReader::~ArchiveReader() { close(); }

void ArchiveReader::close() {
  if (map_ && !source_) ::munmap(const_cast<uint8_t*>(map_), size_t(size_));
  source_.reset();  // a URL archive's mirror is the source's
  readOnce_.reset();
  remoteRead_ = 0;
  map_ = nullptr;
  size_ = 0;
  capacity_ = 0;
  entries_.clear();
  advised_.reset();
  levelFirst_.clear();
  header_ = Header();
  hasImagery_ = false;
  imagery_ = ImageryHeader();
  imageryEntries_.clear();
  imageryLevelFirst_.clear();
  imageryCapacity_ = 0;
}

std::string ArchiveReader::imageryTileName(size_t tile) const {
  if (tile >= imageryEntries_.size()) return "imagery tile #" + std::to_string(tile);
  const ImageryEntry& e = imageryEntries_[tile];
  return "imagery tile (k" + std::to_string(e.level) + ", x" + std::to_string(e.x) + ", y" +
         std::to_string(e.y) + ")";
}

std::string ArchiveReader::tileName(size_t tile) const {
  if (tile >= entries_.size()) return "tile #" + std::to_string(tile);
  const TileEntry& e = entries_[tile];
  return "tile (L" + std::to_string(e.level) + ", x" + std::to_string(e.x) + ", y" +
         std::to_string(e.y) + ")";
}

namespace {
std::string entryName(const TileEntry& e) {
  return "tile (L" + std::to_string(e.level) + ", x" + std::to_string(e.x) + ", y" +
         std::to_string(e.y) + ")";
}
bool readString(const uint8_t* p, uint64_t size, uint64_t& pos, std::string& s) {
  if (size - pos < 4) return false;
  const uint32_t len = get32(p + pos);
  pos += 4;
  if (size - pos < len) return false;
  s.assign(reinterpret_cast<const char*>(p + pos), len);
  pos += len;
  return true;
}
}  // namespace

bool ArchiveReader::open(const std::string& path, std::string& error, const HttpOptions* http) {
  installSigbusGuard();
  close();
  path_ = path;
  if (isUrl(path)) {
    std::string notes;
    const HttpOptions options = http ? *http : HttpOptions::fromEnvironment(&notes);
    source_ = openHttpSource(path, options, error);
    if (!source_) return false;
    if (source_->size() < kHeaderBytes) {
      error = "not an hfpack archive: " + std::to_string(source_->size()) + " bytes is shorter than the " +
              std::to_string(kHeaderBytes) + "-byte header";
      source_.reset();
      return false;
    }
    map_ = source_->data();
    size_ = source_->size();
    if (validate(error)) {
      readOnce_ = std::make_unique<std::atomic<uint8_t>[]>(entries_.size() + imageryEntries_.size());
      return true;
    }
    close();
    return false;
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = std::strerror(errno);
    return false;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    error = "not a regular file";
    ::close(fd);
    return false;
  }
  if (uint64_t(st.st_size) < kHeaderBytes) {
    ::close(fd);
    error = "not an hfpack archive: " + std::to_string(st.st_size) + " bytes is shorter than the " +
            std::to_string(kHeaderBytes) + "-byte header";
    return false;
  }
  void* m = ::mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (m == MAP_FAILED) {
    error = std::string("mmap failed: ") + std::strerror(errno);
    return false;
  }
  map_ = static_cast<const uint8_t*>(m);
  size_ = uint64_t(st.st_size);
  if (validate(error)) return true;
  close();
  return false;
}

bool ArchiveReader::validate(std::string& error) {
  // The caller closes on failure: ranges held below must be released while the source lives.
  auto fail = [&](const std::string& msg) {
    error = msg;
    return false;
  };

  // A URL archive's bytes are fetched (and held) before they are read; a local one's are there.
  std::string fetch_error;
  AcquiredRange head(source_.get(), 0, kHeaderBytes, fetch_error);
  if (!head.ok()) return fail(fetch_error);
  const uint8_t* h = map_;
  if (get32(h + kOffMagic) != kMagic) return fail("not an hfpack archive (bad magic)");
  const uint16_t version = get16(h + kOffVersion);
  if (version == 0 || version > kVersion)
    return fail("unsupported archive version " + std::to_string(version) + " (this build reads " +
                std::to_string(kVersion) + ")");
  if (get16(h + kOffHeaderBytes) != kHeaderBytes) return fail("corrupt header (header size)");
  if (crc32(h, kOffHeaderCrc) != get32(h + kOffHeaderCrc))
    return fail("corrupt header (checksum mismatch)");

  Header& hd = header_;
  hd.flags = get32(h + kOffFlags);
  hd.tileLog = h[kOffTileLog];
  hd.levels = h[kOffLevels];
  const uint8_t codec = h[kOffCodec];
  const uint8_t type = h[kOffSampleType];
  hd.width = get32(h + kOffWidth);
  hd.height = get32(h + kOffHeight);
  hd.nodata = get16(h + kOffNodata);
  for (int i = 0; i < 6; ++i) hd.geoTransform[i] = getF64(h + kOffGeo + 8 * i);
  hd.spacingX = getF64(h + kOffSpacingX);
  hd.spacingY = getF64(h + kOffSpacingY);
  hd.verticalScale = getF64(h + kOffVScale);
  hd.verticalOffset = getF64(h + kOffVOffset);
  hd.quantError = getF64(h + kOffQuantError);
  hd.filledSamples = get64(h + kOffFilled);
  hd.sourceValidSamples = get64(h + kOffValid);
  if (hd.tileLog < kMinTileLog || hd.tileLog > kMaxTileLog)
    return fail("corrupt header (tile size 2^" + std::to_string(hd.tileLog) + "+1)");
  if (hd.levels < 1 || hd.levels > kMaxLevels)
    return fail("corrupt header (" + std::to_string(hd.levels) + " levels)");
  if (codec > uint8_t(Codec::Auto)) return fail("unknown codec " + std::to_string(codec));
  hd.codec = Codec(codec);
  if (type > 1) return fail("corrupt header (sample type " + std::to_string(type) + ")");
  hd.sampleType = hfpac::SampleType(type);
  if (hd.width < 1 || hd.height < 1 || hd.width > (1u << 30) || hd.height > (1u << 30))
    return fail("corrupt header (extent " + std::to_string(hd.width) + " x " +
                std::to_string(hd.height) + ")");
  if (!(std::isfinite(hd.verticalScale) && hd.verticalScale > 0 && std::isfinite(hd.verticalOffset)))
    return fail("corrupt header (vertical scale/offset)");
  const uint32_t eb = get32(h + kOffEntryBytes);
  if (eb != entryBytes(hd.tileLog)) return fail("corrupt header (index entry size)");

  const uint64_t file_size = get64(h + kOffFileSize);
  const uint64_t strings_offset = get64(h + kOffStringsOffset);
  const uint32_t strings_bytes = get32(h + kOffStringsBytes);
  const uint32_t tile_count = get32(h + kOffTileCount);
  const uint64_t index_offset = get64(h + kOffIndexOffset);
  const uint32_t capacity = get32(h + kOffIndexCapacity);
  const uint64_t payload_offset = get64(h + kOffPayloadOffset);
  const uint64_t payload_bytes = get64(h + kOffPayloadBytes);
  // Layout: header | strings | index (capacity entries) | payloads; all within file_size.
  if (strings_offset != kHeaderBytes || index_offset != strings_offset + strings_bytes ||
      tile_count > capacity || index_offset + uint64_t(capacity) * eb > payload_offset ||
      payload_offset > file_size || payload_bytes != file_size - payload_offset)
    return fail("corrupt header (section offsets)");
  capacity_ = capacity;
  const uint64_t index_end = index_offset + uint64_t(tile_count) * eb;
  if (index_end > size_)
    return fail("truncated: the file has " + std::to_string(size_) + " of " +
                std::to_string(file_size) + " bytes, the tile index is incomplete");
  AcquiredRange index(source_.get(), strings_offset, index_end - strings_offset, fetch_error);
  if (!index.ok()) return fail(fetch_error);
  if (crc32(map_ + strings_offset, size_t(index_end - strings_offset)) != get32(h + kOffIndexCrc)) {
    if (source_) source_->invalidate(0, index_end);  // fetched again by the next open
    return fail("corrupt tile index (checksum mismatch)");
  }

  uint64_t pos = strings_offset;
  const uint64_t strings_end = strings_offset + strings_bytes;
  if (!readString(map_, strings_end, pos, hd.crsWkt) ||
      !readString(map_, strings_end, pos, hd.verticalUnits) ||
      !readString(map_, strings_end, pos, hd.codecOptions))
    return fail("corrupt header strings");

  entries_.resize(tile_count);
  advised_ = std::make_unique<std::atomic<uint8_t>[]>(tile_count);  // value-initialised: 0
  levelFirst_.assign(size_t(hd.levels) + 1, 0);
  const size_t raw_size = size_t(hd.tileSize()) * size_t(hd.tileSize()) * 2;
  for (uint32_t i = 0; i < tile_count; ++i) {
    TileEntry& e = entries_[i];
    readEntry(map_ + index_offset + uint64_t(i) * eb, hd.tileLog, e);
    const std::string name = entryName(e);
    if (e.level >= hd.levels) return fail(name + ": level beyond the archive's levels");
    if (e.x >= hd.tilesX(e.level) || e.y >= hd.tilesY(e.level))
      return fail(name + ": outside the level's tile grid");
    if (i > 0) {
      const TileEntry& a = entries_[i - 1];
      const bool ordered = a.level != e.level ? a.level < e.level
                           : a.y != e.y       ? a.y < e.y
                                              : a.x < e.x;
      if (!ordered) return fail(name + ": tile index not sorted by (level, y, x)");
    }
    if (uint8_t(e.codec) > uint8_t(Codec::Hfan))  // auto names the header's mix, never a tile
      return fail(name + ": unknown codec " + std::to_string(int(e.codec)));
    if (!tileCodecAllowed(hd.codec, e.codec))
      return fail(name + ": codec " + codecName(e.codec) + " in an archive of codec " + codecName(hd.codec));
    if (e.codec == Codec::Raw && e.size != raw_size) return fail(name + ": raw payload size");
    if (e.offset < payload_offset || e.offset > file_size || e.size > file_size - e.offset)
      return fail(name + ": payload outside the payload area");
    if (e.minSample > e.maxSample) return fail(name + ": min height above max height");
    for (float v : e.lodError)
      if (!(std::isfinite(v) && v >= 0.f)) return fail(name + ": invalid LOD error");
    levelFirst_[size_t(e.level) + 1] = i + 1;
  }
  for (size_t l = 1; l < levelFirst_.size(); ++l)
    levelFirst_[l] = std::max(levelFirst_[l], levelFirst_[l - 1]);

  // Version 2: the optional imagery section (version 1 has zeros there, which means none).
  const uint64_t imagery_offset = version >= 2 ? get64(h + kOffImageryOffset) : 0;
  if (imagery_offset != 0) {
    if (imagery_offset < index_offset + uint64_t(capacity) * eb)
      return fail("corrupt header (imagery section offset)");
    std::string im_error;
    if (!openImagery(imagery_offset, get32(h + kOffImageryBytes), get32(h + kOffImageryCrc),
                     payload_offset, file_size, im_error))
      return fail(im_error);
  }

  if (size_ != file_size) {
    if (size_ > file_size)
      return fail("corrupt: " + std::to_string(size_ - file_size) +
                  " unexpected bytes after the end of the archive");
    // Name the first tile that the truncation cut off.
    size_t cut = 0, first = entries_.size();
    for (size_t i = 0; i < entries_.size(); ++i)
      if (entries_[i].offset + entries_[i].size > size_) {
        ++cut;
        if (first == entries_.size()) first = i;
      }
    std::string msg = "truncated: the file has " + std::to_string(size_) + " of " +
                      std::to_string(file_size) + " bytes";
    if (cut > 0) {
      msg += "; " + entryName(entries_[first]) + " lies past the end";
      if (cut > 1) msg += " (and " + std::to_string(cut - 1) + " more tiles)";
    }
    return fail(msg);
  }
  return true;
}

bool ArchiveReader::openImagery(uint64_t offset, uint32_t bytes, uint32_t crc,
                                uint64_t payloadOffset, uint64_t fileSize, std::string& error) {
  auto fail = [&](const std::string& msg) {
    error = msg;
    return false;
  };
  if (offset > payloadOffset || payloadOffset - offset < kImDescriptorBytes || bytes < kImDescriptorBytes)
    return fail("corrupt imagery section (offset)");
  if (offset + bytes > size_)
    return fail("truncated: the file has " + std::to_string(size_) + " of " + std::to_string(fileSize) +
                " bytes, the imagery index is incomplete");
  std::string fetch_error;
  AcquiredRange held(source_.get(), offset, bytes, fetch_error);
  if (!held.ok()) return fail(fetch_error);
  const uint8_t* d = map_ + offset;
  if (crc32(d, bytes) != crc) {
    if (source_) source_->invalidate(offset, bytes);
    return fail("corrupt imagery index (checksum mismatch)");
  }
  if (get32(d + kImMagic) != kImageryMagic) return fail("corrupt imagery section (bad magic)");
  ImageryHeader& im = imagery_;
  const uint8_t codec = d[kImCodec];
  // Readers before bc1 stop here on a bc1 archive, with this same one-line error (docs/archive.md 6).
  if (codec > uint8_t(ImageryCodec::Bc1)) return fail("unknown imagery codec " + std::to_string(codec));
  im.codec = ImageryCodec(codec);
  im.finerLevels = d[kImFinerLevels];
  im.levels = d[kImLevels];
  im.quality = d[kImQuality];
  im.tileSize = get16(d + kImTileSize);
  im.border = get16(d + kImBorder);
  im.flags = get32(d + kImFlags);
  im.texelsPerSample = getF64(d + kImTexelsPerSample);
  const uint32_t tables = get32(d + kImTablesBytes);
  const uint32_t count = get32(d + kImTileCount);
  const uint32_t capacity = get32(d + kImCapacity);
  if (im.tileSize < 16 || im.tileSize > 4096 || im.tileSize % 16 || im.border * 4 >= im.tileSize ||
      im.finerLevels > kMaxImageryFinerLevels || im.levels != header_.levels + im.finerLevels ||
      im.quality > 100 || get32(d + kImEntryBytes) != kImageryEntryBytes || count > capacity)
    return fail("corrupt imagery section (descriptor)");
  const uint64_t padded = imageryTablesPadded(tables);
  if (uint64_t(bytes) != kImDescriptorBytes + padded + uint64_t(count) * kImageryEntryBytes ||
      offset + kImDescriptorBytes + padded + uint64_t(capacity) * kImageryEntryBytes > payloadOffset)
    return fail("corrupt imagery section (sizes)");
  im.jpegTables.assign(d + kImDescriptorBytes, d + kImDescriptorBytes + tables);
  imageryEntries_.resize(count);
  imageryLevelFirst_.assign(size_t(im.levels) + 1, 0);
  const uint64_t raw_size = uint64_t(im.tileSize) * uint64_t(im.tileSize) * 4;
  const uint64_t bc1_size = imageryBc1ChainBytes(im.tileSize);
  const uint8_t* entries = d + kImDescriptorBytes + padded;
  for (uint32_t i = 0; i < count; ++i) {
    ImageryEntry& e = imageryEntries_[i];
    readImageryEntry(entries + uint64_t(i) * kImageryEntryBytes, e);
    const std::string name = "imagery tile (k" + std::to_string(e.level) + ", x" + std::to_string(e.x) +
                             ", y" + std::to_string(e.y) + ")";
    if (e.level >= im.levels) return fail(name + ": level beyond the imagery levels");
    if (e.x >= imageryTilesX(header_, im, e.level) || e.y >= imageryTilesY(header_, im, e.level))
      return fail(name + ": outside the level's tile grid");
    if (i > 0) {
      const ImageryEntry& a = imageryEntries_[i - 1];
      const bool ordered = a.level != e.level ? a.level < e.level : a.y != e.y ? a.y < e.y : a.x < e.x;
      if (!ordered) return fail(name + ": imagery index not sorted by (level, y, x)");
    }
    if (e.codec != ImageryCodec::Raw && e.codec != ImageryCodec::Jpeg && e.codec != ImageryCodec::Bc1)
      return fail(name + ": unknown codec " + std::to_string(int(e.codec)));
    if (e.codec == ImageryCodec::Raw && e.size != raw_size) return fail(name + ": raw payload size");
    if (e.codec == ImageryCodec::Bc1 && e.size != bc1_size)
      return fail(name + ": bc1 payload of " + std::to_string(e.size) + " bytes, not the " +
                  std::to_string(bc1_size) + " of a " + std::to_string(im.tileSize) + " x " +
                  std::to_string(im.tileSize) + " BC1 mip chain");
    if (e.codec == ImageryCodec::Jpeg && tables == 0) return fail(name + ": jpeg tile without tables");
    if (e.offset < payloadOffset || e.offset > fileSize || e.size > fileSize - e.offset)
      return fail(name + ": payload outside the payload area");
    imageryLevelFirst_[size_t(e.level) + 1] = i + 1;
  }
  for (size_t l = 1; l < imageryLevelFirst_.size(); ++l)
    imageryLevelFirst_[l] = std::max(imageryLevelFirst_[l], imageryLevelFirst_[l - 1]);
  hasImagery_ = true;
  imageryCapacity_ = capacity;
  return true;
}

void ArchiveReader::imageryLevelRange(int level, size_t& first, size_t& count) const {
  if (level < 0 || level >= imagery_.levels || imageryLevelFirst_.empty()) {
    first = count = 0;
    return;
  }
  first = imageryLevelFirst_[size_t(level)];
  count = imageryLevelFirst_[size_t(level) + 1] - first;
}

long ArchiveReader::findImagery(int level, uint32_t x, uint32_t y) const {
  size_t first, count;
  imageryLevelRange(level, first, count);
  auto begin = imageryEntries_.begin() + long(first), end = begin + long(count);
  auto it = std::lower_bound(begin, end, std::make_pair(y, x),
                             [](const ImageryEntry& e, const std::pair<uint32_t, uint32_t>& k) {
                               return e.y != k.first ? e.y < k.first : e.x < k.second;
                             });
  if (it == end || it->x != x || it->y != y) return -1;
  return long(it - imageryEntries_.begin());
}

bool ArchiveReader::imageryPayload(size_t tile, const uint8_t*& data, size_t& size,
                                   std::string& error) const {
  if (tile >= imageryEntries_.size()) {
    error = "imagery tile #" + std::to_string(tile) + " does not exist";
    return false;
  }
  if (source_) {  // a copy: the mirror's blocks may be evicted once released
    thread_local std::vector<uint8_t> copy;
    if (!copyImageryPayload(tile, copy, error)) return false;
    data = copy.data();
    size = copy.size();
    return true;
  }
  const ImageryEntry& e = imageryEntries_[tile];
  if (limiter_) limiter_->acquire(e.size);
  data = map_ + e.offset;  // bounds validated in open()
  size = e.size;
  if (crc32(data, size) != e.crc) {
    error = imageryTileName(tile) + ": checksum mismatch (corrupt payload)";
    return false;
  }
  return true;
}

bool ArchiveReader::copyPayload(size_t tile, std::vector<uint8_t>& out, std::string& error,
                                uint32_t alreadyRead) const {
  if (tile >= entries_.size()) {
    error = "tile #" + std::to_string(tile) + " does not exist";
    return false;
  }
  const TileEntry& e = entries_[tile];
  if (limiter_ && e.size > alreadyRead) limiter_->acquire(e.size - alreadyRead);
  countRemoteRead(tile);
  for (int attempt = 0;; ++attempt) {
    out.resize(e.size);
    if (!copyOut(out.data(), e.offset, e.size, tileName(tile), error)) return false;
    if (faults_) {
      size_t n = out.size();
      if (faults_->apply(out.data(), n) == FaultInjector::Fault::Eio) {
        error = tileName(tile) + ": read failed (injected I/O error)";
        return false;
      }
      out.resize(n);
    }
    if (out.size() != e.size || crc32(out.data(), out.size()) != e.crc) {
      // A URL archive fetches the bytes once more: a body corrupted on the way, or a cache
      // block lost in a crash, is then repaired; a corrupt file on the server is not.
      if (source_ && attempt == 0) {
        source_->invalidate(e.offset, e.size);
        continue;
      }
      error = tileName(tile) + ": checksum mismatch (corrupt payload)";
      return false;
    }
    return true;
  }
}

bool ArchiveReader::copyOut(uint8_t* dst, uint64_t offset, uint64_t n, const std::string& what,
                            std::string& error) const {
  std::string fetch_error;
  AcquiredRange held(source_.get(), offset, n, fetch_error);
  if (!held.ok()) {
    error = what + ": " + fetch_error;
    return false;
  }
  if (!guardedCopy(dst, map_ + offset, size_t(n))) {
    error = changedOnDisk(what);
    return false;
  }
  return true;
}

void ArchiveReader::setReadLimiter(std::shared_ptr<ReadLimiter> limiter) {
  if (source_) {
    source_->setLimiter(std::move(limiter));  // the link to the server, not the payload copies
    limiter_.reset();
  } else {
    limiter_ = std::move(limiter);
  }
}

bool ArchiveReader::copyLossyPayload(size_t tile, std::vector<uint8_t>& out, uint32_t& prefixBytes,
                                     std::string& error) const {
  prefixBytes = 0;
  if (tile >= entries_.size()) {
    error = "tile #" + std::to_string(tile) + " does not exist";
    return false;
  }
  const TileEntry& e = entries_[tile];
  const int p = header_.tileSize();
  // The stream header first (its layer sizes are little-endian u32 at bytes 20 and 24,
  // docs/format.md 2.1), then header + layers 1 + 2 into a payload-sized buffer whose layer 3
  // stays zero: readInfo and the L12 decode read nothing past layer 2 (a masked stream's mask
  // value is the first word of layer 2), all inside `out`.
  uint8_t head[hfpac::kHeaderBytes] = {};
  const bool haveHead = e.size >= sizeof head && isHfpacCodec(e.codec);  // raw, hfan: no layers
  countRemoteRead(tile);
  if (haveHead && !copyOut(head, e.offset, sizeof head, tileName(tile), error)) return false;
  const uint64_t part = haveHead ? uint64_t(sizeof head) + get32(head + 20) + get32(head + 24) : 0;
  hfpac::PatchInfo info;
  bool layered = haveHead && part < e.size;
  if (layered) {
    out.assign(e.size, 0);
    if (!copyOut(out.data(), e.offset, part, tileName(tile), error)) return false;
    layered = hfpac::readInfo(out.data(), out.size(), info) == hfpac::Status::Ok && !info.flat && !info.stored &&
              !info.rbuc && info.width == p && info.height == p && info.type == header_.sampleType &&
              uint64_t(info.layer1Bytes) + info.layer2Bytes == part;
  }
  if (!layered) {
    if (!copyPayload(tile, out, error)) return false;
    prefixBytes = uint32_t(out.size());
    return true;
  }
  prefixBytes = uint32_t(part);
  if (limiter_) limiter_->acquire(prefixBytes);
  size_t n = prefixBytes;
  if (faults_ && faults_->apply(out.data(), n, false) == FaultInjector::Fault::Eio) {
    error = tileName(tile) + ": read failed (injected I/O error)";
    return false;
  }
  return true;
}

bool ArchiveReader::copyImageryPayload(size_t tile, std::vector<uint8_t>& out, std::string& error) const {
  if (tile >= imageryEntries_.size()) {
    error = "imagery tile #" + std::to_string(tile) + " does not exist";
    return false;
  }
  const ImageryEntry& e = imageryEntries_[tile];
  if (limiter_) limiter_->acquire(e.size);
  countRemoteRead(entries_.size() + tile);
  for (int attempt = 0;; ++attempt) {
    out.resize(e.size);
    if (!copyOut(out.data(), e.offset, e.size, imageryTileName(tile), error)) return false;
    if (crc32(out.data(), out.size()) != e.crc) {
      if (source_ && attempt == 0) {  // fetched once more, as copyPayload does
        source_->invalidate(e.offset, e.size);
        continue;
      }
      error = imageryTileName(tile) + ": checksum mismatch (corrupt payload)";
      return false;
    }
    return true;
  }
}

void ArchiveReader::levelRange(int level, size_t& first, size_t& count) const {
  if (level < 0 || level >= header_.levels || levelFirst_.empty()) {
    first = count = 0;
    return;
  }
  first = levelFirst_[size_t(level)];
  count = levelFirst_[size_t(level) + 1] - first;
}

long ArchiveReader::find(int level, uint32_t x, uint32_t y) const {
  size_t first, count;
  levelRange(level, first, count);
  auto begin = entries_.begin() + long(first), end = begin + long(count);
  auto it = std::lower_bound(begin, end, std::make_pair(y, x),
                             [](const TileEntry& e, const std::pair<uint32_t, uint32_t>& k) {
                               return e.y != k.first ? e.y < k.first : e.x < k.second;
                             });
  if (it == end || it->x != x || it->y != y) return -1;
  return long(it - entries_.begin());
}

bool ArchiveReader::payload(size_t tile, const uint8_t*& data, size_t& size,
                            std::string& error, uint32_t alreadyRead) const {
  if (tile >= entries_.size()) {
    error = "tile #" + std::to_string(tile) + " does not exist";
    return false;
  }
  if (source_) {  // a copy: the mirror's blocks may be evicted once released
    thread_local std::vector<uint8_t> copy;
    if (!copyPayload(tile, copy, error, alreadyRead)) return false;
    data = copy.data();
    size = copy.size();
    return true;
  }
  const TileEntry& e = entries_[tile];
  if (limiter_ && e.size > alreadyRead) limiter_->acquire(e.size - alreadyRead);
  data = map_ + e.offset;  // bounds validated in open()
  size = e.size;
  if (crc32(data, size) != e.crc) {
    error = tileName(tile) + ": checksum mismatch (corrupt payload)";
    return false;
  }
  return true;
}

bool ArchiveReader::decodeTileLossy(size_t tile, uint16_t* dst, bool& exact, uint32_t& bytesRead,
                                    std::string& error) const {
  exact = true;
  bytesRead = 0;
  thread_local std::vector<uint8_t> bytes;
  if (!copyLossyPayload(tile, bytes, bytesRead, error)) return false;
  exact = bytesRead == bytes.size();
  return decodeBytes(tile, bytes, dst, exact ? hfpac::Layers::All : hfpac::Layers::L12, error);
}

bool ArchiveReader::decodeTile(size_t tile, uint16_t* dst, std::string& error, hfpac::Layers layers,
                               uint32_t alreadyRead) const {
  thread_local std::vector<uint8_t> bytes;
  return copyPayload(tile, bytes, error, alreadyRead) && decodeBytes(tile, bytes, dst, layers, error);
}

bool ArchiveReader::decodeBytes(size_t tile, const std::vector<uint8_t>& bytes, uint16_t* dst, hfpac::Layers layers,
                                std::string& error) const {
  const uint8_t* data = bytes.data();
  const size_t size = bytes.size();
  const int p = header_.tileSize();
  const size_t n = size_t(p) * size_t(p);
  const TileEntry& e = entries_[tile];
  if (e.codec == Codec::Raw) {
    if (size < 2 * n) {
      error = tileName(tile) + ": raw payload too short";
      return false;
    }
    for (size_t i = 0; i < n; ++i) dst[i] = get16(data + 2 * i);
    return true;
  }
  if (e.codec == Codec::Hfan) {  // lossless only: every layer count decodes exactly
    hfpac::AnsInfo info;
    hfpac::Status s = hfpac::ansReadInfo(data, size, info);
    if (s == hfpac::Status::Ok && (info.width != p || info.height != p || info.type != header_.sampleType)) {
      error = tileName(tile) + ": patch geometry or sample type disagrees with the header";
      return false;
    }
    if (s == hfpac::Status::Ok) s = hfpac::ansDecode(data, size, dst, size_t(p), n);
    if (s != hfpac::Status::Ok) {
      // statusMessage speaks of HFPaC streams: name the codec and the cause instead.
      error = tileName(tile) + ": corrupt hfan payload (" +
              (s == hfpac::Status::InvalidHeader    ? std::string("bad header or tables")
               : s == hfpac::Status::TruncatedStream ? std::string("truncated")
               : s == hfpac::Status::OutOfRange      ? std::string("sample outside the sample type or equal to the mask")
                                                     : std::string(hfpac::statusMessage(s))) +
              ")";
      return false;
    }
    return true;
  }
  hfpac::PatchInfo info;
  hfpac::Status s = hfpac::readInfo(data, size, info);
  if (s == hfpac::Status::Ok &&
      (info.width != p || info.height != p || info.type != header_.sampleType)) {
    error = tileName(tile) + ": patch geometry or sample type disagrees with the header";
    return false;
  }
  if (s == hfpac::Status::Ok) s = hfpac::decode(data, size, dst, size_t(p), n, layers);
  if (s != hfpac::Status::Ok) {
    error = tileName(tile) + ": " + hfpac::statusMessage(s);
    return false;
  }
  return true;
}

void ArchiveReader::willNeed(const size_t* tiles, size_t count) const {
  if (source_) {  // one batch of range requests, adjacent tiles coalesced (http_source.h)
    std::vector<ByteRange> ranges;
    ranges.reserve(count);
    for (size_t k = 0; k < count; ++k)
      if (tiles[k] < entries_.size()) ranges.push_back({entries_[tiles[k]].offset, entries_[tiles[k]].size});
    source_->prefetch(ranges.data(), ranges.size());
    return;
  }
  if (!map_ || !advised_) return;
  static const long page = ::sysconf(_SC_PAGESIZE);
  if (page <= 0) return;
  for (size_t k = 0; k < count; ++k) {
    const size_t t = tiles[k];
    if (t >= entries_.size() || advised_[t].exchange(1, std::memory_order_relaxed)) continue;
    const uint64_t first = entries_[t].offset / uint64_t(page) * uint64_t(page);
    const uint64_t end = entries_[t].offset + entries_[t].size;
    ::madvise(const_cast<uint8_t*>(map_) + first, size_t(end - first), MADV_WILLNEED);
  }
}

void ArchiveReader::willNeedImagery(const size_t* tiles, size_t count) const {
  if (!map_) return;
  std::vector<ByteRange> ranges;
  ranges.reserve(count);
  for (size_t k = 0; k < count; ++k)
    if (tiles[k] < imageryEntries_.size())
      ranges.push_back({imageryEntries_[tiles[k]].offset, imageryEntries_[tiles[k]].size});
  if (source_) {
    source_->prefetch(ranges.data(), ranges.size());
    return;
  }
  static const long page = ::sysconf(_SC_PAGESIZE);
  if (page <= 0) return;
  for (const ByteRange& r : ranges) {
    const uint64_t first = r.offset / uint64_t(page) * uint64_t(page);
    ::madvise(const_cast<uint8_t*>(map_) + first, size_t(r.offset + r.size - first), MADV_WILLNEED);
  }
}

bool ArchiveReader::dropPageCache(std::string& error) const {
  if (!map_) {
    error = "archive not open";
    return false;
  }
  if (source_) {
    source_->clearCache();
    for (size_t t = 0; t < entries_.size() + imageryEntries_.size(); ++t) readOnce_[t].store(0, std::memory_order_relaxed);
    remoteRead_ = 0;
    return true;
  }
  if (advised_)
    for (size_t t = 0; t < entries_.size(); ++t) advised_[t].store(0, std::memory_order_relaxed);
  // Our own mapping first: mapped pages are not dropped from the page cache.
  ::madvise(const_cast<uint8_t*>(map_), size_t(size_), MADV_DONTNEED);
  const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = path_ + ": " + std::strerror(errno);
    return false;
  }
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
  return true;
}

double ArchiveReader::residentFraction() const {
  if (!map_ || size_ == 0) return -1;
  if (source_) return double(source_->stats().bytesResident) / double(size_);
  const long page = ::sysconf(_SC_PAGESIZE);
  if (page <= 0) return -1;
  const size_t pages = size_t((size_ + uint64_t(page) - 1) / uint64_t(page));
  std::vector<unsigned char> v(pages);
  if (::mincore(const_cast<uint8_t*>(map_), size_t(size_), v.data()) != 0) return -1;
  size_t n = 0;
  for (unsigned char c : v) n += c & 1;
  return double(n) / double(pages);
}

}  // namespace hfa
