// GL-free atlas bookkeeping (src/render/stream): atlas layout within a budget, LRU page table,
// request priorities and camera-motion prefetch (RequestPlanner, CameraMotion) against a
// simulated loader.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <map>
#include <set>
#include <vector>

#include "render/stream/compressed_cache.h"
#include "render/stream/request.h"
#include "render/stream/retry.h"
#include "render/stream/staged_payloads.h"
#include "render/stream/stream.h"

namespace {

TEST(AtlasLayout, FitsTheBudgetAndKeepsTheTopLevel) {
  // 129 x 129 x 2 bytes = 33282 bytes a tile: 64 MiB hold 2016 tiles.
  const hfr::AtlasLayout a = hfr::AtlasLayout::fromBudget(129, 64, 100000, 1);
  EXPECT_LE(a.bytes(), size_t(64) << 20);
  EXPECT_GE(a.capacity(), 1792u);  // whole layers of 16 x 16 slots within the budget
  EXPECT_LE(a.layerSize(), 16 * 129);
  // Never more slots than the archive has tiles (a small archive gets a small atlas).
  const hfr::AtlasLayout b = hfr::AtlasLayout::fromBudget(129, 1024, 341, 1);
  EXPECT_GE(b.capacity(), 341u);
  EXPECT_LT(b.capacity(), 341u + b.slotsPerLayer());
  // The top level is granted even over budget.
  const hfr::AtlasLayout c = hfr::AtlasLayout::fromBudget(129, 0.01, 341, 4);
  EXPECT_GE(c.capacity(), 4u);
  // Slots tile the layers without overlap.
  std::set<std::tuple<uint32_t, uint32_t, uint32_t>> seen;
  for (uint32_t s = 0; s < b.capacity(); ++s) {
    const hfr::AtlasSlot sl = b.slot(s);
    EXPECT_LT(sl.layer, b.layers);
    EXPECT_LE(sl.x + 129, uint32_t(b.layerSize()));
    EXPECT_LE(sl.y + 129, uint32_t(b.layerSize()));
    EXPECT_TRUE(seen.insert({sl.layer, sl.x, sl.y}).second);
  }
}

TEST(PageTable, EvictsTheLeastRecentlyUsedTileNotInUseThisFrame) {
  hfr::PageTable pt(10, 3);
  uint32_t s = 0;
  long ev = -1;
  ASSERT_TRUE(pt.allocate(0, 1, s, ev));
  EXPECT_EQ(ev, -1);
  ASSERT_TRUE(pt.allocate(1, 1, s, ev));
  ASSERT_TRUE(pt.allocate(2, 2, s, ev));
  EXPECT_EQ(pt.residentCount(), 3u);
  pt.touch(0, 3);  // 1 is now the least recently used
  ASSERT_TRUE(pt.allocate(3, 3, s, ev));
  EXPECT_EQ(ev, 1);
  EXPECT_FALSE(pt.resident(1));
  EXPECT_TRUE(pt.resident(3));
  EXPECT_EQ(pt.slot(3), long(s));
  // Everything is in use in frame 3 except tile 2 (frame 2): it goes next.
  ASSERT_TRUE(pt.allocate(4, 3, s, ev));
  EXPECT_EQ(ev, 2);
  // Now 0, 3, 4 are all used in frame 3: no slot.
  EXPECT_FALSE(pt.allocate(5, 3, s, ev));
  // Pinned tiles are never evicted.
  pt.pin(0);
  ASSERT_TRUE(pt.allocate(5, 4, s, ev));
  EXPECT_EQ(ev, 3);
  ASSERT_TRUE(pt.allocate(6, 5, s, ev));
  EXPECT_EQ(ev, 4);
  ASSERT_TRUE(pt.allocate(7, 6, s, ev));
  EXPECT_EQ(ev, 5);
  EXPECT_TRUE(pt.resident(0));
  EXPECT_EQ(pt.residency()[0], 1);
  EXPECT_EQ(pt.residency()[5], 0);
  pt.release(7);
  EXPECT_EQ(pt.residentCount(), 2u);
  ASSERT_TRUE(pt.allocate(8, 6, s, ev));
  EXPECT_EQ(ev, -1);
}

// ---- CameraMotion ----

TEST(CameraMotion, ExtrapolatesAStraightFlightAndATurn) {
  hfr::CameraMotion m;
  hfr::Camera c;
  c.x = 100, c.y = 200, c.z = 300, c.yaw = 170, c.pitch = -10;
  hfr::Camera out;
  m.observe(c, 0);
  EXPECT_FALSE(m.predict(0.5, out)) << "one pose: no motion yet";
  m.observe(c, 1.0 / 60);
  EXPECT_FALSE(m.predict(0.5, out)) << "standing still";
  // 60 m/s east, 12 m/s up, turning left at 30 degrees a second (across +-180).
  for (int f = 2; f <= 30; ++f) {
    hfr::Camera p = c;
    const double t = (f - 1) / 60.0;
    p.x += 60 * t;
    p.z += 12 * t;
    p.yaw += 30 * t;
    m.observe(p, f / 60.0);
  }
  ASSERT_TRUE(m.predict(0.5, out));
  const double t = 29 / 60.0 + 0.5;
  EXPECT_NEAR(out.x, 100 + 60 * t, 1e-6);
  EXPECT_NEAR(out.y, 200, 1e-6);
  EXPECT_NEAR(out.z, 300 + 12 * t, 1e-6);
  EXPECT_NEAR(out.yaw, 170 + 30 * t, 1e-6);  // past 180: continuous, not wrapped
  EXPECT_NEAR(out.pitch, -10, 1e-9);
  // Bounded: distance and turn.
  m.limits.maxDistance = 10;
  m.limits.maxTurn = 5;
  ASSERT_TRUE(m.predict(0.5, out));
  hfr::Camera last;
  ASSERT_TRUE(m.predict(1e-9, last));
  EXPECT_NEAR(std::hypot(out.x - last.x, out.z - last.z), 10, 1e-6);
  EXPECT_NEAR(out.yaw - last.yaw, 5, 1e-6);
  // A jump larger than maxStep is a new view: no motion until it moves again.
  m.limits.maxStep = 1000;
  hfr::Camera far = c;
  far.x += 5000;
  m.observe(far, 1.0);
  EXPECT_FALSE(m.predict(0.5, out));
}

// ---- RequestPlanner against a simulated loader ----

namespace {

// 64 x 64 level-0 tiles of 33 samples, 7 levels, 10 m spacing (a 20 km square) with the errors
// of a self-similar terrain: lodError[k] ~ the mesh step 10 m * 2^(level + k) / 20.
hfr::LodPyramid flightPyramid() {
  hfr::LodPyramid pyr;
  pyr.tileLog = 5;
  pyr.levels = 7;
  pyr.width = pyr.height = 64 * 32 + 1;
  pyr.spacingX = pyr.spacingY = 10;
  uint32_t lcg = 7;
  for (int L = 0; L < pyr.levels; ++L)
    for (uint32_t y = 0; y < pyr.tilesY(L); ++y)
      for (uint32_t x = 0; x < pyr.tilesX(L); ++x) {
        hfr::LodTile t;
        t.level = L;
        t.x = x;
        t.y = y;
        lcg = lcg * 1664525u + 1013904223u;
        const double rough = 0.5 + double(lcg >> 8) / double(1u << 24);
        const double span = 320.0 * double(1 << L);
        const double mid = 200 + 150 * std::sin((x + 0.5) * span * 4e-4);
        t.minZ = float(mid - std::min(150.0, 10 + 0.05 * span));
        t.maxZ = float(mid + std::min(150.0, 10 + 0.05 * span));
        t.lodError.assign(6, 0.0f);
        for (int k = 1; k <= 5; ++k) t.lodError[size_t(k)] = float(0.5 * rough * double(1 << (L + k)));
        pyr.tiles.push_back(t);
      }
  return pyr;
}

hfr::LodCamera lodCamera(const hfr::Camera& c) {
  hfr::LodCamera l;
  l.eye = {c.x, c.y, c.z};
  l.viewProj = c.viewProj(16.0 / 9, 1, 1e5);
  l.viewportHeight = 540;
  l.tau = 2;
  return l;
}

struct FlightResult {
  size_t missing = 0;        // sum over the flight of needed tiles not resident after delivery
  size_t readyOnArrival = 0;  // tiles resident the first frame they were needed
  size_t arrivals = 0;        // tiles that became needed during the flight
  size_t prefetchRequests = 0;
  size_t evictedInUse = 0;    // tiles needed and resident at plan time, gone after delivery
  size_t maxNeeded = 0;
  size_t evictions = 0;
  size_t staged = 0;      // tiles read into memory outside the atlas (RequestPlan::stage)
  size_t fromMemory = 0;  // requests answered from there in their frame
};

// A deterministic loader: request() replaces the queue of tiles not started; each frame it
// starts at most `perFrame` tiles from the front of the request, which arrive `latency` frames
// later into the page table (as CpuStreamStrategy and the renderer do, minus the threads).
// The camera stands still for 40 frames (everything loads), then flies east at 240 m/s with a
// fixed 1/30 s frame time for 150 frames.
// `staging`: the loader also reads the plan's staged tiles (after the requested ones, within the
// same per-frame start limit) into memory outside the atlas, and a requested tile found there
// arrives in the frame of its request (the cuda strategy's host cache, staged_payloads.h).
FlightResult fly(bool prefetch, size_t capacity, bool staging = false) {
  static const hfr::LodPyramid pyr = flightPyramid();
  static const hfr::DominoPatterns patterns(pyr.tileLog);
  static const hfr::LodSelector selector(pyr);
  const size_t T = pyr.tiles.size();
  const int top = pyr.levels - 1;
  const size_t perFrame = 6;
  const uint64_t latency = 8;
  const double dt = 1.0 / 30;
  hfr::PageTable pages(T, capacity);
  std::vector<uint8_t> failed(T, 0), seen(T, 0);
  for (size_t t = 0; t < T; ++t)
    if (pyr.tiles[t].level == top) {
      uint32_t slot;
      long ev;
      pages.allocate(t, 0, slot, ev);
      pages.pin(t);
    }
  hfr::RequestPlanner planner;
  hfr::CameraMotion motion;
  motion.limits.maxStep = motion.limits.maxDistance = 4000;
  motion.limits.minMove = 1;
  std::map<size_t, uint64_t> inFlight;  // tile -> frame it arrives
  std::map<size_t, uint64_t> stagedAt;  // staged tile -> frame it is in memory (unbounded memory)
  hfr::RequestPlan plan;
  FlightResult r;
  const int still = 40, flight = 150;
  for (int f = 1; f <= still + flight; ++f) {
    const uint64_t frame = uint64_t(f);
    hfr::Camera cam;
    cam.x = 3000 + 240 * dt * std::max(0, f - still);
    cam.y = 10000;
    cam.z = 450;
    cam.yaw = 0;
    cam.pitch = -12;
    motion.observe(cam, f * dt);
    hfr::Camera next;
    const bool moving = motion.predict(0.75, next);
    const hfr::LodCamera ahead = lodCamera(next);
    planner.plan(selector, patterns, lodCamera(cam), prefetch && moving ? &ahead : nullptr, pages,
                 frame, failed, plan);
    std::vector<size_t> inUse;  // needed and resident: touched for this frame
    for (size_t t : plan.needed)
      if (pages.resident(t)) inUse.push_back(t);
    r.maxNeeded = std::max(r.maxNeeded, plan.needed.size());
    // Start the first tiles of the request that are not loading already.
    size_t started = 0;
    for (size_t t : plan.request) {
      if (started == perFrame) break;
      if (inFlight.count(t)) continue;
      const auto mem = stagedAt.find(t);
      if (mem != stagedAt.end() && mem->second <= frame) {  // in memory: this frame, no read
        inFlight.emplace(t, frame);
        ++r.fromMemory;
        continue;
      }
      inFlight.emplace(t, frame + latency);
      ++started;
    }
    // Staged tiles must never be resident or requested in the same plan.
    for (size_t t : plan.stage) {
      EXPECT_FALSE(pages.resident(t)) << "frame " << f;
      EXPECT_EQ(std::count(plan.request.begin(), plan.request.end(), t), 0) << "frame " << f;
    }
    if (!prefetch) {
      EXPECT_TRUE(plan.stage.empty());
    }
    for (size_t i = 0; staging && i < plan.stage.size() && started < perFrame; ++i)
      if (stagedAt.emplace(plan.stage[i], frame + latency).second) ++started, ++r.staged;
    // Deliver what is done.
    for (auto it = inFlight.begin(); it != inFlight.end();) {
      if (it->second > frame) {
        ++it;
        continue;
      }
      uint32_t slot;
      long ev;
      pages.allocate(it->first, frame, slot, ev);  // false: dropped (asked again later)
      r.evictions += ev >= 0;
      it = inFlight.erase(it);
    }
    // The drawn selection (it also tells the planner which tiles blocked a balance split).
    hfr::LodStats ls;
    planner.selectDrawn(selector, patterns, lodCamera(cam), pages.residency(), &ls);
    EXPECT_EQ(ls.cornerClamps, 0u);
    if (f <= still) {
      for (size_t t : plan.missing) seen[t] = 1;
      continue;
    }
    r.prefetchRequests += plan.prefetch;
    for (size_t t : plan.missing) r.missing += !pages.resident(t);
    // A needed tile that was resident at plan time is still resident: deliveries (prefetch
    // ones included) never evict what this frame uses.
    for (size_t t : inUse) r.evictedInUse += !pages.resident(t);
    for (size_t t : plan.missing)
      if (!seen[t]) seen[t] = 1, ++r.arrivals;
  }
  return r;
}

}  // namespace

TEST(RequestPlanner, PrefetchLoadsTheTilesAheadOfAFlightBeforeTheyAreWanted) {
  const FlightResult without = fly(false, 4000), with = fly(true, 4000);
  std::printf("150 frames of flight: wanted-but-missing tile-frames %zu without prefetch, %zu "
              "with (%zu prefetch requests); tiles missing when first wanted %zu / %zu\n",
              without.missing, with.missing, with.prefetchRequests, with.arrivals, without.arrivals);
  EXPECT_EQ(without.prefetchRequests, 0u);
  EXPECT_GT(with.prefetchRequests, 0u);
  EXPECT_GT(without.missing, 0u);
  EXPECT_LT(with.missing * 2, without.missing);
  EXPECT_LT(with.arrivals, without.arrivals);
  EXPECT_EQ(with.evictedInUse, 0u);
  // A small atlas (10% more than the view needs): prefetch competes for slots with the
  // current view's tiles, and must never take one that this frame uses.
  const FlightResult small = fly(true, with.maxNeeded + with.maxNeeded / 10);
  std::printf("atlas of %zu slots (the view needs up to %zu): %zu missing tile-frames, %zu "
              "prefetch requests, %zu evictions\n", with.maxNeeded + with.maxNeeded / 10,
              with.maxNeeded, small.missing, small.prefetchRequests, small.evictions);
  EXPECT_GT(small.evictions, 0u);
  EXPECT_EQ(small.evictedInUse, 0u);
  EXPECT_LE(small.missing, without.missing);
  EXPECT_EQ(small.staged, 0u);
}

// An atlas that holds the current view but not the predicted one as well: the prefetch beyond
// the free slots is staged (RequestPlan::stage), and a strategy that reads staged tiles into
// memory outside the atlas delivers them in the frame they become wanted, so fewer tiles are
// missing than with the same loader keeping nothing beyond the atlas.
TEST(RequestPlanner, StagedTilesReadAheadOutsideASmallAtlasAreMissedLess) {
  const size_t capacity = fly(true, 4000).maxNeeded + 2;
  const FlightResult atlasOnly = fly(true, capacity), staging = fly(true, capacity, true);
  std::printf(
      "atlas of %zu slots: %zu missing tile-frames keeping nothing beyond the atlas, %zu with "
      "%zu tiles staged (%zu requests answered from memory)\n",
      capacity, atlasOnly.missing, staging.missing, staging.staged, staging.fromMemory);
  EXPECT_GT(staging.staged, 0u);
  EXPECT_GT(staging.fromMemory, 0u);
  EXPECT_LT(staging.missing, atlasOnly.missing);
  EXPECT_EQ(staging.evictedInUse, 0u);
}

}  // namespace

