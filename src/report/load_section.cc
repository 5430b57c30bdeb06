// Report sections for titan load: one run (--json) and a sweep (load sweep --json).
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "src/report/fields.h"
#include "src/report/sections.h"

namespace titan::report {

namespace {

// The distributions a run reports, in the order of its summary table.
constexpr std::pair<const char*, const char*> kDistributions[] = {
    {"ttft", "TTFT"},
    {"ttft_from_send", "TTFT from send"},
    {"e2e", "E2E"},
    {"e2e_from_send", "E2E from send"},
    {"itl", "ITL"},
    {"tpot", "TPOT"},
    {"schedule_lag", "schedule lag"},
    {"concurrency_wait", "concurrency wait"},
};

std::string RunTitle(const Fields& run) {
  const Fields config = run.Object("config");
  return fmt::format("Load test of {} ({})", config.StrOr("url", "?"),
                     config.StrOr("trace", "").empty() ? config.StrOr("arrivals", "?")
                                                       : "trace " + config.Str("trace"));
}

// SLO thresholds of latency gates on `metric` (ttft, e2e, itl, tpot) as reference lines.
std::vector<HLine> SloLines(const Fields& run, std::string_view metric) {
  std::vector<HLine> lines;
  if (!run.Has("slo")) return lines;
  const Fields slo = run.Object("slo");
  const nlohmann::json& gates = slo.ArrayOr("gates");
  for (size_t i = 0; i < gates.size(); ++i) {
    const Fields gate = slo.Element("gates", i);
    if (gate.StrOr("metric", "") != metric || !gate.Has("threshold_ms")) continue;
    lines.push_back({gate.Num("threshold_ms"), "SLO " + gate.Str("gate"), "bad"});
  }
  return lines;
}

void AddLatencyTable(const Fields& latency, Section* section) {
  Table table{"Latency (ms)",
              "TTFT and E2E count from the planned send time, so a stall of the server shows in "
              "full; 'from send' is what a closed-loop tool would report.",
              {"metric", "count", "mean", "p50", "p90", "p95", "p99", "p99.9", "max"},
              {}};
  for (const auto& [key, name] : kDistributions) {
    if (!latency.Has(key)) continue;
    const Fields d = latency.Object(key);
    if (d.Num("count") <= 0) continue;
    table.rows.push_back({name, d.Num("count"), d.Num("mean_ms"), d.Num("p50_ms"), d.Num("p90_ms"),
                          d.Num("p95_ms"), d.Num("p99_ms"), d.Num("p999_ms"), d.Num("max_ms")});
  }
  section->Add(std::move(table));
}

// Latency by percentile on a "nines" axis: x = 1 / (1 - q), so p50, p90, p99, p99.9 are evenly
// spaced and the tail, where transients live, gets most of the width.
void AddPercentilePlot(const Fields& run, const Fields& latency, Section* section) {
  Plot plot;
  plot.title = "Latency distribution (by percentile)";
  plot.note =
      "The CDF turned on its side: each line is the latency below which that share of "
      "requests finished. The x axis spreads the tail (p90, p99, p99.9).";
  plot.x = {"percentile", "", true};
  plot.x.format = "percentile";
  plot.y = {"latency", "ms", true};
  std::map<double, std::vector<double>> by_q;  // x -> one value per series
  std::vector<std::string> keys;
  for (const auto& [key, name] : {std::pair{"ttft", "TTFT"}, std::pair{"e2e", "E2E"},
                                  std::pair{"itl", "ITL"}, std::pair{"tpot", "TPOT"}}) {
    if (!latency.Has(key)) continue;
    const Fields d = latency.Object(key);
    const nlohmann::json& curve = d.ArrayOr("percentiles");
    if (d.Num("count") <= 0) continue;
    std::vector<std::pair<double, double>> points;
    for (size_t i = 0; i < curve.size(); ++i) {
      const nlohmann::json& p = curve[i];
      if (!p.is_array() || p.size() != 2 || !p[0].is_number() || !p[1].is_number()) {
        throw InputError(
            fmt::format("{}.{}.percentiles[{}]: expected [quantile, ms]", latency.where(), key, i));
      }
      points.emplace_back(p[0].get<double>(), p[1].get<double>());
    }
    if (points.empty()) {  // an older titan load: only the summary quantiles
      for (auto [q, field] :
           {std::pair{0.5, "p50_ms"}, std::pair{0.9, "p90_ms"}, std::pair{0.95, "p95_ms"},
            std::pair{0.99, "p99_ms"}, std::pair{0.999, "p999_ms"}}) {
        points.emplace_back(q, d.Num(field));
      }
    }
    const size_t column = keys.size();
    keys.push_back(key);
    plot.series.push_back({name, "ms"});
    for (auto [q, ms] : points) {
      if (q >= 1 || q < 0) continue;  // max is in the table; x would be infinite
      auto& row = by_q[RoundSignificant(1 / (1 - q), 6)];
      row.resize(column + 1, kNaN);
      row[column] = ms > 0 ? ms : kNaN;
    }
  }
  if (plot.series.empty()) return;
  for (auto& [x, row] : by_q) {
    row.resize(plot.series.size(), kNaN);
    plot.xs.push_back(x);
  }
  plot.ys.assign(plot.series.size(), {});
  for (auto& [x, row] : by_q) {
    for (size_t k = 0; k < row.size(); ++k) plot.ys[k].push_back(row[k]);
  }
  for (Series& s : plot.series) s.span_gaps = true;
  for (const std::string& key : keys) {
    for (HLine& line : SloLines(run, key)) plot.hlines.push_back(std::move(line));
  }
  section->Add(std::move(plot));
}

// Per second: bursts (planned at least 3x the median and at least 5 more) and stalls (nothing
// completed while requests were in flight), marked on the timeline plots.
std::vector<Mark> TimelineMarks(const std::vector<double>& planned,
                                const std::vector<double>& completed,
                                const std::vector<double>& in_flight,
                                const std::vector<double>& seconds) {
  std::vector<Mark> marks;
  const double median = Percentile(planned, 0.5);
  for (size_t i = 0; i < seconds.size(); ++i) {
    const bool burst = planned[i] >= 3 * median && planned[i] >= median + 5;
    const bool stall = completed[i] == 0 && in_flight[i] > 0;
    if (!burst && !stall) continue;
    const std::string label = burst ? "burst" : "stall";
    if (!marks.empty() && marks.back().label == label && *marks.back().x2 == seconds[i]) {
      marks.back().x2 = seconds[i] + 1;
      continue;
    }
    marks.push_back({seconds[i], seconds[i] + 1, label, burst ? "warn" : "bad"});
  }
  return marks;
}

void AddTimeline(const Fields& run, Section* section) {
  const nlohmann::json& timeline = run.ArrayOr("timeline");
  if (timeline.empty()) return;
  std::vector<double> seconds, planned, completed, errors, in_flight, p50, p99, tokens;
  for (size_t i = 0; i < timeline.size(); ++i) {
    const Fields b = run.Element("timeline", i);
    seconds.push_back(b.Num("second"));
    planned.push_back(b.Num("planned"));
    completed.push_back(b.Num("completed"));
    errors.push_back(b.Num("errors"));
    in_flight.push_back(b.Num("in_flight_max"));
    tokens.push_back(b.NumOr("output_tokens", kNaN));
    const double a = b.NumOr("ttft_p50_ms", kNaN), z = b.NumOr("ttft_p99_ms", kNaN);
    p50.push_back(a > 0 ? a : kNaN);
    p99.push_back(z > 0 ? z : kNaN);
  }
  std::vector<Mark> marks = TimelineMarks(planned, completed, in_flight, seconds);
  Plot rates;
  rates.title = "Requests per second";
  rates.note =
      "Bursts (3x the median send rate) and stalls (nothing completed while requests "
      "were in flight) are shaded.";
  rates.x = {"time since start", "s"};
  rates.y = {"requests", "1/s"};
  rates.y2 = Axis{"in flight (peak)", "requests"};
  rates.series = {{"planned", "1/s", "step"},
                  {"completed", "1/s", "step"},
                  {"errors", "1/s", "bars", "#c62828"},
                  {"in flight (peak)", "", "line", "", true, true}};
  rates.xs = seconds;
  rates.ys = {planned, completed, errors, in_flight};
  rates.marks = marks;
  section->Add(std::move(rates));

  Plot ttft;
  ttft.title = "TTFT per second";
  ttft.x = {"time since start", "s"};
  ttft.y = {"TTFT", "ms", true};
  ttft.series = {{"p50", "ms"}, {"p99", "ms"}};
  ttft.xs = seconds;
  ttft.ys = {p50, p99};
  ttft.marks = marks;
  ttft.hlines = SloLines(run, "ttft");
  section->Add(std::move(ttft));
}

void AddServerMetrics(const Fields& run, Section* section) {
  if (!run.Has("server_metrics")) return;
  const Fields metrics = run.Object("server_metrics");
  const nlohmann::json& series = metrics.ArrayOr("series");
  if (series.empty()) return;
  Plot plot;
  plot.title = "Server metrics (scraped)";
  plot.note =
      "Scraped from the server's /metrics on the load test's clock: the queue "
      "(waiting, deferred) lines up with the latencies above.";
  plot.x = {"time since start", "s"};
  plot.y = {"requests", ""};
  std::map<double, std::vector<double>> rows;
  bool any_ratio = false;
  for (size_t k = 0; k < series.size(); ++k) {
    const Fields s = metrics.Element("series", k);
    const std::string name = s.Str("series");
    const nlohmann::json& t = s.Array("time_s");
    const nlohmann::json& v = s.Array("value");
    if (t.size() != v.size()) {
      throw InputError(fmt::format("{}: time_s and value differ in length", s.where()));
    }
    const bool ratio = name.find("_perc") != std::string::npos;
    any_ratio = any_ratio || ratio;
    plot.series.push_back({name, ratio ? "fraction" : "", "step", "", false, ratio});
    plot.series.back().span_gaps = true;
    for (size_t i = 0; i < t.size(); ++i) {
      if (!t[i].is_number() || !v[i].is_number()) {
        throw InputError(fmt::format("{}: time_s and value must hold numbers", s.where()));
      }
      auto& row = rows[t[i].get<double>()];
      row.resize(series.size(), kNaN);
      row[k] = v[i].get<double>();
    }
  }
  if (any_ratio) plot.y2 = Axis{"cache usage", "fraction"};
  plot.ys.assign(series.size(), {});
  for (auto& [x, row] : rows) {
    row.resize(series.size(), kNaN);
    plot.xs.push_back(x);
    for (size_t k = 0; k < row.size(); ++k) plot.ys[k].push_back(row[k]);
  }
  section->Add(std::move(plot));
}

void AddRunStats(const Fields& run, Section* section) {
  const Fields requests = run.Object("requests");
  const Fields latency = run.Object("latency");
  std::vector<Stat> stats = {
      {"requests planned", requests.Num("planned")},
      {"ok", requests.Num("ok"), "ok"},
      {"failed", requests.Num("failed"), requests.Num("failed") > 0 ? "bad" : ""},
      {"achieved requests/s", run.Num("achieved_rate")},
  };
  if (run.Has("tokens"))
    stats.push_back({"output tokens/s", run.Object("tokens").Num("output_per_s")});
  if (latency.Has("ttft")) stats.push_back({"P99 TTFT (ms)", latency.Object("ttft").Num("p99_ms")});
  if (latency.Has("e2e")) stats.push_back({"P99 E2E (ms)", latency.Object("e2e").Num("p99_ms")});
  if (run.Has("slo") && !run.Object("slo").ArrayOr("gates").empty()) {
    const Fields slo = run.Object("slo");
    stats.push_back(
        {"SLO", slo.Bool("passed") ? "met" : "MISSED", slo.Bool("passed") ? "ok" : "bad"});
    stats.push_back({"SLO attainment", fmt::format("{:.1f} %", 100 * slo.Num("attainment"))});
    stats.push_back({"goodput (req/s)", slo.Num("goodput_rps")});
  }
  if (run.Has("valid") && !run.Bool("valid")) stats.push_back({"run", "INVALID", "bad"});
  section->Stats(std::move(stats));
  for (const nlohmann::json& note : run.ArrayOr("notes")) {
    if (note.is_string()) section->Text(note.get<std::string>(), "warn");
  }
  const auto errors_it = requests.json().find("errors");
  if (errors_it != requests.json().end() && errors_it->is_object() && !errors_it->empty()) {
    const nlohmann::json& errors = *errors_it;
    Table table{"Errors by class", "", {"class", "requests"}, {}};
    for (auto it = errors.begin(); it != errors.end(); ++it) {
      table.rows.push_back({it.key(), it->is_number() ? it->get<double>() : kNaN});
    }
    section->Add(std::move(table));
  }
}

}  // namespace

void AddLoadRun(const Input& input, Report* report) {
  const Fields run(input.doc, input.path);
  Section section(RunTitle(run), input.path);
  AddRunStats(run, &section);
  const Fields latency = run.Object("latency");
  AddLatencyTable(latency, &section);
  AddPercentilePlot(run, latency, &section);
  AddTimeline(run, &section);
  AddServerMetrics(run, &section);
  report->sections.push_back(std::move(section));
}

void AddLoadSweep(const Input& input, Report* report) {
  const Fields sweep(input.doc, input.path);
  const nlohmann::json& probes = sweep.Array("probes");
  struct Probe {
    double rate, achieved, ttft_mean, ttft_p99, e2e_mean, e2e_p99, failed;
    bool passed;
  };
  std::vector<Probe> points;
  std::vector<HLine> ttft_slo, e2e_slo;
  for (size_t i = 0; i < probes.size(); ++i) {
    const Fields p = sweep.Element("probes", i);
    const Fields run = p.Object("run");
    const Fields latency = run.Object("latency");
    points.push_back({p.Num("rate"), run.Num("achieved_rate"),
                      latency.Object("ttft").Num("mean_ms"), latency.Object("ttft").Num("p99_ms"),
                      latency.Object("e2e").Num("mean_ms"), latency.Object("e2e").Num("p99_ms"),
                      run.Object("requests").Num("failed"), p.Bool("passed")});
    if (i == 0) {
      ttft_slo = SloLines(run, "ttft");
      e2e_slo = SloLines(run, "e2e");
    }
  }
  std::stable_sort(points.begin(), points.end(),
                   [](const Probe& a, const Probe& b) { return a.rate < b.rate; });
  const bool knee_found = sweep.Bool("knee_found");
  const double knee = knee_found ? sweep.Num("knee_rate") : kNaN;
  Section section(fmt::format("Load sweep of {}", sweep.Object("config").StrOr("url", "?")),
                  input.path);
  section.Stats({{"probes", static_cast<double>(points.size())},
                 {"knee (requests/s)", knee_found ? nlohmann::json(knee) : nlohmann::json("none"),
                  knee_found ? "ok" : "bad"}});
  section.Text(sweep.StrOr("verdict", ""));
  for (const auto& [title, mean_of, p99_of, lines] :
       {std::tuple{"TTFT against offered load", &Probe::ttft_mean, &Probe::ttft_p99, ttft_slo},
        std::tuple{"E2E against offered load", &Probe::e2e_mean, &Probe::e2e_p99, e2e_slo}}) {
    Plot plot;
    plot.title = title;
    plot.note =
        "Each point is one probe at a fixed open-loop rate; past the knee P99 grows "
        "much faster than the mean.";
    plot.x = {"offered rate", "requests/s"};
    plot.y = {"latency", "ms", true};
    plot.series = {{"mean", "ms", "line"}, {"p99", "ms", "line"}};
    plot.ys.assign(2, {});
    for (const Probe& p : points) {
      plot.xs.push_back(p.rate);
      plot.ys[0].push_back(p.*mean_of);
      plot.ys[1].push_back(p.*p99_of);
    }
    plot.hlines = lines;
    if (knee_found) plot.marks.push_back({knee, std::nullopt, "knee", "ok"});
    section.Add(std::move(plot));
  }
  Plot throughput;
  throughput.title = "Throughput against offered load";
  throughput.x = {"offered rate", "requests/s"};
  throughput.y = {"achieved rate", "requests/s"};
  throughput.series = {{"achieved", "requests/s", "line"},
                       {"offered", "requests/s", "line", "#7f7f7f", true}};
  throughput.ys.assign(2, {});
  for (const Probe& p : points) {
    throughput.xs.push_back(p.rate);
    throughput.ys[0].push_back(p.achieved);
    throughput.ys[1].push_back(p.rate);
  }
  if (knee_found) throughput.marks.push_back({knee, std::nullopt, "knee", "ok"});
  section.Add(std::move(throughput));
  Table table{"Probes",
              "",
              {"rate/s", "achieved/s", "TTFT mean ms", "TTFT p99 ms", "E2E mean ms", "E2E p99 ms",
               "errors", "SLO"},
              {}};
  for (const Probe& p : points) {
    table.rows.push_back({p.rate, p.achieved, p.ttft_mean, p.ttft_p99, p.e2e_mean, p.e2e_p99,
                          p.failed, p.passed ? "ok" : "MISSED"});
  }
  section.Add(std::move(table));
  report->sections.push_back(std::move(section));
}

}  // namespace titan::report
