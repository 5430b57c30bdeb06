// The robust pieces of titan's forecaster: a running median (the local level) and a seasonal
// profile of daily and weekly cycles fitted as Fourier terms by iteratively reweighted least
// squares (Tukey's bisquare, so outliers such as a day of zeros from an outage barely move it),
// with weights that halve every `half_life_steps` into the past (so that the profile follows a
// cycle that changes).
//
// Phases are taken from absolute time (seconds since the epoch / the period), so a profile
// fitted on one stretch of a series evaluates on any other.
//
// Thread safety: pure functions; SeasonalProfile is immutable after fitting.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace titan::plan {

// Running medians of one series for many `end`s: the values are ranked once, and each window
// slides over a Fenwick tree of the ranks (O(log n) per step, not a sort per window). Keeps a
// reference to `values`, which must outlive it and not change.
class RunningMedians {
 public:
  explicit RunningMedians(const std::vector<double>& values);
  // The median of values[max(0, i - half) .. min(end, i + half + 1)) for from <= i < end, NaN
  // values left out (NaN where a window holds none, and at i < from). Only values[0, end) are
  // read, so the result at i uses nothing after end (no look-ahead for an origin at `end`).
  // end <= values.size().
  std::vector<double> Of(size_t end, size_t half, size_t from = 0) const;

 private:
  const std::vector<double>& values_;
  std::vector<double> sorted_;  // the values that are not NaN, ascending
  std::vector<int32_t> rank_;   // values_[i]'s index in sorted_ (-1 for NaN), ties distinct
};
// The median of the values in [lo, hi) that are not NaN (NaN when none).
double WindowMedian(const std::vector<double>& values, size_t lo, size_t hi);
// The median of *v, none NaN (NaN when empty); reorders *v, allocates nothing.
double MedianInPlace(std::vector<double>* v);

// The seasonal cycles worth fitting for a series of `step_seconds` with `history_steps` of
// history: one day and one week, each when it is a whole number >= 4 of steps and the history
// covers at least two of it.
struct Cycle {
  double period_seconds = 0;
  int harmonics = 0;  // Fourier pairs
};
std::vector<Cycle> CyclesFor(double step_seconds, size_t history_steps);

// The Fourier terms of `cycles` at the times start_seconds + i * step_seconds, i < rows: sin and
// cos per harmonic per cycle, in the cycles' order. Computed once per series and shared by its
// fits (titan's forecaster fits ~31 origins of one grid; the sines were half its time).
class FourierTable {
 public:
  FourierTable(const std::vector<Cycle>& cycles, double start_seconds, double step_seconds,
               size_t rows);
  size_t rows() const { return rows_; }
  // The columns of `cycles` when they are the table's first cycles (CyclesFor drops the week of
  // a short history, never the day); -1 otherwise.
  int ColumnsOf(const std::vector<Cycle>& cycles) const;
  // The rows repeat after period_rows() (the longest cycle in steps; rows() when the cycles are
  // no whole number of steps): only one period is kept, and Row(i) is Row(i % period_rows()).
  size_t period_rows() const { return period_rows_; }
  const double* Row(size_t i) const {
    return values_.data() + (i % period_rows_) * static_cast<size_t>(width_);
  }
  // Column c over the kept rows (min(rows(), period_rows()) values, contiguous): the same
  // numbers as Row(i)[c], laid out for the fit's sums over rows.
  const double* Column(int c) const {
    return columns_.data() + static_cast<size_t>(c) * std::min(rows_, period_rows_);
  }
  // The first cycle's steps when they divide period_rows() less than it (the day in a table of
  // the week), else 0; and its columns, the first of each row. Its terms repeat within the
  // period, which lets a fit sum their part of the normal equations per phase of that cycle.
  size_t first_cycle_rows() const { return first_cycle_rows_; }
  int first_cycle_columns() const { return first_cycle_columns_; }

 private:
  std::vector<Cycle> cycles_;
  int width_ = 0;
  size_t rows_ = 0;
  size_t period_rows_ = 1;
  size_t first_cycle_rows_ = 0;
  int first_cycle_columns_ = 0;
  std::vector<double> values_;   // min(rows_, period_rows_) x width_, row by row
  std::vector<double> columns_;  // the same, column by column
};

class SeasonalProfile {
 public:
  SeasonalProfile() = default;  // no seasonality: evaluates to 0

  // Fits sum over cycles of Fourier terms to `residual` (the series minus its level; NaN are
  // left out) at times start_seconds + i * step_seconds, i < residual.size().
  static SeasonalProfile Fit(const std::vector<double>& residual, double start_seconds,
                             double step_seconds, const std::vector<Cycle>& cycles,
                             double half_life_steps);
  // The same on the first `columns` columns of `table` (ColumnsOf the cycles), whose row i is the
  // time of residual[i]. Precondition: table.rows() >= residual.size().
  static SeasonalProfile Fit(const std::vector<double>& residual, const FourierTable& table,
                             const std::vector<Cycle>& cycles, int columns, double half_life_steps);

  // The profile at a time (0 without cycles).
  double At(double time_seconds) const;
  // The profile at row i of the table it was fitted on (or one of the same cycles and times).
  double At(const FourierTable& table, size_t i) const;
  // At(table, i) for i < rows, computed once per period of the table.
  std::vector<double> Over(const FourierTable& table, size_t rows) const;
  bool empty() const { return coefficients_.empty(); }

 private:
  std::vector<Cycle> cycles_;
  std::vector<double> coefficients_;  // sin, cos per harmonic per cycle
};

}  // namespace titan::plan
