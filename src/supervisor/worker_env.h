// The environment of titan run's workers: what torchrun sets (RANK, WORLD_SIZE, MASTER_ADDR,
// TORCHELASTIC_*), titan's own (TITAN_GENERATION, TITAN_STACK_FILE, TITAN_AGENT_SOCKET, ...),
// and the rest of titan run's environment. Pure functions of their arguments.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/supervisor/rendezvous.h"
#include "src/supervisor/supervisor.h"
#include "src/supervisor/worker_group.h"

namespace titan::supervisor {

// The part common to every worker of every generation: `environment` ("KEY=VALUE" entries,
// e.g. ::environ) without the variables titan sets per worker, plus OMP_NUM_THREADS=1 where
// unset (as torchrun does), the checkpoint directories of `o`, and TITAN_AGENT_SOCKET with
// `socket_path` first, then the sockets already listed there (or the agent's default).
std::vector<std::string> BaseWorkerEnv(const RunOptions& o, const std::string& socket_path,
                                       const char* const* environment);

// "reason: detail" of a generation record (Assignment::reason); "start" for the first.
std::string ReasonText(const nlohmann::json& record);

// Where worker `rank` writes its Python stacks on SIGUSR1 (TITAN_STACK_FILE).
std::string StackFile(const std::string& run_dir, int rank);

// With o.risk: Young/Daly's checkpoint interval for the job's nodes (a.members, or this node
// alone) from their risk, exported to the workers as TITAN_CHECKPOINT_INTERVAL_S.
predict::IntervalAdvice RecommendedInterval(const RunOptions& o, const Assignment& a);

// The spec of local rank `local_rank` of assignment `a`: o.command with `base_env` and the
// per-worker variables; its output goes to <o.log_dir>/rank<N>.log when o.log_dir is set.
WorkerSpec WorkerSpecFor(const RunOptions& o, const Assignment& a, int local_rank,
                         const std::vector<std::string>& base_env, int restart_count);

}  // namespace titan::supervisor
