// The interactive camera (src/render/camera): free-fly and orbit driven by made-up input, no GL.
#include <gtest/gtest.h>

#include <cmath>

#include "render/camera/camera.h"

namespace {

using hfr::Camera;
using hfr::CameraController;
using hfr::CameraInput;

Camera at(double x, double y, double z, double yaw, double pitch) {
  Camera c;
  c.x = x, c.y = y, c.z = z, c.yaw = yaw, c.pitch = pitch;
  return c;
}

TEST(CameraController, FreeFlyMovesAlongTheViewAndScalesWithAltitude) {
  CameraController cc(at(0, 0, 1000, 0, 0));  // looking east, level
  CameraInput in;
  in.forward = true;
  cc.update(0.1, in, 0.0);  // 1000 m above the ground: 1000 m/s
  EXPECT_NEAR(cc.camera().x, 100, 1e-9);
  EXPECT_NEAR(cc.camera().y, 0, 1e-9);
  EXPECT_NEAR(cc.camera().z, 1000, 1e-9);
  // The same key 100 m above the ground is ten times slower; Shift is kFastFactor faster.
  CameraController low(at(0, 0, 100, 0, 0));
  low.update(0.1, in, 0.0);
  EXPECT_NEAR(low.camera().x, 10, 1e-9);
  in.fast = true;
  low.update(0.1, in, 0.0);
  EXPECT_NEAR(low.camera().x, 10 + 10 * CameraController::kFastFactor, 1e-9);
  // Near the ground the speed has a floor.
  CameraController ground(at(0, 0, 2, 0, 0));
  CameraInput f;
  f.forward = true;
  ground.update(1.0 / 8, f, 0.0);
  EXPECT_NEAR(ground.lastSpeed(), CameraController::kMinSpeed, 1e-9);
}

TEST(CameraController, FreeFlyStrafeUpDownAndGround) {
  CameraController cc(at(0, 0, 500, 90, 0));  // looking north
  CameraInput in;
  in.right = true;  // east
  cc.update(0.1, in, 0.0);
  EXPECT_NEAR(cc.camera().x, 50, 1e-9);
  EXPECT_NEAR(cc.camera().y, 0, 1e-9);
  in = {};
  in.up = true;
  cc.update(0.1, in, 0.0);
  EXPECT_NEAR(cc.camera().z, 550, 1e-9);
  // Flying down into the ground stops above it.
  in = {};
  in.down = true;
  for (int i = 0; i < 100; ++i) cc.update(0.1, in, 300.0);
  EXPECT_GE(cc.camera().z, 300 + CameraController::kMinAltitude - 1e-9);
}

TEST(CameraController, MouseLookOnlyWithTheButtonAndNotWhileTheUiHasTheMouse) {
  CameraController cc(at(0, 0, 500, 0, 0));
  CameraInput in;
  in.mouseDx = 50;  // right: turn right (yaw decreases)
  in.mouseDy = 25;  // down: look down
  cc.update(0.016, in);
  EXPECT_EQ(cc.camera().yaw, 0);
  in.lookButton = true;
  cc.update(0.016, in);
  EXPECT_NEAR(cc.camera().yaw, -50 * CameraController::kDegreesPerPixel, 1e-9);
  EXPECT_NEAR(cc.camera().pitch, -25 * CameraController::kDegreesPerPixel, 1e-9);
  const Camera before = cc.camera();
  in.uiWantsMouse = true;  // ImGui has the mouse: no look
  cc.update(0.016, in);
  EXPECT_EQ(cc.camera().yaw, before.yaw);
  EXPECT_EQ(cc.camera().pitch, before.pitch);
  // ImGui has the keyboard: no movement.
  CameraInput keys;
  keys.forward = true;
  keys.uiWantsKeyboard = true;
  cc.update(0.1, keys, 0.0);
  EXPECT_EQ(cc.camera().x, before.x);
  // Pitch is clamped short of the poles.
  CameraInput down;
  down.lookButton = true;
  down.mouseDy = 1e6;
  cc.update(0.016, down);
  EXPECT_GE(cc.camera().pitch, -89.0);
}

TEST(CameraController, OrbitKeepsTheTargetAndZooms) {
  CameraController cc(at(0, -1000, 1000, 90, -45));  // looking north-down at (0, 0, 0)
  cc.setMode(CameraController::Mode::Orbit, 0.0);
  ASSERT_EQ(cc.mode(), CameraController::Mode::Orbit);
  EXPECT_NEAR(cc.target()[0], 0, 1e-6);
  EXPECT_NEAR(cc.target()[1], 0, 1e-6);
  EXPECT_NEAR(cc.target()[2], 0, 1e-6);
  EXPECT_NEAR(cc.distance(), std::sqrt(2.0) * 1000, 1e-6);
  // Drag: the camera turns around the target at the same distance.
  CameraInput in;
  in.dragButton = true;
  in.mouseDx = 450;  // 90 degrees
  cc.update(0.016, in);
  const Camera& c = cc.camera();
  const double d = std::sqrt(c.x * c.x + c.y * c.y + c.z * c.z);
  EXPECT_NEAR(d, std::sqrt(2.0) * 1000, 1e-6);
  EXPECT_NEAR(c.yaw, 0, 1e-9);
  EXPECT_NEAR(c.x, -1000, 1e-6);  // now west of the target, looking east
  const auto f = c.forward();     // still looking at the target
  EXPECT_NEAR(c.x + f[0] * d, 0, 1e-6);
  EXPECT_NEAR(c.z + f[2] * d, 0, 1e-6);
  // Wheel up zooms in by kZoomPerNotch a notch; the target does not move.
  CameraInput wheel;
  wheel.wheel = 2;
  cc.update(0.016, wheel);
  EXPECT_NEAR(cc.distance(), std::sqrt(2.0) * 1000 * 0.85 * 0.85, 1e-6);
  EXPECT_NEAR(cc.target()[0], 0, 1e-6);
  // The wheel is ignored while the UI has the mouse.
  wheel.uiWantsMouse = true;
  const double dist = cc.distance();
  cc.update(0.016, wheel);
  EXPECT_EQ(cc.distance(), dist);
  // Back to free-fly keeps the eye.
  const Camera eye = cc.camera();
  cc.toggleMode();
  EXPECT_EQ(cc.mode(), CameraController::Mode::FreeFly);
  EXPECT_EQ(cc.camera().x, eye.x);
  EXPECT_EQ(cc.camera().z, eye.z);
}

TEST(CameraController, OrbitStaysAboveTheGround) {
  CameraController cc(at(0, -1000, 100, 90, -5.7));
  cc.setMode(CameraController::Mode::Orbit, 0.0);
  CameraInput in;
  in.lookButton = true;
  in.mouseDy = -1000;  // drag up: towards the horizon
  cc.update(0.016, in, 500.0);
  EXPECT_GE(cc.camera().z, 500 + CameraController::kMinAltitude - 1e-6);
}

TEST(Camera, UnprojectInvertsViewProj) {
  const Camera c = at(100, 200, 300, 30, -20);
  const auto vp = c.viewProj(16.0 / 9.0, 1, 10000);
  const double p[3] = {400, 900, 50};
  double clip[4] = {0, 0, 0, 0};
  for (int r = 0; r < 4; ++r)
    for (int k = 0; k < 3; ++k) clip[r] += vp[size_t(k * 4 + r)] * p[k];
  for (int r = 0; r < 4; ++r) clip[r] += vp[size_t(12 + r)];
  std::array<double, 3> w{};
  ASSERT_TRUE(hfr::unproject(vp, clip[0] / clip[3], clip[1] / clip[3], clip[2] / clip[3], w));
  EXPECT_NEAR(w[0], p[0], 1e-6);
  EXPECT_NEAR(w[1], p[1], 1e-6);
  EXPECT_NEAR(w[2], p[2], 1e-6);
}

}  // namespace
