// The bounds on --dump-dir (issue 15 #9): a flapping job wrote 148 dumps (158 MB) in 15 s, and an
// unwritable directory was accepted at start. Times are passed in; no test waits.
#include "src/agent/dump_directory.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "src/agent/agent.h"
#include "src/base/clock.h"

namespace titan {
namespace {

namespace fs = std::filesystem;

class DumpDirectoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/titan_dump_dir_XXXXXX";
    ASSERT_NE(mkdtemp(templ), nullptr);
    dir_ = templ;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A file of `bytes` bytes whose modification time is `age_s` seconds in the past.
  void Write(const std::string& name, size_t bytes, int age_s) {
    const fs::path path = fs::path(dir_) / name;
    std::ofstream(path) << std::string(bytes, 'x');
    fs::last_write_time(path, fs::file_time_type::clock::now() - std::chrono::seconds(age_s));
  }
  std::set<std::string> Names() const {
    std::set<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir_)) {
      names.insert(entry.path().filename().string());
    }
    return names;
  }

  std::string dir_;
};

TEST_F(DumpDirectoryTest, AdmitsAtMostOneDumpPerInterval) {
  DumpDirectory dumps({dir_, 30 * kNsPerSecond, 10, 1 << 30});
  const int64_t t0 = 5 * kNsPerSecond;
  int admitted = 0;
  // A flapping job: a transient every 100 ms for 15 s.
  for (int i = 0; i < 150; ++i) admitted += dumps.Admit(t0 + i * 100 * kNsPerMs);
  EXPECT_EQ(admitted, 1);
  EXPECT_TRUE(dumps.Admit(t0 + 30 * kNsPerSecond));
}

TEST_F(DumpDirectoryTest, PruneKeepsTheNewestWithinCountAndBytes) {
  DumpDirectory dumps({dir_, 0, 3, 1000});
  for (int i = 0; i < 6; ++i)
    Write("titan-transient-" + std::to_string(i) + "-1.json", 100, 60 - i);
  Write("titan-transient-9-1.json.tmp-123-0", 100, 100);  // left by a crash mid-write
  Write("notes.json", 5000, 500);                         // not ours: never touched
  DumpPruneResult removed;
  ASSERT_TRUE(dumps.Prune(&removed).ok());
  EXPECT_EQ(removed.files, 4u);
  EXPECT_EQ(removed.bytes, 400u);
  EXPECT_EQ(Names(),
            (std::set<std::string>{"notes.json", "titan-transient-3-1.json",
                                   "titan-transient-4-1.json", "titan-transient-5-1.json"}));

  // The byte bound: 250 bytes keep the newest two of 100 bytes; the newest stays even if larger.
  DumpDirectory small({dir_, 0, 10, 250});
  ASSERT_TRUE(small.Prune(&removed).ok());
  EXPECT_EQ(removed.files, 1u);
  Write("titan-transient-7-1.json", 5000, 0);
  ASSERT_TRUE(small.Prune(&removed).ok());
  EXPECT_EQ(removed.files, 2u);
  EXPECT_EQ(Names(), (std::set<std::string>{"notes.json", "titan-transient-7-1.json"}));
}

TEST_F(DumpDirectoryTest, AnUnwritableDirectoryIsRefusedAtStart) {
  // /proc refuses new files even to root, so this holds whoever runs the test.
  Status status = DumpDirectory::CheckWritable("/proc");
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("/proc"), std::string_view::npos) << status.ToString();
  EXPECT_NE(status.message().find("writable"), std::string_view::npos) << status.ToString();
  EXPECT_EQ(DumpDirectory::CheckWritable(dir_ + "/missing").code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(DumpDirectory::CheckWritable(dir_).ok());
  EXPECT_TRUE(Names().empty());  // the probe file is gone

  AgentOptions options;
  options.port = 0;
  options.socket_path = "";
  options.disabled_collectors = {"cpu", "memory",     "net",     "disk",
                                 "psi", "infiniband", "process", "nvml"};
  options.dump_dir = "/proc";
  auto agent = Agent::Start(options);
  ASSERT_FALSE(agent.ok());
  EXPECT_EQ(agent.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(agent.status().message().find("--dump-dir /proc"), std::string_view::npos)
      << agent.status().ToString();
}

}  // namespace
}  // namespace titan
