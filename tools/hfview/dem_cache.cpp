// dem_cache.cpp - see dem_cache.h.
#include "dem_cache.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "archive/archive.h"

namespace fs = std::filesystem;

namespace hfview {

namespace {

// The key's format: change it when hfpack's defaults change what an archive holds.
constexpr const char* kKeyVersion = "hfview-dem-cache-1";

uint64_t fnv1a(const std::string& s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// "path|size|mtime-ns" of an input; false when it cannot be read.
bool describe(const std::string& input, std::string& out, std::string& error) {
  struct stat st {};
  if (::stat(input.c_str(), &st) != 0) {
    error = input + ": " + std::strerror(errno);
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    error = input + ": not a file";
    return false;
  }
  std::error_code ec;
  const fs::path abs = fs::absolute(input, ec);
  out = (ec ? input : abs.lexically_normal().string()) + "|" + std::to_string(st.st_size) + "|" +
        std::to_string(int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec);
  return true;
}

std::string defaultCacheDir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && *xdg == '/') return std::string(xdg) + "/hfview";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/tmp") + "/.cache/hfview";
}

// hfpack: $HF_HFPACK, beside this executable (installed) or in the build tree's
// tools/hfpack/, else the PATH ("hfpack", found by execvp).
std::string findHfpack() {
  if (const char* env = std::getenv("HF_HFPACK"); env && *env) return env;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (const fs::path& p : {self.parent_path() / "hfpack", self.parent_path().parent_path() / "hfpack" / "hfpack"})
      if (::access(p.c_str(), X_OK) == 0) return p.string();
  }
  return "hfpack";
}

// Removes NAME.tmp.PID files whose process is gone (a pack that was killed).
void removeStaleTemporaries(const fs::path& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const size_t at = name.rfind(".tmp.");
    if (at == std::string::npos) continue;
    char* end = nullptr;
    const long pid = std::strtol(name.c_str() + at + 5, &end, 10);
    if (end && *end == '\0' && pid > 0 && ::kill(pid_t(pid), 0) != 0 && errno == ESRCH) fs::remove(e.path(), ec);
  }
}

// Least recently used archives out until the folder holds at most maxBytes (keeping `keep`).
void trim(const fs::path& dir, uint64_t maxBytes, const fs::path& keep) {
  struct Entry {
    fs::path path;
    uint64_t bytes;
    fs::file_time_type time;
  };
  std::vector<Entry> all;
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() != ".hfa") continue;
    Entry x{e.path(), uint64_t(e.file_size(ec)), e.last_write_time(ec)};
    total += x.bytes;
    all.push_back(x);
  }
  std::sort(all.begin(), all.end(), [](const Entry& a, const Entry& b) { return a.time < b.time; });
  for (const Entry& x : all) {
    if (total <= maxBytes) break;
    if (x.path == keep) continue;
    if (fs::remove(x.path, ec)) total -= x.bytes;
  }
}

// Runs hfpack with `args`; its stderr is collected (progress is on a terminal only, so the
// pipe carries notes and errors). Returns the exit status, -1 if it could not start.
int runHfpack(const std::string& hfpack, const std::vector<std::string>& args, std::string& stderrText) {
  int fds[2];
  if (::pipe(fds) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return -1;
  }
  if (pid == 0) {
    ::dup2(fds[1], 2);
    ::close(fds[0]);
    ::close(fds[1]);
    const int devnull = ::open("/dev/null", O_WRONLY);
    if (devnull >= 0) ::dup2(devnull, 1);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(hfpack.c_str()));
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "Error: cannot run %s: %s\n", hfpack.c_str(), std::strerror(errno));
    ::_exit(127);
  }
  ::close(fds[1]);
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (stderrText.size() < (1u << 20)) stderrText.append(buf, size_t(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

// The first "Error: ..." line of hfpack's output without its prefix, else its last line.
std::string hfpackMessage(const std::string& text) {
  size_t at = text.find("Error: ");
  std::string line;
  if (at != std::string::npos) {
    line = text.substr(at + 7, text.find('\n', at) - at - 7);
  } else {
    std::string t = text;
    while (!t.empty() && (t.back() == '\n' || t.back() == '\r')) t.pop_back();
    line = t.substr(t.rfind('\n') == std::string::npos ? 0 : t.rfind('\n') + 1);
  }
  return line.empty() ? "no message" : line;
}

}  // namespace

bool isArchiveFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  unsigned char b[4] = {};
  if (!f.read(reinterpret_cast<char*>(b), 4)) return false;
  const uint32_t magic = uint32_t(b[0]) | uint32_t(b[1]) << 8 | uint32_t(b[2]) << 16 | uint32_t(b[3]) << 24;
  return magic == hfa::kMagic;
}

bool archiveForDems(const DemCacheRequest& r, DemCacheResult& out, std::string& error) {
  out = DemCacheResult{};
  if (r.inputs.empty()) {
    error = "no DEM given";
    return false;
  }
  std::string key = kKeyVersion;
  for (const std::string& in : r.inputs) {
    std::string d;
    if (!describe(in, d, error)) return false;
    key += "\n" + d;
  }
  if (!r.imagery.empty()) {
    std::string d;
    if (!describe(r.imagery, d, error)) return false;
    key += "\nimagery " + d;
  }
  const fs::path dir = r.cacheDir.empty() ? fs::path(defaultCacheDir()) : fs::path(r.cacheDir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    error = "cannot use the cache folder " + dir.string() + ": " + (ec ? ec.message() : "not a folder");
    return false;
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a(key)));
  std::string stem = fs::path(r.inputs[0]).stem().string();
  for (char& c : stem)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) c = '_';
  const fs::path archive = dir / (stem + "-" + hex + ".hfa");
  removeStaleTemporaries(dir);
  if (isArchiveFile(archive.string())) {
    fs::last_write_time(archive, fs::file_time_type::clock::now(), ec);  // recently used
    out.archive = archive.string();
    out.fromCache = true;
    return true;
  }

  const fs::path tmp = dir / (archive.filename().string() + ".tmp." + std::to_string(::getpid()));
  std::vector<std::string> args = r.inputs;
  args.insert(args.end(), {"-o", tmp.string(), "-q"});
  if (!r.imagery.empty()) args.insert(args.end(), {"--imagery", r.imagery});
  const std::string hfpack = r.hfpack.empty() ? findHfpack() : r.hfpack;
  if (!r.quiet)
    std::fprintf(stderr, "Note: packing %s into %s (first open; the next one is instant)\n", r.inputs[0].c_str(),
                 archive.string().c_str());
  const auto t0 = std::chrono::steady_clock::now();
  std::string text;
  const int rc = runHfpack(hfpack, args, text);
  out.packSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (rc != 0 || !isArchiveFile(tmp.string())) {
    fs::remove(tmp, ec);
    if (rc == -1) error = "cannot start " + hfpack + ": " + std::strerror(errno);
    else if (rc == 127) error = "cannot run hfpack (" + hfpack + "); set HF_HFPACK to its path";
    else error = "cannot pack " + r.inputs[0] + ": " + hfpackMessage(text);
    return false;
  }
  fs::rename(tmp, archive, ec);
  if (ec) {
    fs::remove(tmp, ec);
    error = "cannot write " + archive.string() + ": " + ec.message();
    return false;
  }
  uint64_t maxMiB = 4096;
  if (const char* env = std::getenv("HFVIEW_CACHE_MIB"); env && *env) {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(env, &end, 10);
    if (end && *end == '\0' && v > 0) maxMiB = v;
  }
  trim(dir, maxMiB << 20, archive);
  out.archive = archive.string();
  return true;
}

}  // namespace hfview
