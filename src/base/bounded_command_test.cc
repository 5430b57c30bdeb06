#include "src/base/bounded_command.h"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "src/base/clock.h"

namespace titan {
namespace {

using End = BoundedCommandResult::End;

TEST(BoundedCommandTest, CapturesOutputAndExitCode) {
  auto r =
      RunBoundedCommand({"sh", "-c", "echo out; echo err >&2; exit 3"}, 10 * kNsPerSecond, 4096);
  EXPECT_EQ(r.end, End::kExited);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.output.find("out\n"), std::string::npos);
  EXPECT_NE(r.output.find("err\n"), std::string::npos);
  EXPECT_EQ(r.Describe(), "exit code 3");
}

TEST(BoundedCommandTest, SuccessIsOk) {
  auto r = RunBoundedCommand({"true"}, 10 * kNsPerSecond, 16);
  EXPECT_TRUE(r.ok()) << r.Describe();
}

TEST(BoundedCommandTest, AMissingProgramExits127AndSaysSo) {
  auto r = RunBoundedCommand({"titan-no-such-program"}, 10 * kNsPerSecond, 4096);
  EXPECT_EQ(r.end, End::kExited);
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_NE(r.output.find("titan-no-such-program: not found on PATH"), std::string::npos)
      << r.output;
}

TEST(BoundedCommandTest, OutputIsBounded) {
  auto r = RunBoundedCommand({"sh", "-c", "yes | head -c 1000000"}, 10 * kNsPerSecond, 100);
  EXPECT_TRUE(r.ok()) << r.Describe();
  EXPECT_EQ(r.output.size(), 100u);
  EXPECT_TRUE(r.output_truncated);
}

// A command that hangs is killed at the deadline, with what it started in its group.
TEST(BoundedCommandTest, AHangingCommandIsKilledWithItsChildren) {
  char dir[] = "/tmp/titan_bounded_test_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string pid_file = std::string(dir) + "/pid";
  auto r =
      RunBoundedCommand({"sh", "-c", "sleep 300 & echo $! > " + pid_file + "; echo started; wait"},
                        kNsPerSecond / 2, 4096);
  EXPECT_EQ(r.end, End::kTimedOut);
  EXPECT_NE(r.output.find("started"), std::string::npos);
  EXPECT_NE(r.Describe().find("timed out"), std::string::npos);
  std::ifstream in(pid_file);
  pid_t sleeper = 0;
  in >> sleeper;
  ASSERT_GT(sleeper, 0);
  // The background sleep was sent SIGKILL with its group: gone, or a zombie waiting for init to
  // reap it. SIGKILL takes effect when the process next runs, which on a loaded machine can be
  // after RunBoundedCommand returns, so this waits (up to 10 s) rather than looks once.
  auto dead = [&](std::string* text) {
    std::ifstream stat("/proc/" + std::to_string(sleeper) + "/stat");
    text->clear();
    std::getline(stat, *text);
    return text->empty() || text->find(") Z") != std::string::npos;
  };
  std::string text;
  for (int i = 0; i < 1000 && !dead(&text); ++i) usleep(10'000);
  EXPECT_TRUE(dead(&text)) << text;
  std::remove(pid_file.c_str());
  rmdir(dir);
}

// The exit status does not depend on the caller's waitpid: another thread reaping every child
// (as titan run's loop does) must not turn the result into "not started".
TEST(BoundedCommandTest, ExitStatusSurvivesAReaperThread) {
  std::atomic<bool> stop{false};
  std::thread reaper([&] {
    while (!stop) {
      while (waitpid(-1, nullptr, WNOHANG) > 0) {
      }
      usleep(100);
    }
  });
  for (int i = 0; i < 20; ++i) {
    auto r = RunBoundedCommand({"sh", "-c", "exit 7"}, 10 * kNsPerSecond, 64);
    EXPECT_EQ(r.end, End::kExited) << r.Describe();
    EXPECT_EQ(r.exit_code, 7);
  }
  stop = true;
  reaper.join();
}

TEST(BoundedCommandTest, AnEmptyCommandIsNotStarted) {
  auto r = RunBoundedCommand({}, kNsPerSecond, 64);
  EXPECT_EQ(r.end, End::kNotStarted);
  EXPECT_NE(r.Describe().find("empty command"), std::string::npos);
}

}  // namespace
}  // namespace titan
