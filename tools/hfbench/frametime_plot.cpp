// frametime_plot.cpp - see frametime_plot.h.
#include "frametime_plot.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <sstream>

extern char** environ;

namespace hfbench {

namespace {

std::string scriptPath() {
  const char* dir = std::getenv("HF_BENCH_DIR");
  std::string d = dir && *dir ? dir : HF_BENCH_SCRIPT_DIR;
  return d + "/plot_frametimes.py";
}

}  // namespace

bool plotFrameTimes(const std::string& png, const std::string& title,
                    const std::vector<std::pair<std::string, std::string>>& runs, std::string& error) {
  const std::string script = scriptPath();
  if (::access(script.c_str(), R_OK) != 0) {
    error = "no plot script " + script + " (set HF_BENCH_DIR to the source tree's bench/)";
    return false;
  }
  const std::string python = ::access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
  std::vector<std::string> args{python, script, "--out", png, "--title", title};
  for (const auto& [label, csv] : runs) args.push_back(label + "=" + csv);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // The script's stderr (its one Error line) goes to a file we read back.
  const std::string errFile = png + ".err";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 2, errFile.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, python.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    std::remove(errFile.c_str());
    error = "cannot run " + python + " for the plot";
    return false;
  }
  int status = 0;
  pid_t waited;
  do waited = ::waitpid(pid, &status, 0);
  while (waited < 0 && errno == EINTR);  // only an interrupted wait is retried
  if (waited < 0) {
    std::remove(errFile.c_str());
    error = "lost the plot process (" + std::string(std::strerror(errno)) + ")";
    return false;
  }
  std::ifstream in(errFile);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(errFile.c_str());
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return true;
  std::string why = text.str();
  const size_t at = why.rfind("Error: ");
  why = at != std::string::npos ? why.substr(at + 7) : (why.empty() ? "the plot script failed" : why);
  while (!why.empty() && (why.back() == '\n' || why.back() == '\r')) why.pop_back();
  error = WIFEXITED(status) && WEXITSTATUS(status) == 127 ? python + " not found" : why;
  return false;
}

}  // namespace hfbench
