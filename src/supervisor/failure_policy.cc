#include "src/supervisor/failure_policy.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

namespace titan::supervisor {
namespace {

using diagnose::Action;
using diagnose::FaultClass;

// Faults that need the operator's fix, wherever they happen: a restart cannot change them.
bool ConfigFault(const FailureFacts& f) {
  return f.fault == FaultClass::kNcclConfig || f.fault == FaultClass::kStorage ||
         ((f.fault == FaultClass::kScheduler || f.fault == FaultClass::kRendezvous) &&
          f.action == Action::kFixConfig);
}

std::string StepText(int64_t step) {
  return step < 0 ? "before the first step" : fmt::format("at step {}", step);
}

}  // namespace

std::string FailureSignature(std::string_view rule, std::string_view text) {
  std::string out(rule);
  out += '|';
  bool in_digits = false;
  for (char c : text.substr(0, 4096)) {
    const bool digit = std::isdigit(static_cast<unsigned char>(c)) != 0;
    if (digit) {
      if (!in_digits) out += '#';
    } else {
      out += c;
    }
    in_digits = digit;
  }
  return out;
}

std::string_view FailureVerdictName(FailureVerdict v) {
  switch (v) {
    case FailureVerdict::kRestart:
      return "restart";
    case FailureVerdict::kStop:
      return "stop";
    case FailureVerdict::kExclude:
      return "exclude";
  }
  return "restart";
}

FailureDecision DecideFailure(const FailureFacts& now, const std::vector<FailureFacts>& earlier,
                              const FailurePolicyOptions& options,
                              const std::vector<std::string>& this_node, int64_t now_ns,
                              int64_t last_isolation_ns) {
  FailureDecision d;
  if (!now.diagnosed || now.fault == FaultClass::kUnknown) {
    d.why = "restart: the logs name no cause (undetermined)";
    return d;
  }
  const std::string what =
      fmt::format("{} ({})", diagnose::FaultClassName(now.fault), now.root_text.substr(0, 160));
  // The same root again: a restart repeats it.
  if (!earlier.empty()) {
    const FailureFacts& before = earlier.back();
    const bool same_root =
        before.diagnosed && before.fault == now.fault && before.signature == now.signature;
    if (same_root && !diagnose::IsHardwareClass(now.fault) &&
        (before.step == now.step || ConfigFault(now))) {
      d.verdict = FailureVerdict::kStop;
      d.why = fmt::format(
          "stop: the same {} failure {} twice, in two generations: a restart repeats it "
          "(deterministic); {}",
          what, StepText(now.step), now.advice.empty() ? "fix the cause" : now.advice);
      return d;
    }
  }
  if (diagnose::IsHardwareClass(now.fault)) {
    const bool ours = now.culprit.node.empty() || std::find(this_node.begin(), this_node.end(),
                                                            now.culprit.node) != this_node.end();
    if (now.confidence < options.isolate_confidence) {
      d.why = fmt::format(
          "restart: a {} fault is likely but its confidence {:.2f} is below {:.2f} "
          "(--isolate-confidence): no node is taken out on it",
          diagnose::FaultClassName(now.fault), now.confidence, options.isolate_confidence);
      return d;
    }
    if (ours && options.can_exclude) {
      d.verdict = FailureVerdict::kExclude;
      d.isolate =
          last_isolation_ns == 0 || now_ns - last_isolation_ns >= options.isolate_interval_ns;
      d.why = fmt::format(
          "exclude this node and restart without it: {} calls for {}{}", what,
          diagnose::ActionName(now.action),
          d.isolate ? ""
                    : fmt::format("; not isolated through the scheduler: the last isolation ran "
                                  "less than {:.0f} min ago (--isolate-interval)",
                                  static_cast<double>(options.isolate_interval_ns) / 6e10));
      return d;
    }
    if (ours && diagnose::GpuActionRank(now.action) >= diagnose::GpuActionRank(Action::kResetGpu)) {
      d.verdict = FailureVerdict::kStop;
      d.why = fmt::format(
          "stop: {} calls for {} of this node, and without etcd no other node can take its "
          "place; a restart on it would repeat the failure",
          what, diagnose::ActionName(now.action));
      return d;
    }
  }
  d.why = fmt::format("restart: {}{}", what, now.advice.empty() ? "" : "; " + now.advice);
  return d;
}

}  // namespace titan::supervisor
