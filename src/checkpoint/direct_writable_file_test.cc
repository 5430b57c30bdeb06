// DirectWritableFile on the real file system (ext4 here): the bytes that reach the file are
// exactly the bytes appended, for sizes around every alignment and buffer boundary, with Sync()
// in the middle of a file, and errors name the path.
#include "src/checkpoint/direct_writable_file.h"

#include <sys/resource.h>

#include <csignal>

#include <fstream>
#include <iterator>
#include <random>

#include <gtest/gtest.h>

#include "test/support/subprocess.h"

namespace titan::checkpoint {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

// Small buffers so that a few KiB cross several buffer boundaries.
constexpr DirectFileOptions kSmall{4 * kDirectAlignment, 3};

class DirectWritableFileTest : public ::testing::Test {
 protected:
  std::unique_ptr<WritableFile> Open(const std::string& path, DirectFileOptions o = kSmall) {
    auto file = OpenDirectWritableFile(path, o);
    EXPECT_TRUE(file.ok()) << file.status().ToString();
    if (!file.ok()) return nullptr;
    // This test's directory is on ext4 (the build machine's disk), which supports O_DIRECT; a
    // nullptr here would mean the direct path is not what is being tested.
    EXPECT_NE(*file, nullptr) << "O_DIRECT refused in " << dir_.path();
    return std::move(file).value();
  }
  testing::TempDir dir_;
};

TEST_F(DirectWritableFileTest, BytesMatchForSizesAroundEveryBoundary) {
  const size_t a = kDirectAlignment, b = kSmall.buffer_bytes;
  for (size_t size : {size_t{0}, size_t{1}, a - 1, a, a + 1, b - 1, b, b + 1, 3 * b + 17, 7 * b,
                      10 * b + a - 3}) {
    SCOPED_TRACE(size);
    const std::string path = dir_.File("f.data");
    const std::string want = RandomBytes(size, static_cast<uint32_t>(size));
    auto file = Open(path);
    ASSERT_NE(file, nullptr);
    // Uneven appends: 1 byte, then growing pieces.
    size_t at = 0, piece = 1;
    while (at < size) {
      const size_t n = std::min(piece, size - at);
      ASSERT_TRUE(file->Append(want.data() + at, n).ok());
      at += n;
      piece = piece * 3 + 1;
    }
    EXPECT_EQ(file->size_bytes(), size);
    ASSERT_TRUE(file->Sync().ok());
    ASSERT_TRUE(file->Close().ok());
    EXPECT_EQ(ReadAll(path), want);
  }
}

TEST_F(DirectWritableFileTest, AppendsContinueAfterSyncOfAPartialBlock) {
  const std::string path = dir_.File("f.data");
  const std::string want = RandomBytes(5 * kSmall.buffer_bytes + 123, 7);
  auto file = Open(path);
  ASSERT_NE(file, nullptr);
  size_t at = 0;
  for (size_t n : {size_t{100}, size_t{5000}, kSmall.buffer_bytes, size_t{1}, size_t{0}}) {
    ASSERT_TRUE(file->Append(want.data() + at, n).ok());
    at += n;
    ASSERT_TRUE(file->Sync().ok());
    // After every Sync the file holds exactly what was appended so far.
    EXPECT_EQ(ReadAll(path), want.substr(0, at));
  }
  ASSERT_TRUE(file->Append(want.data() + at, want.size() - at).ok());
  ASSERT_TRUE(file->Close().ok());  // Close without Sync still writes everything
  EXPECT_EQ(ReadAll(path), want);
}

TEST_F(DirectWritableFileTest, DestroyingWithoutCloseWritesAndClosesTheFile) {
  const std::string path = dir_.File("f.data");
  const std::string want = RandomBytes(2 * kSmall.buffer_bytes + 9, 3);
  {
    auto file = Open(path);
    ASSERT_NE(file, nullptr);
    ASSERT_TRUE(file->Append(want.data(), want.size()).ok());
  }
  EXPECT_EQ(ReadAll(path), want);
}

TEST_F(DirectWritableFileTest, OpenErrorsNameThePath) {
  auto file = OpenDirectWritableFile(dir_.File("missing/f.data"));
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.status().message().find("missing/f.data"), std::string::npos)
      << file.status().ToString();
  auto bad = OpenDirectWritableFile(dir_.File("f.data"), DirectFileOptions{1000, 2});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
}

// A write error on the background thread (EFBIG from a file size limit, reported like a full
// disk) is returned by the next call and names the file; nothing hangs.
TEST_F(DirectWritableFileTest, WriteErrorIsReportedWithThePath) {
  const std::string path = dir_.File("f.data");
  auto file = Open(path);
  ASSERT_NE(file, nullptr);
  // RLIMIT_FSIZE makes writes past the limit fail; SIGXFSZ is ignored so they return EFBIG.
  struct rlimit old;
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  struct rlimit limit = old;
  limit.rlim_cur = 2 * kSmall.buffer_bytes;
  auto old_handler = signal(SIGXFSZ, SIG_IGN);
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &limit), 0);
  const std::string data = RandomBytes(8 * kSmall.buffer_bytes, 1);
  Status status = file->Append(data.data(), data.size());
  if (status.ok()) status = file->Sync();
  setrlimit(RLIMIT_FSIZE, &old);
  signal(SIGXFSZ, old_handler);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted) << status.ToString();
  EXPECT_NE(status.message().find(path), std::string::npos) << status.ToString();
  EXPECT_FALSE(file->Append("x", 1).ok()) << "an append after a failed write was accepted";
  EXPECT_FALSE(file->Close().ok());
}

}  // namespace
}  // namespace titan::checkpoint
