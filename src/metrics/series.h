// Series: one labelled instance of a signal, holding everything the agent keeps about it:
//  - gauges: the last value, sliding-window statistics built from one-second slots (so any number
//    of scrapers, at any interval up to kMaxWindowSeconds, see every spike and dip: nothing is
//    reset by a scrape), a cumulative histogram of all samples, and
//  - counters: a monotonic total that survives source resets (SetCounter handles wrap/reset);
//  - both: a flight-recorder ring of raw (time, value) points.
//
// Thread safety: all methods are thread-safe (a per-series mutex; uncontended in the sampling
// path, which has one writer). The observer is called after the lock is released, on the
// recording thread.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "src/metrics/signal.h"

namespace titan {

class Series;

// Sees every gauge sample after it is recorded (detectors hang here). Called on the recording
// thread; implementations must be fast and must not call back into this Series' recorder.
class SeriesObserver {
 public:
  virtual ~SeriesObserver() = default;
  virtual void OnGauge(Series& series, int64_t time_ns, double value) = 0;
};

struct RecordedPoint {
  int64_t time_ns;
  double value;
};

struct WindowStats {
  double last = 0;
  double min = 0;
  double max = 0;
  double mean = 0;
  uint64_t count = 0;  // samples in the window; 0 means min/max/mean are meaningless
  int64_t last_time_ns = 0;
};

class Series {
 public:
  static constexpr int kMaxWindowSeconds = 120;

  // `recorder_capacity` points are kept (0: no recording).
  Series(const SignalDesc& desc, LabelValues labels, size_t recorder_capacity);

  const SignalDesc& desc() const { return desc_; }
  const LabelValues& labels() const { return labels_; }
  // `{a="x",b="y"}` with Prometheus escaping, or "" without labels. Built once.
  const std::string& label_text() const { return label_text_; }
  // `name{a="x"}`, a stable human-readable key.
  std::string Key() const;

  // Gauge reading. Non-finite values are rejected (returns false) and not recorded.
  bool RecordGauge(int64_t time_ns, double value);
  // Counter reading from a cumulative source (kernel counter). A decrease is treated as a reset
  // of the source: the exported total keeps growing from where it was.
  void SetCounter(int64_t time_ns, double source_total);
  // Adds `delta` >= 0 to a counter.
  void AddCounter(int64_t time_ns, double delta);

  // Stats over the slots covering at least the last `window_seconds` before `now_ns`
  // (clamped to 1..kMaxWindowSeconds).
  WindowStats Window(int64_t now_ns, int window_seconds) const;
  // Histogram: cumulative counts per bucket of desc().buckets (then +Inf), sum, count.
  void Histogram(std::vector<uint64_t>* cumulative_counts, double* sum, uint64_t* count) const;
  double CounterValue() const;
  int64_t LastTimeNs() const;
  // Appends recorded points with from_ns <= time_ns <= to_ns, oldest first.
  void RecorderRange(int64_t from_ns, int64_t to_ns, std::vector<RecordedPoint>* out) const;

  // For MetricRegistry::Retire: frees the recorder ring and the window slots, so that only the
  // labels, last value, totals and histogram stay (a few hundred bytes). Later gauge readings
  // update only the last value until ResetRecorder().
  void ReleaseMemory();
  // For a revived series: drops the recorded points, keeps `recorder_capacity` points from now
  // on (0: no recording) and restores the window slots if ReleaseMemory() freed them.
  void ResetRecorder(size_t recorder_capacity);
  size_t recorder_capacity() const;

  void SetObserver(std::unique_ptr<SeriesObserver> observer) { observer_ = std::move(observer); }
  SeriesObserver* observer() const { return observer_.get(); }

 private:
  struct Slot {
    int64_t second = -1;
    double min = 0, max = 0, sum = 0;
    uint64_t count = 0;
  };
  void RecordLocked(int64_t time_ns, double value);

  const SignalDesc& desc_;
  const LabelValues labels_;
  const std::string label_text_;
  std::unique_ptr<SeriesObserver> observer_;

  mutable std::mutex mutex_;
  double last_ = 0;
  int64_t last_time_ns_ = 0;
  std::vector<Slot> slots_;              // kMaxWindowSeconds + 2; empty after ReleaseMemory()
  std::vector<uint64_t> bucket_counts_;  // non-cumulative, size buckets+1
  double hist_sum_ = 0;
  uint64_t hist_count_ = 0;
  double counter_total_ = 0;
  double counter_last_source_ = 0;
  bool counter_seen_ = false;
  std::vector<RecordedPoint> ring_;
  size_t ring_capacity_;
  size_t ring_next_ = 0;
};

// Escapes a label value for the Prometheus text format (\\, \", \n).
std::string EscapeLabelValue(const std::string& value);

}  // namespace titan
