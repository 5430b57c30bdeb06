// For tests: the real fleet data in ../shared/data/fleet beside the source tree. Missing, a test
// skips, and fails under CI=true (CI has ../shared beside the clone).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace titan::fleet {

inline std::string TitanGcFullCsv() {
  return (std::filesystem::path(TITAN_SOURCE_DIR) / ".." / "shared" / "data" / "fleet" /
          "titan_gpu" / "gc_full.csv")
      .string();
}

}  // namespace titan::fleet

#define TITAN_REQUIRE_SHARED_FILE(path)                                                \
  do {                                                                                 \
    if (!std::filesystem::exists(path)) {                                              \
      const char* ci = std::getenv("CI");                                              \
      if (ci != nullptr && std::string(ci) == "true") {                                \
        FAIL() << (path) << " is missing (CI has ../shared beside the clone)";         \
      }                                                                                \
      GTEST_SKIP() << (path) << " not found (the fleet data lives in ../shared/data)"; \
    }                                                                                  \
  } while (0)
