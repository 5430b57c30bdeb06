// Detection wiring: which detectors watch which series, and what happens when one fires.
//
// DetectorRules map a signal family name (glob with '*') to detector specs. Defaults, chosen so
// that a healthy node reports next to nothing: the step duration gets the rolling k-sigma test of
// the user's practice (zscore, 3 sigma over 100 steps) and the periodic detector; GPU utilisation
// gets the robust median/MAD detector (k=6, deaf to wiggles under 2 points). With detect_all
// (`--detect-all`) every other family whose SignalDesc has detect=true gets mad:k=6 as well.
// `--detect FAMILY=SPEC[;SPEC]` replaces the rule of a family, `FAMILY=off` disables it.
//
// TransientPipeline receives detections from the recording threads and hands them to one worker
// thread, which groups them, explains each group (Correlator), stores it as one event (EventLog),
// counts the detections (titan_transients_total) and calls the optional listener (recorder
// auto-dump). Grouping: detections of one signal family and direction whose [start, end] come
// within GroupingOptions::window_ns of each other are one event with a member per series (one
// slowdown of all 4 ranks is one event naming the 4 ranks, not four); a series detected twice
// over overlapping samples (zscore and periodic on the same step) is one member, over others
// two events. A group is explained hold_ns
// after its first detection arrived, so the other ranks' detections of the same steps (reported
// at the same step end) join it. The queue is bounded and at most max_per_second groups are
// opened: a flapping signal cannot flood the agent; the excess is counted in
// titan_transients_dropped_total.
//
// Thread safety: DetectorRules is immutable after parsing. TransientPipeline::Submit is
// thread-safe; the listener runs on the worker thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "src/agent/correlator.h"
#include "src/agent/event_log.h"
#include "src/detect/detector.h"
#include "src/metrics/registry.h"

namespace titan {

class DetectorRules {
 public:
  // The defaults described above.
  explicit DetectorRules(bool detect_all = false);
  // Parses one `FAMILY=SPEC[;SPEC...]` or `FAMILY=off` and puts it before earlier rules.
  Status Add(std::string_view rule);
  // Specs for a family (empty: no detection).
  std::vector<DetectorSpec> SpecsFor(const SignalDesc& desc) const;

 private:
  struct Rule {
    std::string pattern;
    std::vector<DetectorSpec> specs;  // empty: off
  };
  bool detect_all_;
  std::vector<Rule> rules_;
};

// Glob match with '*' only.
bool GlobMatch(std::string_view pattern, std::string_view text);

struct GroupingOptions {
  // Detections this close in time are one event: ranks in step together end a slow step within
  // milliseconds of each other; GPUs sampled every 100 ms dip within a sample or two.
  int64_t window_ns = 250'000'000;
  int64_t hold_ns = 2'000'000'000;  // how long a group waits for more members (monotonic)
};

class TransientPipeline {
 public:
  using Listener = std::function<void(const TransientEvent&)>;

  TransientPipeline(MetricRegistry& registry, EventLog& log, double max_per_second = 20,
                    GroupingOptions grouping = {});
  ~TransientPipeline();  // stops and joins the worker

  // Installs the observer factory on the registry (before collectors start).
  void AttachTo(const DetectorRules& rules);
  void SetListener(Listener listener) { listener_ = std::move(listener); }
  // Queues a detection of `series` (any thread).
  void Submit(Series& series, const Detection& detection);
  // Waits until every detection submitted so far is in an event, explaining open groups
  // without waiting for their hold (tests).
  void Drain();

 private:
  struct Pending {
    Series* series;
    Detection detection;
  };
  struct Group {
    std::string_view family;  // the SignalDesc's name (outlives the registry's series)
    std::string_view direction;
    int64_t from_ns, to_ns;  // the members' detections span this
    int64_t due_mono_ns;     // explained then
    std::vector<Pending> members;
  };
  void Run();
  // Puts a detection in its group (or a new one: a token is taken from *tokens; none left: it is
  // dropped). Worker thread.
  void AddToGroup(const Pending& pending, int64_t now_mono, double* tokens);
  // Explains, stores and announces a group. Worker thread.
  void Emit(Group& group);
  MetricRegistry& registry_;
  EventLog& log_;
  Correlator correlator_;
  const double max_per_second_;
  const GroupingOptions grouping_;
  Listener listener_;
  Series* dropped_ = nullptr;
  std::vector<Group> groups_;  // open, worker thread only

  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  std::deque<Pending> queue_;
  bool busy_ = false;
  bool flush_ = false;      // Drain: explain open groups now
  size_t open_groups_ = 0;  // groups_.size() as of the worker's last round
  bool stop_ = false;
  std::thread worker_;
};

}  // namespace titan
