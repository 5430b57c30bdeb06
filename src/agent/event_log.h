// EventLog: what the agent tells people about. Two bounded rings:
//  - transients: detections enriched with the signals that moved with them (rare; kept as text);
//  - app events: every step / checkpoint / mark datagram from training processes (frequent; kept
//    as compact PODs for the Perfetto dump and for correlation).
// Both rings overwrite their oldest entries when full; counters say how many were ever added.
//
// Thread safety: all methods are thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "src/client/wire.h"
#include "src/detect/detector.h"

namespace titan {

// One series' part in a transient: transients of one signal family and direction on several
// series (ranks, GPUs) that overlap in time are one event with one member per series.
struct TransientMember {
  std::string signal;  // series key, e.g. titan_step_duration_seconds{rank="3"}
  int32_t rank = -1;   // the series' rank label, -1 without one
  Detection detection;
};

struct TransientEvent {
  uint64_t id = 0;     // 1, 2, ... in order of detection
  std::string signal;  // series key of the most extreme member
  // The most extreme member's detection, its start and end widened to span every member's.
  Detection detection;
  // Every series in the event, by rank (then key); a single-series event has one member.
  std::vector<TransientMember> members;
  std::vector<std::string>
      related;          // "disk nvme0 write rose to 2.1e9 B/s (baseline 1e6, 40 sigma)"
  std::string summary;  // one line a person reads first
};

struct AppEvent {
  int64_t time_ns;
  int64_t step;
  int64_t value;
  int32_t rank;
  int32_t pid;
  wire::EventKind kind;
  char name[wire::kNameBytes];
};

class EventLog {
 public:
  EventLog(size_t max_transients, size_t max_app_events);

  // Assigns the id and stores the event; returns the id.
  uint64_t AddTransient(TransientEvent event);
  void AddAppEvent(const AppEvent& event);

  // Transients with id > after_id, oldest first, at most `limit`.
  std::vector<TransientEvent> TransientsAfter(uint64_t after_id, size_t limit) const;
  // App events with from_ns <= time <= to_ns, in arrival order.
  std::vector<AppEvent> AppEventsBetween(int64_t from_ns, int64_t to_ns) const;
  // The same a page at a time, without copying the ring whole: appends to *out the events with
  // from_ns <= time <= to_ns among the next `max_scanned` kept ones from *cursor on (start at 0;
  // events overwritten since are skipped) and moves *cursor past them. Returns false when no
  // event is left after *cursor.
  bool AppEventsPage(int64_t from_ns, int64_t to_ns, uint64_t* cursor, size_t max_scanned,
                     std::vector<AppEvent>* out) const;
  uint64_t transient_count() const;
  uint64_t app_event_count() const;

 private:
  const size_t max_transients_;
  const size_t max_app_events_;
  mutable std::mutex mutex_;
  std::deque<TransientEvent> transients_;
  uint64_t next_id_ = 1;
  std::vector<AppEvent> app_ring_;
  size_t app_next_ = 0;
  uint64_t app_total_ = 0;
};

// {"id":..,"signal":..,"detector":..,"direction":..,"start_ns":..,...,"ranks":[..],
// "members":[{"signal":..,"rank":..,"detector":..,"start_ns":..,"end_ns":..,"peak":..,
// "baseline":..,"score":..},...]} (one object; "ranks" only when some member has a rank).
std::string TransientToJson(const TransientEvent& event);

}  // namespace titan
