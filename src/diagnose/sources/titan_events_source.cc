// titan run's event log (events.jsonl: {"time_ns", "t", "node", "type", ...} per line): which
// process was which rank (spawn), how workers ended (crash: the status, and for a SIGKILL whether
// the job's cgroup saw the OOM killer), faults titan injected itself, nodes whose lease expired,
// and for a hang the workers' stacks: a rank that is not in a collective while the others wait
// in one is the hang's culprit.
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "src/base/json_depth.h"
#include "src/base/text.h"
#include "src/diagnose/sources/source.h"

namespace titan::diagnose {
namespace {

// Where a Python stack (faulthandler's "File ..., line N in f" lines, most recent call first)
// is: "" if it waits in a torch.distributed collective, else its innermost frame outside torch.
struct StackPlace {
  bool in_collective = false;
  std::string frame;
};
StackPlace PlaceOf(std::string_view stack) {
  static constexpr std::string_view kCollectives[] = {"all_reduce",
                                                      "broadcast",
                                                      "barrier",
                                                      "all_gather",
                                                      "reduce_scatter",
                                                      "all_to_all",
                                                      "monitored_barrier",
                                                      "gather",
                                                      "scatter",
                                                      "reduce",
                                                      "send",
                                                      "recv",
                                                      "wait"};
  StackPlace place;
  std::string_view rest = stack;
  bool first_thread = true;
  while (!rest.empty()) {
    std::string_view line = Trim(NextLine(&rest));
    if (line.starts_with("Thread ") || line.starts_with("Current thread ")) {
      if (!first_thread) break;  // the main thread's stack is dumped first
      first_thread = false;
      continue;
    }
    if (!line.starts_with("File \"")) continue;
    const size_t q = line.find('"', 6);
    if (q == std::string_view::npos) continue;
    std::string_view file = line.substr(6, q - 6);
    const size_t in_at = line.rfind(" in ");
    std::string_view fn = in_at == std::string_view::npos ? "" : line.substr(in_at + 4);
    if (Contains(file, "torch/distributed/")) {
      for (std::string_view c : kCollectives) {
        if (fn == c || fn.starts_with(std::string(c) + "_")) place.in_collective = true;
      }
      continue;
    }
    if (Contains(file, "/torch/") || Contains(file, "threading.py")) continue;
    if (place.frame.empty()) {
      const size_t line_at = line.find(", line ");
      std::string_view line_no =
          line_at == std::string_view::npos
              ? ""
              : line.substr(line_at + 7, line.find(' ', line_at + 7) - line_at - 7);
      place.frame = fmt::format("{}:{} in {}", file.substr(file.rfind('/') + 1), line_no, fn);
    }
  }
  return place;
}

class TitanEventsSource final : public LogSource {
 public:
  std::string_view name() const override { return "titan_events"; }
  int Sniff(const FileHead& head) const override {
    // RunLog writes each line's keys in sorted order ({"command":..,"node":..,"time_ns":..}).
    std::string_view first = head.bytes.substr(0, head.bytes.find('\n'));
    return first.starts_with("{\"") && Contains(first, "\"time_ns\":") &&
                   Contains(first, "\"type\":") && Contains(first, "\"node\":")
               ? 60
               : 0;
  }

