// json.h - JSON for the benchmark reports through nlohmann-json (Debian nlohmann-json3-dev).
//
// JsonWriter keeps the streaming shape the report code is written in (beginObject, key, value,
// field, endObject) and builds an nlohmann::ordered_json (keys in the order written); when the
// outermost container closes, the document is appended to the string, indented, with a newline.
// The library does the escaping (bytes that are not valid UTF-8 become U+FFFD, so the output
// always parses) and the numbers (doubles read back to the same value). Non-finite doubles are
// written as null. Misuse (a value without a key inside an object, an unbalanced end) is a
// programming error, caught by assert() in debug builds.
#pragma once

#include <cassert>
#include <cmath>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

namespace hfbench {

class JsonWriter {
 public:
  explicit JsonWriter(std::string& out, int indent = 2) : out_(out), indent_(indent) {}

  // (The flag that wrote short arrays on one line is kept for the callers; the library
  // indents every container the same way.)
  JsonWriter& beginObject(bool /*compact*/ = false) { return open(nlohmann::ordered_json::object()); }
  JsonWriter& endObject() { return close(true); }
  JsonWriter& beginArray(bool /*compact*/ = false) { return open(nlohmann::ordered_json::array()); }
  JsonWriter& endArray() { return close(false); }

  JsonWriter& key(std::string_view k) {
    assert(!stack_.empty() && stack_.back()->is_object() && !haveKey_);
    key_.assign(k.data(), k.size());
    haveKey_ = true;
    return *this;
  }

  template <class T>
  JsonWriter& value(const T& v) {
    return put(nlohmann::ordered_json(v));
  }
  JsonWriter& value(std::string_view s) { return put(nlohmann::ordered_json(std::string(s))); }
  JsonWriter& value(const char* s) { return s ? value(std::string_view(s)) : null(); }
  JsonWriter& value(double v) { return std::isfinite(v) ? put(nlohmann::ordered_json(v)) : null(); }
  JsonWriter& value(float v) { return value(static_cast<double>(v)); }
  JsonWriter& null() { return put(nlohmann::ordered_json(nullptr)); }

  // key(k).value(v) in one call.
  template <class T>
  JsonWriter& field(std::string_view k, const T& v) {
    key(k);
    return value(v);
  }

  bool balanced() const { return stack_.empty() && !haveKey_; }

 private:
  // Stores v where the writer is; returns where it went. Pointers to the open containers stay
  // valid: while a container is open only it grows, never one of its ancestors.
  nlohmann::ordered_json* place(nlohmann::ordered_json v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    nlohmann::ordered_json& top = *stack_.back();
    if (top.is_object()) {
      assert(haveKey_);
      haveKey_ = false;
      nlohmann::ordered_json& slot = top[key_];
      slot = std::move(v);
      return &slot;
    }
    top.push_back(std::move(v));
    return &top.back();
  }
  JsonWriter& put(nlohmann::ordered_json v) {
    place(std::move(v));
    if (stack_.empty()) finish();
    return *this;
  }
  JsonWriter& open(nlohmann::ordered_json v) {
    stack_.push_back(place(std::move(v)));
    return *this;
  }
  JsonWriter& close(bool object) {
    assert(!stack_.empty() && stack_.back()->is_object() == object && !haveKey_);
    (void)object;
    stack_.pop_back();
    if (stack_.empty()) finish();
    return *this;
  }
  void finish() {
    out_ += root_.dump(indent_, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    out_ += '\n';
    root_ = nullptr;
  }

  std::string& out_;
  int indent_;
  nlohmann::ordered_json root_;
  std::vector<nlohmann::ordered_json*> stack_;
  std::string key_;
  bool haveKey_ = false;
};

// Writes a report to `path` ("-": stdout) through "<path>.tmp" renamed into place, so a reader never
// sees half a report. False with a one-line error.
inline bool writeReportFile(const std::string& path, const std::string& text, std::string& error) {
  if (path == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return true;
  }
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) {
    error = "cannot write " + tmp + ": " + std::strerror(errno);
    return false;
  }
  const bool written = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const bool closed = std::fclose(f) == 0;
  if (!written || !closed || std::rename(tmp.c_str(), path.c_str()) != 0) {
    error = "cannot write " + path + ": " + std::strerror(errno);
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

}  // namespace hfbench
