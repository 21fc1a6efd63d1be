// request.cpp - request priorities per frame and the camera motion used for prefetching.
#include "render/stream/request.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace hfr {

namespace {

constexpr uint8_t kNeeded = 1;     // in the list being built
constexpr uint8_t kExpanded = 2;   // its ancestors and their children are in too
constexpr uint8_t kCurrent = 4;    // needed by the current view (not only the predicted one)
constexpr uint8_t kRequested = 8;  // already in the request

double wrapDegrees(double d) {  // to [-180, 180)
  d = std::fmod(d + 180.0, 360.0);
  return (d < 0 ? d + 360.0 : d) - 180.0;
}

bool sameCamera(const LodCamera& a, const LodCamera& b) {
  return a.eye == b.eye && a.viewProj == b.viewProj && a.viewportHeight == b.viewportHeight && a.tau == b.tau &&
         a.cull == b.cull;
}

}  // namespace

// ---- CameraMotion ----

void CameraMotion::observe(const Camera& camera, double time) {
  if (!samples_.empty()) {
    const Camera& last = samples_.back().camera;
    const double dx = camera.x - last.x, dy = camera.y - last.y, dz = camera.z - last.z;
    if (std::sqrt(dx * dx + dy * dy + dz * dz) > limits.maxStep) {
      samples_.clear();  // a new view: its motion starts now
    } else if (time <= samples_.back().time) {
      samples_.back().camera = camera;
      return;
    }
  }
  samples_.push_back(Sample{camera, time});
  // Keep the newest pose and the poses within the window before it (at most 64: a stream()
  // loop polls far faster than frames).
  while (samples_.size() > 2 &&
         (samples_.back().time - samples_[1].time >= limits.window || samples_.size() > 64))
    samples_.pop_front();
}

bool CameraMotion::predict(double ahead, Camera& out) const {
  if (samples_.size() < 2 || !(ahead > 0)) return false;
  const Sample& a = samples_.front();
  const Sample& b = samples_.back();
  const double dt = b.time - a.time;
  if (!(dt > 0)) return false;
  const double k = ahead / dt;
  double dx = (b.camera.x - a.camera.x) * k, dy = (b.camera.y - a.camera.y) * k,
         dz = (b.camera.z - a.camera.z) * k;
  const double len = std::sqrt(dx * dx + dy * dy + dz * dz);
  double moved = len;
  if (len > limits.maxDistance) {
    const double s = limits.maxDistance / len;
    dx *= s, dy *= s, dz *= s;
    moved = limits.maxDistance;
  }
  const double yaw = std::clamp(wrapDegrees(b.camera.yaw - a.camera.yaw) * k, -limits.maxTurn,
                                limits.maxTurn);
  const double pitch = std::clamp((b.camera.pitch - a.camera.pitch) * k, -limits.maxTurn,
                                  limits.maxTurn);
  out = b.camera;
  out.x += dx;
  out.y += dy;
  out.z += dz;
  out.yaw = b.camera.yaw + yaw;
  out.pitch = std::clamp(b.camera.pitch + pitch, -89.0, 89.0);
  return moved > limits.minMove || std::fabs(yaw) > limits.minTurn ||
         std::fabs(out.pitch - b.camera.pitch) > limits.minTurn;
}

// ---- RequestPlanner ----

namespace {

// `c` moved to `c.eye + f * (to.eye - c.eye)` with its orientation and projection kept:
// viewProj x T(-d) changes the last column only (column-major).
LodCamera translatedTowards(const LodCamera& c, const LodCamera& to, double f) {
  LodCamera out = c;
  const double d[3] = {f * (to.eye[0] - c.eye[0]), f * (to.eye[1] - c.eye[1]),
                       f * (to.eye[2] - c.eye[2])};
  for (int i = 0; i < 3; ++i) out.eye[size_t(i)] += d[i];
  for (size_t i = 0; i < 4; ++i)
    out.viewProj[12 + i] = c.viewProj[12 + i] - d[0] * c.viewProj[i] - d[1] * c.viewProj[4 + i] -
                           d[2] * c.viewProj[8 + i];
  return out;
}

}  // namespace

void RequestPlanner::reset() {
  aheadCache_.clear();
  sweep_.clear();
  wanted_.clear();
  drawn_.clear();
  blocked_.clear();
  tauStep_ = 0;
  planned_ = LodCamera{};
}

