// dem_cache.cpp - see dem_cache.h.
#include "dem_cache.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
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
#include <functional>
#include <cmath>

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

// Removes what packs of viewers that were killed left: NAME.tmp.PID (hfpack's output for the
// viewer PID) and NAME.tmp.PID.tmp.XXXXXX (hfpack's own temporary for it), once PID is gone and
// no process holds the file's lock (the archive writer locks its temporary while it writes).
void removeStaleTemporaries(const fs::path& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const size_t at = name.find(".tmp.");
    if (at == std::string::npos) continue;
    char* end = nullptr;
    const long pid = std::strtol(name.c_str() + at + 5, &end, 10);
    if (!end || end == name.c_str() + at + 5 || (*end != '\0' && *end != '.') || pid <= 0) continue;
    if (::kill(pid_t(pid), 0) == 0 || errno != ESRCH) continue;  // the viewer still runs
    const int fd = ::open(e.path().c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) continue;
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) ::unlink(e.path().c_str());
    ::close(fd);
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

// Runs hfpack with `args`, its stdout and stderr into one pipe read line by line: lines that
// `onLine` takes (hfpack --progress-lines' "progress F") are consumed, the rest collected in
// `text` (notes and errors). `child` holds the pid while it runs (PackJob's cancel sends it
// SIGTERM: hfpack removes its output and exits). Returns the exit status, -1 if it could not
// start.
int runHfpack(const std::string& hfpack, const std::vector<std::string>& args, std::string& text,
              const std::function<bool(const std::string&)>& onLine = {}, std::atomic<int>* child = nullptr) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return -1;
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return -1;
  }
  if (pid == 0) {
    // hfpack ends with the viewer (SIGTERM: it removes its output), even when the viewer is
    // killed outright; a viewer gone before this line is caught by the parent check.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(1);
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(hfpack.c_str()));
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "Error: cannot run %s: %s\n", hfpack.c_str(), std::strerror(errno));
    ::_exit(127);
  }
  if (child) child->store(int(pid));
  ::close(fds[1]);
  char buf[4096];
  std::string line;
  auto take = [&](const std::string& l) {
    if (onLine && onLine(l)) return;
    if (text.size() < (1u << 20)) text += l + "\n";
  };
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (ssize_t i = 0; i < n; ++i) {
      if (buf[i] != '\n') {
        if (line.size() < 4096) line += buf[i];
        continue;
      }
      take(line);
      line.clear();
    }
  }
  if (!line.empty()) take(line);
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (child) child->store(0);
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

namespace {

// Where a request's archives live in the cache.
struct CacheEntry {
  fs::path dir, archive, preview;
};

bool locate(const DemCacheRequest& r, CacheEntry& e, std::string& error) {
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
  for (const std::string& o : r.packOptions) key += "\noption " + o;
  e.dir = r.cacheDir.empty() ? fs::path(defaultCacheDir()) : fs::path(r.cacheDir);
  std::error_code ec;
  fs::create_directories(e.dir, ec);
  if (ec || !fs::is_directory(e.dir)) {
    error = "cannot use the cache folder " + e.dir.string() + ": " + (ec ? ec.message() : "not a folder");
    return false;
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a(key)));
  std::string stem = fs::path(r.inputs[0]).stem().string();
  for (char& c : stem)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) c = '_';
  e.archive = e.dir / (stem + "-" + hex + ".hfa");
  e.preview = e.dir / (stem + "-" + hex + ".preview.hfa");
  removeStaleTemporaries(e.dir);
  return true;
}

// A cache hit: the archive's time refreshed (least recently used goes first).
bool cached(const fs::path& archive) {
  if (!isArchiveFile(archive.string())) return false;
  std::error_code ec;
  fs::last_write_time(archive, fs::file_time_type::clock::now(), ec);
  return true;
}

// hfpack ARGS -o TMP, TMP renamed to `archive` when it succeeds. False with a one-line error.
// `onLine` / `child` as runHfpack.
bool packTo(const DemCacheRequest& r, std::vector<std::string> args, const fs::path& archive, std::string& error,
            const std::function<bool(const std::string&)>& onLine = {}, std::atomic<int>* child = nullptr) {
  std::error_code ec;
  const fs::path tmp = archive.parent_path() / (archive.filename().string() + ".tmp." + std::to_string(::getpid()));
  args.insert(args.end(), {"-o", tmp.string()});
  const std::string hfpack = r.hfpack.empty() ? findHfpack() : r.hfpack;
  std::string text;
  const int rc = runHfpack(hfpack, args, text, onLine, child);
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
  return true;
}

std::vector<std::string> packArguments(const DemCacheRequest& r, bool withImagery) {
  std::vector<std::string> args = r.inputs;
  args.insert(args.end(), r.packOptions.begin(), r.packOptions.end());
  if (withImagery && !r.imagery.empty()) args.insert(args.end(), {"--imagery", r.imagery});
  return args;
}

