#include "src/load/output.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <queue>

#include <fmt/format.h>

#include "src/base/atomic_file.h"
#include "src/base/clock.h"
#include "src/base/duration.h"
#include "src/load/openai.h"

namespace titan::load {
namespace {

double Ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }
double MsOrNull(int64_t t, int64_t from) { return t == kNever ? -1 : Ms(t - from); }

}  // namespace

namespace {

void Row(std::string* out, std::string_view name, const Distribution& d) {
  if (d.count == 0) {
    fmt::format_to(std::back_inserter(*out), "  {:<18} {:>9}\n", name, "-");
    return;
  }
  fmt::format_to(std::back_inserter(*out), "  {:<18} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n",
                 name, FormatDurationShort(static_cast<int64_t>(d.mean)),
                 FormatDurationShort(d.p50), FormatDurationShort(d.p90), FormatDurationShort(d.p95),
                 FormatDurationShort(d.p99), FormatDurationShort(d.p999),
                 FormatDurationShort(d.max));
}

}  // namespace

std::string FormatSummary(const Summary& s, const RunRecords& run) {
  std::string out;
  auto add = [&]<typename... Args>(fmt::format_string<Args...> format, Args&&... args) {
    fmt::format_to(std::back_inserter(out), format, std::forward<Args>(args)...);
  };
  add("requests: {} planned, {} ok, {} failed over {:.1f} s (schedule {:.1f} s)\n", s.planned,
      s.completed_ok, s.failed, s.elapsed_s, s.duration_s);
  add("rate: offered {:.1f}/s, achieved {:.1f}/s; output {:.0f} tok/s (peak {:.0f} in 1 s), input "
      "{:.0f} tok/s; tokens from {}\n",
      s.offered_rate, s.achieved_rate, s.output_tokens_per_s, s.peak_output_tokens_per_s,
      s.input_tokens_per_s, TokenSourceName(s.tokens_from));
  add("\n  {:<18} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n", "latency", "mean", "p50", "p90",
      "p95", "p99", "p99.9", "max");
  Row(&out, "ttft", s.ttft);
  Row(&out, "ttft (from send)", s.ttft_from_send);
  Row(&out, "e2e", s.e2e);
  Row(&out, "e2e (from send)", s.e2e_from_send);
  Row(&out, s.itl_from_histogram ? "itl (histogram)" : "itl", s.itl);
  Row(&out, "tpot", s.tpot);
  Row(&out, "schedule lag", s.schedule_lag);
  if (run.max_concurrency > 0) Row(&out, "concurrency wait", s.queue_wait);
  add("  (ttft and e2e count from the planned send time: a stall of the server shows in full; "
      "'from send' is what a closed-loop tool would report)\n");
  if (s.failed > 0) {
    add("\nerrors:");
    for (int i = 1; i < kRequestErrorCount; ++i) {
      if (s.errors_by_class[i] > 0) {
        add(" {} {}", RequestErrorName(static_cast<RequestError>(i)), s.errors_by_class[i]);
      }
    }
    add("\n");
  }
  if (!run.scrape_series.empty() || run.scrape_errors > 0) {
    add("\nserver metrics: {} series, {} samples", run.scrape_series.size(), run.scrapes.size());
    if (run.scrape_errors > 0) {
      add(", {} scrapes failed (last: {})", run.scrape_errors, run.last_scrape_error);
    }
    add("\n");
  }
  if (!s.gates.empty()) {
    add("\nSLO: {}\n", s.slo_passed ? "met" : "MISSED");
    for (const GateResult& g : s.gates) {
      if (g.gate.is_error_rate) {
        add("  {:<20} measured {:.2f}%  {}\n", g.gate.text, g.measured * 100,
            g.passed ? "ok" : "MISSED");
      } else {
        add("  {:<20} measured {:<9}  {}\n", g.gate.text,
            FormatDurationShort(static_cast<int64_t>(g.measured)), g.passed ? "ok" : "MISSED");
      }
    }
    add("  attainment {:.1f}% of requests; goodput {:.2f} req/s\n", s.slo_attainment * 100,
        s.goodput_rps);
  }
  if (!s.valid) {
    for (const std::string& reason : s.invalid_reasons) add("\nINVALID RUN: {}\n", reason);
  } else if (!s.invalid_reasons.empty()) {
    for (const std::string& reason : s.invalid_reasons) add("\nnote: {}\n", reason);
  }
  add("client: {:.2f} CPU-seconds on {} thread(s)\n", s.client_cpu_seconds, run.threads);
  return out;
}