namespace {

// Every tile of the flight pyramid resident in a page table of `capacity` slots.
hfr::PageTable residentPages(const hfr::LodPyramid& pyr, size_t capacity) {
  hfr::PageTable pages(pyr.tiles.size(), capacity);
  for (size_t t = 0; t < pyr.tiles.size() && t < capacity; ++t) {
    uint32_t slot;
    long ev;
    pages.allocate(t, 0, slot, ev);
  }
  return pages;
}

void expectSameSelection(const std::vector<hfr::DrawTile>& a, const std::vector<hfr::DrawTile>& b, int frame) {
  ASSERT_EQ(a.size(), b.size()) << "frame " << frame;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].tile, b[i].tile) << "frame " << frame << " tile " << i;
    EXPECT_EQ(a[i].centre, b[i].centre) << "frame " << frame << " tile " << i;
    EXPECT_EQ(a[i].corner, b[i].corner) << "frame " << frame << " tile " << i;
    EXPECT_EQ(a[i].pattern, b[i].pattern) << "frame " << frame << " tile " << i;
    EXPECT_EQ(a[i].forced, b[i].forced) << "frame " << frame << " tile " << i;
  }
}

hfr::Camera flightCamera(int frame) {
  hfr::Camera cam;
  cam.x = 3000 + 8.0 * frame;
  cam.y = 10000;
  cam.z = 450;
  cam.pitch = -12;
  return cam;
}

}  // namespace

