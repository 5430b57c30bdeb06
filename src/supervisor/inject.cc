#include "src/supervisor/inject.h"

#include <fmt/format.h>

#include <cmath>

#include "src/base/text.h"

namespace titan::supervisor {
namespace {

constexpr std::string_view kForm =
    "expected KIND@KEY=VALUE,... with KIND in crash|hang|slow|node-loss and KEY in "
    "rank|node|step|at|every|times|factor|steps, e.g. crash@rank=1,step=50";

Status Bad(std::string_view spec, std::string_view what) {
  return InvalidArgumentError(fmt::format("--inject '{}': {}; {}", spec, what, kForm));
}

}  // namespace

std::string_view InjectKindName(InjectKind kind) {
  switch (kind) {
    case InjectKind::kCrash:
      return "crash";
    case InjectKind::kHang:
      return "hang";
    case InjectKind::kSlow:
      return "slow";
    case InjectKind::kNodeLoss:
      return "node-loss";
  }
  return "unknown";
}

Result<Injection> ParseInjection(std::string_view spec) {
  Injection inj;
  inj.text = std::string(spec);
  size_t at = spec.find('@');
  std::string_view kind = spec.substr(0, at);
  if (kind == "crash") {
    inj.kind = InjectKind::kCrash;
  } else if (kind == "hang") {
    inj.kind = InjectKind::kHang;
  } else if (kind == "slow") {
    inj.kind = InjectKind::kSlow;
  } else if (kind == "node-loss") {
    inj.kind = InjectKind::kNodeLoss;
  } else {
    return Bad(spec, fmt::format("unknown kind '{}'", kind));
  }
  std::string_view rest = at == std::string_view::npos ? std::string_view() : spec.substr(at + 1);
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) return Bad(spec, fmt::format("'{}' has no '='", item));
    std::string_view key = item.substr(0, eq);
    std::string_view value = item.substr(eq + 1);
    int64_t i = 0;
    double d = 0;
    auto need_int = [&](int64_t lo, int64_t hi) -> Status {
      if (!ParseInt64(value, &i) || i < lo || i > hi) {
        return Bad(spec, fmt::format("{}='{}' must be an integer in [{}, {}]", key, value, lo, hi));
      }
      return OkStatus();
    };
    auto need_double = [&](double lo, double hi) -> Status {
      std::string_view v = value;
      if (!v.empty() && v.back() == 's') v.remove_suffix(1);  // "60s"
      if (!ParseDouble(v, &d) || !std::isfinite(d) || d < lo || d > hi) {
        return Bad(spec, fmt::format("{}='{}' must be a number in [{}, {}]", key, value, lo, hi));
      }
      return OkStatus();
    };
    if (key == "rank") {
      TITAN_RETURN_IF_ERROR(need_int(0, 1 << 20));
      inj.rank = static_cast<int>(i);
    } else if (key == "node") {
      TITAN_RETURN_IF_ERROR(need_int(0, 1 << 16));
      inj.node = static_cast<int>(i);
    } else if (key == "step") {
      TITAN_RETURN_IF_ERROR(need_int(0, int64_t{1} << 50));
      inj.step = i;
    } else if (key == "at") {
      TITAN_RETURN_IF_ERROR(need_double(0, 1e7));
      inj.at_seconds = d;
    } else if (key == "every") {
      TITAN_RETURN_IF_ERROR(need_double(0.1, 1e7));
      inj.every_seconds = d;
    } else if (key == "times") {
      TITAN_RETURN_IF_ERROR(need_int(1, 1'000'000));
      inj.times = static_cast<int>(i);
    } else if (key == "factor") {
      TITAN_RETURN_IF_ERROR(need_double(1.0, 100.0));
      inj.factor = d;
    } else if (key == "steps") {
      TITAN_RETURN_IF_ERROR(need_int(1, int64_t{1} << 50));
      inj.steps = i;
    } else {
      return Bad(spec, fmt::format("unknown key '{}'", key));
    }
  }
  if (inj.kind == InjectKind::kSlow) {
    if (inj.factor <= 1.0) return Bad(spec, "slow needs factor=F with F > 1");
    if (inj.step < 0) inj.step = 0;  // slow from the first step unless told otherwise
  } else if (inj.factor != 1.0 || inj.steps != -1) {
    return Bad(spec, "factor and steps apply to slow only");
  }
  if (inj.kind == InjectKind::kNodeLoss && inj.rank >= 0) {
    return Bad(spec, "node-loss takes node=N, not rank=N");
  }
  int triggers = (inj.step >= 0) + (inj.at_seconds >= 0) + (inj.every_seconds > 0);
  if (triggers == 0) return Bad(spec, "needs a trigger: step=N, at=SECONDS or every=SECONDS");
  if (triggers > 1 && inj.kind != InjectKind::kSlow) {
    return Bad(spec, "give only one of step, at, every");
  }
  if (inj.every_seconds > 0 && inj.times == 1) inj.times = 1'000'000;
  if (inj.rank >= 0 && inj.node >= 0) return Bad(spec, "give rank or node, not both");
  return inj;
}

