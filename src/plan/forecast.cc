#include "src/plan/forecast.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "src/plan/titan_model.h"

namespace titan::plan {

namespace {

// The value one period earlier, repeated; R's snaive intervals.
class SeasonalNaive : public Forecaster {
 public:
  std::string_view name() const override { return "seasonal_naive"; }
  Result<Forecast> Predict(const RegularSeries& history, int64_t horizon_steps,
                           const std::vector<double>& levels) const override {
    const double period_steps = kDaySeconds / history.step_seconds;
    const size_t m = static_cast<size_t>(std::max(1.0, std::round(period_steps)));
    const std::vector<double>& y = history.values;
    const size_t n = y.size();
    if (n < m || history.Observed() < kMinHistorySteps) {
      return InvalidArgumentError(
          fmt::format("seasonal_naive needs a day of history ({} steps); the series has {}", m, n));
    }
    // The last observed value at each phase of the period.
    std::vector<double> last(m, std::numeric_limits<double>::quiet_NaN());
    for (size_t t = 0; t < n; ++t) {
      if (!std::isnan(y[t])) last[(t + m - n % m) % m] = y[t];
    }
    double fallback = 0;
    for (size_t t = n; t-- > 0;) {
      if (!std::isnan(y[t])) {
        fallback = y[t];
        break;
      }
    }
    double sum = 0;
    int count = 0;
    bool non_negative = true;
    for (size_t t = 0; t < n; ++t) {
      non_negative = non_negative && !(y[t] < 0);
      if (t >= m && !std::isnan(y[t]) && !std::isnan(y[t - m])) {
        sum += (y[t] - y[t - m]) * (y[t] - y[t - m]);
        ++count;
      }
    }
    const double sd = count > 0 ? std::sqrt(sum / count) : 0;
    Forecast f;
    f.model = std::string(name());
    f.start_seconds = history.TimeAt(n);
    f.step_seconds = history.step_seconds;
    f.quantile_levels = levels;
    const size_t horizon = static_cast<size_t>(horizon_steps);
    f.point.resize(horizon);
    for (size_t h = 0; h < horizon; ++h) {
      const double v = last[h % m];
      f.point[h] = std::isnan(v) ? fallback : v;
    }
    for (double q : levels) {
      std::vector<double> values(horizon);
      for (size_t h = 0; h < horizon; ++h) {
        const double periods = std::floor(static_cast<double>(h) / static_cast<double>(m)) + 1;
        values[h] = f.point[h] + sd * std::sqrt(periods) * NormalQuantile(q);
      }
      f.quantiles.push_back(std::move(values));
    }
    f.description = fmt::format("the value {} steps (a day) earlier; in-sample sd {:.4g}", m, sd);
    FinishForecast(non_negative, &f);
    return f;
  }
};

}  // namespace

std::unique_ptr<Forecaster> MakeForecaster(std::string_view name) {
  if (name == "titan") return std::make_unique<TitanForecaster>();
  if (name == "seasonal_naive") return std::make_unique<SeasonalNaive>();
  return nullptr;
}

std::string ForecasterNames() { return "titan, seasonal_naive"; }

void FinishForecast(bool non_negative, Forecast* f) {
  const size_t horizon = f->point.size();
  std::vector<double> column(f->quantiles.size());
  for (size_t h = 0; h < horizon; ++h) {
    for (size_t i = 0; i < column.size(); ++i) column[i] = f->quantiles[i][h];
    std::sort(column.begin(), column.end());
    for (size_t i = 0; i < column.size(); ++i) {
      f->quantiles[i][h] = non_negative ? std::max(0.0, column[i]) : column[i];
    }
    if (non_negative) f->point[h] = std::max(0.0, f->point[h]);
  }
}

double NormalQuantile(double p) {
  if (p <= 0) return -std::numeric_limits<double>::infinity();
  if (p >= 1) return std::numeric_limits<double>::infinity();
  // Acklam's algorithm.
  static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                                 -2.759285104469687e+02, 1.383577518672690e+02,
                                 -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                                 -1.556989798598866e+02, 6.680131188771972e+01,
                                 -1.328068155288572e+01};
  static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                                 -2.400758277161838e+00, -2.549732539343734e+00,
                                 4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01,
                                 2.445134137142996e+00, 3.754408661907416e+00};
  constexpr double kLow = 0.02425;
  double x;
  if (p < kLow) {
    const double q = std::sqrt(-2 * std::log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else if (p <= 1 - kLow) {
    const double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  } else {
    const double q = std::sqrt(-2 * std::log(1 - p));
    x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  // One Halley step on the normal CDF.
  const double e = 0.5 * std::erfc(-x / std::sqrt(2.0)) - p;
  const double u = e * std::sqrt(2 * M_PI) * std::exp(x * x / 2);
  return x - u / (1 + x * u / 2);
}

}  // namespace titan::plan
