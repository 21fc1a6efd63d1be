// part.cpp - the shard layout, the payload order, and the part file (docs/sharded-packing.md).
#include "part.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

#include "archive/format.h"
#include "archive/temp_file.h"

namespace hfpack {

namespace {

// Little-endian fields and index entries as the archive writes them (archive/format.h).
using hfa::detail::get16;
using hfa::detail::get32;
using hfa::detail::get64;
using hfa::detail::getF64;
using hfa::detail::put16;
using hfa::detail::put32;
using hfa::detail::put64;
using hfa::detail::putF64;

// The fixed header (256 bytes; docs/sharded-packing.md).
constexpr char kMagic[8] = {'H', 'F', 'A', 'P', 'A', 'R', 'T', '\0'};
constexpr uint32_t kVersion = 1;
enum : uint32_t {
  kOffMagic = 0, kOffVersion = 8, kOffShard = 12, kOffShards = 16, kOffSplit = 20, kOffTileLog = 24,
  kOffFirst = 32, kOffEnd = 40, kOffValid = 48, kOffFilled = 56, kOffMeasured = 64, kOffPayloadBytes = 72,
  kOffPlan = 80, kOffPlanBytes = 88, kOffPlanCrc = 92, kOffTiles = 96, kOffTileCount = 104,
  kOffTilesCrc = 108, kOffCoarse = 112, kOffCoarseBytes = 120, kOffCoarseRuns = 128, kOffCoarseCrc = 132,
  kOffFileSize = 136, kOffHeaderCrc = 252, kHeaderBytes = 256,
};
// A part's tile records are archive index entries (hfa::detail::writeEntry / readEntry).
uint32_t tileRecordBytes(int tileLog) { return hfa::detail::entryBytes(tileLog); }

uint64_t coarseRunBytes(size_t count) { return (12 + 3 * uint64_t(count) + 3) & ~uint64_t(3); }

}  // namespace

// ---- plan ----

namespace {

const char kPlanFirstLine[] = "hfpack-part-plan 1";

// Bytes outside printable ASCII, '%' and '=' as %XX: one line per value, any bytes.
std::string escape(const std::string& v) {
  std::string out;
  for (unsigned char c : v) {
    if (c < 0x20 || c > 0x7e || c == '%') {
      char buf[4];
      snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  return out;
}

bool unescape(const std::string& v, std::string& out) {
  out.clear();
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] != '%') {
      out += v[i];
      continue;
    }
    if (i + 2 >= v.size()) return false;
    unsigned x = 0;
    if (sscanf(v.c_str() + i + 1, "%2x", &x) != 1) return false;
    out += char(x);
    i += 2;
  }
  return true;
}

std::string hex(double d) {
  char buf[64];
  snprintf(buf, sizeof buf, "%a", d);
  return buf;
}

bool parseDoubles(const std::string& v, double* out, int n) {
  const char* s = v.c_str();
  for (int k = 0; k < n; ++k) {
    char* end = nullptr;
    out[k] = std::strtod(s, &end);
    if (end == s) return false;
    s = end;
    if (k + 1 < n) {
      if (*s != ',') return false;
      ++s;
    }
  }
  return *s == '\0';
}

bool parseInteger(const std::string& v, long long lo, long long hi, long long& out) {
  char* end = nullptr;
  errno = 0;
  out = std::strtoll(v.c_str(), &end, 10);
  return !v.empty() && *end == '\0' && errno == 0 && out >= lo && out <= hi;
}

}  // namespace

