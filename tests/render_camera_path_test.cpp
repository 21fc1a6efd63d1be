// Camera paths (src/render/camera/camera_path.h): interpolation, yaw wrap, the diagonal
// benchmark path, the text format (round trip, every error, hostile input) and the recorder.
// GL-free, label "render".
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "render/camera/camera_path.h"

namespace {

using hfr::Camera;
using hfr::CameraKey;
using hfr::CameraPath;
using hfr::CameraPathRecorder;

Camera cam(double x, double y, double z, double yaw, double pitch, double fovY = 45) {
  Camera c;
  c.x = x, c.y = y, c.z = z, c.yaw = yaw, c.pitch = pitch, c.fovY = fovY;
  return c;
}

// A fresh file name in the test temp folder (removed by the fixture-less tests themselves).
std::string tempPath(const std::string& name) {
  return (std::filesystem::path(::testing::TempDir()) /
          ("hf_camera_path_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

void writeFile(const std::string& path, const std::string& text) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  ASSERT_EQ(std::fwrite(text.data(), 1, text.size(), f), text.size());
  ASSERT_EQ(std::fclose(f), 0);
}

// parse() must fail with an error containing `want` (and one line only).
void expectParseError(const std::string& text, const std::string& want) {
  CameraPath p;
  std::string error;
  EXPECT_FALSE(p.parse(text, "p.txt", error)) << "accepted: " << text.substr(0, 80);
  EXPECT_NE(error.find(want), std::string::npos) << "error: " << error << "\nwanted: " << want;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  EXPECT_TRUE(p.empty());
}

TEST(CameraPath, InterpolatesLinearlyAndClampsToTheEnds) {
  CameraPath p({{2.0, cam(100, 200, 300, 10, -30, 40)}, {0.0, cam(0, 0, 100, 0, -10, 60)}});
  ASSERT_EQ(p.size(), 2u);  // sorted by t
  EXPECT_EQ(p.keys()[0].t, 0);
  EXPECT_DOUBLE_EQ(p.startTime(), 0);
  EXPECT_DOUBLE_EQ(p.endTime(), 2);
  EXPECT_DOUBLE_EQ(p.duration(), 2);
  const Camera m = p.at(0.5);  // a quarter of the way
  EXPECT_NEAR(m.x, 25, 1e-12);
  EXPECT_NEAR(m.y, 50, 1e-12);
  EXPECT_NEAR(m.z, 150, 1e-12);
  EXPECT_NEAR(m.yaw, 2.5, 1e-12);
  EXPECT_NEAR(m.pitch, -15, 1e-12);
  EXPECT_NEAR(m.fovY, 55, 1e-12);
  // Clamped outside the keys; NaN gives the first key.
  EXPECT_DOUBLE_EQ(p.at(-5).x, 0);
  EXPECT_DOUBLE_EQ(p.at(2).x, 100);
  EXPECT_DOUBLE_EQ(p.at(1e300).z, 300);
  EXPECT_DOUBLE_EQ(p.at(std::numeric_limits<double>::quiet_NaN()).x, 0);
  EXPECT_DOUBLE_EQ(p.at(std::numeric_limits<double>::infinity()).x, 100);
  // Exactly on a key.
  EXPECT_DOUBLE_EQ(p.at(0).pitch, -10);

  // Three keys: each segment on its own.
  p.add({1.0, cam(10, 10, 10, 0, 0)});
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p.keys()[1].t, 1);
  EXPECT_NEAR(p.at(0.5).x, 5, 1e-12);
  EXPECT_NEAR(p.at(1.5).x, 55, 1e-12);
  EXPECT_NEAR(p.at(1.5).z, 155, 1e-12);

  // Empty and one-key paths.
  EXPECT_DOUBLE_EQ(CameraPath().at(3).z, Camera{}.z);
  EXPECT_DOUBLE_EQ(CameraPath().duration(), 0);
  CameraPath one({{5.0, cam(1, 2, 3, 4, 5)}});
  EXPECT_DOUBLE_EQ(one.duration(), 0);
  EXPECT_DOUBLE_EQ(one.at(0).x, 1);
  EXPECT_DOUBLE_EQ(one.at(9).x, 1);
}

TEST(CameraPath, EqualTimesJumpToTheLaterKey) {
  CameraPath p({{0.0, cam(0, 0, 0, 0, 0)}, {1.0, cam(10, 0, 0, 0, 0)}, {1.0, cam(50, 0, 0, 0, 0)},
                {2.0, cam(60, 0, 0, 0, 0)}});
  EXPECT_NEAR(p.at(0.5).x, 5, 1e-12);
  EXPECT_NEAR(p.at(1.0).x, 50, 1e-12);
  EXPECT_NEAR(p.at(1.5).x, 55, 1e-12);
  p.add({1.0, cam(100, 0, 0, 0, 0)});  // after the keys with the same t
  EXPECT_EQ(p.keys()[3].camera.x, 100);
}

TEST(CameraPath, YawTakesTheShorterArc) {
  auto yawAt = [](double y0, double y1, double s) {
    return CameraPath({{0.0, cam(0, 0, 0, y0, 0)}, {1.0, cam(0, 0, 0, y1, 0)}}).at(s).yaw;
  };
  EXPECT_NEAR(yawAt(350, 10, 0.5), 0, 1e-9);
  EXPECT_NEAR(yawAt(350, 10, 0.25), -5, 1e-9);   // 355, as [-180, 180]
  EXPECT_NEAR(yawAt(10, 350, 0.25), 5, 1e-9);
  EXPECT_NEAR(std::fabs(yawAt(-170, 170, 0.5)), 180, 1e-9);  // through 180, not 0
  EXPECT_NEAR(yawAt(-170, 170, 0.25), -175, 1e-9);
  EXPECT_NEAR(yawAt(0, 90, 0.5), 45, 1e-9);
  EXPECT_NEAR(yawAt(720 + 30, 50, 0.5), 40, 1e-9);  // multiple turns in the keys
  EXPECT_NEAR(yawAt(100, -100, 0.5), 180, 1e-9);    // 160 degrees through 180
  // Every result is in [-180, 180], the ends too.
  EXPECT_NEAR(yawAt(270, 270, 0), -90, 1e-9);
  EXPECT_NEAR(yawAt(270, 270, 1), -90, 1e-9);
  for (double s = 0; s <= 1; s += 0.125) {
    const double y = yawAt(-900, 1234, s);
    EXPECT_GE(y, -180);
    EXPECT_LE(y, 180);
  }
}

TEST(CameraPath, DiagonalFliesCornerToCornerAtTheGivenSpeed) {
  const double ex = 30000, ey = 40000, alt = 5000, speed = 250;
  const CameraPath p = CameraPath::diagonal(ex, ey, alt, speed);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_DOUBLE_EQ(p.startTime(), 0);
  EXPECT_NEAR(p.duration(), 50000 / speed, 1e-9);  // 3-4-5
  const Camera a = p.at(0), b = p.at(p.duration());
  EXPECT_DOUBLE_EQ(a.x, 0);
  EXPECT_DOUBLE_EQ(a.y, 0);
  EXPECT_DOUBLE_EQ(a.z, alt);
  EXPECT_DOUBLE_EQ(b.x, ex);
  EXPECT_DOUBLE_EQ(b.y, ey);
  EXPECT_DOUBLE_EQ(b.z, alt);
  // Looking along the flight, pitched down, default field of view.
  const double yaw = std::atan2(ey, ex) * 180 / 3.14159265358979323846;
  for (double t : {0.0, 17.0, 200.0}) {
    const Camera c = p.at(t);
    EXPECT_NEAR(c.yaw, yaw, 1e-9);
    EXPECT_DOUBLE_EQ(c.pitch, CameraPath::kDiagonalPitch);
    EXPECT_DOUBLE_EQ(c.fovY, 45);
    EXPECT_DOUBLE_EQ(c.z, alt);
  }
  const auto f = p.at(1).forward();
  EXPECT_NEAR(f[0] / f[1], ex / ey, 1e-9);
  EXPECT_LT(f[2], 0);
  // Constant speed: speed metres every second, anywhere on the path.
  for (double t : {0.0, 10.0, 99.0, 198.0}) {
    const Camera c0 = p.at(t), c1 = p.at(t + 1);
    EXPECT_NEAR(std::hypot(c1.x - c0.x, c1.y - c0.y), speed, 1e-6) << t;
  }

  // Inset: both ends move in by that fraction of each extent; same speed.
  const CameraPath q = CameraPath::diagonal(ex, ey, alt, speed, 0.1, -30, 60);
  ASSERT_EQ(q.size(), 2u);
  EXPECT_NEAR(q.at(0).x, 3000, 1e-9);
  EXPECT_NEAR(q.at(0).y, 4000, 1e-9);
  EXPECT_NEAR(q.at(1e9).x, 27000, 1e-9);
  EXPECT_NEAR(q.at(1e9).y, 36000, 1e-9);
  EXPECT_NEAR(q.duration(), 0.8 * 50000 / speed, 1e-9);
  EXPECT_DOUBLE_EQ(q.at(3).pitch, -30);
  EXPECT_DOUBLE_EQ(q.at(3).fovY, 60);

  // A square archive: yaw 45 (north-east); a zero-length flight is one key.
  EXPECT_NEAR(CameraPath::diagonal(1000, 1000, 10, 1).at(0).yaw, 45, 1e-12);
  EXPECT_EQ(CameraPath::diagonal(0, 0, 10, 1).size(), 1u);
  EXPECT_EQ(CameraPath::diagonal(1000, 1000, 10, 1, 0.49999).size(), 2u);
  // Out-of-range arguments: empty.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(CameraPath::diagonal(1000, 1000, 100, 0).empty());
  EXPECT_TRUE(CameraPath::diagonal(1000, 1000, 100, -5).empty());
  EXPECT_TRUE(CameraPath::diagonal(-1, 1000, 100, 5).empty());
  EXPECT_TRUE(CameraPath::diagonal(nan, 1000, 100, 5).empty());
  EXPECT_TRUE(CameraPath::diagonal(1000, inf, 100, 5).empty());
  EXPECT_TRUE(CameraPath::diagonal(1000, 1000, nan, 5).empty());
  EXPECT_TRUE(CameraPath::diagonal(1000, 1000, 100, nan).empty());
  EXPECT_TRUE(CameraPath::diagonal(1000, 1000, 100, 5, 0.5).empty());
  EXPECT_TRUE(CameraPath::diagonal(1000, 1000, 100, 5, -0.1).empty());
  EXPECT_TRUE(CameraPath::diagonal(1000, 1000, 100, 5, 0, -91).empty());
  EXPECT_TRUE(CameraPath::diagonal(1000, 1000, 100, 5, 0, -20, 0).empty());
  EXPECT_TRUE(CameraPath::diagonal(1000, 1000, 100, 5, 0, -20, 180).empty());
  EXPECT_TRUE(CameraPath::diagonal(1e308, 1e308, 100, 1e-300).empty());  // infinite duration
}

TEST(CameraPath, SaveLoadRoundTripIsExact) {
  std::vector<CameraKey> keys;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-1e6, 1e6);
  double t = -3.25;
  for (int i = 0; i < 200; ++i) {
    t += 0.1 + std::fabs(u(rng)) * 1e-6;
    keys.push_back({t, cam(u(rng), u(rng), u(rng) * 1e-3, u(rng) * 1e-3, std::fmod(u(rng), 90.0),
                           1 + std::fabs(std::fmod(u(rng), 170.0)))});
  }
  keys.push_back({t + 1, cam(0.1, 1e-300, -0.0, 359.99999999999994, -90, 179.99999999999997)});
  const CameraPath p(keys);
  const std::string file = tempPath("roundtrip.txt");
  std::string error;
  ASSERT_TRUE(p.save(file, error)) << error;
  CameraPath q;
  ASSERT_TRUE(q.load(file, error)) << error;
  ASSERT_EQ(q.size(), p.size());
  for (size_t i = 0; i < p.size(); ++i) {
    const CameraKey &a = p.keys()[i], &b = q.keys()[i];
    EXPECT_EQ(a.t, b.t);
    EXPECT_EQ(a.camera.x, b.camera.x);
    EXPECT_EQ(a.camera.y, b.camera.y);
    EXPECT_EQ(a.camera.z, b.camera.z);
    EXPECT_EQ(a.camera.yaw, b.camera.yaw);
    EXPECT_EQ(a.camera.pitch, b.camera.pitch);
    EXPECT_EQ(a.camera.fovY, b.camera.fovY);
  }
  // The file is the documented text: comments, then `t x y z yaw pitch fovY` lines.
  std::string text;
  ASSERT_TRUE(CameraPath::diagonal(1000, 2000, 300, 10).toText(text, error)) << error;
  EXPECT_EQ(text.substr(0, 1), "#");
  EXPECT_NE(text.find("\n0 0 0 300 63.43494882292201 -20 45\n"), std::string::npos) << text;
  std::remove(file.c_str());
}

TEST(CameraPath, ReadsCommentsBlankLinesTabsCrLfAndDefaultFov) {
  CameraPath p;
  std::string error;
  const std::string text =
      "# a path\r\n"
      "\r\n"
      "   \t  \n"
      "0 1 2 3 4 5   # fovY left out: 45\r\n"
      "\t1.5\t10\t20\t30\t40\t-50\t60\n"
      "# trailing comment\n"
      "+2 1e2 -2E1 .5 -0 +0 1e1";  // no final line end
  ASSERT_TRUE(p.parse(text, "p.txt", error)) << error;
  ASSERT_EQ(p.size(), 3u);
  EXPECT_DOUBLE_EQ(p.keys()[0].camera.fovY, 45);
  EXPECT_DOUBLE_EQ(p.keys()[0].camera.pitch, 5);
  EXPECT_DOUBLE_EQ(p.keys()[1].t, 1.5);
  EXPECT_DOUBLE_EQ(p.keys()[1].camera.pitch, -50);
  EXPECT_DOUBLE_EQ(p.keys()[1].camera.fovY, 60);
  EXPECT_DOUBLE_EQ(p.keys()[2].t, 2);
  EXPECT_DOUBLE_EQ(p.keys()[2].camera.x, 100);
  EXPECT_DOUBLE_EQ(p.keys()[2].camera.y, -20);
  EXPECT_DOUBLE_EQ(p.keys()[2].camera.z, 0.5);
  EXPECT_DOUBLE_EQ(p.keys()[2].camera.fovY, 10);
}

TEST(CameraPath, EveryParseErrorNamesTheLine) {
  const std::string ok = "0 0 0 100 0 -20\n";
  expectParseError(ok + "1 2 3 4 5\n", "p.txt:2: expected 6 or 7 numbers (t x y z yaw pitch [fovY]), got 5");
  expectParseError(ok + "1 2 3 4 5 6 7 8\n", "p.txt:2: expected 6 or 7 numbers");
  expectParseError(ok + "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n", "got 16");
  expectParseError("\n# c\n1 2 3 4 5 six\n", "p.txt:3: 'six' is not a number");
  expectParseError("1 2 3 4 5 6,5\n", "p.txt:1: '6,5' is not a number");
  expectParseError("1 2 3 4 5 0x10\n", "'0x10' is not a number");
  expectParseError("1 2 3 4 5 --1\n", "'--1' is not a number");
  expectParseError("1 2 3 4 5 +\n", "'+' is not a number");
  expectParseError("1 2 3 4 5 ++1\n", "'++1' is not a number");
  expectParseError("1 2 3 nan 5 6\n", "p.txt:1: non-finite value 'nan'");
  expectParseError("1 2 3 4 5 NaN\n", "non-finite value 'NaN'");
  expectParseError("1 inf 3 4 5 6\n", "non-finite value 'inf'");
  expectParseError("1 2 -infinity 4 5 6\n", "non-finite value '-infinity'");
  expectParseError("1 2 3 1e999 5 6\n", "p.txt:1: value '1e999' is out of the range of a double");
  expectParseError(ok + ok, "p.txt:2: t = 0 is not after the previous key's t = 0 (line 1)");
  expectParseError(ok + "\n# gap\n-1 0 0 0 0 0\n", "p.txt:4: t = -1 is not after the previous key's t = 0 (line 1)");
  expectParseError("0 0 0 0 0 -90.5\n", "p.txt:1: pitch -90.5 is outside [-90, 90]");
  expectParseError("0 0 0 0 0 91\n", "pitch 91 is outside");
  expectParseError("0 0 0 0 0 0 0\n", "p.txt:1: fovY 0 is outside (0, 180)");
  expectParseError("0 0 0 0 0 0 180\n", "fovY 180 is outside");
  expectParseError("0 0 0 0 0 0 -5\n", "fovY -5 is outside");
  expectParseError("", "p.txt: no camera keys");
  expectParseError("# only\n\n   # comments\n\t\n", "p.txt: no camera keys");
  expectParseError(ok + std::string(CameraPath::kMaxLineLength + 1, ' ') + "\n",
                   "p.txt:2: line longer than 4096 characters");
  expectParseError(std::string("1 2 3 4 5 6\x01\n"), "'6?' is not a number");  // control byte
  expectParseError(std::string("1 2 3 4 5 \xff\xfe\n"), "'?" "?' is not a number");  // (split: no trigraph)
  expectParseError(std::string("1 2 3 4 5 6\0 7\n", 15), "'6?' is not a number");
  expectParseError("1 2 3 4 5 " + std::string(100, 'x') + "\n",
                   "'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...' is not a number");
  // A failed parse leaves the keys as they were.
  CameraPath p = CameraPath::diagonal(100, 100, 10, 1);
  std::string error;
  EXPECT_FALSE(p.parse("0 1 2\n", "x", error));
  EXPECT_EQ(p.size(), 2u);
}

TEST(CameraPath, FileErrors) {
  std::string error;
  CameraPath p = CameraPath::diagonal(100, 100, 10, 1);
  // Missing file, a directory.
  const std::string missing = tempPath("does-not-exist.txt");
  EXPECT_FALSE(p.load(missing, error));
  EXPECT_EQ(error, "cannot read " + missing + ": No such file or directory");
  EXPECT_FALSE(p.load(::testing::TempDir(), error));
  EXPECT_NE(error.find("cannot read"), std::string::npos) << error;
  EXPECT_EQ(p.size(), 2u);  // unchanged
  // Empty file, comments only, a bad line: the file name and the line.
  const std::string file = tempPath("errors.txt");
  writeFile(file, "");
  EXPECT_FALSE(p.load(file, error));
  EXPECT_EQ(error, file + ": no camera keys (empty, or only comments and blank lines)");
  writeFile(file, "0 0 0 0 0 0\n1 0 0 0 0\n");
  EXPECT_FALSE(p.load(file, error));
  EXPECT_EQ(error, file + ":2: expected 6 or 7 numbers (t x y z yaw pitch [fovY]), got 5");
  EXPECT_EQ(p.size(), 2u);
  // Too large (only the cap is read).
  {
    std::FILE* f = std::fopen(file.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    const std::string chunk(1 << 20, '#');
    for (size_t i = 0; i <= (CameraPath::kMaxFileBytes >> 20); ++i) std::fwrite(chunk.data(), 1, chunk.size(), f);
    std::fclose(f);
  }
  EXPECT_FALSE(p.load(file, error));
  EXPECT_EQ(error, file + ": larger than 64 MiB");
  std::remove(file.c_str());

  // Save: unwritable place, nothing to save, keys that would not load back.
  EXPECT_FALSE(p.save(missing + "/sub/p.txt", error));
  EXPECT_NE(error.find("cannot write " + missing + "/sub/p.txt: No such file or directory"), std::string::npos) << error;
  EXPECT_FALSE(CameraPath().save(file, error));
  EXPECT_EQ(error, "cannot save " + file + ": no camera keys");
  CameraPath dup({{0.0, cam(0, 0, 0, 0, 0)}, {0.0, cam(1, 0, 0, 0, 0)}});
  EXPECT_FALSE(dup.save(file, error));
  EXPECT_EQ(error, "cannot save " + file + ": key 2: t = 0 is not after the previous key's t = 0");
  CameraPath bad({{0.0, cam(std::numeric_limits<double>::quiet_NaN(), 0, 0, 0, 0)}});
  EXPECT_FALSE(bad.save(file, error));
  EXPECT_EQ(error, "cannot save " + file + ": key 1: non-finite value");
  CameraPath steep({{0.0, cam(0, 0, 0, 0, -95)}});
  EXPECT_FALSE(steep.save(file, error));
  EXPECT_EQ(error, "cannot save " + file + ": key 1: pitch -95 is outside [-90, 90]");
  EXPECT_FALSE(std::filesystem::exists(file));
}

// Garbage, huge lines, NaN, truncations and byte flips of a valid file: parse never crashes
// (run under ASan/UBSan), errors are one line, and what it accepts satisfies the format's rules.
TEST(CameraPath, HostileInputNeverCrashes) {
  auto check = [](const std::string& text) {
    CameraPath p;
    std::string error;
    if (p.parse(text, "h", error)) {
      ASSERT_FALSE(p.empty());
      for (size_t i = 0; i < p.size(); ++i) {
        const CameraKey& k = p.keys()[i];
        ASSERT_TRUE(std::isfinite(k.t) && std::isfinite(k.camera.x) && std::isfinite(k.camera.y) &&
                    std::isfinite(k.camera.z) && std::isfinite(k.camera.yaw));
        ASSERT_TRUE(k.camera.pitch >= -90 && k.camera.pitch <= 90);
        ASSERT_TRUE(k.camera.fovY > 0 && k.camera.fovY < 180);
        if (i) {
          ASSERT_GT(k.t, p.keys()[i - 1].t);
        }
      }
      std::string again, e2;
      ASSERT_TRUE(p.toText(again, e2)) << e2;
    } else {
      ASSERT_FALSE(error.empty());
      ASSERT_EQ(error.find('\n'), std::string::npos);
      ASSERT_LT(error.size(), 300u);
    }
  };
  std::string valid;
  std::string error;
  ASSERT_TRUE(CameraPath({{0.0, cam(1, 2, 3, 4, -5, 50)}, {0.5, cam(6, 7, 8, 9, 10)},
                          {1.25, cam(-1e5, 2e-7, 3, 359, -90, 1)}})
                  .toText(valid, error));
  for (size_t n = 0; n <= valid.size(); ++n) check(valid.substr(0, n));  // every truncation
  const char subst[] = {'\0', '\n', '\r', ' ', '#', '-', '+', '.', 'e', 'n', 'i', '9', '\xff'};
  for (size_t i = 0; i < valid.size(); ++i)
    for (char c : subst) {
      std::string m = valid;
      m[i] = c;
      check(m);
    }
  std::mt19937 rng(1234);
  for (int iter = 0; iter < 2000; ++iter) {
    std::string g(size_t(rng() % 300), '\0');
    const bool textish = iter % 2;
    const char alphabet[] = "0123456789 .-+eE#\n\tnaifNAIF\r";
    for (char& c : g) c = textish ? alphabet[rng() % (sizeof alphabet - 1)] : char(rng() & 0xff);
    check(g);
  }
  check(std::string(1 << 20, '9'));                     // one huge number line
  check(std::string(1 << 20, '\n'));                    // a million blank lines
  check("0 0 0 0 0 0 " + std::string(5000, '#') + "\n");  // a long comment is still a long line
  std::string many;
  for (int i = 0; i < 20000; ++i) many += std::to_string(i) + " 1 2 3 4 5 6\n";
  check(many);
  check("1e308 1e308 -1e308 1e308 1e308 0 1\n2e308 0 0 0 0 0\n");
  check("nan nan nan nan nan nan nan\n");
  check("0 0 0 0 0 0 nan(123)\n");
  check(std::string("\0\0\0\0", 4));
}

// ---- recorder ----

// Replays `frames` through the recorded path and returns the worst position / angle miss.
void worstMiss(const CameraPath& path, const std::vector<CameraKey>& frames, double& pos, double& ang) {
  pos = ang = 0;
  for (const CameraKey& f : frames) {
    const Camera p = path.at(f.t);
    pos = std::max(pos, std::hypot(p.x - f.camera.x, p.y - f.camera.y, p.z - f.camera.z));
    ang = std::max(ang, std::fabs(std::remainder(p.yaw - f.camera.yaw, 360.0)));
    ang = std::max(ang, std::fabs(p.pitch - f.camera.pitch));
  }
}

TEST(CameraPathRecorder, StillCameraKeepsAKeyEveryQuarterSecond) {
  CameraPathRecorder rec;
  const double t0 = 1234.5;  // glfwGetTime() of the first frame: the path starts at 0
  for (int i = 0; i <= 600; ++i) rec.add(t0 + i / 60.0, cam(10, 20, 30, 40, -10));
  const CameraPath p = rec.path();
  EXPECT_DOUBLE_EQ(p.startTime(), 0);
  EXPECT_NEAR(p.duration(), 10, 1e-9);
  EXPECT_NEAR(rec.duration(), 10, 1e-9);
  EXPECT_GE(p.size(), 40u);
  EXPECT_LE(p.size(), 45u);
  for (size_t i = 1; i < p.size(); ++i) EXPECT_LE(p.keys()[i].t - p.keys()[i - 1].t, 0.25 + 1e-9);
}

TEST(CameraPathRecorder, SteadyFlightIsSmallAndTurnsAreFaithful) {
  // 20 s at 60 fps: 5 s straight at 300 m/s, 5 s turning (yaw through 180 -> -180) while
  // climbing, 5 s still, 5 s looking around.
  std::vector<CameraKey> frames;
  Camera c = cam(0, 0, 1000, 150, -20);
  for (int i = 0; i <= 1200; ++i) {
    const double t = i / 60.0, dt = 1 / 60.0;
    if (t < 5) {
      c.x += 300 * dt * std::cos(c.yaw * 3.14159265358979323846 / 180);
      c.y += 300 * dt * std::sin(c.yaw * 3.14159265358979323846 / 180);
    } else if (t < 10) {
      c.yaw = std::remainder(c.yaw + 20 * dt, 360.0);
      c.x += 300 * dt * std::cos(c.yaw * 3.14159265358979323846 / 180);
      c.y += 300 * dt * std::sin(c.yaw * 3.14159265358979323846 / 180);
      c.z += 50 * dt;
    } else if (t >= 15) {
      c.pitch = -20 + 30 * std::sin(t);
      c.fovY = 45 + 10 * std::sin(2 * t);
    }
    frames.push_back({t, c});
  }
  CameraPathRecorder rec;
  for (const CameraKey& f : frames) rec.add(100 + f.t, f.camera);
  const CameraPath p = rec.path();
  ASSERT_FALSE(p.empty());
  EXPECT_LT(p.size(), frames.size() / 3) << "the file should be much smaller than one key a frame";
  EXPECT_GE(p.size(), 80u);  // at least every 0.25 s
  double pos = 0, ang = 0;
  worstMiss(p, frames, pos, ang);
  const CameraPathRecorder::Thresholds th;
  EXPECT_LE(pos, th.position + 1e-3);  // + the recorder's rounding to 1 mm / 1e-4 degree
  EXPECT_LE(ang, th.angle + 1e-4);
  // The path ends at the latest frame, and it saves and loads back.
  EXPECT_NEAR(p.endTime(), frames.back().t, 1e-9);
  EXPECT_NEAR(p.at(1e9).pitch, frames.back().camera.pitch, 1e-4);
  std::string text, error;
  ASSERT_TRUE(p.toText(text, error)) << error;
  CameraPath q;
  ASSERT_TRUE(q.parse(text, "rec", error)) << error;
  EXPECT_EQ(q.size(), p.size());
  EXPECT_LT(text.size(), 70 * p.size() + 300) << text;
}

TEST(CameraPathRecorder, IgnoresStalledAndNonFiniteFramesAndClears) {
  CameraPathRecorder rec;
  EXPECT_TRUE(rec.empty());
  EXPECT_TRUE(rec.path().empty());
  const double nan = std::numeric_limits<double>::quiet_NaN();
  rec.add(nan, cam(0, 0, 0, 0, 0));  // ignored: nothing started
  EXPECT_TRUE(rec.empty());
  rec.add(5, cam(0, 0, 0, 0, 0));
  rec.add(5, cam(1, 0, 0, 0, 0));    // same t: ignored
  rec.add(4, cam(2, 0, 0, 0, 0));    // earlier: ignored
  rec.add(6, cam(nan, 0, 0, 0, 0));  // non-finite pose: ignored
  rec.add(6, cam(3, 0, 0, 0, 0));
  CameraPath p = rec.path();
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p.keys()[0].camera.x, 0);
  EXPECT_EQ(p.keys()[1].t, 1);
  EXPECT_EQ(p.keys()[1].camera.x, 3);
  std::string text, error;
  EXPECT_TRUE(p.toText(text, error)) << error;
  rec.clear();
  EXPECT_TRUE(rec.empty());
  EXPECT_EQ(rec.duration(), 0);
  rec.add(50, cam(9, 9, 9, 9, 9));
  ASSERT_EQ(rec.path().size(), 1u);
  EXPECT_EQ(rec.path().keys()[0].t, 0);
  // A very fast frame loop stays bounded and faithful (frames 1 us apart).
  CameraPathRecorder fast;
  for (int i = 0; i < 20000; ++i) fast.add(i * 1e-6, cam(i * 1e-3, 0, 0, 0, 0));
  EXPECT_NEAR(fast.path().at(0.01).x, 10, 1e-6);
}

}  // namespace
