#include "src/plan/backtest.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <thread>

#include <fmt/format.h>

#include "src/base/csv.h"
#include "src/base/duration.h"
#include "src/base/text.h"
#include "src/fleet/time_text.h"

namespace titan::plan {

namespace {

// Sums of one model's losses over origins.
struct Accumulator {
  double mase_sum = 0, smape_sum = 0;
  int origins = 0;
  std::map<double, double> pinball_sum, below;
  std::map<double, double> scaled_pinball_sum;  // sum over origins of the origin's mean / scale
  std::map<std::string, double> inside;
  int64_t scored = 0;  // (origin, step) pairs with an actual value
};

// MASE's denominator: the in-sample mean absolute seasonal difference before `origin`.
double NaiveScale(const std::vector<double>& y, size_t origin, size_t m) {
  double sum = 0;
  int64_t count = 0;
  for (size_t t = m; t < origin; ++t) {
    if (std::isnan(y[t]) || std::isnan(y[t - m])) continue;
    sum += std::fabs(y[t] - y[t - m]);
    ++count;
  }
  return count > 0 ? sum / static_cast<double>(count) : 0;
}

// The central intervals the levels make: (q, 1 - q) pairs with q < 0.5.
std::vector<std::pair<double, double>> Intervals(const std::vector<double>& levels) {
  std::vector<std::pair<double, double>> out;
  for (double q : levels) {
    if (q >= 0.5) continue;
    for (double r : levels) {
      if (std::fabs(q + r - 1) < 1e-9) out.emplace_back(q, r);
    }
  }
  return out;
}

void Score(const std::vector<double>& y, size_t m, const std::vector<double>& levels,
           const OriginForecast& f, Accumulator* acc) {
  const size_t o = f.origin;
  const double scale = NaiveScale(y, o, m);
  double abs_sum = 0, smape_sum = 0;
  int64_t count = 0;
  const auto intervals = Intervals(levels);
  std::map<double, double> origin_pinball;  // level -> sum over this origin's steps
  for (size_t h = 0; h < f.point.size() && o + h < y.size(); ++h) {
    const double actual = y[o + h];
    if (std::isnan(actual)) continue;
    const double p = f.point[h];
    abs_sum += std::fabs(actual - p);
    const double denominator = std::fabs(actual) + std::fabs(p);
    smape_sum += denominator == 0 ? 0 : 200 * std::fabs(actual - p) / denominator;
    ++count;
    for (double q : levels) {
      auto it = f.quantiles.find(q);
      if (it == f.quantiles.end()) continue;
      const double d = actual - it->second[h];
      const double loss = std::max(q * d, (q - 1) * d);
      acc->pinball_sum[q] += loss;
      origin_pinball[q] += loss;
      acc->below[q] += actual < it->second[h] ? 1 : 0;
    }
    for (const auto& [lo, hi] : intervals) {
      auto a = f.quantiles.find(lo), b = f.quantiles.find(hi);
      if (a == f.quantiles.end() || b == f.quantiles.end()) continue;
      const bool in = actual >= a->second[h] && actual <= b->second[h];
      acc->inside[LevelKey(hi - lo)] += in ? 1 : 0;
    }
  }
  if (count == 0) return;
  acc->scored += count;
  ++acc->origins;
  acc->smape_sum += smape_sum / static_cast<double>(count);
  // A flat history (scale 0) cannot scale: its origin adds no MASE term.
  if (scale > 0) {
    acc->mase_sum += abs_sum / static_cast<double>(count) / scale;
    for (const auto& [q, v] : origin_pinball) {
      acc->scaled_pinball_sum[q] += v / static_cast<double>(count) / scale;
    }
  }
}

ModelScore Finish(const std::string& model, const Accumulator& acc, int scaled_origins) {
  ModelScore s;
  s.model = model;
  s.origins = acc.origins;
  if (acc.origins == 0 || acc.scored == 0) return s;
  s.mase = scaled_origins > 0 ? acc.mase_sum / scaled_origins : 0;
  s.smape = acc.smape_sum / acc.origins;
  const double n = static_cast<double>(acc.scored);
  for (const auto& [q, v] : acc.pinball_sum) s.pinball[q] = v / n;
  if (scaled_origins > 0) {
    for (const auto& [q, v] : acc.scaled_pinball_sum) s.scaled_pinball[q] = v / scaled_origins;
  }
  for (const auto& [q, v] : acc.below) s.calibration[q] = v / n;
  for (const auto& [k, v] : acc.inside) s.coverage[k] = v / n;
  return s;
}

int ScaledOrigins(const std::vector<double>& y, size_t m, const std::vector<size_t>& origins) {
  int count = 0;
  for (size_t o : origins) count += NaiveScale(y, o, m) > 0 ? 1 : 0;
  return count;
}

}  // namespace

std::string LevelKey(double level) {
  for (int digits = 1; digits < 17; ++digits) {
    std::string s = fmt::format("{:.{}g}", level, digits);
    double back = 0;
    if (ParseDouble(s, &back) && std::fabs(back - level) < 1e-12) return s;
  }
  return fmt::format("{}", level);
}

Result<std::vector<size_t>> BacktestOrigins(const RegularSeries& series,
                                            const BacktestOptions& options) {
  const int64_t n = static_cast<int64_t>(series.size());
  const int64_t h = options.horizon_steps;
  const int count = options.origins;
  if (h < 1 || count < 1) return InvalidArgumentError("the horizon and origins must be positive");
  const int64_t last = n - h;
  int64_t first = options.min_train_steps;
  if (first <= 0) {
    const int64_t two_weeks =
        static_cast<int64_t>(std::llround(15 * kDaySeconds / series.step_seconds));
    first = last - two_weeks >= count - 1 ? two_weeks : last / 2;
  }
  first = std::max<int64_t>(first, static_cast<int64_t>(kMinHistorySteps));
  if (last - first < count - 1) {
    return InvalidArgumentError(fmt::format(
        "the series has {} steps: {} origins with at least {} steps of history each and a "
        "horizon of {} steps after them need {}; give a shorter --horizon or --min-train, or "
        "fewer --origins",
        n, count, first, h, first + count - 1 + h));
  }
  std::vector<size_t> origins;
  for (int k = 0; k < count; ++k) {
    const int64_t o = count == 1 ? last : first + (last - first) * k / (count - 1);
    origins.push_back(static_cast<size_t>(o));
  }
  return origins;
}

Result<BacktestResult> RunBacktest(const RegularSeries& series, const BacktestOptions& options) {
  TITAN_ASSIGN_OR_RETURN(std::vector<size_t> origins, BacktestOrigins(series, options));
  BacktestResult result;
  result.series_name = series.name;
  result.step_seconds = series.step_seconds;
  result.horizon_steps = options.horizon_steps;
  result.season_steps = std::max<int64_t>(1, std::llround(kDaySeconds / series.step_seconds));
  result.origins = origins;
  for (size_t o : origins) result.origin_times.push_back(series.TimeAt(o));
  result.levels = options.levels;
  for (const std::string& name : options.models) {
    std::unique_ptr<Forecaster> model = MakeForecaster(name);
    if (model == nullptr) {
      return InvalidArgumentError(
          fmt::format("no model '{}'; the models are {}", name, ForecasterNames()));
    }
    std::vector<OriginForecast> forecasts(origins.size());
    std::vector<Status> errors(origins.size());
    std::vector<std::string> notes(origins.size());
    std::atomic<size_t> next{0};
    const auto start = std::chrono::steady_clock::now();
    auto work = [&] {
      for (size_t i; (i = next.fetch_add(1)) < origins.size();) {
        RegularSeries history = series;
        history.values.resize(origins[i]);
        Result<Forecast> f = model->Predict(history, options.horizon_steps, options.levels);
        if (!f.ok()) {
          errors[i] = f.status();
          continue;
        }
        forecasts[i].origin = origins[i];
        forecasts[i].point = f->point;
        for (size_t l = 0; l < options.levels.size(); ++l) {
          forecasts[i].quantiles[options.levels[l]] = f->quantiles[l];
        }
        notes[i] = f->description;
      }
    };
    std::vector<std::thread> threads;
    for (int t = 1; t < std::max(1, options.threads); ++t) threads.emplace_back(work);
    work();
    for (std::thread& t : threads) t.join();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (size_t i = 0; i < origins.size(); ++i) {
      if (!errors[i].ok()) {
        return errors[i].WithContext(fmt::format("model {} at origin {}", name,
                                                 fleet::FormatTime(series.TimeAt(origins[i]))));
      }
    }
    TITAN_RETURN_IF_ERROR(ScoreExternal(series, name, forecasts, &result));
    result.scores.back().seconds_per_forecast = seconds / static_cast<double>(origins.size());
    result.scores.back().note = "at the last origin: " + notes.back();
  }
  return result;
}

Status ScoreExternal(const RegularSeries& series, const std::string& model,
                     const std::vector<OriginForecast>& forecasts, BacktestResult* result) {
  const size_t m = static_cast<size_t>(result->season_steps);
  Accumulator acc;
  for (size_t o : result->origins) {
    auto it = std::find_if(forecasts.begin(), forecasts.end(),
                           [&](const OriginForecast& f) { return f.origin == o; });
    if (it == forecasts.end()) {
      return InvalidArgumentError(
          fmt::format("model {} has no forecast at origin {} (the backtest's origins are the "
                      "steps of history: {} ...)",
                      model, o, result->origins.front()));
    }
    if (it->point.size() < static_cast<size_t>(result->horizon_steps)) {
      return InvalidArgumentError(fmt::format("model {} at origin {}: {} steps, the horizon is {}",
                                              model, o, it->point.size(), result->horizon_steps));
    }
    Score(series.values, m, result->levels, *it, &acc);
  }
  result->scores.push_back(Finish(model, acc, ScaledOrigins(series.values, m, result->origins)));
  result->forecasts[model] = forecasts;
  return OkStatus();
}

Result<std::map<std::string, std::vector<OriginForecast>>> ReadExternalForecasts(
    std::string_view text, const std::string& source) {
  std::map<std::string, std::vector<OriginForecast>> out;
  std::vector<std::string> header, fields;
  int64_t line_number = 0;
  std::vector<double> levels;
  while (!text.empty()) {
    const std::string_view line = NextLine(&text);
    ++line_number;
    if (Trim(line).empty()) continue;
    const std::string where = fmt::format("{}:{}", source, line_number);
    if (header.empty()) {
      if (!SplitCsvRecord(line, &header) || header.size() < 4 || header[0] != "model" ||
          header[1] != "origin" || header[2] != "h" || header[3] != "point") {
        return InvalidArgumentError(
            fmt::format("{}: expected the header model,origin,h,point,<level>...", where));
      }
      for (size_t i = 4; i < header.size(); ++i) {
        double q = 0;
        if (!ParseDouble(header[i], &q) || !(q > 0 && q < 1)) {
          return InvalidArgumentError(fmt::format(
              "{}: column '{}' is not a quantile level in (0, 1)", where, Excerpt(header[i])));
        }
        if (std::find(levels.begin(), levels.end(), q) != levels.end()) {
          return InvalidArgumentError(
              fmt::format("{}: quantile level '{}' is given twice; give each level one column",
                          where, Excerpt(header[i])));
        }
        levels.push_back(q);
      }
      continue;
    }
    if (!SplitCsvRecord(line, &fields) || fields.size() != header.size()) {
      return InvalidArgumentError(
          fmt::format("{}: expected {} fields like the header", where, header.size()));
    }
    int64_t origin = 0, h = 0;
    if (!ParseInt64(fields[1], &origin) || origin < 0 || !ParseInt64(fields[2], &h) || h < 1 ||
        h > int64_t{1} << 24) {
      return InvalidArgumentError(
          fmt::format("{}: origin must be a step count and h a step from 1", where));
    }
    std::vector<double> numbers(header.size() - 3);
    for (size_t i = 3; i < header.size(); ++i) {
      if (!ParseDouble(fields[i], &numbers[i - 3]) || !std::isfinite(numbers[i - 3])) {
        return InvalidArgumentError(fmt::format("{}: {} '{}' is not a finite number", where,
                                                header[i], Excerpt(fields[i])));
      }
    }
    std::vector<OriginForecast>& list = out[fields[0]];
    auto it = std::find_if(list.begin(), list.end(), [&](const OriginForecast& f) {
      return f.origin == static_cast<size_t>(origin);
    });
    if (it == list.end()) {
      list.push_back({static_cast<size_t>(origin), {}, {}});
      it = list.end() - 1;
    }
    if (static_cast<size_t>(h) != it->point.size() + 1) {
      return InvalidArgumentError(fmt::format(
          "{}: step {} of model {} at origin {} follows step {}; give the steps in order from 1",
          where, h, Excerpt(fields[0]), origin, it->point.size()));
    }
    it->point.push_back(numbers[0]);
    for (size_t l = 0; l < levels.size(); ++l) it->quantiles[levels[l]].push_back(numbers[l + 1]);
  }
  if (header.empty()) return InvalidArgumentError(fmt::format("{}: the file is empty", source));
  return out;
}

nlohmann::json BacktestJson(const BacktestResult& r) {
  nlohmann::json models = nlohmann::json::object();
  for (const ModelScore& s : r.scores) {
    nlohmann::json pinball = nlohmann::json::object(), coverage = nlohmann::json::object(),
                   calibration = nlohmann::json::object(),
                   scaled_pinball = nlohmann::json::object();
    for (const auto& [q, v] : s.pinball) pinball[LevelKey(q)] = v;
    for (const auto& [q, v] : s.scaled_pinball) scaled_pinball[LevelKey(q)] = v;
    for (const auto& [k, v] : s.coverage) coverage[k] = v;
    for (const auto& [q, v] : s.calibration) calibration[LevelKey(q)] = v;
    models[s.model] = {{"mase", s.mase},
                       {"smape", s.smape},
                       {"pinball", pinball},
                       {"scaled_pinball", scaled_pinball},
                       {"coverage", coverage},
                       {"calibration", calibration},
                       {"seconds_per_forecast", s.seconds_per_forecast},
                       {"origins", s.origins},
                       {"note", s.note}};
  }
  nlohmann::json origins = nlohmann::json::array();
  for (size_t i = 0; i < r.origins.size(); ++i) {
    origins.push_back({{"steps", r.origins[i]}, {"time", r.origin_times[i]}});
  }
  return {{"kind", "titan.plan.backtest"},
          {"default_model", r.default_model},
          {"models", models},
          {"series", r.series_name},
          {"step_seconds", r.step_seconds},
          {"horizon_steps", r.horizon_steps},
          {"mase_scale",
           fmt::format("in-sample mean absolute error of the seasonal naive forecast with a "
                       "one-day period ({} steps)",
                       r.season_steps)},
          {"smape_unit", "percent (0 to 200; 0/0 counted as 0)"},
          {"origins", origins}};
}

std::string FormatBacktest(const BacktestResult& r) {
  std::string out;
  auto add = [&out](std::string_view s) { out.append(s); };
  const int64_t step_ns = static_cast<int64_t>(r.step_seconds * 1e9);
  add(fmt::format(
      "backtest  {}: {} origins from {} to {}, each forecasting {} ({} steps of {}) "
      "from only what came before it\n",
      r.series_name, r.origins.size(), fleet::FormatTime(r.origin_times.front()),
      fleet::FormatTime(r.origin_times.back()), FormatDurationShort(step_ns * r.horizon_steps),
      r.horizon_steps, FormatDurationShort(step_ns)));
  add(
      fmt::format("MASE      scaled by the in-sample seasonal naive error with a one-day period "
                  "({} steps); sMAPE in percent, 0/0 = 0; pinball loss in the series' unit\n\n",
                  r.season_steps));
  std::string head = fmt::format("  {:<16} {:>7} {:>7}", "model", "MASE", "sMAPE%");
  for (double q : r.levels) head += fmt::format(" {:>9}", "pin " + LevelKey(q));
  std::vector<std::string> interval_keys;
  for (const ModelScore& s : r.scores) {
    for (const auto& [k, v] : s.coverage) {
      if (std::find(interval_keys.begin(), interval_keys.end(), k) == interval_keys.end()) {
        interval_keys.push_back(k);
      }
    }
  }
  for (const std::string& k : interval_keys) head += fmt::format(" {:>9}", "cover " + k);
  head += fmt::format(" {:>10}\n", "s/forecast");
  add(head);
  for (const ModelScore& s : r.scores) {
    std::string row =
        fmt::format("  {:<16} {:>7.3f} {:>7.1f}", s.model + (s.model == r.default_model ? "*" : ""),
                    s.mase, s.smape);
    for (double q : r.levels) {
      auto it = s.pinball.find(q);
      row +=
          it == s.pinball.end() ? fmt::format(" {:>9}", "-") : fmt::format(" {:>9.4g}", it->second);
    }
    for (const std::string& k : interval_keys) {
      auto it = s.coverage.find(k);
      row += it == s.coverage.end() ? fmt::format(" {:>9}", "-")
                                    : fmt::format(" {:>8.1f}%", 100 * it->second);
    }
    row += s.seconds_per_forecast > 0 ? fmt::format(" {:>10.4f}\n", s.seconds_per_forecast)
                                      : fmt::format(" {:>10}\n", "-");
    add(row);
  }
  add("  (* titan's default model)\n");
  for (const ModelScore& s : r.scores) {
    if (!s.note.empty()) add(fmt::format("  {}: {}\n", s.model, s.note));
  }
  return out;
}

}  // namespace titan::plan
