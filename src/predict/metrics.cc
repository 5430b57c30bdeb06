#include "src/predict/metrics.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace titan::predict {

namespace {

// Kaplan-Meier of the censoring times: G(t) = P(not censored by t); censoring = rows that end
// before the horizon without a failure.
struct Censoring {
  std::vector<double> time, surv;
  // G(t-): the curve just before t.
  double Before(double t) const {
    auto it = std::lower_bound(time.begin(), time.end(), t);
    return it == time.begin() ? 1.0 : surv[it - time.begin() - 1];
  }
};

// Rows still in service and not failed at the horizon ("controls") are most rows; every
// other row ended early. Only the early ones need sorting.
bool IsControl(const ScoredRow& r, double horizon) { return !r.event && r.follow >= horizon; }

Censoring CensoringCurve(const std::vector<ScoredRow>& rows, double horizon) {
  std::vector<std::pair<double, bool>> early;  // (time, censored)
  double controls = 0;
  for (const ScoredRow& r : rows) {
    if (IsControl(r, horizon)) {
      controls += 1;
    } else {
      early.emplace_back(r.follow, !r.event && r.follow < horizon);
    }
  }
  std::sort(early.begin(), early.end());
  Censoring g;
  double at_risk = static_cast<double>(rows.size()), s = 1;
  for (size_t k = 0; k < early.size();) {
    const double t = early[k].first;
    double c = 0, gone = 0;
    for (; k < early.size() && early[k].first == t; ++k) {
      c += early[k].second;
      gone += 1;
    }
    if (c > 0) {
      s *= 1 - c / at_risk;
      g.time.push_back(t);
      g.surv.push_back(s);
    }
    at_risk -= gone;
  }
  (void)controls;
  return g;
}

// Concordance within one origin: (concordant, comparable) sums for Harrell (weight 1; a row
// censored at an event's time counts as outliving it) and Uno (weight 1/G(T_i-)^2, strictly
// longer follow-up, T_i < horizon). Controls outlive every event and are counted through their
// sorted predictions; the few other rows pair by brute force.
void Concordance(const std::vector<const ScoredRow*>& events,
                 const std::vector<const ScoredRow*>& early, const std::vector<double>& controls,
                 const Censoring& g, double horizon, double* h_num, double* h_den, double* u_num,
                 double* u_den) {
  const double nc = static_cast<double>(controls.size());
  for (const ScoredRow* e : events) {
    const double below =
        std::lower_bound(controls.begin(), controls.end(), e->p) - controls.begin();
    const double tie =
        (std::upper_bound(controls.begin(), controls.end(), e->p) - controls.begin()) - below;
    double hn = below + 0.5 * tie, hd = nc, un = hn, ud = nc;
    for (const ScoredRow* j : early) {
      if (j == e) continue;
      const double c = j->p < e->p ? 1 : j->p == e->p ? 0.5 : 0;
      if (j->follow > e->follow || (j->follow == e->follow && !j->event)) {
        hn += c;
        hd += 1;
      }
      if (j->follow > e->follow) {
        un += c;
        ud += 1;
      }
    }
    *h_num += hn;
    *h_den += hd;
    if (e->follow < horizon) {
      const double gi = g.Before(e->follow);
      const double w = gi > 0 ? 1 / (gi * gi) : 0;
      *u_num += w * un;
      *u_den += w * ud;
    }
  }
}

// Weighted logistic regression of y on logit(p): returns the slope.
double CalibrationSlope(const std::vector<double>& lp, const std::vector<double>& y,
                        const std::vector<double>& w) {
  // A constant prediction has no slope (the Kaplan-Meier baseline): say so instead of iterating.
  if (lp.empty() ||
      *std::min_element(lp.begin(), lp.end()) == *std::max_element(lp.begin(), lp.end())) {
    return NAN;
  }
  double a = 0, b = 1;
  for (int it = 0; it < 25; ++it) {
    double g0 = 0, g1 = 0, h00 = 0, h01 = 0, h11 = 0;
    for (size_t i = 0; i < lp.size(); ++i) {
      const double mu = 1 / (1 + std::exp(-(a + b * lp[i])));
      const double r = w[i] * (y[i] - mu), v = w[i] * mu * (1 - mu);
      g0 += r;
      g1 += r * lp[i];
      h00 += v;
      h01 += v * lp[i];
      h11 += v * lp[i] * lp[i];
    }
    const double det = h00 * h11 - h01 * h01;
    if (!(std::fabs(det) > 1e-300)) return NAN;
    const double da = (h11 * g0 - h01 * g1) / det, db = (h00 * g1 - h01 * g0) / det;
    a += da;
    b += db;
    if (std::fabs(da) + std::fabs(db) < 1e-7) break;
  }
  return b;
}

}  // namespace

nlohmann::json Metrics::ToJson() const {
  auto num = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); };
  auto at = [&](const std::map<double, double>& m) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [k, v] : m) j[fmt::format("{}", k)] = num(v);
    return j;
  };
  return {{"c_index", num(c_index)},
          {"c_index_uno", num(c_index_uno)},
          {"auc", num(auc)},
          {"brier", num(brier)},
          {"calibration_slope", num(calibration_slope)},
          {"precision_at", at(precision_at)},
          {"recall_at", at(recall_at)},
          {"lift_at", at(lift_at)},
          {"rows", rows},
          {"events", events},
          {"calibration", [&] {
             nlohmann::json bins = nlohmann::json::array();
             for (const Bin& b : calibration) {
               bins.push_back(
                   {{"p_mean", num(b.p_mean)}, {"observed", num(b.observed)}, {"rows", b.rows}});
             }
             return bins;
           }()}};
}

