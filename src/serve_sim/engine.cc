#include "src/serve_sim/engine.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "src/serve_sim/tokenizer.h"

namespace titan::serve_sim {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

Status Range(const char* field, int64_t value, int64_t lo, int64_t hi) {
  if (value >= lo && value <= hi) return OkStatus();
  return InvalidArgumentError(
      fmt::format("{} is {}; it must be in [{}, {}]", field, value, lo, hi));
}

}  // namespace

Status EngineConfig::Validate() const {
  constexpr int64_t kMaxCount = 100'000'000;
  constexpr int64_t kMaxCostNs = 3600LL * 1'000'000'000;
  TITAN_RETURN_IF_ERROR(Range("max_num_seqs", max_num_seqs, 1, 1'000'000));
  TITAN_RETURN_IF_ERROR(Range("max_waiting", max_waiting, 0, kMaxCount));
  TITAN_RETURN_IF_ERROR(Range("max_num_batched_tokens", max_num_batched_tokens, 1, kMaxCount));
  TITAN_RETURN_IF_ERROR(Range("max_model_len", max_model_len, 1, kMaxCount));
  TITAN_RETURN_IF_ERROR(Range("block_size", block_tokens, 1, 1024));
  TITAN_RETURN_IF_ERROR(Range("kv_capacity_tokens", kv_capacity_tokens, 1, int64_t{1} << 40));
  TITAN_RETURN_IF_ERROR(Range("prefix_cache_blocks", prefix_cache_blocks, 0, kMaxCount));
  TITAN_RETURN_IF_ERROR(Range("prefill_overhead (ns)", prefill_overhead_ns, 0, kMaxCostNs));
  TITAN_RETURN_IF_ERROR(Range("prefill_per_token (ns)", prefill_per_token_ns, 0, kMaxCostNs));
  TITAN_RETURN_IF_ERROR(Range("itl_base (ns)", itl_base_ns, 0, kMaxCostNs));
  if (kv_capacity_tokens / block_tokens < CeilDiv(max_model_len, block_tokens)) {
    return InvalidArgumentError(fmt::format(
        "kv_capacity_tokens {} cannot hold one sequence of max_model_len {} (blocks of {}); "
        "raise kv_capacity_tokens or lower max_model_len",
        kv_capacity_tokens, max_model_len, block_tokens));
  }
  if (!std::isfinite(load_factor) || load_factor < 0 || load_factor > 1000) {
    return InvalidArgumentError(
        fmt::format("load_factor is {}; it must be in [0, 1000]", load_factor));
  }
  if (!(eos_probability >= 0 && eos_probability <= 1)) {
    return InvalidArgumentError(
        fmt::format("eos_probability is {}; it must be in [0, 1]", eos_probability));
  }
  for (const TimedFault& fault : faults) {
    if (fault.at_ns < 0) return InvalidArgumentError("a fault's time must not be negative");
    if (fault.kind == TimedFault::Kind::kStall && fault.duration_ns <= 0) {
      return InvalidArgumentError("a stall's duration must be positive");
    }
    if (fault.kind == TimedFault::Kind::kSlow &&
        !(std::isfinite(fault.factor) && fault.factor > 0 && fault.factor <= 1e6)) {
      return InvalidArgumentError(fmt::format("slow factor {} must be in (0, 1e6]", fault.factor));
    }
  }
  return OkStatus();
}

Engine::Engine(EngineConfig config)
    : config_(std::move(config)),
      capacity_blocks_(config_.kv_capacity_tokens / config_.block_tokens),
      schedule_(config_.faults) {
  TITAN_CHECK(config_.Validate().ok()) << config_.Validate().ToString();
  std::stable_sort(schedule_.begin(), schedule_.end(),
                   [](const TimedFault& a, const TimedFault& b) { return a.at_ns < b.at_ns; });
  running_.reserve(static_cast<size_t>(std::min<int64_t>(config_.max_num_seqs, 4096)));
}

int64_t Engine::DecodeCostNs(int64_t decoding) const {
  if (decoding <= 0) return 0;
  const double scale = 1.0 + config_.load_factor * static_cast<double>(decoding - 1) /
                                 static_cast<double>(config_.max_num_seqs);
  return std::llround(static_cast<double>(config_.itl_base_ns) * scale);
}

int64_t Engine::PrefillCostNs(int64_t tokens_to_compute) const {
  return config_.prefill_overhead_ns + config_.prefill_per_token_ns * tokens_to_compute;
}

