#include "src/base/atomic_file.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace titan {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int CountEntries(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  int n = 0;
  while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

TEST(AtomicFileTest, ReplacesWholeFilesAndLeavesNoTemporary) {
  char dir[] = "/tmp/titan_atomic_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/out.json";
  ASSERT_TRUE(WriteFileAtomically(path, "first").ok());
  ASSERT_TRUE(WriteFileAtomically(path, "second, longer").ok());
  EXPECT_EQ(Read(path), "second, longer");
  EXPECT_EQ(CountEntries(dir), 1);
  unlink(path.c_str());
  rmdir(dir);
}

TEST(AtomicFileTest, AFailedWriteLeavesTheTargetAndNoTemporary) {
  Status missing = WriteFileAtomically("/nonexistent-dir/x.json", "data");
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("/nonexistent-dir/x.json.tmp"), std::string_view::npos);

  // The rename fails (the target is a non-empty directory), also for root: the temporary file
  // must go and the target must be untouched.
  char dir[] = "/tmp/titan_atomic_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string target = std::string(dir) + "/taken";
  ASSERT_EQ(mkdir(target.c_str(), 0700), 0);
  ASSERT_TRUE(WriteFileAtomically(target + "/inside", "kept").ok());
  Status s = WriteFileAtomically(target, "new");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("renaming"), std::string_view::npos) << s.ToString();
  EXPECT_EQ(CountEntries(dir), 1);  // only the directory: no temporary left
  EXPECT_EQ(Read(target + "/inside"), "kept");
  unlink((target + "/inside").c_str());
  rmdir(target.c_str());
  rmdir(dir);
}

TEST(AtomicFileWriterTest, CommitsWholeOrLeavesThePreviousFile) {
  char dir[] = "/tmp/titan_atomic_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/merged.json";
  ASSERT_TRUE(WriteFileAtomically(path, "good previous content").ok());
  {
    AtomicFileWriter w;
    ASSERT_TRUE(w.Open(path).ok());
    std::fputs("half a merge", w.file());
    // Destroyed without Commit (a merge that failed half way).
  }
  EXPECT_EQ(Read(path), "good previous content");
  EXPECT_EQ(CountEntries(dir), 1);
  AtomicFileWriter w;
  ASSERT_TRUE(w.Open(path).ok());
  for (int i = 0; i < 1000; ++i) std::fputs("0123456789", w.file());
  ASSERT_TRUE(w.Commit().ok());
  EXPECT_EQ(Read(path).size(), 10000u);
  EXPECT_EQ(CountEntries(dir), 1);
  unlink(path.c_str());
  rmdir(dir);
}

}  // namespace
}  // namespace titan
