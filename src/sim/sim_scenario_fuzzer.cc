// Fuzzes scenario text -> tree -> validated Scenario -> (small) simulation. Any input must end
// in a value or an error Status: no crash, no hang, no NaN in a summary.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/base/check.h"
#include "src/sim/scenario.h"
#include "src/sim/scenario_text.h"
#include "src/sim/simulate.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace titan::sim;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  titan::Result<nlohmann::json> tree = ParseScenarioText(text, "fuzz");
  if (!tree.ok()) return 0;
  titan::Result<Scenario> scenario = ParseScenario(*tree);
  if (!scenario.ok()) return 0;
  // Keep each run small: the parser's bounds are what is under test, not the event loop's
  // throughput on a 100-year horizon.
  Scenario s = *scenario;
  s.run.replicas = 1;
  s.run.threads = 1;
  s.run.max_seconds = std::min(s.run.max_seconds, 10 * kSecondsPerDay);
  s.run.duration_seconds = std::min(s.run.duration_seconds, 10 * kSecondsPerDay);
  const double rate =
      NodeFailureRate(s.causes) * static_cast<double>(s.cluster.nodes() + s.cluster.spares);
  if (rate * (s.job.steps > 0 ? s.run.max_seconds : s.run.duration_seconds) > 2e4) return 0;
  if (s.checkpoint.interval == IntervalPolicy::kSearched)
    s.checkpoint.interval = IntervalPolicy::kDaly;
  titan::Result<SimSummary> summary = Simulate(s);
  if (summary.ok()) {
    TITAN_CHECK(std::isfinite(summary->ettr.mean)) << "ETTR is not finite";
    TITAN_CHECK(std::isfinite(summary->wall_days.mean)) << "wall time is not finite";
  }
  return 0;
}
