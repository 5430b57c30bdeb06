// NCCL RAS (2.24+) status output: the text `ncclras` prints and `ncclras -f json` (2.28.7+), and
// its monitor mode's events (2.29+). RAS names the processes it cannot reach (INCOMPLETE:
// unresponsive; DEAD: unreachable for 60 s) with their node, PID and GPU, the ranks they held,
// and communicators whose ranks launched different numbers of collectives (MISMATCH). A process
// RAS cannot reach is the hang's suspect, not its cause: its own logs say why.
#include <cctype>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "src/base/json_depth.h"
#include "src/base/text.h"
#include "src/diagnose/log_time.h"
#include "src/diagnose/sources/source.h"

namespace titan::diagnose {
namespace {

// "Process 3487984 on node 172.16.64.213 managing GPU 5" or
// "Rank 7 -- GPU 3 managed by process 3748990 on node node1".
struct ProcessLine {
  int64_t pid = -1, rank = -1;
  std::string node, gpu;
};
bool ParseProcessLine(std::string_view line, ProcessLine* p) {
  std::string_view s = Trim(line);
  auto word_after = [&](std::string_view key) -> std::string_view {
    size_t at = s.find(key);
    if (at == std::string_view::npos) return {};
    std::string_view rest = s.substr(at + key.size());
    return rest.substr(0, rest.find(' '));
  };
  if (s.starts_with("Process ")) {
    p->pid = CaptureInt(word_after("Process "));
  } else if (s.starts_with("Rank ") && Contains(s, " managed by process ")) {
    p->rank = CaptureInt(word_after("Rank "));
    p->pid = CaptureInt(word_after("managed by process "));
  } else {
    return false;
  }
  p->node = std::string(word_after(" on node "));
  std::string_view gpu = word_after("GPU ");
  p->gpu = std::string(gpu);
  return !p->node.empty();
}

Finding RasFinding(const std::string& path, int64_t line_no, std::string_view text,
                   const ProcessLine& p, std::string_view state) {
  Finding f;
  f.rule = "nccl_ras";
  f.evidence = LineEvidence(path, line_no, text);
  f.tier = Tier::kGeneric;
  f.confidence = 0.5;
  f.where.node = p.node;
  f.where.rank = p.rank;
  f.pid = p.pid;
  f.blame.node = f.blame.rank = true;
  f.detail = fmt::format(
      "NCCL RAS: the process on node {} (pid {}{}){} is {}: it is where the job stopped; its "
      "own log and the node's kernel log say why",
      p.node, p.pid, p.gpu.empty() ? "" : fmt::format(", GPU {}", p.gpu),
      p.rank >= 0 ? fmt::format(", rank {}", p.rank) : "",
      state == "DEAD" ? "dead (unreachable for 60 s)" : "unresponsive");
  return f;
}

class RasTextSource final : public LogSource {
 public:
  std::string_view name() const override { return "nccl_ras"; }
  int Sniff(const FileHead& head) const override {
    std::string_view b = head.bytes;
    if (!LooksLikeText(b)) return 0;
    if (Contains(b, "Communicators...") || Contains(b, "Job summary\n===") ||
        Contains(b, "RAS Monitor Mode") || Contains(b, "] PEER_DEAD:") ||
        (Contains(b, "Errors\n======") && Contains(b, "Missing communicator data"))) {
      return 40;
    }
    return 0;
  }
  Status Read(int fd, const FileHead& head, const ReadLimits& limits,
              SourceOutput* out) const override {
    const std::string path(head.path);
    TITAN_ASSIGN_OR_RETURN(std::string data, ReadDocument(fd, head, limits, "nccl_ras", out));
    std::string_view rest = data;
    int64_t line_no = 0;
    std::string section, block;  // "Errors"/"Warnings"; "INCOMPLETE", "DEAD", "#0-0 ... MISMATCH"
    // Per-communicator blocks name ranks; job-level blocks name processes: join them by pid.
    std::map<int64_t, int64_t> rank_of_pid;
    std::vector<std::pair<size_t, int64_t>> pending_pid;  // finding index, pid
    std::vector<int64_t> missing_ranks;
    std::vector<std::string> lagging;
    while (!rest.empty()) {
      std::string_view line = NextLine(&rest);
      ++line_no;
      std::string_view t = Trim(line);
      if (t == "Errors" || t == "Warnings") {
        section = std::string(t);
        block.clear();
        continue;
      }
      if (t.empty() || t.starts_with("===")) continue;
      if (!line.starts_with(" ") && !section.empty()) {
        block = std::string(t);
        continue;
      }
      // Monitor mode: "[2025-12-19 13:07:07] PEER_DEAD: Process 1524345 on node ... GPU 1".
      if (size_t at = t.find("] PEER_DEAD: "); at != std::string_view::npos) {
        ProcessLine p;
        if (ParseProcessLine(t.substr(at + 13), &p)) {
          Finding f = RasFinding(path, line_no, line, p, "DEAD");
          f.evidence.time = ParseLineTime(line);
          out->findings.push_back(std::move(f));
        }
        continue;
      }
      if (section.empty()) continue;
      const bool job_level = block == "INCOMPLETE" || block == "DEAD";
      ProcessLine p;
      if (ParseProcessLine(line, &p)) {
        if (p.rank >= 0) rank_of_pid[p.pid] = p.rank;
        if (job_level && section == "Errors") {
          out->findings.push_back(RasFinding(path, line_no, line, p, block));
          pending_pid.emplace_back(out->findings.size() - 1, p.pid);
        } else if (Contains(block, "MISMATCH")) {
          lagging.push_back(std::string(t));
        }
        continue;
      }
      if (t.starts_with("The missing rank: ")) {
        missing_ranks.push_back(CaptureInt(t.substr(18)));
        continue;
      }
      if (Contains(block, "MISMATCH") && Contains(t, "have launched up to operation")) {
        lagging.push_back(std::string(t));
        if (lagging.size() == 1) {
          Finding f;
          f.rule = "nccl_ras_mismatch";
          f.evidence = LineEvidence(path, line_no, line);
          f.tier = Tier::kSymptom;
          f.fault = FaultClass::kHangCollectiveMismatch;
          f.confidence = 0.3;
          f.detail =
              "NCCL RAS: ranks of a communicator launched different numbers of "
              "collectives; if repeated queries show the same counts, the lagging ranks "
              "are stuck";
          out->findings.push_back(std::move(f));
        }
      }
    }
    for (auto [index, pid] : pending_pid) {
      Finding& f = out->findings[index];
      if (f.where.rank < 0 && rank_of_pid.count(pid)) f.where.rank = rank_of_pid[pid];
      if (f.where.rank < 0 && missing_ranks.size() == 1 && pending_pid.size() == 1) {
        f.where.rank = missing_ranks.front();
      }
      out->pid_ranks.push_back({f.where.node, pid, f.where.rank});
    }
    out->file.lines = line_no;
    return OkStatus();
  }
};

// `ncclras -f json`: {"nccl_version", "timestamp", "communicators": [{"hash", "size",
// "ranks": [...], "missing_ranks": [{"rank", "host", "pid", "cuda_dev", "nvml_dev",
// "status": {"unresponsive", "considered_dead"}}]}]}; monitor events {"event": "PEER_DEAD",
// "peer": {"host", "pid", "cuda_devs"}} (one per line).
class RasJsonSource final : public LogSource {
 public:
  std::string_view name() const override { return "nccl_ras_json"; }
  int Sniff(const FileHead& head) const override {
    std::string_view b = head.bytes;
    const size_t first = b.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos || b[first] != '{') return 0;
    if (Contains(b, "\"nccl_version\"") && Contains(b, "\"communicators\"")) return 45;
    if (Contains(b, "\"event\"") && Contains(b, "\"PEER_") && Contains(b, "\"peer\"")) return 45;
    return 0;
  }
  Status Read(int fd, const FileHead& head, const ReadLimits& limits,
              SourceOutput* out) const override {
    const std::string path(head.path);
    TITAN_ASSIGN_OR_RETURN(std::string data, ReadDocument(fd, head, limits, "nccl_ras", out));
    TITAN_RETURN_IF_ERROR(CheckJsonDepth(data, path));
    auto line_of = [&](size_t offset) {
      return 1 + CountNewlines(data.data(), std::min(offset, data.size()));
    };
    nlohmann::json doc = nlohmann::json::parse(data, nullptr, false);
    std::vector<nlohmann::json> docs;
    if (!doc.is_discarded()) {
      docs.push_back(std::move(doc));
    } else {
      // Monitor mode: one JSON object per event (pretty-printed or one per line).
      std::string_view rest = data;
      std::string acc;
      int depth = 0;
      for (char c : rest) {
        acc += c;
        if (c == '{') ++depth;
        if (c == '}' && --depth == 0) {
          nlohmann::json e = nlohmann::json::parse(acc, nullptr, false);
          if (!e.is_discarded()) docs.push_back(std::move(e));
          acc.clear();
        }
        if (depth < 0) return InvalidArgumentError(path + ": not NCCL RAS JSON");
      }
      if (docs.empty()) return InvalidArgumentError(path + ": not valid JSON (NCCL RAS -f json)");
    }
    size_t search_from = 0;
    for (const nlohmann::json& d : docs) {
      if (!d.is_object()) continue;
      LogTime when;
      if (d.contains("timestamp") && d["timestamp"].is_string()) {
        when = ParseLineTime(d["timestamp"].get<std::string>());
      }
      if (d.contains("event") && d["event"].is_string() && d.contains("peer")) {
        const std::string event = d["event"].get<std::string>();
        if (event != "PEER_DEAD" && event != "PEER_UNRESPONSIVE") continue;
        const nlohmann::json& peer = d["peer"];
        ProcessLine p;
        p.node = peer.value("host", "");
        p.pid = peer.value("pid", int64_t{-1});
        size_t at = data.find("\"" + event + "\"", search_from);
        search_from = at == std::string::npos ? search_from : at + 1;
        Finding f = RasFinding(path, at == std::string::npos ? 0 : line_of(at),
                               fmt::format("{} {}", event, JsonTextOf(peer)), p,
                               event == "PEER_DEAD" ? "DEAD" : "INCOMPLETE");
        f.evidence.time = when;
        out->findings.push_back(std::move(f));
        continue;
      }
      if (!d.contains("communicators") || !d["communicators"].is_array()) continue;
      for (const nlohmann::json& comm : d["communicators"]) {
        if (!comm.is_object() || !comm.contains("missing_ranks")) continue;
        for (const nlohmann::json& m : comm["missing_ranks"]) {
          if (!m.is_object()) continue;
          ProcessLine p;
          p.rank = m.value("rank", int64_t{-1});
          p.node = m.value("host", "");
          p.pid = m.value("pid", int64_t{-1});
          const nlohmann::json status = m.value("status", nlohmann::json::object());
          const bool dead = status.is_object() && status.value("considered_dead", false);
          size_t at = data.find("\"missing_ranks\"", search_from);
          Finding f = RasFinding(path, at == std::string::npos ? 0 : line_of(at),
                                 fmt::format("missing rank {}", JsonTextOf(m)), p,
                                 dead ? "DEAD" : "INCOMPLETE");
          f.evidence.time = when;
          out->findings.push_back(std::move(f));
          out->pid_ranks.push_back({p.node, p.pid, p.rank});
        }
        size_t at = data.find("\"missing_ranks\"", search_from);
        if (at != std::string::npos) search_from = at + 1;
      }
    }
    return OkStatus();
  }

 private:
  static std::string JsonTextOf(const nlohmann::json& j) {
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
};

}  // namespace

const LogSource* NewRasTextSource() {
  static const RasTextSource source;
  return &source;
}
const LogSource* NewRasJsonSource() {
  static const RasJsonSource source;
  return &source;
}

}  // namespace titan::diagnose
