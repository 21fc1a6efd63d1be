// http_source.cpp - HttpSource: an archive mirrored block by block from an HTTP server into a
// sparse local file (http_source.h). One fetcher thread drives libcurl's multi interface; readers
// wait on a condition variable for the blocks they need.
#include "archive/http_source.h"

#if HF_HAVE_CURL
#include <curl/curl.h>
#endif
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "archive/block_table.h"
#include "archive/read_limit.h"

#ifndef HF_HAVE_CURL
#define HF_HAVE_CURL 0
#endif

namespace hfa {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

#if HF_HAVE_CURL

constexpr uint64_t B = kHttpBlockBytes;
constexpr uint32_t kMetaMagic = 0x43484648u;  // "HFHC"
constexpr uint32_t kMetaVersion = 2;          // 2: 4 KiB blocks, the present ones as runs
// Two runs of wanted blocks at most this far apart are fetched as one request (the gap along):
// a few KiB more bytes for one request fewer.
constexpr size_t kGapBlocks = size_t((32u << 10) / B);
constexpr uint64_t kMinCacheBytes = 1ull << 20;  // below this, ranges would evict each other

using detail::BlockTable;
constexpr BlockTable::State kAbsent = BlockTable::kAbsent, kPresent = BlockTable::kPresent,
                            kInFlight = BlockTable::kInFlight;

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void curlGlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string defaultCacheDir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/hfview";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/hfview";
  return "";
}

bool makeDirs(const std::string& path) {
  for (size_t i = 1; i <= path.size(); ++i)
    if (i == path.size() || path[i] == '/') {
      const std::string part = path.substr(0, i);
      if (::mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) return false;
    }
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string trim(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && (s[a] == ' ' || s[a] == '\t')) ++a;
  while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t' || s[b - 1] == '\r' || s[b - 1] == '\n')) --b;
  return s.substr(a, b - a);
}

// What the response headers said (the last response's, after redirects).
struct Response {
  long status = 0;
  std::string reason, etag, lastModified;
  bool haveRange = false;
  uint64_t rangeFirst = 0, rangeLast = 0, total = 0;
  bool haveLength = false;
  uint64_t length = 0;
  std::string validator() const { return !etag.empty() ? "etag " + etag : !lastModified.empty() ? "modified " + lastModified : ""; }
};

size_t onHeader(char* buffer, size_t size, size_t count, void* user) {
  Response& r = *static_cast<Response*>(user);
  const std::string line(buffer, size * count);
  if (line.compare(0, 5, "HTTP/") == 0) {  // a new response (redirect, 100 Continue): start over
    r = Response();
    const size_t sp = line.find(' ');
    if (sp != std::string::npos) {
      r.status = std::strtol(line.c_str() + sp + 1, nullptr, 10);
      const size_t sp2 = line.find(' ', sp + 1);
      if (sp2 != std::string::npos) r.reason = trim(line.substr(sp2 + 1));
    }
    return size * count;
  }
  const size_t colon = line.find(':');
  if (colon == std::string::npos) return size * count;
  const std::string key = lower(trim(line.substr(0, colon))), value = trim(line.substr(colon + 1));
  if (key == "etag") {
    r.etag = value;
  } else if (key == "last-modified") {
    r.lastModified = value;
  } else if (key == "content-length") {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(value.c_str(), &end, 10);
    r.haveLength = end && *end == 0 && !value.empty();
    r.length = v;
  } else if (key == "content-range") {
    unsigned long long a = 0, b = 0, t = 0;
    if (std::sscanf(value.c_str(), "bytes %llu-%llu/%llu", &a, &b, &t) == 3 && a <= b) {
      r.haveRange = true;
      r.rangeFirst = a;
      r.rangeLast = b;
      r.total = t;
    }
  }
  return size * count;
}

std::string statusText(const Response& r) {
  std::string s = "HTTP " + std::to_string(r.status);
  if (!r.reason.empty()) s += " (" + r.reason + ")";
  return s;
}

void setCommonOptions(CURL* easy, const std::string& url, const HttpOptions& o, char* errorBuffer) {
  curl_easy_setopt(easy, CURLOPT_URL, url.c_str());
  curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(easy, CURLOPT_MAXREDIRS, 5L);
  curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, long(CURL_HTTP_VERSION_2TLS));  // h2 where TLS offers it
  // No CURLOPT_PIPEWAIT: it holds every new transfer until the first connection has said
  // whether it multiplexes, which serialises an HTTP/1.1 server behind one request.
  curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, long(o.connectTimeout * 1000));
  curl_easy_setopt(easy, CURLOPT_LOW_SPEED_LIMIT, 1024L);  // a trickle is a stall too
  curl_easy_setopt(easy, CURLOPT_LOW_SPEED_TIME, std::max(1L, long(o.stallTimeout + 0.5)));
  curl_easy_setopt(easy, CURLOPT_USERAGENT, "hfview/1 (libcurl)");
  curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, errorBuffer);
  errorBuffer[0] = 0;
}

std::string curlError(CURLcode rc, const char* buffer) {
  return buffer && buffer[0] ? std::string(buffer) : std::string(curl_easy_strerror(rc));
}

// Whether a status the first request or a range request got is worth trying again.
bool retryableStatus(long status) { return status >= 500 || status == 408 || status == 429; }

