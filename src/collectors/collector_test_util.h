// Test support for the collector tests: a scratch /proc and /sys tree built from the recorded
// fixtures (test/fixtures/proc, test/fixtures/sys) that can be overwritten in place between
// Collect() calls, and a context that records every invalid_sample report.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "src/base/env.h"
#include "src/collectors/collector.h"
#include "src/metrics/registry.h"

namespace titan::testing {

inline std::string FixturePath(const std::string& relative) {
  return std::string(TITAN_SOURCE_DIR) + "/test/fixtures/" + relative;
}

// Writes `content` into `path` in place (same inode), creating parent directories.
inline void WriteFile(const std::filesystem::path& path, const std::string& content) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  ASSERT_TRUE(out.good()) << path;
}

inline std::string ReadFileOrDie(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// Copies every file of `from` into `to`, overwriting existing files in place.
inline void OverlayTree(const std::filesystem::path& from, const std::filesystem::path& to) {
  for (const auto& entry : std::filesystem::recursive_directory_iterator(from)) {
    if (!entry.is_regular_file()) continue;
    WriteFile(to / std::filesystem::relative(entry.path(), from), ReadFileOrDie(entry.path()));
  }
}

// A scratch directory with proc/ and sys/ roots; removed at destruction.
class ScratchRoots {
 public:
  ScratchRoots() {
    char templ[] = "/tmp/titan_collectors_XXXXXX";
    const char* dir = mkdtemp(templ);
    EXPECT_NE(dir, nullptr);
    root_ = dir;
    std::filesystem::create_directories(root_ / "proc");
    std::filesystem::create_directories(root_ / "sys");
  }
  ~ScratchRoots() { std::filesystem::remove_all(root_); }
  std::filesystem::path proc() const { return root_ / "proc"; }
  std::filesystem::path sys() const { return root_ / "sys"; }
  // Overwrites proc/ with the recorded snapshot test/fixtures/proc/<name>.
  void LoadProcSnapshot(const std::string& name) {
    OverlayTree(FixturePath("proc/" + name), proc());
  }
  Env env() const { return Env(proc().string(), sys().string()); }

 private:
  std::filesystem::path root_;
};

// A registry and context for one collector, collecting invalid_sample reports.
class TestContext {
 public:
  explicit TestContext(Env env) : env_(std::move(env)) {
    ctx_.env = &env_;
    ctx_.registry = &registry_;
    ctx_.interval_ns = 100'000'000;
    ctx_.processes = &processes_;
    ctx_.invalid_sample = [this](std::string_view collector, std::string_view what) {
      std::lock_guard<std::mutex> lock(mutex_);
      invalid_.push_back(std::string(collector) + ": " + std::string(what));
    };
  }
  const CollectorContext& ctx() const { return ctx_; }
  MetricRegistry& registry() { return registry_; }
  WatchedProcesses& processes() { return processes_; }
  std::vector<std::string> invalid() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return invalid_;
  }

  // The series `key` (e.g. `titan_cpu_busy_seconds_total{cpu="0"}`); fails the test if absent.
  Series* Find(const std::string& key) {
    Series* series = registry_.Find(key);
    EXPECT_NE(series, nullptr) << "no series " << key;
    return series;
  }
  double Counter(const std::string& key) {
    Series* series = Find(key);
    return series ? series->CounterValue() : -1;
  }
  // The last gauge sample of `key`, or NaN when it has none.
  double Last(const std::string& key) {
    Series* series = Find(key);
    if (series == nullptr || series->LastTimeNs() == 0) return std::nan("");
    return series->Window(series->LastTimeNs(), 1).last;
  }
  // How many gauge samples `key` has in its recorder.
  size_t Samples(const std::string& key) {
    Series* series = Find(key);
    std::vector<RecordedPoint> points;
    if (series) series->RecorderRange(0, INT64_MAX, &points);
    return points.size();
  }

 private:
  Env env_;
  MetricRegistry registry_;
  WatchedProcesses processes_;
  CollectorContext ctx_;
  mutable std::mutex mutex_;
  std::vector<std::string> invalid_;
};

// A plausible wall-clock base for tests' now_ns values.
inline constexpr int64_t kT0 = 1'790'000'000'000'000'000;
inline constexpr int64_t kSecond = 1'000'000'000;

}  // namespace titan::testing
