#include "src/metrics/registry.h"

#include <algorithm>

namespace titan {

MetricRegistry::MetricRegistry(RegistryOptions options) : options_(options) {}

Series* MetricRegistry::GetOrCreate(const SignalDesc& desc, LabelValues labels,
                                    int64_t sample_interval_ns) {
  std::lock_guard<std::mutex> lock(mutex_);
  FamilyEntry& family = families_[desc.name];
  if (family.desc == nullptr) family.desc = &desc;
  if (auto it = family.by_labels.find(labels); it != family.by_labels.end()) return it->second;
  if (series_count_ >= options_.max_series) {
    dropped_series_.fetch_add(1);
    return nullptr;
  }
  std::unique_ptr<Series> series;
  if (!retired_.empty()) {
    if (auto node = retired_.extract(std::make_pair(desc.name, labels))) {
      series = std::move(node.mapped());
      series->ResetRecorder(ReserveRecorderLocked(sample_interval_ns));
    }
  }
  if (series == nullptr) {
    series =
        std::make_unique<Series>(*family.desc, labels, ReserveRecorderLocked(sample_interval_ns));
    if (observer_factory_) series->SetObserver(observer_factory_(*series));
  }
  Series* raw = series.get();
  family.by_labels.emplace(std::move(labels), raw);
  family.series.push_back(std::move(series));
  by_key_.emplace(raw->Key(), raw);
  ++series_count_;
  return raw;
}

size_t MetricRegistry::ReserveRecorderLocked(int64_t sample_interval_ns) {
  if (sample_interval_ns <= 0) return 0;
  const size_t wanted = static_cast<size_t>(options_.recorder_duration_ns / sample_interval_ns) + 1;
  const size_t left =
      options_.recorder_budget_bytes > recorder_bytes_
          ? (options_.recorder_budget_bytes - recorder_bytes_) / sizeof(RecordedPoint)
          : 0;
  const size_t capacity = std::min(wanted, left);
  recorder_bytes_ += capacity * sizeof(RecordedPoint);
  return capacity;
}

bool MetricRegistry::Retire(Series* series) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (series == nullptr || retired_.size() >= options_.max_retired_series) return false;
  auto family = families_.find(series->desc().name);
  if (family == families_.end()) return false;
  auto label_it = family->second.by_labels.find(series->labels());
  if (label_it == family->second.by_labels.end() || label_it->second != series) return false;
  auto& owned = family->second.series;
  auto it = std::find_if(owned.begin(), owned.end(),
                         [series](const auto& s) { return s.get() == series; });
  std::unique_ptr<Series> taken = std::move(*it);
  owned.erase(it);
  family->second.by_labels.erase(label_it);
  by_key_.erase(series->Key());
  --series_count_;
  recorder_bytes_ -= std::min(recorder_bytes_, series->recorder_capacity() * sizeof(RecordedPoint));
  series->ReleaseMemory();
  retired_.emplace(std::make_pair(series->desc().name, series->labels()), std::move(taken));
  return true;
}

void MetricRegistry::SetObserverFactory(ObserverFactory factory) {
  std::lock_guard<std::mutex> lock(mutex_);
  observer_factory_ = std::move(factory);
}

void MetricRegistry::ForEachFamily(const std::function<void(const Family&)>& visit) const {
  std::lock_guard<std::mutex> lock(mutex_);
  Family view;
  for (const auto& [name, entry] : families_) {
    view.desc = entry.desc;
    view.series.clear();
    for (const auto& s : entry.series) view.series.push_back(s.get());
    visit(view);
  }
}

std::vector<Series*> MetricRegistry::AllSeries() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Series*> out;
  out.reserve(series_count_);
  for (const auto& [name, entry] : families_) {
    for (const auto& s : entry.series) out.push_back(s.get());
  }
  return out;
}

Series* MetricRegistry::Find(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = by_key_.find(key);
  return it == by_key_.end() ? nullptr : it->second;
}

size_t MetricRegistry::series_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return series_count_;
}

size_t MetricRegistry::retired_series_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return retired_.size();
}

size_t MetricRegistry::recorder_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return recorder_bytes_;
}

}  // namespace titan
