// byte_source.h - where a remote archive's bytes come from (DESIGN.md: "Archives are read through
// one byte-source interface"). A local archive is simply mapped by ArchiveReader; a remote one
// (http_source.h) is mirrored block by block into a local file that the reader maps the same way,
// so the reader's checks and copies are the same code for both. Nothing above the reader knows
// where bytes come from.
//
// Contract:
// - data() is a read-only view of all size() bytes; a byte may be read there only between a
//   successful acquire() that covers it and the matching release() (until then it may be absent
//   or evicted, reading as zeros).
// - acquire() blocks until the range is present, fetching what is missing; it fails with a
//   one-line error (network down after the retries, server error, the archive changed on the
//   server) and may be called again later: a failure is never remembered against the range.
// - prefetch() starts fetching ranges without waiting (the loaders' read-ahead); invalidate()
//   drops ranges that turned out corrupt, so that the next acquire() fetches them again.
// - Every function is thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace hfa {

class ReadLimiter;

struct ByteRange {
  uint64_t offset = 0, size = 0;
};

// What a source has done since it was opened (benchmarks and the viewer's stats panel).
struct SourceStats {
  uint64_t requests = 0;        // range requests sent (retries included)
  uint64_t retries = 0;         // of those, repeats after a failure
  uint64_t failures = 0;        // ranges given up on (errors returned to readers)
  uint64_t bytesFetched = 0;    // body bytes received
  uint64_t bytesResident = 0;   // bytes present in the local cache now
  uint64_t cacheHitBytes = 0;   // acquired bytes that were already present
  uint64_t cacheMissBytes = 0;  // acquired bytes that had to be waited for
  bool persistent = false;      // the cache survives this process (validated by ETag next time)
  std::string cachePath;        // the local mirror file ("" when unnamed)
  std::string note;             // why the cache is not persistent, if it is not
};

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual const std::string& name() const = 0;  // the URL
  virtual uint64_t size() const = 0;
  virtual const uint8_t* data() const = 0;
  virtual bool acquire(uint64_t offset, uint64_t size, std::string& error) = 0;
  virtual void release(uint64_t offset, uint64_t size) = 0;
  virtual void prefetch(const ByteRange* ranges, size_t count) = 0;
  virtual void invalidate(uint64_t offset, uint64_t size) = 0;
  // Drops every cached byte (a cold start for benchmarks); not while ranges are acquired.
  virtual void clearCache() = 0;
  // Passes every byte received through `limiter` (a modelled link; nullptr: none).
  virtual void setLimiter(std::shared_ptr<ReadLimiter> limiter) = 0;
  virtual SourceStats stats() const = 0;
};

// acquire() for a scope: released on destruction when it succeeded.
class AcquiredRange {
 public:
  AcquiredRange(ByteSource* source, uint64_t offset, uint64_t size, std::string& error)
      : source_(source), offset_(offset), size_(size) {
    ok_ = !source_ || size_ == 0 || source_->acquire(offset_, size_, error);
  }
  ~AcquiredRange() {
    if (source_ && ok_ && size_ > 0) source_->release(offset_, size_);
  }
  AcquiredRange(const AcquiredRange&) = delete;
  AcquiredRange& operator=(const AcquiredRange&) = delete;
  bool ok() const { return ok_; }

 private:
  ByteSource* source_;
  uint64_t offset_, size_;
  bool ok_ = true;
};

}  // namespace hfa