int DrawFromSeed(uint64_t seed, uint64_t index, int n) {
  if (n <= 0) return 0;
  // splitmix64: a fixed, well-mixed function of (seed, index), portable across libstdc++s.
  uint64_t z = seed + 0x9E3779B97F4A7C15ULL * (index + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return static_cast<int>(z % static_cast<uint64_t>(n));
}

void Injector::Arm(int group_rank, int nnodes, int rank_offset, int nproc, int world_size) {
  group_rank_ = group_rank;
  rank_offset_ = rank_offset;
  nproc_ = nproc;
  target_.assign(injections_.size(), -1);
  fired_this_gen_.assign(injections_.size(), false);
  if (next_due_s_.size() != injections_.size()) {
    next_due_s_.assign(injections_.size(), 0);
    for (size_t i = 0; i < injections_.size(); ++i) {
      next_due_s_[i] = injections_[i].every_seconds > 0 ? injections_[i].every_seconds
                                                        : injections_[i].at_seconds;
    }
  }
  for (size_t i = 0; i < injections_.size(); ++i) {
    const Injection& inj = injections_[i];
    uint64_t draw_index = i * 1'000'003ULL + static_cast<uint64_t>(fired_[i]);
    if (inj.kind == InjectKind::kNodeLoss) {
      int node = inj.node >= 0 ? inj.node : DrawFromSeed(seed_, draw_index, nnodes);
      target_[i] = node == group_rank ? rank_offset : -1;
    } else if (inj.rank >= 0) {
      target_[i] = inj.rank < world_size ? inj.rank : -1;
    } else if (inj.node >= 0) {
      target_[i] = inj.node == group_rank ? rank_offset : -1;
    } else {
      target_[i] = DrawFromSeed(seed_, draw_index, world_size);
    }
    if (target_[i] >= 0 && !Local(target_[i])) target_[i] = -1;
  }
}

Injector::Action Injector::Fire(size_t i, int rank) {
  ++fired_[i];
  fired_this_gen_[i] = true;
  const Injection& inj = injections_[i];
  return Action{i, inj.kind, rank, inj.factor, inj.steps};
}

std::vector<Injector::Action> Injector::OnStep(int rank, int64_t step) {
  std::vector<Action> out;
  for (size_t i = 0; i < injections_.size() && i < target_.size(); ++i) {
    const Injection& inj = injections_[i];
    if (inj.step < 0 || target_[i] != rank || fired_this_gen_[i] || fired_[i] >= inj.times) {
      continue;
    }
    if (step >= inj.step) out.push_back(Fire(i, rank));
  }
  return out;
}

std::vector<Injector::Action> Injector::OnTime(double seconds) {
  std::vector<Action> out;
  for (size_t i = 0; i < injections_.size() && i < target_.size(); ++i) {
    const Injection& inj = injections_[i];
    bool timed = inj.every_seconds > 0 || (inj.at_seconds >= 0 && inj.step < 0);
    if (!timed || fired_[i] >= inj.times || seconds < next_due_s_[i]) continue;
    // Due: every node advances the schedule, only the target's node acts.
    next_due_s_[i] = inj.every_seconds > 0 ? seconds + inj.every_seconds : 1e300;
    if (target_[i] >= 0) {
      out.push_back(Fire(i, target_[i]));
    } else {
      ++fired_[i];  // fired elsewhere; keep the draws in step with the other nodes
    }
  }
  return out;
}

}  // namespace titan::supervisor
