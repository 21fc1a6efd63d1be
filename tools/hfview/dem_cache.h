// dem_cache.h - `hfview DEM.tif` (issue 15): a DEM (anything GDAL reads: one file, several tiles
// or a VRT), packed once into an archive in a cache folder and opened from there afterwards.
//
// The packing runs the hfpack binary as a child process rather than linking its library: the
// viewer stays free of GDAL (and of GDAL's own threads and memory in the render process), a
// crash or an out-of-memory while reading a hostile file cannot take the viewer down, and
// hfpack's checks and one-line errors are the ones a user of hfpack already knows.
//
// Cache: $XDG_CACHE_HOME/hfview (default ~/.cache/hfview), one archive per set of inputs named
// after the first input and keyed by every input's absolute path, size and modification time
// (and the imagery's), so an edited DEM is packed again. The archive is written as
// NAME.tmp.PID and renamed when complete: a killed pack leaves no half archive, and a later run
// removes temporaries whose process is gone. The folder is bounded ($HFVIEW_CACHE_MIB, default
// 4096): after a pack the least recently used archives are removed until it fits (a cache hit
// refreshes its archive's time); the archive just made is never removed.
//
// The window packs in the background (PackJob): a preview first (the DEM read downsampled to
// kPreviewSide samples on its longer side, hfpack --max-size: a second or two, so a large DEM
// shows at once and can be flown over), then the full archive with its progress shown; the
// viewer swaps the preview for it when it is complete. The preview is cached beside the full
// archive until that exists.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace hfview {

struct DemCacheRequest {
  std::vector<std::string> inputs;  // DEMs for hfpack
  std::string imagery;              // optional imagery for hfpack --imagery
  std::vector<std::string> packOptions;  // more hfpack options (part of the cache key)
  std::string cacheDir;             // "" = $XDG_CACHE_HOME/hfview or ~/.cache/hfview
  std::string hfpack;               // "" = $HF_HFPACK, hfpack beside hfview, then PATH
  bool quiet = false;
};

struct DemCacheResult {
  std::string archive;  // the archive to open
  bool fromCache = false;
  double packSeconds = 0;
};

// True when `path` starts with the archive magic (an .hfa, whatever its name).
bool isArchiveFile(const std::string& path);

// The cached archive for the request, packing it first when needed. False and a one-line error
// (no "Error:" prefix) when an input is missing, hfpack is not found or fails (its own message).
bool archiveForDems(const DemCacheRequest& request, DemCacheResult& result, std::string& error);

// Longer side of the preview archive, in samples.
constexpr int kPreviewSide = 1025;

// A DEM cache request carried out on a thread: the preview, then the full archive. Polled once
// a frame by the window; destroying it cancels a pack in progress (hfpack is interrupted and
// leaves no file) and waits for the thread.
class PackJob {
 public:
  enum class Stage { Preview, Full, Done, Failed };
  struct Status {
    Stage stage = Stage::Preview;
    double fraction = 0;  // of the current stage, 0..1 (hfpack --progress-lines)
    std::string preview;  // the preview archive, once it exists (Stage Full)
    std::string archive;  // the full archive (Stage Done)
    std::string error;    // Stage Failed: one line
    double seconds = 0;   // since the job started
    bool fromCache = false;  // Done without packing
  };

  explicit PackJob(DemCacheRequest request);
  ~PackJob();
  PackJob(const PackJob&) = delete;
  PackJob& operator=(const PackJob&) = delete;

  Status status() const;
  const DemCacheRequest& request() const { return request_; }

 private:
  void run();
  DemCacheRequest request_;
  mutable std::mutex mutex_;
  Status status_;
  std::atomic<bool> cancel_{false};
  std::atomic<int> child_{0};  // hfpack's pid while one runs
  std::atomic<bool> finished_{false};
  double startTime_ = 0;
  std::thread thread_;
};

}  // namespace hfview