nlohmann::json DistributionJson(const Distribution& d) {
  nlohmann::json curve = nlohmann::json::array();
  for (const auto& [q, v] : d.curve) curve.push_back({q, Ms(v)});
  return {{"count", d.count},    {"mean_ms", d.mean / 1e6},
          {"min_ms", Ms(d.min)}, {"p50_ms", Ms(d.p50)},
          {"p90_ms", Ms(d.p90)}, {"p95_ms", Ms(d.p95)},
          {"p99_ms", Ms(d.p99)}, {"p999_ms", Ms(d.p999)},
          {"max_ms", Ms(d.max)}, {"percentiles", std::move(curve)}};
}

nlohmann::json RunJson(const Summary& s, const RunRecords& run, const nlohmann::json& config) {
  nlohmann::json errors = nlohmann::json::object();
  for (int i = 1; i < kRequestErrorCount; ++i) {
    if (s.errors_by_class[i] > 0) {
      errors[std::string(RequestErrorName(static_cast<RequestError>(i)))] = s.errors_by_class[i];
    }
  }
  nlohmann::json gates = nlohmann::json::array();
  for (const GateResult& g : s.gates) {
    nlohmann::json gate = {{"gate", g.gate.text}, {"passed", g.passed}};
    if (g.gate.is_error_rate) {
      gate["measured_error_rate"] = g.measured;
      gate["max_error_rate"] = g.gate.max_error_rate;
    } else {
      gate["metric"] = MetricName(g.gate.metric);
      gate["quantile"] = g.gate.quantile;
      gate["measured_ms"] = g.measured / 1e6;
      gate["threshold_ms"] = Ms(g.gate.threshold_ns);
    }
    gates.push_back(gate);
  }
  nlohmann::json timeline = nlohmann::json::array();
  for (const SecondBucket& b : s.timeline) {
    timeline.push_back({{"second", b.second},
                        {"planned", b.planned},
                        {"completed", b.completed},
                        {"errors", b.errors},
                        {"in_flight_max", b.in_flight_max},
                        {"output_tokens", b.output_tokens},
                        {"ttft_p50_ms", Ms(b.ttft_p50_ns)},
                        {"ttft_p99_ms", Ms(b.ttft_p99_ns)}});
  }
  nlohmann::json series = nlohmann::json::array();
  for (size_t i = 0; i < run.scrape_series.size(); ++i) {
    nlohmann::json t = nlohmann::json::array(), v = nlohmann::json::array();
    for (const ScrapeSample& sample : run.scrapes) {
      if (sample.series != i || !std::isfinite(sample.value)) continue;
      t.push_back(sample.time_ns / 1e9);
      v.push_back(sample.value);
    }
    series.push_back({{"series", run.scrape_series[i]}, {"time_s", t}, {"value", v}});
  }
  return {
      {"kind", "titan.load.run"},
      {"version", 1},
      {"config", config},
      {"start_wall_ns", run.start_wall_ns},
      {"valid", s.valid},
      {"notes", s.invalid_reasons},
      {"requests",
       {{"planned", s.planned}, {"ok", s.completed_ok}, {"failed", s.failed}, {"errors", errors}}},
      {"duration_s", s.duration_s},
      {"elapsed_s", s.elapsed_s},
      {"offered_rate", s.offered_rate},
      {"achieved_rate", s.achieved_rate},
      {"tokens",
       {{"prompt", s.prompt_tokens},
        {"output", s.output_tokens},
        {"output_per_s", s.output_tokens_per_s},
        {"output_per_s_peak", s.peak_output_tokens_per_s},
        {"input_per_s", s.input_tokens_per_s},
        {"source", TokenSourceName(s.tokens_from)}}},
      {"latency",
       {{"ttft", DistributionJson(s.ttft)},
        {"ttft_from_send", DistributionJson(s.ttft_from_send)},
        {"e2e", DistributionJson(s.e2e)},
        {"e2e_from_send", DistributionJson(s.e2e_from_send)},
        {"itl", DistributionJson(s.itl)},
        {"itl_from_histogram", s.itl_from_histogram},
        {"tpot", DistributionJson(s.tpot)},
        {"schedule_lag", DistributionJson(s.schedule_lag)},
        {"concurrency_wait", DistributionJson(s.queue_wait)}}},
      {"lag_bound_ms", Ms(s.lag_bound_ns)},
      {"slo",
       {{"passed", s.slo_passed},
        {"gates", gates},
        {"attainment", s.slo_attainment},
        {"goodput_rps", s.goodput_rps}}},
      {"timeline", timeline},
      {"server_metrics", {{"series", series}, {"scrape_errors", run.scrape_errors}}},
      {"client",
       {{"cpu_seconds", s.client_cpu_seconds},
        {"threads", run.threads},
        {"warm_connections", run.warm_connections},
        {"stale_connection_retries", run.stale_connection_retries}}},
  };
}

