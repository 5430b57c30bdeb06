// Names of things inside a checkpoint root directory (docs/checkpoint-format.md):
//
//   ROOT/latest                               "step_0000000100\n": the newest committed step
//   ROOT/step_0000000100/MANIFEST             present only once the checkpoint is committed
//   ROOT/step_0000000100/rank_00003-<id>.data data written by rank 3 during save <id>
//   ROOT/step_0000000100/rank_00003.done      rank 3's chunk list, merged by rank 0 (transient)
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace titan::checkpoint {

inline constexpr std::string_view kLatestFile = "latest";
inline constexpr std::string_view kManifestName = "MANIFEST";

// The largest step a checkpoint can have: a step directory names at most 18 digits.
inline constexpr int64_t kMaxStep = 999'999'999'999'999'999;
std::string StepDirName(int64_t step);  // "step_0000000100"
// Parses "step_<digits>" (any number of digits); false for anything else.
bool ParseStepDirName(std::string_view name, int64_t* step);
std::string ManifestPath(int64_t step);  // "step_0000000100/MANIFEST"
std::string DataFilePath(int64_t step, int rank, std::string_view save_id);
std::string DonePath(int64_t step, int rank);
// The rank that wrote data file `path` ("step_N/rank_00003-<id>.data" or just its name): 3;
// nullopt for any other name.
std::optional<int> DataFileRank(std::string_view path);
// True for a save id of 1..32 characters [a-z0-9].
bool IsValidSaveId(std::string_view save_id);

}  // namespace titan::checkpoint