// The folder trimmed to $HFVIEW_CACHE_MIB (default 4096), never removing `keep`.
void trimCache(const CacheEntry& e) {
  uint64_t maxMiB = 4096;
  if (const char* env = std::getenv("HFVIEW_CACHE_MIB"); env && *env) {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(env, &end, 10);
    if (end && *end == '\0' && v > 0) maxMiB = v;
  }
  trim(e.dir, maxMiB << 20, e.archive);
}

double secondsNow() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

bool archiveForDems(const DemCacheRequest& r, DemCacheResult& out, std::string& error) {
  out = DemCacheResult{};
  CacheEntry e;
  if (!locate(r, e, error)) return false;
  if (cached(e.archive)) {
    out.archive = e.archive.string();
    out.fromCache = true;
    return true;
  }
  if (!r.quiet)
    std::fprintf(stderr, "Note: packing %s into %s (first open; the next one is instant)\n", r.inputs[0].c_str(),
                 e.archive.string().c_str());
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> args = packArguments(r, true);
  args.push_back("-q");
  const bool ok = packTo(r, args, e.archive, error);
  out.packSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!ok) return false;
  std::error_code ec;
  fs::remove(e.preview, ec);
  trimCache(e);
  out.archive = e.archive.string();
  return true;
}

PackJob::PackJob(DemCacheRequest request) : request_(std::move(request)), startTime_(secondsNow()) {
  thread_ = std::thread([this] { run(); });
}

PackJob::~PackJob() {
  // hfpack may be starting as we cancel: signal whichever child runs until the thread is done.
  cancel_ = true;
  while (!finished_) {
    if (const int pid = child_.load()) ::kill(pid_t(pid), SIGTERM);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (thread_.joinable()) thread_.join();
}

PackJob::Status PackJob::status() const {
  std::lock_guard<std::mutex> lock(mutex_);
  Status s = status_;
  if (s.stage != Stage::Done && s.stage != Stage::Failed) s.seconds = secondsNow() - startTime_;
  return s;
}

void PackJob::run() {
  struct Finished {
    std::atomic<bool>& f;
    ~Finished() { f = true; }
  } finished{finished_};
  auto fail = [&](const std::string& e) {
    std::lock_guard<std::mutex> lock(mutex_);
    status_.stage = Stage::Failed;
    status_.error = cancel_ ? "cancelled" : e;
    status_.seconds = secondsNow() - startTime_;
  };
  CacheEntry e;
  std::string error;
  if (!locate(request_, e, error)) return fail(error);
  if (cached(e.archive)) {
    std::lock_guard<std::mutex> lock(mutex_);
    status_.stage = Stage::Done;
    status_.archive = e.archive.string();
    status_.fromCache = true;
    status_.seconds = secondsNow() - startTime_;
    return;
  }
  // "progress F" lines of hfpack --progress-lines; "result downsampled|full" at the end.
  bool downsampled = true;
  auto onLine = [&](const std::string& line) {
    if (line.rfind("progress ", 0) == 0) {
      const double f = std::strtod(line.c_str() + 9, nullptr);
      std::lock_guard<std::mutex> lock(mutex_);
      if (std::isfinite(f)) status_.fraction = std::clamp(f, 0.0, 1.0);
      return true;
    }
    if (line.rfind("result ", 0) == 0) {
      downsampled = line == "result downsampled";
      return true;
    }
    return false;
  };
  // The preview: heights only (the imagery would take longer than the heights), unless one is
  // cached already. A DEM no larger than the preview packs whole: that is the archive.
  if (!cached(e.preview)) {
    std::vector<std::string> args = packArguments(request_, false);
    args.insert(args.end(), {"--max-size", std::to_string(kPreviewSide), "--progress-lines"});
    if (!packTo(request_, args, e.preview, error, onLine, &child_)) return fail(error);
    if (cancel_) return fail("cancelled");
    std::error_code ec;
    if (!downsampled && request_.imagery.empty()) {
      fs::rename(e.preview, e.archive, ec);
      if (!ec) {
        trimCache(e);
        std::lock_guard<std::mutex> lock(mutex_);
        status_.stage = Stage::Done;
        status_.archive = e.archive.string();
        status_.seconds = secondsNow() - startTime_;
        return;
      }
    }
  }
  if (cancel_) return fail("cancelled");
  {
    std::lock_guard<std::mutex> lock(mutex_);
    status_.stage = Stage::Full;
    status_.preview = e.preview.string();
    status_.fraction = 0;
  }
  std::vector<std::string> args = packArguments(request_, true);
  args.push_back("--progress-lines");
  if (!packTo(request_, args, e.archive, error, onLine, &child_)) return fail(error);
  std::error_code ec;
  fs::remove(e.preview, ec);
  trimCache(e);
  std::lock_guard<std::mutex> lock(mutex_);
  status_.stage = Stage::Done;
  status_.archive = e.archive.string();
  status_.fraction = 1;
  status_.seconds = secondsNow() - startTime_;
}

}  // namespace hfview
