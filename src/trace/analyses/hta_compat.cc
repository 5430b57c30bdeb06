#include "src/trace/analyses/hta_compat.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "src/base/atomic_file.h"
#include "src/base/csv.h"
#include "src/trace/analyses/kernel_class.h"

namespace titan::trace {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double Us(int64_t ns) { return static_cast<double>(ns) / 1000.0; }

// The double nearest to `ns` / 1000 without going through a double of `ns` (which loses
// nanoseconds above 2^53: epoch nanoseconds are ~1.7e18). For nanoseconds recovered from a
// parsed double of microseconds (MicrosToNanos), this is that double again, as pandas holds it.
double ExactUs(int64_t ns) {
  constexpr int64_t kExact = int64_t{1} << 53;
  if (ns > -kExact && ns < kExact) return static_cast<double>(ns) / 1000.0;
  return static_cast<double>(ns / 1000) + static_cast<double>(ns % 1000) / 1000.0;
}

struct GpuEvent {
  int64_t ts_ns;
  int64_t end_ns;
  StringId name;
  int64_t stream;
  HtaKernelType type;
  double runtime_ts_us;  // ts of the correlated CPU launch, NaN if HTA finds none
  bool idle_kernel;      // in the idle time breakdown: a kernel, memcpy, memset or MTIA event
};

struct Span {
  int64_t ts_ns;
  int64_t end_ns;
};

// HTA's timestamps: rounded to whole microseconds (start up, end down) when pandas holds ts as
// float64; otherwise as written.
void HtaTimes(const RankTrace& t, const Op& op, int64_t* ts, int64_t* end) {
  if (!t.hta_float_ts) {
    *ts = op.ts_ns;
    *end = op.ts_ns + op.dur_ns;
    return;
  }
  double ts_us = ExactUs(op.ts_ns);
  double dur_us = ExactUs(op.dur_ns);
  *ts = static_cast<int64_t>(std::ceil(ts_us)) * 1000;
  *end = static_cast<int64_t>(std::floor(ts_us + dur_us)) * 1000;
}

// hta.utils.merge_kernel_intervals: sort by start; a span joins the current group unless it
// starts strictly after every earlier end; each group becomes (min start, max end).
std::vector<Span> HtaMerge(std::vector<Span> spans) {
  std::stable_sort(spans.begin(), spans.end(),
                   [](const Span& a, const Span& b) { return a.ts_ns < b.ts_ns; });
  std::vector<Span> out;
  int64_t cummax = std::numeric_limits<int64_t>::min();
  for (const Span& s : spans) {
    if (out.empty() || s.ts_ns > cummax) {
      out.push_back(s);
    } else {
      out.back().ts_ns = std::min(out.back().ts_ns, s.ts_ns);
      out.back().end_ns = std::max(out.back().end_ns, s.end_ns);
    }
    cummax = std::max(cummax, s.end_ns);
  }
  return out;
}

int64_t SpanSum(const std::vector<Span>& merged) {
  int64_t total = 0;
  for (const Span& s : merged) total += s.end_ns - s.ts_ns;
  return total;
}

std::vector<Span> SpansOf(const std::vector<GpuEvent>& events, int type_filter) {
  std::vector<Span> spans;
  for (const GpuEvent& e : events) {
    if (type_filter < 0 || static_cast<int>(e.type) == type_filter)
      spans.push_back({e.ts_ns, e.end_ns});
  }
  return spans;
}

// numpy's linear interpolation (method="linear"), as pandas' quantile and describe use it.
double Quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return kNaN;
  double pos = q * static_cast<double>(sorted.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  double t = pos - static_cast<double>(lo);
  double a = sorted[lo], b = sorted[hi];
  double diff = b - a;
  return t >= 0.5 ? b - diff * (1 - t) : a + diff * t;
}

// pandas' groupby std (Welford, ddof=1); NaN for fewer than two values.
double WelfordStd(const std::vector<double>& values) {
  if (values.size() < 2) return kNaN;
  double mean = 0, ssqdm = 0;
  double n = 0;
  for (double v : values) {
    n += 1;
    double old = mean;
    mean += (v - old) / n;
    ssqdm += (v - mean) * (v - old);
  }
  return std::sqrt(ssqdm / (n - 1));
}

// Series.describe()'s std (two-pass, ddof=1).
double TwoPassStd(const std::vector<double>& values) {
  if (values.size() < 2) return kNaN;
  double sum = 0;
  for (double v : values) sum += v;
  double mean = sum / static_cast<double>(values.size());
  double sq = 0;
  for (double v : values) sq += (v - mean) * (v - mean);
  return std::sqrt(sq / static_cast<double>(values.size() - 1));
}

struct Agg {
  double sum = 0, max = -INFINITY, min = INFINITY, mean = 0, std = 0;
};

Agg Aggregate(const std::vector<double>& values) {
  Agg a;
  for (double v : values) {
    a.sum += v;
    a.max = std::max(a.max, v);
    a.min = std::min(a.min, v);
  }
  a.mean = a.sum / static_cast<double>(values.size());
  a.std = WelfordStd(values);
  if (std::isnan(a.std)) a.std = 0;  // fillna(0)
  return a;
}

// BreakdownAnalysis._aggr_gpu_kernel_time for one kernel type of one rank.
std::vector<HtaKernelRow> AggregateKernels(const RankTrace& t, const std::vector<GpuEvent>& gpu,
                                           HtaKernelType type, const HtaOptions& options) {
  std::map<std::string_view, std::vector<double>> by_name;  // groupby sorts by name
  for (const GpuEvent& e : gpu) {
    if (e.type == type) by_name[t.strings.Get(e.name)].push_back(Us(e.end_ns - e.ts_ns));
  }
  struct Group {
    std::string name;
    Agg agg;
  };
  std::vector<Group> groups;
  for (auto& [name, durs] : by_name) groups.push_back({std::string(name), Aggregate(durs)});
  // sort_values("sum", ascending=False): ties keep name order.
  std::stable_sort(groups.begin(), groups.end(),
                   [](const Group& a, const Group& b) { return a.agg.sum > b.agg.sum; });
  std::vector<HtaKernelRow> rows;
  auto row_of = [&](const std::string& name, const Agg& a) {
    HtaKernelRow r;
    r.name = name;
    r.sum_us = a.sum;
    r.max_us = a.max;
    r.min_us = a.min;
    r.stddev = a.std;
    r.mean_us = a.mean;
    r.kernel_type = std::string(HtaKernelTypeName(type));
    r.rank = t.rank;
    return r;
  };
  if (static_cast<int>(groups.size()) <= options.num_kernels) {
    for (const Group& g : groups) rows.push_back(row_of(g.name, g.agg));
  } else {
    std::vector<double> cumsum;
    double running = 0;
    for (const Group& g : groups) cumsum.push_back(running += g.agg.sum);
    std::vector<double> sorted = cumsum;
    std::sort(sorted.begin(), sorted.end());
    double q = Quantile(sorted, options.duration_ratio);
    // Second groupby over the per-kernel sums: named kernels keep their sum, "others" gets the
    // statistics of the sums it absorbed.
    std::map<std::string, std::vector<double>> regrouped;
    for (size_t i = 0; i < groups.size(); ++i) {
      bool other = cumsum[i] > q || static_cast<int>(i) >= options.num_kernels;
      regrouped[other ? std::string("others") : groups[i].name].push_back(groups[i].agg.sum);
    }
    for (auto& [name, sums] : regrouped) rows.push_back(row_of(name, Aggregate(sums)));
  }
  return rows;
}

// _get_gpu_kernel_type_time: time per combination of kernel types running at once.
std::vector<std::pair<std::string, int64_t>> KernelTypeTime(const std::vector<GpuEvent>& gpu) {
  // Bit values follow HTA's analysis order: COMPUTATION 1, COMMUNICATION 2, MEMORY 4.
  const HtaKernelType order[] = {HtaKernelType::kComputation, HtaKernelType::kCommunication,
                                 HtaKernelType::kMemory};
  struct Edge {
    int64_t time_ns;
    int delta;
  };
  std::vector<Edge> edges;
  for (int i = 0; i < 3; ++i) {
    int value = 1 << i;
    for (const Span& s : HtaMerge(SpansOf(gpu, static_cast<int>(order[i])))) {
      edges.push_back({s.ts_ns, value});
      edges.push_back({s.end_ns, -value});
    }
  }
  // Ties: starts before ends, so that a kernel of one type starting exactly when one of another
  // type ends shows as a zero-length overlap, as it does in HTA's output.
  std::stable_sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) {
    if (a.time_ns != b.time_ns) return a.time_ns < b.time_ns;
    return a.delta > b.delta;
  });
  std::map<int, int64_t> by_running;
  int running = 0;
  for (size_t i = 0; i + 1 < edges.size(); ++i) {
    running += edges[i].delta;
    if (running <= 0) continue;
    double dur_us = Us(edges[i + 1].time_ns - edges[i].time_ns);
    by_running[running] += static_cast<int64_t>(dur_us);  // astype(int) truncates
  }
  std::vector<std::pair<std::string, int64_t>> out;
  for (auto& [mask, us] : by_running) {
    std::string label;
    for (int i = 0; i < 3; ++i) {
      if (mask & (1 << i)) {
        if (!label.empty()) label += " overlapping ";
        label += HtaKernelTypeName(order[i]);
      }
    }
    out.emplace_back(label, us);
  }
  return out;
}

