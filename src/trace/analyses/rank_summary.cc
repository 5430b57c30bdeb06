#include "src/trace/analyses/rank_summary.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "src/trace/analyses/intervals.h"
#include "src/trace/analyses/kernel_class.h"

namespace titan::trace {
namespace {

bool IsStepName(std::string_view name) { return name.starts_with("ProfilerStep"); }

int64_t StepNumber(std::string_view name) {
  size_t hash = name.find('#');
  if (hash == std::string_view::npos) return -1;
  return std::strtoll(std::string(name.substr(hash + 1)).c_str(), nullptr, 10);
}

bool IsCpuCollectiveName(std::string_view name) {
  return name.starts_with("gloo:") || name.starts_with("c10d::") || name.starts_with("nccl:") ||
         name == "record_param_comms" || !CollectiveOfName(name).empty();
}

bool IsCpuSide(EventKind k) {
  return k == EventKind::kCpuOp || k == EventKind::kUserAnnotation ||
         k == EventKind::kPythonFunction;
}

// A stable sort (ties keep their trace order), skipped when the range is in order already, as
// traces mostly are.
template <typename It, typename Less>
void SortUnlessSorted(It begin, It end, Less less) {
  if (!std::is_sorted(begin, end, less)) std::stable_sort(begin, end, less);
}

bool StartsEarlier(const Op* a, const Op* b) { return a->ts_ns < b->ts_ns; }

// CPU ops of one thread sorted by start, to find the innermost op running at a time.
class ThreadOps {
 public:
  void Add(const Op* op) { ops_.push_back(op); }
  size_t size() const { return ops_.size(); }
  void Sort() {
    SortUnlessSorted(ops_.begin(), ops_.end(), [](const Op* a, const Op* b) {
      if (a->ts_ns != b->ts_ns) return a->ts_ns < b->ts_ns;
      return a->dur_ns > b->dur_ns;  // parents first
    });
  }
  // The latest-starting op with ts <= t < end, or null.
  const Op* InnermostAt(int64_t t) const {
    auto it = std::upper_bound(ops_.begin(), ops_.end(), t,
                               [](int64_t v, const Op* op) { return v < op->ts_ns; });
    int budget = 4096;
    while (it != ops_.begin() && budget-- > 0) {
      --it;
      if ((*it)->ts_ns <= t && t < (*it)->end_ns()) return *it;
    }
    return nullptr;
  }

 private:
  std::vector<const Op*> ops_;
};

// Runtime launch calls by correlation id; of calls sharing an id, the last in trace order counts.
class LaunchIndex {
 public:
  void Add(const Op* op) { calls_.emplace_back(op->correlation, op); }
  void Seal() {  // after the last Add; ids mostly grow along the trace already
    auto by_id = [](const Entry& a, const Entry& b) { return a.first < b.first; };
    if (!std::is_sorted(calls_.begin(), calls_.end(), by_id)) {
      std::stable_sort(calls_.begin(), calls_.end(), by_id);
    }
  }
  const Op* Find(int64_t correlation) const {
    auto after = std::upper_bound(calls_.begin(), calls_.end(), correlation,
                                  [](int64_t id, const Entry& e) { return id < e.first; });
    if (after == calls_.begin() || std::prev(after)->first != correlation) return nullptr;
    return std::prev(after)->second;
  }

