// test_files.h - file helpers shared by the tests that write files or read the sample archives.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace hf_test {

// A new, empty folder PREFIX_XXXXXX under the system temp dir (mkdtemp). Never a name derived
// from the process id: CI runs thousands of test processes, pids wrap, and a folder left by an
// earlier process with the same pid would not be empty.
inline std::filesystem::path makeFreshDir(const std::string& prefix) {
  std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "_XXXXXX")).string();
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp " + tmpl + " failed");
  return tmpl;
}

// A fresh folder under the system temp dir, removed with everything in it on destruction.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& prefix = "hf_test") : path(makeFreshDir(prefix)) {}
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

#if defined(HF_SAMPLE_ARCHIVE) && defined(HF_SAMPLE_RAW_ARCHIVE)
// The sample terrain's archives: the build's paths, overridable by $HF_SAMPLE_ARCHIVE /
// $HF_SAMPLE_RAW_ARCHIVE (the GPU machine runs copied binaries).
inline std::string samplePath(bool raw) {
  const char* env = std::getenv(raw ? "HF_SAMPLE_RAW_ARCHIVE" : "HF_SAMPLE_ARCHIVE");
  return env && *env ? env : (raw ? HF_SAMPLE_RAW_ARCHIVE : HF_SAMPLE_ARCHIVE);
}
#endif

}  // namespace hf_test
