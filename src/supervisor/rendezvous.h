// Rendezvous: how the `titan run` processes of a job (one per node) agree on each generation's
// membership, world size, ranks and master address, and tell each other to restart.
//
// LocalRendezvous: one node, no etcd. EtcdRendezvous: any number of nodes through etcd (keys
// under /titan/<job>/, see docs/run.md for the layout):
//   gen                  {"gen":N,"reason":...,"node":...}: the current generation; a node that
//                        sees a failure bumps it with a compare-and-swap, so exactly one report
//                        per failure wins and every other node restarts when it sees the change
//   nodes/<id>           liveness: written with the node's lease (TTL), kept alive by a thread;
//                        a node whose key vanished is lost
//   rdzv/<N>/join/<id>   the nodes that want to take part in generation N (with the lease)
//   rdzv/<N>/closed      the members of generation N, sorted by node id (group rank order);
//                        created once (create-if-absent) when max_nodes joined, or min_nodes
//                        joined and no one else came for `last_call`
//   rdzv/<N>/done/<id>   the node's workers all finished successfully
//   rdzv/<N>/stats/<id>  the node's per-rank median compute times (straggler detection)
//   done                 the whole job finished
//
// Thread safety: not thread-safe, except that EtcdRendezvous runs its own keep-alive thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/base/status.h"
#include "src/predict/node_risk.h"

namespace titan::supervisor {

struct NodeInfo {
  std::string id;    // unique per node (default hostname-pid)
  std::string addr;  // reachable address of this node (MASTER_ADDR when it is group rank 0)
  int nproc = 1;     // workers on this node
  std::string host;  // the scheduler's name of the node (isolation actions); may be empty
};

struct Assignment {
  int64_t generation = 0;
  int group_rank = 0;
  int nnodes = 1;
  int world_size = 1;
  int rank_offset = 0;  // global rank of this node's local rank 0
  std::string master_addr;
  int master_port = 0;
  std::vector<std::string> members;       // node ids in group-rank order
  std::vector<std::string> member_hosts;  // their scheduler names (NodeInfo::host), same order
  nlohmann::json reason;                  // why this generation started (the gen record)
  bool job_done = false;                  // the job finished while waiting: exit successfully
};

struct Health {
  bool restart = false;           // a newer generation was requested
  nlohmann::json reason;          // its record
  std::vector<std::string> lost;  // members of the running generation whose lease expired
  bool job_done = false;
  bool consulted = false;  // the store was read this time (Poll reads at most every poll interval)
};

class Rendezvous {
 public:
  virtual ~Rendezvous() = default;
  // Blocks, polling, until this node is a member of a generation newer than `after_generation`
  // (-1: any). While `excluded_until_mono_ns` is in the future the node sits out. `stop()` is
  // polled; when it returns true Join returns CANCELLED-like UNAVAILABLE.
  virtual Result<Assignment> Join(int64_t after_generation, int64_t excluded_until_mono_ns,
                                  const std::function<bool()>& stop) = 0;
  // Asks every node to leave `generation`; true if this call was the one that did it.
  virtual Result<bool> RequestRestart(int64_t generation, const nlohmann::json& reason) = 0;
  // Called every loop tick (cheap for local; rate-limited for etcd).
  virtual Result<Health> Poll(const Assignment& current) = 0;
  // This node's workers of `generation` all succeeded.
  virtual Status MarkDone(const Assignment& current) = 0;
  // Every member of the generation is done (the job finished).
  virtual Result<bool> AllDone(const Assignment& current) = 0;
  // Straggler statistics shared across nodes: this node's per-rank median compute times (ns)
  // for `generation`; and every node's, merged. Local: ReadStats returns nothing.
  virtual Status PublishStats(const Assignment& current, const std::map<int, double>& medians) = 0;
  virtual Result<std::map<int, double>> ReadStats(const Assignment& current) = 0;
  // Leaves cleanly (revokes the lease) / abruptly (stops refreshing it, for node-loss drills).
  virtual void Leave() = 0;
  virtual void Abandon() = 0;
};

// A free TCP port on the loopback interface (bind to port 0); 0 if none.
int PickFreePort();

// One node running `nproc` workers.
std::unique_ptr<Rendezvous> MakeLocalRendezvous(std::string master_addr, int nproc);

// Membership fixed in advance (Slurm's node list, without etcd): this node is members[index],
// every node runs `nproc` workers, the master is members[0] at master_addr:master_port (0: a
// free port, for one node only). Generation 0 only when there are several nodes: Join after a
// failure returns FAILED_PRECONDITION saying why the job cannot restart in place.
struct StaticPlan {
  std::vector<std::string> members;
  int index = 0;
  std::string master_addr;
  int master_port = 0;
  int nproc = 1;
};
std::unique_ptr<Rendezvous> MakeStaticRendezvous(StaticPlan plan);

struct EtcdRendezvousOptions {
  std::string endpoint;  // http://host:port
  std::string job_id = "default";
  NodeInfo self;
  int min_nodes = 1;
  int max_nodes = 1;
  int64_t lease_ttl_seconds = 5;
  int64_t last_call_ns = 2'000'000'000;
  int64_t join_timeout_ns = 600LL * 1'000'000'000;
  int64_t poll_interval_ns = 200'000'000;
  int64_t request_timeout_ms = 2000;
  // With a risk table: when more nodes join than max_nodes, the lowest-risk ones are members
  // (the rest wait as spares), and a rendezvous that reached max_nodes still waits its last
  // call for spares to choose from.
  std::shared_ptr<const predict::NodeRiskTable> risk;
};

// Connects (grants the lease, registers the node); UNAVAILABLE with the endpoint if etcd does
// not answer.
Result<std::unique_ptr<Rendezvous>> MakeEtcdRendezvous(const EtcdRendezvousOptions& options);

}  // namespace titan::supervisor
