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
#pragma once

#include <string>
#include <vector>

namespace hfview {

struct DemCacheRequest {
  std::vector<std::string> inputs;  // DEMs for hfpack
  std::string imagery;              // optional imagery for hfpack --imagery
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

}  // namespace hfview