// The drawn selection adopts the wanted one when every tile the plan needs is resident, which
// must be exactly what a second selection restricted to the resident tiles gives; with a tile
// missing it selects again (drawn from the ancestor).
// When the camera starts moving, the first prediction is prefetchSeconds ahead: the tiles wanted on
// the way there (and in neither the current nor the predicted view) are requested too (the
// sweep), or they would be asked for only in the frame they are wanted (issue 18's flights).
TEST(RequestPlanner, MotionStartRequestsTheTilesOnTheWayToThePrediction) {
  const hfr::LodPyramid pyr = flightPyramid();
  const hfr::DominoPatterns patterns(pyr.tileLog);
  const hfr::LodSelector selector(pyr);
  hfr::PageTable pages(pyr.tiles.size(), pyr.tiles.size());  // room for everything: no stage
  const std::vector<uint8_t> failed(pyr.tiles.size(), 0);
  hfr::RequestPlanner planner;
  hfr::RequestPlan plan;
  const hfr::LodCamera now = lodCamera(flightCamera(0));
  const hfr::LodCamera ahead = lodCamera(flightCamera(400));  // 3.2 km further east
  planner.plan(selector, patterns, now, &ahead, pages, 1, failed, plan);
  EXPECT_TRUE(plan.stage.empty());
  const std::set<size_t> requested(plan.request.begin(), plan.request.end());
  std::set<size_t> ends;  // the current and the predicted selections
  for (const hfr::LodCamera* c : {&now, &ahead})
    for (const hfr::DrawTile& d : selector.select(*c, patterns)) ends.insert(d.tile);
  size_t between = 0, missed = 0;
  for (int f : {100, 200, 300}) {
    for (const hfr::DrawTile& d : selector.select(lodCamera(flightCamera(f)), patterns)) {
      if (ends.count(d.tile)) continue;
      ++between;
      missed += requested.count(d.tile) == 0;
    }
  }
  EXPECT_GT(between, 0u);  // the flight has tiles wanted only on the way
  EXPECT_EQ(missed, 0u) << "of " << between;
  // Later refreshes keep them requested while they load (the sweep stays for a while).
  planner.plan(selector, patterns, lodCamera(flightCamera(8)), &ahead, pages, 3, failed, plan);
  const std::set<size_t> later(plan.request.begin(), plan.request.end());
  for (size_t t : requested) EXPECT_TRUE(later.count(t) || pages.resident(t)) << "tile " << t;
}

