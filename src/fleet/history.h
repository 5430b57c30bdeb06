// FleetHistory: what happened to the components of a fleet (GPUs, nodes, disks, links: any id),
// in one model that every reader fills and that `titan predict` and `titan plan` read.
//
// A history is a list of records, each at a time (seconds since the Unix epoch, UTC, fractional):
//   enter   the component starts a stay in service; the record's attributes (location parts,
//           batch, model, node_name ...) describe it from then on. An enter while the component
//           is in service moves it: the old stay ends there without a failure.
//   fail    the component failed, with a class ("DBE", "OTB", "crash", "hang", "Xid 79") and free
//           text. A failure does not by itself take the component out of service: a leave (or a
//           later enter) does.
//   repair  the component was repaired (in place or before it comes back).
//   leave   the component leaves service (retired, moved out, drained). Without a later enter it
//           stays out; the time between a leave and the next enter is out of service.
//   observe time-varying covariates measured on the component (ECC counts, Xid count, throttle
//           seconds, temperature): numeric values by name, each valid until the next observation.
// and optionally one `end` record (no component): the time observation stopped. Without it the
// history is observed until its last record. A component still in service at the end is
// censored there.
//
// Attribute keys are free, with these conventional names the readers use where they know them:
//   node_name  the machine that holds the component ("c10-1c0s6n3", "gpu-017")
//   slot_name  the physical place above it that has several machines (a blade, a rack unit)
//   batch      a manufacturing or purchase batch; model, vendor ... as a fleet has them
// `titan predict backtest` evaluates per node_name and slot_name when the history has them.
// The JSONL encoding is in src/fleet/fleet_jsonl.h; docs/predict.md describes it for users.
//
// Thread safety: a built FleetHistory is immutable and may be read from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "src/base/status.h"

namespace titan::fleet {

enum class EventKind : uint8_t { kEnter, kFail, kRepair, kLeave, kObserve };

std::string_view EventKindName(EventKind kind);
// "enter" -> kEnter ...; false for anything else ("end" is not an event of a component).
bool ParseEventKind(std::string_view name, EventKind* kind);

// Attributes as sorted key-value pairs (few per record; sorted so that equal sets compare equal).
using Attributes = std::vector<std::pair<std::string, std::string>>;

struct Event {
  double time_seconds = 0;  // since the Unix epoch, UTC
  uint32_t component = 0;   // index into FleetHistory::components()
  EventKind kind = EventKind::kEnter;
  uint32_t failure_class = 0;  // kFail: index into failure_classes()
  std::string text;            // kFail, kRepair, kLeave: free text (may be empty)
  Attributes attributes;       // kEnter: the stay's attributes
  std::vector<std::pair<uint32_t, double>> values;  // kObserve: (covariate index, value)
};

// What a reader skipped or could not use, by reason, so that bad input is counted and shown
// instead of failing a whole history (a Perfetto-style stats table).
struct ReadStats {
  int64_t records = 0;                     // records read into the history
  std::map<std::string, int64_t> skipped;  // reason -> count
  // The first few skipped records' locations and reasons ("file:line: reason"), for the user.
  std::vector<std::string> examples;
  void Skip(std::string reason, std::string where);
  void Merge(const ReadStats& other);
};

class FleetHistory;

// Collects records from one or more readers, then Build() sorts them into a FleetHistory.
// Not thread-safe.
class HistoryBuilder {
 public:
  // Records are added in any order; times must be finite.
  void Enter(std::string_view component, double time_seconds, Attributes attributes);
  void Fail(std::string_view component, double time_seconds, std::string_view failure_class,
            std::string text);
  void Repair(std::string_view component, double time_seconds, std::string text);
  void Leave(std::string_view component, double time_seconds, std::string text);
  void Observe(std::string_view component, double time_seconds,
               const std::vector<std::pair<std::string, double>>& values);
  // The end of observation; the latest of several wins.
  void End(double time_seconds);
  // Attributes of the component that hold for all its stays unless an enter overrides them
  // (e.g. its batch); merged over earlier calls.
  void SetComponentAttribute(std::string_view component, std::string key, std::string value);
  ReadStats& stats() { return stats_; }
  size_t event_count() const { return events_.size(); }

  // Sorts events by time (stable: records at one time keep the order they were added in, so an
  // enter added after a fail at the same time follows it). Fails when there is no record.
  Result<FleetHistory> Build() &&;

 private:
  uint32_t Component(std::string_view id);
  uint32_t Intern(std::vector<std::string>* names, std::unordered_map<std::string, uint32_t>* index,
                  std::string_view name);
  std::vector<std::string> component_ids_;
  std::unordered_map<std::string, uint32_t> component_index_;
  std::vector<Attributes> component_attributes_;
  std::vector<std::string> classes_;
  std::unordered_map<std::string, uint32_t> class_index_;
  std::vector<std::string> covariates_;
  std::unordered_map<std::string, uint32_t> covariate_index_;
  std::vector<Event> events_;
  double end_seconds_ = -1e300;
  bool has_end_ = false;
  ReadStats stats_;
};

class FleetHistory {
 public:
  struct Component {
    std::string id;
    Attributes attributes;  // standing attributes (SetComponentAttribute)
  };

  const std::vector<Component>& components() const { return components_; }
  // Sorted by time.
  const std::vector<Event>& events() const { return events_; }
  const std::vector<std::string>& failure_classes() const { return classes_; }
  const std::vector<std::string>& covariates() const { return covariates_; }
  double begin_seconds() const { return events_.front().time_seconds; }
  // The end of observation (an `end` record, else the last record's time).
  double end_seconds() const { return end_seconds_; }
  const ReadStats& stats() const { return stats_; }

 private:
  friend class HistoryBuilder;
  std::vector<Component> components_;
  std::vector<Event> events_;
  std::vector<std::string> classes_;
  std::vector<std::string> covariates_;
  double end_seconds_ = 0;
  ReadStats stats_;
};

// The value of `key` in sorted or unsorted attributes; nullptr when absent.
const std::string* FindAttribute(const Attributes& attributes, std::string_view key);
// `overlay` over `base`: keys of overlay win. Result sorted by key.
Attributes MergeAttributes(const Attributes& base, const Attributes& overlay);

}  // namespace titan::fleet
