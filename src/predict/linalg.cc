#include "src/predict/linalg.h"

#include <algorithm>
#include <cmath>

namespace titan::predict {

bool InvertSpd(std::vector<double>* a_ptr, int p, double tolerance) {
  std::vector<double>& a = *a_ptr;
  double max_diag = 0;
  for (int i = 0; i < p; ++i) max_diag = std::max(max_diag, std::fabs(a[i * p + i]));
  // Cholesky: a = L L^T, L in the lower triangle.
  std::vector<double> l(static_cast<size_t>(p) * p, 0.0);
  for (int j = 0; j < p; ++j) {
    double d = a[j * p + j];
    for (int k = 0; k < j; ++k) d -= l[j * p + k] * l[j * p + k];
    if (!(d > tolerance * std::max(max_diag, 1e-300))) return false;
    const double ljj = std::sqrt(d);
    l[j * p + j] = ljj;
    for (int i = j + 1; i < p; ++i) {
      double s = a[i * p + j];
      for (int k = 0; k < j; ++k) s -= l[i * p + k] * l[j * p + k];
      l[i * p + j] = s / ljj;
    }
  }
  // inv(L), lower triangular.
  std::vector<double> li(static_cast<size_t>(p) * p, 0.0);
  for (int j = 0; j < p; ++j) {
    li[j * p + j] = 1.0 / l[j * p + j];
    for (int i = j + 1; i < p; ++i) {
      double s = 0;
      for (int k = j; k < i; ++k) s -= l[i * p + k] * li[k * p + j];
      li[i * p + j] = s / l[i * p + i];
    }
  }
  // inv(a) = inv(L)^T inv(L).
  for (int i = 0; i < p; ++i) {
    for (int j = 0; j <= i; ++j) {
      double s = 0;
      for (int k = i; k < p; ++k) s += li[k * p + i] * li[k * p + j];
      a[i * p + j] = a[j * p + i] = s;
    }
  }
  return true;
}

std::vector<double> MatVec(const std::vector<double>& a, const std::vector<double>& x, int p) {
  std::vector<double> y(p, 0.0);
  for (int i = 0; i < p; ++i) {
    for (int j = 0; j < p; ++j) y[i] += a[i * p + j] * x[j];
  }
  return y;
}

}  // namespace titan::predict