TEST(RequestPlanner, DrawnSelectionReusesTheWantedOneOnlyWhenEverythingNeededIsResident) {
  const hfr::LodPyramid pyr = flightPyramid();
  const hfr::DominoPatterns patterns(pyr.tileLog);
  const hfr::LodSelector selector(pyr);
  hfr::PageTable pages = residentPages(pyr, pyr.tiles.size());
  const std::vector<uint8_t> failed(pyr.tiles.size(), 0);
  hfr::RequestPlanner reusing, selecting;
  hfr::RequestPlan planA, planB;
  for (int f = 1; f <= 30; ++f) {  // moving: the histories change every frame
    const hfr::LodCamera lc = lodCamera(flightCamera(f));
    reusing.plan(selector, patterns, lc, nullptr, pages, uint64_t(f), failed, planA);
    selecting.plan(selector, patterns, lc, nullptr, pages, uint64_t(f), failed, planB);
    hfr::LodStats sa, sb;
    const auto a = reusing.selectDrawn(selector, patterns, lc, pages.residency(), &sa, &planA);
    const auto b = selecting.selectDrawn(selector, patterns, lc, pages.residency(), &sb);
    ASSERT_FALSE(a.empty());
    expectSameSelection(a, b, f);
    expectSameSelection(a, planA.selectedTiles, f);  // adopted, not selected again
    EXPECT_EQ(sa.cornerClamps, 0u);
  }
  // A needed leaf missing: drawn from its ancestor, as a selection restricted to residency does.
  const hfr::LodCamera lc = lodCamera(flightCamera(31));
  reusing.plan(selector, patterns, lc, nullptr, pages, 31, failed, planA);
  selecting.plan(selector, patterns, lc, nullptr, pages, 31, failed, planB);
  size_t finest = planA.selectedTiles.front().tile;
  for (const hfr::DrawTile& d : planA.selectedTiles)
    if (d.level < pyr.tiles[finest].level) finest = d.tile;
  ASSERT_EQ(pyr.tiles[finest].level, 0);
  pages.release(finest);
  const auto a = reusing.selectDrawn(selector, patterns, lc, pages.residency(), nullptr, &planA);
  const auto b = selecting.selectDrawn(selector, patterns, lc, pages.residency());
  expectSameSelection(a, b, 31);
  EXPECT_TRUE(std::none_of(a.begin(), a.end(), [&](const hfr::DrawTile& d) { return d.tile == finest; }));
  // Another camera than the plan's: selected for that camera.
  const hfr::LodCamera other = lodCamera(flightCamera(60));
  pages = residentPages(pyr, pyr.tiles.size());
  reusing.plan(selector, patterns, lc, nullptr, pages, 32, failed, planA);
  hfr::RequestPlanner fresh;
  const auto c = reusing.selectDrawn(selector, patterns, other, pages.residency(), nullptr, &planA);
  const auto d = fresh.selectDrawn(selector, patterns, other, pages.residency());
  expectSameSelection(c, d, 32);
}

