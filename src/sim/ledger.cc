#include "src/sim/ledger.h"

#include <cmath>

namespace titan::sim {

double Ledger::Total() const {
  double total = 0;
  for (double s : seconds) total += s;
  return total;
}

Estimate Estimate95(std::span<const double> values) {
  Estimate e;
  if (values.empty()) return e;
  double sum = 0;
  for (double v : values) sum += v;
  e.mean = sum / static_cast<double>(values.size());
  if (values.size() < 2) return e;
  double squares = 0;
  for (double v : values) squares += (v - e.mean) * (v - e.mean);
  e.stddev = std::sqrt(squares / static_cast<double>(values.size() - 1));
  e.ci95 = 1.96 * e.stddev / std::sqrt(static_cast<double>(values.size()));
  return e;
}

}  // namespace titan::sim
