#include "src/sim/scenario.h"

#include <cmath>
#include <initializer_list>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "src/sim/failure_model.h"
#include "src/sim/policies.h"
#include "src/sim/presets.h"
#include "src/sim/scenario_text.h"

namespace titan::sim {
namespace {

using nlohmann::json;

constexpr double kHuge = 1e15;
constexpr double kMaxDays = 36500;  // 100 years of simulated time
// More expected failures than this per replica is not a training job; refuse rather than churn.
constexpr double kMaxExpectedFailures = 2e7;
// Each node carries one event per failure clock (24 bytes each, per replica in flight).
constexpr double kMaxNodeClocks = 1e7;

struct Range {
  double lo, hi;
  bool lo_open, hi_open;
  bool Contains(double v) const {
    return (lo_open ? v > lo : v >= lo) && (hi_open ? v < hi : v <= hi);
  }
  std::string Text() const {
    return fmt::format("{}{:g}, {:g}{}", lo_open ? '(' : '[', lo, hi, hi_open ? ')' : ']');
  }
};
constexpr Range kPositive{0, kHuge, true, false};
constexpr Range kNonNegative{0, kHuge, false, false};
constexpr Range kUnit{0, 1, false, false};

// A value for an error message: JSON text, invalid UTF-8 replaced (dump() would throw).
std::string Show(const json& value) {
  std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > 80) text = text.substr(0, 77) + "...";
  return text;
}

Status Error(const std::string& path, const std::string& what) {
  return InvalidArgumentError(fmt::format("scenario: {}: {}", path, what));
}

std::string Join(std::initializer_list<const char*> words) {
  std::string out;
  for (const char* word : words) out += (out.empty() ? "" : ", ") + std::string(word);
  return out;
}

// One mapping of the scenario with its dotted path, for reading keys with range checks.
class Section {
 public:
  Section(const json* node, std::string path) : node_(node), path_(std::move(path)) {}

  static Result<Section> Child(const Section& parent, const char* key) {
    const json* child = parent.Find(key);
    const std::string path = parent.Path(key);
    if (child != nullptr && !child->is_object()) {
      return Error(path, "must be a section (a mapping of keys)");
    }
    return Section(child, path);
  }

  const json* Find(const char* key) const {
    if (node_ == nullptr) return nullptr;
    auto it = node_->find(key);
    return it == node_->end() || it->is_null() ? nullptr : &*it;
  }
  bool Has(const char* key) const { return Find(key) != nullptr; }
  std::string Path(const char* key) const { return path_.empty() ? key : path_ + "." + key; }

  Status AllowOnly(std::initializer_list<const char*> allowed) const {
    if (node_ == nullptr) return OkStatus();
    for (auto it = node_->begin(); it != node_->end(); ++it) {
      bool known = false;
      for (const char* key : allowed) known = known || it.key() == key;
      if (!known) {
        return Error(Path(it.key().c_str()),
                     fmt::format("unknown key (allowed here: {})", Join(allowed)));
      }
    }
    return OkStatus();
  }