// An atlas too small for the view at the camera's tau: the wanted selection is made coarser
// (tau x 1.5 per step). The step is searched from the last frame's, so a still view costs two
// selections (one finer that does not fit, the one that does) instead of one per step, with
// the same tau; a larger atlas refines in one plan.
TEST(RequestPlanner, CoarserTauStepIsSearchedFromTheLastFrames) {
  const hfr::LodPyramid pyr = flightPyramid();
  const hfr::DominoPatterns patterns(pyr.tileLog);
  const hfr::LodSelector selector(pyr);
  const std::vector<uint8_t> failed(pyr.tiles.size(), 0);
  const hfr::LodCamera lc = lodCamera(flightCamera(0));
  hfr::RequestPlan plan;
  size_t full = 0;
  {
    hfr::PageTable big(pyr.tiles.size(), pyr.tiles.size());
    hfr::RequestPlanner p;
    p.plan(selector, patterns, lc, nullptr, big, 1, failed, plan);
    EXPECT_EQ(p.lastSelections(), 1);
    EXPECT_EQ(plan.tau, lc.tau);
    full = plan.needed.size();
  }
  hfr::PageTable small(pyr.tiles.size(), full / 3);
  hfr::RequestPlanner p;
  p.plan(selector, patterns, lc, nullptr, small, 1, failed, plan);
  const double tau = plan.tau;
  const int first = p.lastSelections();
  EXPECT_GT(tau, lc.tau * 1.4);  // at least one step
  EXPECT_LE(plan.needed.size(), small.capacity());
  EXPECT_EQ(double(first), std::round(std::log(tau / lc.tau) / std::log(1.5)) + 1);  // steps 0..k
  for (uint64_t f = 2; f < 6; ++f) {
    p.plan(selector, patterns, lc, nullptr, small, f, failed, plan);
    EXPECT_EQ(p.lastSelections(), 2) << "frame " << f;
    EXPECT_EQ(plan.tau, tau) << "frame " << f;
    EXPECT_LE(plan.needed.size(), small.capacity());
  }
  hfr::PageTable big(pyr.tiles.size(), pyr.tiles.size());
  p.plan(selector, patterns, lc, nullptr, big, 6, failed, plan);
  EXPECT_EQ(plan.tau, lc.tau);
  EXPECT_EQ(plan.needed.size(), full);
}