std::string planText(const Plan& p) {
  const hfa::Header& h = p.header;
  std::string t = std::string(kPlanFirstLine) + "\n";
  auto line = [&](const std::string& k, const std::string& v) { t += k + "=" + v + "\n"; };
  line("shards", std::to_string(p.shards));
  line("split", std::to_string(p.split));
  for (const auto& kv : p.extra) line(kv.first, escape(kv.second));
  line("encode.segment", std::to_string(p.segment));
  line("encode.bits", std::to_string(p.bits));
  line("encode.keep_nodata", p.keepNodata ? "1" : "0");
  line("encode.nodata_sample", std::to_string(p.nodataSample));
  line("source.band_scale", hex(p.bandScale));
  line("source.quant_max_error", hex(p.quantMaxError));
  line("header.flags", std::to_string(h.flags));
  line("header.tile_log", std::to_string(h.tileLog));
  line("header.levels", std::to_string(h.levels));
  line("header.codec", std::to_string(int(h.codec)));
  line("header.sample_type", std::to_string(int(h.sampleType)));
  line("header.width", std::to_string(h.width));
  line("header.height", std::to_string(h.height));
  line("header.nodata", std::to_string(h.nodata));
  std::string g;
  for (int i = 0; i < 6; ++i) g += (i ? "," : "") + hex(h.geoTransform[i]);
  line("header.geo_transform", g);
  line("header.spacing", hex(h.spacingX) + "," + hex(h.spacingY));
  line("header.vertical", hex(h.verticalScale) + "," + hex(h.verticalOffset));
  line("header.quant_error", hex(h.quantError));
  line("header.crs", escape(h.crsWkt));
  line("header.vertical_units", escape(h.verticalUnits));
  line("header.codec_options", escape(h.codecOptions));
  return t;
}

bool parsePlan(const std::string& text, Plan& p, std::string& error) {
  p = Plan();
  std::vector<std::pair<std::string, std::string>> kv;
  size_t at = 0;
  bool first = true;
  while (at < text.size()) {
    const size_t nl = text.find('\n', at);
    if (nl == std::string::npos) break;
    const std::string ln = text.substr(at, nl - at);
    at = nl + 1;
    if (first) {
      if (ln != kPlanFirstLine) break;
      first = false;
      continue;
    }
    const size_t eq = ln.find('=');
    if (eq == std::string::npos) break;
    kv.emplace_back(ln.substr(0, eq), ln.substr(eq + 1));
  }
  if (first || at != text.size()) {
    error = "corrupt part (unreadable plan)";
    return false;
  }
  hfa::Header& h = p.header;
  std::set<std::string> seen;  // the fixed keys
  for (const auto& [k, v] : kv) {
    long long n = 0;
    bool ok = true;
    std::string s;
    if (k == "shards") ok = parseInteger(v, 1, kMaxShards, n), p.shards = int(n);
    else if (k == "split") ok = parseInteger(v, 0, hfa::kMaxLevels - 1, n), p.split = int(n);
    else if (k == "encode.segment") ok = parseInteger(v, 0, 1 << 16, n), p.segment = int(n);
    else if (k == "encode.bits") ok = parseInteger(v, -1, 16, n), p.bits = int(n);
    else if (k == "encode.keep_nodata") ok = parseInteger(v, 0, 1, n), p.keepNodata = n != 0;
    else if (k == "encode.nodata_sample") ok = parseInteger(v, 0, 65535, n), p.nodataSample = uint16_t(n);
    else if (k == "source.band_scale") ok = parseDoubles(v, &p.bandScale, 1);
    else if (k == "source.quant_max_error") ok = parseDoubles(v, &p.quantMaxError, 1);
    else if (k == "header.flags") ok = parseInteger(v, 0, 0xffffffffll, n), h.flags = uint32_t(n);
    else if (k == "header.tile_log") ok = parseInteger(v, hfa::kMinTileLog, hfa::kMaxTileLog, n), h.tileLog = int(n);
    else if (k == "header.levels") ok = parseInteger(v, 1, hfa::kMaxLevels, n), h.levels = int(n);
    else if (k == "header.codec") ok = parseInteger(v, 0, int(hfa::Codec::Auto), n), h.codec = hfa::Codec(n);
    else if (k == "header.sample_type") ok = parseInteger(v, 0, 255, n), h.sampleType = hfpac::SampleType(n);
    else if (k == "header.width") ok = parseInteger(v, 1, 1 << 24, n), h.width = uint32_t(n);
    else if (k == "header.height") ok = parseInteger(v, 1, 1 << 24, n), h.height = uint32_t(n);
    else if (k == "header.nodata") ok = parseInteger(v, 0, 65535, n), h.nodata = uint16_t(n);
    else if (k == "header.geo_transform") ok = parseDoubles(v, h.geoTransform, 6);
    else if (k == "header.spacing") {
      double d[2];
      ok = parseDoubles(v, d, 2);
      h.spacingX = d[0];
      h.spacingY = d[1];
    } else if (k == "header.vertical") {
      double d[2];
      ok = parseDoubles(v, d, 2);
      h.verticalScale = d[0];
      h.verticalOffset = d[1];
    } else if (k == "header.quant_error") ok = parseDoubles(v, &h.quantError, 1);
    else if (k == "header.crs") ok = unescape(v, h.crsWkt);
    else if (k == "header.vertical_units") ok = unescape(v, h.verticalUnits);
    else if (k == "header.codec_options") ok = unescape(v, h.codecOptions);
    else {
      ok = unescape(v, s);
      p.extra.emplace_back(k, s);
    }
    if (!ok || (k.rfind("input", 0) != 0 && k.rfind("option.", 0) != 0 && !seen.insert(k).second)) {
      error = "corrupt part (plan field " + k + ")";
      return false;
    }
  }
  if (seen.size() != 23) {
    error = "corrupt part (plan fields missing)";
    return false;
  }
  return true;
}