 private:
  using Entry = std::pair<int64_t, const Op*>;
  std::vector<Entry> calls_;
};

int64_t Percentile(std::vector<int64_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  size_t idx = static_cast<size_t>(q * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(idx, sorted.size() - 1)];
}

std::string WholePercent(int64_t part, int64_t whole) {
  if (whole <= 0) return "-";
  return fmt::format("{:.0f}%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
}

void Verdict(RankSummary* s) {
  const StepBreakdown& t = s->total;
  int64_t wall = t.wall_ns();
  if (wall <= 0) {
    s->verdict = "unknown";
    s->evidence = "no timed activity in the trace";
    return;
  }
  double compute = static_cast<double>(t.compute_ns) / wall;
  double comm = static_cast<double>(t.exposed_comm_ns) / wall;
  double idle = static_cast<double>(t.idle_ns) / wall;
  double loader = static_cast<double>(s->dataloader_ns) / wall;
  std::string split =
      fmt::format("compute {}, exposed comm {}, exposed memcpy {}, idle {}",
                  WholePercent(t.compute_ns, wall), WholePercent(t.exposed_comm_ns, wall),
                  WholePercent(t.exposed_mem_ns, wall), WholePercent(t.idle_ns, wall));
  std::string gap;
  if (!s->top_gaps.empty()) {
    const IdleGap& g = s->top_gaps.front();
    gap = fmt::format("; largest gap {:.2f} ms before {}", g.length_ns / 1e6,
                      g.launched_by.empty() ? g.next_op : g.launched_by);
  }
  if (loader >= 0.15 && loader >= 0.5 * idle) {
    s->verdict = "data-loading-bound";
    s->evidence = fmt::format("DataLoader ops take {} of step time; {}{}",
                              WholePercent(s->dataloader_ns, wall), split, gap);
  } else if (comm >= 0.2 && comm >= compute * 0.5) {
    s->verdict = "communication-bound";
    s->evidence = fmt::format("collectives not hidden by compute: {}{}", split, gap);
  } else if (s->has_gpu && idle >= 0.25) {
    s->verdict = "host-bound";
    s->evidence = fmt::format("the GPU waits for the CPU to launch work: {}{}", split, gap);
  } else if (s->has_gpu) {
    s->verdict = "GPU-bound";
    s->evidence = fmt::format("the GPU is busy most of the step: {}{}", split, gap);
  } else {
    s->verdict = idle >= 0.25 ? "host-bound" : "compute-bound (CPU)";
    s->evidence = fmt::format("CPU-only trace, main thread: {}{}", split, gap);
  }
}

}  // namespace

RankSummary SummariseRank(const RankTrace& t, const SummaryOptions& options) {
  RankSummary s;
  s.rank = t.rank;
  s.world_size = t.world_size;
  s.path = t.path;
  s.format = t.format;
  s.wall_clock = t.wall_clock;
  s.epoch_offset_ns = t.epoch_offset_ns;
  s.input_bytes = t.input_bytes;
  s.ops = t.ops.size();
  s.warnings = t.warnings;
  s.stats = t.stats;

  // Index the trace.
  std::vector<const Op*> steps, gpu;
  LaunchIndex launch_of;  // correlation -> runtime call
  std::unordered_map<int32_t, ThreadOps> threads;
  ThreadOps* last_thread = nullptr;  // ops come in runs of one thread: one lookup per run
  int32_t last_tid = 0;
  for (const Op& op : t.ops) {
    if (IsGpuActivity(op.kind)) {
      gpu.push_back(&op);
    } else if (IsLaunch(op.kind)) {
      if (op.correlation != -1) launch_of.Add(&op);
    } else if (IsCpuSide(op.kind) && op.stream == -1) {
      if (IsStepName(t.Name(op))) {
        steps.push_back(&op);
      } else {
        if (last_thread == nullptr || op.tid != last_tid) {
          last_thread = &threads[op.tid];  // nodes never move
          last_tid = op.tid;
        }
        last_thread->Add(&op);
      }
    }
  }
  launch_of.Seal();
  for (auto& [tid, ops] : threads) ops.Sort();
  SortUnlessSorted(steps.begin(), steps.end(), StartsEarlier);
  SortUnlessSorted(gpu.begin(), gpu.end(), StartsEarlier);
  s.has_gpu = !gpu.empty();

  // GPU classes, computed once per distinct name.
  std::vector<int8_t> class_cache(t.strings.size(), -1);
  auto gpu_class = [&](const Op* op) {
    if (op->kind == EventKind::kGpuMemcpy || op->kind == EventKind::kGpuMemset) {
      return GpuClass::kMemory;
    }
    int8_t& c = class_cache[op->name];
    if (c < 0) c = static_cast<int8_t>(ClassifyGpuOp(op->kind, t.Name(*op)));
    return static_cast<GpuClass>(c);
  };

  // The timelines.
  std::vector<Interval> compute, comm, mem;
  int32_t main_tid = 0;
  if (s.has_gpu) {
    for (const Op* op : gpu) {
      Interval i{op->ts_ns, op->end_ns()};
      switch (gpu_class(op)) {
        case GpuClass::kCompute:
          compute.push_back(i);
          break;
        case GpuClass::kCommunication:
          comm.push_back(i);
          break;
        case GpuClass::kMemory:
          mem.push_back(i);
          break;
      }
    }
  } else {
    if (!steps.empty()) {
      main_tid = steps.front()->tid;
    } else {
      size_t best = 0;
      for (auto& [tid, ops] : threads) {
        if (ops.size() > best) {
          best = ops.size();
          main_tid = tid;
        }
      }
    }
    for (const Op& op : t.ops) {
      if (op.tid != main_tid || !IsCpuSide(op.kind) || op.kind == EventKind::kUserAnnotation ||
          IsStepName(t.Name(op))) {
        continue;
      }
      Interval i{op.ts_ns, op.end_ns()};
      (IsCpuCollectiveName(t.Name(op)) ? comm : compute).push_back(i);
    }
  }
  compute = Union(std::move(compute));
  comm = Union(std::move(comm));
  mem = Union(std::move(mem));
  std::vector<Interval> busy_parts = compute;
  busy_parts.insert(busy_parts.end(), comm.begin(), comm.end());
  busy_parts.insert(busy_parts.end(), mem.begin(), mem.end());
  std::vector<Interval> busy = Union(std::move(busy_parts));
  std::vector<Interval> comm_exposed = Subtract(comm, compute);
  std::vector<Interval> mem_exposed = Subtract(Subtract(mem, compute), comm);

  // Step windows.
  int64_t last_activity = busy.empty() ? 0 : busy.back().end_ns;
  if (steps.empty()) {
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (const Op& op : t.ops) {
      lo = std::min(lo, op.ts_ns);
      hi = std::max(hi, op.end_ns());
    }
    if (lo < hi) s.steps.push_back(StepBreakdown{"trace", -1, lo, hi});
  } else {
    for (size_t i = 0; i < steps.size(); ++i) {
      StepBreakdown b;
      b.name = std::string(t.Name(*steps[i]));
      b.number = StepNumber(b.name);
      b.begin_ns = steps[i]->ts_ns;
      b.end_ns =
          i + 1 < steps.size() ? steps[i + 1]->ts_ns : std::max(steps[i]->end_ns(), last_activity);
      if (b.end_ns > b.begin_ns) s.steps.push_back(b);
    }
  }
  for (StepBreakdown& b : s.steps) {
    b.compute_ns = TotalLength(Clip(compute, b.begin_ns, b.end_ns));
    b.exposed_comm_ns = TotalLength(Clip(comm_exposed, b.begin_ns, b.end_ns));
    b.exposed_mem_ns = TotalLength(Clip(mem_exposed, b.begin_ns, b.end_ns));
    b.idle_ns = b.wall_ns() - TotalLength(Clip(busy, b.begin_ns, b.end_ns));
    s.total.compute_ns += b.compute_ns;
    s.total.exposed_comm_ns += b.exposed_comm_ns;
    s.total.exposed_mem_ns += b.exposed_mem_ns;
    s.total.idle_ns += b.idle_ns;
  }
  if (!s.steps.empty()) {
    s.total.name = "total";
    s.total.begin_ns = s.steps.front().begin_ns;
    s.total.end_ns = s.steps.back().end_ns;
  }
  auto step_of = [&](int64_t ts) -> int64_t {
    for (const StepBreakdown& b : s.steps) {
      if (ts >= b.begin_ns && ts < b.end_ns) return b.number;
    }
    return -1;
  };

  // Largest idle gaps inside the steps.
  if (!s.steps.empty()) {
    std::vector<Interval> in_steps = Clip(busy, s.total.begin_ns, s.total.end_ns);
    // The `keep` longest (earliest first among equals), in a heap of at most keep + 1: a rank
    // with a million gaps no longer holds them all (~125 MB each, kept by a resize).
    const size_t keep = static_cast<size_t>(std::max(0, options.top_gaps));
    struct Gap {
      int64_t begin_ns, length_ns;
    };
    auto longer = [](const Gap& a, const Gap& b) {
      return a.length_ns != b.length_ns ? a.length_ns > b.length_ns : a.begin_ns < b.begin_ns;
    };
    std::vector<Gap> longest;  // a heap whose front is the shortest kept
    int64_t cursor = s.total.begin_ns;
    for (const Interval& i : in_steps) {
      if (i.begin_ns > cursor && keep > 0) {
        longest.push_back(Gap{cursor, i.begin_ns - cursor});
        std::push_heap(longest.begin(), longest.end(), longer);
        if (longest.size() > keep) {
          std::pop_heap(longest.begin(), longest.end(), longer);
          longest.pop_back();
        }
      }
      cursor = std::max(cursor, i.end_ns);
    }
    std::sort(longest.begin(), longest.end(), longer);
    std::vector<IdleGap> gaps(longest.size());
    for (size_t k = 0; k < longest.size(); ++k) {
      gaps[k].begin_ns = longest[k].begin_ns;
      gaps[k].length_ns = longest[k].length_ns;
    }
    for (IdleGap& g : gaps) {
      int64_t gap_end = g.begin_ns + g.length_ns;
      g.step = step_of(g.begin_ns);
      if (s.has_gpu) {
        auto it = std::lower_bound(gpu.begin(), gpu.end(), gap_end,
                                   [](const Op* op, int64_t v) { return op->ts_ns < v; });
        if (it == gpu.end()) continue;
        g.next_op = std::string(t.Name(**it));
        const Op* call = launch_of.Find((*it)->correlation);
        if (call == nullptr) continue;
        g.launch_after_gap_ns = call->ts_ns - g.begin_ns;
        auto th = threads.find(call->tid);
        if (th == threads.end()) continue;
        if (const Op* by = th->second.InnermostAt(call->ts_ns))
          g.launched_by = std::string(t.Name(*by));
        if (const Op* before = th->second.InnermostAt(g.begin_ns)) {
          g.cpu_before = std::string(t.Name(*before));
        }
      } else {
        auto th = threads.find(main_tid);
        if (th == threads.end()) continue;
        if (const Op* next = th->second.InnermostAt(gap_end))
          g.next_op = std::string(t.Name(*next));
        if (const Op* before = th->second.InnermostAt(g.begin_ns - 1)) {
          g.cpu_before = std::string(t.Name(*before));
        }
      }
    }
    s.top_gaps = std::move(gaps);
  }

  // Launch delays.
  std::vector<int64_t> delays;
  for (const Op* op : gpu) {
    const Op* call = op->correlation != -1 ? launch_of.Find(op->correlation) : nullptr;
    if (call != nullptr) delays.push_back(op->ts_ns - call->ts_ns);
  }
  std::sort(delays.begin(), delays.end());
  s.launch_delay.count = static_cast<int64_t>(delays.size());
  if (!delays.empty()) {
    s.launch_delay.p50_ns = Percentile(delays, 0.5);
    s.launch_delay.p90_ns = Percentile(delays, 0.9);
    s.launch_delay.p99_ns = Percentile(delays, 0.99);
    s.launch_delay.max_ns = delays.back();
  }

  // Data loading.
  std::vector<Interval> loader;
  std::vector<int8_t> is_loader(t.strings.size(), -1);  // by name, computed once
  for (const Op& op : t.ops) {
    if (!IsCpuSide(op.kind)) continue;
    int8_t& loads = is_loader[op.name];
    if (loads < 0) loads = t.Name(op).find("DataLoader") != std::string_view::npos;
    if (loads) loader.push_back({op.ts_ns, op.end_ns()});
  }
  if (!s.steps.empty()) {
    s.dataloader_ns = TotalLength(Clip(Union(std::move(loader)), s.total.begin_ns, s.total.end_ns));
  }

  // Collectives, in start order.
  std::vector<const Op*> calls;
  if (s.has_gpu) {
    for (const Op* op : gpu) {
      if (gpu_class(op) == GpuClass::kCommunication) calls.push_back(op);
    }
  } else {
    for (const Op& op : t.ops) {
      if (IsCpuSide(op.kind) && t.Name(op).starts_with("gloo:")) calls.push_back(&op);
    }
    if (calls.empty()) {
      for (const Op& op : t.ops) {
        if (IsCpuSide(op.kind) && op.tid == main_tid && t.Name(op).starts_with("c10d::")) {
          calls.push_back(&op);
        }
      }
    }
    SortUnlessSorted(calls.begin(), calls.end(), StartsEarlier);
  }
  std::map<std::pair<std::string, std::string>, int64_t> ordinals;
  for (const Op* op : calls) {
    CollectiveCall c;
    c.process_group = "default";
    if (op->collective >= 0) {
      const CollectiveArgs& a = t.collectives[op->collective];
      if (a.collective_name != 0)
        c.collective = NormaliseCollective(t.strings.Get(a.collective_name));
      if (a.process_group != 0) c.process_group = std::string(t.strings.Get(a.process_group));
      c.seq = a.seq;
      c.elements = a.in_nelems;
    }
    if (c.collective.empty()) c.collective = CollectiveOfName(t.Name(*op));
    if (c.collective.empty()) c.collective = "collective";
    c.ordinal = ordinals[{c.process_group, c.collective}]++;
    c.start_ns = op->ts_ns;
    c.end_ns = op->end_ns();
    c.step = step_of(op->ts_ns);
    s.collectives.push_back(std::move(c));
  }

  Verdict(&s);
  return s;
}

}  // namespace titan::trace
