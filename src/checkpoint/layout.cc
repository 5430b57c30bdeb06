#include "src/checkpoint/layout.h"

#include <fmt/format.h>

#include "src/base/text.h"

namespace titan::checkpoint {

std::string StepDirName(int64_t step) { return fmt::format("step_{:010d}", step); }

bool ParseStepDirName(std::string_view name, int64_t* step) {
  if (name.substr(0, 5) != "step_" || name.size() == 5 || name.size() > 5 + 18) return false;
  for (char c : name.substr(5)) {
    if (c < '0' || c > '9') return false;
  }
  return ParseInt64(name.substr(5), step);
}

std::string ManifestPath(int64_t step) {
  return fmt::format("{}/{}", StepDirName(step), kManifestName);
}

std::string DataFilePath(int64_t step, int rank, std::string_view save_id) {
  return fmt::format("{}/rank_{:05d}-{}.data", StepDirName(step), rank, save_id);
}

std::string DonePath(int64_t step, int rank) {
  return fmt::format("{}/rank_{:05d}.done", StepDirName(step), rank);
}

bool IsValidSaveId(std::string_view save_id) {
  if (save_id.empty() || save_id.size() > 32) return false;
  for (char c : save_id) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) return false;
  }
  return true;
}

}  // namespace titan::checkpoint