bool retryableCurl(CURLcode rc) {
  switch (rc) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_SSL_CONNECT_ERROR:
      return true;
    default:
      return false;
  }
}

class HttpSource final : public ByteSource {
 public:
  ~HttpSource() override;
  bool open(const std::string& url, const HttpOptions& options, std::string& error);

  const std::string& name() const override { return url_; }
  uint64_t size() const override { return size_; }
  const uint8_t* data() const override { return map_; }
  bool acquire(uint64_t offset, uint64_t size, std::string& error) override;
  void release(uint64_t offset, uint64_t size) override;
  void prefetch(const ByteRange* ranges, size_t count) override;
  void invalidate(uint64_t offset, uint64_t size) override;
  void clearCache() override;
  void setLimiter(std::shared_ptr<ReadLimiter> limiter) override {
    std::lock_guard<std::mutex> lock(mutex_);
    limiter_ = std::move(limiter);
  }
  SourceStats stats() const override;

 private:
  // A range of blocks being fetched: [begin, end) bytes; `next` is the first byte not received
  // yet, `marked` the first byte whose block is not marked present yet.
  struct Range {
    uint64_t begin = 0, end = 0, next = 0, marked = 0;
    int attempt = 0;
    double notBefore = 0;
    bool done = false;
    std::string error;  // set when done and given up
    std::shared_ptr<Range> mergedInto;  // done without error: its blocks went to this range
  };
  // The range (r, or one it was merged into) that gave up, or nullptr.
  static const Range* failed(const std::shared_ptr<Range>& r) {
    for (const Range* x = r.get(); x; x = x->mergedInto.get())
      if (x->done && !x->error.empty()) return x;
    return nullptr;
  }
  struct Transfer {
    HttpSource* self = nullptr;
    CURL* easy = nullptr;
    std::shared_ptr<Range> range;
    Response response;
    bool validated = false;
    std::string abortError;
    bool abortFatal = false;
    char errorBuffer[CURL_ERROR_SIZE] = {};
  };

  size_t blockCount() const { return size_t((size_ + B - 1) / B); }
  uint64_t blockEnd(size_t b) const { return std::min(size_, (uint64_t(b) + 1) * B); }
  uint64_t blockBytes(size_t b) const { return blockEnd(b) - uint64_t(b) * B; }
  bool firstRequest(std::vector<uint8_t>& body, std::string& error);
  bool setUpCache(std::string& error);
  bool loadMeta(const std::string& metaPath);
  void saveMeta();
  void pruneFolder();
  // Queues blocks [first, end) as ranges; blocks [keepFirst, keepLast] are not evicted to make
  // room (the caller's own request).
  void queueRunLocked(size_t first, size_t end, size_t keepFirst = 1, size_t keepLast = 0);
  void mergeQueuedLocked(const std::shared_ptr<Range>& r);
  void evictLocked(uint64_t incoming, size_t keepFirst, size_t keepLast);
  void punch(uint64_t offset, uint64_t size);
  void fetcher();
  void startTransfer(const std::shared_ptr<Range>& r);
  void finishTransfer(Transfer* t, CURLcode rc);
  bool validate(Transfer& t);  // false: abortError set
  static size_t onData(char* data, size_t size, size_t count, void* user);
  void wake() {
    if (multi_) curl_multi_wakeup(multi_);
  }

  std::string url_, validator_, cachePath_, metaPath_, note_;
  HttpOptions options_;
  uint64_t size_ = 0;
  int fd_ = -1;
  bool persistent_ = false;
  const uint8_t* map_ = nullptr;
  CURLM* multi_ = nullptr;
  std::thread thread_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  bool stop_ = false;
  BlockTable blocks_;  // per block: state, pins, last use (sparse: block_table.h)
  uint32_t tick_ = 0;
  uint64_t presentBytes_ = 0, inFlightBytes_ = 0;
  std::unordered_map<size_t, std::shared_ptr<Range>> inFlight_;  // block -> its range
  std::deque<std::shared_ptr<Range>> queue_;
  int active_ = 0;
  std::vector<Transfer*> transfers_;  // running; the fetcher thread's own
  std::shared_ptr<ReadLimiter> limiter_;
  SourceStats stats_;
};

HttpSource::~HttpSource() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake();
  if (thread_.joinable()) thread_.join();
  if (multi_) curl_multi_cleanup(multi_);
  if (persistent_) saveMeta();
  if (map_) ::munmap(const_cast<uint8_t*>(map_), size_t(size_));
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