std::string planDifference(const std::string& a, const std::string& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  if (i == a.size() && i == b.size()) return "";
  const size_t start = a.rfind('\n', i == 0 ? 0 : i - 1);
  const size_t from = start == std::string::npos ? 0 : start + 1;
  const std::string line = a.substr(from, a.find('\n', from) - from);
  const size_t eq = line.find('=');
  return eq == std::string::npos ? line : line.substr(0, eq);
}

// ---- layout ----

ShardLayout shardLayout(const hfa::Header& h, int shard, int shards) {
  ShardLayout s;
  // S: the coarsest level with at least 16 roots per shard (level 0 when none has), so that
  // roots balance well and the merge's own levels are small.
  int split = 0;
  for (int l = h.levels - 1; l >= 0; --l)
    if (uint64_t(h.tilesX(l)) * h.tilesY(l) >= 16 * uint64_t(shards)) {
      split = l;
      break;
    }
  s.split = split;
  s.rootsX = h.tilesX(split);
  s.rootsY = h.tilesY(split);
  const uint64_t p1 = uint64_t(h.tileSize() - 1);
  s.span = p1 << split;
  s.half = uint32_t(p1 / 2);
  // Roots in row-major order; root r goes to the shard whose share of the level-0 samples holds
  // the middle of r's (clipped) samples: contiguous runs, balanced by sample count.
  const uint64_t W = h.width, H = h.height;
  auto extent = [&](uint64_t k, uint64_t size) { return std::min(size, (k + 1) * s.span) - k * s.span; };
  uint64_t total = 0;
  for (uint64_t y = 0; y < s.rootsY; ++y) total += extent(y, H);
  total *= [&] {
    uint64_t t = 0;
    for (uint64_t x = 0; x < s.rootsX; ++x) t += extent(x, W);
    return t;
  }();
  uint64_t before = 0;
  bool seen = false;
  for (uint64_t r = 0; r < s.roots(); ++r) {
    const uint64_t w = extent(r % s.rootsX, W) * extent(r / s.rootsX, H);
    // total <= 2^38 and shards <= 2^16: (2 before + w) shards < 2^56.
    const uint64_t owner = (2 * before + w) * uint64_t(shards) / (2 * total);  // 0-based
    before += w;
    if (owner + 1 == uint64_t(shard)) {
      if (!seen) s.first = r;
      seen = true;
      s.end = r + 1;
    }
  }
  if (!seen) s.first = s.end = 0;
  if (!s.empty()) {
    s.firstRow = s.first / s.rootsX * s.span;
    s.lastRow = std::min(H - 1, ((s.end - 1) / s.rootsX + 1) * s.span);
  }
  s.coarse = split + 1 < h.levels;
  if (s.coarse) {
    s.stride = uint64_t(1) << (split + 1);
    s.coarseW = uint32_t((W - 1) / s.stride + 1 + ((W - 1) % s.stride != 0));
    s.coarseH = uint32_t((H - 1) / s.stride + 1 + ((H - 1) % s.stride != 0));
  }
  return s;
}

