// The simulated LLM engine: a vLLM-like iteration-level (continuous-batching) scheduler as a
// pure state machine. It has no clock and no threads: the caller passes the time to every call
// (`now_ns`, any fixed origin, never decreasing), so tests drive it in virtual time and the HTTP
// layer (server.h) drives it with timers in real time.
//
// One Step(now) is one forward pass of the model:
//  1. Scheduled faults due by `now` take effect. While a stall lasts, Step does nothing and
//     says how long to wait (StepResult::stalled). A stall that begins while a step is in flight
//     freezes that step: it ends the stall's duration later (as a GPU that hangs mid-kernel).
//  2. KV cache: every running sequence is about to grow by one token. If the blocks they need
//     exceed the capacity, the most recently admitted sequence is preempted (vLLM's "recompute":
//     its blocks are freed and it goes back to the front of the waiting queue; on readmission its
//     prompt and the tokens generated so far are prefilled again). Repeated until they fit.
//  3. Admission (only in a step that preempted nothing): waiting sequences, first come first
//     served, while a seat (max_num_seqs) is free, their blocks fit and the step's prefill tokens
//     stay within max_num_batched_tokens (the first admitted always fits).
//  4. Cost: duration_ns = slow x (decode + prefill), where
//       decode  = itl_base x (1 + load_factor x (D - 1) / max_num_seqs)   D = sequences that
//                 were already running (0 when D = 0)
//       prefill = prefill_overhead + prefill_per_token x (sum of the admitted sequences' tokens
//                 to compute), 0 when nothing was admitted; tokens to compute = prompt (+ tokens
//                 generated before a preemption) - prefix-cache hit tokens.
//  5. At the end of the step (now + duration_ns) every running sequence emits one token; a
//     newly admitted one emits its first. A sequence finishes after max_tokens tokens, or
//     earlier with probability eos_probability per token unless it asked to ignore EOS. A
//     sequence with max_tokens 0 (an embedding) finishes at the end of its prefill with no token.
//
// KV cache: blocks of block_tokens; a running sequence holds ceil((prompt + generated + 1) /
// block_tokens) blocks (+1: the token this step writes; a prefill-only sequence holds its prompt).
// Blocks are not shared between sequences. Prefix cache: an LRU of prefix_cache_blocks chained
// block hashes (tokenizer.h); on admission the longest run of leading prompt blocks found is a
// hit (at most prompt - 1 tokens: one token is always computed), then all the prompt's blocks
// are inserted. The prefix cache is bookkeeping beside the KV capacity, not inside it.
//
// Determinism: the output tokens of a sequence come from a generator seeded with
// SplitMix64(seed + ordinal), ordinal = 0, 1, 2... in Submit order (or from the request's own
// seed when it gives one), so a seed and an arrival order give the same tokens and timings.
//
// Thread safety: none; one thread (or strand) drives an Engine.
#pragma once

#include <cstdint>
#include <deque>
#include <list>
#include <optional>
#include <unordered_map>
#include <vector>

#include "src/base/status.h"

namespace titan::serve_sim {

// A fault the engine applies by itself at a time (engine time, the `now_ns` of Step).
struct TimedFault {
  enum class Kind { kStall, kSlow };
  Kind kind = Kind::kStall;
  int64_t at_ns = 0;
  int64_t duration_ns = 0;  // kStall: how long no step runs
  double factor = 1;        // kSlow: step costs x factor from at_ns on (1 restores)
};

struct EngineConfig {
  int64_t max_num_seqs = 64;                // running sequences (seats)
  int64_t max_waiting = 1024;               // waiting queue bound; Submit beyond it is refused
  int64_t max_num_batched_tokens = 8192;    // prefill tokens admitted per step
  int64_t max_model_len = 8192;             // prompt + max_tokens bound per request
  int64_t kv_capacity_tokens = 65536;       // KV cache size
  int64_t block_tokens = 16;                // KV and prefix-cache block size
  int64_t prefix_cache_blocks = 4096;       // LRU entries; 0 disables the prefix cache
  int64_t prefill_overhead_ns = 2'000'000;  // per step that admits anything
  int64_t prefill_per_token_ns = 50'000;
  int64_t itl_base_ns = 10'000'000;  // decode step of a batch of one
  double load_factor = 1.0;          // decode slowdown at a full batch (x (1 + load_factor))
  double eos_probability = 0;        // per token, for requests that do not ignore EOS
  uint64_t seed = 0;
  std::vector<TimedFault> faults;  // any order

