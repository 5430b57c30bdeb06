#include "src/plan/failure_fit.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "src/fleet/time_text.h"
#include "src/plan/series.h"
#include "src/predict/stays.h"

namespace titan::plan {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
// NB sizes above this fit no better than a Poisson.
constexpr double kPoissonK = 1e6;

double LogNegativeBinomial(int64_t c, double mu, double k) {
  const double x = static_cast<double>(c);
  if (std::isinf(k)) return x * std::log(mu) - mu - std::lgamma(x + 1);
  return std::lgamma(x + k) - std::lgamma(k) - std::lgamma(x + 1) + k * std::log(k / (k + mu)) +
         x * std::log(mu / (k + mu));
}

// Expected failures in [t, t + h) from the rate over [t - window, t).
double Projected(const FailureCounts& counts, double t, double window_seconds,
                 double horizon_days) {
  const double exposure = counts.ExposureDays(t - window_seconds, t);
  if (!(exposure > 0)) return 0;
  const double rate = static_cast<double>(counts.Failures(t - window_seconds, t)) / exposure;
  return rate * counts.InService(t) * horizon_days;
}

// Past (expected, actual) pairs of the projection whose horizon ended by `t`, every horizon.
void PastPairs(const FailureCounts& counts, double t, double window_seconds, double horizon_days,
               std::vector<double>* expected, std::vector<int64_t>* actual) {
  expected->clear();
  actual->clear();
  const double h = horizon_days * kDaySeconds;
  for (double origin = t - h; origin - window_seconds >= counts.begin_seconds(); origin -= h) {
    expected->push_back(Projected(counts, origin, window_seconds, horizon_days));
    actual->push_back(counts.Failures(origin, origin + h));
  }
}

}  // namespace

FailureCounts::FailureCounts(const fleet::FleetHistory& history) {
  begin_ = std::floor(history.begin_seconds() / kDaySeconds) * kDaySeconds;
  end_ = std::max(history.end_seconds(), begin_ + 1);
  const size_t days = static_cast<size_t>(std::ceil((end_ - begin_) / kDaySeconds)) + 1;
  exposure_days_.assign(days, 0.0);
  failures_.assign(days, 0);
  std::vector<double> full_days(days + 1, 0.0);  // difference array of whole days in service
  const predict::StayTable table = predict::BuildStays(history);
  for (const predict::Stay& s : table.stays) {
    const size_t a = Day(s.start_seconds), b = Day(s.stop_seconds);
    if (a == b) {
      exposure_days_[a] += (s.stop_seconds - s.start_seconds) / kDaySeconds;
      continue;
    }
    exposure_days_[a] += (begin_ + (a + 1) * kDaySeconds - s.start_seconds) / kDaySeconds;
    exposure_days_[b] += (s.stop_seconds - (begin_ + b * kDaySeconds)) / kDaySeconds;
    full_days[a + 1] += 1;
    full_days[b] -= 1;
  }
  double running = 0;
  for (size_t d = 0; d < days; ++d) {
    running += full_days[d];
    exposure_days_[d] += running;
  }
  for (const fleet::Event& e : history.events()) {
    if (e.kind == fleet::EventKind::kFail) ++failures_[Day(e.time_seconds)];
  }
  exposure_prefix_.assign(days + 1, 0.0);
  failure_prefix_.assign(days + 1, 0);
  for (size_t d = 0; d < days; ++d) {
    exposure_prefix_[d + 1] = exposure_prefix_[d] + exposure_days_[d];
    failure_prefix_[d + 1] = failure_prefix_[d] + failures_[d];
  }
}

size_t FailureCounts::Day(double t) const {
  if (!(t > begin_)) return 0;
  return std::min(exposure_days_.size() - 1, static_cast<size_t>((t - begin_) / kDaySeconds));
}

double FailureCounts::ExposureDays(double a, double b) const {
  // Within a day, exposure is taken as spread evenly.
  auto upto = [this](double t) {
    if (!(t > begin_)) return 0.0;
    const size_t d = Day(t);
    const double fraction = std::clamp((t - begin_) / kDaySeconds - d, 0.0, 1.0);
    return exposure_prefix_[d] + exposure_days_[d] * fraction;
  };
  return std::max(0.0, upto(b) - upto(a));
}

int64_t FailureCounts::Failures(double a, double b) const {
  // Whole days: the failures of the days that begin in [a, b).
  auto before = [this](double t) {
    if (!(t > begin_)) return int64_t{0};
    return failure_prefix_[std::min(failure_prefix_.size() - 1,
                                    static_cast<size_t>(std::ceil((t - begin_) / kDaySeconds)))];
  };
  return std::max<int64_t>(0, before(b) - before(a));
}

double FailureCounts::InService(double t) const { return ExposureDays(t - kDaySeconds, t); }

