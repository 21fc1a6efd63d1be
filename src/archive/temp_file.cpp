// temp_file.cpp - see temp_file.h.
#include "archive/temp_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <vector>

namespace hfa {
namespace {

void removeStaleTemporaries(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path p(path);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  const std::string prefix = p.filename().string() + ".tmp.";
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    const int fd = ::open(it->path().c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) continue;
    struct stat st {};
    const bool old = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && std::time(nullptr) - st.st_mtime >= 2;
    if (old && ::flock(fd, LOCK_EX | LOCK_NB) == 0) ::unlink(it->path().c_str());
    ::close(fd);
  }
}

}  // namespace

int createWriterTemporary(const std::string& path, std::string& tmpPath, std::string& error) {
  removeStaleTemporaries(path);
  const std::string tmpl = path + ".tmp.XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  const int fd = ::mkstemp(buf.data());
  if (fd < 0) {
    error = "cannot create a temporary file next to " + path + ": " + std::strerror(errno);
    return -1;
  }
  // Held until the descriptor is closed (the kernel drops it if this process dies): what tells a
  // later writer that this temporary file is not stale.
  ::flock(fd, LOCK_EX | LOCK_NB);
  ::fchmod(fd, 0644);
  tmpPath = buf.data();
  return fd;
}

}  // namespace hfa
