// What titan run does about a failure, from its diagnosis (src/diagnose) and the failures before
// it. Free of processes and clocks: unit-tested with made-up histories (failure_policy_test.cc).
//
//   undetermined                      -> restart (the logs name no cause)
//   the same failure again            -> stop: the same root (its rule and text, numbers masked)
//     (software, config, memory)         at the same step as the failure before it means a
//                                        restart repeats it (a bug, a bad config, a batch that
//                                        does not fit); config and storage faults need not be at
//                                        the same step
//   hardware (GPU, ECC, NVLink)       -> above `isolate_confidence`, with this node to blame:
//   exclude
//                                        the node (and isolate it through --on-isolate, at most
//                                        once per `isolate_interval_ns`) where other nodes can go
//                                        on (etcd); without etcd, stop when the fault needs a GPU
//                                        reset, a reboot or a drain (a restart on it repeats the
//                                        failure)
//   anything else                     -> restart, saying what the diagnosis advises (for an OOM:
//                                        what to reduce)
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "src/diagnose/types.h"

namespace titan::supervisor {

// One failure as titan run saw it, with its diagnosis.
struct FailureFacts {
  std::string kind;   // "crash", "hang", "straggler"
  int64_t step = -1;  // the failing rank's last step (-1: before its first)
  bool diagnosed = false;
  diagnose::FaultClass fault = diagnose::FaultClass::kUnknown;
  diagnose::Action action = diagnose::Action::kNone;
  double confidence = 0;
  std::string signature;  // FailureSignature of the root
  diagnose::Culprit culprit;
  std::string root_text;  // the root line
  std::string advice;     // what the diagnosis says it means and what to do
};

// The root's rule and text with every run of digits (pids, addresses, times) masked.
std::string FailureSignature(std::string_view rule, std::string_view text);

struct FailurePolicyOptions {
  double isolate_confidence = 0.7;
  int64_t isolate_interval_ns = int64_t{10} * 60 * 1'000'000'000;
  bool can_exclude = false;  // other nodes can go on without this one (etcd)
};

enum class FailureVerdict { kRestart, kStop, kExclude };
std::string_view FailureVerdictName(FailureVerdict v);  // "restart", "stop", "exclude"

struct FailureDecision {
  FailureVerdict verdict = FailureVerdict::kRestart;
  bool isolate = false;  // with kExclude: also run the --on-isolate actions
  std::string why;       // one sentence for people: the decision and its reason
};

// `earlier`: this job's failures before `now`, oldest first. `this_node`: the host names this
// node goes by (the scheduler's, the hostname). `last_isolation_ns`: when an isolation last ran
// (0: never); `now_ns` on the same clock.
FailureDecision DecideFailure(const FailureFacts& now, const std::vector<FailureFacts>& earlier,
                              const FailurePolicyOptions& options,
                              const std::vector<std::string>& this_node, int64_t now_ns,
                              int64_t last_isolation_ns);

}  // namespace titan::supervisor
