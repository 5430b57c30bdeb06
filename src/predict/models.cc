#include "src/predict/models.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "src/predict/cox.h"
#include "src/predict/xgboost_model.h"

namespace titan::predict {

using nlohmann::json;

namespace {

std::vector<Interval> TrainIntervals(const Landmarks& train) {
  std::vector<Interval> d;
  d.reserve(train.rows.size());
  for (const LandmarkRow& r : train.rows) {
    d.push_back({0, r.follow_seconds / kDaySeconds, r.event ? 0 : -1, r.component});
  }
  return d;
}

std::vector<double> Weights(const Landmarks& train) {
  std::vector<double> w;
  for (const LandmarkRow& r : train.rows) w.push_back(r.weight);
  return w;
}

// Cox on a subset of the feature columns, standardised.
class LandmarkCox : public RiskModel {
 public:
  // columns: names of feature columns to use; empty: all. Names ending in '=' select every
  // one-hot column of that key.
  LandmarkCox(const char* name, std::vector<std::string> columns)
      : name_(name), wanted_(std::move(columns)) {}
  const char* name() const override { return name_; }

  Status Fit(const Landmarks& train, const FeatureSpace& space) override {
    Select(space);
    const size_t n = train.rows.size();
    const int p = static_cast<int>(cols_.size());
    mean_.assign(p, 0.0);
    scale_.assign(p, 1.0);
    double wsum = 0;
    for (size_t i = 0; i < n; ++i) {
      const double w = train.rows[i].weight;
      wsum += w;
      for (int j = 0; j < p; ++j) mean_[j] += w * train.x[i * space.p() + cols_[j]];
    }
    if (wsum <= 0) return InvalidArgumentError("no training rows");
    for (int j = 0; j < p; ++j) mean_[j] /= wsum;
    std::vector<double> var(p, 0.0);
    for (size_t i = 0; i < n; ++i) {
      for (int j = 0; j < p; ++j) {
        const double d = train.x[i * space.p() + cols_[j]] - mean_[j];
        var[j] += train.rows[i].weight * d * d;
      }
    }
    for (int j = 0; j < p; ++j) scale_[j] = var[j] > 0 ? std::sqrt(var[j] / wsum) : 0;
    std::vector<double> x(n * p);
    for (size_t i = 0; i < n; ++i) {
      for (int j = 0; j < p; ++j) {
        // Scaled, not centred: FitCox centres what it must and keeps factor columns sparse.
        x[i * p + j] = scale_[j] > 0 ? train.x[i * space.p() + cols_[j]] / scale_[j] : 0;
      }
    }
    CoxOptions o;
    o.weights = Weights(train);
    o.ridge = 1.0;
    o.robust = false;
    auto fit = FitCox(TrainIntervals(train), x, p, o);
    if (!fit.ok()) return fit.status().WithContext(name_);
    coef_ = fit->coef;
    h0_ = fit->BaselineCumHaz(space.options.horizon_seconds / kDaySeconds);
    return OkStatus();
  }

  std::vector<double> Predict(const Landmarks& rows) const override {
    std::vector<double> out(rows.rows.size());
    const int P = p_all_;
    for (size_t i = 0; i < rows.rows.size(); ++i) {
      out[i] = 1 - std::exp(-h0_ * std::exp(Eta(&rows.x[i * P])));
    }
    return out;
  }

  std::vector<double> Contributions(const Landmarks& rows, size_t i) const override {
    std::vector<double> c(p_all_, 0.0);
    const float* x = &rows.x[i * p_all_];
    for (size_t j = 0; j < cols_.size(); ++j) {
      if (scale_[j] > 0) c[cols_[j]] = coef_[j] * (x[cols_[j]] - mean_[j]) / scale_[j];
    }
    return c;
  }

  json Save() const override {
    json cols = json::array();
    for (int c : cols_) cols.push_back(names_[c]);
    return {{"model", name_},  {"columns", cols}, {"mean", mean_},
            {"scale", scale_}, {"coef", coef_},   {"h0", h0_}};
  }

  Status Load(const json& m, const FeatureSpace& space) override {
    try {
      names_ = space.names;
      p_all_ = space.p();
      cols_.clear();
      for (const json& c : m.at("columns")) {
        int col = space.Column(c.get<std::string>());
        if (col < 0) {
          return InvalidArgumentError("model column '" + c.get<std::string>() +
                                      "' is not a feature of this history");
        }
        cols_.push_back(col);
      }
      mean_ = m.at("mean").get<std::vector<double>>();
      scale_ = m.at("scale").get<std::vector<double>>();
      coef_ = m.at("coef").get<std::vector<double>>();
      h0_ = m.at("h0").get<double>();
    } catch (const json::exception& e) {
      return InvalidArgumentError(std::string("malformed model: ") + e.what());
    }
    if (mean_.size() != cols_.size() || scale_.size() != cols_.size() ||
        coef_.size() != cols_.size()) {
      return InvalidArgumentError("malformed model: column and coefficient counts differ");
    }
    return OkStatus();
  }

