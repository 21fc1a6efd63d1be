// camera.cpp - Camera matrices, unproject, and the free-fly / orbit controller.
#include "render/camera/camera.h"

#include <algorithm>
#include <cmath>

namespace hfr {

namespace {
constexpr double kPi = 3.14159265358979323846;
double rad(double deg) { return deg * kPi / 180.0; }
double deg(double r) { return r * 180.0 / kPi; }
// Free-fly pitch stops short of straight up/down, where yaw is undefined and viewProj switches
// its up vector.
constexpr double kMaxPitch = 89;
// Orbit pitch: from straight down to slightly above the horizon (looking up at the target from
// below the terrain is never useful).
constexpr double kOrbitMinPitch = -89, kOrbitMaxPitch = 5;
}  // namespace

std::array<double, 3> Camera::forward() const {
  const double cy = std::cos(rad(yaw)), sy = std::sin(rad(yaw));
  const double cp = std::cos(rad(pitch)), sp = std::sin(rad(pitch));
  return {cp * cy, cp * sy, sp};
}

std::array<double, 16> Camera::viewProj(double aspect, double zNear, double zFar) const {
  // View: right-handed look-along with z up.
  const auto f = forward();
  std::array<double, 3> up{0, 0, 1};
  if (std::fabs(f[2]) > 0.999) up = {0, 1, 0};
  auto cross = [](const std::array<double, 3>& a, const std::array<double, 3>& b) {
    return std::array<double, 3>{a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                                 a[0] * b[1] - a[1] * b[0]};
  };
  auto norm = [](std::array<double, 3> a) {
    const double l = std::sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]);
    return std::array<double, 3>{a[0] / l, a[1] / l, a[2] / l};
  };
  const auto s = norm(cross(f, up));
  const auto u = cross(s, f);
  const std::array<double, 3> e{x, y, z};
  auto dot = [](const std::array<double, 3>& a, const std::array<double, 3>& b) {
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
  };
  double V[16] = {s[0], u[0], -f[0], 0, s[1], u[1], -f[1], 0,
                  s[2], u[2], -f[2], 0, -dot(s, e), -dot(u, e), dot(f, e), 1};
  const double t = 1.0 / std::tan(rad(fovY) / 2);
  double P[16] = {t / aspect, 0, 0, 0, 0, t, 0, 0, 0, 0, (zFar + zNear) / (zNear - zFar), -1,
                  0, 0, 2 * zFar * zNear / (zNear - zFar), 0};
  std::array<double, 16> m{};
  for (int c = 0; c < 4; ++c)
    for (int r = 0; r < 4; ++r) {
      double acc = 0;
      for (int k = 0; k < 4; ++k) acc += P[k * 4 + r] * V[c * 4 + k];
      m[size_t(c * 4 + r)] = acc;
    }
  return m;
}

bool invert4(const std::array<double, 16>& m, std::array<double, 16>& inv) {
  // Gauss-Jordan with partial pivoting on [m | I] (row-major view of the column-major m is
  // its transpose; inverting the transpose and reading it back the same way is consistent).
  double a[4][8];
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) {
      a[r][c] = m[size_t(c * 4 + r)];
      a[r][c + 4] = r == c ? 1.0 : 0.0;
    }
  for (int c = 0; c < 4; ++c) {
    int p = c;
    for (int r = c + 1; r < 4; ++r)
      if (std::fabs(a[r][c]) > std::fabs(a[p][c])) p = r;
    if (!(std::fabs(a[p][c]) > 1e-300)) return false;
    if (p != c)
      for (int k = 0; k < 8; ++k) std::swap(a[p][k], a[c][k]);
    const double d = a[c][c];
    for (int k = 0; k < 8; ++k) a[c][k] /= d;
    for (int r = 0; r < 4; ++r) {
      if (r == c) continue;
      const double f = a[r][c];
      if (f == 0) continue;
      for (int k = 0; k < 8; ++k) a[r][k] -= f * a[c][k];
    }
  }
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) inv[size_t(c * 4 + r)] = a[r][c + 4];
  return true;
}

bool unproject(const std::array<double, 16>& viewProj, double ndcX, double ndcY, double ndcZ,
               std::array<double, 3>& world) {
  std::array<double, 16> inv;
  if (!invert4(viewProj, inv)) return false;
  const double p[4] = {ndcX, ndcY, ndcZ, 1};
  double q[4] = {0, 0, 0, 0};
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) q[r] += inv[size_t(c * 4 + r)] * p[c];
  if (!(std::fabs(q[3]) > 1e-300)) return false;
  world = {q[0] / q[3], q[1] / q[3], q[2] / q[3]};
  return true;
}

