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
// thread, which explains them (Correlator), stores them (EventLog), counts them
// (titan_transients_total) and calls the optional listener (recorder auto-dump). The queue is
// bounded and at most max_per_second transients are processed: a flapping signal cannot flood
// the agent; the excess is counted in titan_transients_dropped_total.
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

class TransientPipeline {
 public:
  using Listener = std::function<void(const TransientEvent&)>;

  TransientPipeline(MetricRegistry& registry, EventLog& log, double max_per_second = 20);
  ~TransientPipeline();  // stops and joins the worker

  // Installs the observer factory on the registry (before collectors start).
  void AttachTo(const DetectorRules& rules);
  void SetListener(Listener listener) { listener_ = std::move(listener); }
  // Queues a detection of `series` (any thread).
  void Submit(Series& series, const Detection& detection);
  // Waits until the queue is empty (tests).
  void Drain();

 private:
  void Run();
  struct Pending {
    Series* series;
    Detection detection;
  };
  MetricRegistry& registry_;
  EventLog& log_;
  Correlator correlator_;
  const double max_per_second_;
  Listener listener_;
  Series* dropped_ = nullptr;

  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  std::deque<Pending> queue_;
  bool busy_ = false;
  bool stop_ = false;
  std::thread worker_;
};

}  // namespace titan
