// bookmarks.cpp - see bookmarks.h.
#include "render/camera/bookmarks.h"

#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace hfr {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The file's JSON; null when it does not exist; throws (with a reason) when it is not ours.
json readFile(const std::string& file) {
  std::error_code ec;
  if (!fs::exists(file, ec)) return json();
  std::ifstream in(file);
  if (!in) throw std::runtime_error("cannot read " + file);
  std::stringstream text;
  text << in.rdbuf();
  json j = json::parse(text.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("archives") || !j["archives"].is_object())
    throw std::runtime_error(file + " is not a bookmarks file (left as it is)");
  return j;
}

bool finite(const json& v) { return v.is_number() && std::isfinite(v.get<double>()); }

}  // namespace

std::string CameraBookmarks::defaultFile() {
  const char* xdg = std::getenv("XDG_CONFIG_HOME");
  if (xdg && *xdg) return (fs::path(xdg) / "hfview" / "bookmarks.json").string();
  const char* home = std::getenv("HOME");
  if (home && *home) return (fs::path(home) / ".config" / "hfview" / "bookmarks.json").string();
  return "";
}

bool CameraBookmarks::load(const std::string& file, const std::string& archiveKey) {
  file_ = file;
  key_ = archiveKey;
  error_.clear();
  fileUsable_ = !file.empty();
  slots_ = {};
  if (file.empty()) return true;
  try {
    const json j = readFile(file);
    if (j.is_null() || !j["archives"].contains(archiveKey)) return true;
    const json& views = j["archives"][archiveKey];
    if (!views.is_object()) return true;
    for (int s = 1; s <= kSlots; ++s) {
      const std::string k = std::to_string(s);
      if (!views.contains(k)) continue;
      const json& v = views[k];
      if (!v.is_object() || !finite(v.value("x", json())) || !finite(v.value("y", json())) ||
          !finite(v.value("z", json())) || !finite(v.value("yaw", json())) || !finite(v.value("pitch", json())))
        continue;  // a damaged entry is skipped, the others kept
      Camera c;
      c.x = v["x"].get<double>();
      c.y = v["y"].get<double>();
      c.z = v["z"].get<double>();
      c.yaw = v["yaw"].get<double>();
      c.pitch = v["pitch"].get<double>();
      if (finite(v.value("fov", json())) && v["fov"].get<double>() > 1 && v["fov"].get<double>() < 179)
        c.fovY = v["fov"].get<double>();
      slots_[size_t(s - 1)] = c;
    }
    return true;
  } catch (const std::exception& e) {
    error_ = e.what();
    fileUsable_ = false;
    return false;
  }
}

std::optional<Camera> CameraBookmarks::get(int slot) const {
  if (slot < 1 || slot > kSlots) return std::nullopt;
  return slots_[size_t(slot - 1)];
}

bool CameraBookmarks::set(int slot, const Camera& c) {
  if (slot < 1 || slot > kSlots) {
    error_ = "bookmark slots are 1.." + std::to_string(kSlots);
    return false;
  }
  slots_[size_t(slot - 1)] = c;
  if (!fileUsable_) return false;  // error_ says why since load()
  try {
    json j = readFile(file_);
    if (j.is_null()) j = json{{"version", 1}, {"archives", json::object()}};
    json& views = j["archives"][key_];
    if (!views.is_object()) views = json::object();
    views[std::to_string(slot)] = {{"x", c.x}, {"y", c.y}, {"z", c.z}, {"yaw", c.yaw}, {"pitch", c.pitch}, {"fov", c.fovY}};
    const fs::path path(file_);
    std::error_code ec;
    if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
    const std::string tmp = file_ + ".tmp." + std::to_string(::getpid());
    {
      std::ofstream out(tmp, std::ios::trunc);
      out << j.dump(1) << "\n";
      if (!out.flush()) {
        std::remove(tmp.c_str());
        throw std::runtime_error("cannot write " + tmp);
      }
    }
    fs::rename(tmp, path, ec);
    if (ec) {
      std::remove(tmp.c_str());
      throw std::runtime_error("cannot replace " + file_ + ": " + ec.message());
    }
    error_.clear();
    return true;
  } catch (const std::exception& e) {
    error_ = e.what();
    return false;
  }
}

}  // namespace hfr
