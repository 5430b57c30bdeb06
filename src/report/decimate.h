// Min/max decimation of plotted series: a series of millions of points is cut to about
// 2 x `buckets` points without losing its extremes, so a 50 ms spike in a day of 10 ms samples
// still reaches its full height on the page (averaging or striding would hide it).
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <vector>

namespace titan::report {

// Columns sharing one x grid: x[i] goes with ys[k][i]. NaN in a y column is a gap.
struct Columns {
  std::vector<double> x;
  std::vector<std::vector<double>> ys;
};

// Splits the x range into `buckets` equal intervals; each non-empty interval keeps its first and
// last x, and each series gets its minimum and maximum within the interval at those two x, in
// the order they occurred (an interval with one point keeps it as it is). Gaps stay gaps when a
// series has no value in an interval. x must be non-decreasing; NaN x values are dropped.
// Returns the input unchanged when it has at most 2 x `buckets` points. buckets >= 1.
Columns MinMaxDecimate(const Columns& in, size_t buckets);

}  // namespace titan::report
