// Slurm: what `titan run` reads from the environment srun/sbatch give a task, and the node
// states it asks slurmctld for (through `scontrol`, bounded in time).
//
// Thread safety: pure functions, except QuerySlurmNode, which runs scontrol (blocking up to its
// timeout; callable from any thread).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "src/base/status.h"

namespace titan::cluster {

// A task's view of its Slurm job (srun / sbatch environment).
struct SlurmEnv {
  std::string job_id;              // SLURM_JOB_ID
  std::vector<std::string> nodes;  // SLURM_JOB_NODELIST (or SLURM_NODELIST), expanded, in order
  int node_index = -1;             // SLURM_NODEID: this node's index in `nodes`
  std::string node_name;           // SLURMD_NODENAME: this node's name as Slurm knows it
  int restart_count = 0;           // SLURM_RESTART_COUNT: times the job was requeued
  int step_tasks = 0;              // SLURM_STEP_NUM_TASKS inside an srun step, else 0
};

using GetEnvFn = std::function<const char*(const char*)>;

// nullopt when not inside a Slurm job (no SLURM_JOB_ID). INVALID_ARGUMENT, naming the variable,
// when a variable is malformed (a bad hostlist, SLURM_NODEID not a number or outside the list,
// SLURM_NNODES disagreeing with the list, an srun step with more tasks than nodes: titan run is
// one task per node).
Result<std::optional<SlurmEnv>> ReadSlurmEnv(const GetEnvFn& getenv);

// One node's state as `scontrol -o show node` reports it, e.g. "ALLOCATED+DRAIN" or
// "IDLE*+NOT_RESPONDING" (Slurm 22.05 writes the base state first, then +FLAGs).
struct SlurmNodeState {
  std::string name;
  std::string state;   // the whole State= value
  std::string reason;  // Reason= (may be empty)
  std::string addr;    // NodeAddr=: where the node is reached (may be empty)

  bool Down() const;           // DOWN, FAIL or FUTURE base state
  bool NotResponding() const;  // the NOT_RESPONDING flag (or a '*' after the base state)
  bool Draining() const;       // DRAIN flag (draining or drained)
  bool Lost() const { return Down() || NotResponding(); }
};

// Parses the one-line-per-node output of `scontrol -o show node [NAMES]`. Lines without
// NodeName= and State= are skipped; at most 100,000 nodes.
std::vector<SlurmNodeState> ParseScontrolNodes(std::string_view text);

// Runs `scontrol -o show node NAME` (bounded by timeout_ns). UNAVAILABLE with scontrol's own
// words when it fails or times out; NOT_FOUND when the answer names no such node.
Result<SlurmNodeState> QuerySlurmNode(const std::string& name, int64_t timeout_ns);

// Polls one node's state on a thread of its own (every interval_ns; each query bounded by
// timeout_ns) and tells whether Slurm has it down or not responding. A failing scontrol is not
// a lost node: the last good state stands.
// Thread safety: LostState() may be called from any thread.
class SlurmNodeWatch {
 public:
  SlurmNodeWatch(std::string node, int64_t interval_ns, int64_t timeout_ns);
  ~SlurmNodeWatch();  // stops the thread (waits for a query in flight)
  SlurmNodeWatch(const SlurmNodeWatch&) = delete;
  SlurmNodeWatch& operator=(const SlurmNodeWatch&) = delete;

  // The node's last state when it says the node is lost; nullopt otherwise.
  std::optional<SlurmNodeState> LostState();

 private:
  void Loop();
  const std::string node_;
  const int64_t interval_ns_;
  const int64_t timeout_ns_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::optional<SlurmNodeState> last_;
  std::thread thread_;
};

// Argument vectors of the scheduler commands titan runs (no shell involved).
std::vector<std::string> SlurmDrainCommand(const std::string& node, const std::string& reason);
std::vector<std::string> SlurmRequeueCommand(const std::string& job_id);

}  // namespace titan::cluster