double FitDispersion(const std::vector<double>& expected, const std::vector<int64_t>& counts) {
  auto loglik = [&](double k) {
    double sum = 0;
    for (size_t i = 0; i < expected.size(); ++i) {
      sum += LogNegativeBinomial(counts[i], std::max(expected[i], 0.1), k);
    }
    return sum;
  };
  if (expected.empty()) return kInfinity;
  // A coarse grid on log k, then golden-section search around the best.
  double best_x = 0, best = -kInfinity;
  for (double x = -4; x <= std::log(kPoissonK); x += 0.25) {
    const double v = loglik(std::exp(x));
    if (v > best) {
      best = v;
      best_x = x;
    }
  }
  double lo = best_x - 0.25, hi = best_x + 0.25;
  const double ratio = (std::sqrt(5.0) - 1) / 2;
  for (int i = 0; i < 40; ++i) {
    const double a = hi - ratio * (hi - lo), b = lo + ratio * (hi - lo);
    if (loglik(std::exp(a)) < loglik(std::exp(b))) {
      lo = a;
    } else {
      hi = b;
    }
  }
  const double k = std::exp((lo + hi) / 2);
  return k >= kPoissonK * 0.5 || loglik(kInfinity) >= loglik(k) ? kInfinity : k;
}

int64_t NegativeBinomialQuantile(double mu, double k, double q) {
  if (!(mu > 0)) return 0;
  const double variance = mu + (std::isinf(k) ? 0 : mu * mu / k);
  const int64_t limit =
      static_cast<int64_t>(mu + 60 * std::sqrt(variance) + 100);  // far past any q < 1
  double cdf = 0;
  for (int64_t c = 0; c <= limit; ++c) {
    cdf += std::exp(LogNegativeBinomial(c, mu, k));
    if (cdf >= q) return c;
  }
  return limit;
}

Result<FailureFit> FitFailures(const fleet::FleetHistory& history, const FailureCounts& counts,
                               const FitOptions& options) {
  FailureFit fit;
  const double at = options.at_seconds > 0 ? options.at_seconds : counts.end_seconds();
  const double window = options.window_days * kDaySeconds;
  fit.window_begin_seconds = std::max(counts.begin_seconds(), at - window);
  fit.window_end_seconds = at;
  fit.component_days = counts.ExposureDays(fit.window_begin_seconds, at);
  if (!(fit.component_days > 0)) {
    return InvalidArgumentError(fmt::format(
        "no component was in service from {} to {} (the history spans {} .. {}); choose "
        "another --fit-window",
        fleet::FormatTime(fit.window_begin_seconds), fleet::FormatTime(at),
        fleet::FormatTime(history.begin_seconds()), fleet::FormatTime(history.end_seconds())));
  }
  fit.in_service = counts.InService(at);
  std::map<uint32_t, int64_t> by_class;
  for (const fleet::Event& e : history.events()) {
    if (e.kind == fleet::EventKind::kFail && e.time_seconds >= fit.window_begin_seconds &&
        e.time_seconds < at) {
      ++by_class[e.failure_class];
    }
  }
  int64_t total = 0;
  for (const auto& [c, n] : by_class) {
    ClassRate rate;
    rate.name = history.failure_classes()[c];
    rate.failures = n;
    rate.per_component_day = static_cast<double>(n) / fit.component_days;
    rate.needs_repair = std::find(options.restart_only.begin(), options.restart_only.end(),
                                  rate.name) == options.restart_only.end();
    fit.classes.push_back(rate);
    total += n;
  }
  fit.per_component_day = static_cast<double>(total) / fit.component_days;

  // Repairs: until the component's next repair record, or (when it left) until a component next
  // enters at its node.
  std::unordered_map<uint32_t, double> pending;                  // component -> failure time
  std::unordered_map<std::string, std::vector<double>> waiting;  // node -> failure times
  std::unordered_map<uint32_t, std::string> node_of;             // component -> node_name
  std::vector<double> durations;
  auto record = [&](double failed, double repaired) {
    if (failed >= fit.window_begin_seconds && failed < at) {
      durations.push_back((repaired - failed) / 3600);
    }
  };
  const auto& components = history.components();
  for (const fleet::Event& e : history.events()) {
    switch (e.kind) {
      case fleet::EventKind::kEnter: {
        const fleet::Attributes merged =
            fleet::MergeAttributes(components[e.component].attributes, e.attributes);
        const std::string* node = fleet::FindAttribute(merged, "node_name");
        node_of[e.component] = node != nullptr ? *node : "";
        if (node != nullptr) {
          auto it = waiting.find(*node);
          if (it != waiting.end()) {
            for (double failed : it->second) record(failed, e.time_seconds);
            waiting.erase(it);
          }
        }
        pending.erase(e.component);
        break;
      }
      case fleet::EventKind::kFail:
        if (std::find(options.restart_only.begin(), options.restart_only.end(),
                      history.failure_classes()[e.failure_class]) == options.restart_only.end()) {
          pending.emplace(e.component, e.time_seconds);
        }
        break;
      case fleet::EventKind::kRepair: {
        auto it = pending.find(e.component);
        if (it != pending.end()) {
          record(it->second, e.time_seconds);
          pending.erase(it);
        }
        break;
      }
      case fleet::EventKind::kLeave: {
        auto it = pending.find(e.component);
        if (it == pending.end()) break;
        auto node = node_of.find(e.component);
        if (node != node_of.end() && !node->second.empty()) {
          waiting[node->second].push_back(it->second);
        }
        pending.erase(it);
        break;
      }
      case fleet::EventKind::kObserve:
        break;
    }
  }
  fit.repairs_measured = static_cast<int64_t>(durations.size());
  if (!durations.empty()) {
    double sum = 0;
    for (double d : durations) sum += d;
    fit.repair_mean_hours = sum / static_cast<double>(durations.size());
    std::nth_element(durations.begin(), durations.begin() + durations.size() / 2, durations.end());
    fit.repair_median_hours = durations[durations.size() / 2];
  }

  std::vector<double> expected;
  std::vector<int64_t> actual;
  PastPairs(counts, at, window, options.dispersion_horizon_days, &expected, &actual);
  fit.dispersion_k = FitDispersion(expected, actual);
  fit.dispersion_origins = static_cast<int>(expected.size());
  return fit;
}

