// What `titan report` reads: titan's own result files, recognised by their content (not their
// names), and directories holding them (titan demo's output).
//
// Errors (a Status whose message starts with the path): an unreadable file, invalid or truncated
// JSON (with the byte or line), a JSON document that is none of the kinds below (with the keys
// found), a file over kMaxInputBytes. Nothing is written.
//
// Thread safety: pure functions over the file system.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/base/status.h"

namespace titan::report {

enum class InputKind {
  kLoadRun,        // titan load --json                    {"kind":"titan.load.run",...}
  kLoadSweep,      // titan load sweep --json              {"kind":"titan.load.sweep",...}
  kTraceAnalysis,  // titan trace analyze --json           {"ranks":[...],"cross_rank":{...}}
  kSim,            // titan sim --json                     one row, or {"rows":[...]} of a sweep
  kRunEvents,      // titan run --event-log (JSON lines)   {"type":...,"time_ns":...} per line
  kRunLedger,      // titan run --ledger-json              {"ettr":...,"seconds":{...},...}
  kAgentDump,      // titan agent recorder dump (Perfetto) {"traceEvents":[...]} with its signals
  kGatewayEvents,  // titan gateway --event-log (JSON lines) whose "start" names its "routing"
  kPredict,        // titan predict survival|risk|backtest --json  {"kaplan_meier"|"components"|
                   //                                                "default_model",...}
  kDiagnosis,      // titan diagnose --json                {"kind":"titan.diagnose","incidents":..}
  kPlan,           // titan plan demand|training|serving|failures --json  {"kind":"titan.plan.*"}
};
std::string_view InputKindName(InputKind kind);

struct Input {
  std::string path;
  InputKind kind;
  nlohmann::json doc;  // kRunEvents: an array of the lines' objects
};

inline constexpr size_t kMaxInputBytes = size_t{1} << 30;

// Reads and recognises one file.
Result<Input> ReadInput(const std::string& path);

// Every titan result below `dir` (up to 4 levels deep), sorted by path. Files that are not
// titan results are not errors here (a run directory holds logs and checkpoints too); their
// paths go to `skipped`. A recognised file that fails to parse is an error.
Result<std::vector<Input>> ReadDirectory(const std::string& dir, std::vector<std::string>* skipped);

// Recognises parsed content; `path` decides nothing but goes into errors.
Result<Input> Recognise(const std::string& path, std::string_view content);

}  // namespace titan::report
