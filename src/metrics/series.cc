#include "src/metrics/series.h"

#include <algorithm>
#include <cmath>

#include "src/base/check.h"
#include "src/base/clock.h"

namespace titan {
namespace {

std::string BuildLabelText(const SignalDesc& desc, const LabelValues& labels) {
  if (labels.empty()) return "";
  std::string out = "{";
  for (size_t i = 0; i < labels.size() && i < desc.label_names.size(); ++i) {
    if (i > 0) out += ',';
    out += desc.label_names[i];
    out += "=\"";
    out += EscapeLabelValue(labels[i]);
    out += '"';
  }
  out += '}';
  return out;
}

int64_t FloorSecond(int64_t time_ns) {
  return time_ns >= 0 ? time_ns / kNsPerSecond : (time_ns - kNsPerSecond + 1) / kNsPerSecond;
}

}  // namespace

std::string EscapeLabelValue(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

Series::Series(const SignalDesc& desc, LabelValues labels, size_t recorder_capacity)
    : desc_(desc),
      labels_(std::move(labels)),
      label_text_(BuildLabelText(desc_, labels_)),
      slots_(kMaxWindowSeconds + 2),
      bucket_counts_(desc.buckets.size() + 1, 0),
      ring_capacity_(recorder_capacity) {
  TITAN_CHECK(labels_.size() == desc_.label_names.size())
      << desc_.name << ": " << labels_.size() << " label values for " << desc_.label_names.size()
      << " label names";
  ring_.reserve(std::min<size_t>(ring_capacity_, 1024));
}

std::string Series::Key() const { return desc_.name + label_text_; }

void Series::RecordLocked(int64_t time_ns, double value) {
  last_ = value;
  last_time_ns_ = time_ns;
  if (ring_capacity_ == 0) return;
  if (ring_.size() < ring_capacity_) {
    ring_.push_back({time_ns, value});
  } else {
    ring_[ring_next_] = {time_ns, value};
    ring_next_ = (ring_next_ + 1) % ring_capacity_;
  }
}

bool Series::RecordGauge(int64_t time_ns, double value) {
  if (!std::isfinite(value)) return false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    RecordLocked(time_ns, value);
    const int64_t second = FloorSecond(time_ns);
    if (slots_.empty()) return true;  // released (see ReleaseMemory): only the last value
    Slot& slot =
        slots_[static_cast<size_t>(second % (kMaxWindowSeconds + 2) + (kMaxWindowSeconds + 2)) %
               (kMaxWindowSeconds + 2)];
    if (slot.second != second) slot = Slot{second, value, value, 0, 0};
    slot.min = std::min(slot.min, value);
    slot.max = std::max(slot.max, value);
    slot.sum += value;
    ++slot.count;
    const auto bucket =
        std::lower_bound(desc_.buckets.begin(), desc_.buckets.end(), value) - desc_.buckets.begin();
    ++bucket_counts_[static_cast<size_t>(bucket)];
    hist_sum_ += value;
    ++hist_count_;
  }
  if (observer_) observer_->OnGauge(*this, time_ns, value);
  return true;
}

void Series::SetCounter(int64_t time_ns, double source_total) {
  if (!std::isfinite(source_total) || source_total < 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (counter_seen_) {
    const double delta = source_total >= counter_last_source_
                             ? source_total - counter_last_source_
                             : source_total;  // the source was reset: count from zero again
    counter_total_ += delta;
  } else {
    counter_total_ = source_total;
    counter_seen_ = true;
  }
  counter_last_source_ = source_total;
  RecordLocked(time_ns, counter_total_);
}

void Series::AddCounter(int64_t time_ns, double delta) {
  if (!std::isfinite(delta) || delta < 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  counter_total_ += delta;
  counter_seen_ = true;
  RecordLocked(time_ns, counter_total_);
}

WindowStats Series::Window(int64_t now_ns, int window_seconds) const {
  window_seconds = std::clamp(window_seconds, 1, kMaxWindowSeconds);
  const int64_t newest = FloorSecond(now_ns);
  // One extra slot: the oldest slot is partial, so window_seconds + 1 slots cover at least
  // window_seconds of time.
  const int64_t oldest = newest - window_seconds;
  WindowStats stats;
  std::lock_guard<std::mutex> lock(mutex_);
  stats.last = last_;
  stats.last_time_ns = last_time_ns_;
  double sum = 0;
  for (const Slot& slot : slots_) {
    if (slot.count == 0 || slot.second < oldest || slot.second > newest) continue;
    if (stats.count == 0) {
      stats.min = slot.min;
      stats.max = slot.max;
    } else {
      stats.min = std::min(stats.min, slot.min);
      stats.max = std::max(stats.max, slot.max);
    }
    sum += slot.sum;
    stats.count += slot.count;
  }
  if (stats.count > 0) stats.mean = sum / static_cast<double>(stats.count);
  return stats;
}

void Series::Histogram(std::vector<uint64_t>* cumulative_counts, double* sum,
                       uint64_t* count) const {
  std::lock_guard<std::mutex> lock(mutex_);
  cumulative_counts->resize(bucket_counts_.size());
  uint64_t running = 0;
  for (size_t i = 0; i < bucket_counts_.size(); ++i) {
    running += bucket_counts_[i];
    (*cumulative_counts)[i] = running;
  }
  *sum = hist_sum_;
  *count = hist_count_;
}

double Series::CounterValue() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return counter_total_;
}

int64_t Series::LastTimeNs() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_time_ns_;
}

void Series::ReleaseMemory() {
  std::lock_guard<std::mutex> lock(mutex_);
  ring_ = {};
  ring_capacity_ = 0;
  ring_next_ = 0;
  slots_ = {};
}

void Series::ResetRecorder(size_t recorder_capacity) {
  std::lock_guard<std::mutex> lock(mutex_);
  ring_ = {};
  ring_.reserve(std::min<size_t>(recorder_capacity, 1024));
  ring_capacity_ = recorder_capacity;
  ring_next_ = 0;
  if (slots_.empty()) slots_.assign(kMaxWindowSeconds + 2, Slot{});
}

size_t Series::recorder_capacity() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return ring_capacity_;
}

void Series::RecorderRange(int64_t from_ns, int64_t to_ns, std::vector<RecordedPoint>* out) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const size_t n = ring_.size();
  const size_t start = n < ring_capacity_ ? 0 : ring_next_;
  for (size_t i = 0; i < n; ++i) {
    const RecordedPoint& p = ring_[(start + i) % n];
    if (p.time_ns >= from_ns && p.time_ns <= to_ns) out->push_back(p);
  }
}

}  // namespace titan