  Status Read(int fd, const FileHead& head, const ReadLimits& limits,
              SourceOutput* out) const override {
    const std::string path(head.path);
    TITAN_ASSIGN_OR_RETURN(std::string data, ReadDocument(fd, head, limits, "titan_events", out));
    std::string_view rest = data;
    int64_t line_no = 0, bad_lines = 0;
    struct Stack {
      int64_t rank;
      StackPlace place;
      Evidence evidence;
      std::string host;
    };
    std::vector<Stack> stacks;                   // of the latest hang
    std::map<std::string, std::string> host_of;  // titan's node id -> the host it ran on
    while (!rest.empty()) {
      std::string_view line = NextLine(&rest);
      ++line_no;
      if (Trim(line).empty()) continue;
      if (!CheckJsonDepth(line, path).ok()) {
        ++bad_lines;
        continue;
      }
      nlohmann::json e = nlohmann::json::parse(line, nullptr, false);
      if (e.is_discarded() || !e.is_object() || !e.contains("type") || !e["type"].is_string()) {
        ++bad_lines;
        continue;
      }
      const std::string type = e["type"].get<std::string>();
      const std::string node_id = e.value("node", std::string());
      if (e.contains("host") && e["host"].is_string())
        host_of[node_id] = e["host"].get<std::string>();
      const std::string host = host_of.count(node_id) ? host_of[node_id] : node_id;
      Evidence ev = LineEvidence(path, line_no, line);
      if (e.contains("time_ns") && e["time_ns"].is_number_integer()) {
        ev.time = {ClockKind::kWall, e["time_ns"].get<int64_t>()};
      }
      auto finding = [&](std::string rule, Tier tier, FaultClass fault, Action action,
                         double confidence, std::string detail) {
        Finding f;
        f.rule = std::move(rule);
        f.evidence = ev;
        f.tier = tier;
        f.fault = fault;
        f.action = action;
        f.confidence = confidence;
        f.detail = std::move(detail);
        f.where.node = host;
        f.where.rank = e.value("rank", int64_t{-1});
        f.pid = e.value("pid", int64_t{-1});
        return f;
      };
      if (type == "spawn" && e.contains("workers") && e["workers"].is_array()) {
        for (const nlohmann::json& w : e["workers"]) {
          if (!w.is_object()) continue;
          out->pid_ranks.push_back(
              {host, w.value("pid", int64_t{-1}), w.value("rank", int64_t{-1})});
        }
        stacks.clear();
      } else if (type == "crash") {
        const std::string status = e.value("status", std::string());
        const int64_t oom_kills = e.value("oom_kills", int64_t{-1});
        Finding f = finding("titan_crash", Tier::kSymptom, FaultClass::kUnknown, Action::kNone, 0.3,
                            fmt::format("rank {} ended: {}", e.value("rank", -1), status));
        f.blame.rank = f.blame.node = true;
        if (Contains(status, "signal 9")) {
          f.tier = Tier::kGeneric;
          if (oom_kills > 0) {
            f.tier = Tier::kCause;
            f.fault = FaultClass::kOomHost;
            f.action = Action::kReduceMemory;
            f.confidence = 0.9;
            f.detail = fmt::format(
                "rank {} was killed by the OOM killer ({} kill(s) in the job's cgroup, "
                "memory.events): host memory ran out; reduce what each rank holds in host "
                "memory (data loader workers and prefetch, pinned buffers, CPU offload)",
                e.value("rank", -1), oom_kills);
          } else if (oom_kills == 0) {
            f.confidence = 0.5;
            f.detail = fmt::format(
                "rank {} was killed with SIGKILL by something other than the job's OOM killer "
                "(memory.events counted none): an operator, the scheduler, or a node going "
                "away",
                e.value("rank", -1));
          } else {
            f.fault = FaultClass::kOomHost;
            f.action = Action::kReduceMemory;
            f.confidence = 0.4;
            f.detail = fmt::format(
                "rank {} was killed with SIGKILL: most often the kernel's OOM killer (host "
                "memory); the kernel log confirms it",
                e.value("rank", -1));
          }
        } else if (Contains(status, "signal 11") || Contains(status, "signal 7") ||
                   Contains(status, "signal 4")) {
          f.tier = Tier::kGeneric;
          f.fault = FaultClass::kCudaSoftware;
          f.action = Action::kRestartApp;
          f.confidence = 0.5;
          f.detail = fmt::format(
              "rank {} died of {} in native code (the framework, an extension or the driver); "
              "if it repeats at the same step it is a bug to report",
              e.value("rank", -1), status);
        }
        out->findings.push_back(std::move(f));
      } else if (type == "hang") {
        Finding f = finding("titan_hang", Tier::kSymptom, FaultClass::kUnknown, Action::kNone, 0.3,
                            fmt::format("no progress for {:.1f} s (bound {:.1f} s)",
                                        e.value("silent_s", 0.0), e.value("threshold_s", 0.0)));
        out->findings.push_back(std::move(f));
        stacks.clear();
      } else if (type == "stack") {
        const nlohmann::json& py = e.contains("python") ? e["python"] : nlohmann::json();
        if (py.is_string()) {
          stacks.push_back(
              {e.value("rank", int64_t{-1}), PlaceOf(py.get_ref<const std::string&>()), ev, host});
        }
      } else if (type == "inject") {
        Finding f = finding("titan_inject", Tier::kCause, FaultClass::kUnknown, Action::kNone, 0.9,
                            fmt::format("titan run injected a {} fault (--inject): a drill, not "
                                        "a real failure",
                                        e.value("kind", std::string("?"))));
        f.blame.rank = true;
        out->findings.push_back(std::move(f));
      } else if (type == "lost" && e.contains("nodes") && e["nodes"].is_array()) {
        Finding f = finding("titan_lost_node", Tier::kGeneric, FaultClass::kUnknown, Action::kNone,
                            0.5, "");
        std::vector<std::string> nodes;
        for (const nlohmann::json& n : e["nodes"]) {
          if (n.is_string()) nodes.push_back(n.get<std::string>());
        }
        if (nodes.size() == 1) {
          f.where.node = e.value("host", nodes.front());
          f.blame.node = true;
        }
        f.detail = fmt::format(
            "node(s) {} stopped renewing their lease: the node or its network "
            "went away",
            fmt::join(nodes, ", "));
        out->findings.push_back(std::move(f));
      }
    }
    // A hang where every rank but a few waits in a collective: the few are the culprits.
    if (!stacks.empty()) {
      std::vector<const Stack*> waiting, elsewhere;
      for (const Stack& s : stacks) (s.place.in_collective ? waiting : elsewhere).push_back(&s);
      if (!waiting.empty() && !elsewhere.empty() && elsewhere.size() < waiting.size() + 1) {
        for (const Stack* s : elsewhere) {
          Finding f;
          f.rule = "titan_stacks";
          f.evidence = s->evidence;
          f.tier = Tier::kCause;
          f.fault = FaultClass::kHangCollectiveMismatch;
          f.action = Action::kFixCode;
          f.confidence = elsewhere.size() == 1 ? 0.7 : 0.5;
          f.where.rank = s->rank;
          f.where.node = s->host;
          f.blame.rank = f.blame.node = elsewhere.size() == 1;
          f.detail = fmt::format(
              "hang: rank {} is at {}, not in a collective, while {} rank(s) wait in one: it "
              "never joined (a code path the others did not take, or a wait of its own)",
              s->rank, s->place.frame.empty() ? "an unknown place" : s->place.frame,
              waiting.size());
          out->findings.push_back(std::move(f));
        }
      }
    }
    out->file.lines = line_no;
    if (bad_lines > 0) {
      out->file.notes.push_back(
          fmt::format("{} line(s) are not titan events (skipped)", bad_lines));
    }
    return OkStatus();
  }
};

}  // namespace

const LogSource* NewTitanEventsSource() {
  static const TitanEventsSource source;
  return &source;
}

}  // namespace titan::diagnose