Status WriteRecords(const std::string& path, const RunRecords& run) {
  const bool csv = path.size() >= 4 && path.ends_with(".csv");
  // One list of columns for both formats: name and the value as written.
  std::vector<std::pair<std::string_view, std::string>> columns;
  std::string out;
  out.reserve(run.records.size() * 320);
  for (const RequestRecord& r : run.records) {
    int64_t max_gap = 0;
    for (uint32_t i = 0; i < r.itl_count; ++i) {
      max_gap = std::max(max_gap, run.itl_ns[r.itl_begin + i]);
    }
    auto ms = [](double v) { return fmt::format("{:.3f}", v); };
    auto quoted = [csv](std::string_view v) {
      return csv ? std::string(v) : fmt::format("\"{}\"", v);
    };
    columns = {
        {"index", std::to_string(r.index)},
        {"planned_ms", ms(Ms(r.planned_ns))},
        {"dispatched_ms", ms(Ms(r.dispatched_ns))},
        {"sent_ms", ms(MsOrNull(r.sent_ns, 0))},
        {"first_byte_ms", ms(MsOrNull(r.first_byte_ns, 0))},
        {"first_token_ms", ms(MsOrNull(r.first_token_ns, 0))},
        {"last_token_ms", ms(MsOrNull(r.last_token_ns, 0))},
        {"end_ms", ms(MsOrNull(r.end_ns, 0))},
        {"ttft_ms", ms(r.first_token_ns == kNever ? -1 : Ms(r.first_token_ns - r.planned_ns))},
        {"e2e_ms", ms(r.end_ns == kNever ? -1 : Ms(r.end_ns - r.planned_ns))},
        {"prompt_tokens", std::to_string(r.prompt_tokens)},
        {"output_tokens", std::to_string(r.output_tokens)},
        {"tokens_from", quoted(TokenSourceName(r.tokens_from))},
        {"chunks", std::to_string(r.content_chunks)},
        {"status", std::to_string(r.http_status)},
        {"error", quoted(RequestErrorName(r.error))},
        {"group", std::to_string(r.group)},
        {"max_itl_ms", ms(Ms(max_gap))},
        {"server_prompt_ms", fmt::format("{}", r.server_prompt_ms)},
        {"server_per_token_ms", fmt::format("{}", r.server_predicted_per_token_ms)},
        {"server_cache_tokens", std::to_string(r.server_cache_tokens)},
    };
    if (csv && out.empty()) {
      for (size_t i = 0; i < columns.size(); ++i) {
        fmt::format_to(std::back_inserter(out), "{}{}", i ? "," : "", columns[i].first);
      }
      out.push_back('\n');
    }
    for (size_t i = 0; i < columns.size(); ++i) {
      if (csv) {
        fmt::format_to(std::back_inserter(out), "{}{}", i ? "," : "", columns[i].second);
      } else {
        fmt::format_to(std::back_inserter(out), "{}\"{}\":{}", i ? "," : "{", columns[i].first,
                       columns[i].second);
      }
    }
    out.append(csv ? "\n" : "}\n");
  }
  return WriteFileAtomically(path, out);
}

Status WriteTimelineCsv(const std::string& path, const Summary& s) {
  std::string out =
      "second,planned,completed,errors,in_flight_max,output_tokens,ttft_p50_ms,ttft_p99_ms\n";
  for (const SecondBucket& b : s.timeline) {
    fmt::format_to(std::back_inserter(out), "{},{},{},{},{},{},{:.3f},{:.3f}\n", b.second,
                   b.planned, b.completed, b.errors, b.in_flight_max, b.output_tokens,
                   Ms(b.ttft_p50_ns), Ms(b.ttft_p99_ns));
  }
  return WriteFileAtomically(path, out);
}