bool HttpSource::firstRequest(std::vector<uint8_t>& body, std::string& error) {
  const uint64_t want = kHttpOpenBytes;
  for (int attempt = 0;; ++attempt) {
    CURL* easy = curl_easy_init();
    if (!easy) {
      error = "libcurl could not start a transfer";
      return false;
    }
    char errorBuffer[CURL_ERROR_SIZE];
    setCommonOptions(easy, url_, options_, errorBuffer);
    Response response;
    struct Sink {
      std::vector<uint8_t>* body;
      Response* response;
      uint64_t want;
      bool refused = false;
    } sink{&body, &response, want};
    body.clear();
    const std::string range = "0-" + std::to_string(want - 1);
    curl_easy_setopt(easy, CURLOPT_RANGE, range.c_str());
    curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, onHeader);
    curl_easy_setopt(easy, CURLOPT_HEADERDATA, &response);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, &sink);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, +[](char* d, size_t s, size_t n, void* u) -> size_t {
      Sink& k = *static_cast<Sink*>(u);
      // A 200 answer to a Range request is the whole file: fine when it is small, else refused
      // (reading a multi-gigabyte archive from its start for every tile is not streaming).
      if (k.response->status != 200 && k.response->status != 206) return 0;  // an error page
      if (k.body->size() + s * n > k.want) {
        k.refused = k.response->status == 200;
        return 0;  // a 206 with more than asked for: malformed
      }
      k.body->insert(k.body->end(), reinterpret_cast<uint8_t*>(d), reinterpret_cast<uint8_t*>(d) + s * n);
      return s * n;
    });
    const CURLcode rc = curl_easy_perform(easy);
    curl_easy_cleanup(easy);
    if (sink.refused) {
      error = "the server ignores Range requests (" + statusText(response) +
              " with the whole file): serve the archive from a server that supports them";
      return false;
    }
    bool retry = false;
    if (response.status != 0 && response.status != 200 && response.status != 206) {
      error = response.status == 416 ? "the archive on the server is empty (HTTP 416)" : statusText(response);
      retry = retryableStatus(response.status);
    } else if (rc != CURLE_OK) {
      error = curlError(rc, errorBuffer);
      retry = retryableCurl(rc);
    } else if (response.status == 206) {
      if (!response.haveRange || response.rangeFirst != 0 || response.total == 0 ||
          response.rangeLast - response.rangeFirst + 1 != body.size()) {
        error = "the server's answer to a Range request is malformed (Content-Range)";
        return false;
      }
      size_ = response.total;
      validator_ = response.validator();
      return true;
    } else if (response.status == 200) {
      if (body.empty()) {
        error = "the archive on the server is empty";
        return false;
      }
      if (response.haveLength && response.length != body.size()) {
        error = "short body (" + std::to_string(body.size()) + " of " + std::to_string(response.length) + " bytes)";
        retry = true;
      } else {
        size_ = body.size();  // a small file sent whole
        validator_ = response.validator();
        return true;
      }
    }
    if (!retry || attempt >= options_.retries) {
      if (attempt > 0) error += " (after " + std::to_string(attempt + 1) + " tries)";
      return false;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(options_.retryDelay * double(1 << attempt)));
  }
}

bool HttpSource::open(const std::string& url, const HttpOptions& options, std::string& error) {
  curlGlobalInit();
  url_ = url;
  options_ = options;
  options_.connections = std::clamp(options_.connections, 1, 64);
  options_.retries = std::clamp(options_.retries, 0, 20);
  options_.cacheBytes = std::max(options_.cacheBytes, kMinCacheBytes);
  options_.maxRangeBytes = std::clamp(options_.maxRangeBytes, B, options_.cacheBytes / 4);
  std::vector<uint8_t> first;
  if (!firstRequest(first, error)) return false;
  if (!setUpCache(error)) return false;
  // The first blocks: written into the mirror and marked present (unless the cache had them).
  for (size_t off = 0; off < first.size();) {
    const ssize_t w = ::pwrite(fd_, first.data() + off, first.size() - off, off_t(off));
    if (w <= 0) {
      error = "cannot write the cache file " + cachePath_ + ": " + std::strerror(errno);
      return false;
    }
    off += size_t(w);
  }
  for (size_t b = 0; b < blockCount() && blockEnd(b) <= first.size(); ++b)
    if (blocks_.state(b) != kPresent) {
      blocks_.setState(b, kPresent);
      presentBytes_ += blockBytes(b);
    }
  stats_.requests = 1;
  stats_.bytesFetched = first.size();
  multi_ = curl_multi_init();
  if (!multi_) {
    error = "libcurl could not start its transfer loop";
    return false;
  }
  curl_multi_setopt(multi_, CURLMOPT_PIPELINING, long(CURLPIPE_MULTIPLEX));
  curl_multi_setopt(multi_, CURLMOPT_MAX_TOTAL_CONNECTIONS, long(options_.connections));
  curl_multi_setopt(multi_, CURLMOPT_MAX_HOST_CONNECTIONS, long(options_.connections));
  thread_ = std::thread([this] { fetcher(); });
  return true;
}

