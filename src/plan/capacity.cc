#include "src/plan/capacity.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "src/base/json_depth.h"
#include "src/base/text.h"
#include "src/load/stats.h"

namespace titan::plan {

namespace {

using nlohmann::json;

const json* Find(const json& object, std::initializer_list<const char*> path) {
  const json* at = &object;
  for (const char* key : path) {
    if (!at->is_object()) return nullptr;
    auto it = at->find(key);
    if (it == at->end()) return nullptr;
    at = &*it;
  }
  return at;
}

double Number(const json& object, std::initializer_list<const char*> path, double fallback = NAN) {
  const json* v = Find(object, path);
  return v != nullptr && v->is_number() ? v->get<double>() : fallback;
}

// The distribution field a gate reads: "p99_ms", "max_ms", "mean_ms".
std::string Field(double quantile) {
  if (quantile < 0) return "mean_ms";
  if (quantile >= 1) return "max_ms";
  if (quantile >= 0.999) return "p999_ms";
  if (quantile >= 0.99) return "p99_ms";
  if (quantile >= 0.95) return "p95_ms";
  if (quantile >= 0.9) return "p90_ms";
  return "p50_ms";
}

// Why the run misses the SLO ("" when it meets it).
std::string Misses(const json& run, const load::Slo& slo) {
  std::string why;
  const double planned = Number(run, {"requests", "planned"}, 0);
  const double failed = Number(run, {"requests", "failed"}, 0);
  const double error_rate = planned > 0 ? failed / planned : 1;
  for (const load::SloGate& gate : slo.gates) {
    if (gate.is_error_rate) {
      if (error_rate > gate.max_error_rate) {
        why += fmt::format("{}errors {:.2f}% > {:.2f}%", why.empty() ? "" : ", ", 100 * error_rate,
                           100 * gate.max_error_rate);
      }
      continue;
    }
    const std::string metric(load::MetricName(gate.metric));
    const double measured_ms =
        Number(run, {"latency", metric.c_str(), Field(gate.quantile).c_str()});
    const double threshold_ms = static_cast<double>(gate.threshold_ns) / 1e6;
    // A quantile gate also fails when more requests failed than the quantile leaves room for.
    const bool too_many_errors =
        gate.quantile > 0 && gate.quantile < 1 && error_rate > 1 - gate.quantile;
    if (!std::isfinite(measured_ms) || measured_ms > threshold_ms || too_many_errors) {
      why += fmt::format("{}{} {}", why.empty() ? "" : ", ", gate.text,
                         std::isfinite(measured_ms) ? fmt::format("{:.1f}ms", measured_ms)
                                                    : std::string("not measured"));
    }
  }
  return why;
}

}  // namespace

Result<Capacity> ReadCapacity(std::string_view text, const std::string& source,
                              const std::string& slo_text) {
  TITAN_RETURN_IF_ERROR(CheckJsonDepth(text, source));
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return InvalidArgumentError(fmt::format("{}: not JSON", source));
  const json* kind = Find(doc, {"kind"});
  if (kind == nullptr || *kind != "titan.load.sweep") {
    return InvalidArgumentError(fmt::format(
        "{}: not a titan load sweep (its \"kind\" is not titan.load.sweep; write one with "
        "titan load sweep --json FILE)",
        source));
  }
  std::string slo_used = slo_text;
  if (slo_used.empty()) {
    const json* s = Find(doc, {"config", "slo"});
    if (s != nullptr && s->is_string()) slo_used = s->get<std::string>();
  }
  if (slo_used.empty()) {
    return InvalidArgumentError(fmt::format("{}: the sweep names no SLO; give --slo", source));
  }
  Result<load::Slo> slo = load::ParseSlo(slo_used);
  if (!slo.ok()) return slo.status().WithContext("--slo");
  const json* probes = Find(doc, {"probes"});
  if (probes == nullptr || !probes->is_array() || probes->empty()) {
    return InvalidArgumentError(fmt::format("{}: the sweep has no probes", source));
  }
  struct Rate {
    bool passed = true;
    double completed = 0, tokens = 0, output_tokens = 0, requests = 0;
    int runs = 0;
    std::string why;
  };
  std::map<double, Rate> rates;
  for (const json& probe : *probes) {
    const double rate = Number(probe, {"rate"});
    const json* run = Find(probe, {"run"});
    if (!std::isfinite(rate) || run == nullptr || !run->is_object()) continue;
    Rate& r = rates[rate];
    const std::string why = Misses(*run, *slo);
    if (!why.empty()) {
      r.passed = false;
      if (r.why.empty()) r.why = why;
    }
    const double elapsed = Number(*run, {"elapsed_s"}, 0);
    const double ok = Number(*run, {"requests", "ok"}, 0);
    r.completed += elapsed > 0 ? ok / elapsed : Number(*run, {"achieved_rate"}, 0);
    r.requests += ok;
    r.tokens += Number(*run, {"tokens", "prompt"}, 0) + Number(*run, {"tokens", "output"}, 0);
    r.output_tokens += Number(*run, {"tokens", "output"}, 0);
    ++r.runs;
  }
  Capacity c;
  c.slo = slo_used;
  c.probes = static_cast<int>(probes->size());
  double first_fail = INFINITY;
  for (const auto& [rate, r] : rates) {
    if (!r.passed) {
      first_fail = rate;
      c.why_next_fails = r.why;
      break;
    }
  }
  const Rate* knee = nullptr;
  for (const auto& [rate, r] : rates) {
    if (rate < first_fail && r.passed) {
      c.knee_rate = rate;
      knee = &r;
    }
  }
  if (knee == nullptr || knee->runs == 0) {
    return InvalidArgumentError(
        fmt::format("{}: no rate meets {} (the lowest, {:g}/s, missed: {}); sweep from a lower "
                    "--start-rate or relax the SLO",
                    source, slo_used, rates.empty() ? 0.0 : rates.begin()->first,
                    rates.empty() ? std::string("no probes") : rates.begin()->second.why));
  }
  c.first_failing_rate = std::isinf(first_fail) ? 0 : first_fail;
  c.goodput_rps = knee->completed / knee->runs;
  c.tokens_per_request = knee->requests > 0 ? knee->tokens / knee->requests : 0;
  c.output_tokens_per_request = knee->requests > 0 ? knee->output_tokens / knee->requests : 0;
  return c;
}

}  // namespace titan::plan
