// camera_path.h - camera paths for flythroughs and the benchmark (issue 5, hfbench flythrough /
// hfview --bench): timed camera keys, interpolation, the thesis's diagonal benchmark path, a
// small text file format and a recorder the viewer feeds every frame. GL-free and window-free;
// unit tests: tests/render_camera_path_test.cpp (label "render").
//
// World frame as in camera.h: x east, y north, z up, metres from the archive's south-west
// corner; yaw 0 = east, 90 = north; pitch < 0 looks down.
//
// Interpolation (CameraPath::at): position, pitch and fovY linearly between the two keys around
// t; yaw along the shorter arc (350 -> 10 turns 20 degrees through 0, never 340 back), result
// in [-180, 180]; clamped to the first / last key outside [startTime(), endTime()].
//
// Text format (CameraPath::load / save / parse / toText), UTF-8 or ASCII:
//   - one key per line: `t x y z yaw pitch [fovY]`, numbers separated by spaces or tabs;
//     t in seconds, x y z in metres, yaw pitch fovY in degrees; fovY defaults to 45;
//   - `#` starts a comment (whole line or after the numbers); blank lines are ignored; CR LF
//     line ends are accepted;
//   - t strictly increasing from line to line; every value finite; pitch in [-90, 90]; fovY in
//     (0, 180); at least one key; a line at most kMaxLineLength characters, a file at most
//     kMaxFileBytes.
//   Numbers are read with std::from_chars (locale-independent: `1.5`, `-2e3`; no `1,5`).
//   save writes the shortest text that reads back to the same doubles (round trip is exact).
//   Example:
//       # t x y z yaw pitch fovY
//       0    100  100  2500  45  -20  45
//       12.5 900  900  2500  45  -20  45
// Errors are one line without a trailing newline, `FILE:LINE: what` for a bad line
// (e.g. `p.txt:3: expected 6 or 7 numbers (t x y z yaw pitch [fovY]), got 5`) and
// `FILE: what` otherwise (cannot read / empty / too large). Loading never crashes, asserts or
// allocates more than the file cap on any input; a failed load leaves the path unchanged.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "render/camera/camera.h"

namespace hfr {

struct CameraKey {
  double t = 0;  // seconds
  Camera camera;
};

class CameraPath {
 public:
  static constexpr size_t kMaxLineLength = 4096;            // characters, without the line end
  static constexpr size_t kMaxFileBytes = size_t(64) << 20;  // 64 MiB (~ 1 M keys)

  // diagonal(): the pitch of the benchmark camera. -20 degrees with the default 45-degree
  // vertical field of view puts the horizon just inside the top of the image (the view spans
  // -42.5 .. +2.5 degrees): every frame then holds terrain from right below the camera (finest
  // LOD) out to the horizon (coarsest), the mix that loads LOD selection and streaming the
  // way a real flight does. Steeper views see only a patch of fine tiles, level ones half sky.
  static constexpr double kDiagonalPitch = -20;

  CameraPath() = default;
  // Keys in any order; they are sorted by t (stable: keys with equal t keep their order, and
  // at() jumps to the later one).
  explicit CameraPath(std::vector<CameraKey> keys);

  // Inserts a key at its place by t (after keys with the same t).
  void add(const CameraKey& key);
  void clear() { keys_.clear(); }

  bool empty() const { return keys_.empty(); }
  size_t size() const { return keys_.size(); }
  const std::vector<CameraKey>& keys() const { return keys_; }
  double startTime() const { return keys_.empty() ? 0 : keys_.front().t; }
  double endTime() const { return keys_.empty() ? 0 : keys_.back().t; }
  double duration() const { return endTime() - startTime(); }  // 0 for 0 or 1 keys

  // The pose at time t (see the top of this file). An empty path gives Camera{}; t NaN gives
  // the first key.
  Camera at(double t) const;

  // The thesis's benchmark path: a straight flight from the south-west corner (0, 0) to the
  // north-east corner (extentX, extentY) at constant world z = altitude and `speed` m/s,
  // looking along the direction of travel (yaw = atan2(extentY, extentX)), pitched down by
  // `pitch` degrees, field of view fovY. Two keys: t = 0 at the start, t = length / speed at the
  // end. `inset` in [0, 0.5) moves both ends towards the centre by that fraction of each extent
  // (e.g. 0.02: the flight starts above the terrain, not on its edge, and its last views are
  // not mostly outside the terrain). Empty path when an argument is out of range (non-finite,
  // extents < 0, speed <= 0, inset outside [0, 0.5), pitch outside [-90, 90], fovY outside
  // (0, 180)); a single key when the flight has zero length.
  static CameraPath diagonal(double extentX, double extentY, double altitude, double speed,
                             double inset = 0, double pitch = kDiagonalPitch, double fovY = 45);

  // File I/O in the text format above. load replaces the keys only on success.
  bool load(const std::string& path, std::string& error);
  bool save(const std::string& path, std::string& error) const;
  // The same without a file; `source` names the text in errors (e.g. a file name).
  bool parse(std::string_view text, const std::string& source, std::string& error);
  // The file's text; false (with error "key N: ...") when the keys would not load back: no
  // keys, a non-finite value, t not strictly increasing, pitch or fovY out of range.
  bool toText(std::string& text, std::string& error) const;

 private:
  std::vector<CameraKey> keys_;
};

// Records the viewer's camera into a small path: call add(t, camera) every frame while
// recording. A new key is kept only when needed: when playing back the kept keys
// (CameraPath::at) would miss a recorded frame's pose by more than the thresholds below, or
// when the last kept key is `maxInterval` old. So a steady straight flight or a still camera
// costs 1 / maxInterval keys a second (4 by default), and turns cost what they need. Times in
// the path start at 0 at the first add(); frames whose t is not after the previous frame's, or
// with a non-finite value, are ignored. Poses are rounded to 1 mm and 1e-4 degrees and times
// to 1 us as they come in, so a saved line is ~60 characters (shortest round-trip text).
class CameraPathRecorder {
 public:
  struct Thresholds {
    double position = 0.25;    // metres between the recorded and the played-back eye
    double angle = 0.25;       // degrees, yaw and pitch
    double fovY = 0.05;        // degrees
    double maxInterval = 0.25; // seconds between kept keys at most
  };

  CameraPathRecorder() = default;
  explicit CameraPathRecorder(const Thresholds& thresholds) : thresholds_(thresholds) {}

  void add(double t, const Camera& camera);
  void clear();

  // The kept keys plus the latest frame's pose (so the path ends where the camera is now).
  CameraPath path() const;
  bool empty() const { return keys_.empty(); }
  size_t keptKeys() const { return keys_.size(); }  // without the latest frame
  double duration() const;                           // seconds since the first add()

 private:
  // A frame of the pending stretch after the last kept key is off the line from that key to
  // `candidate` by more than the thresholds.
  bool stretchNeedsKey(const CameraKey& candidate) const;

  Thresholds thresholds_;
  double t0_ = 0;
  std::vector<CameraKey> keys_;     // kept (relative t)
  std::vector<CameraKey> pending_;  // frames after keys_.back(), not kept yet (relative t)
};

}  // namespace hfr
