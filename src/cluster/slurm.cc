#include "src/cluster/slurm.h"

#include <fmt/format.h>

#include "src/base/bounded_command.h"
#include "src/base/text.h"
#include "src/cluster/hostlist.h"

namespace titan::cluster {
namespace {

constexpr size_t kMaxNodes = 100'000;

// The value of KEY= in a line of space-separated KEY=VALUE fields; Reason= runs to "[" or the
// end (its text has spaces; Slurm appends " [user@time]").
std::string Field(std::string_view line, std::string_view key) {
  size_t pos = 0;
  while (true) {
    pos = line.find(key, pos);
    if (pos == std::string_view::npos) return "";
    if (pos == 0 || line[pos - 1] == ' ') break;
    pos += key.size();
  }
  size_t start = pos + key.size();
  size_t end = line.find(' ', start);
  if (key == "Reason=") {
    end = line.find(" [", start);
    if (end == std::string_view::npos) end = line.size();
  }
  return std::string(
      line.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
}

std::string BaseState(const std::string& state) {
  std::string base = state.substr(0, state.find('+'));
  while (!base.empty() && (base.back() == '*' || base.back() == '~' || base.back() == '#' ||
                           base.back() == '$' || base.back() == '@' || base.back() == '%')) {
    base.pop_back();
  }
  return base;
}

bool HasFlag(const std::string& state, std::string_view flag) {
  size_t pos = 0;
  while ((pos = state.find('+', pos)) != std::string::npos) {
    ++pos;
    size_t end = state.find('+', pos);
    if (std::string_view(state).substr(
            pos, end == std::string::npos ? std::string::npos : end - pos) == flag) {
      return true;
    }
  }
  return false;
}

bool ParseIndex(const char* text, int* out) {
  int64_t v = 0;
  if (text == nullptr || !ParseInt64(text, &v) || v < 0 || v > 10'000'000) return false;
  *out = static_cast<int>(v);
  return true;
}

}  // namespace

bool SlurmNodeState::Down() const {
  std::string base = BaseState(state);
  return base == "DOWN" || base == "FAIL" || base == "FUTURE";
}

bool SlurmNodeState::NotResponding() const {
  std::string base = state.substr(0, state.find('+'));
  return HasFlag(state, "NOT_RESPONDING") || (!base.empty() && base.back() == '*');
}

bool SlurmNodeState::Draining() const {
  return HasFlag(state, "DRAIN") || BaseState(state) == "DRAINED" || BaseState(state) == "DRAINING";
}

Result<std::optional<SlurmEnv>> ReadSlurmEnv(const GetEnvFn& getenv) {
  const char* job = getenv("SLURM_JOB_ID");
  if (job == nullptr || *job == '\0') return std::optional<SlurmEnv>();
  SlurmEnv env;
  env.job_id = job;
  const char* list_var = "SLURM_JOB_NODELIST";
  const char* list = getenv(list_var);
  if (list == nullptr) {
    list_var = "SLURM_NODELIST";
    list = getenv(list_var);
  }
  if (list == nullptr || *list == '\0') {
    return InvalidArgumentError(
        "SLURM_JOB_ID is set but SLURM_JOB_NODELIST is not: run titan run through srun or "
        "sbatch (or unset SLURM_JOB_ID)");
  }
  auto nodes = ExpandHostlist(list, kMaxNodes);
  if (!nodes.ok()) return nodes.status().WithContext(list_var);
  env.nodes = std::move(nodes).value();
  if (const char* nnodes = getenv("SLURM_NNODES")) {
    int n = 0;
    if (!ParseIndex(nnodes, &n) || static_cast<size_t>(n) != env.nodes.size()) {
      return InvalidArgumentError(fmt::format("SLURM_NNODES='{}' disagrees with {} ({} nodes)",
                                              nnodes, list_var, env.nodes.size()));
    }
  }
  if (const char* id = getenv("SLURM_NODEID")) {
    if (!ParseIndex(id, &env.node_index) ||
        static_cast<size_t>(env.node_index) >= env.nodes.size()) {
      return InvalidArgumentError(fmt::format(
          "SLURM_NODEID='{}' is not an index into {} ({} nodes)", id, list_var, env.nodes.size()));
    }
  }
  if (const char* name = getenv("SLURMD_NODENAME")) env.node_name = name;
  if (env.node_name.empty() && env.node_index >= 0) env.node_name = env.nodes[env.node_index];
  if (const char* restarts = getenv("SLURM_RESTART_COUNT")) {
    if (!ParseIndex(restarts, &env.restart_count)) {
      return InvalidArgumentError(fmt::format("SLURM_RESTART_COUNT='{}' is not a count", restarts));
    }
  }
  if (const char* tasks = getenv("SLURM_STEP_NUM_TASKS")) {
    if (!ParseIndex(tasks, &env.step_tasks)) {
      return InvalidArgumentError(fmt::format("SLURM_STEP_NUM_TASKS='{}' is not a count", tasks));
    }
    if (static_cast<size_t>(env.step_tasks) > env.nodes.size()) {
      return InvalidArgumentError(fmt::format(
          "this srun step runs {} tasks on {} nodes: titan run is one task per node (srun "
          "--ntasks-per-node=1); it starts the workers itself (--nproc-per-node)",
          env.step_tasks, env.nodes.size()));
    }
  }
  return std::optional<SlurmEnv>(std::move(env));
}

std::vector<SlurmNodeState> ParseScontrolNodes(std::string_view text) {
  std::vector<SlurmNodeState> nodes;
  size_t pos = 0;
  while (pos < text.size() && nodes.size() < kMaxNodes) {
    size_t end = text.find('\n', pos);
    std::string_view line =
        text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    pos = end == std::string_view::npos ? text.size() : end + 1;
    SlurmNodeState s{Field(line, "NodeName="), Field(line, "State="), Field(line, "Reason="),
                     Field(line, "NodeAddr=")};
    if (s.name.empty() || s.state.empty()) continue;
    nodes.push_back(std::move(s));
  }
  return nodes;
}

Result<SlurmNodeState> QuerySlurmNode(const std::string& name, int64_t timeout_ns) {
  BoundedCommandResult r =
      RunBoundedCommand({"scontrol", "-o", "show", "node", name}, timeout_ns, 64 * 1024);
  if (!r.ok()) {
    return UnavailableError(
        fmt::format("scontrol -o show node {}: {}: {}", name, r.Describe(), Trim(r.output)));
  }
  for (SlurmNodeState& s : ParseScontrolNodes(r.output)) {
    if (s.name == name) return std::move(s);
  }
  return NotFoundError(fmt::format("scontrol -o show node {}: no such node in its answer", name));
}

SlurmNodeWatch::SlurmNodeWatch(std::string node, int64_t interval_ns, int64_t timeout_ns)
    : node_(std::move(node)), interval_ns_(interval_ns), timeout_ns_(timeout_ns) {
  thread_ = std::thread([this] { Loop(); });
}

SlurmNodeWatch::~SlurmNodeWatch() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

std::optional<SlurmNodeState> SlurmNodeWatch::LostState() {
  std::lock_guard<std::mutex> l(mu_);
  if (last_.has_value() && last_->Lost()) return last_;
  return std::nullopt;
}

void SlurmNodeWatch::Loop() {
  std::unique_lock<std::mutex> l(mu_);
  while (!stop_) {
    l.unlock();
    auto state = QuerySlurmNode(node_, timeout_ns_);
    l.lock();
    if (state.ok()) last_ = std::move(state).value();
    cv_.wait_for(l, std::chrono::nanoseconds(interval_ns_), [this] { return stop_; });
  }
}

std::vector<std::string> SlurmDrainCommand(const std::string& node, const std::string& reason) {
  return {"scontrol", "update", "NodeName=" + node, "State=DRAIN", "Reason=titan: " + reason};
}

std::vector<std::string> SlurmRequeueCommand(const std::string& job_id) {
  return {"scontrol", "requeue", job_id};
}

}  // namespace titan::cluster