void ShardLayout::rootColumns(uint64_t ry, uint64_t& x0, uint64_t& x1) const {
  const uint64_t a = ry * rootsX, b = a + rootsX;
  x0 = std::max(a, first) - a;
  x1 = std::max(std::min(b, end), a) - a;
  if (x1 < x0) x1 = x0;
}

bool ShardLayout::ownsTile(int level, uint32_t x, uint32_t y) const {
  if (level > split) return false;
  const uint64_t r = uint64_t(y >> (split - level)) * rootsX + (x >> (split - level));
  return r >= first && r < end && (x >> (split - level)) < rootsX && (y >> (split - level)) < rootsY;
}

PayloadKey payloadKey(const hfa::Header& h, int level, uint32_t x, uint32_t y) {
  PayloadKey k;
  const uint64_t done = (uint64_t(y) + 1) * (uint64_t(h.tileSize() - 1) << level);  // last level-0 row
  k.row = done <= uint64_t(h.height) - 1 ? done : uint64_t(h.height);                 // else finish()
  k.level = uint32_t(level);
  k.x = x;
  return k;
}

// ---- writer ----

PartWriter::~PartWriter() { abort(); }

void PartWriter::abort() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
  tmp_.clear();
}

bool PartWriter::writeAt(uint64_t offset, const void* data, size_t size, std::string& error) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  while (size > 0) {
    const ssize_t n = ::pwrite(fd_, p, std::min<size_t>(size, size_t(1) << 30), off_t(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = "writing " + path_ + ": " + (n < 0 ? std::strerror(errno) : "no progress (disk full?)");
      return false;
    }
    p += n;
    offset += uint64_t(n);
    size -= size_t(n);
  }
  return true;
}

bool PartWriter::open(const std::string& path, int tileLog, std::string& error) {
  abort();
  path_ = path;
  tileLog_ = tileLog;
  end_ = kPayloadStart;
  entries_.clear();
  coarse_.clear();
  fd_ = hfa::createWriterTemporary(path, tmp_, error);  // stale ones of killed packs go too
  if (fd_ < 0) return false;
  const uint8_t zero[kHeaderBytes] = {};  // no magic until finish()
  if (!writeAt(0, zero, sizeof zero, error)) {
    abort();
    return false;
  }
  return true;
}

bool PartWriter::addTile(hfa::TileEntry entry, const uint8_t* payload, size_t size, std::string& error) {
  if (fd_ < 0) {
    error = "part writer is not open";
    return false;
  }
  if (size > 0xffffffffu) {
    error = "tile payload too large";
    return false;
  }
  entry.offset = end_;
  entry.size = uint32_t(size);
  entry.crc = hfa::crc32(payload, size);
  if (!writeAt(end_, payload, size, error)) return false;
  end_ += size;
  entries_.push_back(std::move(entry));
  return true;
}

