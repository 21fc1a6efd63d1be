// test_process.h - running a tool as a child process that a test may kill, shared by the
// interrupted-work tests (hfpack, hfpack transcode, hfview's background pack: issue 16).
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace hf_test {

// Runs args[0] with args (output to /dev/null; `env` set in the child only). With
// killAfterSeconds >= 0 the child gets SIGKILL that long after its start (if it still runs);
// otherwise it runs to its end. Returns waitpid's status.
inline int runMaybeKilled(std::vector<std::string> args, double killAfterSeconds,
                          const std::vector<std::pair<std::string, std::string>>& env = {}) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    for (const auto& [name, value] : env) ::setenv(name.c_str(), value.c_str(), 1);
    const int devnull = ::open("/dev/null", O_WRONLY);
    if (devnull >= 0) {
      ::dup2(devnull, 1);
      ::dup2(devnull, 2);
    }
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  if (pid < 0) return -1;
  if (killAfterSeconds >= 0) {
    std::this_thread::sleep_for(std::chrono::duration<double>(killAfterSeconds));
    ::kill(pid, SIGKILL);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

}  // namespace hf_test
