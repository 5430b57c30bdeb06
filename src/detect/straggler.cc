#include "src/detect/straggler.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "src/base/check.h"

namespace titan {
namespace {

// Median of *values (reordered); 0 when empty.
double Median(std::vector<double>* values) {
  const size_t n = values->size();
  if (n == 0) return 0;
  auto mid = values->begin() + static_cast<std::ptrdiff_t>(n / 2);
  std::nth_element(values->begin(), mid, values->end());
  const double upper = *mid;
  if (n % 2 == 1) return upper;
  return 0.5 * (*std::max_element(values->begin(), mid) + upper);
}

// Median absolute deviation from the median of *values (reordered); 0 when empty.
double Mad(std::vector<double>* values) {
  const double median = Median(values);
  for (double& v : *values) v = std::fabs(v - median);
  return Median(values);
}

constexpr double kMadToSigma = 1.4826;

}  // namespace

StragglerScorer::StragglerScorer(const StragglerScorerOptions& options) : options_(options) {
  TITAN_CHECK(options.window_steps >= 2 && options.window_steps <= 100'000)
      << "window_steps " << options.window_steps;
  TITAN_CHECK(options.max_ranks >= 1 && options.max_ranks <= 1'000'000)
      << "max_ranks " << options.max_ranks;
  TITAN_CHECK(options.k > 0) << "k " << options.k;
  TITAN_CHECK(options.min_steps >= 1) << "min_steps " << options.min_steps;
  TITAN_CHECK(options.min_lateness_fraction >= 0 && options.min_scale_fraction >= 0) << "fractions";
}

Status StragglerScorer::Observe(int64_t rank, int64_t step, int64_t duration_ns) {
  if (rank < 0 || step < 0 || duration_ns < 0) {
    return InvalidArgumentError("straggler: step report with rank " + std::to_string(rank) +
                                ", step " + std::to_string(step) + ", duration_ns " +
                                std::to_string(duration_ns) + ": all must be >= 0");
  }
  const int64_t window = options_.window_steps;
  if (max_step_ >= 0 && step <= max_step_ - window) {
    ++stale_reports_;
    return OkStatus();
  }
  auto it = index_.find(rank);
  if (it == index_.end()) {
    if (static_cast<int64_t>(ranks_.size()) >= options_.max_ranks) {
      return ResourceExhaustedError(
          "straggler: rank " + std::to_string(rank) + " is beyond the limit of " +
          std::to_string(options_.max_ranks) + " ranks per scorer; its reports are dropped");
    }
    it = index_.emplace(rank, static_cast<int32_t>(ranks_.size())).first;
    ranks_.push_back(RankState{rank, std::vector<Slot>(static_cast<size_t>(window))});
  }
  RankState& state = ranks_[static_cast<size_t>(it->second)];
  state.slots[static_cast<size_t>(step % window)] = Slot{step, duration_ns};
  state.max_step = std::max(state.max_step, step);
  max_step_ = std::max(max_step_, step);
  return OkStatus();
}

void StragglerScorer::Forget(int64_t rank) {
  auto it = index_.find(rank);
  if (it == index_.end()) return;
  const int32_t removed = it->second;
  ranks_.erase(ranks_.begin() + removed);
  index_.erase(it);
  for (auto& [other, position] : index_) {
    if (position > removed) --position;
  }
  max_step_ = -1;
  for (const RankState& state : ranks_) max_step_ = std::max(max_step_, state.max_step);
}

std::vector<RankScore> StragglerScorer::Scores() const {
  const size_t rank_count = ranks_.size();
  const int64_t window = options_.window_steps;
  std::vector<std::vector<double>> lateness(rank_count);
  std::vector<double> durations;
  std::vector<std::pair<double, size_t>> step_values;  // (duration, rank position), one step

  // Counted by offset so that a step number near INT64_MAX cannot overflow the loop variable.
  const int64_t first_step = std::max<int64_t>(0, max_step_ - window + 1);
  for (int64_t offset = 0; offset <= max_step_ - first_step; ++offset) {
    const int64_t step = first_step + offset;
    step_values.clear();
    for (size_t r = 0; r < rank_count; ++r) {
      const Slot& slot = ranks_[r].slots[static_cast<size_t>(step % window)];
      if (slot.step == step) step_values.emplace_back(double(slot.duration_ns), r);
    }
    for (const auto& [duration, r] : step_values) durations.push_back(duration);
    const size_t n = step_values.size();
    if (n < 2) continue;
    std::sort(step_values.begin(), step_values.end());
    for (size_t i = 0; i < n; ++i) {
      // Median of the other n-1 durations: the sorted list with element i left out.
      auto at = [&](size_t q) { return step_values[q < i ? q : q + 1].first; };
      const size_t m = n - 1;
      const double peers = m % 2 == 1 ? at(m / 2) : 0.5 * (at(m / 2 - 1) + at(m / 2));
      lateness[step_values[i].second].push_back(step_values[i].first - peers);
    }
  }

  const double median_duration = Median(&durations);
  const double scale_floor = std::max(1.0, options_.min_scale_fraction * median_duration);
  const bool exact = static_cast<int64_t>(rank_count) <= kExactPeerRanks;
  std::vector<double> pool;
  double pooled_scale = 0;
  if (!exact) {
    for (const auto& values : lateness) pool.insert(pool.end(), values.begin(), values.end());
    pooled_scale = kMadToSigma * Mad(&pool);
  }

  std::vector<RankScore> scores(rank_count);
  std::vector<double> own;
  for (size_t r = 0; r < rank_count; ++r) {
    RankScore& score = scores[r];
    score.rank = ranks_[r].rank;
    score.steps_seen = static_cast<int64_t>(lateness[r].size());
    if (score.steps_seen == 0) continue;
    own = lateness[r];
    const double median_lateness = Median(&own);
    double scale = pooled_scale;
    if (exact) {
      pool.clear();
      for (size_t q = 0; q < rank_count; ++q) {
        if (q != r) pool.insert(pool.end(), lateness[q].begin(), lateness[q].end());
      }
      scale = kMadToSigma * Mad(&pool);
    }
    score.median_lateness_ns = std::llround(median_lateness);
    score.score = median_lateness / std::max(scale, scale_floor);
    score.is_straggler = score.steps_seen >= options_.min_steps && score.score > options_.k &&
                         median_lateness >= options_.min_lateness_fraction * median_duration;
  }
  std::sort(scores.begin(), scores.end(),
            [](const RankScore& a, const RankScore& b) { return a.rank < b.rank; });
  return scores;
}

}  // namespace titan
