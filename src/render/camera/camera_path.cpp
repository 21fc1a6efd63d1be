// camera_path.cpp - camera path interpolation, the diagonal benchmark path, the text format and
// the recorder (see camera_path.h for the contracts).
#include "render/camera/camera_path.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace hfr {

namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr size_t kFieldsMin = 6, kFieldsMax = 7;  // t x y z yaw pitch [fovY]

bool finiteCamera(const Camera& c) {
  return std::isfinite(c.x) && std::isfinite(c.y) && std::isfinite(c.z) && std::isfinite(c.yaw) &&
         std::isfinite(c.pitch) && std::isfinite(c.fovY);
}

// Yaw in [-180, 180] (std::remainder is exact, so 1e300 degrees is fine too).
double wrapYaw(double yaw) { return std::remainder(yaw, 360.0); }

// a -> b at s in [0, 1]; yaw along the shorter arc.
Camera lerpCamera(const Camera& a, const Camera& b, double s) {
  Camera c;
  c.x = a.x + s * (b.x - a.x);
  c.y = a.y + s * (b.y - a.y);
  c.z = a.z + s * (b.z - a.z);
  c.yaw = wrapYaw(a.yaw + s * wrapYaw(b.yaw - a.yaw));
  c.pitch = a.pitch + s * (b.pitch - a.pitch);
  c.fovY = a.fovY + s * (b.fovY - a.fovY);
  return c;
}

// The shortest decimal text that reads back to the same double (std::to_chars without a
// precision), so save -> load is exact and files stay short ("0.1", not "0.10000000000000001").
std::string number(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return r.ec == std::errc() ? std::string(buf, r.ptr) : std::string("?");
}

// A token quoted in an error: printable ASCII only, at most 32 characters, so that a garbage
// line still gives one short readable line.
std::string quoted(std::string_view s) {
  constexpr size_t kMax = 32;
  std::string out = "'";
  for (size_t i = 0; i < s.size() && i < kMax; ++i) {
    const unsigned char ch = static_cast<unsigned char>(s[i]);
    out += (ch >= 32 && ch < 127) ? char(ch) : '?';
  }
  if (s.size() > kMax) out += "...";
  return out + "'";
}

// The range rules shared by parse (per line) and toText (per key). Empty when fine.
std::string checkRanges(const Camera& c) {
  if (!(c.pitch >= -90 && c.pitch <= 90)) return "pitch " + number(c.pitch) + " is outside [-90, 90]";
  if (!(c.fovY > 0 && c.fovY < 180)) return "fovY " + number(c.fovY) + " is outside (0, 180)";
  return {};
}

bool isBlank(char ch) { return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\v' || ch == '\f'; }

}  // namespace

// ---- CameraPath ----

CameraPath::CameraPath(std::vector<CameraKey> keys) : keys_(std::move(keys)) {
  std::stable_sort(keys_.begin(), keys_.end(),
                   [](const CameraKey& a, const CameraKey& b) { return a.t < b.t; });
}

void CameraPath::add(const CameraKey& key) {
  const auto it = std::upper_bound(keys_.begin(), keys_.end(), key.t,
                                   [](double t, const CameraKey& k) { return t < k.t; });
  keys_.insert(it, key);
}

Camera CameraPath::at(double t) const {
  if (keys_.empty()) return Camera{};
  Camera c;
  if (!(t > keys_.front().t)) {  // also NaN
    c = keys_.front().camera;
  } else if (t >= keys_.back().t) {
    c = keys_.back().camera;
  } else {
    // First key after t; the one before it is at or before t, so the segment has length > 0.
    const auto it = std::upper_bound(keys_.begin(), keys_.end(), t,
                                     [](double v, const CameraKey& k) { return v < k.t; });
    const CameraKey& b = *it;
    const CameraKey& a = *(it - 1);
    return lerpCamera(a.camera, b.camera, (t - a.t) / (b.t - a.t));
  }
  c.yaw = wrapYaw(c.yaw);
  return c;
}

CameraPath CameraPath::diagonal(double extentX, double extentY, double altitude, double speed,
                                double inset, double pitch, double fovY) {
  const bool ok = std::isfinite(extentX) && std::isfinite(extentY) && std::isfinite(altitude) &&
                  std::isfinite(speed) && extentX >= 0 && extentY >= 0 && speed > 0 &&
                  inset >= 0 && inset < 0.5 && pitch >= -90 && pitch <= 90 && fovY > 0 &&
                  fovY < 180;
  if (!ok) return {};
  Camera start;
  start.x = inset * extentX;
  start.y = inset * extentY;
  start.z = altitude;
  start.yaw = std::atan2(extentY, extentX) * 180.0 / kPi;  // 0 for a 0 x 0 extent
  start.pitch = pitch;
  start.fovY = fovY;
  Camera end = start;
  end.x = (1 - inset) * extentX;
  end.y = (1 - inset) * extentY;
  const double length = std::hypot(end.x - start.x, end.y - start.y);
  const double duration = length / speed;
  if (!std::isfinite(duration)) return {};
  CameraPath path;
  path.keys_.push_back({0.0, start});
  if (duration > 0) path.keys_.push_back({duration, end});
  return path;
}

