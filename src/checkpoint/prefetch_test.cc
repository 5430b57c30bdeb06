// Unit tests of the restart prefetch (prefetch.h) and of the copy's cancellation, with
// directories on both sides (an object store behaves the same through Storage; the S3 path is
// tested end to end in test/checkpoint/test_s3.py).
#include "src/checkpoint/prefetch.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "src/checkpoint/catalog.h"
#include "src/checkpoint/copy.h"
#include "src/checkpoint/layout.h"
#include "src/checkpoint/mirror.h"
#include "src/checkpoint/writer.h"

namespace titan::checkpoint {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  TempDir() {
    char pattern[] = "/tmp/titan_prefetch_test_XXXXXX";
    path = ::mkdtemp(pattern);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string path;
};

std::shared_ptr<Storage> Open(const std::string& dir) {
  auto storage = OpenPosixStorage(dir);
  TITAN_CHECK(storage.ok()) << storage.status().ToString();
  return *storage;
}

// Saves `steps` of a 1 MiB tensor (in 64 KiB chunks) into `dir`.
void SaveSteps(const std::string& dir, std::initializer_list<int64_t> steps) {
  std::vector<char> bytes(1 << 20);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7);
  CheckpointWriter writer(Open(dir));
  for (int64_t step : steps) {
    bytes[0] = static_cast<char>(step);
    SaveOptions o;
    o.save_id = "s" + std::to_string(step);
    o.chunk_bytes = 64 << 10;
    o.async = false;
    o.incremental = false;  // each step's data in its own directory
    TensorToSave t{"w", DType::kUInt8, {1 << 20}, {0}, {1 << 20}, true, bytes.data()};
    ASSERT_TRUE(writer.Save(step, {t}, o).ok());
  }
}

std::optional<int64_t> Latest(const std::string& dir) {
  auto latest = LatestStep(*Open(dir));
  TITAN_CHECK(latest.ok()) << latest.status().ToString();
  return *latest;
}

const PrefetchOutcome& WaitDone(CheckpointPrefetch& p) {
  while (!p.done()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  TITAN_CHECK(p.outcome().ok()) << p.outcome().status().ToString();
  return *p.outcome();
}

// flock(LOCK_SH | LOCK_NB) on the lock file, as titan.checkpoint's reader does.
bool LockIsFree(const std::string& dir) {
  int fd = ::open((dir + "/" + std::string(kPrefetchLockName)).c_str(), O_RDONLY | O_CLOEXEC);
  TITAN_CHECK(fd >= 0);
  bool free = ::flock(fd, LOCK_SH | LOCK_NB) == 0;
  ::close(fd);
  return free;
}

TEST(Prefetch, CopiesTheNewestDurableCheckpointIntoAnEmptyDirectory) {
  TempDir durable, local;
  SaveSteps(durable.path, {10, 20});
  std::string dir = local.path + "/new-node";  // created by the prefetch
  auto started = CheckpointPrefetch::Start(dir, durable.path);
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  const PrefetchOutcome& out = WaitDone(**started);
  EXPECT_TRUE(out.copied);
  EXPECT_EQ(out.local_step, std::nullopt);
  EXPECT_EQ(out.durable_step, 20);
  EXPECT_EQ(out.copy.copied_bytes, 1u << 20);
  EXPECT_EQ(Latest(dir), 20);
  EXPECT_TRUE(fs::exists(dir + "/" + DurableMarkerPath(20)));
  EXPECT_FALSE(fs::exists(dir + "/" + StepDirName(10)));  // only the newest
  EXPECT_TRUE(LockIsFree(dir));
}

TEST(Prefetch, LeavesADirectoryAsNewAsTheStoreAlone) {
  TempDir durable, local;
  SaveSteps(durable.path, {10});
  SaveSteps(local.path, {10, 30});
  auto started = CheckpointPrefetch::Start(local.path, durable.path);
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  const PrefetchOutcome& out = WaitDone(**started);
  EXPECT_FALSE(out.copied);
  EXPECT_EQ(out.local_step, 30);
  EXPECT_EQ(out.copy.copied_bytes, 0u);
  EXPECT_EQ(Latest(local.path), 30);
}

TEST(Prefetch, RefusesASecondHolderAndReleasesTheLockWhenDone) {
  TempDir durable, local;
  SaveSteps(durable.path, {10});
  // Another process's prefetch (here: this test) holds the lock: Start names it and fails.
  std::string lock_path = local.path + "/" + std::string(kPrefetchLockName);
  int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, "pid 42", 6), 6);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  auto refused = CheckpointPrefetch::Start(local.path, durable.path);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("pid 42"), std::string_view::npos)
      << refused.status().ToString();
  ::close(fd);

  auto started = CheckpointPrefetch::Start(local.path, durable.path);
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  WaitDone(**started);
  EXPECT_TRUE(LockIsFree(local.path));
  EXPECT_EQ(Latest(local.path), 10);
}

TEST(Prefetch, AnUnreadableStoreIsAnOutcomeNotACrash) {
  TempDir local;
  auto started = CheckpointPrefetch::Start(local.path, local.path + "/no-such-store");
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  while (!(*started)->done()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_FALSE((*started)->outcome().ok());
  EXPECT_TRUE(LockIsFree(local.path));
}

TEST(Copy, ACancelledCopyCommitsNothing) {
  TempDir from, to;
  SaveSteps(from.path, {10});
  CopyOptions options;
  options.cancelled = [] { return true; };
  auto copied = CopyCheckpoint(*Open(from.path), 10, *Open(to.path), options);
  ASSERT_FALSE(copied.ok());
  EXPECT_EQ(copied.status().code(), StatusCode::kCancelled) << copied.status().ToString();
  EXPECT_EQ(Latest(to.path), std::nullopt);
  EXPECT_FALSE(fs::exists(to.path + "/" + ManifestPath(10)));
}

}  // namespace
}  // namespace titan::checkpoint
