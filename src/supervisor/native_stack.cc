#include "src/supervisor/native_stack.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include <fmt/format.h>

#include "src/base/clock.h"

namespace titan::supervisor {

NativeStacks CaptureNativeStacks(pid_t pid, int64_t timeout_ns, size_t max_bytes) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return {false, "pipe2 failed"};
  const std::string pid_text = std::to_string(pid);
  const pid_t child = ::fork();
  if (child < 0) {
    ::close(out[0]);
    ::close(out[1]);
    return {false, "fork failed"};
  }
  if (child == 0) {
    ::dup2(out[1], 1);
    ::dup2(out[1], 2);
    sigset_t empty;
    sigemptyset(&empty);
    ::sigprocmask(SIG_SETMASK, &empty, nullptr);
    ::execlp("eu-stack", "eu-stack", "-p", pid_text.c_str(), static_cast<char*>(nullptr));
    constexpr char kMissing[] = "eu-stack not found: install elfutils for native stacks\n";
    ssize_t n = ::write(1, kMissing, sizeof(kMissing) - 1);
    (void)n;
    ::_exit(127);
  }
  ::close(out[1]);
  std::string text;
  bool timed_out = false;
  const int64_t deadline = MonoNowNs() + timeout_ns;
  char buffer[16 << 10];
  while (true) {
    const int64_t left_ms = (deadline - MonoNowNs()) / 1'000'000;
    if (left_ms <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{out[0], POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(left_ms));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      timed_out = r == 0;
      break;
    }
    ssize_t n = ::read(out[0], buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (text.size() < max_bytes)
      text.append(buffer, std::min(static_cast<size_t>(n), max_bytes - text.size()));
  }
  ::close(out[0]);
  if (timed_out) ::kill(child, SIGKILL);  // its ptrace attachment ends with it
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    return {false, fmt::format("eu-stack -p {} did not finish within {:.1f} s (a thread in "
                               "uninterruptible sleep?); partial output:\n{}",
                               pid, NsToSeconds(timeout_ns), text)};
  }
  const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  // eu-stack exits 1 when some thread could not be unwound to the end but still prints the
  // frames it found: keep them.
  if (!ok && text.find("TID ") != std::string::npos) return {true, text};
  return {ok, text};
}

}  // namespace titan::supervisor