bool CameraPath::parse(std::string_view text, const std::string& source, std::string& error) {
  if (text.size() > kMaxFileBytes) {
    error = source + ": larger than " + std::to_string(kMaxFileBytes >> 20) + " MiB";
    return false;
  }
  std::vector<CameraKey> keys;
  size_t lineNo = 0, prevLine = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    ++lineNo;
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    const std::string where = source + ":" + std::to_string(lineNo) + ": ";
    if (line.size() > kMaxLineLength) {
      error = where + "line longer than " + std::to_string(kMaxLineLength) + " characters";
      return false;
    }
    if (const size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);

    // Split into at most kFieldsMax tokens, counting any beyond.
    std::string_view tokens[kFieldsMax];
    size_t count = 0;
    for (size_t i = 0; i < line.size();) {
      while (i < line.size() && isBlank(line[i])) ++i;
      if (i >= line.size()) break;
      const size_t b = i;
      while (i < line.size() && !isBlank(line[i])) ++i;
      if (count < kFieldsMax) tokens[count] = line.substr(b, i - b);
      ++count;
    }
    if (count == 0) continue;  // blank or comment-only
    if (count < kFieldsMin || count > kFieldsMax) {
      error = where + "expected 6 or 7 numbers (t x y z yaw pitch [fovY]), got " + std::to_string(count);
      return false;
    }
    double v[kFieldsMax] = {0, 0, 0, 0, 0, 0, 45};
    for (size_t k = 0; k < count; ++k) {
      std::string_view tok = tokens[k];
      // from_chars takes no leading '+'; people write "+20" for a pitch now and then.
      std::string_view digits = tok;
      if (digits.size() > 1 && digits[0] == '+' && digits[1] != '-' && digits[1] != '+')
        digits.remove_prefix(1);
      const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), v[k]);
      if (r.ec == std::errc::result_out_of_range) {
        error = where + "value " + quoted(tok) + " is out of the range of a double";
        return false;
      }
      if (r.ec != std::errc() || r.ptr != digits.data() + digits.size()) {
        error = where + quoted(tok) + " is not a number";
        return false;
      }
      if (!std::isfinite(v[k])) {
        error = where + "non-finite value " + quoted(tok);
        return false;
      }
    }
    CameraKey key;
    key.t = v[0];
    key.camera.x = v[1], key.camera.y = v[2], key.camera.z = v[3];
    key.camera.yaw = v[4], key.camera.pitch = v[5], key.camera.fovY = v[6];
    if (const std::string bad = checkRanges(key.camera); !bad.empty()) {
      error = where + bad;
      return false;
    }
    if (!keys.empty() && !(key.t > keys.back().t)) {
      error = where + "t = " + number(key.t) + " is not after the previous key's t = " +
              number(keys.back().t) + " (line " + std::to_string(prevLine) + ")";
      return false;
    }
    keys.push_back(key);
    prevLine = lineNo;
  }
  if (keys.empty()) {
    error = source + ": no camera keys (empty, or only comments and blank lines)";
    return false;
  }
  keys_ = std::move(keys);
  return true;
}

bool CameraPath::load(const std::string& path, std::string& error) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    error = "cannot read " + path + ": " + std::strerror(errno);
    return false;
  }
  // Read in chunks up to the cap (a FIFO or /dev/zero has no size to ask for first).
  std::string text;
  std::vector<char> buf(size_t(1) << 16);
  for (;;) {
    const size_t n = std::fread(buf.data(), 1, buf.size(), f);
    text.append(buf.data(), n);
    if (text.size() > kMaxFileBytes) {
      std::fclose(f);
      error = path + ": larger than " + std::to_string(kMaxFileBytes >> 20) + " MiB";
      return false;
    }
    if (n < buf.size()) {
      if (std::ferror(f)) {
        const int e = errno;
        std::fclose(f);
        error = "cannot read " + path + ": " + std::strerror(e);
        return false;
      }
      break;
    }
  }
  std::fclose(f);
  return parse(text, path, error);
}

