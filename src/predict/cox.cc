#include "src/predict/cox.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include <fmt/format.h>

#include "src/predict/linalg.h"

namespace titan::predict {

namespace {

// The risk sets, visited at each distinct event time from the last to the first.
struct Sweep {
  std::vector<uint32_t> by_stop, by_start;  // descending
  std::vector<double> times;                // distinct event times, descending
};

Sweep MakeSweep(const std::vector<Interval>& data) {
  Sweep s;
  const size_t n = data.size();
  s.by_stop.resize(n);
  std::iota(s.by_stop.begin(), s.by_stop.end(), 0);
  s.by_start = s.by_stop;
  std::sort(s.by_stop.begin(), s.by_stop.end(),
            [&](uint32_t a, uint32_t b) { return data[a].stop > data[b].stop; });
  std::sort(s.by_start.begin(), s.by_start.end(),
            [&](uint32_t a, uint32_t b) { return data[a].start > data[b].start; });
  s.times = EventTimes(data);
  std::reverse(s.times.begin(), s.times.end());
  return s;
}

struct Pass {
  double loglik = 0;
  std::vector<double> score, info;
};

// One pass over the risk sets at beta (covariates centred). With `residuals`, also the
// per-time quantities the score residuals need (ascending in time is not required: they are
// indexed by position in sweep.times).
struct TimeTerms {
  std::vector<double> a_full, a_death;  // sum_k 1/s0_k, sum_k (1 - k/d)/s0_k
  std::vector<double> b_full, b_death;  // p per time: sum_k xbar_k/s0_k, weighted alike
  std::vector<double> xbar_mean;        // p per time: mean_k xbar_k
  std::vector<double> breslow;          // d / S0 (centred weights)
};

// The covariates as the fit sees them: dense columns centred, mostly-zero columns (factor
// levels) left as they are so that each row's outer product costs its non-zeros only; `shift`
// is what was not subtracted (mean of the uncentred columns), so that x_full = x - shift.
struct Covariates {
  int p = 0;
  std::vector<double> x;               // n x p
  std::vector<double> shift;           // p
  std::vector<uint32_t> nz_begin, nz;  // per row, the non-zero columns (ascending)
  double Offset(const std::vector<double>& beta) const {
    double o = 0;
    for (int j = 0; j < p; ++j) o += shift[j] * beta[j];
    return o;
  }
};

Pass Evaluate(const std::vector<Interval>& data, const Covariates& cv,
              const std::vector<double>& w_case, const Sweep& sweep,
              const std::vector<double>& beta, TimeTerms* terms) {
  const size_t n = data.size();
  const int p = cv.p;
  const std::vector<double>& x = cv.x;
  const double offset = cv.Offset(beta);
  std::vector<double> risk(n);
  for (size_t i = 0; i < n; ++i) {
    double eta = -offset;
    for (uint32_t k = cv.nz_begin[i]; k < cv.nz_begin[i + 1]; ++k)
      eta += x[i * p + cv.nz[k]] * beta[cv.nz[k]];
    risk[i] = w_case[i] * std::exp(eta);
  }
  Pass out;
  out.score.assign(p, 0.0);
  out.info.assign(static_cast<size_t>(p) * p, 0.0);
  std::vector<double> s1(p, 0.0), s2(static_cast<size_t>(p) * p, 0.0);
  std::vector<double> d1(p), d2(static_cast<size_t>(p) * p), xb(p);
  double s0 = 0;
  size_t is = 0, ib = 0;
  const size_t nt = sweep.times.size();
  if (terms) {
    terms->a_full.assign(nt, 0);
    terms->a_death.assign(nt, 0);
    terms->b_full.assign(nt * p, 0);
    terms->b_death.assign(nt * p, 0);
    terms->xbar_mean.assign(nt * p, 0);
    terms->breslow.assign(nt, 0);
  }
  auto add = [&](uint32_t i, double sign) {
    const double r = sign * risk[i];
    s0 += r;
    const double* xi = &x[static_cast<size_t>(i) * p];
    const uint32_t* nz = &cv.nz[cv.nz_begin[i]];
    const uint32_t m = cv.nz_begin[i + 1] - cv.nz_begin[i];
    for (uint32_t ka = 0; ka < m; ++ka) {
      const uint32_t a = nz[ka];
      const double rxa = r * xi[a];
      s1[a] += rxa;
      double* row = &s2[a * p];
      for (uint32_t kb = 0; kb <= ka; ++kb) row[nz[kb]] += rxa * xi[nz[kb]];
    }
  };
  std::vector<uint32_t> deaths;
  for (size_t ti = 0; ti < nt; ++ti) {
    const double t = sweep.times[ti];
    deaths.clear();
    while (is < n && data[sweep.by_stop[is]].stop >= t) {
      uint32_t i = sweep.by_stop[is++];
      add(i, +1);
      if (data[i].stop == t && data[i].event >= 0) deaths.push_back(i);
    }
    while (ib < n && data[sweep.by_start[ib]].start >= t) add(sweep.by_start[ib++], -1);
    // The deaths at t are those added at stop == t (added in this or an earlier step only when
    // their stop equals t, which happens in this step since times descend).
    double d0 = 0, dw = 0;
    std::fill(d1.begin(), d1.end(), 0.0);
    std::fill(d2.begin(), d2.end(), 0.0);
    for (uint32_t i : deaths) {
      const double r = risk[i];
      d0 += r;
      dw += w_case[i];
      const double* xi = &x[static_cast<size_t>(i) * p];
      out.loglik -= w_case[i] * offset;
      for (int a = 0; a < p; ++a) {
        d1[a] += r * xi[a];
        out.score[a] += w_case[i] * xi[a];
        out.loglik += w_case[i] * xi[a] * beta[a];
        for (int b = 0; b <= a; ++b) d2[a * p + b] += r * xi[a] * xi[b];
      }
    }
    const double d = static_cast<double>(deaths.size());
    const double mean_w = dw / d;  // Efron with case weights: each term carries the mean weight
    for (int k = 0; k < static_cast<int>(deaths.size()); ++k) {
      const double f = k / d;
      const double den = s0 - f * d0;
      out.loglik -= mean_w * std::log(den);
      for (int a = 0; a < p; ++a) xb[a] = (s1[a] - f * d1[a]) / den;
      for (int a = 0; a < p; ++a) {
        out.score[a] -= mean_w * xb[a];
        for (int b = 0; b <= a; ++b) {
          out.info[a * p + b] +=
              mean_w * ((s2[a * p + b] - f * d2[a * p + b]) / den - xb[a] * xb[b]);
        }
      }
      if (terms) {
        terms->a_full[ti] += mean_w / den;
        terms->a_death[ti] += mean_w * (1 - f) / den;
        for (int a = 0; a < p; ++a) {
          terms->b_full[ti * p + a] += mean_w * xb[a] / den;
          terms->b_death[ti * p + a] += mean_w * (1 - f) * xb[a] / den;
          terms->xbar_mean[ti * p + a] += xb[a] / d;
        }
      }
    }
    if (terms) terms->breslow[ti] = dw / s0;
  }
  for (int a = 0; a < p; ++a) {
    for (int b = 0; b < a; ++b) out.info[b * p + a] = out.info[a * p + b];
  }
  return out;
}

void Penalise(double ridge, const std::vector<double>& beta, Pass* pass) {
  if (ridge <= 0) return;
  const int p = static_cast<int>(beta.size());
  for (int j = 0; j < p; ++j) {
    pass->loglik -= 0.5 * ridge * beta[j] * beta[j];
    pass->score[j] -= ridge * beta[j];
    pass->info[j * p + j] += ridge;
  }
}

}  // namespace

double CoxFit::BaselineCumHaz(double t) const {
  auto it = std::upper_bound(base_time.begin(), base_time.end(), t);
  if (it == base_time.begin()) return 0.0;
  return base_cumhaz[it - base_time.begin() - 1];
}

double CoxFit::LinearPredictor(const double* x) const {
  double eta = 0;
  for (int j = 0; j < p; ++j) eta += coef[j] * x[j];
  return eta;
}

Result<CoxFit> FitCox(const std::vector<Interval>& data, const std::vector<double>& x_raw, int p,
                      const CoxOptions& options) {
  const size_t n = data.size();
  if (x_raw.size() != n * static_cast<size_t>(p)) {
    return InternalError("FitCox: covariate matrix size does not match the intervals");
  }
  std::vector<double> w_case = options.weights;
  if (w_case.empty()) w_case.assign(n, 1.0);
  CoxFit fit;
  fit.p = p;
  fit.n = static_cast<int64_t>(n);
  for (const Interval& i : data) fit.events += i.event >= 0;
  if (fit.events == 0) return InvalidArgumentError("no event to fit a Cox model to");
  // Centre the covariates (as R does) for numerical stability: the dense ones in place, the
  // mostly-zero ones through the linear predictor's offset (Covariates).
  std::vector<double> mean(p, 0.0);
  std::vector<int64_t> nonzero(p, 0);
  double wsum = 0;
  for (size_t i = 0; i < n; ++i) {
    wsum += w_case[i];
    for (int j = 0; j < p; ++j) {
      mean[j] += w_case[i] * x_raw[i * p + j];
      nonzero[j] += x_raw[i * p + j] != 0;
    }
  }
  for (int j = 0; j < p; ++j) mean[j] /= wsum;
  Covariates cv;
  cv.p = p;
  cv.x = x_raw;
  cv.shift.assign(p, 0.0);
  for (int j = 0; j < p; ++j) {
    if (nonzero[j] * 2 < static_cast<int64_t>(n)) cv.shift[j] = mean[j];
  }
  cv.nz_begin.reserve(n + 1);
  cv.nz_begin.push_back(0);
  for (size_t i = 0; i < n; ++i) {
    for (int j = 0; j < p; ++j) {
      double& v = cv.x[i * p + j];
      if (cv.shift[j] == 0) v -= mean[j];
      if (v != 0) cv.nz.push_back(static_cast<uint32_t>(j));
    }
    cv.nz_begin.push_back(static_cast<uint32_t>(cv.nz.size()));
  }
  const std::vector<double>& x = cv.x;
  const Sweep sweep = MakeSweep(data);
  std::vector<double> beta(p, 0.0);
  Pass cur = Evaluate(data, cv, w_case, sweep, beta, nullptr);
  Penalise(options.ridge, beta, &cur);
  fit.loglik_null = cur.loglik;
  for (fit.iterations = 1; fit.iterations <= options.max_iterations; ++fit.iterations) {
    std::vector<double> inv = cur.info;
    if (!InvertSpd(&inv, p)) {
      int col = 0;
      for (int j = 0; j < p; ++j) {
        if (cur.info[j * p + j] <= 1e-12) col = j;
      }
      return InvalidArgumentError(fmt::format(
          "covariate {} is constant among those at risk or collinear with others; drop it", col));
    }
    std::vector<double> step = MatVec(inv, cur.score, p);
    std::vector<double> next(p);
    Pass trial;
    double scale = 1;
    for (int halving = 0; halving < 30; ++halving, scale /= 2) {
      for (int j = 0; j < p; ++j) next[j] = beta[j] + scale * step[j];
      trial = Evaluate(data, cv, w_case, sweep, next, nullptr);
      Penalise(options.ridge, next, &trial);
      if (std::isfinite(trial.loglik) &&
          trial.loglik >= cur.loglik - 1e-12 * std::fabs(cur.loglik)) {
        break;
      }
    }
    const double change = std::fabs(1 - cur.loglik / trial.loglik);
    beta = next;
    cur = trial;
    if (change < options.tolerance) {
      fit.converged = true;
      break;
    }
  }
  if (!fit.converged) {
    return InvalidArgumentError(fmt::format(
        "the Cox fit did not converge in {} iterations (a covariate may separate the events "
        "perfectly: a group with no failures, or only failures)",
        options.max_iterations));
  }
  TimeTerms terms;
  cur = Evaluate(data, cv, w_case, sweep, beta, &terms);
  Penalise(options.ridge, beta, &cur);
  fit.loglik = cur.loglik;
  fit.coef = beta;
  fit.var = cur.info;
  if (!InvertSpd(&fit.var, p)) return InvalidArgumentError("the information matrix is singular");
  for (int j = 0; j < p; ++j) fit.se.push_back(std::sqrt(fit.var[j * p + j]));

  // Breslow baseline at x = 0 (uncentred): ascending times.
  const size_t nt = sweep.times.size();
  double centre = 0;
  for (int j = 0; j < p; ++j) centre += mean[j] * beta[j];
  double h = 0;
  for (size_t k = nt; k-- > 0;) {
    h += terms.breslow[k] * std::exp(-centre);
    fit.base_time.push_back(sweep.times[k]);
    fit.base_cumhaz.push_back(h);
  }

  if (!options.robust) return fit;
  // Score residuals through cumulative sums over ascending event times.
  std::vector<double> times_asc(sweep.times.rbegin(), sweep.times.rend());
  std::vector<double> ca(nt + 1, 0.0), cb((nt + 1) * p, 0.0);
  for (size_t k = 0; k < nt; ++k) {
    const size_t ti = nt - 1 - k;
    ca[k + 1] = ca[k] + terms.a_full[ti];
    for (int a = 0; a < p; ++a) cb[(k + 1) * p + a] = cb[k * p + a] + terms.b_full[ti * p + a];
  }
  auto upto = [&](double t) {  // number of event times <= t
    return static_cast<size_t>(std::upper_bound(times_asc.begin(), times_asc.end(), t) -
                               times_asc.begin());
  };
  std::map<uint32_t, std::vector<double>> by_cluster;
  std::vector<double> r(p);
  const double offset = cv.Offset(beta);
  for (size_t i = 0; i < n; ++i) {
    double eta = -offset;
    for (int j = 0; j < p; ++j) eta += x[i * p + j] * beta[j];
    const double risk = std::exp(eta);
    const double* xi = &x[i * p];
    const size_t lo = upto(data[i].start), hi = upto(data[i].stop);
    double a_sum = ca[hi] - ca[lo];
    for (int a = 0; a < p; ++a) r[a] = -risk * (xi[a] * a_sum - (cb[hi * p + a] - cb[lo * p + a]));
    if (data[i].event >= 0) {
      const size_t ti = nt - hi;  // position of t = stop in sweep.times (descending)
      const double da = terms.a_death[ti] - terms.a_full[ti];
      for (int a = 0; a < p; ++a) {
        r[a] += xi[a] - terms.xbar_mean[ti * p + a];
        r[a] -= risk * (xi[a] * da - (terms.b_death[ti * p + a] - terms.b_full[ti * p + a]));
      }
    }
    std::vector<double> dfbeta = MatVec(fit.var, r, p);
    auto [it, inserted] = by_cluster.try_emplace(data[i].cluster, p, 0.0);
    for (int a = 0; a < p; ++a) it->second[a] += w_case[i] * dfbeta[a];
  }
  fit.clusters = static_cast<int64_t>(by_cluster.size());
  fit.robust_var.assign(static_cast<size_t>(p) * p, 0.0);
  for (const auto& [c, d] : by_cluster) {
    for (int a = 0; a < p; ++a) {
      for (int b = 0; b < p; ++b) fit.robust_var[a * p + b] += d[a] * d[b];
    }
  }
  for (int j = 0; j < p; ++j) fit.robust_se.push_back(std::sqrt(fit.robust_var[j * p + j]));
  return fit;
}

}  // namespace titan::predict