  // Leaves *out unchanged when the key is absent.
  Status Number(const char* key, Range range, double* out) const {
    const json* value = Find(key);
    if (value == nullptr) return OkStatus();
    if (!value->is_number() || !std::isfinite(value->get<double>())) {
      return Error(Path(key),
                   fmt::format("must be a number in {} (got {})", range.Text(), Show(*value)));
    }
    const double v = value->get<double>();
    if (!range.Contains(v)) {
      return Error(Path(key), fmt::format("{:g} is out of range; allowed: {}", v, range.Text()));
    }
    *out = v;
    return OkStatus();
  }
  // A number scaled by `unit` (e.g. minutes -> seconds).
  Status Scaled(const char* key, Range range, double unit, double* out) const {
    double v = std::nan("");
    TITAN_RETURN_IF_ERROR(Number(key, range, &v));
    if (!std::isnan(v)) *out = v * unit;
    return OkStatus();
  }
  Status Integer(const char* key, int64_t lo, int64_t hi, int64_t* out) const {
    const json* value = Find(key);
    if (value == nullptr) return OkStatus();
    const std::string range = fmt::format("[{}, {}]", lo, hi);
    if (!value->is_number() || !std::isfinite(value->get<double>()) ||
        value->get<double>() != std::floor(value->get<double>())) {
      return Error(Path(key),
                   fmt::format("must be a whole number in {} (got {})", range, Show(*value)));
    }
    const double v = value->get<double>();
    if (v < static_cast<double>(lo) || v > static_cast<double>(hi)) {
      return Error(Path(key), fmt::format("{:g} is out of range; allowed: {}", v, range));
    }
    *out = static_cast<int64_t>(v);
    return OkStatus();
  }
  Status Bool(const char* key, bool* out) const {
    const json* value = Find(key);
    if (value == nullptr) return OkStatus();
    if (!value->is_boolean()) {
      return Error(Path(key), fmt::format("must be true or false (got {})", Show(*value)));
    }
    *out = value->get<bool>();
    return OkStatus();
  }
  Status String(const char* key, std::string* out) const {
    const json* value = Find(key);
    if (value == nullptr) return OkStatus();
    if (!value->is_string()) {
      return Error(Path(key), fmt::format("must be a string (got {})", Show(*value)));
    }
    *out = value->get<std::string>();
    return OkStatus();
  }
  template <typename T>
  Status Enum(const char* key, std::initializer_list<std::pair<const char*, T>> choices,
              T* out) const {
    std::string text;
    TITAN_RETURN_IF_ERROR(String(key, &text));
    if (!Has(key)) return OkStatus();
    std::string names;
    for (const auto& [name, value] : choices) {
      if (text == name) {
        *out = value;
        return OkStatus();
      }
      names += (names.empty() ? "" : ", ") + std::string(name);
    }
    return Error(Path(key), fmt::format("unknown value '{}' (allowed: {})", text, names));
  }

