// runtime_files.cpp - see runtime_files.h.
#include "runtime/runtime_files.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

#ifndef HF_SOURCE_DIR
#define HF_SOURCE_DIR ""
#endif

namespace fs = std::filesystem;

namespace hfrt {

std::vector<std::string> runtimeDirCandidates(const std::string& folder) {
  std::vector<std::string> out;
  if (const char* env = std::getenv("HF_DATA_DIR"); env && *env) out.push_back((fs::path(env) / folder).string());
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec && exe.has_parent_path()) {
    out.push_back((exe.parent_path() / folder).string());
    out.push_back((exe.parent_path().parent_path() / "share" / "hfview" / folder).string());
  }
  if (*HF_SOURCE_DIR) out.push_back((fs::path(HF_SOURCE_DIR) / folder).string());
  return out;
}

std::string runtimeDir(const std::string& folder) {
  std::error_code ec;
  for (const std::string& d : runtimeDirCandidates(folder))
    if (fs::is_directory(d, ec)) return d;
  return {};
}

std::string findAsset(const std::string& relative) {
  std::error_code ec;
  for (const std::string& d : runtimeDirCandidates("assets")) {
    const fs::path p = fs::path(d) / relative;
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  return {};
}

}  // namespace hfrt
