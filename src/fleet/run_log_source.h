// `titan run`'s event log (src/supervisor/run_log.h: one JSON object per line with time_ns,
// node, type) as fleet history records. The component is the node (the log's `node` field; the
// ranks of a node share its hardware):
//   start   -> enter (attributes: node_name = the node, job = the job id)
//   crash   -> fail, class "crash", text: rank and exit status
//   hang    -> fail, class "hang", text: rank and how long it was silent
//   lost    -> fail, class "lost" for each node named (a node that left without a word)
//   exclude -> leave, text: the reason (titan run took the node out of the job)
//   finish  -> leave, text: the reason (the job ended; the node is not watched any more)
// Other types (steps, checkpoints, decisions ...) carry no failure and are not counted as
// skipped. A line that is not JSON or has no time_ns/node/type is skipped and counted.
// Thread safety: pure function over its arguments.
#pragma once

#include <string_view>

#include "src/fleet/history.h"

namespace titan::fleet {

// True when the first non-blank line is a JSON object with "time_ns" and "type".
bool LooksLikeRunLog(std::string_view text);
void ReadRunLog(std::string_view text, std::string_view source, HistoryBuilder* builder);

}  // namespace titan::fleet
