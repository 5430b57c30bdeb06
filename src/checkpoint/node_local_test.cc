// Unit tests of node-local checkpoint directories (writer.h's SetCommitStore, prefetch.h's
// NodeRanks, read_through_storage.h): each "node" is a directory of its own, the store every
// rank reaches is another directory (an object store behaves the same through Storage; the S3
// path runs end to end in test/checkpoint/test_s3.py).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "src/checkpoint/catalog.h"
#include "src/checkpoint/layout.h"
#include "src/checkpoint/prefetch.h"
#include "src/checkpoint/read_through_storage.h"
#include "src/checkpoint/reader.h"
#include "src/checkpoint/writer.h"
#include "src/trace/testing/temp_dir.h"

namespace titan::checkpoint {
namespace {

namespace fs = std::filesystem;
using trace::testing::TempDir;

std::shared_ptr<Storage> Open(const std::string& dir) {
  auto storage = OpenPosixStorage(dir);
  TITAN_CHECK(storage.ok()) << storage.status().ToString();
  return *storage;
}

// Names in `dir` (recursively, relative), sorted.
std::vector<std::string> Tree(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) out.push_back(fs::relative(e.path(), dir).string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// A job of two ranks, one per node: each saves its half of "rows" (sharded) and its part of
// "rep" (replicated) into its node's directory, committing at `store`.
class TwoNodes {
 public:
  static constexpr int kWorld = 2;
  static constexpr int64_t kRows = 64, kCols = 1024;  // 256 KiB of float32 per tensor

  TwoNodes() : rows_(kRows * kCols), rep_(kRows * kCols) {
    for (int r = 0; r < kWorld; ++r)
      writers_[r] = std::make_unique<CheckpointWriter>(Open(node_[r].path()));
    for (auto& w : writers_) w->SetCommitStore(Open(store_.path()));
  }

  // Saves `step` on both ranks (concurrently, as two processes would); returns their errors.
  std::vector<Status> Save(int64_t step, int keep_last = 0) {
    std::mt19937 rng(static_cast<uint32_t>(step));
    for (float& x : rows_) x = static_cast<float>(rng());
    for (float& x : rep_) x = static_cast<float>(rng());
    std::vector<Status> results(kWorld);
    std::vector<std::thread> ranks;
    for (int r = 0; r < kWorld; ++r) {
      ranks.emplace_back([&, r] {
        int64_t half = kRows / kWorld;
        std::vector<TensorToSave> tensors = {
            {"rows",
             DType::kFloat32,
             {kRows, kCols},
             {r * half, 0},
             {half, kCols},
             false,
             rows_.data() + r * half * kCols},
            {"rep", DType::kFloat32, {kRows, kCols}, {0, 0}, {kRows, kCols}, true, rep_.data()},
        };
        SaveOptions o;
        o.rank = r;
        o.world_size = kWorld;
        o.save_id = "s" + std::to_string(step);
        o.chunk_bytes = 32 << 10;
        o.commit_timeout_seconds = 30;
        o.retention.keep_last = keep_last;
        results[r] = writers_[r]->Save(step, tensors, o);
        if (results[r].ok()) results[r] = writers_[r]->Wait();
      });
    }
    for (auto& t : ranks) t.join();
    return results;
  }

  const std::vector<float>& rows() const { return rows_; }
  const std::vector<float>& rep() const { return rep_; }
  const std::string& node(int r) const { return node_[r].path(); }
  const std::string& store() const { return store_.path(); }

 private:
  TempDir node_[kWorld];
  TempDir store_;
  std::vector<float> rows_, rep_;
  std::unique_ptr<CheckpointWriter> writers_[kWorld];
};

void ExpectOk(const std::vector<Status>& results) {
  for (const Status& s : results) ASSERT_TRUE(s.ok()) << s.ToString();
}

std::vector<float> ReadAll(CheckpointReader& reader, const std::string& name) {
  std::vector<float> out(TwoNodes::kRows * TwoNodes::kCols);
  Status s = reader.ReadTensor(name, out.data(), out.size() * sizeof(float));
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

TEST(NodeLocal, EachNodeKeepsOnlyItsRanksDataAndTheStoreCommits) {
  TwoNodes job;
  ExpectOk(job.Save(7));
  // The store holds the commit and both ranks' data; no marker is left behind.
  std::vector<std::string> store = Tree(job.store());
  EXPECT_EQ(store, (std::vector<std::string>{"latest", "step_0000000007/MANIFEST",
                                             "step_0000000007/rank_00000-s7.data",
                                             "step_0000000007/rank_00001-s7.data"}));
  // Each node holds its own rank's data file and nothing else: no MANIFEST, no markers.
  EXPECT_EQ(Tree(job.node(0)), (std::vector<std::string>{"step_0000000007/rank_00000-s7.data"}));
  EXPECT_EQ(Tree(job.node(1)), (std::vector<std::string>{"step_0000000007/rank_00001-s7.data"}));
  EXPECT_EQ(LatestStep(*Open(job.store())).value(), 7);
  EXPECT_FALSE(LatestStep(*Open(job.node(0))).value().has_value());

  // Both uploads are byte-identical to the local files.
  for (int r = 0; r < 2; ++r) {
    std::string name = fmt::format("step_0000000007/rank_{:05d}-s7.data", r);
    std::ifstream a(job.node(r) + "/" + name, std::ios::binary);
    std::ifstream b(job.store() + "/" + name, std::ios::binary);
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(a), {}),
              std::string(std::istreambuf_iterator<char>(b), {}));
  }
}

TEST(NodeLocal, ARestoreReadsThisNodesFilesLocallyAndTheRestFromTheStore) {
  TwoNodes job;
  ExpectOk(job.Save(3));
  auto through = std::make_shared<ReadThroughStorage>(Open(job.store()), Open(job.node(1)));
  auto reader = CheckpointReader::Open(through, 3);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_EQ(ReadAll(**reader, "rows"), job.rows());
  EXPECT_EQ(ReadAll(**reader, "rep"), job.rep());
  EXPECT_EQ(through->files_from_cache(), 1u);  // rank 1's file, from node 1
  EXPECT_EQ(through->files_from_store(), 1u);  // rank 0's, from the store

  // A damaged local copy is a checksum error, never wrong data.
  std::string mine = job.node(1) + "/step_0000000003/rank_00001-s3.data";
  {
    std::fstream f(mine, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x5a');
  }
  auto damaged = CheckpointReader::Open(
      std::make_shared<ReadThroughStorage>(Open(job.store()), Open(job.node(1))), 3);
  ASSERT_TRUE(damaged.ok());
  std::vector<float> out(TwoNodes::kRows * TwoNodes::kCols);
  Status s = (*damaged)->ReadTensor("rows", out.data(), out.size() * sizeof(float));
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();

  // A local file of another size (a copy cut short) is not used at all.
  fs::resize_file(mine, 1000);
  auto through_short = std::make_shared<ReadThroughStorage>(Open(job.store()), Open(job.node(1)));
  auto short_reader = CheckpointReader::Open(through_short, 3);
  ASSERT_TRUE(short_reader.ok());
  EXPECT_EQ(ReadAll(**short_reader, "rows"), job.rows());
  EXPECT_EQ(through_short->files_from_cache(), 0u);
}

TEST(NodeLocal, EachRankPrunesItsOwnLocalFilesAndTheStoreKeepsItsRetention) {
  TwoNodes job;
  for (int64_t step = 1; step <= 4; ++step) ExpectOk(job.Save(step, /*keep_last=*/2));
  EXPECT_EQ(ListCommittedSteps(*Open(job.store())).value(), (std::vector<int64_t>{3, 4}));
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(Tree(job.node(r)),
              (std::vector<std::string>{fmt::format("step_0000000003/rank_{:05d}-s3.data", r),
                                        fmt::format("step_0000000004/rank_{:05d}-s4.data", r)}))
        << "node " << r;
  }
}

TEST(NodeLocal, ARankThatNeverUploadsLeavesTheStoresLatestAlone) {
  TwoNodes job;
  ExpectOk(job.Save(1));
  // Rank 1's node loses its disk between saves: its save fails before its upload, so rank 0
  // waits for a marker that never comes and commits nothing.
  CheckpointWriter rank0(Open(job.node(0)));
  rank0.SetCommitStore(Open(job.store()));
  std::vector<float> data(16, 1.0f);
  SaveOptions o;
  o.rank = 0;
  o.world_size = 2;
  o.save_id = "late";
  o.async = false;
  o.commit_timeout_seconds = 0.2;
  Status s = rank0.Save(2, {{"rows", DType::kFloat32, {16}, {0}, {16}, true, data.data()}}, o);
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s.ToString();
  EXPECT_EQ(LatestStep(*Open(job.store())).value(), 1);
  EXPECT_FALSE(fs::exists(job.store() + "/step_0000000002"));  // the failed save cleaned up
}

TEST(NodeLocal, APrefetchFetchesOnlyTheFilesOfThisNodesRanks) {
  TwoNodes job;
  ExpectOk(job.Save(5));
  TempDir fresh;  // node 1 replaced by a new machine with an empty disk
  auto prefetch = CheckpointPrefetch::Start(fresh.path(), job.store(), NodeRanks{1, 1});
  ASSERT_TRUE(prefetch.ok()) << prefetch.status().ToString();
  while (!(*prefetch)->done()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const auto& outcome = (*prefetch)->outcome();
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_TRUE(outcome->copied);
  EXPECT_EQ(outcome->copy.files_copied, 1);
  EXPECT_EQ(Tree(fresh.path()),
            (std::vector<std::string>{".prefetch.lock", "step_0000000005/rank_00001-s5.data"}));
  // The restore on that node then reads its rank's file locally.
  auto through = std::make_shared<ReadThroughStorage>(Open(job.store()), Open(fresh.path()));
  auto reader = CheckpointReader::Open(through, 5);
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ(ReadAll(**reader, "rows"), job.rows());
  EXPECT_EQ(through->files_from_cache(), 1u);
}

TEST(Layout, DataFileRankReadsOnlyDataFileNames) {
  EXPECT_EQ(DataFileRank("step_0000000005/rank_00003-abc.data"), 3);
  EXPECT_EQ(DataFileRank("rank_123456-x.data"), 123456);
  EXPECT_EQ(DataFileRank(DataFilePath(1, 42, "id")), 42);
  EXPECT_EQ(DataFileRank("step_0000000005/rank_00003.done"), std::nullopt);
  EXPECT_EQ(DataFileRank("step_0000000005/MANIFEST"), std::nullopt);
  EXPECT_EQ(DataFileRank("rank_0x003-a.data"), std::nullopt);
  EXPECT_EQ(DataFileRank("rank_003-a.data"), std::nullopt);  // fewer digits than written
  EXPECT_EQ(DataFileRank("rank_99999999999-a.data"), std::nullopt);
}

}  // namespace
}  // namespace titan::checkpoint