bool HttpSource::setUpCache(std::string& error) {
  const std::string dir = options_.cacheDir.empty() ? defaultCacheDir() : options_.cacheDir;
  blocks_.clear();
  if (!dir.empty() && makeDirs(dir)) {
    char key[17];
    std::snprintf(key, sizeof key, "%016llx", static_cast<unsigned long long>(fnv1a(url_)));
    cachePath_ = dir + "/" + key + ".hfa";
    metaPath_ = dir + "/" + key + ".meta";
    // Locked, and still the file at that name: another process's pruneFolder may have removed
    // it between our open and our lock (then open the new one).
    for (int attempt = 0; attempt < 3; ++attempt) {
      fd_ = ::open(cachePath_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
      if (fd_ < 0) {
        note_ = "cannot write the cache folder " + dir + ": " + std::strerror(errno);
        break;
      }
      if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
        ::close(fd_);
        fd_ = -1;
        note_ = "the cache " + cachePath_ + " is in use by another process";
        break;
      }
      struct stat named, opened;
      if (::stat(cachePath_.c_str(), &named) == 0 && ::fstat(fd_, &opened) == 0 && named.st_ino == opened.st_ino &&
          named.st_dev == opened.st_dev)
        break;
      ::close(fd_);
      fd_ = -1;
      note_ = "the cache " + cachePath_ + " kept being replaced";
    }
    if (fd_ >= 0) {
      persistent_ = !validator_.empty();
      if (!persistent_) note_ = "the server gives no ETag or Last-Modified to validate a cache with";
      struct stat st;
      const bool reuse = persistent_ && ::fstat(fd_, &st) == 0 && uint64_t(st.st_size) == size_ && loadMeta(metaPath_);
      // The map on disk is only true until this process evicts a block: it is removed now and
      // written again by a clean close, so a crash leaves no map that claims punched holes.
      ::unlink(metaPath_.c_str());
      if (!reuse) {
        if (::ftruncate(fd_, 0) != 0 || ::ftruncate(fd_, off_t(size_)) != 0) {
          note_ = "cannot size the cache file " + cachePath_ + ": " + std::strerror(errno);
          ::close(fd_);
          fd_ = -1;
          persistent_ = false;
        }
      }
    }
  } else if (!dir.empty()) {
    note_ = "cannot create the cache folder " + dir;
  } else {
    note_ = "no cache folder (neither XDG_CACHE_HOME nor HOME is set)";
  }
  if (fd_ < 0) {  // a private, unnamed cache in the folder or /tmp: gone when this process ends
    persistent_ = false;
    cachePath_.clear();
    for (const std::string& d : {dir, std::string("/tmp")}) {
      if (d.empty()) continue;
      fd_ = ::open(d.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
      if (fd_ >= 0) break;
    }
    if (fd_ < 0 || ::ftruncate(fd_, off_t(size_)) != 0) {
      error = std::string("cannot create a cache file for the archive: ") + std::strerror(errno);
      return false;
    }
  }
  void* m = ::mmap(nullptr, size_t(size_), PROT_READ, MAP_SHARED, fd_, 0);
  if (m == MAP_FAILED) {
    error = std::string("cannot map the cache file: ") + std::strerror(errno);
    return false;
  }
  map_ = static_cast<const uint8_t*>(m);
  if (persistent_) pruneFolder();
  return true;
}

// Meta file: magic, version, block bytes, size, validator, URL, then the present blocks as runs:
// their count and (first block, blocks) per run. Runs, not a bit per block: the map follows what
// the cache holds (its budget), not the archive's size.
bool HttpSource::loadMeta(const std::string& metaPath) {
  FILE* f = std::fopen(metaPath.c_str(), "rb");
  if (!f) return false;
  auto readU64 = [&](uint64_t& v) { return std::fread(&v, 8, 1, f) == 1; };
  auto readString = [&](std::string& s) {
    uint64_t n = 0;
    if (!readU64(n) || n > 65536) return false;
    s.resize(size_t(n));
    return n == 0 || std::fread(&s[0], 1, size_t(n), f) == size_t(n);
  };
  uint64_t magic = 0, block = 0, size = 0, runCount = 0;
  std::string validator, url;
  bool ok = readU64(magic) && magic == (uint64_t(kMetaVersion) << 32 | kMetaMagic) &&
            readU64(block) && block == B && readU64(size) && size == size_ &&
            readString(validator) && validator == validator_ && readString(url) && url == url_ &&
            readU64(runCount) && runCount <= (blockCount() + 1) / 2;
  // Exactly the runs announced, checked against the file's length before anything is allocated
  // (a damaged count must not ask for gigabytes).
  struct stat st {};
  const long at = ok ? std::ftell(f) : -1;
  ok = ok && at >= 0 && ::fstat(::fileno(f), &st) == 0 && st.st_size >= at &&
       uint64_t(st.st_size - at) / 16 == runCount && uint64_t(st.st_size - at) % 16 == 0;
  std::vector<uint64_t> runs(ok ? size_t(runCount) * 2 : 0);
  ok = ok && std::fread(runs.data(), 8, runs.size(), f) == runs.size();
  std::fclose(f);
  for (size_t i = 0; ok && i < runs.size(); i += 2)  // in order, apart, inside the file
    ok = runs[i + 1] > 0 && runs[i] < blockCount() && runs[i + 1] <= blockCount() - runs[i] &&
         (i == 0 || runs[i] > runs[i - 2] + runs[i - 1]);
  if (!ok) return false;
  for (size_t i = 0; i < runs.size(); i += 2)
    for (size_t b = size_t(runs[i]); b < size_t(runs[i] + runs[i + 1]); ++b) {
      blocks_.setState(b, kPresent);
      presentBytes_ += blockBytes(b);
    }
  return true;
}

void HttpSource::saveMeta() {
  std::vector<uint64_t> present;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    blocks_.forEach([&](size_t b, BlockTable::State state, uint32_t, uint32_t) {
      if (state == kPresent) present.push_back(b);
    });
  }
  std::sort(present.begin(), present.end());
  std::vector<uint64_t> runs;  // (first block, blocks) pairs
  for (const uint64_t b : present)
    if (!runs.empty() && runs[runs.size() - 2] + runs.back() == b)
      ++runs.back();
    else
      runs.insert(runs.end(), {b, 1});
  const std::string tmp = metaPath_ + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return;
  auto writeU64 = [&](uint64_t v) { std::fwrite(&v, 8, 1, f); };
  auto writeString = [&](const std::string& s) {
    writeU64(s.size());
    std::fwrite(s.data(), 1, s.size(), f);
  };
  writeU64(uint64_t(kMetaVersion) << 32 | kMetaMagic);
  writeU64(B);
  writeU64(size_);
  writeString(validator_);
  writeString(url_);
  writeU64(runs.size() / 2);
  std::fwrite(runs.data(), 8, runs.size(), f);
  // The mirror's data first: a map that says "present" must not outlive lost data (a crash
  // that does anyway is caught by the payload checksums, which drop the blocks).
  const bool ok = std::fflush(f) == 0 && ::fdatasync(fd_) == 0;
  if (std::fclose(f) != 0 || !ok || std::rename(tmp.c_str(), metaPath_.c_str()) != 0) ::unlink(tmp.c_str());
}

