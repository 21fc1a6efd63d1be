// bookmarks.h - camera views kept per archive in one JSON file (issue 15: hfview's Ctrl+1..9
// saves the view, 1..9 flies back to it). GL-free, unit-tested.
//
// The file ($XDG_CONFIG_HOME/hfview/bookmarks.json, else ~/.config/hfview/bookmarks.json) holds
// every archive's views, keyed by the archive's absolute path:
//   {"version": 1, "archives": {"/data/ps.hfa": {"1": {"x": .., "y": .., "z": .., "yaw": ..,
//    "pitch": .., "fov": ..}, ...}}}
// Saving re-reads the file first (another hfview may have saved since), changes one entry and
// replaces the file atomically (a temporary file renamed over it). A file that is not such JSON
// is never overwritten: the bookmarks then stay in memory only and error() says why.
#pragma once

#include <array>
#include <optional>
#include <string>

#include "render/camera/camera.h"

namespace hfr {

class CameraBookmarks {
 public:
  static constexpr int kSlots = 9;  // slots 1..9

  static std::string defaultFile();  // "" when neither XDG_CONFIG_HOME nor HOME is set
  // Reads `file` for `archiveKey` (missing file: no bookmarks yet). False (and error()) when
  // the file exists but cannot be used; the bookmarks are then memory-only.
  bool load(const std::string& file, const std::string& archiveKey);
  std::optional<Camera> get(int slot) const;
  // Sets slot 1..9 and saves; false (and error()) when the file could not be written (the view
  // is still kept in memory).
  bool set(int slot, const Camera& camera);
  const std::string& error() const { return error_; }

 private:
  std::string file_, key_, error_;
  bool fileUsable_ = true;
  std::array<std::optional<Camera>, kSlots> slots_{};
};

}  // namespace hfr
