// Reads a fleet history from files of any format titan knows, recognised by their content (the
// one list of sources is in read_history.cc):
//   fleet JSONL (src/fleet/fleet_jsonl.h), the Titan CSV (titan_csv.h), titan run's event log
//   (run_log_source.h), titan diagnose verdicts (diagnose_source.h), agent recorder CSV dumps
//   (recorder_source.h; `NODE=path` names the node, else the file's stem).
// A directory stands for the regular files in it (not recursive). All files go into one
// history, so a fleet JSONL of enters and attributes can be given beside run logs and dumps.
//
// Errors: a file that cannot be read or whose format is not recognised fails the read, naming
// the file and the formats tried; a bad record inside a recognised file is skipped and counted
// in the history's ReadStats.
// Thread safety: pure function over its arguments (reads files).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "src/fleet/history.h"

namespace titan::fleet {

// Files larger than this are refused (a fleet of 100,000 GPUs over years is well below it).
inline constexpr size_t kMaxHistoryFileBytes = size_t{2} << 30;

// Adds one file's records (`text` is its content) to *builder, choosing the reader by content.
// `node` is the node a recorder dump belongs to. INVALID_ARGUMENT when no reader knows it.
Status ReadHistoryText(std::string_view text, const std::string& source, const std::string& node,
                       HistoryBuilder* builder);

Result<FleetHistory> ReadHistory(const std::vector<std::string>& paths);

}  // namespace titan::fleet
