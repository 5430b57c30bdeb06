// The serving plan: replicas per step of a demand forecast, from one replica's capacity at an
// SLO (capacity.h, measured by titan load sweep).
//
//   needed(t)  = ceil(q-quantile of the step's peak demand / capacity), at least min_replicas
//   spare(t)   = the headroom_probability quantile of Poisson(needed x failures per replica-
//                second x restart seconds): replicas down at once while they restart (Little)
//   total(t)   = needed + spare
// and what follows from a price per GPU-hour: utilisation (the step's mean demand over the
// capacity of `total`), cost per million tokens and requests per second per dollar-hour.
// Demand in requests/s is compared with the goodput; demand in tokens/s with goodput x tokens
// per request.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/plan/capacity.h"
#include "src/plan/forecast.h"

namespace titan::plan {

struct ServingOptions {
  double quantile = 0.9;  // of each step's peak demand
  double replica_failures_per_day = 0;
  double restart_seconds = 300;
  double headroom_probability = 0.99;
  int64_t gpus_per_replica = 1;
  int64_t min_replicas = 1;
  double price_per_gpu_hour = 0;  // 0: no cost shown
};

struct ServingStep {
  double time_seconds = 0;
  double peak_demand = 0;  // the quantile of the step's peak
  double mean_demand = 0;  // the median forecast of the step's mean
  int64_t needed = 0, spare = 0, total = 0;
  double utilisation = 0;
};

struct ServingPlan {
  std::string unit;                 // of demand and capacity
  double capacity_per_replica = 0;  // in `unit`
  std::vector<ServingStep> steps;
  int64_t max_replicas = 0;
  double mean_replicas = 0;
  double gpu_hours = 0, cost = 0;
  double mean_utilisation = 0;
  double requests = 0, tokens = 0;  // served over the horizon (mean demand)
  double cost_per_million_tokens = 0;
  double qps_per_dollar_hour = 0;  // mean requests/s per dollar per hour
};

// `peak`: forecast of each step's peak (its levels must include options.quantile); `mean`: of
// each step's mean (its median is used). Both over the same steps. `unit` is the series' unit.
Result<ServingPlan> PlanServing(const Forecast& peak, const Forecast& mean, const std::string& unit,
                                const Capacity& capacity, const ServingOptions& options);

nlohmann::json ServingPlanJson(const ServingPlan& plan, const Capacity& capacity,
                               const ServingOptions& options);
std::string FormatServingPlan(const ServingPlan& plan, const Capacity& capacity,
                              const ServingOptions& options, double step_seconds);

}  // namespace titan::plan
