// A temporary directory for tests, removed with its contents on destruction.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace titan::trace::testing {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/titan_trace_test_XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  // Writes `data` to <dir>/<name> and returns the path.
  std::string Write(const std::string& name, const std::string& data) const {
    std::string p = path_ + "/" + name;
    std::ofstream(p, std::ios::binary) << data;
    return p;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace titan::trace::testing
