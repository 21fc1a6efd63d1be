// nginx_server.h - Debian's nginx on a loopback port, for the HTTP archive tests (issue 18).
// A temporary prefix holds the config, the logs and the served folder (www/); the server runs
// in the foreground as a child of the test (no master process, no daemon), so stop() can kill
// it and start() bring it back on the same port. All traffic stays on 127.0.0.1.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace hf_test {

class NginxServer {
 public:
  static constexpr const char* kBinary = "/usr/sbin/nginx";
  static bool available() { return ::access(kBinary, X_OK) == 0; }

  // `serverExtra`: directives inside the server block, e.g. "limit_rate 2m;" or "max_ranges 0;".
  explicit NginxServer(std::string serverExtra = "") : extra_(std::move(serverExtra)) {
    char tmpl[] = "/tmp/hf_nginx_XXXXXX";
    if (::mkdtemp(tmpl)) prefix_ = tmpl;
    std::filesystem::create_directories(www());
    std::filesystem::create_directories(prefix_ + "/tmp");
    port_ = freePort();
  }
  ~NginxServer() {
    stop();
    std::error_code ec;
    if (!prefix_.empty()) std::filesystem::remove_all(prefix_, ec);
  }
  NginxServer(const NginxServer&) = delete;
  NginxServer& operator=(const NginxServer&) = delete;

  std::string www() const { return prefix_ + "/www"; }
  std::string url(const std::string& name) const {
    return "http://127.0.0.1:" + std::to_string(port_) + "/" + name;
  }
  // Requests served so far (lines of the access log).
  // Requests served so far. nginx logs a request after it has sent the response, so a client can
  // be done before its line is written: the count is read again until it has stayed the same for
  // 50 ms (at most 2 s), or a request made just before would be counted after (a flaky test).
  size_t requests() const {
    size_t n = loggedRequests();
    for (int i = 0; i < 40; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      const size_t again = loggedRequests();
      if (again == n) break;
      n = again;
    }
    return n;
  }
  std::string errorLog() const {
    std::string text;
    if (std::FILE* f = std::fopen((prefix_ + "/error.log").c_str(), "r")) {
      char buf[4096];
      for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
      std::fclose(f);
    }
    return text;
  }

  // Starts the server and waits (at most 10 s) until it accepts connections.
  bool start(std::string& error) {
    if (pid_ > 0) return true;
    if (port_ == 0) {
      error = "no free loopback port";
      return false;
    }
    const std::string conf = prefix_ + "/nginx.conf";
    {
      std::ofstream f(conf);
      f << "worker_processes 1;\ndaemon off;\nmaster_process off;\n"
        << "error_log " << prefix_ << "/error.log warn;\npid " << prefix_ << "/nginx.pid;\n"
        << "events { worker_connections 256; }\n"
        << "http {\n  access_log " << prefix_ << "/access.log;\n"
        << "  client_body_temp_path " << prefix_ << "/tmp; proxy_temp_path " << prefix_ << "/tmp;\n"
        << "  fastcgi_temp_path " << prefix_ << "/tmp; uwsgi_temp_path " << prefix_ << "/tmp;\n"
        << "  scgi_temp_path " << prefix_ << "/tmp;\n"
        << "  default_type application/octet-stream;\n  keepalive_requests 100000;\n"
        << "  server {\n    listen 127.0.0.1:" << port_ << ";\n    root " << www() << ";\n    " << extra_
        << "\n  }\n}\n";
    }
    pid_ = ::fork();
    if (pid_ == 0) {
      std::freopen("/dev/null", "w", stdout);
      ::execl(kBinary, kBinary, "-p", prefix_.c_str(), "-e", (prefix_ + "/error.log").c_str(), "-c", conf.c_str(),
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    if (pid_ < 0) {
      error = "fork failed";
      return false;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      if (accepts()) return true;
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        error = "nginx exited at start: " + errorLog();
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    error = "nginx did not accept connections within 10 s: " + errorLog();
    stop();
    return false;
  }

  // Kills the server (as a crash or a pulled cable would: connections are reset).
  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  size_t loggedRequests() const {
    std::ifstream f(prefix_ + "/access.log");
    size_t n = 0;
    for (std::string line; std::getline(f, line);) ++n;
    return n;
  }

  static int freePort() {
    const int s = ::socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0) return 0;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int port = 0;
    if (::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
        ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) == 0)
      port = ntohs(a.sin_port);
    ::close(s);
    return port;
  }
  bool accepts() const {
    const int s = ::socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0) return false;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(uint16_t(port_));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool ok = ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(s);
    return ok;
  }

  std::string extra_, prefix_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace hf_test
