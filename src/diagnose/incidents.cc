#include "src/diagnose/incidents.h"

#include <algorithm>
#include <climits>
#include <map>
#include <set>

#include <fmt/format.h>

#include "src/diagnose/log_time.h"

namespace titan::diagnose {
namespace {

using Cluster = std::vector<size_t>;  // indices into the findings

bool IsWall(const LogTime& t) {
  return t.kind == ClockKind::kWall || t.kind == ClockKind::kWallNoYear;
}

void ResolveRanks(const Facts& facts, std::vector<Finding>* findings) {
  for (Finding& f : *findings) {
    if (f.where.rank >= 0) continue;
    if (f.pid >= 0) {
      for (const PidRank& p : facts.pid_ranks) {
        if (p.pid == f.pid && (p.node.empty() || f.where.node.empty() || p.node == f.where.node)) {
          f.where.rank = p.rank;
          if (f.where.node.empty()) f.where.node = p.node;
          f.blame.rank = f.blame.rank || f.blame.gpu || f.blame.node || f.tier == Tier::kCause;
          break;
        }
      }
    }
    if (f.where.rank < 0 && !f.where.gpu.empty()) {
      for (const RankGpu& g : facts.rank_gpus) {
        if (g.gpu == f.where.gpu && (g.node.empty() || g.node == f.where.node)) {
          f.where.rank = g.rank;
          f.blame.rank = f.blame.gpu;
          break;
        }
      }
    }
  }
}

// Times without a year go into the latest year the other times show (the year before, if that
// would put them more than two days after every dated time).
void PlaceYears(std::vector<Finding>* findings) {
  int64_t max_wall = INT64_MIN;
  for (const Finding& f : *findings) {
    if (f.evidence.time.kind == ClockKind::kWall) max_wall = std::max(max_wall, f.evidence.time.ns);
  }
  if (max_wall == INT64_MIN) return;
  const int year = YearOf({ClockKind::kWall, max_wall});
  for (Finding& f : *findings) {
    if (f.evidence.time.kind != ClockKind::kWallNoYear) continue;
    LogTime t = PlaceInYear(f.evidence.time, year);
    if (t.ns > max_wall + int64_t{2} * 86400 * 1'000'000'000)
      t = PlaceInYear(f.evidence.time, year - 1);
    f.evidence.time = t;
  }
}

// Groups `indices` (all on one clock) so that a gap longer than gap_ns starts a new group; a
// finding's interval starts `ran_for_ns` before its time.
std::vector<Cluster> ClusterByTime(const std::vector<Finding>& fs, Cluster indices,
                                   int64_t gap_ns) {
  std::sort(indices.begin(), indices.end(), [&](size_t a, size_t b) {
    int64_t ka = fs[a].evidence.time.ns - fs[a].ran_for_ns;
    int64_t kb = fs[b].evidence.time.ns - fs[b].ran_for_ns;
    return ka != kb ? ka < kb : fs[a].order < fs[b].order;
  });
  std::vector<Cluster> out;
  int64_t end = INT64_MIN;
  for (size_t i : indices) {
    const int64_t start = fs[i].evidence.time.ns - fs[i].ran_for_ns;
    if (out.empty() || start > end + gap_ns) {
      out.emplace_back();
      end = INT64_MIN;
    }
    out.back().push_back(i);
    end = std::max(end, fs[i].evidence.time.ns);
  }
  return out;
}

bool SharesEntity(const std::vector<Finding>& fs, const Cluster& a, const Cluster& b) {
  std::set<int64_t> pids;
  std::set<std::string> gpus, nodes;
  for (size_t i : a) {
    if (fs[i].pid >= 0) pids.insert(fs[i].pid);
    if (!fs[i].where.gpu.empty()) gpus.insert(fs[i].where.gpu);
    if (!fs[i].where.node.empty()) nodes.insert(fs[i].where.node);
  }
  for (size_t i : b) {
    if (fs[i].pid >= 0 && pids.count(fs[i].pid)) return true;
    if (!fs[i].where.gpu.empty() && gpus.count(fs[i].where.gpu)) return true;
    if (!fs[i].where.node.empty() && nodes.count(fs[i].where.node)) return true;
  }
  return false;
}

std::vector<Cluster> Group(const std::vector<Finding>& fs, int64_t gap_ns) {
  Cluster timed;
  std::map<std::string, Cluster> boot_by_file, none_by_file;
  std::vector<std::string> file_order;
  for (size_t i = 0; i < fs.size(); ++i) {
    const LogTime& t = fs[i].evidence.time;
    if (IsWall(t)) {
      timed.push_back(i);
      continue;
    }
    const std::string& file = fs[i].evidence.file;
    if (!boot_by_file.count(file) && !none_by_file.count(file)) file_order.push_back(file);
    (t.kind == ClockKind::kBoot ? boot_by_file : none_by_file)[file].push_back(i);
  }
  std::vector<Cluster> clusters = ClusterByTime(fs, timed, gap_ns);
  // Untimed groups: every boot-clock group but a file's last stays on its own unless it shares
  // an entity with a timed incident; a file's last group (and its findings with no time at all)
  // joins the timed incident it shares an entity with, else the latest one.
  std::vector<Cluster> separate, joining;
  for (const std::string& file : file_order) {
    Cluster last;
    if (auto it = boot_by_file.find(file); it != boot_by_file.end()) {
      std::vector<Cluster> boot = ClusterByTime(fs, it->second, gap_ns);
      for (size_t k = 0; k + 1 < boot.size(); ++k) separate.push_back(std::move(boot[k]));
      last = std::move(boot.back());
    }
    if (auto it = none_by_file.find(file); it != none_by_file.end()) {
      last.insert(last.end(), it->second.begin(), it->second.end());
    }
    joining.push_back(std::move(last));
  }
  const size_t timed_count = clusters.size();
  auto attach = [&](Cluster&& group, bool must_share) {
    for (size_t k = timed_count; k-- > 0;) {
      if (SharesEntity(fs, clusters[k], group)) {
        clusters[k].insert(clusters[k].end(), group.begin(), group.end());
        return true;
      }
    }
    if (must_share) return false;
    if (timed_count > 0) {
      clusters[timed_count - 1].insert(clusters[timed_count - 1].end(), group.begin(), group.end());
      return true;
    }
    return false;
  };
  Cluster untimed_all;
  for (Cluster& g : joining) {
    if (timed_count == 0) {
      untimed_all.insert(untimed_all.end(), g.begin(), g.end());
    } else {
      attach(std::move(g), false);
    }
  }
  if (!untimed_all.empty()) clusters.push_back(std::move(untimed_all));
  for (Cluster& g : separate) {
    if (!attach(Cluster(g), true)) clusters.push_back(std::move(g));
  }
  return clusters;
}

// Root order: higher tier, then a wall time before none, then earlier, then input order.
bool RootBefore(const Finding& a, const Finding& b) {
  if (a.tier != b.tier) return a.tier > b.tier;
  const bool ta = IsWall(a.evidence.time), tb = IsWall(b.evidence.time);
  if (ta != tb) return ta;
  if (ta && a.evidence.time.ns != b.evidence.time.ns)
    return a.evidence.time.ns < b.evidence.time.ns;
  if (a.evidence.file == b.evidence.file && a.evidence.time.kind == ClockKind::kBoot &&
      b.evidence.time.kind == ClockKind::kBoot && a.evidence.time.ns != b.evidence.time.ns) {
    return a.evidence.time.ns < b.evidence.time.ns;
  }
  return a.order < b.order;
}

// Time order for symptoms: wall times first by time, then input order.
bool TimeBefore(const Finding& a, const Finding& b) {
  const bool ta = IsWall(a.evidence.time), tb = IsWall(b.evidence.time);
  if (ta && tb && a.evidence.time.ns != b.evidence.time.ns)
    return a.evidence.time.ns < b.evidence.time.ns;
  if (ta != tb) return ta;
  return a.order < b.order;
}

bool GpuDomain(FaultClass c) { return IsHardwareClass(c) || c == FaultClass::kCudaSoftware; }

// The one value of `field` that the findings blame, or empty/-1 when none or several.
template <typename Get, typename Value>
Value UniqueBlamed(const std::vector<const Finding*>& fs, Get get, Value none) {
  Value found = none;
  for (const Finding* f : fs) {
    auto [blamed, value] = get(*f);
    if (!blamed || value == none) continue;
    if (found != none && found != value) return none;
    found = value;
  }
  return found;
}

Incident Build(std::vector<Finding>& fs, const Cluster& cluster, const IncidentOptions& o) {
  std::vector<const Finding*> members;
  for (size_t i : cluster) members.push_back(&fs[i]);
  const Finding* root =
      *std::min_element(members.begin(), members.end(),
                        [](const Finding* a, const Finding* b) { return RootBefore(*a, *b); });
  Incident inc;
  inc.root = *root;
  inc.fault = root->fault;
  inc.action = root->action;
  // The same kind of fault on several nodes/ranks/GPUs blames none of them.
  std::vector<const Finding*> same_rule;
  for (const Finding* f : members) {
    if (f->rule == root->rule && f->fault == root->fault) same_rule.push_back(f);
  }
  auto rank_of = [](const Finding& f) { return std::pair{f.blame.rank, f.where.rank}; };
  auto node_of = [](const Finding& f) { return std::pair{f.blame.node, f.where.node}; };
  auto gpu_of = [](const Finding& f) { return std::pair{f.blame.gpu, f.where.gpu}; };
  auto pick = [&](auto get, auto none) {
    auto [root_blames, root_value] = get(*root);
    if (root_blames && root_value != none) {
      return UniqueBlamed(same_rule, get, none);
    }
    return UniqueBlamed(members, get, none);
  };
  inc.culprit.rank = pick(rank_of, int64_t{-1});
  inc.culprit.node = pick(node_of, std::string());
  inc.culprit.gpu = pick(gpu_of, std::string());
  // The strongest action the incident's GPU faults call for.
  if (GpuDomain(inc.fault)) {
    for (const Finding* f : members) {
      if (f->tier < Tier::kGeneric || !GpuDomain(f->fault)) continue;
      if (!inc.culprit.gpu.empty() && !f->where.gpu.empty() && f->where.gpu != inc.culprit.gpu)
        continue;
      if (GpuActionRank(f->action) > GpuActionRank(inc.action)) inc.action = f->action;
    }
  }
  inc.confidence =
      inc.fault == FaultClass::kUnknown ? std::min(root->confidence, 0.3) : root->confidence;
  std::set<std::string> other_files;
  for (const Finding* f : members) {
    if (f != root && f->evidence.file != root->evidence.file) other_files.insert(f->evidence.file);
  }
  if (inc.fault != FaultClass::kUnknown && !other_files.empty()) {
    inc.confidence = std::min(0.95, inc.confidence + 0.05);
  }
  std::vector<const Finding*> rest;
  for (const Finding* f : members) {
    if (f != root) rest.push_back(f);
  }
  std::sort(rest.begin(), rest.end(),
            [](const Finding* a, const Finding* b) { return TimeBefore(*a, *b); });
  inc.symptoms_total = static_cast<int64_t>(rest.size());
  for (const Finding* f : rest) {
    if (inc.symptoms.size() >= o.max_symptoms) break;
    inc.symptoms.push_back(*f);
  }
  for (const Finding* f : members) {
    const LogTime& t = f->evidence.time;
    if (!IsWall(t)) continue;
    if (inc.first.kind == ClockKind::kNone || t.ns < inc.first.ns) inc.first = t;
    if (inc.last.kind == ClockKind::kNone || t.ns > inc.last.ns) inc.last = t;
  }
  return inc;
}

void Escalate(std::vector<Incident>* incidents, int64_t window_ns) {
  std::vector<Incident*> timed;
  for (Incident& inc : *incidents) {
    if (IsHardwareClass(inc.fault) && IsWall(inc.first) &&
        (!inc.culprit.gpu.empty() || !inc.culprit.node.empty())) {
      timed.push_back(&inc);
    }
  }
  std::sort(timed.begin(), timed.end(),
            [](const Incident* a, const Incident* b) { return a->first.ns < b->first.ns; });
  std::map<std::string, const Incident*> last;
  for (Incident* inc : timed) {
    const std::string key = !inc->culprit.gpu.empty()
                                ? "GPU " + inc->culprit.gpu +
                                      (inc->culprit.node.empty() ? "" : " of " + inc->culprit.node)
                                : "node " + inc->culprit.node;
    auto it = last.find(key);
    if (it != last.end() && inc->first.ns - it->second->first.ns <= window_ns &&
        GpuActionRank(inc->action) < GpuActionRank(Action::kDrainNode)) {
      inc->escalated = true;
      inc->escalation =
          fmt::format("{} failed before ({} at {}), within {:.0f} h: drain it instead of {} again",
                      key, FaultClassName(it->second->fault), FormatLogTime(it->second->first),
                      static_cast<double>(window_ns) / 3.6e12, ActionName(inc->action));
      inc->action = Action::kDrainNode;
    }
    last[key] = inc;
  }
}

int Severity(FaultClass c) {
  if (IsHardwareClass(c)) return 3;
  return c == FaultClass::kUnknown ? 1 : 2;
}

}  // namespace

std::vector<Incident> BuildIncidents(std::vector<Finding> findings, const Facts& facts,
                                     const IncidentOptions& options) {
  ResolveRanks(facts, &findings);
  PlaceYears(&findings);
  std::vector<Incident> incidents;
  for (const Cluster& c : Group(findings, options.gap_ns)) {
    if (!c.empty()) incidents.push_back(Build(findings, c, options));
  }
  Escalate(&incidents, options.escalation_window_ns);
  // In time order, then the primary first.
  std::stable_sort(incidents.begin(), incidents.end(),
                   [](const Incident& a, const Incident& b) { return TimeBefore(a.root, b.root); });
  auto primary = std::max_element(incidents.begin(), incidents.end(),
                                  [](const Incident& a, const Incident& b) {
                                    if (Severity(a.fault) != Severity(b.fault))
                                      return Severity(a.fault) < Severity(b.fault);
                                    if (a.root.tier != b.root.tier)
                                      return a.root.tier < b.root.tier;
                                    return TimeBefore(a.root, b.root);
                                  });
  if (primary != incidents.end()) std::rotate(incidents.begin(), primary, primary + 1);
  return incidents;
}

}  // namespace titan::diagnose