// Other archives' caches in the folder, least recently used first, removed while the folder
// holds more than the budget (ours is bounded by eviction). Caches in use (flock) are kept.
void HttpSource::pruneFolder() {
  const std::string dir = cachePath_.substr(0, cachePath_.rfind('/'));
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  struct Entry {
    std::string path;
    double used;
    uint64_t bytes;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() != 20 || name.compare(16, 4, ".hfa") != 0) continue;
    const std::string path = dir + "/" + name;
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) continue;
    const uint64_t bytes = uint64_t(st.st_blocks) * 512;  // allocated, not the sparse size
    total += bytes;
    if (path != cachePath_) entries.push_back({path, double(st.st_mtime), bytes});
  }
  ::closedir(d);
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.used < b.used; });
  for (const Entry& e : entries) {
    if (total <= options_.cacheBytes) break;
    const int fd = ::open(e.path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) continue;
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
      ::unlink((e.path.substr(0, e.path.size() - 4) + ".meta").c_str());
      ::unlink(e.path.c_str());
      total -= std::min(total, e.bytes);
    }
    ::close(fd);
  }
}

void HttpSource::punch(uint64_t offset, uint64_t size) {
  // Without hole punching (an old file system) the bytes simply stay allocated: the budget then
  // bounds what the map says is present, not the disk use.
  ::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off_t(offset), off_t(size));
}

void HttpSource::evictLocked(uint64_t incoming, size_t keepFirst, size_t keepLast) {
  const uint64_t budget = options_.cacheBytes;
  if (presentBytes_ + inFlightBytes_ + incoming <= budget) return;
  // Down to 7/8 of the budget at once, so that eviction (a sort over the cached blocks) is rare.
  const uint64_t target = budget / 8 * 7;
  std::vector<size_t> evicted;
  for (size_t b : blocks_.evictionOrder(tick_, keepFirst, keepLast)) {
    if (presentBytes_ + inFlightBytes_ + incoming <= target) break;
    blocks_.setState(b, kAbsent);
    presentBytes_ -= blockBytes(b);
    evicted.push_back(b);
  }
  std::sort(evicted.begin(), evicted.end());
  for (size_t i = 0; i < evicted.size();) {
    size_t j = i + 1;
    while (j < evicted.size() && evicted[j] == evicted[j - 1] + 1) ++j;
    punch(uint64_t(evicted[i]) * B, blockEnd(evicted[j - 1]) - uint64_t(evicted[i]) * B);
    i = j;
  }
}

void HttpSource::queueRunLocked(size_t first, size_t end, size_t keepFirst, size_t keepLast) {
  const size_t maxBlocks = size_t(std::max<uint64_t>(1, options_.maxRangeBytes / B));
  for (size_t b = first; b < end;) {
    const size_t e = std::min(end, b + maxBlocks);
    auto r = std::make_shared<Range>();
    r->begin = r->next = r->marked = uint64_t(b) * B;
    r->end = blockEnd(e - 1);
    evictLocked(r->end - r->begin, keepFirst, keepLast);
    for (size_t k = b; k < e; ++k) {
      blocks_.setState(k, kInFlight);
      inFlight_[k] = r;
    }
    inFlightBytes_ += r->end - r->begin;
    queue_.push_back(r);
    b = e;
  }
}

// The elevator: queued ranges that continue `r` (directly, or after a gap of at most kGap absent
// blocks, fetched along) join it before it starts, up to maxRangeBytes. Requests queued while
// the connections were busy thus leave as one. A merged range is marked done (its blocks now
// belong to `r`), so that its waiters look again and wait for `r`.
void HttpSource::mergeQueuedLocked(const std::shared_ptr<Range>& r) {
  constexpr uint64_t kGap = kGapBlocks;
  if (r->attempt != 0 || r->next != r->begin) return;
  const double t = now();
  for (bool merged = true; merged;) {
    merged = false;
    for (auto it = queue_.begin(); it != queue_.end(); ++it) {
      Range& q = **it;
      if (q.attempt != 0 || q.notBefore > t || q.begin < r->end || q.begin - r->end > kGap * B ||
          q.end - r->begin > options_.maxRangeBytes)
        continue;
      bool gapAbsent = true;
      for (uint64_t g = r->end; g < q.begin; g += B) gapAbsent = gapAbsent && blocks_.state(size_t(g / B)) == kAbsent;
      if (!gapAbsent) continue;
      for (uint64_t g = r->end; g < q.begin; g += B) blocks_.setState(size_t(g / B), kInFlight);
      inFlightBytes_ += q.begin - r->end;
      for (size_t b = size_t(r->end / B); uint64_t(b) * B < q.end; ++b) inFlight_[b] = r;
      r->end = q.end;
      q.done = true;  // no error: its waiters find its blocks in `r` now, and r's failure
      q.mergedInto = r;
      queue_.erase(it);
      changed_.notify_all();
      merged = true;
      break;
    }
  }
}

