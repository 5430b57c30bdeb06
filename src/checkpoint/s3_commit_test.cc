// Every path that commits a checkpoint to an object store (a save, `titan ckpt cp`, the mirror,
// node-local uploads) against a store that misbehaves (issue 37): it completes a multipart
// upload with a part missing, answers 200 to a PUT and keeps nothing, lets two writers commit
// one step, or cuts a MANIFEST short. Nothing may be committed or called durable that is not
// whole. The store is a test double (test/support/fake_s3.h): no real store misbehaves on
// demand; the real Ceph RGW tests correct behaviour (test/checkpoint/test_s3.py).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "src/base/clock.h"
#include "src/checkpoint/catalog.h"
#include "src/checkpoint/commit.h"
#include "src/checkpoint/copy.h"
#include "src/checkpoint/layout.h"
#include "src/checkpoint/mirror.h"
#include "src/checkpoint/s3_storage.h"
#include "src/checkpoint/writer.h"
#include "src/trace/testing/temp_dir.h"
#include "test/support/fake_s3.h"

namespace titan::checkpoint {
namespace {

using testing::FakeS3;
using testing::FaultHttpServer;
using testing::HttpRequest;
using trace::testing::TempDir;

constexpr const char* kBucket = "ckpt";

class S3CommitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("AWS_ACCESS_KEY_ID", "AK", 1);
    ::setenv("AWS_SECRET_ACCESS_KEY", "SK", 1);
    ::setenv("AWS_ENDPOINT_URL", store_.endpoint().c_str(), 1);
    ::setenv("TITAN_S3_PART_MIB", "5", 1);
    ::setenv("TITAN_S3_MAX_ATTEMPTS", "2", 1);
    ::setenv("TITAN_S3_REQUEST_TIMEOUT", "10s", 1);
  }
  std::shared_ptr<Storage> Store(const std::string& prefix = "run") {
    auto storage = OpenS3Storage(std::string("s3://") + kBucket + "/" + prefix);
    EXPECT_TRUE(storage.ok()) << storage.status().ToString();
    return *storage;
  }
  std::shared_ptr<Storage> Local() {
    auto storage = OpenPosixStorage(local_.path());
    EXPECT_TRUE(storage.ok());
    return *storage;
  }
  // Saves `bytes` of one tensor as `step` to `storage` (rank 0 of 1).
  Status Save(CheckpointWriter& writer, int64_t step, size_t bytes, const std::string& save_id) {
    data_.assign(bytes / 4, 0);
    for (size_t i = 0; i < data_.size(); ++i) data_[i] = static_cast<float>(i * 7 + step);
    std::vector<TensorToSave> tensors = {{"w",
                                          DType::kFloat32,
                                          {static_cast<int64_t>(data_.size())},
                                          {0},
                                          {static_cast<int64_t>(data_.size())},
                                          true,
                                          data_.data()}};
    SaveOptions o;
    o.save_id = save_id;
    o.async = false;
    o.commit_timeout_seconds = 30;
    return writer.Save(step, tensors, o);
  }
  void Faults(FakeS3::Faults faults) { store_.SetFaults(std::move(faults)); }
  bool StoreHas(const std::string& key) { return store_.Object(kBucket, key).has_value(); }

  FakeS3 store_;
  TempDir local_;
  std::vector<float> data_;
};

// The store double must not make a correct store look broken: a save, a copy and a listing of
// 12 MiB (3 parts) succeed through it and verify.
TEST_F(S3CommitTest, AWholeUploadCommits) {
  CheckpointWriter writer(Store());
  Status saved = Save(writer, 1, 12 << 20, "one");
  ASSERT_TRUE(saved.ok()) << saved.ToString();
  EXPECT_TRUE(StoreHas("run/step_0000000001/MANIFEST"));
  Result<CopyReport> copied = CopyCheckpoint(*Store(), 1, *Local());
  ASSERT_TRUE(copied.ok()) << copied.status().ToString();
  EXPECT_EQ(LatestStep(*Local()).value(), 1);
}

