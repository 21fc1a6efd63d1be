// http_source.h - archives on a web server, read by HTTP range requests (libcurl); issue 18,
// docs/archive.md section 8.
//
// The archive is mirrored into a sparse local file of its size, in blocks of kHttpBlockBytes:
// a block is fetched once and then read from the file's mapping like a local archive. Fetching:
// - one thread drives a libcurl multi handle with up to `connections` transfers in flight
//   (keep-alive connections reused; HTTP/2 multiplexed on one connection where an https server
//   offers it);
// - missing blocks of adjacent requests are coalesced into one range (up to maxRangeBytes), and
//   prefetch() batches the loaders' read-ahead, so a flythrough needs far fewer requests than
//   tiles;
// - a failed transfer (connection refused or reset, timeout, a 5xx answer, a short body) is tried
//   again `retries` times with doubling back-off from retryDelay, then reported to the readers
//   waiting for it; a 4xx answer, a server that ignores Range, or a file that changed on the
//   server (another ETag or size) is reported at once. Readers may ask again later (the viewer
//   retries such tiles with a back-off), so nothing stays broken once the server is back.
// The cache: `<cacheDir>/<hash of the URL>.hfa` and `.meta` (URL, size, ETag, present blocks),
// reused by the next process when the server gives the same ETag and size; least recently used
// blocks are evicted (holes punched) beyond cacheBytes, and other archives' caches in the folder
// are removed, oldest first, beyond cacheBytes in total. A cache file in use by another process
// (flock), or a folder that cannot be written, gives this process a private unnamed cache.
#pragma once

#include <memory>
#include <string>

#include "archive/byte_source.h"

namespace hfa {

// The mirror's unit: small enough that a compressed tile (a few KiB) drags little else along
// (on the 8193^2 flythrough of bench/results/http, 16 KiB blocks fetched 13 % more than the hfpac
// payloads, 4 KiB blocks 3.6 %), large enough that the block table stays small.
constexpr uint64_t kHttpBlockBytes = 4096;
// Opening asks for this much of the file's start: the header and usually the whole index of a
// small archive.
constexpr uint64_t kHttpOpenBytes = 64u << 10;

struct HttpOptions {
  std::string cacheDir;              // "" = $XDG_CACHE_HOME/hfview, else ~/.cache/hfview
  uint64_t cacheBytes = 4ull << 30;  // on-disk budget (HF_HTTP_CACHE_MB)
  int connections = 4;               // transfers in flight (HF_HTTP_CONNECTIONS)
  uint64_t maxRangeBytes = 2ull << 20;  // largest coalesced range
  double connectTimeout = 5;         // seconds
  double stallTimeout = 10;          // a transfer that receives nothing for this long fails
  int retries = 3;                   // after the first try (HF_HTTP_RETRIES)
  double retryDelay = 0.25;          // seconds before the first retry, doubled each time
  // Defaults overridden by HF_HTTP_CACHE_DIR, HF_HTTP_CACHE_MB, HF_HTTP_CONNECTIONS and
  // HF_HTTP_RETRIES when set (invalid values are ignored with a note in `notes`).
  static HttpOptions fromEnvironment(std::string* notes = nullptr);
};

// Whether this build reads URLs (libcurl found at build time, CMake option HF_HTTP).
bool httpSupported();

// True for "http://..." and "https://..." (case-insensitive scheme).
bool isUrl(const std::string& path);

// Opens the archive at `url`: one range request for its first blocks (size, ETag, range support)
// and the local cache. False with a one-line error: unreachable server, HTTP error status, no
// range support, an empty file.
std::unique_ptr<ByteSource> openHttpSource(const std::string& url, const HttpOptions& options,
                                           std::string& error);

}  // namespace hfa
