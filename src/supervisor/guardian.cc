#include "src/supervisor/guardian.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "src/supervisor/leftovers.h"

namespace titan::supervisor {
namespace {

// Messages on the socket, one int32 each: > 0 watch that group, < 0 forget group -m, 0 release.
constexpr int32_t kRelease = 0;

// The guardian's whole life, after fork: async-signal-safe calls only, no allocation.
[[noreturn]] void GuardianMain(int read_fd, const char* cgroup_kill, const char* cgroup_dir,
                               char* args, size_t args_size) {
  ::setpgid(0, 0);
  struct sigaction ignore = {};
  ignore.sa_handler = SIG_IGN;
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGTSTP}) {
    ::sigaction(sig, &ignore, nullptr);
  }
  // Keep only the pipe: never hold the caller's stdout, sockets or files open.
  if (read_fd > 0) ::syscall(SYS_close_range, 0u, static_cast<unsigned>(read_fd - 1), 0u);
  ::syscall(SYS_close_range, static_cast<unsigned>(read_fd + 1), ~0u, 0u);
  // Named unlike titan run (guardian.h); Start() waits for this.
  static constexpr char kName[] = "titan-guardian";
  ::prctl(PR_SET_NAME, kName);
  if (args != nullptr && args_size > 0) {
    const size_t n = args_size - 1 < sizeof(kName) - 1 ? args_size - 1 : sizeof(kName) - 1;
    ::memset(args, 0, args_size);
    ::memcpy(args, kName, n);
  }
  const char ready = 1;
  if (::write(read_fd, &ready, 1) != 1) ::_exit(1);

  pid_t groups[Guardian::kMaxGroups];
  int count = 0;
  int32_t buffer[256];
  size_t have = 0;  // bytes in buffer
  while (true) {
    ssize_t n = ::read(read_fd, reinterpret_cast<char*>(buffer) + have, sizeof(buffer) - have);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // end of file (or an error): titan run is gone
    have += static_cast<size_t>(n);
    const size_t whole = have / sizeof(int32_t);
    for (size_t i = 0; i < whole; ++i) {
      const int32_t m = buffer[i];
      if (m == kRelease) ::_exit(0);
      if (m > 0) {
        if (count < Guardian::kMaxGroups) groups[count++] = m;
      } else {
        for (int g = 0; g < count; ++g) {
          if (groups[g] == -m) {
            groups[g] = groups[--count];
            break;
          }
        }
      }
    }
    const size_t rest = have - whole * sizeof(int32_t);
    if (rest > 0) {
      char* bytes = reinterpret_cast<char*>(buffer);
      for (size_t i = 0; i < rest; ++i) bytes[i] = bytes[whole * sizeof(int32_t) + i];
    }
    have = rest;
  }
  for (int g = 0; g < count; ++g) ::kill(-groups[g], SIGKILL);
  if (cgroup_kill[0] != '\0') {
    const int fd = ::open(cgroup_kill, O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
      ssize_t n = ::write(fd, "1", 1);
      (void)n;
      ::close(fd);
    }
    for (int i = 0; i < 100 && ::rmdir(cgroup_dir) != 0 && errno == EBUSY; ++i) ::usleep(10'000);
  }
  ::_exit(0);
}

}  // namespace

Guardian::~Guardian() { Release(); }

Status Guardian::Start(const std::string& cgroup_dir) {
  if (pid_ > 0) return OkStatus();
  // Everything the child needs is made before fork: after it, no allocation.
  const std::string cgroup_kill = cgroup_dir.empty() ? "" : cgroup_dir + "/cgroup.kill";
  // A stream socket pair rather than a pipe: a dead guardian makes send() fail with EPIPE
  // (MSG_NOSIGNAL) instead of raising SIGPIPE in titan run.
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    return ErrnoError(errno, "socketpair for the worker guardian");
  }
  // The argument strings the child renames (see guardian.h); left alone if unknown.
  char* args = nullptr;
  size_t args_size = 0;
  if (auto self = ReadProcStat(::getpid()); self.ok() && self->arg_end > self->arg_start) {
    args = reinterpret_cast<char*>(static_cast<uintptr_t>(self->arg_start));
    args_size = static_cast<size_t>(self->arg_end - self->arg_start);
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    return ErrnoError(e, "fork for the worker guardian");
  }
  if (pid == 0) GuardianMain(fds[0], cgroup_kill.c_str(), cgroup_dir.c_str(), args, args_size);
  ::close(fds[0]);
  char ready = 0;
  ssize_t n;
  do {
    n = ::read(fds[1], &ready, 1);
  } while (n < 0 && errno == EINTR);
  if (n != 1) {
    const int e = n < 0 ? errno : EPIPE;
    ::close(fds[1]);
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    return ErrnoError(e, "starting the worker guardian");
  }
  pid_ = pid;
  write_fd_ = fds[1];
  watched_ = 0;
  return OkStatus();
}

bool Guardian::Send(int32_t message) {
  if (write_fd_ < 0) return false;
  const char* p = reinterpret_cast<const char*>(&message);
  size_t left = sizeof(message);
  while (left > 0) {
    ssize_t n = ::send(write_fd_, p, left, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    left -= static_cast<size_t>(n);
  }
  return true;
}

bool Guardian::Watch(pid_t pgid) {
  if (pgid <= 0 || watched_ >= kMaxGroups) return false;
  if (!Send(static_cast<int32_t>(pgid))) return false;
  ++watched_;
  return true;
}

void Guardian::Forget(pid_t pgid) {
  if (pgid > 0 && Send(-static_cast<int32_t>(pgid)) && watched_ > 0) --watched_;
}

void Guardian::Release() {
  if (pid_ <= 0) return;
  Send(kRelease);
  ::close(write_fd_);
  write_fd_ = -1;
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

}  // namespace titan::supervisor
