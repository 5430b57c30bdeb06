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

std::optional<int> DataFileRank(std::string_view path) {
  std::string_view name = path.substr(path.rfind('/') + 1);  // npos + 1 == 0: the whole path
  size_t dash = name.find('-');
  if (!name.starts_with("rank_") || !name.ends_with(".data") || dash == std::string_view::npos ||
      dash < 5 + 5 || dash > 5 + 9) {
    return std::nullopt;
  }
  int rank = 0;
  for (char c : name.substr(5, dash - 5)) {
    if (c < '0' || c > '9') return std::nullopt;
    rank = rank * 10 + (c - '0');
  }
  return rank;
}

bool IsValidSaveId(std::string_view save_id) {
  if (save_id.empty() || save_id.size() > 32) return false;
  for (char c : save_id) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) return false;
  }
  return true;
}

}  // namespace titan::checkpoint
