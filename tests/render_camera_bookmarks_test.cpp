// render_camera_bookmarks_test.cpp - camera bookmarks per archive in one JSON file
// (render/camera/bookmarks.h): saved and read back, several archives in one file, another
// instance's saves kept, a damaged entry skipped, a file that is not ours never overwritten.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "render/camera/bookmarks.h"
#include "test_files.h"

namespace {

namespace fs = std::filesystem;

struct BookmarksTest : ::testing::Test {
  fs::path dir = hf_test::makeFreshDir("hf_bookmarks_test");
  std::string file = (dir / "sub" / "bookmarks.json").string();
  void SetUp() override { fs::create_directories(dir); }
  void TearDown() override { fs::remove_all(dir); }
  static hfr::Camera cam(double x) {
    hfr::Camera c;
    c.x = x;
    c.y = 2 * x;
    c.z = 1000 + x;
    c.yaw = 30;
    c.pitch = -20;
    c.fovY = 50;
    return c;
  }
  std::string contents() const {
    std::ifstream in(file);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
};

TEST_F(BookmarksTest, SavedViewsComeBackPerArchive) {
  hfr::CameraBookmarks a;
  EXPECT_TRUE(a.load(file, "/data/a.hfa")) << a.error();  // no file yet
  EXPECT_FALSE(a.get(3).has_value());
  ASSERT_TRUE(a.set(3, cam(10))) << a.error();
  ASSERT_TRUE(a.set(9, cam(20))) << a.error();
  hfr::CameraBookmarks b;  // another archive, same file
  ASSERT_TRUE(b.load(file, "/data/b.hfa")) << b.error();
  EXPECT_FALSE(b.get(3).has_value());
  ASSERT_TRUE(b.set(3, cam(30))) << b.error();
  hfr::CameraBookmarks again;
  ASSERT_TRUE(again.load(file, "/data/a.hfa")) << again.error();
  ASSERT_TRUE(again.get(3).has_value());
  EXPECT_DOUBLE_EQ(again.get(3)->x, 10);
  EXPECT_DOUBLE_EQ(again.get(3)->z, 1010);
  EXPECT_DOUBLE_EQ(again.get(3)->yaw, 30);
  EXPECT_DOUBLE_EQ(again.get(3)->pitch, -20);
  EXPECT_DOUBLE_EQ(again.get(3)->fovY, 50);
  EXPECT_DOUBLE_EQ(again.get(9)->x, 20);
  EXPECT_FALSE(again.get(1).has_value());
  // a's instance saves again: b's entry, written since a loaded, is kept.
  ASSERT_TRUE(a.set(1, cam(40))) << a.error();
  hfr::CameraBookmarks b2;
  ASSERT_TRUE(b2.load(file, "/data/b.hfa"));
  EXPECT_DOUBLE_EQ(b2.get(3)->x, 30);
  EXPECT_FALSE(a.set(0, cam(1)));
  EXPECT_FALSE(a.set(10, cam(1)));
  EXPECT_FALSE(a.get(10).has_value());
}

TEST_F(BookmarksTest, ADamagedEntryIsSkipped) {
  fs::create_directories(fs::path(file).parent_path());
  std::ofstream(file) << R"({"version": 1, "archives": {"/a": {"1": {"x": "abc", "y": 0, "z": 0, "yaw": 0,
    "pitch": 0}, "2": {"x": 5, "y": 6, "z": 7, "yaw": 8, "pitch": -9}, "3": 17}}})";
  hfr::CameraBookmarks a;
  ASSERT_TRUE(a.load(file, "/a")) << a.error();
  EXPECT_FALSE(a.get(1).has_value());
  EXPECT_FALSE(a.get(3).has_value());
  ASSERT_TRUE(a.get(2).has_value());
  EXPECT_DOUBLE_EQ(a.get(2)->pitch, -9);
}

TEST_F(BookmarksTest, AFileThatIsNotOursIsNeverOverwritten) {
  fs::create_directories(fs::path(file).parent_path());
  for (const char* text : {"not json {", "[1, 2, 3]", "{\"archives\": 5}"}) {
    SCOPED_TRACE(text);
    std::ofstream(file, std::ios::trunc) << text;
    hfr::CameraBookmarks a;
    EXPECT_FALSE(a.load(file, "/a"));
    EXPECT_NE(a.error().find("not a bookmarks file"), std::string::npos) << a.error();
    EXPECT_FALSE(a.set(2, cam(1)));          // kept in memory only
    ASSERT_TRUE(a.get(2).has_value());
    EXPECT_EQ(contents(), text);              // the file is as it was
  }
}

}  // namespace