bool HttpSource::acquire(uint64_t offset, uint64_t size, std::string& error) {
  if (size == 0) return true;
  if (offset > size_ || size > size_ - offset) {
    error = url_ + ": read past the end of the archive";
    return false;
  }
  const size_t b0 = size_t(offset / B), b1 = size_t((offset + size - 1) / B);
  std::unique_lock<std::mutex> lock(mutex_);
  std::vector<std::shared_ptr<Range>> waited;  // every range this call has waited for
  bool missed = false;
  for (;;) {
    // A range this call waited for gave up: report it before the scan below would queue the
    // same blocks again (a second retry cycle against a server that is down).
    for (const auto& r : waited)
      if (const Range* f = failed(r)) {
        error = f->error;
        return false;
      }
    bool all = true, queued = false;
    for (size_t b = b0; b <= b1;) {
      const BlockTable::State state = blocks_.state(b);
      if (state == kPresent) {
        ++b;
        continue;
      }
      all = false;
      if (state == kAbsent) {
        size_t e = b;
        while (e <= b1 && blocks_.state(e) == kAbsent) ++e;
        queueRunLocked(b, e, b0, b1);
        queued = true;
      }
      const std::shared_ptr<Range>& r = inFlight_[b];
      if (waited.empty() || waited.back() != r) waited.push_back(r);
      ++b;
    }
    if (all) {
      ++tick_;
      for (size_t b = b0; b <= b1; ++b) blocks_.pin(b, tick_);
      (missed ? stats_.cacheMissBytes : stats_.cacheHitBytes) += size;
      return true;
    }
    missed = true;
    if (queued) {
      lock.unlock();
      wake();
      lock.lock();
      continue;
    }
    changed_.wait(lock);
  }
}

void HttpSource::release(uint64_t offset, uint64_t size) {
  if (size == 0) return;
  const size_t b0 = size_t(offset / B), b1 = size_t((offset + size - 1) / B);
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t b = b0; b <= b1 && b < blockCount(); ++b) blocks_.unpin(b);
}

void HttpSource::prefetch(const ByteRange* ranges, size_t count) {
  // The blocks the ranges touch, in file order; runs of absent blocks become requests, and two
  // runs separated by at most kGap absent blocks are fetched as one.
  // No read-ahead beyond the ranges: measured on a flythrough (4097^2 terrain, 50 MB/s), taking
  // the next 64 KiB along cost HFPaC 30 % more bytes (its tiles are small) for fewer requests.
  constexpr size_t kGap = kGapBlocks;
  std::vector<size_t> blocks;
  for (size_t i = 0; i < count; ++i) {
    const ByteRange& r = ranges[i];
    if (r.size == 0 || r.offset >= size_) continue;
    const uint64_t end = std::min(size_, r.offset + r.size);
    for (size_t b = size_t(r.offset / B); b <= size_t((end - 1) / B); ++b) blocks.push_back(b);
  }
  std::sort(blocks.begin(), blocks.end());
  blocks.erase(std::unique(blocks.begin(), blocks.end()), blocks.end());
  bool queued = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    size_t i = 0;
    while (i < blocks.size()) {
      if (blocks_.state(blocks[i]) != kAbsent) {
        ++i;
        continue;
      }
      size_t first = blocks[i], last = first;
      ++i;
      while (i < blocks.size() && blocks[i] <= last + kGap + 1) {
        bool gapAbsent = true;
        for (size_t g = last + 1; g <= blocks[i]; ++g) gapAbsent = gapAbsent && blocks_.state(g) == kAbsent;
        if (!gapAbsent) break;
        last = blocks[i++];
      }
      queueRunLocked(first, last + 1);
      queued = true;
    }
  }
  if (queued) wake();
}

void HttpSource::invalidate(uint64_t offset, uint64_t size) {
  if (size == 0 || offset >= size_) return;
  const uint64_t end = std::min(size_, offset + size);
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t b = size_t(offset / B); b <= size_t((end - 1) / B); ++b)
    if (blocks_.state(b) == kPresent) {  // refetched over the same bytes; no hole needed
      blocks_.setState(b, kAbsent);
      presentBytes_ -= blockBytes(b);
    }
}

void HttpSource::clearCache() {
  std::lock_guard<std::mutex> lock(mutex_);
  bool pinned = false;
  std::vector<size_t> dropped;
  blocks_.forEach([&](size_t b, BlockTable::State state, uint32_t pins, uint32_t) {
    if (state == kPresent && pins == 0) dropped.push_back(b);
    pinned = pinned || pins != 0;
  });
  for (size_t b : dropped) {
    blocks_.setState(b, kAbsent);
    presentBytes_ -= blockBytes(b);
  }
  if (!pinned && inFlight_.empty()) punch(0, size_);
}

SourceStats HttpSource::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  SourceStats s = stats_;
  s.bytesResident = presentBytes_;
  s.persistent = persistent_;
  s.cachePath = cachePath_;
  s.note = note_;
  return s;
}

