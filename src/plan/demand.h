// A demand forecast's outputs: JSON (for titan report and other tools), CSV per step, and the
// summary people read. Pure functions; thread-safe.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "src/plan/forecast.h"
#include "src/plan/series.h"

namespace titan::plan {

// {"kind": "titan.plan.demand", "series": {"name", "unit", "start", "step_seconds", "values"},
//  "forecast": {"model", "description", "start", "step_seconds", "point", "quantiles":
//  {"0.05": [...]}}}. Times in epoch seconds; gaps as null.
nlohmann::json DemandJson(const RegularSeries& history, const Forecast& forecast);

// time,point,<level>... one row per step.
std::string ForecastCsv(const Forecast& forecast);

// The history's summary and the forecast per step (up to 48 steps) or per day.
std::string FormatDemand(const RegularSeries& history, const Forecast& forecast);

}  // namespace titan::plan
