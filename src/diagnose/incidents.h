// Incidents: the findings of every file on one clock, grouped into failures, each with its root
// (the first finding that states a cause), its symptoms (the rest), a class, an action and a
// culprit.
//
//   1. Ranks are resolved from process ids and GPUs (titan's spawn records, torchrun's summary,
//      NCCL's init lines). Times without a year take the year of the files that have one.
//   2. Findings with a wall-clock time are grouped by time: a gap longer than `gap_ns` starts a
//      new incident. A timeout counts from the start of the operation it waited for ("ran for
//      600060 ms"), so the rank that failed ten minutes earlier is in its incident. Findings
//      without a usable time (boot-relative dmesg, logs without times) join the incident that
//      shares a process, GPU or node with them, else the latest one; a file's boot-relative
//      times still split that file's findings by the same gap.
//   3. In each incident the root is the finding of the highest tier (a cause over a generic error
//      over a symptom), the earliest among equals. Its class is the incident's; its action too,
//      raised to the strongest action the incident's GPU faults call for (an Xid 13 followed by an
//      Xid 109 on that GPU resets it). The culprit is what the root blames; a field the root
//      leaves open is filled from the other findings when exactly one value is blamed, and left
//      open when the root's own kind of fault blames several (every node reports it).
//   4. A hardware incident on a GPU (or node) that already failed within `escalation_window_ns`
//      is escalated to drain_node: a GPU that fell off the bus twice is drained, not reset again.
//   5. The primary incident comes first: hardware before software before undetermined, then
//      the one whose root states its cause most specifically, then the latest.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/diagnose/sources/source.h"
#include "src/diagnose/types.h"

namespace titan::diagnose {

struct IncidentOptions {
  int64_t gap_ns = int64_t{10} * 60 * 1'000'000'000;
  int64_t escalation_window_ns = int64_t{24} * 3600 * 1'000'000'000;
  size_t max_symptoms = 50;  // per incident in the output (all are counted)
};

struct Incident {
  FaultClass fault = FaultClass::kUnknown;
  Action action = Action::kNone;
  Culprit culprit;
  Finding root;
  std::vector<Finding> symptoms;  // at most max_symptoms, in time order
  int64_t symptoms_total = 0;
  double confidence = 0;
  LogTime first, last;  // the incident's time span (kNone if untimed)
  bool escalated = false;
  std::string escalation;  // why the action was escalated
};

// Entity mappings the readers found.
struct Facts {
  std::vector<RankGpu> rank_gpus;
  std::vector<PidRank> pid_ranks;
};

// Findings' `order` must be set (input order).
std::vector<Incident> BuildIncidents(std::vector<Finding> findings, const Facts& facts,
                                     const IncidentOptions& options);

}  // namespace titan::diagnose
