#include "src/gateway/progress_watch.h"

#include <algorithm>

#include <fmt/format.h>

#include "src/base/duration.h"

namespace titan::gateway {

void ProgressWatch::SetWork(int requests, int streaming, double scraped_queue, int64_t now_ns) {
  const bool was_busy = busy();
  requests_ = requests;
  streaming_ = streaming;
  scraped_queue_ = scraped_queue;
  if (!was_busy && busy()) busy_since_ns_ = now_ns;
  if (!busy()) busy_since_ns_ = 0;
}

void ProgressWatch::MarkStalled(int64_t now_ns) {
  in_stall_ = true;
  stall_start_ns_ = std::max(last_progress_ns_, busy_since_ns_);
  stall_end_ns_ = -1;
}

bool ProgressWatch::OnProgress(int64_t now_ns, int64_t gap_ns, bool first_byte) {
  OnScrapedProgress(now_ns);
  if (gap_ns < 0) return false;
  // A gap that began before the last stall ended and ends after it began spans the stall.
  if (stall_start_ns_ >= 0 && now_ns - gap_ns < stall_end_ns_ && now_ns > stall_start_ns_) {
    return false;
  }
  if (first_byte) ttfts_.Add(gap_ns, now_ns);
  return true;
}

void ProgressWatch::OnAnswerEnd(int64_t now_ns, int64_t longest_gap_ns) {
  if (longest_gap_ns >= 0) pauses_.Add(longest_gap_ns, now_ns);
}

void ProgressWatch::OnScrapedProgress(int64_t now_ns) {
  last_progress_ns_ = std::max(last_progress_ns_, now_ns);
  if (in_stall_) {
    in_stall_ = false;
    stall_end_ns_ = now_ns;
  }
}

int64_t ProgressWatch::SilenceNs(int64_t now_ns) const {
  if (!busy()) return 0;
  return now_ns - std::max(last_progress_ns_, busy_since_ns_);
}

int64_t ProgressWatch::ThresholdNs(int64_t now_ns, int64_t scrape_interval_ns) {
  const int64_t p99 = ActiveP99(now_ns);
  int64_t threshold = p99 < 0 ? config_->initial_ns : static_cast<int64_t>(config_->k * p99);
  threshold = std::max(threshold, config_->floor_ns);
  if (requests_ == 0) threshold = std::max(threshold, 2 * scrape_interval_ns);
  return threshold;
}

bool ProgressWatch::Stalled(int64_t now_ns, int64_t scrape_interval_ns) {
  return config_->enabled && busy() && SilenceNs(now_ns) > ThresholdNs(now_ns, scrape_interval_ns);
}

std::string ProgressWatch::Explain(int64_t now_ns, int64_t scrape_interval_ns) {
  const int64_t p99 = ActiveP99(now_ns);
  const int64_t threshold = ThresholdNs(now_ns, scrape_interval_ns);
  std::string basis;
  if (p99 < 0) {
    basis = fmt::format("initial {} (fewer than {} samples)",
                        FormatDurationShort(config_->initial_ns), kMinSamples);
  } else {
    basis = fmt::format("{:g} x p99 {} {}", config_->k, streaming_ > 0 ? "pause" : "ttft",
                        FormatDurationShort(p99));
  }
  if (threshold == config_->floor_ns && static_cast<int64_t>(config_->k * p99) < threshold) {
    basis = fmt::format("floor, above {}", basis);
  }
  std::string work = fmt::format("{} request{} in flight", requests_, requests_ == 1 ? "" : "s");
  if (scraped_queue_ > 0) work += fmt::format(", {:g} queued in the replica", scraped_queue_);
  return fmt::format("no progress for {} with {} (threshold {}: {})",
                     FormatDurationShort(SilenceNs(now_ns)), work, FormatDurationShort(threshold),
                     basis);
}

}  // namespace titan::gateway
