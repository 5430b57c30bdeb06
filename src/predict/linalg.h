// Small dense symmetric matrices for the model fits (p up to a few hundred): row-major
// std::vector<double> of p*p. Pure functions; thread-safe.
#pragma once

#include <vector>

namespace titan::predict {

// Inverts a symmetric positive definite matrix in place by Cholesky decomposition. False when
// it is not positive definite (a pivot below `tolerance` times the largest diagonal: collinear
// covariates); *a is then unspecified.
bool InvertSpd(std::vector<double>* a, int p, double tolerance = 1e-11);

// y = A x for a p x p matrix.
std::vector<double> MatVec(const std::vector<double>& a, const std::vector<double>& x, int p);

}  // namespace titan::predict
