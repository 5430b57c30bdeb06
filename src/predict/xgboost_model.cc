#include "src/predict/xgboost_model.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <xgboost/c_api.h>

// libgomp's, which libxgboost uses: XGBoost sizes its OpenMP teams from it wherever a booster's
// own nthread is not configured yet (parsing a loaded model's trees).
extern "C" void omp_set_num_threads(int);

namespace titan::predict {

using nlohmann::json;

namespace {

Status XgbError(const char* what) {
  return InternalError(std::string("xgboost: ") + what + ": " + XGBGetLastError());
}

// Owns a DMatrix.
class Matrix {
 public:
  ~Matrix() {
    if (h_) XGDMatrixFree(h_);
  }
  Status Make(const Landmarks& rows, int p) {
    if (XGDMatrixCreateFromMat(rows.x.data(), rows.rows.size(), p, NAN, &h_) != 0) {
      return XgbError("creating the feature matrix");
    }
    return OkStatus();
  }
  DMatrixHandle get() const { return h_; }

 private:
  DMatrixHandle h_ = nullptr;
};

class XgboostCox : public RiskModel {
 public:
  ~XgboostCox() override {
    if (booster_) XGBoosterFree(booster_);
  }
  const char* name() const override { return "xgboost_cox"; }

  Status Fit(const Landmarks& train, const FeatureSpace& space) override {
    p_ = space.p();
    Matrix m;
    TITAN_RETURN_IF_ERROR(m.Make(train, p_));
    std::vector<float> label, weight;
    for (const LandmarkRow& r : train.rows) {
      const float t = static_cast<float>(std::max(r.follow_seconds / kDaySeconds, 1e-6));
      label.push_back(r.event ? t : -t);
      weight.push_back(static_cast<float>(r.weight));
    }
    if (XGDMatrixSetFloatInfo(m.get(), "label", label.data(), label.size()) != 0 ||
        XGDMatrixSetFloatInfo(m.get(), "weight", weight.data(), weight.size()) != 0) {
      return XgbError("setting labels");
    }
    if (booster_) XGBoosterFree(booster_);
    booster_ = nullptr;
    DMatrixHandle dm = m.get();
    if (XGBoosterCreate(&dm, 1, &booster_) != 0) return XgbError("creating the booster");
    const std::pair<const char*, const char*> params[] = {{"objective", "survival:cox"},
                                                          {"eta", "0.1"},
                                                          {"max_depth", "3"},
                                                          {"min_child_weight", "20"},
                                                          {"subsample", "0.8"},
                                                          {"tree_method", "hist"},
                                                          {"nthread", "1"},
                                                          {"seed", "1"},
                                                          {"verbosity", "0"}};
    for (const auto& [k, v] : params) {
      if (XGBoosterSetParam(booster_, k, v) != 0) return XgbError("setting a parameter");
    }
    for (int i = 0; i < kRounds; ++i) {
      if (XGBoosterUpdateOneIter(booster_, i, m.get()) != 0) return XgbError("training");
    }
    // Breslow: H0(h) = sum over events of w / sum of w * risk of those still at risk.
    std::vector<double> risk = Risks(m);
    std::vector<size_t> order(train.rows.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return train.rows[a].follow_seconds > train.rows[b].follow_seconds;
    });
    double s0 = 0;
    std::vector<std::pair<double, double>> steps;  // (time, increment)
    for (size_t k = 0; k < order.size();) {
      const double t = train.rows[order[k]].follow_seconds;
      double d = 0;
      size_t j = k;
      for (; j < order.size() && train.rows[order[j]].follow_seconds == t; ++j) {
        s0 += train.rows[order[j]].weight * risk[order[j]];
        if (train.rows[order[j]].event) d += train.rows[order[j]].weight;
      }
      if (d > 0) steps.emplace_back(t, d / s0);
      k = j;
    }
    h0_ = 0;
    for (const auto& [t, inc] : steps) {
      if (t <= space.options.horizon_seconds) h0_ += inc;
    }
    return OkStatus();
  }

  std::vector<double> Predict(const Landmarks& rows) const override {
    std::vector<double> out(rows.rows.size(), 0.0);
    if (!booster_ || rows.rows.empty()) return out;
    Matrix m;
    if (!m.Make(rows, p_).ok()) return out;
    std::vector<double> risk = Risks(m);
    for (size_t i = 0; i < out.size(); ++i) out[i] = 1 - std::exp(-h0_ * risk[i]);
    return out;
  }

  json Save() const override {
    bst_ulong len = 0;
    const char* buf = nullptr;
    std::string text;
    if (booster_ &&
        XGBoosterSaveModelToBuffer(booster_, "{\"format\": \"json\"}", &len, &buf) == 0) {
      text.assign(buf, len);
    }
    return {{"model", name()}, {"h0", h0_}, {"p", p_}, {"booster", text}};
  }

  Status Load(const json& m, const FeatureSpace& space) override {
    if (!m.contains("booster") || !m["booster"].is_string() || !m.contains("h0") ||
        !m["h0"].is_number() || !m.contains("p") || m["p"] != space.p()) {
      return InvalidArgumentError("malformed xgboost_cox model (or fitted on other features)");
    }
    p_ = space.p();
    h0_ = m["h0"].get<double>();
    const std::string text = m["booster"].get<std::string>();
    if (booster_) XGBoosterFree(booster_);
    booster_ = nullptr;
    // One thread, set before the load: a saved model carries no thread count, and XGBoost
    // would parse its trees on an OpenMP team of every core.
    if (XGBoosterCreate(nullptr, 0, &booster_) != 0 ||
        XGBoosterSetParam(booster_, "nthread", "1") != 0 ||
        XGBoosterLoadModelFromBuffer(booster_, text.data(), text.size()) != 0) {
      return XgbError("loading the booster");
    }
    return OkStatus();
  }

 private:
  static constexpr int kRounds = 100;
  std::vector<double> Risks(const Matrix& m) const {
    bst_ulong len = 0;
    const float* out = nullptr;
    std::vector<double> risk;
    if (XGBoosterPredict(booster_, m.get(), 0, 0, 0, &len, &out) != 0) return risk;
    risk.assign(out, out + len);  // survival:cox predicts exp(margin)
    return risk;
  }
  BoosterHandle booster_ = nullptr;
  int p_ = 0;
  double h0_ = 0;
};

}  // namespace

std::unique_ptr<RiskModel> MakeXgboostCox() {
  // One thread everywhere: OpenMP teams that spin-wait for work took 80% of a shared 2-core
  // machine (bench/RESULTS.md, "Predict"), and the fits are small.
  static const bool once = [] {
    omp_set_num_threads(1);
    return true;
  }();
  (void)once;
  return std::make_unique<XgboostCox>();
}

}  // namespace titan::predict