  // Errors name the field and the allowed range.
  Status Validate() const;
};

using SeqId = uint64_t;

struct SubmitRequest {
  int64_t prompt_tokens = 0;           // >= 0
  std::vector<uint64_t> block_hashes;  // chained hashes of the full prompt blocks (tokenizer.h)
  int64_t max_tokens = 16;             // 0: prefill only (embeddings)
  bool ignore_eos = true;
  std::optional<uint64_t> seed;  // the request's own seed, else config seed + ordinal
};

enum class FinishReason { kNone, kLength, kStop };

// What one sequence did at the end of a step.
struct Emission {
  SeqId id = 0;
  bool has_token = false;
  uint32_t token = 0;  // < kVocabularySize (tokenizer.h) when has_token
  int64_t index = 0;   // 0-based index of the token in the output (when has_token)
  FinishReason finish = FinishReason::kNone;  // set on the sequence's last emission
};

struct StepResult {
  // How long the step takes; its emissions happen at now + duration_ns. 0 with no emissions:
  // the engine is idle (call again after the next Submit).
  int64_t duration_ns = 0;
  bool stalled = false;  // a stall: nothing ran; call again at now + duration_ns
  int64_t decoded = 0;   // sequences that decoded a token (already running before the step)
  int64_t admitted = 0;  // sequences prefilled in this step
  std::vector<Emission> emissions;
  std::vector<SeqId> preempted;
};

struct EngineStats {
  int64_t running = 0;
  int64_t waiting = 0;
  int64_t kv_used_blocks = 0;
  int64_t kv_capacity_blocks = 0;
  double slow_factor = 1;
  int64_t stall_end_ns = 0;  // end of the latest stall (engine time): stalled while now < it
  // Counters since construction.
  uint64_t steps = 0;
  uint64_t submitted = 0;
  uint64_t refused = 0;          // queue full
  uint64_t finished_length = 0;  // reached max_tokens (or prefill-only done)
  uint64_t finished_stop = 0;    // ended by EOS
  uint64_t aborted = 0;
  uint64_t preemptions = 0;
  uint64_t prompt_tokens = 0;      // prompt tokens of first admissions
  uint64_t generation_tokens = 0;  // tokens emitted
  uint64_t prefix_queries_tokens = 0;
  uint64_t prefix_hits_tokens = 0;
  double kv_usage() const {
    return kv_capacity_blocks > 0 ? static_cast<double>(kv_used_blocks) / kv_capacity_blocks : 0;
  }
};

class Engine {
 public:
  // Precondition: config.Validate() is OK.
  explicit Engine(EngineConfig config);
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Queues a request. Errors: RESOURCE_EXHAUSTED when the waiting queue is full (refused,
  // counted); INVALID_ARGUMENT when prompt_tokens + max_tokens > max_model_len or a field is
  // negative (the HTTP layer validates first; this is the engine's own guard).
  Result<SeqId> Submit(const SubmitRequest& request, int64_t now_ns);

  // Removes a waiting or running sequence (the client went away) and frees its blocks. False
  // when `id` is unknown or already finished.
  bool Abort(SeqId id, int64_t now_ns);

  // Runs one step starting at `now_ns` (see the file comment). Precondition: now_ns is not
  // before the end of the previous step (its now + duration_ns).
  StepResult Step(int64_t now_ns);

  // Run-time faults. A stall freezes the engine from now_ns for duration_ns: the step in flight
  // (if any) ends duration_ns later, else no step starts before now_ns + duration_ns. Returns
  // the time at which the step in flight now ends, or the stall's end when idle. The slow
  // factor (> 0) applies from the next step; 1 restores normal speed.
  int64_t InjectStall(int64_t now_ns, int64_t duration_ns);
  void SetSlowFactor(double factor);
  // When the last step (or stall) that Step returned ends, including stalls injected since.
  int64_t step_end_ns() const { return busy_until_ns_; }

  // Whether any sequence is waiting or running.
  bool busy() const { return running_.size() + waiting_count_ > 0; }
  EngineStats stats() const;
  const EngineConfig& config() const { return config_; }

  // The decode and prefill costs of the formulas above, without the slow factor.
  int64_t DecodeCostNs(int64_t decoding) const;
  int64_t PrefillCostNs(int64_t tokens_to_compute) const;

 private:
  struct Seq {
    int64_t prompt_tokens = 0;
    std::vector<uint64_t> block_hashes;
    int64_t max_tokens = 0;
    bool ignore_eos = true;
    uint64_t rng = 0;
    int64_t generated = 0;
    int64_t blocks = 0;  // held while running
    bool running = false;
    bool counted_prompt = false;
  };
  int64_t BlocksFor(const Seq& seq) const;
  int64_t PrefixLookupAndInsert(const Seq& seq, int64_t tokens);  // returns hit tokens
  void Preempt(SeqId id);
  void ApplyScheduledFaults(int64_t now_ns);
  uint64_t NextRandom(Seq& seq);

  const EngineConfig config_;
  const int64_t capacity_blocks_;
  std::vector<TimedFault> schedule_;  // by at_ns
  size_t next_fault_ = 0;

  std::unordered_map<SeqId, Seq> seqs_;
  std::deque<SeqId> waiting_;  // may hold aborted ids, skipped lazily
  size_t waiting_count_ = 0;
  std::vector<SeqId> running_;  // in admission order
  int64_t used_blocks_ = 0;
  SeqId next_id_ = 1;

  // Prefix cache LRU: most recent at the front.
  std::list<uint64_t> lru_;
  std::unordered_map<uint64_t, std::list<uint64_t>::iterator> lru_index_;

  int64_t busy_until_ns_ = 0;
  int64_t stall_until_ns_ = 0;
  double slow_ = 1;
  int64_t stall_end_ns_ = 0;
  EngineStats counters_;
};

}  // namespace titan::serve_sim