void RequestPlanner::clearMarks() {
  for (size_t t : marked_) mark_[t] = 0;
  marked_.clear();
}

void RequestPlanner::addNeeded(const LodSelector& selector, size_t tile, std::vector<size_t>& out) {
  auto add = [&](size_t t) {
    if (mark_[t] & kNeeded) return;
    if (!mark_[t]) marked_.push_back(t);
    mark_[t] |= kNeeded;
    out.push_back(t);
  };
  add(tile);
  // Ancestors and their children (a refined node needs all of its children). An expanded
  // ancestor has its own ancestors expanded too: stop there.
  for (long p = selector.parent(tile); p >= 0; p = selector.parent(size_t(p))) {
    if (mark_[size_t(p)] & kExpanded) break;
    add(size_t(p));
    mark_[size_t(p)] |= kExpanded;
    for (int c = 0; c < 4; ++c) {
      const long ch = selector.child(size_t(p), c);
      if (ch >= 0) add(size_t(ch));
    }
  }
}

void RequestPlanner::plan(const LodSelector& selector, const DominoPatterns& patterns,
                          const LodCamera& camera, const LodCamera* predicted, PageTable& pages,
                          uint64_t frame, const std::vector<uint8_t>& failed, RequestPlan& out) {
  const std::vector<LodTile>& tiles = selector.pyramid().tiles;
  if (failed.size() != tiles.size() || pages.residency().size() != tiles.size())
    throw std::invalid_argument("request: failed and the page table must have one entry per tile");
  mark_.resize(tiles.size(), 0);
  out.request.clear();
  out.missing.clear();
  out.needed.clear();
  out.stage.clear();
  out.prefetch = out.blocked = 0;

  // What the camera wants now (hysteresis against the previous frame's wish), and what drawing
  // it needs.
  LodSelectOptions opt;
  opt.history = &wanted_;
  std::vector<size_t>& needed = out.needed;
  std::vector<size_t> ahead;
  // The atlas must hold the whole view: when it cannot (a small budget, a view of very many
  // tiles), the wanted selection is made coarser (tau x 1.5 per step) until it fits, rather
  // than thrashing the atlas forever; the drawn selection then refines as far as residency
  // allows. What is still too much after kMaxTauSteps is cut, finest tiles last.
  // The finest step that fits is searched from the last frame's (views change little between
  // frames): one step finer first, so a view that shrank refines again, then coarser while it
  // does not fit. Each try starts from the previous frame's history, as the first one does.
  LodCamera cam = camera;
  std::vector<DrawTile>& want = out.selectedTiles;
  before_.assign(wanted_);
  lastSelections_ = 0;
  auto fits = [&](int step) {
    if (lastSelections_++ > 0) {
      wanted_.assign(before_);
      clearMarks();
      needed.clear();
    }
    cam.tau = camera.tau;
    for (int i = 0; i < step; ++i) cam.tau *= 1.5;
    want = selector.select(cam, patterns, &out.lod, opt);
    for (const DrawTile& d : want) addNeeded(selector, d.tile, needed);
    return needed.size() <= pages.capacity();
  };
  int step = std::clamp(tauStep_ - 1, 0, kMaxTauSteps);
  if (fits(step)) {
    while (step > 0) {  // finer while that fits too; else back to the finest that did
      if (!fits(step - 1)) {
        fits(step);
        break;
      }
      --step;
    }
  } else {
    while (step < kMaxTauSteps)  // coarser until it fits (after the last step, cut)
      if (fits(++step)) break;
  }
  tauStep_ = step;
  planned_ = camera;
  out.tau = cam.tau;
  for (size_t t : needed) mark_[t] |= kCurrent;
  out.wanted = want.size();
  out.selected.clear();
  for (const DrawTile& d : want) out.selected.push_back(d.tile);
  out.predictedSelected.clear();
  // What the predicted camera will want, beyond that (no history: a look ahead, not a frame).
  // The prediction moves slowly (it is prefetchSeconds ahead), so its selection is made every
  // kPrefetchEvery frames and reused in between: the render thread selects for it every other
  // frame only, and the prefetch tiles stay in the request every frame.
  // When the motion starts, no earlier prediction covers the time until the predicted camera:
  // the sweep adds the selections of cameras a quarter, half and three quarters of the way
  // there (the current view translated), kept in the request for kSweepRefreshes refreshes.
  if (predicted) {
    if (aheadCache_.empty() || frame >= aheadFrame_ + kPrefetchEvery || frame < aheadFrame_) {
      if (aheadCache_.empty()) {
        sweep_.clear();
        for (double f : {0.25, 0.5, 0.75})
          for (const DrawTile& d :
               selector.select(translatedTowards(camera, *predicted, f), patterns))
            sweep_.push_back(d.tile);
        sweepRefreshes_ = 0;
      } else if (++sweepRefreshes_ > kSweepRefreshes) {
        sweep_.clear();
      }
      aheadCache_.clear();
      for (const DrawTile& d : selector.select(*predicted, patterns)) aheadCache_.push_back(d.tile);
      aheadFrame_ = frame;
    }
    for (size_t t : sweep_)
      if (t < tiles.size()) addNeeded(selector, t, ahead);
    for (size_t t : aheadCache_)
      if (t < tiles.size()) addNeeded(selector, t, ahead);
    out.predictedSelected = aheadCache_;
  } else {
    aheadCache_.clear();
    sweep_.clear();
  }

  auto coarseFirst = [&](size_t a, size_t b) { return tiles[a].level > tiles[b].level; };
  std::stable_sort(needed.begin(), needed.end(), coarseFirst);
  std::stable_sort(ahead.begin(), ahead.end(), coarseFirst);
  if (needed.size() > pages.capacity()) needed.resize(pages.capacity());

  // Touch: prefetch tiles as used in the previous frame (ahead of stale tiles in the LRU, still
  // evictable now), then the current ones (not evictable this frame). At most the slots the
  // current view leaves free go to prefetching.
  const size_t cap = pages.capacity() > needed.size() ? pages.capacity() - needed.size() : 0;
  std::vector<size_t> prefetchRequest;
  for (size_t i = 0; i < ahead.size(); ++i) {
    const size_t t = ahead[i];
    if (i >=
        cap) {  // no atlas slot for it now: read ahead outside the atlas (StreamStrategy::stage)
      if (!pages.resident(t) && !failed[t]) out.stage.push_back(t);
    } else if (pages.resident(t)) {
      pages.touch(t, frame > 0 ? frame - 1 : 0);
    } else if (!failed[t]) {
      prefetchRequest.push_back(t);
    }
  }
  for (size_t t : needed) {
    if (pages.resident(t)) pages.touch(t, frame);
    else if (!failed[t]) out.missing.push_back(t);
  }

  // Request: first the missing tiles that forced the drawn selection to coarsen a balance
  // split (the coarsening lasts until they arrive), then the rest of the current view, then
  // the prefetch.
  for (size_t t : blocked_) {
    if (t >= tiles.size() || !(mark_[t] & kCurrent) || (mark_[t] & kRequested)) continue;
    if (pages.resident(t) || failed[t]) continue;
    mark_[t] |= kRequested;
    out.request.push_back(t);
  }
  out.blocked = out.request.size();
  for (size_t t : out.missing)
    if (!(mark_[t] & kRequested)) out.request.push_back(t);
  out.request.insert(out.request.end(), prefetchRequest.begin(), prefetchRequest.end());
  out.prefetch = prefetchRequest.size();
  clearMarks();
}

std::vector<DrawTile> RequestPlanner::selectDrawn(const LodSelector& selector,
                                                  const DominoPatterns& patterns,
                                                  const LodCamera& camera,
                                                  const std::vector<uint8_t>& usable,
                                                  LodStats* stats, const RequestPlan* plan) {
  blocked_.clear();
  if (plan && !plan->selectedTiles.empty() && plan->tau == camera.tau && sameCamera(planned_, camera) &&
      usable.size() == selector.pyramid().tiles.size() &&
      std::all_of(plan->needed.begin(), plan->needed.end(), [&](size_t t) { return usable[t] != 0; })) {
    // select(camera, usable, drawn_) would give the wanted selection once drawn_ is wanted_'s
    // history: every tile it refines through is usable, so no split is blocked.
    drawn_.assign(wanted_);
    if (stats) *stats = plan->lod;
    return plan->selectedTiles;
  }
  LodSelectOptions opt;
  opt.usable = &usable;
  opt.history = &drawn_;
  opt.blocked = &blocked_;
  return selector.select(camera, patterns, stats, opt);
}

}  // namespace hfr