// ---- CompressedCache (the VRAM cache's byte pool) ----

namespace {
// Every entry inside the pool, none overlapping, used bytes = their sum, and the free space
// (capacity - used) at least the largest free range.
void expectConsistent(const hfr::CompressedCache& c, const std::map<size_t, std::pair<uint64_t, uint64_t>>& live) {
  uint64_t sum = 0, end = 0;
  for (const auto& [offset, e] : [&] {
         std::map<uint64_t, std::pair<size_t, uint64_t>> byOffset;
         for (const auto& [k, v] : live) byOffset[v.first] = {k, v.second};
         return byOffset;
       }()) {
    EXPECT_GE(offset, end) << "entry " << e.first << " overlaps the one before";
    end = offset + e.second;
    sum += e.second;
  }
  EXPECT_LE(end, c.capacity());
  EXPECT_EQ(c.usedBytes(), sum);
  EXPECT_EQ(c.size(), live.size());
  EXPECT_LE(c.largestFree(), c.capacity() - c.usedBytes());
}
}  // namespace

TEST(CompressedCache, LeastRecentlyUsedGoesFirst) {
  hfr::CompressedCache c(1000, 1);
  EXPECT_EQ(c.insert(1, 300), 0);
  EXPECT_EQ(c.insert(2, 300), 300);
  EXPECT_EQ(c.insert(3, 300), 600);
  EXPECT_EQ(c.find(1), 0);  // 1 is now the most recent: 2 is the oldest
  std::vector<size_t> out;
  EXPECT_EQ(c.insert(4, 300), 300);  // needs 300: only 100 free, so 2 goes
  EXPECT_EQ(c.insert(5, 50, &out), 900);
  EXPECT_TRUE(out.empty());
  EXPECT_FALSE(c.contains(2));
  EXPECT_EQ(c.find(2), -1);
  EXPECT_EQ(c.usedBytes(), 950u);
  EXPECT_EQ(c.stats().hits, 1u);
  EXPECT_EQ(c.stats().misses, 1u);
  EXPECT_EQ(c.stats().evicted, 1u);
  // Larger than the pool: refused, nothing evicted.
  EXPECT_EQ(c.insert(6, 1001, &out), -1);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(c.size(), 4u);
  // Already cached: refused.
  EXPECT_EQ(c.insert(1, 10), -1);
  EXPECT_EQ(c.stats().rejected, 2u);
}

