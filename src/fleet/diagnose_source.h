// `titan diagnose` verdicts as fleet history records:
//   {"incidents": [{"class": "...", "action": "...",
//                   "culprit": {"rank": 3, "node": "gpu-017", "gpu": "0000:a1:00.0"},
//                   "root": {"file": "...", "line": 12, "text": "...", "time": T},
//                   "symptoms": [...], "confidence": 0.9}], "files": [...]}
// Each incident with a culprit node and a root time is a `fail` of the node (the component,
// as in titan run's event log) with the incident's class, and text "gpu G rank R: root text" (the
// parts the verdict names). `root.time` is a calendar time or epoch seconds (a number over 1e14 is
// read as microseconds, over 1e17 as nanoseconds). Incidents without a node or a time are skipped
// and counted. Thread safety: pure function over its arguments.
#pragma once

#include <string_view>

#include "src/fleet/history.h"

namespace titan::fleet {

// True when the text is a JSON object whose first key is "incidents", or one whose "kind" is
// "titan.diagnose" (what titan diagnose --json writes: its keys sorted, "files" first).
bool LooksLikeDiagnoseVerdict(std::string_view text);
void ReadDiagnoseVerdict(std::string_view text, std::string_view source, HistoryBuilder* builder);

}  // namespace titan::fleet
