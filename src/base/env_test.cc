#include "src/base/env.h"

#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace titan {
namespace {

class EnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() / ("titan_env_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_ / "proc");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Write(const std::string& rel, const std::string& content) {
    std::ofstream(dir_ / rel) << content;
  }
  std::filesystem::path dir_;
};

TEST_F(EnvTest, RootsAreInjectable) {
  Env env((dir_ / "proc").string(), "/nonexistent-sys");
  EXPECT_EQ(env.ProcPath("stat"), (dir_ / "proc" / "stat").string());
  EXPECT_EQ(env.ProcPath("/stat"), (dir_ / "proc" / "stat").string());
  EXPECT_EQ(env.SysPath("class/net"), "/nonexistent-sys/class/net");
}

TEST_F(EnvTest, FileReaderRereadsChangedContent) {
  Write("proc/stat", "cpu 1 2 3\n");
  FileReader reader((dir_ / "proc/stat").string());
  auto first = reader.Read();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(*first, "cpu 1 2 3\n");
  Write("proc/stat", "cpu 4 5 6 7 8\n");
  auto second = reader.Read();
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*second, "cpu 4 5 6 7 8\n");
}

TEST_F(EnvTest, MissingFileIsNotFoundNamingThePath) {
  FileReader reader((dir_ / "proc/nope").string());
  auto r = reader.Read();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("proc/nope"), std::string_view::npos);
}

// A FIFO under --proc-root hung the agent's sampler in open(); /dev/zero never ends.
TEST_F(EnvTest, AFifoOrADeviceIsRefusedNotRead) {
  const std::string fifo = (dir_ / "proc/stat").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  FileReader reader(fifo);
  auto r = reader.Read();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            fifo + " is not a regular file (a FIFO): expected a regular file");
  auto zero = Env::ReadFile("/dev/zero");
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().message().find("(a character device)"), std::string_view::npos);
}

TEST_F(EnvTest, OversizedFileIsRejectedNotTruncated) {
  Write("proc/big", std::string(10000, 'x'));
  FileReader reader((dir_ / "proc/big").string(), 5000);
  auto r = reader.Read();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kOutOfRange);
}

TEST_F(EnvTest, ReadsRealProcStat) {
  auto r = Env::ReadFile("/proc/stat");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->rfind("cpu ", 0), 0u);
}

TEST_F(EnvTest, ListsDirectorySorted) {
  Write("proc/b", "");
  Write("proc/a", "");
  auto names = Env::ListDir((dir_ / "proc").string());
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, (std::vector<std::string>{"a", "b"}));
}

}  // namespace
}  // namespace titan
