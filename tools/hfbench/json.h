// json.h - a tiny streaming JSON writer for benchmark reports.
//
// Appends to a std::string. Objects and arrays nest; commas and indentation are handled here.
// Strings are escaped per RFC 8259 (quote, backslash, control characters); bytes that are not
// valid UTF-8 become U+FFFD so the output always parses. Non-finite doubles are written as
// null. Doubles use the shortest representation that reads back to the same value.
// Misuse (a value without a key inside an object, unbalanced end) is a programming error and
// is caught by assert() in debug builds.
#pragma once

#include <cassert>
#include <charconv>
#include <cmath>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace hfbench {

class JsonWriter {
 public:
  explicit JsonWriter(std::string& out, int indent = 2) : out_(out), indent_(indent) {}

  // `compact` containers are written on one line ("[1, 2, 3]"), for short numeric arrays.
  JsonWriter& beginObject(bool compact = false) { return open('{', compact, true); }
  JsonWriter& endObject() { return close('}', true); }
  JsonWriter& beginArray(bool compact = false) { return open('[', compact, false); }
  JsonWriter& endArray() { return close(']', false); }

  JsonWriter& key(std::string_view k) {
    assert(!stack_.empty() && stack_.back().object && !after_key_);
    separate();
    writeString(k);
    out_ += ": ";
    after_key_ = true;
    return *this;
  }

  JsonWriter& value(std::string_view s) {
    beforeValue();
    writeString(s);
    return *this;
  }
  JsonWriter& value(const char* s) { return s ? value(std::string_view(s)) : null(); }
  JsonWriter& value(const std::string& s) { return value(std::string_view(s)); }
  JsonWriter& value(bool b) {
    beforeValue();
    out_ += b ? "true" : "false";
    return *this;
  }
  template <class T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  JsonWriter& value(T v) {
    beforeValue();
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out_.append(buf, r.ptr);
    return *this;
  }
  JsonWriter& value(double v) {
    if (!std::isfinite(v)) return null();
    beforeValue();
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out_.append(buf, r.ptr);
    return *this;
  }
  JsonWriter& value(float v) { return value(static_cast<double>(v)); }
  JsonWriter& null() {
    beforeValue();
    out_ += "null";
    return *this;
  }

  // key(k).value(v) in one call.
  template <class T>
  JsonWriter& field(std::string_view k, const T& v) {
    key(k);
    return value(v);
  }

  bool balanced() const { return stack_.empty() && !after_key_; }

 private:
  struct Level {
    bool object;
    bool compact;
    bool empty;
  };

  JsonWriter& open(char c, bool compact, bool object) {
    beforeValue();
    out_ += c;
    // A compact container inside a compact one stays compact.
    const bool inherited = !stack_.empty() && stack_.back().compact;
    stack_.push_back(Level{object, compact || inherited, true});
    return *this;
  }

  JsonWriter& close(char c, bool object) {
    assert(!stack_.empty() && stack_.back().object == object && !after_key_);
    (void)object;
    const Level level = stack_.back();
    stack_.pop_back();
    if (!level.empty && !level.compact) newline();
    out_ += c;
    if (stack_.empty()) out_ += '\n';
    return *this;
  }

  void separate() {
    if (stack_.empty()) return;
    Level& level = stack_.back();
    if (!level.empty) out_ += level.compact ? ", " : ",";
    if (!level.compact) newline();
    level.empty = false;
  }

  void beforeValue() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    assert(stack_.empty() || !stack_.back().object);
    separate();
  }

  void newline() {
    out_ += '\n';
    out_.append(stack_.size() * static_cast<size_t>(indent_), ' ');
  }

  // Length of the valid UTF-8 sequence starting at s[i], or 0 if it is not valid.
  static size_t utf8Length(std::string_view s, size_t i) {
    const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char c = b(i);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    if (n == 0 || i + n > s.size()) return 0;
    for (size_t k = 1; k < n; ++k)
      if ((b(i + k) & 0xc0) != 0x80) return 0;
    if (n == 2 && c < 0xc2) return 0;                              // overlong
    if (n == 3 && c == 0xe0 && b(i + 1) < 0xa0) return 0;          // overlong
    if (n == 3 && c == 0xed && b(i + 1) >= 0xa0) return 0;         // surrogates
    if (n == 4 && (c > 0xf4 || (c == 0xf0 && b(i + 1) < 0x90) ||  // overlong / > U+10FFFF
                   (c == 0xf4 && b(i + 1) >= 0x90)))
      return 0;
    return n;
  }

  void writeString(std::string_view s) {
    out_ += '"';
    for (size_t i = 0; i < s.size();) {
      const unsigned char c = static_cast<unsigned char>(s[i]);
      if (c < 0x80) {
        switch (c) {
          case '"': out_ += "\\\""; break;
          case '\\': out_ += "\\\\"; break;
          case '\b': out_ += "\\b"; break;
          case '\f': out_ += "\\f"; break;
          case '\n': out_ += "\\n"; break;
          case '\r': out_ += "\\r"; break;
          case '\t': out_ += "\\t"; break;
          default:
            if (c < 0x20) {
              static const char kHex[] = "0123456789abcdef";
              out_ += "\\u00";
              out_ += kHex[c >> 4];
              out_ += kHex[c & 0xf];
            } else {
              out_ += static_cast<char>(c);
            }
        }
        ++i;
        continue;
      }
      const size_t n = utf8Length(s, i);
      if (n == 0) {
        out_ += "\\ufffd";
        ++i;
      } else {
        out_.append(s.data() + i, n);
        i += n;
      }
    }
    out_ += '"';
  }

  std::string& out_;
  int indent_;
  std::vector<Level> stack_;
  bool after_key_ = false;
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
