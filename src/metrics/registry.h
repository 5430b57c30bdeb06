// MetricRegistry: owns every Series of the agent, grouped by family (SignalDesc name).
//
// Collectors call GetOrCreate() for each series they produce and keep the returned pointer
// (stable for the registry's lifetime). The live total is bounded by max_series (further
// requests return nullptr and are counted) so hostile input (endless new PIDs, interface names or
// ranks) cannot grow memory without bound. The flight-recorder ring of each series gets
// recorder_duration / sample_interval points, within a global byte budget.
//
// A series whose source went away (an evicted rank) can be retired: it is no longer exported,
// listed or found, its recorder memory returns to the budget and it stops counting against
// max_series. Its object stays allocated (a few hundred bytes) until the registry is destroyed,
// because pointers handed out earlier (AllSeries, held by a recorder dump being streamed) may
// still be read; at most max_retired_series are kept that way, and asking again for the same
// labels revives the retired series (totals continue) instead of allocating another.
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
#include <utility>
#include <vector>

#include "src/metrics/series.h"
#include "src/metrics/signal.h"

namespace titan {

struct RegistryOptions {
  int64_t recorder_duration_ns = 600LL * 1'000'000'000;  // 10 minutes
  size_t recorder_budget_bytes = 512ULL << 20;           // across all series
  size_t max_series = 50'000;
  size_t max_retired_series = 65'536;  // about 20 MB of retired series at most
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

  // Retires `series` (one of this registry's live series; see the header comment). Returns false,
  // leaving it live, when max_retired_series are already retired or it is not live here. The
  // caller must not write to it afterwards (a gauge write then keeps only the last value).
  bool Retire(Series* series);

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

  size_t series_count() const;  // live series
  size_t retired_series_count() const;
  uint64_t dropped_series() const { return dropped_series_.load(); }
  size_t recorder_bytes() const;
  const RegistryOptions& options() const { return options_; }

 private:
  struct FamilyEntry {
    const SignalDesc* desc;
    std::vector<std::unique_ptr<Series>> series;
    std::map<LabelValues, Series*> by_labels;
  };
  // Recorder points for a series sampled every `sample_interval_ns`, within what is left of the
  // budget; adds them to recorder_bytes_.
  size_t ReserveRecorderLocked(int64_t sample_interval_ns);

  const RegistryOptions options_;
  mutable std::mutex mutex_;
  std::map<std::string, FamilyEntry> families_;
  std::map<std::string, Series*> by_key_;
  // Retired series by (family name, labels); owned here until destruction (see the header
  // comment).
  std::map<std::pair<std::string, LabelValues>, std::unique_ptr<Series>> retired_;
  ObserverFactory observer_factory_;
  size_t series_count_ = 0;
  size_t recorder_bytes_ = 0;
  std::atomic<uint64_t> dropped_series_{0};
};

}  // namespace titan