Status WritePerfetto(const std::string& path, const Summary& s, const RunRecords& run,
                     size_t max_slices) {
  constexpr int kRequestsPid = 10, kCountersPid = 11, kServerPid = 12;
  const int64_t t0_us = run.start_wall_ns / 1000;
  auto us = [&](int64_t offset_ns) { return t0_us + offset_ns / 1000; };
  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[";
  auto meta = [&](int pid, int tid, std::string_view what, std::string_view name) {
    fmt::format_to(std::back_inserter(out),
                   "\n{{\"ph\":\"M\",\"pid\":{},\"tid\":{},\"name\":\"{}\",\"args\":{{\"name\":"
                   "\"{}\"}}}},",
                   pid, tid, what, name);
  };
  meta(kRequestsPid, 0, "process_name", "titan load: requests");
  meta(kCountersPid, 0, "process_name", "titan load: per second");
  meta(kServerPid, 0, "process_name", "server metrics (scraped)");
  // Requests on lanes: each lane holds requests that do not overlap in time.
  std::priority_queue<std::pair<int64_t, int>, std::vector<std::pair<int64_t, int>>,
                      std::greater<>>
      free_at;  // (end, lane)
  int lanes = 0;
  size_t slices = 0;
  for (const RequestRecord& r : run.records) {
    if (slices >= max_slices || r.end_ns == kNever) continue;
    int lane;
    if (!free_at.empty() && free_at.top().first <= r.planned_ns) {
      lane = free_at.top().second;
      free_at.pop();
    } else {
      lane = lanes++;
      if (lane < 1000) meta(kRequestsPid, lane, "thread_name", fmt::format("lane {}", lane));
    }
    free_at.push({r.end_ns, lane});
    ++slices;
    fmt::format_to(std::back_inserter(out),
                   "\n{{\"ph\":\"X\",\"pid\":{},\"tid\":{},\"name\":\"{}\",\"ts\":{},\"dur\":{},"
                   "\"args\":{{\"index\":{},\"status\":{},\"error\":\"{}\",\"prompt_tokens\":{},"
                   "\"output_tokens\":{},\"lag_us\":{},\"sent_us\":{}}}}},",
                   kRequestsPid, lane, r.ok() ? "request" : RequestErrorName(r.error),
                   us(r.planned_ns), std::max<int64_t>(1, (r.end_ns - r.planned_ns) / 1000),
                   r.index, r.http_status, RequestErrorName(r.error), r.prompt_tokens,
                   r.output_tokens, (r.dispatched_ns - r.planned_ns) / 1000,
                   r.sent_ns == kNever ? -1 : (r.sent_ns - r.planned_ns) / 1000);
    if (r.first_token_ns != kNever) {
      fmt::format_to(std::back_inserter(out),
                     "\n{{\"ph\":\"i\",\"s\":\"t\",\"pid\":{},\"tid\":{},\"name\":\"first token\","
                     "\"ts\":{}}},",
                     kRequestsPid, lane, us(r.first_token_ns));
    }
  }
  for (const SecondBucket& b : s.timeline) {
    fmt::format_to(
        std::back_inserter(out),
        "\n{{\"ph\":\"C\",\"pid\":{},\"tid\":0,\"name\":\"requests\",\"ts\":{},"
        "\"args\":{{\"planned\":{},\"completed\":{},\"errors\":{},\"in_flight_max\":{}}}}},"
        "\n{{\"ph\":\"C\",\"pid\":{},\"tid\":0,\"name\":\"output tokens/s\",\"ts\":{},"
        "\"args\":{{\"value\":{}}}}},"
        "\n{{\"ph\":\"C\",\"pid\":{},\"tid\":0,\"name\":\"ttft ms\",\"ts\":{},"
        "\"args\":{{\"p50\":{:.3f},\"p99\":{:.3f}}}}},",
        kCountersPid, us(b.second * kNsPerSecond), b.planned, b.completed, b.errors,
        b.in_flight_max, kCountersPid, us(b.second * kNsPerSecond), b.output_tokens, kCountersPid,
        us(b.second * kNsPerSecond), Ms(b.ttft_p50_ns), Ms(b.ttft_p99_ns));
  }
  for (const ScrapeSample& sample : run.scrapes) {
    if (!std::isfinite(sample.value)) continue;
    std::string name;
    AppendJsonString(run.scrape_series[sample.series], &name);
    fmt::format_to(std::back_inserter(out),
                   "\n{{\"ph\":\"C\",\"pid\":{},\"tid\":0,\"name\":{},\"ts\":{},"
                   "\"args\":{{\"value\":{}}}}},",
                   kServerPid, name, us(sample.time_ns), sample.value);
  }
  if (out.back() == ',') out.pop_back();
  out.append("\n]}\n");
  return WriteFileAtomically(path, out);
}

}  // namespace titan::load
