// `titan predict survival`: Kaplan-Meier curves by group, a Cox model on the grouping keys,
// cumulative incidence per failure class (Aalen-Johansen), and MTBF per period, from one fleet
// history, as one JSON document (the text output and titan report's sections read it).
//
// The event: by default a component's first failure (of any class), on the component's age
// (time since it first entered service), with each stay at a location a counting-process
// record with delayed entry (src/predict/stays.h); --event all counts every failure (the
// component stays at risk after a failure while it stays in service; the Cox variance is then
// clustered by component, Andersen-Gill). With classes selected, failures of other classes
// censor.
//
// JSON (times in days of age unless named otherwise):
//   {"history": {"sources", "components", "records", "failures", "classes": {NAME: n},
//                "begin", "end", "skipped": {REASON: n}},
//    "event": {"definition", "classes", "records", "events"},
//    "kaplan_meier": [{"group", "n", "events", "median_days", "time_days", "n_risk", "n_event",
//                      "surv", "std_err", "lower", "upper"}],
//    "cox": {"terms": [{"name", "coef", "hr", "se", "robust_se", "z", "p", "lower", "upper"}],
//            "loglik", "loglik_null", "n", "events", "clusters", "iterations"} | null,
//    "cumulative_incidence": {"classes": [...], "time_days", "n_risk", "incidence": [[...]]},
//    "mtbf": {"period", "rows": [{"period", "hours", "failures", "mtbf_hours", "in_service",
//                                 "by_group": {LEVEL: {"failures", "mtbf_hours"}}}]},
//    "seconds": {"kaplan_meier_all", "cox", "aalen_johansen"}}
// NaN numbers are written as null.
//
// Thread safety: pure function.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/base/status.h"
#include "src/fleet/history.h"
#include "src/predict/mtbf.h"

namespace titan::predict {

struct SurvivalOptions {
  std::vector<std::string> by;       // grouping keys (attributes)
  std::vector<std::string> classes;  // failure classes counted (empty: all)
  bool all_failures = false;         // --event all
  Period period = Period::kQuarter;
  std::string mtbf_group;  // split MTBF failures by this attribute ("" none)
  double conf_level = 0.95;
};

Result<nlohmann::json> AnalyseSurvival(const fleet::FleetHistory& history,
                                       const SurvivalOptions& options);

// The counting-process records the analysis fits, as CSV for R or a spreadsheet:
//   start_days,stop_days,event,cause,cluster,<by keys...>
// (event 1/0; cause the class name or "censored"; cluster the component id).
Result<std::string> SurvivalRecordsCsv(const fleet::FleetHistory& history,
                                       const SurvivalOptions& options);

// The analysis as text for a terminal.
std::string FormatSurvival(const nlohmann::json& analysis);

}  // namespace titan::predict