TEST(CompressedCache, FreedNeighboursCoalesceAndAlignmentRounds) {
  hfr::CompressedCache c(4096, 256);
  EXPECT_EQ(c.insert(1, 1), 0);      // one 256-byte unit
  EXPECT_EQ(c.insert(2, 257), 256);  // two units
  EXPECT_EQ(c.insert(3, 256), 768);
  EXPECT_EQ(c.usedBytes(), 1024u);
  c.erase(1);
  c.erase(2);  // 0 .. 768 free again, merged with nothing after it (3 sits at 768)
  EXPECT_EQ(c.insert(4, 700), 0);  // fits only because 0..256 and 256..768 merged
  c.erase(3);
  c.erase(4);
  EXPECT_EQ(c.largestFree(), 4096u);  // everything merged back into one range
  EXPECT_EQ(c.usedBytes(), 0u);
  hfr::CompressedCache odd(1000, 256);  // whole units only
  EXPECT_EQ(odd.capacity(), 768u);
}

TEST(CompressedCache, PinnedEntriesAreNeverEvicted) {
  hfr::CompressedCache c(300, 1);
  ASSERT_EQ(c.insert(1, 100), 0);
  ASSERT_EQ(c.insert(2, 100), 100);
  ASSERT_EQ(c.insert(3, 100), 200);
  c.pin(1);
  c.pin(1);  // counted
  c.pin(2);
  std::vector<size_t> out;
  EXPECT_EQ(c.insert(4, 100, &out), 200);  // 1 and 2 are pinned: 3 goes although more recent
  EXPECT_EQ(out, std::vector<size_t>{3});
  out.clear();
  EXPECT_EQ(c.insert(5, 100, &out), 200);  // again the only unpinned entry (4) goes
  EXPECT_EQ(out, std::vector<size_t>{4});
  c.unpin(1);
  out.clear();
  EXPECT_EQ(c.insert(6, 200, &out), -1);  // 1 still pinned once, 2 pinned: no 200-byte range
  EXPECT_EQ(out, std::vector<size_t>{5});   // (5 was evicted trying)
  c.unpin(1);
  c.unpin(2);
  c.unpin(9);  // unknown keys are ignored
  out.clear();
  EXPECT_EQ(c.insert(7, 300, &out), 0);  // 1 and 2 go, their ranges merge with the free one
  EXPECT_EQ(out, (std::vector<size_t>{1, 2}));
  EXPECT_EQ(c.usedBytes(), 300u);
}

TEST(CompressedCache, RandomUseStaysConsistent) {
  hfr::CompressedCache c(64 * 1024, 64);
  std::map<size_t, std::pair<uint64_t, uint64_t>> live;  // key -> (offset, aligned bytes)
  std::set<size_t> pinned;
  uint64_t seed = 7;
  auto next = [&] {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return seed >> 33;
  };
  for (int i = 0; i < 20000; ++i) {
    const size_t key = size_t(next() % 200);
    const uint64_t op = next() % 10;
    if (op < 5) {
      const uint64_t bytes = 1 + next() % 9000;
      std::vector<size_t> out;
      const bool had = c.contains(key);
      const int64_t at = c.insert(key, bytes, &out);
      for (size_t k : out) {
        EXPECT_EQ(pinned.count(k), 0u) << "a pinned entry was evicted";
        live.erase(k);
      }
      if (had) {
        EXPECT_EQ(at, -1);
      } else if (at >= 0) {
        EXPECT_EQ(at % 64, 0);
        live[key] = {uint64_t(at), (bytes + 63) / 64 * 64};
      }
    } else if (op < 7) {
      const int64_t at = c.find(key);
      EXPECT_EQ(at, live.count(key) ? int64_t(live[key].first) : -1);
    } else if (op < 8) {
      if (c.contains(key) && pinned.size() < 5) c.pin(key), pinned.insert(key);
    } else if (op < 9) {
      if (pinned.count(key)) c.unpin(key), pinned.erase(key);
    } else if (!pinned.count(key)) {
      c.erase(key);
      live.erase(key);
    }
    if (i % 500 == 0) expectConsistent(c, live);
  }
  expectConsistent(c, live);
  EXPECT_GT(c.stats().evicted, 100u);  // the pool was really under pressure
}

