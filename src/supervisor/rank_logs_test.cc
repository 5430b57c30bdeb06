// RankLogs with real pipes and a real writer process: bounded files that keep the start and the
// end, nothing lost below the bound, and a writer never blocked by a terminal that does not read.
#include "src/supervisor/rank_logs.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "src/base/clock.h"
#include "src/base/env.h"

namespace titan::supervisor {
namespace {

std::string ReadAll(const std::string& path) { return Env::ReadFile(path, 64 << 20).value_or(""); }

// Forks a child that writes `lines` numbered lines to its stdout and one to stderr, then exits.
pid_t Writer(const WorkerPipes& p, int lines) {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(p.stdout_fd, 1);
    ::dup2(p.stderr_fd, 2);
    for (int i = 0; i < lines; ++i) std::printf("line %06d of the worker's output\n", i);
    std::fflush(stdout);
    std::fprintf(stderr, "ValueError: the last words\n");
    ::_exit(0);
  }
  return pid;
}

class RankLogsTest : public ::testing::Test {
 protected:
  RankLogsTest() {
    char tmpl[] = "/tmp/titan-rank-logs-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
  }
  ~RankLogsTest() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(RankLogsTest, SmallOutputIsKeptWholeWithAHeader) {
  RankLogs logs({dir_, 1 << 20, /*tee=*/false});
  auto pipes = logs.Open(3, 1, 0);
  ASSERT_TRUE(pipes.ok());
  pid_t pid = Writer(*pipes, 100);
  logs.Started(3, 0, pid);
  ::waitpid(pid, nullptr, 0);
  logs.Drain(0, 5 * kNsPerSecond);
  auto files = logs.Files(0);
  ASSERT_EQ(files.size(), 1u);
  const std::string text = ReadAll(files[0]);
  EXPECT_EQ(text.rfind("[titan run] rank 3 (local rank 1) pid ", 0), 0u) << text.substr(0, 100);
  EXPECT_NE(text.find("line 000099"), std::string::npos);
  EXPECT_NE(text.find("ValueError: the last words"), std::string::npos);
  EXPECT_EQ(logs.stats().bytes_on_disk_dropped, 0);
}

TEST_F(RankLogsTest, OutputReadBeforeTheWorkerIsReportedStartedFollowsTheHeader) {
  // The worker runs as soon as it is forked: here all its output is read before Started().
  RankLogs logs({dir_, 1 << 20, /*tee=*/false});
  auto pipes = logs.Open(2, 0, 0);
  ASSERT_TRUE(pipes.ok());
  pid_t pid = Writer(*pipes, 10);
  ::waitpid(pid, nullptr, 0);
  const int64_t deadline = MonoNowNs() + 10 * kNsPerSecond;
  while (logs.stats().bytes_read < 10 * 34 && MonoNowNs() < deadline) ::usleep(1000);
  ASSERT_GE(logs.stats().bytes_read, 10 * 34);
  logs.Started(2, 0, pid);
  logs.Drain(0, 5 * kNsPerSecond);
  auto files = logs.Files(0);
  ASSERT_EQ(files.size(), 1u);
  const std::string text = ReadAll(files[0]);
  EXPECT_EQ(text.rfind("[titan run] rank 2 (local rank 0) pid ", 0), 0u) << text.substr(0, 100);
  EXPECT_NE(text.find("line 000009"), std::string::npos);
}

TEST_F(RankLogsTest, LargeOutputKeepsItsStartAndItsEndWithinTheBound) {
  const int64_t bound = 256 << 10;
  RankLogs logs({dir_, bound, /*tee=*/false});
  auto pipes = logs.Open(0, 0, 2);
  ASSERT_TRUE(pipes.ok());
  pid_t pid = Writer(*pipes, 100'000);  // 3.4 MB
  logs.Started(0, 2, pid);
  ::waitpid(pid, nullptr, 0);
  logs.Drain(2, 10 * kNsPerSecond);
  int64_t on_disk = 0;
  std::string all;
  for (const std::string& f : logs.Files(2)) {
    on_disk += static_cast<int64_t>(std::filesystem::file_size(f));
    all += ReadAll(f);
  }
  EXPECT_LE(on_disk, bound + 1024) << "the head's note and the header are the only extra bytes";
  EXPECT_NE(all.find("line 000000"), std::string::npos) << "the start is kept";
  EXPECT_NE(all.find("line 099999"), std::string::npos) << "the end is kept";
  EXPECT_NE(all.find("ValueError: the last words"), std::string::npos);
  EXPECT_EQ(all.find("line 050000"), std::string::npos) << "the middle rotated away";
  EXPECT_GT(logs.stats().bytes_rotated_out, 0);
}

TEST_F(RankLogsTest, AWriterIsNeverBlockedByATerminalThatDoesNotRead) {
  // Tee on, and titan run's stdout a pipe nobody reads: the terminal queue fills and drops; the
  // writer finishes anyway.
  ::signal(SIGPIPE, SIG_IGN);  // as titan run does: a closed terminal is an error, not a death
  std::fflush(stdout);
  int stuck[2];
  ASSERT_EQ(::pipe(stuck), 0);
  const int saved = ::dup(STDOUT_FILENO);
  ::dup2(stuck[1], STDOUT_FILENO);
  {
    RankLogs logs({dir_, 1 << 20, /*tee=*/true, /*terminal_queue_bytes=*/64 << 10});
    auto pipes = logs.Open(1, 1, 0);
    ASSERT_TRUE(pipes.ok());
    const auto t0 = std::chrono::steady_clock::now();
    pid_t pid = Writer(*pipes, 50'000);
    logs.Started(1, 0, pid);
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
    logs.Drain(0, 5 * kNsPerSecond);
    EXPECT_GT(logs.stats().terminal_bytes_dropped, 0);
    // With nobody left to read, the terminal thread's writes fail (EPIPE) and it ends: what it
    // still holds goes nowhere, not onto the test's own output.
    ::close(stuck[0]);
  }
  ::dup2(saved, STDOUT_FILENO);
  ::close(stuck[1]);
  ::close(saved);
}

}  // namespace
}  // namespace titan::supervisor
