// The engine in virtual time: every number below follows from the formulas in engine.h.
#include "src/serve_sim/engine.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "src/base/clock.h"
#include "src/serve_sim/tokenizer.h"

namespace titan::serve_sim {
namespace {

constexpr int64_t kMs = kNsPerMs;
constexpr int64_t kUs = kNsPerUs;

SubmitRequest Request(int64_t prompt_tokens, int64_t max_tokens) {
  SubmitRequest r;
  r.prompt_tokens = prompt_tokens;
  r.max_tokens = max_tokens;
  return r;
}

// Steps until idle, returning the time each sequence got each of its tokens.
struct Timeline {
  std::map<SeqId, std::vector<int64_t>> token_times;
  std::map<SeqId, FinishReason> finish;
  std::vector<int64_t> step_durations;
  int64_t end = 0;
};
Timeline RunToIdle(Engine& engine, int64_t start, int64_t max_steps = 1'000'000) {
  Timeline t;
  int64_t now = start;
  for (int64_t i = 0; i < max_steps; ++i) {
    StepResult step = engine.Step(now);
    if (step.duration_ns == 0) break;
    now += step.duration_ns;
    if (!step.stalled) t.step_durations.push_back(step.duration_ns);
    for (const Emission& e : step.emissions) {
      if (e.has_token) t.token_times[e.id].push_back(now);
      if (e.finish != FinishReason::kNone) t.finish[e.id] = e.finish;
    }
  }
  t.end = now;
  return t;
}

TEST(EngineTest, IdleTtftIsThePrefillFormula) {
  EngineConfig config;  // prefill 2 ms + 50 us/token, itl 10 ms
  Engine engine(config);
  Result<SeqId> id = engine.Submit(Request(100, 3), 0);
  ASSERT_TRUE(id.ok());
  Timeline t = RunToIdle(engine, 0);
  const std::vector<int64_t>& times = t.token_times[*id];
  ASSERT_EQ(times.size(), 3u);
  EXPECT_EQ(times[0], 2 * kMs + 100 * 50 * kUs);  // 7 ms
  EXPECT_EQ(times[1] - times[0], 10 * kMs);       // a batch of one decodes in itl_base
  EXPECT_EQ(times[2] - times[1], 10 * kMs);
  EXPECT_EQ(t.finish[*id], FinishReason::kLength);
  EXPECT_FALSE(engine.busy());
  EngineStats s = engine.stats();
  EXPECT_EQ(s.generation_tokens, 3u);
  EXPECT_EQ(s.prompt_tokens, 100u);
  EXPECT_EQ(s.finished_length, 1u);
  EXPECT_EQ(s.kv_used_blocks, 0);
}

TEST(EngineTest, ItlGrowsWithTheBatchAsTheFormulaSays) {
  EngineConfig config;
  config.max_num_seqs = 64;
  config.load_factor = 1.0;
  Engine engine(config);
  for (int i = 0; i < 33; ++i) ASSERT_TRUE(engine.Submit(Request(10, 50), 0).ok());
  StepResult first = engine.Step(0);  // all 33 prefilled together
  EXPECT_EQ(first.admitted, 33);
  EXPECT_EQ(first.decoded, 0);
  EXPECT_EQ(first.duration_ns, 2 * kMs + 330 * 50 * kUs);
  StepResult second = engine.Step(first.duration_ns);
  EXPECT_EQ(second.decoded, 33);
  // 10 ms x (1 + 1.0 x 32 / 64) = 15 ms
  EXPECT_EQ(second.duration_ns, 15 * kMs);
  EXPECT_EQ(engine.DecodeCostNs(1), 10 * kMs);
  EXPECT_EQ(engine.DecodeCostNs(65), 20 * kMs);
}

TEST(EngineTest, AFullQueueRefuses) {
  EngineConfig config;
  config.max_waiting = 2;
  Engine engine(config);
  EXPECT_TRUE(engine.Submit(Request(1, 1), 0).ok());
  EXPECT_TRUE(engine.Submit(Request(1, 1), 0).ok());
  Result<SeqId> third = engine.Submit(Request(1, 1), 0);
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(engine.stats().refused, 1u);
  // Admission makes room again.
  StepResult step = engine.Step(0);
  EXPECT_EQ(step.admitted, 2);
  EXPECT_TRUE(engine.Submit(Request(1, 1), step.duration_ns).ok());
}

TEST(EngineTest, SeatsBoundTheBatchAndTheRestWait) {
  EngineConfig config;
  config.max_num_seqs = 4;
  Engine engine(config);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(engine.Submit(Request(5, 2), 0).ok());
  StepResult step = engine.Step(0);
  EXPECT_EQ(step.admitted, 4);
  EXPECT_EQ(engine.stats().running, 4);
  EXPECT_EQ(engine.stats().waiting, 6);
  Timeline t = RunToIdle(engine, step.duration_ns);
  EXPECT_EQ(engine.stats().finished_length, 10u);
}

TEST(EngineTest, KvPressurePreemptsTheNewestAndItStillFinishes) {
  EngineConfig config;
  config.kv_capacity_tokens = 64;  // 4 blocks of 16
  config.max_model_len = 64;
  config.prefix_cache_blocks = 0;
  Engine engine(config);
  // Two sequences of 15 prompt tokens: 1 block each at admission, 2 blocks after 2 tokens,
  // 3 blocks after 18 tokens: together they outgrow 4 blocks.
  Result<SeqId> a = engine.Submit(Request(15, 30), 0);
  Result<SeqId> b = engine.Submit(Request(15, 30), 0);
  ASSERT_TRUE(a.ok() && b.ok());
  std::vector<SeqId> preempted;
  int64_t now = 0;
  std::map<SeqId, int64_t> tokens;
  for (int i = 0; i < 10'000 && engine.busy(); ++i) {
    StepResult step = engine.Step(now);
    now += step.duration_ns;
    preempted.insert(preempted.end(), step.preempted.begin(), step.preempted.end());
    for (const Emission& e : step.emissions) tokens[e.id] += e.has_token;
    EXPECT_LE(engine.stats().kv_used_blocks, 4);
  }
  ASSERT_FALSE(preempted.empty());
  EXPECT_EQ(preempted.front(), *b);  // the most recently admitted
  EXPECT_EQ(engine.stats().preemptions, preempted.size());
  EXPECT_EQ(tokens[*a], 30);  // both complete all their tokens, none twice
  EXPECT_EQ(tokens[*b], 30);
  EXPECT_EQ(engine.stats().finished_length, 2u);
}

TEST(EngineTest, PrefixHitsSkipTheirPrefill) {
  EngineConfig config;
  Engine engine(config);
  std::string prompt;
  for (int i = 0; i < 64; ++i) prompt += "w" + std::to_string(i) + " ";  // 64 tokens, 4 blocks
  PromptTokens tokens = TokenizePrompt(prompt, config.block_tokens);
  ASSERT_EQ(tokens.block_hashes.size(), 4u);
  SubmitRequest r = Request(64, 1);
  r.block_hashes = tokens.block_hashes;
  ASSERT_TRUE(engine.Submit(r, 0).ok());
  StepResult cold = engine.Step(0);
  EXPECT_EQ(cold.duration_ns, 2 * kMs + 64 * 50 * kUs);
  ASSERT_TRUE(engine.Submit(r, cold.duration_ns).ok());
  StepResult warm = engine.Step(cold.duration_ns);
  // All 4 blocks hit, but one token is always computed (as vLLM does): 63 hits.
  EXPECT_EQ(warm.duration_ns, 2 * kMs + 1 * 50 * kUs);
  EngineStats s = engine.stats();
  EXPECT_EQ(s.prefix_queries_tokens, 128u);
  EXPECT_EQ(s.prefix_hits_tokens, 63u);
  // A prompt sharing the first 2 blocks then differing hits 32 tokens.
  PromptTokens half = TokenizePrompt(
      prompt.substr(0, prompt.find("w32 ")) + "z " + prompt.substr(prompt.find("w33 ")),
      config.block_tokens);
  SubmitRequest r3 = Request(half.count, 1);
  r3.block_hashes = half.block_hashes;
  int64_t now = cold.duration_ns + warm.duration_ns;
  ASSERT_TRUE(engine.Submit(r3, now).ok());
  StepResult partial = engine.Step(now);
  EXPECT_EQ(partial.duration_ns, 2 * kMs + 32 * 50 * kUs);
  now += partial.duration_ns;
  // A different first block misses everything after it too (the hashes chain).
  PromptTokens other = TokenizePrompt("x " + prompt.substr(3), config.block_tokens);
  SubmitRequest r2 = Request(other.count, 1);
  r2.block_hashes = other.block_hashes;
  ASSERT_TRUE(engine.Submit(r2, now).ok());
  StepResult miss = engine.Step(now);
  EXPECT_EQ(miss.duration_ns, 2 * kMs + other.count * 50 * kUs);
}

TEST(EngineTest, StallFreezesEmission) {
  EngineConfig config;
  Engine engine(config);
  ASSERT_TRUE(engine.Submit(Request(0, 5), 0).ok());
  StepResult first = engine.Step(0);
  const int64_t planned = first.duration_ns;
  // Mid-step: the step in flight freezes and ends 300 ms later.
  EXPECT_EQ(engine.InjectStall(planned - 1, 300 * kMs), planned + 300 * kMs);
  EXPECT_EQ(engine.step_end_ns(), planned + 300 * kMs);
  EXPECT_EQ(engine.stats().stall_end_ns, planned - 1 + 300 * kMs);
  int64_t now = engine.step_end_ns();
  StepResult second = engine.Step(now);
  EXPECT_FALSE(second.stalled);
  now += second.duration_ns;
  // Between steps: no step starts for 300 ms.
  EXPECT_EQ(engine.InjectStall(now, 300 * kMs), now + 300 * kMs);
  StepResult stalled = engine.Step(now);
  EXPECT_TRUE(stalled.stalled);
  EXPECT_TRUE(stalled.emissions.empty());
  EXPECT_EQ(stalled.duration_ns, 300 * kMs);
  now += stalled.duration_ns;
  StepResult next = engine.Step(now);
  EXPECT_FALSE(next.stalled);
  EXPECT_EQ(next.emissions.size(), 1u);
}

TEST(EngineTest, ScheduledStallAndSlowFactor) {
  EngineConfig config;
  config.faults = {{TimedFault::Kind::kSlow, 100 * kMs, 0, 5.0},
                   {TimedFault::Kind::kStall, 200 * kMs, 1000 * kMs, 1}};
  Engine engine(config);
  ASSERT_TRUE(engine.Submit(Request(0, 1000), 0).ok());
  Timeline t = RunToIdle(engine, 0, 40);
  const std::vector<int64_t>& times = t.token_times.begin()->second;
  std::vector<int64_t> gaps;
  for (size_t i = 1; i < times.size(); ++i) gaps.push_back(times[i] - times[i - 1]);
  // Before 100 ms: 10 ms steps; after: 50 ms; one gap spans the stall.
  EXPECT_EQ(gaps.front(), 10 * kMs);
  EXPECT_EQ(gaps.back(), 50 * kMs);
  int64_t longest = *std::max_element(gaps.begin(), gaps.end());
  EXPECT_GE(longest, 1000 * kMs);
  engine.SetSlowFactor(1);
  StepResult step = engine.Step(t.end);
  EXPECT_EQ(step.duration_ns, 10 * kMs);
}

TEST(EngineTest, AbortFreesTheSeatAndBlocks) {
  EngineConfig config;
  config.max_num_seqs = 1;
  Engine engine(config);
  Result<SeqId> a = engine.Submit(Request(100, 100), 0);
  Result<SeqId> b = engine.Submit(Request(100, 100), 0);
  StepResult step = engine.Step(0);
  EXPECT_EQ(engine.stats().running, 1);
  EXPECT_GT(engine.stats().kv_used_blocks, 0);
  EXPECT_TRUE(engine.Abort(*a, step.duration_ns));
  EXPECT_FALSE(engine.Abort(*a, step.duration_ns));
  EXPECT_EQ(engine.stats().running, 0);
  EXPECT_EQ(engine.stats().kv_used_blocks, 0);
  EXPECT_TRUE(engine.Abort(*b, step.duration_ns));  // from the waiting queue
  EXPECT_EQ(engine.stats().waiting, 0);
  EXPECT_FALSE(engine.busy());
  EXPECT_EQ(engine.stats().aborted, 2u);
}

TEST(EngineTest, EmbeddingsArePrefillOnly) {
  EngineConfig config;
  Engine engine(config);
  ASSERT_TRUE(engine.Submit(Request(40, 0), 0).ok());
  StepResult step = engine.Step(0);
  EXPECT_EQ(step.duration_ns, 2 * kMs + 40 * 50 * kUs);
  ASSERT_EQ(step.emissions.size(), 1u);
  EXPECT_FALSE(step.emissions[0].has_token);
  EXPECT_EQ(step.emissions[0].finish, FinishReason::kLength);
  EXPECT_FALSE(engine.busy());
}

TEST(EngineTest, TheBatchedTokenBudgetSpreadsPrefills) {
  EngineConfig config;
  config.max_num_batched_tokens = 100;
  Engine engine(config);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(engine.Submit(Request(60, 1), 0).ok());
  EXPECT_EQ(engine.Step(0).admitted, 1);
}

TEST(EngineTest, OutputIsDeterministicForASeedAndEosEndsEarly) {
  auto run = [](uint64_t seed, double eos, bool ignore_eos) {
    EngineConfig config;
    config.seed = seed;
    config.eos_probability = eos;
    Engine engine(config);
    for (int i = 0; i < 8; ++i) {
      SubmitRequest r = Request(i, 200);
      r.ignore_eos = ignore_eos;
      EXPECT_TRUE(engine.Submit(r, 0).ok());
    }
    std::vector<uint32_t> tokens;
    std::vector<int64_t> times;
    int64_t now = 0;
    while (engine.busy()) {
      StepResult step = engine.Step(now);
      now += step.duration_ns;
      for (const Emission& e : step.emissions) {
        tokens.push_back(e.token);
        times.push_back(now);
      }
    }
    return std::make_pair(tokens, times);
  };
  EXPECT_EQ(run(7, 0, true), run(7, 0, true));
  EXPECT_NE(run(7, 0, true).first, run(8, 0, true).first);
  EXPECT_EQ(run(7, 0, true).first.size(), 8u * 200);
  const size_t with_eos = run(7, 0.05, false).first.size();
  EXPECT_LT(with_eos, 8u * 200);  // P(no stop in 200 tokens) = 0.95^200, per sequence
  EXPECT_EQ(run(7, 0.05, true).first.size(), 8u * 200);
}

TEST(EngineTest, ValidateNamesTheField) {
  EngineConfig config;
  config.kv_capacity_tokens = 1000;
  Status status = config.Validate();
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("kv_capacity_tokens"), std::string_view::npos);
  config = EngineConfig();
  config.max_num_seqs = 0;
  EXPECT_NE(config.Validate().message().find("max_num_seqs"), std::string_view::npos);
}

TEST(EngineTest, TooLongRequestsAreRefusedByTheEngineToo) {
  EngineConfig config;
  Engine engine(config);
  EXPECT_EQ(engine.Submit(Request(8000, 500), 0).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace titan::serve_sim