bool PartWriter::finish(const PartInfo& info, std::string& error) {
  if (fd_ < 0) {
    error = "part writer is not open";
    return false;
  }
  const uint64_t payload_bytes = end_ - kPayloadStart;
  std::vector<uint8_t> plan(info.plan.begin(), info.plan.end());
  const uint32_t rb = tileRecordBytes(tileLog_);
  std::vector<uint8_t> tiles(entries_.size() * rb);
  for (size_t i = 0; i < entries_.size(); ++i) hfa::detail::writeEntry(entries_[i], tileLog_, tiles.data() + i * rb);
  std::vector<uint8_t> coarse;
  for (const CoarseRun& r : coarse_) {
    const size_t at = coarse.size();
    coarse.resize(at + coarseRunBytes(r.samples.size()), 0);
    uint8_t* p = coarse.data() + at;
    put32(p, r.j);
    put32(p + 4, r.i0);
    put32(p + 8, uint32_t(r.samples.size()));
    for (size_t k = 0; k < r.samples.size(); ++k) put16(p + 12 + 2 * k, r.samples[k]);
    std::copy(r.states.begin(), r.states.end(), p + 12 + 2 * r.samples.size());
  }
  const uint64_t plan_at = (end_ + 7) & ~uint64_t(7);
  const uint64_t tiles_at = (plan_at + plan.size() + 7) & ~uint64_t(7);
  const uint64_t coarse_at = (tiles_at + tiles.size() + 7) & ~uint64_t(7);
  const uint64_t file_size = coarse_at + coarse.size();
  uint8_t h[kHeaderBytes] = {};
  std::memcpy(h + kOffMagic, kMagic, 8);
  put32(h + kOffVersion, kVersion);
  put32(h + kOffShard, uint32_t(info.shard));
  put32(h + kOffShards, uint32_t(info.shards));
  put32(h + kOffSplit, uint32_t(info.split));
  put32(h + kOffTileLog, uint32_t(tileLog_));
  put64(h + kOffFirst, info.first);
  put64(h + kOffEnd, info.end);
  put64(h + kOffValid, info.validSamples);
  put64(h + kOffFilled, info.filledSamples);
  putF64(h + kOffMeasured, info.measuredQuantError);
  put64(h + kOffPayloadBytes, payload_bytes);
  put64(h + kOffPlan, plan_at);
  put32(h + kOffPlanBytes, uint32_t(plan.size()));
  put32(h + kOffPlanCrc, hfa::crc32(plan.data(), plan.size()));
  put64(h + kOffTiles, tiles_at);
  put32(h + kOffTileCount, uint32_t(entries_.size()));
  put32(h + kOffTilesCrc, hfa::crc32(tiles.data(), tiles.size()));
  put64(h + kOffCoarse, coarse_at);
  put64(h + kOffCoarseBytes, coarse.size());
  put32(h + kOffCoarseRuns, uint32_t(coarse_.size()));
  put32(h + kOffCoarseCrc, hfa::crc32(coarse.data(), coarse.size()));
  put64(h + kOffFileSize, file_size);
  put32(h + kOffHeaderCrc, hfa::crc32(h, kOffHeaderCrc));
  const bool ok = ::ftruncate(fd_, off_t(file_size)) == 0 && writeAt(plan_at, plan.data(), plan.size(), error) &&
                  writeAt(tiles_at, tiles.data(), tiles.size(), error) &&
                  writeAt(coarse_at, coarse.data(), coarse.size(), error) && writeAt(0, h, sizeof h, error);
  if (!ok || ::fsync(fd_) != 0) {
    if (error.empty()) error = "writing " + path_ + ": " + std::strerror(errno);
    abort();
    return false;
  }
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0 || ::rename(tmp_.c_str(), path_.c_str()) != 0) {
    error = "cannot write " + path_ + ": " + std::strerror(errno);
    abort();
    return false;
  }
  tmp_.clear();
  return true;
}

// ---- reader ----

PartReader::~PartReader() {
  if (map_) ::munmap(const_cast<uint8_t*>(map_), size_);
}

