// request.h - which tiles the renderer asks its StreamStrategy for each frame, in which order,
// and the camera motion it extrapolates to prefetch (issue 5, docs/rendering.md sections 3-4).
// GL-free: the unit tests drive it with a PageTable and a simulated loader.
//
// - CameraMotion: recent poses -> velocity (position, yaw, pitch) over a short window -> the pose
//   `ahead` seconds later, bounded in distance and turn; a jump larger than maxStep (a new
//   view, not motion) restarts the history.
// - RequestPlanner: per frame, (1) the selection on the full pyramid for the camera (with
//   hysteresis), (2) every tile needed to draw it: the selected tiles, their ancestors and all
//   children of every ancestor (the selector refines all-or-nothing), (3) optionally the same for
//   a predicted camera. The request is, most important first: the missing tiles whose absence
//   made the last drawn selection coarsen a balance split, then the needed tiles (coarse levels
//   first, so the view refines progressively), then the prefetch tiles (coarse first, capped to
//   the atlas slots the current view leaves free; the rest of them are `stage`d). Resident
//   needed tiles are touched in the PageTable (never evicted this frame); resident prefetch
//   tiles are touched as used in the previous frame: kept ahead of stale tiles in the LRU, but
//   evictable for what this frame needs.
//   selectDrawn() is the drawn selection (restricted to resident tiles, own hysteresis).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <vector>

#include "render/camera/camera.h"
#include "render/lod/lod.h"
#include "render/stream/stream.h"

namespace hfr {

class CameraMotion {
 public:
  struct Limits {
    double window = 0.25;  // seconds of history the velocity is measured over
    // Larger jumps between two observations are new views, not motion: the history restarts.
    double maxStep = std::numeric_limits<double>::infinity();
    double maxDistance = std::numeric_limits<double>::infinity();  // prediction moves at most
    double maxTurn = 45;  // degrees of yaw and of pitch the prediction turns at most
    // A prediction closer than this (world units and degrees) is "not moving".
    double minMove = 0, minTurn = 0.5;
  };
  Limits limits;

  // A pose at `time` (seconds, increasing; equal times replace the last pose).
  void observe(const Camera& camera, double time);
  // The pose `ahead` seconds after the last one; false when there is no motion to extrapolate
  // (fewer than two poses, or the prediction is within minMove / minTurn of the last pose).
  bool predict(double ahead, Camera& out) const;
  void reset() { samples_.clear(); }

 private:
  struct Sample {
    Camera camera;
    double time;
  };
  std::deque<Sample> samples_;
};

struct RequestPlan {
  std::vector<size_t> request;  // for StreamStrategy::request, most important first
  std::vector<size_t> missing;  // needed tiles neither resident nor failed, coarse first
  std::vector<size_t> needed;   // the current view's tiles with their ancestors and the
                                // ancestors' children, coarse first (resident ones touched)
  size_t wanted = 0;            // tiles in the full selection for the camera
  std::vector<size_t> selected;           // that selection (tile indices): what imagery follows
  std::vector<DrawTile> selectedTiles;    // the same as select() gave it (selectDrawn reuses it)
  std::vector<size_t> predictedSelected;  // the predicted camera's selection (empty: none)
  size_t blocked = 0;           // tiles requested first to end a balance coarsening
  size_t prefetch = 0;          // tiles in `request` for the predicted camera only
  // The predicted camera's tiles beyond the atlas slots the current view leaves free (coarse
  // first; none resident or failed): for StreamStrategy::stage, which may read them ahead into
  // memory outside the atlas, so that they are delivered in the frame they become wanted.
  std::vector<size_t> stage;
  double tau = 0;               // tau of the wanted selection: the camera's, or larger when
                                // the atlas cannot hold the view at the camera's tau
  LodStats lod;                 // of the full selection for the camera
};

class RequestPlanner {
 public:
  static constexpr int kMaxTauSteps = 12;  // tau x 1.5^12 = x 130 at most, then the view is cut
  // Frames between two predicted selections. Each looks prefetchSeconds ahead, so the times
  // they cover are kPrefetchEvery frames apart: a tile wanted for fewer frames than that (a
  // balance split at the view's edge) could fall between two and be first asked for in the
  // frame it is wanted (issue 18's flights: 4 tiles every few hundred frames at every 4th).
  static constexpr uint64_t kPrefetchEvery = 2;
  static constexpr int kSweepRefreshes = 24;  // refreshes a motion start's sweep stays requested
  // One frame's request. `predicted` (optional): the camera expected a little later; its
  // tiles come last. `failed` (one entry per tile): tiles that cannot be loaded (never asked
  // for). Touches resident tiles in `pages` for `frame`.
  void plan(const LodSelector& selector, const DominoPatterns& patterns, const LodCamera& camera,
            const LodCamera* predicted, PageTable& pages, uint64_t frame,
            const std::vector<uint8_t>& failed, RequestPlan& out);
  // The selection to draw: only `usable` tiles, with its own hysteresis. Remembers the missing
  // tiles that blocked a balance split; the next plan() asks for them first.
  // With `plan` (this planner's last plan()): when that plan was made for `camera` at its own
  // tau and every tile it needs is usable, the drawn selection is its wanted one (what a
  // select() restricted to `usable` gives with the same history), adopted with its history
  // instead of selecting a second time: one LOD selection per frame once the view is loaded.
  std::vector<DrawTile> selectDrawn(const LodSelector& selector, const DominoPatterns& patterns,
                                    const LodCamera& camera, const std::vector<uint8_t>& usable,
                                    LodStats* stats = nullptr, const RequestPlan* plan = nullptr);
  // Selections that plan() made for its last request: 1 when the atlas holds the view at the
  // camera's tau, 2 for a still view settled at a coarser step (one finer try, then that step).
  int lastSelections() const { return lastSelections_; }
  // LOD hysteresis factor h of both selections (LodHistory::factor; 1 = none).
  void setHysteresis(double h) { wanted_.factor = drawn_.factor = h; }
  void reset();

 private:
  // Adds `tile`, its ancestors and the ancestors' children to `out` (once each).
  void addNeeded(const LodSelector& selector, size_t tile, std::vector<size_t>& out);
  void clearMarks();

  LodHistory wanted_, drawn_;
  LodHistory before_;    // wanted_ before this plan's first try (every try starts from it)
  int tauStep_ = 0;      // the last plan's tau step (tau x 1.5^step fitted the atlas)
  int lastSelections_ = 0;
  LodCamera planned_;    // the camera of the last plan (selectDrawn reuses only for it)
  std::vector<size_t> blocked_;
  std::vector<size_t> aheadCache_;  // the predicted camera's selection (kPrefetchEvery frames)
  std::vector<size_t> sweep_;       // selections between the camera and the first prediction
  int sweepRefreshes_ = 0;
  uint64_t aheadFrame_ = 0;
  std::vector<uint8_t> mark_;  // per tile: kNeeded | kExpanded | kCurrent
  std::vector<size_t> marked_;
};

}  // namespace hfr
