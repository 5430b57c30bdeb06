#include "src/fleet/history.h"

#include <algorithm>
#include <cmath>

namespace titan::fleet {

namespace {
constexpr size_t kMaxExamples = 5;
constexpr std::string_view kKindNames[] = {"enter", "fail", "repair", "leave", "observe"};

void SortAttributes(Attributes* attributes) {
  std::stable_sort(attributes->begin(), attributes->end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  // A key given twice keeps its last value.
  Attributes unique;
  for (auto& kv : *attributes) {
    if (!unique.empty() && unique.back().first == kv.first) {
      unique.back().second = std::move(kv.second);
    } else {
      unique.push_back(std::move(kv));
    }
  }
  *attributes = std::move(unique);
}
}  // namespace

std::string_view EventKindName(EventKind kind) { return kKindNames[static_cast<int>(kind)]; }

bool ParseEventKind(std::string_view name, EventKind* kind) {
  for (size_t i = 0; i < std::size(kKindNames); ++i) {
    if (name == kKindNames[i]) {
      *kind = static_cast<EventKind>(i);
      return true;
    }
  }
  return false;
}

void ReadStats::Skip(std::string reason, std::string where) {
  if (examples.size() < kMaxExamples) examples.push_back(where + ": " + reason);
  ++skipped[std::move(reason)];
}

void ReadStats::Merge(const ReadStats& other) {
  records += other.records;
  for (const auto& [reason, n] : other.skipped) skipped[reason] += n;
  for (const std::string& e : other.examples) {
    if (examples.size() < kMaxExamples) examples.push_back(e);
  }
}

const std::string* FindAttribute(const Attributes& attributes, std::string_view key) {
  for (const auto& [k, v] : attributes) {
    if (k == key) return &v;
  }
  return nullptr;
}

Attributes MergeAttributes(const Attributes& base, const Attributes& overlay) {
  Attributes out = base;
  out.insert(out.end(), overlay.begin(), overlay.end());
  SortAttributes(&out);
  return out;
}

uint32_t HistoryBuilder::Intern(std::vector<std::string>* names,
                                std::unordered_map<std::string, uint32_t>* index,
                                std::string_view name) {
  auto [it, inserted] = index->try_emplace(std::string(name), static_cast<uint32_t>(names->size()));
  if (inserted) names->emplace_back(name);
  return it->second;
}

uint32_t HistoryBuilder::Component(std::string_view id) {
  uint32_t c = Intern(&component_ids_, &component_index_, id);
  if (component_attributes_.size() < component_ids_.size()) component_attributes_.emplace_back();
  return c;
}

void HistoryBuilder::Enter(std::string_view component, double time_seconds, Attributes attributes) {
  Event e;
  e.time_seconds = time_seconds;
  e.component = Component(component);
  e.kind = EventKind::kEnter;
  SortAttributes(&attributes);
  e.attributes = std::move(attributes);
  events_.push_back(std::move(e));
}

void HistoryBuilder::Fail(std::string_view component, double time_seconds,
                          std::string_view failure_class, std::string text) {
  Event e;
  e.time_seconds = time_seconds;
  e.component = Component(component);
  e.kind = EventKind::kFail;
  e.failure_class = Intern(&classes_, &class_index_, failure_class);
  e.text = std::move(text);
  events_.push_back(std::move(e));
}

void HistoryBuilder::Repair(std::string_view component, double time_seconds, std::string text) {
  Event e;
  e.time_seconds = time_seconds;
  e.component = Component(component);
  e.kind = EventKind::kRepair;
  e.text = std::move(text);
  events_.push_back(std::move(e));
}

void HistoryBuilder::Leave(std::string_view component, double time_seconds, std::string text) {
  Event e;
  e.time_seconds = time_seconds;
  e.component = Component(component);
  e.kind = EventKind::kLeave;
  e.text = std::move(text);
  events_.push_back(std::move(e));
}

void HistoryBuilder::Observe(std::string_view component, double time_seconds,
                             const std::vector<std::pair<std::string, double>>& values) {
  Event e;
  e.time_seconds = time_seconds;
  e.component = Component(component);
  e.kind = EventKind::kObserve;
  for (const auto& [name, value] : values) {
    e.values.emplace_back(Intern(&covariates_, &covariate_index_, name), value);
  }
  events_.push_back(std::move(e));
}

void HistoryBuilder::End(double time_seconds) {
  end_seconds_ = std::max(end_seconds_, time_seconds);
  has_end_ = true;
}

void HistoryBuilder::SetComponentAttribute(std::string_view component, std::string key,
                                           std::string value) {
  uint32_t c = Component(component);
  Attributes& a = component_attributes_[c];
  a.emplace_back(std::move(key), std::move(value));
  SortAttributes(&a);
}

Result<FleetHistory> HistoryBuilder::Build() && {
  if (events_.empty()) {
    std::string why;
    for (const std::string& e : stats_.examples) why += "; skipped " + e;
    return InvalidArgumentError(
        "the fleet history has no records (enter, fail, repair, leave or observe)" + why +
        "; see docs/predict.md for the formats titan reads");
  }
  std::stable_sort(events_.begin(), events_.end(),
                   [](const Event& a, const Event& b) { return a.time_seconds < b.time_seconds; });
  FleetHistory h;
  h.components_.reserve(component_ids_.size());
  for (size_t i = 0; i < component_ids_.size(); ++i) {
    h.components_.push_back({std::move(component_ids_[i]), std::move(component_attributes_[i])});
  }
  const double last = events_.back().time_seconds;
  h.end_seconds_ = has_end_ ? std::max(end_seconds_, last) : last;
  h.events_ = std::move(events_);
  h.classes_ = std::move(classes_);
  h.covariates_ = std::move(covariates_);
  stats_.records = static_cast<int64_t>(h.events_.size());
  h.stats_ = std::move(stats_);
  return h;
}

}  // namespace titan::fleet