bool PartReader::open(const std::string& path, std::string& error) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = std::string("cannot open: ") + std::strerror(errno);
    return false;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    error = "not a regular file";
    return false;
  }
  size_ = uint64_t(st.st_size);
  if (size_ < kHeaderBytes) {
    ::close(fd);
    error = "not an hfpack part (too short)";
    return false;
  }
  void* m = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (m == MAP_FAILED) {
    error = std::string("cannot map: ") + std::strerror(errno);
    return false;
  }
  map_ = static_cast<const uint8_t*>(m);
  const uint8_t* h = map_;
  if (std::memcmp(h, kMagic, 8) != 0) {
    error = "not an hfpack part (bad magic; hfpack INPUT... -o PART --shard I/N writes them)";
    return false;
  }
  if (get32(h + kOffVersion) != kVersion) {
    error = "part version " + std::to_string(get32(h + kOffVersion)) + " (this hfpack reads " +
            std::to_string(kVersion) + ")";
    return false;
  }
  if (get32(h + kOffHeaderCrc) != hfa::crc32(h, kOffHeaderCrc)) {
    error = "corrupt part (header checksum mismatch)";
    return false;
  }
  PartInfo& in = info_;
  in.shard = int(get32(h + kOffShard));
  in.shards = int(get32(h + kOffShards));
  in.split = int(get32(h + kOffSplit));
  in.tileLog = int(get32(h + kOffTileLog));
  in.first = get64(h + kOffFirst);
  in.end = get64(h + kOffEnd);
  in.validSamples = get64(h + kOffValid);
  in.filledSamples = get64(h + kOffFilled);
  in.measuredQuantError = getF64(h + kOffMeasured);
  const uint64_t payload_bytes = get64(h + kOffPayloadBytes);
  const uint64_t plan_at = get64(h + kOffPlan), plan_bytes = get32(h + kOffPlanBytes);
  const uint64_t tiles_at = get64(h + kOffTiles), tile_count = get32(h + kOffTileCount);
  const uint64_t coarse_at = get64(h + kOffCoarse), coarse_bytes = get64(h + kOffCoarseBytes);
  const uint64_t coarse_runs = get32(h + kOffCoarseRuns);
  auto within = [&](uint64_t at, uint64_t bytes) { return at <= size_ && bytes <= size_ - at; };
  if (get64(h + kOffFileSize) != size_) {
    error = "truncated or extended part (" + std::to_string(size_) + " bytes, the header says " +
            std::to_string(get64(h + kOffFileSize)) + ")";
    return false;
  }
  if (in.shards < 1 || in.shards > kMaxShards || in.shard < 1 || in.shard > in.shards || in.split < 0 ||
      in.split >= hfa::kMaxLevels || in.tileLog < hfa::kMinTileLog || in.tileLog > hfa::kMaxTileLog ||
      in.first > in.end || !within(PartWriter::kPayloadStart, payload_bytes) || !within(plan_at, plan_bytes) ||
      tile_count > size_ || !within(tiles_at, tile_count * tileRecordBytes(in.tileLog)) ||
      !within(coarse_at, coarse_bytes)) {
    error = "corrupt part (header fields out of range)";
    return false;
  }
  if (get32(h + kOffPlanCrc) != hfa::crc32(map_ + plan_at, plan_bytes) ||
      get32(h + kOffTilesCrc) != hfa::crc32(map_ + tiles_at, tile_count * tileRecordBytes(in.tileLog)) ||
      get32(h + kOffCoarseCrc) != hfa::crc32(map_ + coarse_at, coarse_bytes)) {
    error = "corrupt part (checksum mismatch in its plan, tile table or coarse samples)";
    return false;
  }
  in.plan.assign(reinterpret_cast<const char*>(map_ + plan_at), plan_bytes);
  tiles_.resize(tile_count);
  for (uint64_t i = 0; i < tile_count; ++i) {
    hfa::TileEntry& e = tiles_[i];
    hfa::detail::readEntry(map_ + tiles_at + i * tileRecordBytes(in.tileLog), in.tileLog, e);
    if (e.offset < PartWriter::kPayloadStart || e.offset - PartWriter::kPayloadStart > payload_bytes ||
        e.size > payload_bytes - (e.offset - PartWriter::kPayloadStart)) {
      error = "corrupt part (tile " + std::to_string(i) + " lies outside the payloads)";
      return false;
    }
  }
  const uint8_t* p = map_ + coarse_at;
  uint64_t left = coarse_bytes;
  coarse_.resize(coarse_runs);
  for (uint64_t k = 0; k < coarse_runs; ++k) {
    if (left < 12 || coarseRunBytes(get32(p + 8)) > left) {
      error = "corrupt part (coarse samples)";
      return false;
    }
    CoarseRun& r = coarse_[k];
    const uint32_t n = get32(p + 8);
    r.j = get32(p);
    r.i0 = get32(p + 4);
    r.samples.resize(n);
    for (uint32_t i = 0; i < n; ++i) r.samples[i] = get16(p + 12 + 2 * uint64_t(i));
    r.states.assign(p + 12 + 2 * uint64_t(n), p + 12 + 3 * uint64_t(n));
    left -= coarseRunBytes(n);
    p += coarseRunBytes(n);
  }
  if (left != 0) {
    error = "corrupt part (coarse samples)";
    return false;
  }
  return true;
}

bool PartReader::payload(size_t i, const uint8_t*& data, size_t& size, std::string& error) const {
  const hfa::TileEntry& e = tiles_[i];
  data = map_ + e.offset;
  size = e.size;
  if (hfa::crc32(data, size) != e.crc) {
    error = "corrupt part (checksum mismatch in tile (L" + std::to_string(e.level) + ", x" + std::to_string(e.x) +
            ", y" + std::to_string(e.y) + "))";
    return false;
  }
  return true;
}

}  // namespace hfpack