ProjectionBacktest BacktestProjection(const FailureCounts& counts, double window_days,
                                      double horizon_days, double every_days) {
  ProjectionBacktest out;
  out.horizon_days = horizon_days;
  const double window = window_days * kDaySeconds, h = horizon_days * kDaySeconds;
  std::vector<double> expected;
  std::vector<int64_t> actual;
  int inside = 0, poisson_inside = 0;
  for (double t = counts.begin_seconds() + window; t + h <= counts.end_seconds();
       t += every_days * kDaySeconds) {
    PastPairs(counts, t, window, horizon_days, &expected, &actual);
    if (expected.size() < 3) continue;
    ProjectionCheck c;
    c.origin_seconds = t;
    c.k = FitDispersion(expected, actual);
    c.expected = Projected(counts, t, window, horizon_days);
    c.actual = counts.Failures(t, t + h);
    c.low = NegativeBinomialQuantile(c.expected, c.k, 0.05);
    c.high = NegativeBinomialQuantile(c.expected, c.k, 0.95);
    c.poisson_low = NegativeBinomialQuantile(c.expected, kInfinity, 0.05);
    c.poisson_high = NegativeBinomialQuantile(c.expected, kInfinity, 0.95);
    inside += c.actual >= c.low && c.actual <= c.high;
    poisson_inside += c.actual >= c.poisson_low && c.actual <= c.poisson_high;
    out.checks.push_back(c);
  }
  if (!out.checks.empty()) {
    out.coverage = static_cast<double>(inside) / static_cast<double>(out.checks.size());
    out.poisson_coverage =
        static_cast<double>(poisson_inside) / static_cast<double>(out.checks.size());
  }
  return out;
}

nlohmann::json FailureFitJson(const FailureFit& fit) {
  nlohmann::json classes = nlohmann::json::array();
  for (const ClassRate& c : fit.classes) {
    classes.push_back({{"class", c.name},
                       {"failures", c.failures},
                       {"per_component_day", c.per_component_day},
                       {"needs_repair", c.needs_repair}});
  }
  return {{"window_begin", fit.window_begin_seconds},
          {"window_end", fit.window_end_seconds},
          {"component_days", fit.component_days},
          {"in_service", fit.in_service},
          {"per_component_day", fit.per_component_day},
          {"classes", classes},
          {"repairs_measured", fit.repairs_measured},
          {"repair_mean_hours", fit.repair_mean_hours},
          {"repair_median_hours", fit.repair_median_hours},
          // JSON has no infinity: -1 stands for a Poisson (k infinite).
          {"dispersion_k", std::isinf(fit.dispersion_k) ? -1 : fit.dispersion_k},
          {"dispersion_origins", fit.dispersion_origins}};
}

nlohmann::json ProjectionBacktestJson(const ProjectionBacktest& b) {
  nlohmann::json checks = nlohmann::json::array();
  for (const ProjectionCheck& c : b.checks) {
    checks.push_back({{"origin", c.origin_seconds},
                      {"expected", c.expected},
                      {"actual", c.actual},
                      {"low", c.low},
                      {"high", c.high},
                      {"poisson_low", c.poisson_low},
                      {"poisson_high", c.poisson_high},
                      {"k", std::isinf(c.k) ? -1 : c.k}});
  }
  return {{"horizon_days", b.horizon_days},
          {"coverage", b.coverage},
          {"poisson_coverage", b.poisson_coverage},
          {"checks", checks}};
}

}  // namespace titan::plan
