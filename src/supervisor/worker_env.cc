#include "src/supervisor/worker_env.h"

#include <string_view>

#include <fmt/format.h>

#include "src/client/wire.h"

namespace titan::supervisor {

std::vector<std::string> BaseWorkerEnv(const RunOptions& o, const std::string& socket_path,
                                       const char* const* environment) {
  static const char* kOwned[] = {"RANK=",
                                 "LOCAL_RANK=",
                                 "WORLD_SIZE=",
                                 "LOCAL_WORLD_SIZE=",
                                 "MASTER_ADDR=",
                                 "MASTER_PORT=",
                                 "GROUP_RANK=",
                                 "GROUP_WORLD_SIZE=",
                                 "ROLE_RANK=",
                                 "ROLE_WORLD_SIZE=",
                                 "ROLE_NAME=",
                                 "TORCHELASTIC_RESTART_COUNT=",
                                 "TORCHELASTIC_MAX_RESTARTS=",
                                 "TORCHELASTIC_RUN_ID=",
                                 "TITAN_RESTART_COUNT=",
                                 "TITAN_RESTART_REASON=",
                                 "TITAN_GENERATION=",
                                 "TITAN_STACK_FILE=",
                                 "TITAN_AGENT_SOCKET=",
                                 "TITAN_NODE_ID="};
  std::vector<std::string> env;
  std::string agent_sockets;
  bool has_omp = false;
  for (const char* const* e = environment; *e != nullptr; ++e) {
    std::string_view kv(*e);
    if (kv.starts_with("TITAN_AGENT_SOCKET=")) {
      agent_sockets = std::string(kv.substr(19));
      continue;
    }
    if (kv.starts_with("OMP_NUM_THREADS=")) has_omp = true;
    if (!o.checkpoint_dir.empty() && kv.starts_with("TITAN_CHECKPOINT_DIR=")) continue;
    if (!o.checkpoint_mirror.empty() && kv.starts_with("TITAN_CHECKPOINT_MIRROR=")) continue;
    bool owned = false;
    for (const char* p : kOwned) owned |= kv.starts_with(p);
    if (!owned) env.emplace_back(kv);
  }
  if (!has_omp) env.emplace_back("OMP_NUM_THREADS=1");  // as torchrun does
  if (!o.checkpoint_dir.empty()) env.push_back("TITAN_CHECKPOINT_DIR=" + o.checkpoint_dir);
  if (!o.checkpoint_mirror.empty()) {
    env.push_back("TITAN_CHECKPOINT_MIRROR=" + o.checkpoint_mirror);
  }
  if (o.checkpoint_node_local) env.push_back("TITAN_CHECKPOINT_NODE_LOCAL=1");
  // Our socket first; keep what was there (an agent) within the client's limit of sockets.
  std::vector<std::string> sockets = {socket_path};
  std::string rest = agent_sockets.empty() ? wire::kDefaultSocketPath : agent_sockets;
  size_t pos = 0;
  while (pos <= rest.size() && static_cast<int>(sockets.size()) < wire::kMaxSockets) {
    size_t colon = rest.find(':', pos);
    std::string item =
        rest.substr(pos, colon == std::string::npos ? std::string::npos : colon - pos);
    if (!item.empty() && item != socket_path) sockets.push_back(item);
    if (colon == std::string::npos) break;
    pos = colon + 1;
  }
  std::string joined;
  for (const std::string& s : sockets) joined += (joined.empty() ? "" : ":") + s;
  env.push_back("TITAN_AGENT_SOCKET=" + joined);
  return env;
}

std::string ReasonText(const nlohmann::json& record) {
  if (!record.is_object()) return "start";
  std::string reason = record.value("reason", std::string("start"));
  std::string detail = record.value("detail", std::string());
  return detail.empty() ? reason : reason + ": " + detail;
}

std::string StackFile(const std::string& run_dir, int rank) {
  return fmt::format("{}/stack-rank{}.txt", run_dir, rank);
}

predict::IntervalAdvice RecommendedInterval(const RunOptions& o, const Assignment& a) {
  std::vector<std::string> nodes = a.members;
  if (nodes.empty()) nodes.push_back(o.node_id);
  return predict::AdviseCheckpointInterval(predict::JobMtbfSeconds(*o.risk, nodes),
                                           static_cast<double>(o.checkpoint_cost_ns) / 1e9);
}

WorkerSpec WorkerSpecFor(const RunOptions& o, const Assignment& a, int local_rank,
                         const std::vector<std::string>& base_env, int restart_count) {
  const int rank = a.rank_offset + local_rank;
  WorkerSpec spec;
  spec.local_rank = local_rank;
  spec.rank = rank;
  spec.argv = o.command;
  spec.env = base_env;
  auto add = [&](const char* k, const std::string& v) {
    spec.env.push_back(std::string(k) + "=" + v);
  };
  add("RANK", std::to_string(rank));
  add("LOCAL_RANK", std::to_string(local_rank));
  add("WORLD_SIZE", std::to_string(a.world_size));
  add("LOCAL_WORLD_SIZE", std::to_string(o.nproc_per_node));
  add("MASTER_ADDR", a.master_addr);
  add("MASTER_PORT", std::to_string(a.master_port));
  add("GROUP_RANK", std::to_string(a.group_rank));
  add("GROUP_WORLD_SIZE", std::to_string(a.nnodes));
  add("ROLE_RANK", std::to_string(rank));
  add("ROLE_WORLD_SIZE", std::to_string(a.world_size));
  add("ROLE_NAME", "default");
  add("TORCHELASTIC_RESTART_COUNT", std::to_string(restart_count));
  add("TORCHELASTIC_MAX_RESTARTS", std::to_string(o.restart.max_restarts));
  add("TORCHELASTIC_RUN_ID", o.job_id);
  add("TITAN_RESTART_COUNT", std::to_string(restart_count));
  add("TITAN_RESTART_REASON", ReasonText(a.reason));
  if (o.risk) {
    add("TITAN_CHECKPOINT_INTERVAL_S",
        fmt::format("{:.0f}", RecommendedInterval(o, a).daly_seconds));
  }
  add("TITAN_GENERATION", std::to_string(a.generation));
  add("TITAN_NODE_ID", o.node_id);
  add("TITAN_STACK_FILE", StackFile(o.run_dir, rank));
  if (!o.log_dir.empty()) spec.log_path = fmt::format("{}/rank{}.log", o.log_dir, rank);
  return spec;
}

}  // namespace titan::supervisor
