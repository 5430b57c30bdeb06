// CaptureNativeStacks on a real process with the real eu-stack (elfutils, installed by
// scripts/bootstrap.sh; CI runs as root, so ptrace is allowed).
#include "src/supervisor/native_stack.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "src/base/clock.h"

namespace titan::supervisor {
namespace {

// A child sleeping in clock_nanosleep (waits until /proc says so).
class SleepingChild {
 public:
  SleepingChild() {
    pid_ = fork();
    if (pid_ == 0) {
      execlp("sleep", "sleep", "300", static_cast<char*>(nullptr));
      _exit(127);
    }
    for (int i = 0; i < 500; ++i) {
      std::ifstream wchan("/proc/" + std::to_string(pid_) + "/wchan");
      std::string w;
      wchan >> w;
      if (w.find("nanosleep") != std::string::npos) break;
      usleep(10'000);
    }
  }
  ~SleepingChild() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_;
};

TEST(NativeStackTest, ShowsTheFramesOfASleepingProcess) {
  SleepingChild child;
  NativeStacks stacks = CaptureNativeStacks(child.pid(), 10 * kNsPerSecond);
  ASSERT_TRUE(stacks.ok) << stacks.text;
  EXPECT_NE(stacks.text.find("TID " + std::to_string(child.pid())), std::string::npos)
      << stacks.text;
  EXPECT_NE(stacks.text.find("nanosleep"), std::string::npos) << stacks.text;
}

TEST(NativeStackTest, AMissingToolIsSaid) {
  SleepingChild child;
  const char* old = getenv("PATH");
  const std::string saved = old ? old : "";
  setenv("PATH", "/nonexistent", 1);
  NativeStacks stacks = CaptureNativeStacks(child.pid(), 10 * kNsPerSecond);
  setenv("PATH", saved.c_str(), 1);
  EXPECT_FALSE(stacks.ok);
  EXPECT_NE(stacks.text.find("eu-stack not found"), std::string::npos) << stacks.text;
}

TEST(NativeStackTest, AProcessThatIsGoneIsAnErrorNotAHang) {
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  NativeStacks stacks = CaptureNativeStacks(pid, 10 * kNsPerSecond);
  EXPECT_FALSE(stacks.ok);
  EXPECT_FALSE(stacks.text.empty());
}

}  // namespace
}  // namespace titan::supervisor
