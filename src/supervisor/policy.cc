#include "src/supervisor/policy.h"

#include <algorithm>
#include <cmath>

namespace titan::supervisor {

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  double lower = *std::max_element(values.begin(), values.begin() + mid);
  return (lower + upper) / 2;
}

void HangDetector::Reset(const std::vector<int>& ranks, int64_t now_ns) {
  ranks_.clear();
  for (int r : ranks) ranks_[r].last_progress_ns = now_ns;
}

void HangDetector::OnStepEnd(int rank, int64_t step, int64_t now_ns) {
  auto it = ranks_.find(rank);
  if (it == ranks_.end()) return;
  RankState& s = it->second;
  if (s.last_step_end_ns >= 0 && now_ns > s.last_step_end_ns && !s.in_checkpoint) {
    intervals_ns_.push_back(now_ns - s.last_step_end_ns);
    if (intervals_ns_.size() > options_.window) intervals_ns_.pop_front();
  }
  s.last_step_end_ns = now_ns;
  s.last_progress_ns = now_ns;
  s.stepped = true;
  s.in_checkpoint = false;
}

void HangDetector::OnProgress(int rank, int64_t now_ns) {
  auto it = ranks_.find(rank);
  if (it == ranks_.end()) return;
  it->second.last_progress_ns = now_ns;
  if (it->second.in_checkpoint) {
    it->second.in_checkpoint = false;
    it->second.last_step_end_ns = -1;  // the checkpoint pause is no step interval
  }
}

void HangDetector::OnCheckpointBegin(int rank, int64_t now_ns) {
  auto it = ranks_.find(rank);
  if (it == ranks_.end()) return;
  it->second.last_progress_ns = now_ns;
  it->second.in_checkpoint = true;
}

double HangDetector::P99IntervalNs() const {
  if (intervals_ns_.empty()) return 0;
  std::vector<int64_t> v(intervals_ns_.begin(), intervals_ns_.end());
  size_t idx = static_cast<size_t>(std::ceil(0.99 * static_cast<double>(v.size()))) - 1;
  std::nth_element(v.begin(), v.begin() + idx, v.end());
  return static_cast<double>(v[idx]);
}

int64_t HangDetector::ThresholdNs() const {
  if (intervals_ns_.size() < options_.min_intervals) return options_.floor_ns;
  return std::max(static_cast<int64_t>(options_.k * P99IntervalNs()), options_.floor_ns);
}

std::optional<HangDetector::Verdict> HangDetector::Check(int64_t now_ns) const {
  std::optional<Verdict> worst;
  int64_t stepped_threshold = ThresholdNs();
  for (const auto& [rank, s] : ranks_) {
    int64_t bound = s.in_checkpoint ? options_.checkpoint_timeout_ns
                    : s.stepped     ? stepped_threshold
                                    : options_.startup_timeout_ns;
    int64_t silent = now_ns - s.last_progress_ns;
    if (silent <= bound) continue;
    if (!worst || silent - bound > worst->silent_ns - worst->threshold_ns) {
      worst = Verdict{rank, silent, bound, s.last_progress_ns, !s.stepped};
    }
  }
  return worst;
}

void StragglerDetector::Reset() {
  samples_.clear();
  consecutive_.clear();
}

void StragglerDetector::Add(int rank, int64_t compute_ns) {
  auto& q = samples_[rank];
  q.push_back(compute_ns);
  if (q.size() > options_.window) q.pop_front();
}

std::map<int, double> StragglerDetector::Medians() const {
  std::map<int, double> out;
  for (const auto& [rank, q] : samples_) {
    if (q.size() < options_.window) continue;
    out[rank] = Median(std::vector<double>(q.begin(), q.end()));
  }
  return out;
}

std::vector<StragglerDetector::Finding> StragglerDetector::Evaluate(
    const std::map<int, double>& medians) {
  std::vector<Finding> flagged;
  if (medians.size() < 2) return flagged;
  for (const auto& [rank, m] : medians) {
    std::vector<double> peers;
    for (const auto& [r2, m2] : medians) {
      if (r2 != rank) peers.push_back(m2);
    }
    double ref = Median(peers);
    std::vector<double> dev;
    for (double p : peers) dev.push_back(std::fabs(p - ref));
    double spread = std::max(1.4826 * Median(dev), options_.min_spread * ref);
    double score = spread > 0 ? (m - ref) / spread : 0;
    bool slow = m > options_.ratio * ref && score > options_.k && m - ref >= options_.min_delta_ns;
    int& c = consecutive_[rank];
    c = slow ? c + 1 : 0;
    if (slow) flagged.push_back(Finding{rank, m, ref, score, c, c >= options_.persist});
  }
  return flagged;
}

void FailureTracker::Record(const std::string& node, int local_rank, int64_t now_ns) {
  failures_[node].push_back(now_ns);
  (void)local_rank;  // slots share their node's count: a bad host fails on any slot
}

int FailureTracker::RecentFailures(const std::string& node, int64_t now_ns) const {
  auto it = failures_.find(node);
  if (it == failures_.end()) return 0;
  int n = 0;
  for (int64_t t : it->second) n += (now_ns - t <= options_.window_ns);
  return n;
}

bool FailureTracker::ShouldExclude(const std::string& node, int64_t now_ns) {
  if (RecentFailures(node, now_ns) < options_.max_failures) return false;
  excluded_until_ns_[node] = now_ns + options_.cooldown_ns;
  failures_[node].clear();
  return true;
}

bool FailureTracker::Excluded(const std::string& node, int64_t now_ns) const {
  auto it = excluded_until_ns_.find(node);
  return it != excluded_until_ns_.end() && now_ns < it->second;
}

int64_t RestartBudget::Take() {
  int n = used_++;
  if (options_.backoff_base_ns <= 0) return 0;
  int64_t b = options_.backoff_base_ns;
  for (int i = 0; i < n && b < options_.backoff_max_ns; ++i) b *= 2;
  return std::min(b, options_.backoff_max_ns);
}

}  // namespace titan::supervisor
