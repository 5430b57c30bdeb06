#include "src/report/decimate.h"

#include <cmath>
#include <limits>

namespace titan::report {

namespace {

constexpr double kGap = std::numeric_limits<double>::quiet_NaN();

// Appends the extremes of ys[k][begin, end) to out as (first, second) in occurrence order.
void KeepExtremes(const std::vector<double>& y, size_t begin, size_t end, double* first,
                  double* second) {
  size_t lo = end, hi = end;
  for (size_t i = begin; i < end; ++i) {
    if (std::isnan(y[i])) continue;
    if (lo == end || y[i] < y[lo]) lo = i;
    if (hi == end || y[i] > y[hi]) hi = i;
  }
  if (lo == end) {
    *first = *second = kGap;
    return;
  }
  *first = y[std::min(lo, hi)];
  *second = y[std::max(lo, hi)];
}

}  // namespace

Columns MinMaxDecimate(const Columns& in, size_t buckets) {
  if (buckets == 0) buckets = 1;
  if (in.x.size() <= 2 * buckets) return in;
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0;
  for (double x : in.x) {
    if (std::isnan(x)) continue;
    x0 = std::min(x0, x);
    x1 = std::max(x1, x);
  }
  Columns out;
  out.ys.resize(in.ys.size());
  if (!(x0 <= x1)) return out;  // every x is NaN
  const double width = x1 > x0 ? (x1 - x0) / static_cast<double>(buckets) : 1;
  size_t i = 0;
  const size_t n = in.x.size();
  while (i < n) {
    if (std::isnan(in.x[i])) {
      ++i;
      continue;
    }
    const size_t bucket =
        std::min(buckets - 1, static_cast<size_t>(std::floor((in.x[i] - x0) / width)));
    size_t end = i + 1;
    while (end < n &&
           (std::isnan(in.x[end]) ||
            std::min(buckets - 1, static_cast<size_t>(std::floor((in.x[end] - x0) / width))) ==
                bucket)) {
      ++end;
    }
    size_t last = end - 1;
    while (std::isnan(in.x[last])) --last;
    if (last == i) {
      out.x.push_back(in.x[i]);
      for (size_t k = 0; k < in.ys.size(); ++k) out.ys[k].push_back(in.ys[k][i]);
    } else {
      out.x.push_back(in.x[i]);
      out.x.push_back(in.x[last]);
      for (size_t k = 0; k < in.ys.size(); ++k) {
        double first = kGap, second = kGap;
        KeepExtremes(in.ys[k], i, end, &first, &second);
        out.ys[k].push_back(first);
        out.ys[k].push_back(second);
      }
    }
    i = end;
  }
  return out;
}

}  // namespace titan::report