 private:
  void Select(const FeatureSpace& space) {
    names_ = space.names;
    p_all_ = space.p();
    cols_.clear();
    for (int c = 0; c < space.p(); ++c) {
      const std::string& n = space.names[c];
      bool use = wanted_.empty();
      for (const std::string& w : wanted_) {
        use |= n == w || (w.back() == '=' && n.rfind(w, 0) == 0);
      }
      if (use) cols_.push_back(c);
    }
  }
  double Eta(const float* x) const {
    double eta = 0;
    for (size_t j = 0; j < cols_.size(); ++j) {
      if (scale_[j] > 0) eta += coef_[j] * x[cols_[j]] / scale_[j];
    }
    return eta;
  }

  const char* name_;
  std::vector<std::string> wanted_;
  std::vector<std::string> names_;
  int p_all_ = 0;
  std::vector<int> cols_;
  std::vector<double> mean_, scale_, coef_;
  double h0_ = 0;
};

// P(failure within h) from the weighted landmark KM: the same for every row.
class KaplanMeierModel : public RiskModel {
 public:
  const char* name() const override { return "kaplan_meier"; }
  Status Fit(const Landmarks& train, const FeatureSpace& space) override {
    std::vector<size_t> order(train.rows.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return train.rows[a].follow_seconds < train.rows[b].follow_seconds;
    });
    double at_risk = 0;
    for (const LandmarkRow& r : train.rows) at_risk += r.weight;
    double s = 1;
    for (size_t k = 0; k < order.size();) {
      const double t = train.rows[order[k]].follow_seconds;
      double d = 0, gone = 0;
      for (; k < order.size() && train.rows[order[k]].follow_seconds == t; ++k) {
        const LandmarkRow& r = train.rows[order[k]];
        if (r.event) d += r.weight;
        gone += r.weight;
      }
      if (at_risk > 0) s *= 1 - d / at_risk;
      at_risk -= gone;
    }
    p_ = 1 - s;
    return OkStatus();
  }
  std::vector<double> Predict(const Landmarks& rows) const override {
    return std::vector<double>(rows.rows.size(), p_);
  }
  json Save() const override { return {{"model", name()}, {"p", p_}}; }
  Status Load(const json& m, const FeatureSpace&) override {
    if (!m.contains("p") || !m["p"].is_number()) return InvalidArgumentError("malformed model");
    p_ = m["p"].get<double>();
    return OkStatus();
  }

 private:
  double p_ = 0;
};

class RepeatOffenders : public RiskModel {
 public:
  const char* name() const override { return "repeat_offenders"; }
  Status Fit(const Landmarks& train, const FeatureSpace& space) override {
    Select(space);
    double w[2] = {0, 0}, d[2] = {0, 0};
    for (size_t i = 0; i < train.rows.size(); ++i) {
      const int f = Flagged(&train.x[i * p_]);
      w[f] += train.rows[i].weight;
      if (train.rows[i].event) d[f] += train.rows[i].weight;
    }
    const double overall = (d[0] + d[1]) / std::max(w[0] + w[1], 1e-300);
    for (int f = 0; f < 2; ++f) rate_[f] = w[f] > 0 ? d[f] / w[f] : overall;
    return OkStatus();
  }
  std::vector<double> Predict(const Landmarks& rows) const override {
    std::vector<double> out(rows.rows.size());
    for (size_t i = 0; i < out.size(); ++i) {
      const float* x = &rows.x[i * p_];
      // Within the flagged, more recent failures rank higher.
      out[i] = rate_[Flagged(x)] * (1 + 1e-6 * Score(x));
    }
    return out;
  }
  json Save() const override { return {{"model", name()}, {"rate", {rate_[0], rate_[1]}}}; }
  Status Load(const json& m, const FeatureSpace& space) override {
    Select(space);
    if (!m.contains("rate") || !m["rate"].is_array() || m["rate"].size() != 2) {
      return InvalidArgumentError("malformed model");
    }
    rate_[0] = m["rate"][0].get<double>();
    rate_[1] = m["rate"][1].get<double>();
    return OkStatus();
  }

 private:
  void Select(const FeatureSpace& space) {
    p_ = space.p();
    own_ = space.Column("comp_failures_30d");
    unit_ = space.options.unit_keys.empty()
                ? -1
                : space.Column(space.options.unit_keys[0] + "_failures_30d");
  }
  double Score(const float* x) const {
    return std::expm1(x[own_]) + (unit_ >= 0 ? std::expm1(x[unit_]) : 0);
  }
  int Flagged(const float* x) const { return Score(x) > 0.5 ? 1 : 0; }
  int p_ = 0, own_ = 0, unit_ = -1;
  double rate_[2] = {0, 0};
};

}  // namespace

const std::vector<std::string>& ModelNames() {
  static const std::vector<std::string> names = {"cox_history", "xgboost_cox", "cox_batch_age",
                                                 "kaplan_meier", "repeat_offenders"};
  return names;
}

std::unique_ptr<RiskModel> MakeModel(const std::string& name) {
  if (name == "cox_history")
    return std::make_unique<LandmarkCox>("cox_history", std::vector<std::string>{});
  if (name == "cox_batch_age") {
    return std::make_unique<LandmarkCox>("cox_batch_age",
                                         std::vector<std::string>{"age_days", "batch="});
  }
  if (name == "kaplan_meier") return std::make_unique<KaplanMeierModel>();
  if (name == "repeat_offenders") return std::make_unique<RepeatOffenders>();
  if (name == "xgboost_cox") return MakeXgboostCox();
  return nullptr;
}

}  // namespace titan::predict
