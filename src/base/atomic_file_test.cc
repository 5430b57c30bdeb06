#include "src/base/atomic_file.h"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

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

  // The target is a non-empty directory: refused before anything is written, and the
  // directory is untouched.
  char dir[] = "/tmp/titan_atomic_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string target = std::string(dir) + "/taken";
  ASSERT_EQ(mkdir(target.c_str(), 0700), 0);
  ASSERT_TRUE(WriteFileAtomically(target + "/inside", "kept").ok());
  Status s = WriteFileAtomically(target, "new");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("is a directory"), std::string_view::npos) << s.ToString();
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

TEST(AtomicFileTest, AnOutputThatIsAnInputIsRefusedThroughAnyPath) {
  char dir[] = "/tmp/titan_atomic_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string d = dir, input = d + "/in.json", hard = d + "/hard.json";
  ASSERT_TRUE(WriteFileAtomically(input, "{}").ok());
  ASSERT_EQ(link(input.c_str(), hard.c_str()), 0);
  EXPECT_TRUE(RefuseOutputThatIsAnInput(d + "/out.html", {input}, "-o").ok());
  for (const std::string& out : {input, hard, d + "/./in.json"}) {
    Status s = RefuseOutputThatIsAnInput(out, {d + "/other.json", input}, "-o");
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << out;
    EXPECT_NE(s.message().find("is one of the inputs"), std::string::npos) << s.ToString();
  }
  unlink(hard.c_str());
  unlink(input.c_str());
  rmdir(dir);
}

TEST(AtomicFileTest, TwoOutputsThatAreOneFileAreRefusedThroughAnySpelling) {
  char dir[] = "/tmp/titan_atomic_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::filesystem::path previous = std::filesystem::current_path();
  std::filesystem::current_path(dir);
  // Neither exists yet: "x.jsonl" and "./x.jsonl" were compared as different files.
  for (const std::string& other :
       {std::string("./x.jsonl"), std::string(dir) + "/x.jsonl", std::string("y/../x.jsonl")}) {
    Status s = RefuseClashingOutputs({{"--records", "x.jsonl"}, {"--json", other}}, {});
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << other;
    EXPECT_NE(s.message().find("--json " + other + " is also the file of --records"),
              std::string::npos)
        << s.ToString();
  }
  EXPECT_TRUE(RefuseClashingOutputs({{"--records", "x.jsonl"}, {"--json", "x.json"}}, {}).ok());
  std::filesystem::current_path(previous);
  rmdir(dir);
}

// A FIFO, a device node and a symlink keep what they are: the content goes through them.
TEST(AtomicFileTest, FifosDevicesAndSymlinksAreWrittenThroughNotReplaced) {
  char dir[] = "/tmp/titan_atomic_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string d = dir;
  // A symlink to a regular file: the link stays, the target gets the content.
  const std::string target = d + "/keep.json", link = d + "/link.json";
  ASSERT_TRUE(WriteFileAtomically(target, "old").ok());
  ASSERT_EQ(symlink("keep.json", link.c_str()), 0);
  ASSERT_TRUE(WriteFileAtomically(link, "new").ok());
  struct stat st;
  ASSERT_EQ(lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(Read(target), "new");
  // A FIFO: a reader gets the content; the FIFO is still a FIFO.
  const std::string fifo = d + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] { got = Read(fifo); });
  ASSERT_TRUE(WriteFileAtomically(fifo, "through the pipe").ok());
  reader.join();
  EXPECT_EQ(got, "through the pipe");
  ASSERT_EQ(lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  // A character device (a private /dev/null, when mknod is allowed): still a device after
  // both kinds of writes.
  const std::string null_dev = d + "/null";
  if (mknod(null_dev.c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0) {
    ASSERT_TRUE(WriteFileAtomically(null_dev, "discarded").ok());
    AtomicFileWriter w;
    ASSERT_TRUE(w.Open(null_dev).ok());
    std::fputs("discarded too", w.file());
    ASSERT_TRUE(w.Commit().ok());
    ASSERT_EQ(lstat(null_dev.c_str(), &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode));
    unlink(null_dev.c_str());
  }
  // A directory is an error naming it, and nothing is left behind.
  Status dir_status = WriteFileAtomically(d, "x");
  EXPECT_FALSE(dir_status.ok());
  EXPECT_NE(dir_status.message().find("is a directory"), std::string::npos)
      << dir_status.ToString();
  EXPECT_EQ(CountEntries(dir), 3);  // keep.json, link.json, fifo
  unlink(link.c_str());
  unlink(target.c_str());
  unlink(fifo.c_str());
  rmdir(dir);
}

}  // namespace
}  // namespace titan