Result<SeqId> Engine::Submit(const SubmitRequest& request, int64_t now_ns) {
  if (request.prompt_tokens < 0 || request.max_tokens < 0) {
    return InvalidArgumentError("prompt_tokens and max_tokens must not be negative");
  }
  if (request.prompt_tokens + request.max_tokens > config_.max_model_len) {
    return InvalidArgumentError(
        fmt::format("{} prompt tokens + {} max_tokens exceed max_model_len {}",
                    request.prompt_tokens, request.max_tokens, config_.max_model_len));
  }
  if (static_cast<int64_t>(waiting_count_) >= config_.max_waiting) {
    ++counters_.refused;
    return ResourceExhaustedError(
        fmt::format("the waiting queue is full ({} requests); retry later", config_.max_waiting));
  }
  const uint64_t ordinal = counters_.submitted++;
  Seq seq;
  seq.prompt_tokens = request.prompt_tokens;
  seq.block_hashes = request.block_hashes;
  seq.max_tokens = request.max_tokens;
  seq.ignore_eos = request.ignore_eos;
  seq.rng = request.seed ? SplitMix64(*request.seed) : SplitMix64(config_.seed + ordinal);
  const SeqId id = next_id_++;
  seqs_.emplace(id, std::move(seq));
  waiting_.push_back(id);
  ++waiting_count_;
  return id;
}

bool Engine::Abort(SeqId id, int64_t now_ns) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return false;
  if (it->second.running) {
    running_.erase(std::find(running_.begin(), running_.end(), id));
    used_blocks_ -= it->second.blocks;
  } else {
    --waiting_count_;  // its id stays in waiting_ and is skipped
  }
  seqs_.erase(it);
  ++counters_.aborted;
  return true;
}

int64_t Engine::BlocksFor(const Seq& seq) const {
  // Blocks after this step: the prompt, the tokens so far and the one this step writes.
  const int64_t tokens = seq.prompt_tokens + seq.generated + (seq.max_tokens > 0 ? 1 : 0);
  return CeilDiv(tokens, config_.block_tokens);
}

int64_t Engine::PrefixLookupAndInsert(const Seq& seq, int64_t tokens) {
  if (config_.prefix_cache_blocks == 0) return 0;
  int64_t hit_blocks = 0;
  bool matching = true;
  for (uint64_t hash : seq.block_hashes) {
    auto found = lru_index_.find(hash);
    if (found != lru_index_.end()) {
      if (matching) ++hit_blocks;
      lru_.splice(lru_.begin(), lru_, found->second);  // touch
    } else {
      matching = false;
      lru_.push_front(hash);
      lru_index_.emplace(hash, lru_.begin());
      if (static_cast<int64_t>(lru_.size()) > config_.prefix_cache_blocks) {
        lru_index_.erase(lru_.back());
        lru_.pop_back();
      }
    }
  }
  return std::clamp<int64_t>(hit_blocks * config_.block_tokens, 0,
                             std::max<int64_t>(0, tokens - 1));
}

void Engine::Preempt(SeqId id) {
  Seq& seq = seqs_.at(id);
  running_.erase(std::find(running_.begin(), running_.end(), id));
  used_blocks_ -= seq.blocks;
  seq.blocks = 0;
  seq.running = false;
  waiting_.push_front(id);
  ++waiting_count_;
  ++counters_.preemptions;
}

void Engine::ApplyScheduledFaults(int64_t now_ns) {
  while (next_fault_ < schedule_.size() && schedule_[next_fault_].at_ns <= now_ns) {
    const TimedFault& fault = schedule_[next_fault_++];
    if (fault.kind == TimedFault::Kind::kStall) {
      stall_until_ns_ = std::max(stall_until_ns_, fault.at_ns + fault.duration_ns);
      stall_end_ns_ = std::max(stall_end_ns_, fault.at_ns + fault.duration_ns);
    } else {
      slow_ = fault.factor;
    }
  }
}

int64_t Engine::InjectStall(int64_t now_ns, int64_t duration_ns) {
  stall_end_ns_ = std::max(stall_end_ns_, now_ns + duration_ns);
  if (now_ns < busy_until_ns_) {  // the step in flight freezes
    busy_until_ns_ += duration_ns;
    return busy_until_ns_;
  }
  stall_until_ns_ = std::max(stall_until_ns_, now_ns + duration_ns);
  return stall_until_ns_;
}

void Engine::SetSlowFactor(double factor) {
  TITAN_CHECK(std::isfinite(factor) && factor > 0) << factor;
  slow_ = factor;
}

uint64_t Engine::NextRandom(Seq& seq) {
  seq.rng += 0x9e3779b97f4a7c15ULL;
  return SplitMix64(seq.rng);
}