// ---- CameraController ----

void CameraController::syncOrbitFromCamera() {
  const auto f = camera_.forward();
  target_ = {camera_.x + f[0] * distance_, camera_.y + f[1] * distance_,
             camera_.z + f[2] * distance_};
}

void CameraController::placeOrbitCamera() {
  const auto f = camera_.forward();
  camera_.x = target_[0] - f[0] * distance_;
  camera_.y = target_[1] - f[1] * distance_;
  camera_.z = target_[2] - f[2] * distance_;
}

void CameraController::setMode(Mode m, double terrainZ, double fallbackDistance) {
  if (m == mode_) return;
  mode_ = m;
  if (m == Mode::FreeFly) return;  // the eye stays where it is
  // Orbit: target where the view ray meets z = terrainZ, else fallbackDistance ahead.
  const auto f = camera_.forward();
  double d = fallbackDistance;
  if (f[2] < -1e-3) {
    const double t = (terrainZ - camera_.z) / f[2];
    if (t > 0) d = t;
  }
  distance_ = std::max(1.0, d);
  camera_.pitch = std::clamp(camera_.pitch, kOrbitMinPitch, kOrbitMaxPitch);
  syncOrbitFromCamera();
}

void CameraController::update(double dt, const CameraInput& in, double groundZ) {
  dt = std::clamp(dt, 0.0, 0.25);
  const bool keys = !in.uiWantsKeyboard;
  const bool mouse = !in.uiWantsMouse;
  const double fast = (keys && in.fast) ? kFastFactor : 1.0;
  const double yr = rad(camera_.yaw);
  // Horizontal forward and right (right = forward turned -90 degrees about z).
  const double hx = std::cos(yr), hy = std::sin(yr);
  const double rx = std::sin(yr), ry = -std::cos(yr);
  auto axis = [&](bool pos, bool neg) { return keys ? double(pos) - double(neg) : 0.0; };
  const double moveF = axis(in.forward, in.back), moveR = axis(in.right, in.left);
  const double moveU = axis(in.up, in.down);

  if (mode_ == Mode::FreeFly) {
    if (mouse && in.lookButton) {
      camera_.yaw -= in.mouseDx * kDegreesPerPixel;
      camera_.pitch -= in.mouseDy * kDegreesPerPixel;
    }
    camera_.yaw = std::remainder(camera_.yaw, 360.0);
    camera_.pitch = std::clamp(camera_.pitch, -kMaxPitch, kMaxPitch);
    const double altitude = std::isnan(groundZ) ? std::fabs(camera_.z) : camera_.z - groundZ;
    lastSpeed_ = std::max(kMinSpeed, altitude) * speedFactor * fast;
    const auto f = camera_.forward();
    const double step = lastSpeed_ * dt;
    camera_.x += step * (moveF * f[0] + moveR * rx);
    camera_.y += step * (moveF * f[1] + moveR * ry);
    camera_.z += step * (moveF * f[2] + moveU);
    if (!std::isnan(groundZ)) camera_.z = std::max(camera_.z, groundZ + kMinAltitude);
    syncOrbitFromCamera();
    return;
  }

  // Orbit.
  if (mouse && (in.lookButton || in.dragButton)) {
    camera_.yaw -= in.mouseDx * kDegreesPerPixel;
    camera_.pitch += in.mouseDy * kDegreesPerPixel;  // drag down: look from higher up
  }
  camera_.yaw = std::remainder(camera_.yaw, 360.0);
  camera_.pitch = std::clamp(camera_.pitch, kOrbitMinPitch, kOrbitMaxPitch);
  if (mouse && in.wheel != 0) distance_ = std::max(1.0, distance_ * std::pow(kZoomPerNotch, in.wheel));
  // Pan the target on the ground plane; Q/E raise and lower it.
  lastSpeed_ = distance_ * 0.5 * speedFactor * fast;
  const double step = lastSpeed_ * dt;
  target_[0] += step * (moveF * hx + moveR * rx);
  target_[1] += step * (moveF * hy + moveR * ry);
  target_[2] += step * moveU;
  placeOrbitCamera();
  if (!std::isnan(groundZ) && camera_.z < groundZ + kMinAltitude) {
    // Keep the eye above the terrain by steepening the view (not by moving the target).
    const double need = groundZ + kMinAltitude - target_[2];
    const double s = std::clamp(need / distance_, -1.0, 1.0);
    camera_.pitch = std::clamp(-deg(std::asin(s)), kOrbitMinPitch, kOrbitMaxPitch);
    placeOrbitCamera();
  }
}

}  // namespace hfr