void IdleForStream(int64_t stream, std::vector<const GpuEvent*> events, const HtaOptions& options,
                   HtaRankResult* out) {
  std::stable_sort(events.begin(), events.end(),
                   [](const GpuEvent* a, const GpuEvent* b) { return a->ts_ns < b->ts_ns; });
  std::vector<double> intervals[3];
  bool present[3] = {false, false, false};
  double prev_end = kNaN;
  for (const GpuEvent* e : events) {
    double ts = Us(e->ts_ns);
    double interval = ts - prev_end;  // NaN for the first kernel
    int category = 2;
    bool host_wait = e->runtime_ts_us > prev_end;  // false when either is NaN
    if (host_wait) {
      category = 0;
    } else if (interval < options.consecutive_kernel_delay_us) {
      category = 1;
    }
    present[category] = true;
    if (!std::isnan(interval)) intervals[category].push_back(interval);
    prev_end = Us(e->end_ns);
  }
  double total = 0;
  double sums[3] = {0, 0, 0};
  for (int c = 0; c < 3; ++c) {
    for (double v : intervals[c]) sums[c] += v;
    if (present[c]) total += sums[c];
  }
  for (int c = 0; c < 3; ++c) {
    if (!present[c]) continue;
    HtaIdleRow row;
    row.stream = stream;
    row.category = c;
    row.idle_time_us = NpRound(sums[c], 2);
    row.ratio = NpRound(sums[c] / total, 2);
    out->idle.push_back(row);
    HtaIdleStatsRow stats;
    stats.stream = stream;
    stats.category = c;
    std::vector<double> v = intervals[c];
    stats.count = static_cast<double>(v.size());
    std::sort(v.begin(), v.end());
    if (v.empty()) {
      stats.mean = stats.std = stats.min = stats.p25 = stats.p50 = stats.p75 = stats.max = kNaN;
    } else {
      double sum = 0;
      for (double x : v) sum += x;
      stats.mean = NpRound(sum / static_cast<double>(v.size()), 2);
      stats.std = NpRound(TwoPassStd(v), 2);
      stats.min = NpRound(v.front(), 2);
      stats.p25 = NpRound(Quantile(v, 0.25), 2);
      stats.p50 = NpRound(Quantile(v, 0.5), 2);
      stats.p75 = NpRound(Quantile(v, 0.75), 2);
      stats.max = NpRound(v.back(), 2);
    }
    out->idle_stats.push_back(stats);
  }
}

}  // namespace