 private:
  const json* node_;
  std::string path_;
};

Result<Distribution> ReadDistribution(const Section& section, Distribution fallback) {
  Distribution d = fallback;
  TITAN_RETURN_IF_ERROR(section.Enum<Distribution>(
      "distribution",
      {{"exponential", Distribution::kExponential}, {"weibull", Distribution::kWeibull}}, &d));
  return d;
}

constexpr Range kShape{0.1, 10, false, false};

Status ReadCluster(const Section& root, Scenario* s) {
  TITAN_ASSIGN_OR_RETURN(Section cluster, Section::Child(root, "cluster"));
  TITAN_RETURN_IF_ERROR(cluster.AllowOnly({"gpus", "gpus_per_node", "spares", "repair_hours"}));
  if (!cluster.Has("gpus")) return Error("cluster.gpus", "required: GPUs the job uses");
  ClusterSpec& c = s->cluster;
  TITAN_RETURN_IF_ERROR(cluster.Integer("gpus", 1, 10'000'000, &c.gpus));
  TITAN_RETURN_IF_ERROR(cluster.Integer("gpus_per_node", 1, 64, &c.gpus_per_node));
  if (c.gpus % c.gpus_per_node != 0) {
    return Error("cluster.gpus", fmt::format("{} is not a multiple of gpus_per_node ({})", c.gpus,
                                             c.gpus_per_node));
  }
  TITAN_RETURN_IF_ERROR(cluster.Integer("spares", 0, c.nodes(), &c.spares));
  c.repair_seconds = 72 * kSecondsPerHour;
  TITAN_RETURN_IF_ERROR(cluster.Scaled("repair_hours", {0, 24 * kMaxDays, true, false},
                                       kSecondsPerHour, &c.repair_seconds));
  return OkStatus();
}

Status ReadCause(const json& node, const std::string& path, Distribution default_distribution,
                 double default_shape, int64_t nodes, FailureCause* cause) {
  if (!node.is_object()) return Error(path, "must be a mapping (name:, per_1000_node_days:, ...)");
  Section c(&node, path);
  TITAN_RETURN_IF_ERROR(
      c.AllowOnly({"name", "per_1000_node_days", "mtbf_node_hours", "job_mtbf_hours",
                   "distribution", "weibull_shape", "needs_repair", "detection_seconds"}));
  TITAN_RETURN_IF_ERROR(c.String("name", &cause->name));
  if (cause->name.empty()) return Error(c.Path("name"), "required: a name for the cause");
  int given = c.Has("per_1000_node_days") + c.Has("mtbf_node_hours") + c.Has("job_mtbf_hours");
  if (given != 1) {
    return Error(path,
                 "give exactly one rate: per_1000_node_days, mtbf_node_hours or "
                 "job_mtbf_hours (each > 0)");
  }
  double v = 0;
  TITAN_RETURN_IF_ERROR(c.Number("per_1000_node_days", kPositive, &v));
  if (c.Has("per_1000_node_days")) cause->per_node_second = v / 1000 / kSecondsPerDay;
  TITAN_RETURN_IF_ERROR(c.Number("mtbf_node_hours", kPositive, &v));
  if (c.Has("mtbf_node_hours")) cause->per_node_second = 1 / (v * kSecondsPerHour);
  TITAN_RETURN_IF_ERROR(c.Number("job_mtbf_hours", kPositive, &v));
  if (c.Has("job_mtbf_hours")) {
    cause->per_node_second = 1 / (v * kSecondsPerHour * static_cast<double>(nodes));
  }
  if (!(cause->per_node_second > 0) || !std::isfinite(cause->per_node_second)) {
    return Error(path, "the rate works out to zero or infinity; give a rate in (0, 1e15]");
  }
  TITAN_ASSIGN_OR_RETURN(cause->distribution, ReadDistribution(c, default_distribution));
  cause->weibull_shape = default_shape;
  TITAN_RETURN_IF_ERROR(c.Number("weibull_shape", kShape, &cause->weibull_shape));
  TITAN_RETURN_IF_ERROR(c.Bool("needs_repair", &cause->needs_repair));
  TITAN_RETURN_IF_ERROR(c.Number("detection_seconds", kNonNegative, &cause->detection_seconds));
  return OkStatus();
}

Status ReadFailures(const Section& root, Scenario* s) {
  TITAN_ASSIGN_OR_RETURN(Section failures, Section::Child(root, "failures"));
  TITAN_RETURN_IF_ERROR(failures.AllowOnly(
      {"table", "scale", "distribution", "weibull_shape", "initial_age_days", "causes"}));
  TITAN_ASSIGN_OR_RETURN(Distribution distribution,
                         ReadDistribution(failures, Distribution::kExponential));
  double shape = 1, scale = 1;
  TITAN_RETURN_IF_ERROR(failures.Number("weibull_shape", kShape, &shape));
  TITAN_RETURN_IF_ERROR(failures.Number("scale", kPositive, &scale));
  std::string table;
  TITAN_RETURN_IF_ERROR(failures.String("table", &table));
  if (!table.empty() && table != "none") {
    Result<std::vector<FailureCause>> causes = TableCauses(table, scale, distribution, shape);
    if (!causes.ok()) return Error("failures.table", std::string(causes.status().message()));
    s->causes = *std::move(causes);
  }
  if (const json* list = failures.Find("causes")) {
    if (!list->is_array()) return Error("failures.causes", "must be a list of causes");
    for (size_t i = 0; i < list->size(); ++i) {
      FailureCause cause;
      TITAN_RETURN_IF_ERROR(ReadCause((*list)[i], fmt::format("failures.causes[{}]", i),
                                      distribution, shape, s->cluster.nodes(), &cause));
      s->causes.push_back(std::move(cause));
    }
  }
  double clocks_per_node = 1;
  for (const FailureCause& cause : s->causes) {
    clocks_per_node += cause.distribution == Distribution::kWeibull;
  }
  const double node_clocks =
      clocks_per_node * static_cast<double>(s->cluster.nodes() + s->cluster.spares);
  if (node_clocks > kMaxNodeClocks) {
    return Error("failures", fmt::format("{} nodes x {} failure clocks each is more than {:g}; "
                                         "use more cluster.gpus_per_node or fewer Weibull causes",
                                         s->cluster.nodes() + s->cluster.spares, clocks_per_node,
                                         kMaxNodeClocks));
  }
  double age_seconds = 0;
  TITAN_RETURN_IF_ERROR(failures.Scaled("initial_age_days", {0, kMaxDays, false, false},
                                        kSecondsPerDay, &age_seconds));
  for (FailureCause& cause : s->causes) cause.initial_age_seconds = age_seconds;
  if (s->causes.empty()) {
    return Error("failures", fmt::format("no failure causes: set failures.table ({}) or list "
                                         "failures.causes",
                                         TableNames()));
  }
  return OkStatus();
}

Status ReadJob(const Section& root, Scenario* s) {
  TITAN_ASSIGN_OR_RETURN(Section job, Section::Child(root, "job"));
  TITAN_RETURN_IF_ERROR(job.AllowOnly(
      {"compute_seconds", "reference_gpus", "scaling", "model_gradient_bytes", "tensor_parallel",
       "pipeline_parallel", "microbatches", "allreduce", "alpha_us", "bus_bandwidth_gb_s",
       "overlap", "straggler_probability", "straggler_slowdown", "steps"}));
  JobSpec& j = s->job;
  const int64_t gpus = s->cluster.gpus;
  if (!job.Has("compute_seconds"))
    return Error("job.compute_seconds", "required: compute per step, > 0");
  TITAN_RETURN_IF_ERROR(job.Number("compute_seconds", {0, 1e6, true, false}, &j.compute_seconds));
  j.reference_gpus = gpus;
  TITAN_RETURN_IF_ERROR(job.Integer("reference_gpus", 1, 10'000'000, &j.reference_gpus));
  TITAN_RETURN_IF_ERROR(
      job.Enum<bool>("scaling", {{"weak", false}, {"strong", true}}, &j.strong_scaling));
  TITAN_RETURN_IF_ERROR(job.Number("model_gradient_bytes", kNonNegative, &j.model_gradient_bytes));
  TITAN_RETURN_IF_ERROR(job.Integer("tensor_parallel", 1, gpus, &j.tensor_parallel));
  TITAN_RETURN_IF_ERROR(job.Integer("pipeline_parallel", 1, gpus, &j.pipeline_parallel));
  if (gpus % (j.tensor_parallel * j.pipeline_parallel) != 0) {
    return Error("job.tensor_parallel", fmt::format("tensor_parallel * pipeline_parallel = {} must "
                                                    "divide cluster.gpus ({})",
                                                    j.tensor_parallel * j.pipeline_parallel, gpus));
  }
  TITAN_RETURN_IF_ERROR(job.Integer("microbatches", 1, 1'000'000, &j.microbatches));
  TITAN_RETURN_IF_ERROR(job.Enum<AllReduceAlgorithm>(
      "allreduce", {{"ring", AllReduceAlgorithm::kRing}, {"tree", AllReduceAlgorithm::kTree}},
      &j.algorithm));
  TITAN_RETURN_IF_ERROR(job.Scaled("alpha_us", {0, 1e7, false, false}, 1e-6, &j.alpha_seconds));
  if (j.model_gradient_bytes > 0 && !job.Has("bus_bandwidth_gb_s")) {
    return Error("job.bus_bandwidth_gb_s",
                 "required when model_gradient_bytes > 0: nccl-tests bus bandwidth in GB/s, > 0");
  }
  TITAN_RETURN_IF_ERROR(job.Scaled("bus_bandwidth_gb_s", {0, 1e6, true, false}, 1e9,
                                   &j.bus_bandwidth_bytes_per_second));
  TITAN_RETURN_IF_ERROR(job.Number("overlap", kUnit, &j.overlap));
  TITAN_RETURN_IF_ERROR(
      job.Number("straggler_probability", {0, 1, false, true}, &j.straggler_probability));
  TITAN_RETURN_IF_ERROR(
      job.Number("straggler_slowdown", {1, 100, false, false}, &j.straggler_slowdown));
  TITAN_RETURN_IF_ERROR(job.Integer("steps", 1, 1'000'000'000'000, &j.steps));
  return OkStatus();
}

Status ReadCheckpoint(const Section& root, Scenario* s) {
  TITAN_ASSIGN_OR_RETURN(Section ck, Section::Child(root, "checkpoint"));
  TITAN_RETURN_IF_ERROR(
      ck.AllowOnly({"mode", "interval", "interval_minutes", "write_seconds", "blocking_seconds",
                    "memory_seconds", "persist_every", "memory_survival", "incremental_fraction",
                    "full_every", "load_seconds", "memory_load_seconds"}));
  CheckpointSpec& c = s->checkpoint;
  TITAN_RETURN_IF_ERROR(ck.Enum<CheckpointMode>("mode",
                                                {{"sync", CheckpointMode::kSync},
                                                 {"async", CheckpointMode::kAsync},
                                                 {"in_memory", CheckpointMode::kInMemory},
                                                 {"incremental", CheckpointMode::kIncremental}},
                                                &c.mode));
  c.interval = ck.Has("interval_minutes") ? IntervalPolicy::kFixed : IntervalPolicy::kDaly;
  TITAN_RETURN_IF_ERROR(ck.Enum<IntervalPolicy>("interval",
                                                {{"fixed", IntervalPolicy::kFixed},
                                                 {"young", IntervalPolicy::kYoung},
                                                 {"daly", IntervalPolicy::kDaly},
                                                 {"searched", IntervalPolicy::kSearched}},
                                                &c.interval));
  if (!ck.Has("write_seconds")) {
    return Error("checkpoint.write_seconds", "required: time to write a full checkpoint, > 0");
  }
  TITAN_RETURN_IF_ERROR(ck.Number("write_seconds", {0, 1e9, true, false}, &c.write_seconds));
  // Mode-specific keys: required for their mode, refused for the others.
  struct ModeKey {
    const char* key;
    CheckpointMode mode;
  };
  for (const ModeKey& mk : {ModeKey{"blocking_seconds", CheckpointMode::kAsync},
                            ModeKey{"memory_seconds", CheckpointMode::kInMemory},
                            ModeKey{"persist_every", CheckpointMode::kInMemory},
                            ModeKey{"memory_survival", CheckpointMode::kInMemory},
                            ModeKey{"memory_load_seconds", CheckpointMode::kInMemory},
                            ModeKey{"incremental_fraction", CheckpointMode::kIncremental},
                            ModeKey{"full_every", CheckpointMode::kIncremental}}) {
    if (ck.Has(mk.key) && c.mode != mk.mode) {
      return Error(ck.Path(mk.key),
                   fmt::format("only used with mode: {} (mode is {})", CheckpointModeName(mk.mode),
                               CheckpointModeName(c.mode)));
    }
  }
  if (c.mode == CheckpointMode::kAsync && !ck.Has("blocking_seconds")) {
    return Error("checkpoint.blocking_seconds", "required for mode: async (the stall), >= 0");
  }
  TITAN_RETURN_IF_ERROR(
      ck.Number("blocking_seconds", {0, c.write_seconds, false, false}, &c.blocking_seconds));
  if (c.mode == CheckpointMode::kInMemory && !ck.Has("memory_seconds")) {
    return Error("checkpoint.memory_seconds", "required for mode: in_memory (the stall), > 0");
  }
  TITAN_RETURN_IF_ERROR(ck.Number("memory_seconds", {0, 1e9, true, false}, &c.memory_seconds));
  TITAN_RETURN_IF_ERROR(ck.Integer("persist_every", 1, 1'000'000, &c.persist_every));
  TITAN_RETURN_IF_ERROR(ck.Number("memory_survival", kUnit, &c.memory_survival));
  TITAN_RETURN_IF_ERROR(
      ck.Number("incremental_fraction", {0, 1, true, false}, &c.incremental_fraction));
  TITAN_RETURN_IF_ERROR(ck.Integer("full_every", 1, 1'000'000, &c.full_every));
  TITAN_RETURN_IF_ERROR(ck.Number("load_seconds", kNonNegative, &c.load_seconds));
  TITAN_RETURN_IF_ERROR(ck.Number("memory_load_seconds", kNonNegative, &c.memory_load_seconds));
  if (ck.Has("interval_minutes") && c.interval != IntervalPolicy::kFixed) {
    return Error("checkpoint.interval_minutes",
                 fmt::format("only used with interval: fixed (interval is {}); set "
                             "checkpoint.interval: fixed",
                             IntervalPolicyName(c.interval)));
  }
  if (c.interval == IntervalPolicy::kFixed) {
    if (!ck.Has("interval_minutes")) {
      return Error("checkpoint.interval_minutes", "required for interval: fixed, minutes > 0");
    }
    TITAN_RETURN_IF_ERROR(ck.Scaled("interval_minutes", {0, 60 * 24 * kMaxDays, true, false}, 60,
                                    &c.interval_seconds));
    const double cost = MeanCheckpointBlockingSeconds(c);
    if (c.interval_seconds <= cost) {
      return Error("checkpoint.interval_minutes",
                   fmt::format("{:g} min is not longer than the checkpoint's stall of {:g} min; "
                               "allowed: > {:g}",
                               c.interval_seconds / 60, cost / 60, cost / 60));
    }
  }
  return OkStatus();
}

Status ReadRecovery(const Section& root, Scenario* s) {
  TITAN_ASSIGN_OR_RETURN(Section rec, Section::Child(root, "recovery"));
  TITAN_RETURN_IF_ERROR(
      rec.AllowOnly({"policy", "detection_seconds", "restart_seconds", "min_fraction"}));
  RecoverySpec& r = s->recovery;
  TITAN_RETURN_IF_ERROR(rec.Enum<RecoveryPolicy>("policy",
                                                 {{"spares", RecoveryPolicy::kSpares},
                                                  {"shrink", RecoveryPolicy::kShrink},
                                                  {"wait", RecoveryPolicy::kWait}},
                                                 &r.policy));
  TITAN_RETURN_IF_ERROR(rec.Number("detection_seconds", kNonNegative, &r.detection_seconds));
  TITAN_RETURN_IF_ERROR(rec.Number("restart_seconds", kNonNegative, &r.restart_seconds));
  if (rec.Has("min_fraction") && r.policy != RecoveryPolicy::kShrink) {
    return Error("recovery.min_fraction", "only used with policy: shrink");
  }
  r.min_fraction = r.policy == RecoveryPolicy::kShrink ? 0.9 : 1.0;
  TITAN_RETURN_IF_ERROR(rec.Number("min_fraction", {0, 1, true, false}, &r.min_fraction));
  if (r.policy == RecoveryPolicy::kWait && s->cluster.spares > 0) {
    return Error("cluster.spares", fmt::format("{} spares with recovery.policy: wait (which waits "
                                               "for repair and never uses spares); use policy: "
                                               "spares or set spares: 0",
                                               s->cluster.spares));
  }
  return OkStatus();
}

Status ReadRun(const Section& root, Scenario* s) {
  TITAN_ASSIGN_OR_RETURN(Section run, Section::Child(root, "run"));
  TITAN_RETURN_IF_ERROR(
      run.AllowOnly({"duration_days", "max_days", "replicas", "seed", "threads"}));
  RunSpec& r = s->run;
  const Range days{0, kMaxDays, true, false};
  TITAN_RETURN_IF_ERROR(run.Scaled("duration_days", days, kSecondsPerDay, &r.duration_seconds));
  if (s->job.steps == 0 && !run.Has("duration_days")) {
    return Error("run.duration_days",
                 "required when job.steps is not given: days to simulate, > 0");
  }
  if (s->job.steps > 0 && run.Has("duration_days")) {
    return Error("run.duration_days",
                 "give job.steps (run until done) or run.duration_days "
                 "(run for a time), not both; run.max_days caps job.steps");
  }
  r.max_seconds = s->job.steps > 0 ? kMaxDays * kSecondsPerDay : r.duration_seconds;
  TITAN_RETURN_IF_ERROR(run.Scaled("max_days", days, kSecondsPerDay, &r.max_seconds));
  TITAN_RETURN_IF_ERROR(run.Integer("replicas", 1, 1'000'000, &r.replicas));
  int64_t seed = 1;
  TITAN_RETURN_IF_ERROR(run.Integer("seed", 0, int64_t{1} << 53, &seed));
  r.seed = static_cast<uint64_t>(seed);
  TITAN_RETURN_IF_ERROR(run.Integer("threads", 0, 1024, &r.threads));
  const double horizon = s->job.steps > 0 ? r.max_seconds : r.duration_seconds;
  const double expected = NodeFailureRate(s->causes) *
                          static_cast<double>(s->cluster.nodes() + s->cluster.spares) * horizon;
  if (expected > kMaxExpectedFailures) {
    return Error("failures", fmt::format("about {:.3g} failures expected per replica over {:g} "
                                         "days (at most {:g}); lower the rates or the horizon "
                                         "(run.duration_days / run.max_days)",
                                         expected, horizon / kSecondsPerDay, kMaxExpectedFailures));
  }
  return OkStatus();
}

}  // namespace

