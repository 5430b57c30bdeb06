#include "src/base/bounded_command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "src/base/clock.h"

namespace titan {
namespace {

// What the intermediate process reports about the command: one fixed-size record.
struct EndRecord {
  int32_t end;
  int32_t value;  // exit code or signal
};

void WriteAll(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n;
    size -= static_cast<size_t>(n);
  }
}

void SleepMs(int ms) {
  timespec ts{0, static_cast<long>(ms) * 1'000'000L};
  while (::nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

// The intermediate process: starts the command in its own group, waits for it up to the
// deadline, kills the group, reports through `status_fd`. Only async-signal-safe calls.
[[noreturn]] void Intermediate(char* const* argv, int out_write, int status_fd,
                               int64_t deadline_ns) {
  const pid_t child = ::fork();
  if (child < 0) {
    EndRecord r{static_cast<int32_t>(BoundedCommandResult::End::kNotStarted), errno};
    WriteAll(status_fd, &r, sizeof(r));
    ::_exit(1);
  }
  if (child == 0) {
    ::setpgid(0, 0);
    int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd >= 0) ::dup2(null_fd, 0);
    ::dup2(out_write, 1);
    ::dup2(out_write, 2);
    if (out_write > 2) ::close(out_write);
    ::execvp(argv[0], argv);
    const int err = errno;
    static constexpr char kPrefix[] = "cannot execute ";
    WriteAll(2, kPrefix, sizeof(kPrefix) - 1);
    WriteAll(2, argv[0], std::strlen(argv[0]));
    static constexpr char kNotFound[] = ": not found on PATH\n";
    static constexpr char kOther[] = ": exec failed\n";
    if (err == ENOENT) {
      WriteAll(2, kNotFound, sizeof(kNotFound) - 1);
    } else {
      WriteAll(2, kOther, sizeof(kOther) - 1);
    }
    ::_exit(127);
  }
  ::setpgid(child, child);  // also here: no window in which a kill of the group misses it
  ::close(out_write);
  EndRecord r{static_cast<int32_t>(BoundedCommandResult::End::kTimedOut), 0};
  while (true) {
    int st = 0;
    pid_t w = ::waitpid(child, &st, WNOHANG);
    if (w == child) {
      if (WIFEXITED(st)) {
        r = {static_cast<int32_t>(BoundedCommandResult::End::kExited), WEXITSTATUS(st)};
      } else {
        r = {static_cast<int32_t>(BoundedCommandResult::End::kSignaled), WTERMSIG(st)};
      }
      ::kill(-child, SIGKILL);  // what it left behind in its group
      break;
    }
    if (w < 0 && errno != EINTR) break;
    if (MonoNowNs() >= deadline_ns) {
      ::kill(-child, SIGKILL);
      while (::waitpid(child, &st, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    SleepMs(5);
  }
  WriteAll(status_fd, &r, sizeof(r));
  ::_exit(0);
}

}  // namespace

std::string BoundedCommandResult::Describe() const {
  switch (end) {
    case End::kExited:
      return fmt::format("exit code {}", exit_code);
    case End::kSignaled:
      return fmt::format("killed by signal {}", signal);
    case End::kTimedOut:
      return fmt::format("timed out after {:.1f} s (killed)", elapsed_ns / 1e9);
    case End::kNotStarted:
      return "not started: " + output;
  }
  return "?";
}

BoundedCommandResult RunBoundedCommand(const std::vector<std::string>& argv, int64_t timeout_ns,
                                       size_t max_output_bytes) {
  BoundedCommandResult result;
  if (argv.empty()) {
    result.output = "empty command";
    return result;
  }
  // Everything the children touch is prepared before fork (no allocation after it).
  std::vector<char*> c_argv;
  for (const std::string& a : argv) c_argv.push_back(const_cast<char*>(a.c_str()));
  c_argv.push_back(nullptr);

  int out[2], status[2];
  if (::pipe2(out, O_CLOEXEC) != 0) {
    result.output = fmt::format("pipe: {}", std::strerror(errno));
    return result;
  }
  if (::pipe2(status, O_CLOEXEC) != 0) {
    result.output = fmt::format("pipe: {}", std::strerror(errno));
    ::close(out[0]);
    ::close(out[1]);
    return result;
  }
  const int64_t start_ns = MonoNowNs();
  const int64_t deadline_ns = start_ns + std::max<int64_t>(timeout_ns, 0);
  const pid_t intermediate = ::fork();
  if (intermediate < 0) {
    result.output = fmt::format("fork: {}", std::strerror(errno));
    for (int fd : {out[0], out[1], status[0], status[1]}) ::close(fd);
    return result;
  }
  if (intermediate == 0) {
    sigset_t empty;
    sigemptyset(&empty);
    ::sigprocmask(SIG_SETMASK, &empty, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    ::close(out[0]);
    ::close(status[0]);
    // The command's end of the output pipe must survive its exec; the status end must not.
    ::fcntl(out[1], F_SETFD, 0);
    Intermediate(c_argv.data(), out[1], status[1], deadline_ns);
  }
  ::close(out[1]);
  ::close(status[1]);

  // Output until EOF (the group is dead) or a little past the deadline (the intermediate
  // kills the group at the deadline, which closes the pipe).
  char buffer[8192];
  while (true) {
    const int64_t left_ms = (deadline_ns + kNsPerSecond - MonoNowNs()) / kNsPerMs;
    if (left_ms <= 0) break;
    pollfd p{out[0], POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(left_ms));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    ssize_t n = ::read(out[0], buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    size_t keep = std::min(static_cast<size_t>(n), max_output_bytes - result.output.size());
    result.output.append(buffer, keep);
    if (keep < static_cast<size_t>(n)) result.output_truncated = true;
  }
  ::close(out[0]);

  EndRecord rec{static_cast<int32_t>(BoundedCommandResult::End::kNotStarted), 0};
  size_t got = 0;
  while (got < sizeof(rec)) {
    pollfd p{status[0], POLLIN, 0};
    if (::poll(&p, 1, 2000) <= 0) break;
    ssize_t n = ::read(status[0], reinterpret_cast<char*>(&rec) + got, sizeof(rec) - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(status[0]);
  // Reap the intermediate unless a waitpid(-1) elsewhere already did (ECHILD).
  while (::waitpid(intermediate, nullptr, 0) < 0 && errno == EINTR) {
  }
  result.elapsed_ns = MonoNowNs() - start_ns;
  if (got < sizeof(rec)) {
    result.end = BoundedCommandResult::End::kNotStarted;
    result.output = "the process that ran the command died without reporting its end";
    return result;
  }
  result.end = static_cast<BoundedCommandResult::End>(rec.end);
  if (result.end == BoundedCommandResult::End::kExited) result.exit_code = rec.value;
  if (result.end == BoundedCommandResult::End::kSignaled) result.signal = rec.value;
  if (result.end == BoundedCommandResult::End::kNotStarted) {
    result.output = fmt::format("fork: {}", std::strerror(rec.value));
  }
  return result;
}

}  // namespace titan
