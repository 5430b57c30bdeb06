// MetricRegistry: owns every Series of the agent, grouped by family (SignalDesc name).
//
// Collectors call GetOrCreate() for each series they produce and keep the returned pointer
// (stable for the registry's lifetime). Series are never removed; the total is bounded by
// max_series (further requests return nullptr and are counted) so hostile input (endless new
// PIDs or interface names) cannot grow memory without bound. The flight-recorder ring of each
// series gets recorder_duration / sample_interval points, within a global byte budget.
//
// Thread safety: all methods are thread-safe. ForEachFamily holds the registry lock while it
// runs; the callback must not call GetOrCreate.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "src/metrics/series.h"
#include "src/metrics/signal.h"

namespace titan {

struct RegistryOptions {
  int64_t recorder_duration_ns = 600LL * 1'000'000'000;  // 10 minutes
  size_t recorder_budget_bytes = 512ULL << 20;           // across all series
  size_t max_series = 50'000;
};

class MetricRegistry {
 public:
  using ObserverFactory = std::function<std::unique_ptr<SeriesObserver>(const Series&)>;

  explicit MetricRegistry(RegistryOptions options = {});
  MetricRegistry(const MetricRegistry&) = delete;
  MetricRegistry& operator=(const MetricRegistry&) = delete;

  // Returns the series of `desc` with `labels`, creating it. `desc` must outlive the registry
  // and all descs of one name must be identical. `sample_interval_ns` sizes the recorder ring.
  // Returns nullptr when max_series is reached.
  Series* GetOrCreate(const SignalDesc& desc, LabelValues labels, int64_t sample_interval_ns);

  // Called for each series created after it is set (set it before collectors start).
  void SetObserverFactory(ObserverFactory factory);

  struct Family {
    const SignalDesc* desc;
    std::vector<Series*> series;  // in creation order
  };
  // Visits families in name order.
  void ForEachFamily(const std::function<void(const Family&)>& visit) const;
  // Every series, for recorder dumps and correlation; pointers stay valid.
  std::vector<Series*> AllSeries() const;
  // Series whose Key() is `key`, or nullptr.
  Series* Find(const std::string& key) const;

  size_t series_count() const;
  uint64_t dropped_series() const { return dropped_series_.load(); }
  size_t recorder_bytes() const;
  const RegistryOptions& options() const { return options_; }

 private:
  struct FamilyEntry {
    const SignalDesc* desc;
    std::vector<std::unique_ptr<Series>> series;
    std::map<LabelValues, Series*> by_labels;
  };
  const RegistryOptions options_;
  mutable std::mutex mutex_;
  std::map<std::string, FamilyEntry> families_;
  std::map<std::string, Series*> by_key_;
  ObserverFactory observer_factory_;
  size_t series_count_ = 0;
  size_t recorder_bytes_ = 0;
  std::atomic<uint64_t> dropped_series_{0};
};

}  // namespace titan