// ---- the fetcher thread ----

void HttpSource::fetcher() {
  for (;;) {
    double nextStart = 0;
    std::vector<std::shared_ptr<Range>> start;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stop_) break;
      const double t = now();
      for (auto it = queue_.begin(); it != queue_.end() && active_ + int(start.size()) < options_.connections;) {
        if ((*it)->notBefore <= t) {
          std::shared_ptr<Range> r = *it;
          queue_.erase(it);
          mergeQueuedLocked(r);  // may erase other queued ranges
          start.push_back(std::move(r));
          it = queue_.begin();
        } else {
          nextStart = nextStart == 0 ? (*it)->notBefore : std::min(nextStart, (*it)->notBefore);
          ++it;
        }
      }
      active_ += int(start.size());
    }
    for (const auto& r : start) startTransfer(r);
    int running = 0;
    curl_multi_perform(multi_, &running);
    int left = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi_, &left))
      if (msg->msg == CURLMSG_DONE) {
        Transfer* t = nullptr;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &t);
        finishTransfer(t, msg->data.result);
      }
    int timeoutMs = 200;
    if (nextStart > 0) timeoutMs = std::clamp(int((nextStart - now()) * 1000) + 1, 1, 200);
    {
      // Transfers that ended above free connections for queued ranges: start them now, not
      // after the poll (which would sleep its whole timeout with nothing left to watch).
      std::lock_guard<std::mutex> lock(mutex_);
      const double t = now();
      if (active_ < options_.connections)
        for (const auto& r : queue_)
          if (r->notBefore <= t) {
            timeoutMs = 0;
            break;
          }
    }
    if (timeoutMs > 0) curl_multi_poll(multi_, nullptr, 0, timeoutMs, nullptr);
  }
  // Shutting down: the transfers still running are dropped, their waiters told so.
  std::lock_guard<std::mutex> lock(mutex_);
  for (Transfer* t : transfers_) {
    curl_multi_remove_handle(multi_, t->easy);
    curl_easy_cleanup(t->easy);
    t->range->done = true;
    t->range->error = url_ + ": archive closed";
    delete t;
  }
  transfers_.clear();
  for (auto& r : queue_) {
    r->done = true;
    r->error = url_ + ": archive closed";
  }
  changed_.notify_all();
}

void HttpSource::startTransfer(const std::shared_ptr<Range>& r) {
  auto* t = new Transfer;
  t->self = this;
  t->range = r;
  t->easy = curl_easy_init();
  if (!t->easy) {
    finishTransfer(t, CURLE_FAILED_INIT);
    return;
  }
  setCommonOptions(t->easy, url_, options_, t->errorBuffer);
  const std::string range = std::to_string(r->next) + "-" + std::to_string(r->end - 1);
  curl_easy_setopt(t->easy, CURLOPT_RANGE, range.c_str());  // copied by libcurl
  curl_easy_setopt(t->easy, CURLOPT_HEADERFUNCTION, onHeader);
  curl_easy_setopt(t->easy, CURLOPT_HEADERDATA, &t->response);
  curl_easy_setopt(t->easy, CURLOPT_WRITEFUNCTION, onData);
  curl_easy_setopt(t->easy, CURLOPT_WRITEDATA, t);
  curl_easy_setopt(t->easy, CURLOPT_PRIVATE, t);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.requests;
  }
  if (curl_multi_add_handle(multi_, t->easy) != CURLM_OK) {
    finishTransfer(t, CURLE_FAILED_INIT);
    return;
  }
  transfers_.push_back(t);
}

bool HttpSource::validate(Transfer& t) {
  const Response& resp = t.response;
  const Range& r = *t.range;
  auto fail = [&](const std::string& why, bool fatal) {
    t.abortError = why;
    t.abortFatal = fatal;
    return false;
  };
  const std::string v = resp.validator();
  if (!validator_.empty() && !v.empty() && v != validator_ && (resp.status == 200 || resp.status == 206))
    return fail("the archive changed on the server since it was opened (" + validator_ + ", now " + v +
                    "); reopen it",
                true);
  if (resp.status == 206) {
    if (!resp.haveRange || resp.total != size_)
      return fail("the archive changed on the server since it was opened (" + std::to_string(size_) +
                      " bytes, now " + (resp.haveRange ? std::to_string(resp.total) : std::string("unknown")) +
                      "); reopen it",
                  true);
    if (resp.rangeFirst != r.next || resp.rangeLast != r.end - 1)
      return fail("the server answered another range than the one asked for", false);
    return true;
  }
  if (resp.status == 200) {
    if (r.next == 0 && r.end == size_ && (!resp.haveLength || resp.length == size_)) return true;
    return fail("the server ignores Range requests (" + statusText(resp) +
                    " with the whole file): serve the archive from a server that supports them",
                true);
  }
  if (resp.status == 416)
    return fail("the archive on the server is shorter than when it was opened (HTTP 416); reopen it", true);
  return fail(statusText(resp), !retryableStatus(resp.status));
}