StepResult Engine::Step(int64_t now_ns) {
  StepResult result;
  ApplyScheduledFaults(now_ns);
  if (!busy()) {
    busy_until_ns_ = now_ns;
    return result;
  }
  if (now_ns < stall_until_ns_) {
    result.duration_ns = stall_until_ns_ - now_ns;
    result.stalled = true;
    busy_until_ns_ = stall_until_ns_;
    return result;
  }
  ++counters_.steps;

  // 1. The running sequences grow by one token; preempt the newest until they fit.
  int64_t required = 0;
  for (SeqId id : running_) required += BlocksFor(seqs_.at(id));
  while (required > capacity_blocks_ && running_.size() > 1) {
    const SeqId victim = running_.back();
    required -= BlocksFor(seqs_.at(victim));
    Preempt(victim);
    result.preempted.push_back(victim);
  }
  const size_t decoding = running_.size();

  // 2. Admit waiting sequences in order (not in a step that had to preempt).
  int64_t compute_tokens = 0;
  while (result.preempted.empty() && waiting_count_ > 0 &&
         static_cast<int64_t>(running_.size()) < config_.max_num_seqs) {
    while (seqs_.find(waiting_.front()) == seqs_.end()) waiting_.pop_front();  // aborted
    const SeqId id = waiting_.front();
    Seq& seq = seqs_.at(id);
    const int64_t blocks = BlocksFor(seq);
    if (required + blocks > capacity_blocks_) break;
    const int64_t tokens = seq.prompt_tokens + seq.generated;
    // The budget is checked on the tokens before prefix hits, so that a refused admission
    // leaves the cache untouched.
    if (result.admitted > 0 && compute_tokens + tokens > config_.max_num_batched_tokens) break;
    const int64_t hits = PrefixLookupAndInsert(seq, tokens);
    counters_.prefix_queries_tokens += static_cast<uint64_t>(seq.prompt_tokens);
    counters_.prefix_hits_tokens += static_cast<uint64_t>(hits);
    if (!seq.counted_prompt) {
      counters_.prompt_tokens += static_cast<uint64_t>(seq.prompt_tokens);
      seq.counted_prompt = true;
    }
    compute_tokens += tokens - hits;
    waiting_.pop_front();
    --waiting_count_;
    seq.running = true;
    running_.push_back(id);
    required += blocks;
    ++result.admitted;
  }

  // 3. The cost of the step.
  result.decoded = static_cast<int64_t>(decoding);
  const int64_t cost =
      DecodeCostNs(result.decoded) + (result.admitted > 0 ? PrefillCostNs(compute_tokens) : 0);
  result.duration_ns = std::max<int64_t>(1, std::llround(slow_ * static_cast<double>(cost)));
  // Scheduled faults that fall inside the step: a stall freezes it, a slow factor waits for
  // the next step.
  while (next_fault_ < schedule_.size() &&
         schedule_[next_fault_].at_ns < now_ns + result.duration_ns) {
    const TimedFault& fault = schedule_[next_fault_++];
    if (fault.kind == TimedFault::Kind::kStall) {
      result.duration_ns += fault.duration_ns;
      stall_end_ns_ = std::max(stall_end_ns_, fault.at_ns + fault.duration_ns);
    } else {
      slow_ = fault.factor;
    }
  }
  busy_until_ns_ = now_ns + result.duration_ns;

  // 4. Every running sequence emits a token (prefill-only ones just finish).
  result.emissions.reserve(running_.size());
  size_t kept = 0;
  used_blocks_ = 0;
  for (size_t i = 0; i < running_.size(); ++i) {
    const SeqId id = running_[i];
    Seq& seq = seqs_.at(id);
    Emission emission;
    emission.id = id;
    if (seq.max_tokens == 0) {
      emission.finish = FinishReason::kLength;
    } else {
      emission.has_token = true;
      emission.token = static_cast<uint32_t>(NextRandom(seq) % kVocabularySize);
      emission.index = seq.generated++;
      ++counters_.generation_tokens;
      if (seq.generated >= seq.max_tokens) {
        emission.finish = FinishReason::kLength;
      } else if (!seq.ignore_eos && config_.eos_probability > 0 &&
                 static_cast<double>(NextRandom(seq) >> 11) * 0x1.0p-53 < config_.eos_probability) {
        emission.finish = FinishReason::kStop;
      }
    }
    result.emissions.push_back(emission);
    if (emission.finish != FinishReason::kNone) {
      ++(emission.finish == FinishReason::kStop ? counters_.finished_stop
                                                : counters_.finished_length);
      seqs_.erase(id);
      continue;
    }
    seq.blocks = CeilDiv(seq.prompt_tokens + seq.generated, config_.block_tokens);
    used_blocks_ += seq.blocks;
    running_[kept++] = id;
  }
  running_.resize(kept);
  return result;
}

EngineStats Engine::stats() const {
  EngineStats s = counters_;
  s.running = static_cast<int64_t>(running_.size());
  s.waiting = static_cast<int64_t>(waiting_count_);
  s.kv_used_blocks = used_blocks_;
  s.kv_capacity_blocks = capacity_blocks_;
  s.slow_factor = slow_;
  s.stall_end_ns = stall_end_ns_;
  return s;
}

}  // namespace titan::serve_sim
