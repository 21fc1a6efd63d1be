// camera.h - the renderer's camera pose and the interactive camera controller (issue 5). GL-free
// and window-free: the viewer fills a CameraInput from GLFW each frame and calls update(); the
// unit tests (tests/render_camera_test.cpp, label "render") drive the same class with made-up
// input.
//
// - Camera: position + yaw/pitch + field of view, and the view-projection the renderer and the
//   LOD selector use. World frame: x east, y north, z up, metres (see renderer.h).
// - unproject(): clip-space point -> world point (inverse of Camera::viewProj), for picking.
// - CameraController: two modes.
//   FreeFly: W/S forward/back along the view direction, A/D strafe, Q/E down/up (world z),
//     Shift x kFastFactor; mouse look while the right button is held (yaw/pitch from the mouse
//     delta). Speed = max(kMinSpeed, altitude above the terrain) * speedFactor metres a second,
//     so a camera 10 m above the ground creeps and one 10 km up crosses the map in seconds.
//   Orbit: the camera looks at `target` from `distance` along (yaw, pitch); a left- or
//     right-button drag turns around the target, the wheel zooms (distance x 0.85 per notch),
//     W/S/A/D pan the target on the ground plane at a speed proportional to the distance.
//   Switching mode keeps the pose: FreeFly -> Orbit puts the target where the view ray meets
//   the terrain's mean height (or at a distance along the view), Orbit -> FreeFly keeps the eye.
//   All input is ignored while CameraInput::uiWantsMouse / uiWantsKeyboard (ImGui's
//   io.WantCaptureMouse / WantCaptureKeyboard) is set.
#pragma once

#include <array>
#include <cmath>
#include <limits>

namespace hfr {

struct Camera {
  double x = 0, y = 0, z = 1000;
  double yaw = 0;    // degrees, 0 = looking east (+x), 90 = north (+y)
  double pitch = 0;  // degrees, negative = looking down
  double fovY = 45;  // vertical field of view, degrees

  std::array<double, 3> forward() const;
  // Column-major view-projection (clip z in [-w, w]).
  std::array<double, 16> viewProj(double aspect, double zNear, double zFar) const;
};

// Inverse of a column-major 4x4 matrix; false when singular.
bool invert4(const std::array<double, 16>& m, std::array<double, 16>& inv);

// The world point at normalised device coordinates (ndcX, ndcY in [-1, 1], ndcZ in [-1, 1],
// i.e. 2 * depth - 1 for a depth-buffer value) for the matrix viewProj. False when singular.
bool unproject(const std::array<double, 16>& viewProj, double ndcX, double ndcY, double ndcZ,
               std::array<double, 3>& world);

// One frame of input, filled by the window code (or a test).
struct CameraInput {
  bool forward = false, back = false, left = false, right = false;  // W S A D
  bool down = false, up = false;                                    // Q E
  bool fast = false;                                                // Shift
  bool lookButton = false;   // right mouse button held (free-fly look, orbit drag)
  bool dragButton = false;   // left mouse button held (orbit drag)
  double mouseDx = 0, mouseDy = 0;  // cursor motion since the last frame, pixels (y down)
  double wheel = 0;                 // wheel notches since the last frame (up = positive)
  bool uiWantsMouse = false;        // io.WantCaptureMouse: ignore mouse look, drag and wheel
  bool uiWantsKeyboard = false;     // io.WantCaptureKeyboard: ignore the movement keys
};

class CameraController {
 public:
  enum class Mode { FreeFly = 0, Orbit = 1 };

  static constexpr double kMinSpeed = 10;           // m/s floor of the free-fly speed
  static constexpr double kFastFactor = 5;          // Shift
  static constexpr double kDegreesPerPixel = 0.2;   // mouse look / orbit drag
  static constexpr double kZoomPerNotch = 0.85;     // orbit distance factor per wheel notch
  static constexpr double kMinAltitude = 1;         // free-fly never goes below ground + this

  CameraController() = default;
  explicit CameraController(const Camera& start) : camera_(start) {}

  // groundZ: the terrain height under the camera (free-fly) or under the target (orbit), NaN
  // when unknown. dt in seconds (clamped to 0.25 s so that a stall does not teleport).
  void update(double dt, const CameraInput& in, double groundZ = std::numeric_limits<double>::quiet_NaN());

  Mode mode() const { return mode_; }
  // Switches mode keeping the pose; `terrainZ` is where the orbit target goes in z (the view
  // ray is intersected with the plane z = terrainZ; if it misses, the target is put at
  // `fallbackDistance` along the view direction).
  void setMode(Mode m, double terrainZ = 0, double fallbackDistance = 1000);
  void toggleMode(double terrainZ = 0, double fallbackDistance = 1000) {
    setMode(mode_ == Mode::FreeFly ? Mode::Orbit : Mode::FreeFly, terrainZ, fallbackDistance);
  }

  const Camera& camera() const { return camera_; }
  void setCamera(const Camera& c) { camera_ = c; syncOrbitFromCamera(); }
  std::array<double, 3> target() const { return target_; }
  double distance() const { return distance_; }
  double speedFactor = 1.0;  // free-fly: metres a second per metre of altitude
  double lastSpeed() const { return lastSpeed_; }  // free-fly speed of the last update, m/s

 private:
  void syncOrbitFromCamera();  // keeps target_/distance_ consistent with camera_
  void placeOrbitCamera();     // camera_ from target_, distance_, yaw, pitch

  Camera camera_;
  Mode mode_ = Mode::FreeFly;
  std::array<double, 3> target_{0, 0, 0};
  double distance_ = 1000;
  double lastSpeed_ = 0;
};

}  // namespace hfr
