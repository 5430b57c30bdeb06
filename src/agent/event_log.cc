#include "src/agent/event_log.h"

#include <algorithm>
#include <cstdint>

#include <nlohmann/json.hpp>

namespace titan {

EventLog::EventLog(size_t max_transients, size_t max_app_events)
    : max_transients_(max_transients), max_app_events_(max_app_events) {
  app_ring_.reserve(std::min<size_t>(max_app_events_, 4096));
}

uint64_t EventLog::AddTransient(TransientEvent event) {
  std::lock_guard<std::mutex> lock(mutex_);
  event.id = next_id_++;
  transients_.push_back(std::move(event));
  if (transients_.size() > max_transients_) transients_.pop_front();
  return transients_.back().id;
}

void EventLog::AddAppEvent(const AppEvent& event) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++app_total_;
  if (max_app_events_ == 0) return;
  if (app_ring_.size() < max_app_events_) {
    app_ring_.push_back(event);
  } else {
    app_ring_[app_next_] = event;
    app_next_ = (app_next_ + 1) % max_app_events_;
  }
}

std::vector<TransientEvent> EventLog::TransientsAfter(uint64_t after_id, size_t limit) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<TransientEvent> out;
  for (const TransientEvent& e : transients_) {
    if (e.id <= after_id) continue;
    if (out.size() >= limit) break;
    out.push_back(e);
  }
  return out;
}

std::vector<AppEvent> EventLog::AppEventsBetween(int64_t from_ns, int64_t to_ns) const {
  std::vector<AppEvent> out;
  uint64_t cursor = 0;
  AppEventsPage(from_ns, to_ns, &cursor, SIZE_MAX, &out);
  return out;
}

bool EventLog::AppEventsPage(int64_t from_ns, int64_t to_ns, uint64_t* cursor, size_t max_scanned,
                             std::vector<AppEvent>* out) const {
  std::lock_guard<std::mutex> lock(mutex_);
  // Event number k (0-based, of every event ever added) sits at app_ring_[k % max_app_events_]
  // while it is kept: the ring fills in order, then overwrites its oldest entry.
  const uint64_t oldest = app_total_ - app_ring_.size();
  uint64_t k = std::max(*cursor, oldest);
  for (size_t scanned = 0; k < app_total_ && scanned < max_scanned; ++k, ++scanned) {
    const AppEvent& e = app_ring_[k % max_app_events_];
    if (e.time_ns >= from_ns && e.time_ns <= to_ns) out->push_back(e);
  }
  *cursor = k;
  return k < app_total_;
}

uint64_t EventLog::transient_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return next_id_ - 1;
}

uint64_t EventLog::app_event_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return app_total_;
}

std::string TransientToJson(const TransientEvent& event) {
  const Detection& d = event.detection;
  nlohmann::json j = {
      {"id", event.id},
      {"signal", event.signal},
      {"detector", d.detector},
      {"direction", d.direction},
      {"start_ns", d.start_ns},
      {"end_ns", d.end_ns},
      {"duration_ms", static_cast<double>(d.end_ns - d.start_ns) / 1e6},
      {"peak", d.peak},
      {"baseline", d.baseline},
      {"magnitude", d.peak - d.baseline},
      {"score", d.score},
      {"samples", d.samples},
      {"related", event.related},
      {"summary", event.summary},
  };
  if (d.period > 0) j["period_samples"] = d.period;
  nlohmann::json ranks = nlohmann::json::array(), members = nlohmann::json::array();
  for (const TransientMember& m : event.members) {
    nlohmann::json member = {{"signal", m.signal},
                             {"detector", m.detection.detector},
                             {"start_ns", m.detection.start_ns},
                             {"end_ns", m.detection.end_ns},
                             {"peak", m.detection.peak},
                             {"baseline", m.detection.baseline},
                             {"score", m.detection.score}};
    if (m.rank >= 0) {
      member["rank"] = m.rank;
      ranks.push_back(m.rank);
    }
    members.push_back(std::move(member));
  }
  if (!ranks.empty()) j["ranks"] = std::move(ranks);
  j["members"] = std::move(members);
  return j.dump();
}

}  // namespace titan