Metrics Evaluate(const std::vector<ScoredRow>& rows, double horizon) {
  Metrics m;
  m.rows = static_cast<int64_t>(rows.size());
  const Censoring g = CensoringCurve(rows, horizon);
  const double g_h = g.Before(horizon);
  std::map<int32_t, std::vector<const ScoredRow*>> by_origin;
  for (const ScoredRow& r : rows) {
    by_origin[r.origin].push_back(&r);
    m.events += r.event;
  }
  double h_num = 0, h_den = 0, u_num = 0, u_den = 0, a_num = 0, a_den = 0;
  std::map<double, double> hits, top_n;
  double brier = 0;
  std::vector<double> lp, y, w;
  const double wc = g_h > 0 ? 1 / g_h : 0;
  std::vector<const ScoredRow*> events, early;
  std::vector<double> controls;
  std::vector<const ScoredRow*> all;
  for (auto& [origin, v] : by_origin) {
    events.clear();
    early.clear();
    controls.clear();
    for (const ScoredRow* r : v) {
      if (IsControl(*r, horizon)) {
        controls.push_back(r->p);
      } else {
        early.push_back(r);
        if (r->event) events.push_back(r);
      }
    }
    std::sort(controls.begin(), controls.end());
    Concordance(events, early, controls, g, horizon, &h_num, &h_den, &u_num, &u_den);
    // AUC at the horizon: failed by h vs. controls.
    for (const ScoredRow* r : events) {
      const double gi = g.Before(r->follow);
      const double wi = gi > 0 ? 1 / gi : 0;
      const double below =
          std::lower_bound(controls.begin(), controls.end(), r->p) - controls.begin();
      const double tie =
          (std::upper_bound(controls.begin(), controls.end(), r->p) - controls.begin()) - below;
      a_num += wi * wc * (below + 0.5 * tie);
      a_den += wi * wc * static_cast<double>(controls.size());
    }
    // Top fractions: the m-th row in (p descending, order ascending) is found in linear time,
    // and the hits are the events at or before it.
    auto before = [](const ScoredRow* a, const ScoredRow* b) {
      return a->p != b->p ? a->p > b->p : a->order < b->order;
    };
    all = v;
    for (double k : kTopFractions) {
      const size_t top =
          std::min(all.size(), static_cast<size_t>(std::ceil(k * static_cast<double>(all.size()))));
      if (top == 0) continue;
      std::nth_element(all.begin(), all.begin() + (top - 1), all.end(), before);
      const ScoredRow* pivot = all[top - 1];
      double h = 0;
      for (const ScoredRow* e : events) h += e == pivot || before(e, pivot);
      hits[k] += h;
      top_n[k] += static_cast<double>(top);
    }
  }
  for (const ScoredRow& r : rows) {
    const double p = std::clamp(r.p, 1e-12, 1 - 1e-12);
    if (r.event) {
      const double gi = g.Before(r.follow);
      const double wi = gi > 0 ? 1 / gi : 0;
      brier += wi * (1 - r.p) * (1 - r.p);
      lp.push_back(std::log(p / (1 - p)));
      y.push_back(1);
      w.push_back(wi);
    } else if (r.follow >= horizon) {
      brier += wc * r.p * r.p;
      lp.push_back(std::log(p / (1 - p)));
      y.push_back(0);
      w.push_back(wc);
    }
  }
  // Deciles of the known-outcome rows by prediction: nine cut points by selection (no sort of
  // a million rows), each row to its bin by binary search.
  if (!lp.empty()) {
    constexpr size_t kBins = 10;
    std::vector<double> copy = lp, cuts;
    for (size_t b = 1; b < kBins; ++b) {
      auto nth = copy.begin() + static_cast<std::ptrdiff_t>(b * copy.size() / kBins);
      std::nth_element(copy.begin(), nth, copy.end());
      cuts.push_back(*nth);
    }
    std::vector<double> wp(kBins, 0), wy(kBins, 0), ws(kBins, 0);
    std::vector<int64_t> n(kBins, 0);
    for (size_t i = 0; i < lp.size(); ++i) {
      const size_t bin = std::upper_bound(cuts.begin(), cuts.end(), lp[i]) - cuts.begin();
      wp[bin] += w[i] / (1 + std::exp(-lp[i]));
      wy[bin] += w[i] * y[i];
      ws[bin] += w[i];
      ++n[bin];
    }
    for (size_t bin = 0; bin < kBins; ++bin) {
      if (n[bin] == 0) continue;
      m.calibration.push_back(
          {ws[bin] > 0 ? wp[bin] / ws[bin] : NAN, ws[bin] > 0 ? wy[bin] / ws[bin] : NAN, n[bin]});
    }
  }
  m.c_index = h_den > 0 ? h_num / h_den : NAN;
  m.c_index_uno = u_den > 0 ? u_num / u_den : NAN;
  m.auc = a_den > 0 ? a_num / a_den : NAN;
  m.brier = rows.empty() ? NAN : brier / static_cast<double>(rows.size());
  m.calibration_slope = CalibrationSlope(lp, y, w);
  const double base =
      rows.empty() ? 0 : static_cast<double>(m.events) / static_cast<double>(rows.size());
  for (double k : kTopFractions) {
    m.precision_at[k] = top_n[k] > 0 ? hits[k] / top_n[k] : NAN;
    m.recall_at[k] = m.events > 0 ? hits[k] / static_cast<double>(m.events) : NAN;
    m.lift_at[k] = base > 0 ? m.precision_at[k] / base : NAN;
  }
  return m;
}

}  // namespace titan::predict
