// GL-free atlas bookkeeping (src/render/stream): atlas layout within a budget, LRU page table.
#include <gtest/gtest.h>

#include <set>

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

}  // namespace
