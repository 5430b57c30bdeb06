// Fault injection for drills: `--inject KIND@KEY=VALUE,...`, e.g.
//   crash@rank=1,step=50        SIGKILL global rank 1 when it reports step 50
//   hang@rank=0,step=80         SIGSTOP rank 0 at step 80 (a hang: it stops making progress)
//   slow@rank=2,factor=1.5      make rank 2 run 1.5x slower (SIGSTOP/SIGCONT duty cycle, 20 ms)
//   node-loss@node=1,step=100   node 1's `titan run` kills its workers and exits abruptly
//                               without releasing its etcd lease (the lease must expire)
// Keys: rank=N (global rank) or node=N (group rank; the node's lowest local rank decides),
// step=N (fires at the first step_begin >= N), at=SECONDS (fires that many seconds after the
// job started), every=SECONDS (fires periodically; for the ETTR bench), times=N (how often it
// may fire in total, default 1, so that a step redone after a restart does not fire again),
// factor=F (slow only, > 1), steps=N (slow only: for how many steps, default unlimited).
// A missing rank (and node) is drawn from `--seed` when the injection is armed, so a drill is
// repeatable.
//
// Thread safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/base/status.h"

namespace titan::supervisor {

enum class InjectKind : uint8_t { kCrash, kHang, kSlow, kNodeLoss };
std::string_view InjectKindName(InjectKind kind);

struct Injection {
  InjectKind kind = InjectKind::kCrash;
  int rank = -1;             // global rank; -1: drawn from the seed (unless node is set)
  int node = -1;             // group rank of the node; -1: any
  int64_t step = -1;         // fire at the first step >= step; -1: not step-triggered
  double at_seconds = -1;    // fire at this time after start; -1: not time-triggered
  double every_seconds = 0;  // > 0: fire periodically
  double factor = 1.0;       // slow only
  int64_t steps = -1;        // slow only: duration in steps; -1: until the generation ends
  int times = 1;             // how many times it may fire in total
  std::string text;          // the spec as given, for the event log
};

// Parses one spec. Errors name the offending key or value and show the expected form.
Result<Injection> ParseInjection(std::string_view spec);

// Deterministic draw in [0, n) from (seed, index): the same seed gives the same drill.
int DrawFromSeed(uint64_t seed, uint64_t index, int n);

// Decides, per generation, which injections fire on this node and when. Every node runs the
// same draws from the same seed, so exactly one node acts on each injection.
// Thread safety: not thread-safe; owned by the supervisor loop.
class Injector {
 public:
  Injector(std::vector<Injection> injections, uint64_t seed)
      : injections_(std::move(injections)), seed_(seed), fired_(injections_.size(), 0) {}

  // A generation starts: this node is `group_rank` of `nnodes` and runs global ranks
  // [rank_offset, rank_offset + nproc) of `world_size`. Resolves drawn targets.
  void Arm(int group_rank, int nnodes, int rank_offset, int nproc, int world_size);

  struct Action {
    size_t index = 0;  // into injections()
    InjectKind kind = InjectKind::kCrash;
    int rank = -1;  // local target's global rank (node-loss: this node's first rank)
    double factor = 1;
    int64_t steps = -1;
  };
  // A local rank began `step`: the step-triggered injections that fire now.
  std::vector<Action> OnStep(int rank, int64_t step);
  // Time-triggered injections (at=, every=) due at `seconds` since the job started.
  std::vector<Action> OnTime(double seconds);
  const std::vector<Injection>& injections() const { return injections_; }
  int fired(size_t index) const { return fired_[index]; }

 private:
  bool Local(int rank) const { return rank >= rank_offset_ && rank < rank_offset_ + nproc_; }
  Action Fire(size_t i, int rank);
  std::vector<Injection> injections_;
  uint64_t seed_;
  std::vector<int> fired_;   // in total, across generations
  std::vector<int> target_;  // per injection, this generation: global rank or -1
  std::vector<bool> fired_this_gen_;
  std::vector<double> next_due_s_;  // every=: next firing time
  int group_rank_ = 0;
  int rank_offset_ = 0;
  int nproc_ = 0;
};

}  // namespace titan::supervisor