// S1, `titan ckpt cp`: the store completed the upload without part 2 of 3 and answered 200.
// cp exited 0 with "latest updated"; now the copy fails naming the short object, and the store
// holds no MANIFEST for it.
TEST_F(S3CommitTest, CpFailsWhenTheStoreCompletesAnUploadWithAPartMissing) {
  CheckpointWriter writer(Local());
  ASSERT_TRUE(Save(writer, 2, 12 << 20, "two").ok());
  FakeS3::Faults faults;
  faults.drop_second_part_on_complete = true;
  Faults(faults);
  Result<CopyReport> copied = CopyCheckpoint(*Local(), 2, *Store());
  ASSERT_FALSE(copied.ok());
  EXPECT_EQ(copied.status().code(), StatusCode::kDataLoss) << copied.status().ToString();
  EXPECT_NE(copied.status().message().find("keeps 7340032 bytes of the 12582912 sent"),
            std::string::npos)
      << copied.status().ToString();
  EXPECT_FALSE(StoreHas("run/step_0000000002/MANIFEST"));
  EXPECT_FALSE(StoreHas("run/latest"));
  EXPECT_EQ(store_.server().count("GET", "rank_"), 0u);  // confirmed by HEAD, not re-read
}

// S1, a store that answers 200 to a PUT and keeps nothing (a small file is one PUT).
TEST_F(S3CommitTest, CpFailsWhenTheStoreKeepsNothingOfAPut) {
  CheckpointWriter writer(Local());
  ASSERT_TRUE(Save(writer, 3, 64 << 10, "three").ok());
  FakeS3::Faults faults;
  faults.keep_nothing_on_put = true;
  Faults(faults);
  Result<CopyReport> copied = CopyCheckpoint(*Local(), 3, *Store());
  ASSERT_FALSE(copied.ok());
  EXPECT_EQ(copied.status().code(), StatusCode::kDataLoss) << copied.status().ToString();
  EXPECT_NE(copied.status().message().find("holds no such object"), std::string::npos)
      << copied.status().ToString();
  EXPECT_TRUE(store_.Keys(kBucket).empty());
}

// S1, the mirror: it logged "step 2 durable", wrote DURABLE and wait(durable=True) succeeded.
TEST_F(S3CommitTest, TheMirrorCallsNothingDurableThatTheStoreKeptShort) {
  CheckpointWriter writer(Local());
  ASSERT_TRUE(Save(writer, 2, 12 << 20, "two").ok());
  FakeS3::Faults faults;
  faults.drop_second_part_on_complete = true;
  Faults(faults);
  std::atomic<int> durable_calls{0};
  CheckpointMirror mirror(Local(), Store(), [&](int64_t, uint64_t) { ++durable_calls; });
  mirror.Submit(2, {});
  Status waited = mirror.Wait();
  EXPECT_EQ(waited.code(), StatusCode::kDataLoss) << waited.ToString();
  EXPECT_FALSE(mirror.durable_step().has_value());
  EXPECT_EQ(durable_calls.load(), 0);
  EXPECT_FALSE(std::filesystem::exists(local_.path() + "/" + DurableMarkerPath(2)));
  EXPECT_FALSE(StoreHas("run/step_0000000002/MANIFEST"));
}

// S1, node-local saves: each rank's upload is a commit path too. Rank 1 (which does not commit)
// reported its part done, its marker written, although the store kept its file short; rank 0's
// size check caught it only later, and only at rank 0. The rank's own save fails now, and its
// done marker is not written.
TEST_F(S3CommitTest, ANodeLocalRankFailsWhenItsUploadIsKeptShort) {
  FakeS3::Faults faults;
  faults.drop_second_part_on_complete = true;
  Faults(faults);
  CheckpointWriter writer(Local());
  writer.SetCommitStore(Store());
  data_.assign((12 << 20) / 4, 1.0f);
  SaveOptions o;
  o.rank = 1;
  o.world_size = 2;
  o.save_id = "five";
  o.async = false;
  Status saved = writer.Save(5,
                             {{"w",
                               DType::kFloat32,
                               {2, static_cast<int64_t>(data_.size())},
                               {1, 0},
                               {1, static_cast<int64_t>(data_.size())},
                               false,
                               data_.data()}},
                             o);
  ASSERT_FALSE(saved.ok());
  EXPECT_EQ(saved.code(), StatusCode::kDataLoss) << saved.ToString();
  EXPECT_NE(saved.message().find("uploading rank 1's data"), std::string::npos) << saved.ToString();
  EXPECT_FALSE(StoreHas("run/step_0000000005/rank_00001.done"));
}

