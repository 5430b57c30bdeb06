// Crash consistency with real processes and real signals: writer processes (one per rank of a
// 3-rank job, forked, no torch) save checkpoints in a loop through the normal file-based commit
// protocol; the test kills all of them with SIGKILL at a random moment, then checks that
// "latest" names a checkpoint that verifies and holds exactly the content of its step. The
// next trial resumes from latest, as a restarted job would. bench/ckpt_soak.sh runs hundreds of
// trials (TITAN_CKPT_CRASH_TRIALS).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "src/checkpoint/catalog.h"
#include "src/checkpoint/reader.h"
#include "src/checkpoint/writer.h"

namespace titan::checkpoint {
namespace {

constexpr int kWorld = 3;
constexpr int64_t kRows = 96, kCols = 2048;  // 768 KiB float32, replicated (split across ranks)

// The content every rank holds at `step`: rows change with the step, except the first half,
// which changes only every 4 steps (so incremental saves reference earlier checkpoints).
std::vector<float> Content(int64_t step) {
  std::vector<float> v(kRows * kCols);
  for (int64_t r = 0; r < kRows; ++r) {
    int64_t version = r < kRows / 2 ? step / 4 : step;
    for (int64_t c = 0; c < kCols; ++c) v[r * kCols + c] = static_cast<float>(version * 7 + r + c);
  }
  return v;
}

[[noreturn]] void WriterLoop(const std::string& dir, int rank, const std::string& token) {
  auto storage = OpenPosixStorage(dir);
  if (!storage.ok()) _exit(10);
  CheckpointWriter writer(*storage);
  auto latest = LatestStep(**storage);
  int64_t step = latest.ok() && latest->has_value() ? **latest + 1 : 1;
  while (true) {
    std::vector<float> data = Content(step);
    SaveOptions options;
    options.rank = rank;
    options.world_size = kWorld;
    options.save_id = fmt::format("{}{:x}", token, step);
    options.chunk_bytes = 64 << 10;
    options.retention = RetentionPolicy{2, 5};
    options.items["step"] = step;
    TensorToSave t{"w", DType::kFloat32, {kRows, kCols}, {0, 0}, {kRows, kCols}, true, data.data()};
    Status status = writer.Save(step, {t}, options);
    if (!status.ok()) _exit(11);
    status = writer.Wait();  // keeps `data` alive until the async write is done
    if (!status.ok()) _exit(12);
    ++step;
  }
}

TEST(CrashConsistency, KillNineAtRandomMomentsLeavesLatestIntact) {
  const char* env = std::getenv("TITAN_CKPT_CRASH_TRIALS");
  int trials = env ? std::atoi(env) : 30;
  char pattern[] = "/tmp/titan_ckpt_crash_XXXXXX";
  std::string dir = ::mkdtemp(pattern);
  std::mt19937_64 rng(std::random_device{}());
  int64_t last_latest = 0;
  int progressed = 0;
  for (int trial = 0; trial < trials; ++trial) {
    std::string token = fmt::format("t{}x", trial);
    std::vector<pid_t> pids;
    for (int rank = 0; rank < kWorld; ++rank) {
      pid_t pid = ::fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) WriterLoop(dir, rank, token);
      pids.push_back(pid);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(2000 + rng() % 400'000));
    for (pid_t pid : pids) ::kill(pid, SIGKILL);
    for (pid_t pid : pids) {
      int wstatus = 0;
      ::waitpid(pid, &wstatus, 0);
      EXPECT_TRUE(WIFSIGNALED(wstatus)) << "a writer exited by itself with status "
                                        << WEXITSTATUS(wstatus) << " in trial " << trial;
    }
    auto storage = OpenPosixStorage(dir);
    ASSERT_TRUE(storage.ok());
    auto latest = LatestStep(**storage);
    ASSERT_TRUE(latest.ok()) << latest.status().ToString();
    if (!latest->has_value()) {
      EXPECT_EQ(last_latest, 0) << "a committed checkpoint disappeared in trial " << trial;
      continue;
    }
    int64_t step = **latest;
    EXPECT_GE(step, last_latest) << "trial " << trial;
    if (step > last_latest) ++progressed;
    last_latest = step;
    auto reader = CheckpointReader::Open(*storage, step);
    ASSERT_TRUE(reader.ok()) << "trial " << trial << ": " << reader.status().ToString();
    auto report = (*reader)->VerifyAll();
    ASSERT_TRUE(report.errors.empty()) << "trial " << trial << ": " << report.errors[0].ToString();
    std::vector<float> got(kRows * kCols);
    Status s = (*reader)->ReadTensor("w", got.data(), got.size() * sizeof(float));
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(got, Content(step)) << "trial " << trial << " step " << step;
    EXPECT_EQ((*reader)->manifest().items["step"], step);
  }
  std::printf("%d trials, latest step %lld, progressed in %d trials\n", trials,
              static_cast<long long>(last_latest), progressed);
  EXPECT_GT(progressed, 0) << "no trial committed anything: the kill window is too short";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace titan::checkpoint
