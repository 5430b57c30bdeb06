#include "src/metrics/signal.h"

#include <cmath>

namespace titan {

std::vector<double> RatioBuckets() { return {0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 1.0}; }

std::vector<double> SecondsBuckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
}

std::vector<double> BytesBuckets() {
  std::vector<double> out;
  for (double b = 4096; b <= 68719476736.0; b *= 4) out.push_back(b);
  return out;
}

std::vector<double> RateBuckets(double max_value) {
  std::vector<double> out;
  for (int i = 11; i >= 0; --i) out.push_back(max_value / std::pow(4.0, i));
  return out;
}

}  // namespace titan
