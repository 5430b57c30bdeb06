#include "src/load/sweep.h"

#include <cmath>
#include <map>

#include <fmt/format.h>

#include "src/base/duration.h"

namespace titan::load {

std::string ProbeVerdict(const Summary& s) {
  std::string why;
  auto add = [&](const std::string& part) {
    if (!why.empty()) why += "; ";
    why += part;
  };
  for (const std::string& reason : s.invalid_reasons) add(reason);
  for (const GateResult& g : s.gates) {
    if (g.passed) continue;
    if (g.gate.is_error_rate) {
      add(fmt::format("{}: {:.2f}% errors", g.gate.text, g.measured * 100));
    } else {
      add(fmt::format("{}: measured {}", g.gate.text,
                      FormatDurationShort(static_cast<int64_t>(g.measured))));
    }
  }
  return why;
}

Result<SweepResult> Sweep(const SweepOptions& options,
                          const std::function<Result<Probe>(double rate)>& run_probe) {
  if (!(options.start_rate > 0) || !(options.max_rate >= options.start_rate)) {
    return InvalidArgumentError("--start-rate must be > 0 and at most --max-rate");
  }
  if (!(options.precision > 0)) return InvalidArgumentError("--precision must be > 0");
  SweepResult result;
  std::map<double, bool> outcome;  // rate -> passed (every run at it)
  auto probe = [&](double rate) -> Result<bool> {
    TITAN_ASSIGN_OR_RETURN(Probe p, run_probe(rate));
    p.rate = rate;
    const bool passed = p.passed;
    result.probes.push_back(std::move(p));
    auto [it, fresh] = outcome.emplace(rate, passed);
    if (!fresh) it->second = it->second && passed;
    return it->second;
  };
  double last_pass = 0, first_miss = 0;
  for (double rate = options.start_rate;; rate = std::min(rate * 2, options.max_rate)) {
    if (static_cast<int>(result.probes.size()) >= options.max_probes) break;
    TITAN_ASSIGN_OR_RETURN(bool passed, probe(rate));
    if (!passed) {
      first_miss = rate;
      break;
    }
    last_pass = rate;
    if (rate >= options.max_rate) break;
  }
  if (first_miss > 0 && last_pass > 0) {
    while (first_miss / last_pass > 1 + options.precision &&
           static_cast<int>(result.probes.size()) < options.max_probes) {
      const double mid = std::sqrt(last_pass * first_miss);
      TITAN_ASSIGN_OR_RETURN(bool passed, probe(mid));
      (passed ? last_pass : first_miss) = mid;
    }
    for (int r = 0; r < options.repeats; ++r) {
      for (double rate : {last_pass, first_miss}) {
        if (static_cast<int>(result.probes.size()) >= options.max_probes + 2 * options.repeats) {
          break;
        }
        TITAN_ASSIGN_OR_RETURN(bool passed, probe(rate));
        (void)passed;
      }
    }
    // The knee: the largest rate whose every run passed, below the smallest that missed.
    double smallest_miss = first_miss;
    for (const auto& [rate, passed] : outcome) {
      if (!passed) smallest_miss = std::min(smallest_miss, rate);
    }
    for (const auto& [rate, passed] : outcome) {
      if (passed && rate < smallest_miss) result.knee_rate = std::max(result.knee_rate, rate);
    }
    result.knee_found = result.knee_rate > 0;
  }
  if (result.knee_found) {
    result.verdict = fmt::format(
        "the SLO holds up to {:.4g} requests/s (knee); it is missed at {:.4g} requests/s",
        result.knee_rate, first_miss);
  } else if (first_miss > 0) {
    result.verdict = fmt::format(
        "the SLO is missed already at the start rate {:.4g} requests/s: "
        "lower --start-rate",
        first_miss);
  } else {
    result.verdict = fmt::format(
        "the SLO holds at every rate probed, up to {:.4g} requests/s: raise --max-rate", last_pass);
    result.knee_rate = last_pass;
  }
  return result;
}

}  // namespace titan::load
