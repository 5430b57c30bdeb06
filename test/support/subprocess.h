// Subprocess: starts a real program for end-to-end tests (titan itself, Prometheus, etcd,
// /usr/bin/python3), captures its stdout+stderr into a file, and guarantees it is gone when the
// object is destroyed (SIGTERM, then SIGKILL after a grace period, on its whole process group).
//
// Thread safety: none; one test thread owns a Subprocess.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace titan::testing {

class Subprocess {
 public:
  // Starts argv[0] (searched in PATH) with `argv`, extra environment `env` ("K=V"), output to
  // `log_path`. Aborts the test binary if fork/exec setup fails (a broken test environment).
  Subprocess(std::vector<std::string> argv, std::string log_path,
             std::vector<std::string> env = {});
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }
  // Waits until the log contains `needle` (true) or the timeout passes or the process exits
  // (false).
  bool WaitForOutput(const std::string& needle, std::chrono::milliseconds timeout);
  std::string Output() const;
  // Sends `signal` to the process group; returns the exit status from waitpid (or -1 on timeout).
  int Stop(int signal, std::chrono::milliseconds grace);
  bool Running();

 private:
  pid_t pid_ = -1;
  std::string log_path_;
  bool reaped_ = false;
  int status_ = 0;
};

// A TCP port on 127.0.0.1 that was free a moment ago.
int FreeTcpPort();
// An empty temporary directory, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};
// HTTP GET on 127.0.0.1:port (src/http's client, 30 s for the whole answer); returns the body,
// or "" with *status set to -1 on error.
std::string HttpGet(int port, const std::string& path, int* status = nullptr,
                    const std::string& accept = "");
// Whether a program is on PATH.
bool HaveProgram(const std::string& name);

// `command` run by /bin/sh to its end: its exit code (-1 if it did not exit) and its stdout and
// stderr together.
struct ShellResult {
  int exit_code = -1;
  std::string out;
};
ShellResult RunShell(const std::string& command);

// Whether the tests run in CI (CI=true), where a missing tool or data set is a failure.
bool InCi();

}  // namespace titan::testing