size_t HttpSource::onData(char* data, size_t size, size_t count, void* user) {
  Transfer& t = *static_cast<Transfer*>(user);
  HttpSource& s = *t.self;
  const size_t n = size * count;
  if (!t.validated) {
    if (!s.validate(t)) return 0;
    t.validated = true;
  }
  Range& r = *t.range;
  if (n > r.end - r.next) {
    t.abortError = "the server sent more bytes than the range asked for";
    return 0;
  }
  std::shared_ptr<ReadLimiter> limiter;
  {
    std::lock_guard<std::mutex> lock(s.mutex_);
    limiter = s.limiter_;
  }
  if (limiter) limiter->acquire(n);  // the modelled link: every transfer waits its turn
  for (size_t off = 0; off < n;) {
    const ssize_t w = ::pwrite(s.fd_, data + off, n - off, off_t(r.next + off));
    if (w <= 0) {
      t.abortError = "cannot write the cache file: " + std::string(std::strerror(errno));
      t.abortFatal = true;
      return 0;
    }
    off += size_t(w);
  }
  std::lock_guard<std::mutex> lock(s.mutex_);
  r.next += n;
  s.stats_.bytesFetched += n;
  bool marked = false;
  while (r.marked < r.end) {
    const size_t b = size_t(r.marked / B);
    if (s.blockEnd(b) > r.next) break;
    s.blocks_.arrived(b, s.tick_);  // arrived now: not the oldest in the LRU (read-ahead is read soon)
    s.inFlight_.erase(b);
    s.presentBytes_ += s.blockBytes(b);
    s.inFlightBytes_ -= s.blockBytes(b);
    r.marked = s.blockEnd(b);
    marked = true;
  }
  if (marked) s.changed_.notify_all();
  return n;
}

void HttpSource::finishTransfer(Transfer* t, CURLcode rc) {
  if (rc == CURLE_OK && !t->validated && t->abortError.empty() && !validate(*t)) rc = CURLE_WRITE_ERROR;
  const auto it = std::find(transfers_.begin(), transfers_.end(), t);
  if (it != transfers_.end()) {
    transfers_.erase(it);
    curl_multi_remove_handle(multi_, t->easy);
  }
  Range& r = *t->range;
  std::lock_guard<std::mutex> lock(mutex_);
  --active_;
  if (rc == CURLE_OK && r.next == r.end && t->abortError.empty()) {
    r.done = true;
  } else {
    std::string why = !t->abortError.empty() ? t->abortError
                      : rc != CURLE_OK       ? curlError(rc, t->errorBuffer)
                                             : "short body (" + std::to_string(r.next - r.begin) + " of " +
                                                   std::to_string(r.end - r.begin) + " bytes)";
    const bool fatal = t->abortFatal || (rc != CURLE_OK && t->abortError.empty() && !retryableCurl(rc) &&
                                         rc != CURLE_WRITE_ERROR);
    if (!fatal && r.attempt < options_.retries) {
      ++r.attempt;
      ++stats_.retries;
      r.notBefore = now() + options_.retryDelay * double(1 << std::min(r.attempt - 1, 10));
      queue_.push_back(t->range);  // resumes at r.next
    } else {
      r.done = true;
      r.error = url_ + ": " + why + (r.attempt > 0 ? " (after " + std::to_string(r.attempt + 1) + " tries)" : "");
      ++stats_.failures;
      for (size_t b = size_t(r.marked / B); b < blockCount() && uint64_t(b) * B < r.end; ++b) {
        blocks_.setState(b, kAbsent);
        inFlight_.erase(b);
        inFlightBytes_ -= blockBytes(b);
      }
    }
    changed_.notify_all();
  }
  if (t->easy) curl_easy_cleanup(t->easy);
  delete t;
}

#endif  // HF_HAVE_CURL

}  // namespace

bool isUrl(const std::string& path) {
  const std::string head = lower(path.substr(0, 8));
  return head.compare(0, 7, "http://") == 0 || head.compare(0, 8, "https://") == 0;
}

HttpOptions HttpOptions::fromEnvironment(std::string* notes) {
  HttpOptions o;
  auto number = [&](const char* name, double lo, double hi, double& out) {
    const char* v = std::getenv(name);
    if (!v || !*v) return false;
    char* end = nullptr;
    const double d = std::strtod(v, &end);
    if (!end || *end || !(d >= lo && d <= hi)) {
      if (notes) *notes += std::string(notes->empty() ? "" : "; ") + name + "=" + v + " ignored (not a number in range)";
      return false;
    }
    out = d;
    return true;
  };
  if (const char* d = std::getenv("HF_HTTP_CACHE_DIR"); d && *d) o.cacheDir = d;
  double v = 0;
  if (number("HF_HTTP_CACHE_MB", 64, 1e9, v)) o.cacheBytes = uint64_t(v * 1048576.0);
  if (number("HF_HTTP_CONNECTIONS", 1, 64, v)) o.connections = int(v);
  if (number("HF_HTTP_RETRIES", 0, 20, v)) o.retries = int(v);
  return o;
}

bool httpSupported() { return HF_HAVE_CURL != 0; }

std::unique_ptr<ByteSource> openHttpSource(const std::string& url, const HttpOptions& options, std::string& error) {
#if HF_HAVE_CURL
  auto source = std::make_unique<HttpSource>();
  if (!source->open(url, options, error)) return nullptr;
  return source;
#else
  (void)url;
  (void)options;
  error = "this build reads no URLs (built without libcurl: install libcurl4-openssl-dev and rebuild)";
  return nullptr;
#endif
}

}  // namespace hfa