// A URL archive's failed tiles are asked for again after 1 s, then 2, 4, ... at most 30 s.
TEST(StagedPayloads, KeepsTheRecentlyUsedWithinItsBytesAndStagesOnlyWhatItLacks) {
  hfr::StagedPayloads<std::string> cache(4 * 64);  // four 64-byte payloads
  for (size_t t = 0; t < 4; ++t) cache.insert(t, 64, "tile" + std::to_string(t));
  ASSERT_NE(cache.find(0), nullptr);  // 0 is now the most recently used
  EXPECT_EQ(*cache.find(0), "tile0");
  cache.insert(9, 64, "tile9");  // evicts 1, the least recently used
  EXPECT_EQ(cache.find(1), nullptr);
  EXPECT_NE(cache.find(0), nullptr);
  EXPECT_NE(cache.find(9), nullptr);
  EXPECT_EQ(cache.size(), 4u);
  EXPECT_EQ(cache.bytes(), 4u * 64);
  cache.insert(9, 64, "again");  // refreshed, not doubled
  EXPECT_EQ(*cache.find(9), "again");
  EXPECT_EQ(cache.size(), 4u);
  cache.insert(7, 1000, "too large");  // larger than everything: not kept, nothing evicted
  EXPECT_EQ(cache.find(7), nullptr);
  EXPECT_EQ(cache.size(), 4u);
  // Staging skips cached and busy tiles, keeps the planned order, and replaces the list.
  cache.stage({5, 0, 6, 8, 9}, [](size_t t) { return t == 6; });
  ASSERT_TRUE(cache.hasStaged());
  EXPECT_EQ(cache.takeStaged(), 5u);
  EXPECT_EQ(cache.takeStaged(), 8u);
  EXPECT_FALSE(cache.hasStaged());
  cache.stage({11, 12}, [](size_t) { return false; });
  cache.stage({12}, [](size_t) { return false; });
  EXPECT_EQ(cache.staged().size(), 1u);
}

// What a loader does with a tile it read (cuda's and gl's loaders share it): a requested tile joins
// the ready list; a staged one only when it was requested meanwhile (taken out of the queue, not
// read twice); readable ones are kept, unreadable ones stay requested so that a read reports them.
TEST(StagedPayloads, KeepReadSendsRequestedTilesOnAndKeepsReadableOnes) {
  hfr::StagedPayloads<std::string> cache(1 << 20);
  std::deque<size_t> queue{4, 5, 6};
  EXPECT_TRUE(cache.keepRead(1, false, true, 64, "requested", queue));  // requested: ready, kept
  EXPECT_NE(cache.find(1), nullptr);
  EXPECT_FALSE(
      cache.keepRead(2, true, true, 64, "staged", queue));  // staged, not asked for: kept only
  EXPECT_NE(cache.find(2), nullptr);
  EXPECT_EQ(queue.size(), 3u);
  EXPECT_TRUE(
      cache.keepRead(5, true, true, 64, "asked meanwhile", queue));  // ready, out of the queue
  EXPECT_EQ(queue, (std::deque<size_t>{4, 6}));
  EXPECT_FALSE(
      cache.keepRead(6, true, false, 64, "unreadable", queue));  // read again when its turn comes
  EXPECT_EQ(queue, (std::deque<size_t>{4, 6}));
  EXPECT_EQ(cache.find(6), nullptr);
  EXPECT_TRUE(cache.keepRead(7, false, false, 64, "unreadable",
                             queue));  // requested: ready (its error reported)
  EXPECT_EQ(cache.find(7), nullptr);
}

TEST(FailureRetry, BacksOffAndReleasesOnlyFailedTilesWhenDue) {
  hfr::FailureRetry retry;
  retry.reset(4);
  std::vector<uint8_t> flags(4, 0);
  flags[2] = 1;
  retry.failed(2, 10.0);
  EXPECT_EQ(retry.failures(2), 1u);
  EXPECT_EQ(retry.releaseDue(flags, 10.5), 0u);
  EXPECT_EQ(flags[2], 1);
  EXPECT_EQ(retry.releaseDue(flags, 11.0), 1u);
  EXPECT_EQ(flags[2], 0);
  flags[2] = 1;  // failed again: twice as long
  retry.failed(2, 11.0);
  EXPECT_EQ(retry.releaseDue(flags, 12.9), 0u);
  EXPECT_EQ(retry.releaseDue(flags, 13.0), 1u);
  for (int i = 0; i < 10; ++i) retry.failed(2, 100.0);  // capped
  flags[2] = 1;
  EXPECT_EQ(retry.releaseDue(flags, 129.9), 0u);
  EXPECT_EQ(retry.releaseDue(flags, 130.0), 1u);
  EXPECT_EQ(flags, std::vector<uint8_t>(4, 0)) << "tiles that never failed stay as they are";
}