bool CameraPath::toText(std::string& text, std::string& error) const {
  if (keys_.empty()) {
    error = "no camera keys";
    return false;
  }
  std::string out =
      "# hfview camera path (docs/rendering.md): t x y z yaw pitch fovY\n"
      "# seconds; metres from the south-west corner, x east, y north, z up; degrees, yaw 0 = "
      "east, 90 = north, pitch < 0 looks down\n";
  for (size_t i = 0; i < keys_.size(); ++i) {
    const CameraKey& k = keys_[i];
    const std::string where = "key " + std::to_string(i + 1) + ": ";
    if (!std::isfinite(k.t) || !finiteCamera(k.camera)) {
      error = where + "non-finite value";
      return false;
    }
    if (const std::string bad = checkRanges(k.camera); !bad.empty()) {
      error = where + bad;
      return false;
    }
    if (i > 0 && !(k.t > keys_[i - 1].t)) {
      error = where + "t = " + number(k.t) + " is not after the previous key's t = " + number(keys_[i - 1].t);
      return false;
    }
    const Camera& c = k.camera;
    out += number(k.t) + ' ' + number(c.x) + ' ' + number(c.y) + ' ' + number(c.z) + ' ' +
           number(c.yaw) + ' ' + number(c.pitch) + ' ' + number(c.fovY) + '\n';
  }
  text = std::move(out);
  return true;
}

bool CameraPath::save(const std::string& path, std::string& error) const {
  std::string text;
  if (!toText(text, error)) {
    error = "cannot save " + path + ": " + error;
    return false;
  }
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) {
    error = "cannot write " + path + ": " + std::strerror(errno);
    return false;
  }
  const bool wrote = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const int e1 = errno;
  const bool closed = std::fclose(f) == 0;  // flushes: a full disk shows up here
  if (!wrote || !closed) {
    error = "cannot write " + path + ": " + std::strerror(wrote ? errno : e1);
    return false;
  }
  return true;
}

// ---- CameraPathRecorder ----

namespace {
// Bounds the per-frame check (a frame loop far faster than maxInterval, or a disabled
// maxInterval, would otherwise grow the pending stretch without limit).
constexpr size_t kMaxPending = 512;
}  // namespace

void CameraPathRecorder::clear() {
  keys_.clear();
  pending_.clear();
  t0_ = 0;
}

bool CameraPathRecorder::stretchNeedsKey(const CameraKey& candidate) const {
  const CameraKey& a = keys_.back();
  const double span = candidate.t - a.t;
  for (const CameraKey& s : pending_) {
    const Camera p = lerpCamera(a.camera, candidate.camera, (s.t - a.t) / span);
    const Camera& c = s.camera;
    const double dx = p.x - c.x, dy = p.y - c.y, dz = p.z - c.z;
    if (std::sqrt(dx * dx + dy * dy + dz * dz) > thresholds_.position) return true;
    if (std::fabs(wrapYaw(p.yaw - c.yaw)) > thresholds_.angle) return true;
    if (std::fabs(p.pitch - c.pitch) > thresholds_.angle) return true;
    if (std::fabs(p.fovY - c.fovY) > thresholds_.fovY) return true;
  }
  return false;
}

// Rounds v to a multiple of 1 / perUnit (perUnit a power of ten) so that its shortest text is short:
// a recorded 1234.5678901234567 is saved as 1234.568. Huge values are left alone.
double quantize(double v, double perUnit) {
  return std::fabs(v) < 1e12 ? std::round(v * perUnit) / perUnit : v;
}

void CameraPathRecorder::add(double t, const Camera& camera) {
  if (!std::isfinite(t) || !finiteCamera(camera)) return;
  // What is kept is what the file will hold: 1 us, 1 mm, 1e-4 degree steps (far below the
  // thresholds), so that saved lines are ~60 characters, not 7 x 17 digits.
  Camera c = camera;
  c.x = quantize(c.x, 1e3), c.y = quantize(c.y, 1e3), c.z = quantize(c.z, 1e3);
  c.yaw = quantize(c.yaw, 1e4), c.pitch = quantize(c.pitch, 1e4), c.fovY = quantize(c.fovY, 1e4);
  if (keys_.empty()) {
    t0_ = t;
    keys_.push_back({0.0, c});
    pending_.clear();
    return;
  }
  const CameraKey k{quantize(t - t0_, 1e6), c};
  const double lastT = pending_.empty() ? keys_.back().t : pending_.back().t;
  if (!(k.t > lastT)) return;
  // Would the line from the last kept key straight to this frame still replay every frame in
  // between? If not (or the last key is too old), the previous frame becomes a key.
  if (!pending_.empty() && (k.t - keys_.back().t > thresholds_.maxInterval ||
                            pending_.size() >= kMaxPending || stretchNeedsKey(k))) {
    keys_.push_back(pending_.back());
    pending_.clear();
  }
  pending_.push_back(k);
}

CameraPath CameraPathRecorder::path() const {
  std::vector<CameraKey> keys = keys_;
  if (!pending_.empty()) keys.push_back(pending_.back());
  return CameraPath(std::move(keys));
}

double CameraPathRecorder::duration() const {
  if (!pending_.empty()) return pending_.back().t;
  return keys_.empty() ? 0 : keys_.back().t;
}

}  // namespace hfr