double NpRound(double v, int decimals) {
  double scale = std::pow(10.0, decimals);
  return std::nearbyint(v * scale) / scale;
}

std::string PyFloat(double v) {
  if (std::isnan(v)) return "";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

HtaRankResult ComputeHtaRank(const RankTrace& t, const HtaOptions& options) {
  HtaRankResult result;
  result.rank = t.rank;
  // pandas' dtype for HTA's durations: int64 unless some event lacks ts or dur, or (without
  // HTA's rounding) has a fractional dur.
  result.integer_times =
      !t.hta_ts_missing && !t.hta_dur_missing && (t.hta_float_ts || !t.hta_dur_float);
  const size_t n = t.ops.size();
  std::vector<int64_t> ts(n), end(n);
  for (size_t i = 0; i < n; ++i) HtaTimes(t, t.ops[i], &ts[i], &end[i]);
  // Like HTA, work relative to the earliest event so that microseconds stay exact in doubles
  // (any whole-microsecond origin gives HTA's numbers: they are differences).
  if (n > 0) {
    int64_t base = *std::min_element(ts.begin(), ts.end());
    base -= ((base % 1000) + 1000) % 1000;  // whole microseconds
    for (size_t i = 0; i < n; ++i) {
      ts[i] -= base;
      end[i] -= base;
    }
  }

  // HTA's GPU events (GPUKernelFilter): a stream and a correlation, or a device-wide sync
  // (stream -1); everything else is a CPU event (CPUOperatorFilter), whatever its stream.
  std::vector<int8_t> sync_cache(t.strings.size(), -1);
  auto is_gpu = [&](const Op& op) {
    if (op.stream >= 0 && op.correlation >= 0) return true;
    int8_t& sync = sync_cache[op.name];
    if (sync < 0) {
      std::string_view name = t.strings.Get(op.name);
      sync = name == "Event Sync" || name == "Context Sync";
    }
    return sync == 1;
  };
  // ProfilerStep#N names (HTA's ^ProfilerStep#(\d+)); the last step's start among CPU events.
  std::unordered_set<StringId> step_names;
  bool any_cpu = false;
  for (const Op& op : t.ops) {
    if (op.hta_dropped) continue;
    std::string_view name = t.strings.Get(op.name);
    if (name.starts_with("ProfilerStep#") && name.size() > 13 &&
        std::isdigit(static_cast<unsigned char>(name[13]))) {
      step_names.insert(op.name);
    }
    if (!is_gpu(op)) any_cpu = true;
  }
  result.filtered = step_names.size() >= 2 && any_cpu;
  bool any_step_cpu = false;
  int64_t last_step_start = std::numeric_limits<int64_t>::min();
  for (size_t i = 0; i < n; ++i) {
    const Op& op = t.ops[i];
    if (!op.hta_dropped && !is_gpu(op) && step_names.count(op.name)) {
      any_step_cpu = true;
      last_step_start = std::max(last_step_start, ts[i]);
    }
  }
  auto cpu_kept = [&](size_t i) {
    return !result.filtered || (any_step_cpu && ts[i] < last_step_start);
  };
  // Correlation -> number of kept CPU events, and the last CPU event with it (any).
  std::unordered_map<int64_t, int> kept_count;
  std::unordered_map<int64_t, size_t> last_cpu;
  for (size_t i = 0; i < n; ++i) {
    const Op& op = t.ops[i];
    if (op.hta_dropped || is_gpu(op)) continue;
    if (cpu_kept(i)) kept_count[op.correlation]++;
    if (op.correlation != -1) last_cpu[op.correlation] = i;
  }
  // How many times HTA's filtered frame holds op i: GPU events once per kept CPU event with
  // their correlation (an inner merge), CPU events once if they start before the last step.
  auto copies_of = [&](size_t i) -> int {
    const Op& op = t.ops[i];
    if (op.hta_dropped) return 0;
    if (!result.filtered) return 1;
    if (!is_gpu(op)) return cpu_kept(i) ? 1 : 0;
    auto it = kept_count.find(op.correlation);
    return it == kept_count.end() ? 0 : it->second;
  };
  // HTA's "not found" correlation index 0 joins the trace's first event, where it is kept.
  const bool first_event_kept = t.first_op_is_first_event && n > 0 && copies_of(0) > 0;
  std::vector<int8_t> type_cache(t.strings.size(), -1);
  std::vector<GpuEvent> gpu;
  // Rows with a stream (stream != -1), in the filtered frame's order: the merged GPU events,
  // then the kept CPU events.
  auto add_rows = [&](bool gpu_events) {
    for (size_t i = 0; i < n; ++i) {
      const Op& op = t.ops[i];
      if (op.stream == -1 || (result.filtered && is_gpu(op) != gpu_events)) continue;
      int copies = copies_of(i);
      if (copies == 0) continue;
      double runtime_ts = kNaN;
      if (is_gpu(op)) {
        auto it = last_cpu.find(op.correlation);
        if (it != last_cpu.end()) {
          if (cpu_kept(it->second)) runtime_ts = Us(ts[it->second]);
        } else if (first_event_kept) {
          runtime_ts = Us(ts[0]);
        }
      }
      int8_t& type = type_cache[op.name];
      if (type < 0) type = static_cast<int8_t>(HtaClassify(t.strings.Get(op.name)));
      const bool idle_kernel = op.kind == EventKind::kKernel || op.kind == EventKind::kGpuMemcpy ||
                               op.kind == EventKind::kGpuMemset ||
                               op.kind == EventKind::kMtiaCcpEvent;
      GpuEvent e{ts[i],      end[i],     op.name, op.stream, static_cast<HtaKernelType>(type),
                 runtime_ts, idle_kernel};
      for (int c = 0; c < copies; ++c) gpu.push_back(e);
    }
  };
  add_rows(true);
  if (result.filtered) add_rows(false);
  if (gpu.empty()) {
    result.idle_pct = result.compute_pct = result.non_compute_pct = kNaN;
    result.comm_comp_overlap_pct = kNaN;
    return result;
  }

  // Temporal breakdown.
  std::vector<Span> all = HtaMerge(SpansOf(gpu, -1));
  int64_t kernel_ns = all.back().end_ns - all.front().ts_ns;
  int64_t idle_ns = kernel_ns - SpanSum(all);
  std::vector<Span> comp = HtaMerge(SpansOf(gpu, static_cast<int>(HtaKernelType::kComputation)));
  std::vector<Span> comm = HtaMerge(SpansOf(gpu, static_cast<int>(HtaKernelType::kCommunication)));
  int64_t compute_ns = SpanSum(comp);
  result.kernel_us = Us(kernel_ns);
  result.idle_us = Us(idle_ns);
  result.compute_us = Us(compute_ns);
  result.non_compute_us = Us(kernel_ns - compute_ns - idle_ns);
  result.idle_pct = NpRound(100 * (result.idle_us / result.kernel_us), 2);
  result.compute_pct = NpRound(100 * (result.compute_us / result.kernel_us), 2);
  result.non_compute_pct = NpRound(100 * (result.non_compute_us / result.kernel_us), 2);

  // Kernel types and top kernels.
  result.kernel_type_us = KernelTypeTime(gpu);
  for (HtaKernelType type :
       {HtaKernelType::kComputation, HtaKernelType::kCommunication, HtaKernelType::kMemory}) {
    for (HtaKernelRow& row : AggregateKernels(t, gpu, type, options)) {
      result.kernels.push_back(std::move(row));
    }
  }

  // Idle time per stream, streams in order of first appearance, over kernel categories only.
  std::vector<int64_t> streams;
  std::unordered_map<int64_t, std::vector<const GpuEvent*>> by_stream;
  for (const GpuEvent& e : gpu) {
    if (!e.idle_kernel) continue;  // HTA leaves cuda_sync and other categories out here
    auto [it, inserted] = by_stream.try_emplace(e.stream);
    if (inserted) streams.push_back(e.stream);
    it->second.push_back(&e);
  }
  for (int64_t s : streams) IdleForStream(s, by_stream[s], options, &result);

  // Communication / computation overlap: time both run over communication time.
  int64_t comm_ns = SpanSum(comm);
  int64_t both_ns = 0;
  {
    size_t i = 0, j = 0;
    while (i < comp.size() && j < comm.size()) {
      int64_t lo = std::max(comp[i].ts_ns, comm[j].ts_ns);
      int64_t hi = std::min(comp[i].end_ns, comm[j].end_ns);
      if (hi > lo) both_ns += hi - lo;
      if (comp[i].end_ns < comm[j].end_ns) {
        ++i;
      } else {
        ++j;
      }
    }
  }
  result.comm_comp_overlap_pct =
      comm_ns == 0 ? kNaN : NpRound(100 * (Us(both_ns) / Us(comm_ns)), 2);
  return result;
}

std::vector<HtaKernelTypeRow> HtaKernelTypeTable(const std::vector<HtaRankResult>& ranks) {
  std::map<std::string, int64_t> sums;  // groupby sorts by label
  for (const HtaRankResult& r : ranks) {
    for (const auto& [label, us] : r.kernel_type_us) sums[label] += us;
  }
  std::vector<HtaKernelTypeRow> rows;
  int64_t total = 0;
  for (const auto& [label, us] : sums) {
    rows.push_back({label, us, 0});
    total += us;
  }
  std::stable_sort(
      rows.begin(), rows.end(),
      [](const HtaKernelTypeRow& a, const HtaKernelTypeRow& b) { return a.sum_us > b.sum_us; });
  for (HtaKernelTypeRow& r : rows) {
    r.percentage = NpRound(static_cast<double>(r.sum_us) / static_cast<double>(total) * 100, 1);
  }
  return rows;
}

namespace {

const char* kIdleCategory[] = {"host_wait", "kernel_wait", "other"};

}  // namespace

Status WriteHtaCsvs(const std::vector<HtaRankResult>& ranks, const std::string& dir,
                    const std::string& prefix) {
  // Each table is built in memory and written checked and atomically (a full disk is an error,
  // never a truncated CSV reported as success).
  std::ostringstream f;
  auto write = [&](const char* what) -> Status {
    Status s = WriteFileAtomically(fmt::format("{}/{}.{}.csv", dir, prefix, what), f.str());
    f.str("");
    return s;
  };
  // One dtype per column over all ranks, as pandas concatenates them.
  const bool ints = std::all_of(ranks.begin(), ranks.end(),
                                [](const HtaRankResult& r) { return r.integer_times; });
  auto time = [&](double v) {
    return ints && std::isfinite(v) ? fmt::format("{}", static_cast<int64_t>(v)) : PyFloat(v);
  };
  f << "rank,idle_time(us),compute_time(us),non_compute_time(us),kernel_time(us),"
       "idle_time_pctg,compute_time_pctg,non_compute_time_pctg\n";
  for (const HtaRankResult& r : ranks) {
    f << r.rank << ',' << time(r.idle_us) << ',' << time(r.compute_us) << ','
      << time(r.non_compute_us) << ',' << time(r.kernel_us) << ',' << PyFloat(r.idle_pct) << ','
      << PyFloat(r.compute_pct) << ',' << PyFloat(r.non_compute_pct) << '\n';
  }
  TITAN_RETURN_IF_ERROR(write("temporal_breakdown"));
  f << "kernel_type,sum,percentage\n";
  for (const HtaKernelTypeRow& row : HtaKernelTypeTable(ranks)) {
    f << row.kernel_type << ',' << row.sum_us << ',' << PyFloat(row.percentage) << '\n';
  }
  TITAN_RETURN_IF_ERROR(write("kernel_type_breakdown"));
  f << "name,sum (us),max (us),min (us),stddev,mean (us),kernel_type,rank\n";
  std::vector<const HtaKernelRow*> kernels;
  for (const HtaRankResult& r : ranks) {
    for (const HtaKernelRow& k : r.kernels) kernels.push_back(&k);
  }
  std::stable_sort(kernels.begin(), kernels.end(),
                   [](const HtaKernelRow* a, const HtaKernelRow* b) {
                     if (a->kernel_type != b->kernel_type) return a->kernel_type < b->kernel_type;
                     if (a->name != b->name) return a->name < b->name;
                     return a->rank < b->rank;
                   });
  for (const HtaKernelRow* k : kernels) {
    f << CsvField(k->name) << ',' << time(k->sum_us) << ',' << time(k->max_us) << ','
      << time(k->min_us) << ',' << PyFloat(k->stddev) << ',' << PyFloat(k->mean_us) << ','
      << k->kernel_type << ',' << k->rank << '\n';
  }
  TITAN_RETURN_IF_ERROR(write("kernel_breakdown"));
  f << "rank,stream,idle_category,idle_time,idle_time_ratio\n";
  for (const HtaRankResult& r : ranks) {
    for (const HtaIdleRow& row : r.idle) {
      f << r.rank << ',' << row.stream << ',' << kIdleCategory[row.category] << ','
        << PyFloat(row.idle_time_us) << ',' << PyFloat(row.ratio) << '\n';
    }
  }
  TITAN_RETURN_IF_ERROR(write("idle_time_breakdown"));
  f << "idle_category,rank,stream,count,mean,std,min,25%,50%,75%,max\n";
  for (const HtaRankResult& r : ranks) {
    for (const HtaIdleStatsRow& s : r.idle_stats) {
      f << kIdleCategory[s.category] << ',' << r.rank << ',' << s.stream << ',' << PyFloat(s.count)
        << ',' << PyFloat(s.mean) << ',' << PyFloat(s.std) << ',' << PyFloat(s.min) << ','
        << PyFloat(s.p25) << ',' << PyFloat(s.p50) << ',' << PyFloat(s.p75) << ',' << PyFloat(s.max)
        << '\n';
    }
  }
  TITAN_RETURN_IF_ERROR(write("idle_interval_stats"));
  f << "rank,comp_comm_overlap_pctg\n";
  for (const HtaRankResult& r : ranks)
    f << r.rank << ',' << PyFloat(r.comm_comp_overlap_pct) << '\n';
  TITAN_RETURN_IF_ERROR(write("comm_comp_overlap"));
  return OkStatus();
}

}  // namespace titan::trace