// Two node-local writers of one step to one store both reported success (the store kept the
// second). The MANIFEST is created, not overwritten: the writer that began first and commits
// second fails, naming the other save, and removes its own data.
TEST_F(S3CommitTest, TwoWritersOfOneStepCannotBothSucceed) {
  std::atomic<bool> first_committed{false};
  FakeS3::Faults faults;
  faults.hook = [&](const HttpRequest& r, FaultHttpServer::Connection& c) {
    // The late writer's data waits until the other one has committed.
    while (r.path.find("-late.data") != std::string::npos && !first_committed && c.Sleep(1e7)) {
    }
    return false;
  };
  Faults(faults);
  TempDir other_node;
  CheckpointWriter late(Local());
  late.SetCommitStore(Store());
  Status late_saved;
  std::thread late_thread([&] { late_saved = Save(late, 4, 64 << 10, "late"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // "late" began first
  {
    CheckpointWriter early(*OpenPosixStorage(other_node.path()));
    early.SetCommitStore(Store());
    std::vector<float> data(1024, 1.0f);
    SaveOptions o;
    o.save_id = "early";
    o.async = false;
    Status saved =
        early.Save(4, {{"w", DType::kFloat32, {1024}, {0}, {1024}, true, data.data()}}, o);
    ASSERT_TRUE(saved.ok()) << saved.ToString();
  }
  first_committed = true;
  late_thread.join();
  ASSERT_FALSE(late_saved.ok());
  EXPECT_EQ(late_saved.code(), StatusCode::kAlreadyExists) << late_saved.ToString();
  EXPECT_NE(late_saved.message().find("committed by save early"), std::string::npos)
      << late_saved.ToString();
  Result<Manifest> committed = ReadManifest(*Store(), 4);
  ASSERT_TRUE(committed.ok());
  EXPECT_EQ(committed->save_id, "early");
  EXPECT_FALSE(StoreHas("run/step_0000000004/rank_00000-late.data"));  // cleaned up
  EXPECT_TRUE(StoreHas("run/step_0000000004/rank_00000-early.data"));
}

// A short 200 for the MANIFEST was DATA_LOSS at once. It is read again first.
TEST_F(S3CommitTest, AShortManifestReadIsRetriedBeforeDataLoss) {
  {
    CheckpointWriter writer(Store());
    ASSERT_TRUE(Save(writer, 6, 64 << 10, "six").ok());
  }
  auto short_reads = std::make_shared<std::atomic<int>>(1);
  FakeS3::Faults faults;
  faults.hook = [&, short_reads](const HttpRequest& r, FaultHttpServer::Connection& c) {
    if (r.method != "GET" || r.path.find("/MANIFEST") == std::string::npos ||
        short_reads->fetch_sub(1) <= 0) {
      return false;
    }
    std::string whole = *store_.Object(kBucket, "run/step_0000000006/MANIFEST");
    c.Write(FaultHttpServer::Answer(200, whole.substr(0, whole.size() / 2)));
    return true;
  };
  Faults(faults);
  Result<Manifest> manifest = ReadManifest(*Store(), 6);
  ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();
  EXPECT_EQ(manifest->save_id, "six");
  EXPECT_EQ(store_.server().count("GET", "MANIFEST"), 2u);

  short_reads->store(100);  // a store that always cuts it: DATA_LOSS after 3 reads
  Result<Manifest> cut = ReadManifest(*Store(), 6);
  EXPECT_EQ(cut.status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(store_.server().count("GET", "MANIFEST"), 5u);
}

// The commit rule itself, on a file system and on stores that honour or ignore If-None-Match.
TEST_F(S3CommitTest, AManifestIsCreatedOnceAndReplacedOnlyByALaterSave) {
  for (int kind = 0; kind < 3; ++kind) {
    SCOPED_TRACE(kind);
    FakeS3::Faults faults;
    faults.honour_if_none_match = kind != 2;
    Faults(faults);
    TempDir dir;
    std::shared_ptr<Storage> root =
        kind == 0 ? *OpenPosixStorage(dir.path()) : Store("rule" + std::to_string(kind));
    ASSERT_TRUE(root->CreateDir(StepDirName(9)).ok());
    Manifest m;
    m.step = 9;
    m.save_id = "first";
    m.created_unix_ns = 1000;
    ASSERT_TRUE(CommitManifest(*root, m, SerializeManifest(m), 900).ok());
    // The same save again (a retry after a lost answer): fine, unchanged.
    EXPECT_TRUE(CommitManifest(*root, m, SerializeManifest(m), 900).ok());
    // A save that was running when "first" committed: refused.
    Manifest other = m;
    other.save_id = "second";
    other.created_unix_ns = 2000;
    Status refused = CommitManifest(*root, other, SerializeManifest(other), 950);
    EXPECT_EQ(refused.code(), StatusCode::kAlreadyExists) << refused.ToString();
    EXPECT_EQ(ReadManifest(*root, 9)->save_id, "first");
    // A save that began after "first" committed (a restarted job saving the step again).
    EXPECT_TRUE(CommitManifest(*root, other, SerializeManifest(other), 1500).ok());
    EXPECT_EQ(ReadManifest(*root, 9)->save_id, "second");
  }
}

}  // namespace
}  // namespace titan::checkpoint