const char* CheckpointModeName(CheckpointMode mode) {
  switch (mode) {
    case CheckpointMode::kSync:
      return "sync";
    case CheckpointMode::kAsync:
      return "async";
    case CheckpointMode::kInMemory:
      return "in_memory";
    case CheckpointMode::kIncremental:
      return "incremental";
  }
  return "?";
}

const char* IntervalPolicyName(IntervalPolicy policy) {
  switch (policy) {
    case IntervalPolicy::kFixed:
      return "fixed";
    case IntervalPolicy::kYoung:
      return "young";
    case IntervalPolicy::kDaly:
      return "daly";
    case IntervalPolicy::kSearched:
      return "searched";
  }
  return "?";
}

const char* RecoveryPolicyName(RecoveryPolicy policy) {
  switch (policy) {
    case RecoveryPolicy::kSpares:
      return "spares";
    case RecoveryPolicy::kShrink:
      return "shrink";
    case RecoveryPolicy::kWait:
      return "wait";
  }
  return "?";
}

Result<Scenario> ParseScenario(const json& input) {
  if (!input.is_object()) return InvalidArgumentError("scenario: must be a mapping of sections");
  json merged;
  const json* tree = &input;
  if (auto base = input.find("base"); base != input.end()) {
    if (!base->is_string() || FindPreset(base->get<std::string>()) == nullptr) {
      return Error("base",
                   fmt::format("must name a preset ({}); got {}", PresetNames(), Show(*base)));
    }
    TITAN_ASSIGN_OR_RETURN(
        merged, ParseScenarioText(FindPreset(base->get<std::string>()), base->get<std::string>()));
    json patch = input;
    patch.erase("base");
    merged.merge_patch(patch);
    tree = &merged;
  }
  Section root(tree, "");
  TITAN_RETURN_IF_ERROR(root.AllowOnly(
      {"name", "base", "cluster", "failures", "job", "checkpoint", "recovery", "run"}));
  Scenario s;
  s.name = "scenario";
  TITAN_RETURN_IF_ERROR(root.String("name", &s.name));
  TITAN_RETURN_IF_ERROR(ReadCluster(root, &s));
  TITAN_RETURN_IF_ERROR(ReadFailures(root, &s));
  TITAN_RETURN_IF_ERROR(ReadJob(root, &s));
  TITAN_RETURN_IF_ERROR(ReadCheckpoint(root, &s));
  TITAN_RETURN_IF_ERROR(ReadRecovery(root, &s));
  TITAN_RETURN_IF_ERROR(ReadRun(root, &s));
  return s;
}

}  // namespace titan::sim
