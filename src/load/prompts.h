// Prompts for titan load: length distributions, synthetic text of a planned token length,
// shared-prefix groups, and prompt files (JSON lines, ShareGPT).
//
// Synthetic text is a deterministic sequence of common short English words, each preceded by
// one space (" the way of time ..."). A llama/BPE tokenizer splits each " word" into one token,
// so N words are about N tokens (plus the BOS token and any chat template). Because every word
// starts with its space, texts concatenate into the tokens of their parts: prefix + suffix and
// block after block tokenize as the pieces did. The runner may measure the server's real ratio
// (its /tokenize endpoint) and pass it as tokens_per_word.
//
// Thread safety: pure functions; a PromptBuilder is immutable after Create() and may be shared
// by threads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"
#include "src/load/rng.h"
#include "src/load/trace_file.h"

namespace titan::load {

// ---- Length distributions ----

inline constexpr int64_t kMaxLengthTokens = 10'000'000;

enum class LengthKind { kFixed, kUniform, kNormal, kLognormal };

// Parsed from one of:
//   N | fixed:N                  always N tokens
//   uniform:MIN,MAX              an integer uniform in [MIN, MAX] (inclusive)
//   normal:mean=M,sd=S           round(N(M, S^2))
//   lognormal:mean=M,sigma=S     round(exp(N(mu, S^2))) with mu = ln(M) - S^2/2, so that M is the
//                                distribution's mean in tokens and S the sigma of its log
// Every sample is clamped to [1, kMaxLengthTokens]; integers and means must lie in that range,
// sd >= 0, 0 <= sigma <= 4.
struct LengthSpec {
  LengthKind kind = LengthKind::kFixed;
  int64_t fixed_tokens = 1;  // fixed
  int64_t min_tokens = 1;    // uniform
  int64_t max_tokens = 1;    // uniform
  double mean_tokens = 1;    // normal, lognormal
  double sd_tokens = 0;      // normal
  double sigma = 0;          // lognormal

  // One length in [1, kMaxLengthTokens].
  int64_t Sample(Rng& rng) const;
  // The mean before rounding and clamping.
  double Mean() const;

  friend bool operator==(const LengthSpec&, const LengthSpec&) = default;
};

// INVALID_ARGUMENT naming the accepted forms.
Result<LengthSpec> ParseLengthSpec(std::string_view text);
// Canonical form; ParseLengthSpec reads it back to an equal spec.
std::string ToString(const LengthSpec& spec);

// ---- Synthetic text ----

inline constexpr int64_t kMaxSyntheticWords = 10'000'000;
inline constexpr int64_t kDefaultBlockTokens = 512;  // mooncake's hash_ids block

// `words` words (clamped to [0, kMaxSyntheticWords]), each preceded by one space, a function of
// `seed` only; a text with fewer words is a prefix of the one with more.
std::string SyntheticWords(int64_t words, uint64_t seed);

// The number of words for `tokens` tokens at `tokens_per_word` (> 0; 1 for llama/BPE word
// lists): round(tokens / tokens_per_word), clamped to [0, kMaxSyntheticWords].
int64_t WordsForTokens(int64_t tokens, double tokens_per_word = 1.0);

// About `tokens` tokens: SyntheticWords(WordsForTokens(tokens, tokens_per_word), seed).
std::string SyntheticText(int64_t tokens, uint64_t seed, double tokens_per_word = 1.0);

// The text of mooncake hash block `hash_id`: equal ids give equal text, so requests that share
// hash ids share exact prefixes. `salt` (e.g. a per-run seed) changes every block, so that a
// second run does not hit the server's prefix cache warmed by the first. A shorter block is a
// prefix of the full one (for a trace's partial last block).
std::string PrefixBlockText(uint64_t hash_id, int64_t block_tokens = kDefaultBlockTokens,
                            uint64_t salt = 0, double tokens_per_word = 1.0);

// The prompt of a trace request: one block per hash id (the last one cut so that the total is
// input_tokens), then unique text (seeded by `unique_seed`) for tokens the ids do not cover;
// hash ids beyond input_tokens are ignored.
std::string TraceRequestText(const TraceRequest& request, uint64_t unique_seed,
                             int64_t block_tokens = kDefaultBlockTokens, uint64_t salt = 0,
                             double tokens_per_word = 1.0);

// ---- Shared-prefix groups ----

struct PromptBuilderOptions {
  int64_t num_groups = 1;     // >= 1; each group has its own prefix
  int64_t prefix_tokens = 0;  // tokens of each group's prefix (0: no prefix)
  LengthSpec suffix;          // tokens of each request's unique suffix
  double tokens_per_word = 1.0;
  uint64_t seed = 0;
};

struct BuiltPrompt {
  std::string text;
  int64_t group = 0;
  int64_t prefix_words = 0;
  int64_t suffix_tokens = 0;  // the sampled suffix length
  int64_t suffix_words = 0;
};

class PromptBuilder {
 public:
  // Built prefixes are held in memory: num_groups * prefix words must stay under
  // kMaxPrefixWordsTotal. INVALID_ARGUMENT for options out of range.
  static constexpr int64_t kMaxPrefixWordsTotal = 16'000'000;
  static Result<PromptBuilder> Create(const PromptBuilderOptions& options);

  // The prompt of request number `request_index`: a group drawn uniformly, that group's prefix
  // and a unique suffix; a pure function of (options, request_index).
  BuiltPrompt Build(uint64_t request_index) const;

  int64_t num_groups() const { return static_cast<int64_t>(prefixes_.size()); }

 private:
  explicit PromptBuilder(const PromptBuilderOptions& options) : options_(options) {}
  PromptBuilderOptions options_;
  std::vector<std::string> prefixes_;
  int64_t prefix_words_ = 0;
};

// ---- Prompt files ----

struct ChatMessage {
  std::string role;
  std::string content;

  friend bool operator==(const ChatMessage&, const ChatMessage&) = default;
};

// Either `prompt` (for /v1/completions) or `messages` (for /v1/chat/completions) is set.
struct PromptRecord {
  std::string prompt;
  std::vector<ChatMessage> messages;
  int64_t output_tokens = -1;  // max_tokens from the file, or a hint; -1 when unknown

  friend bool operator==(const PromptRecord&, const PromptRecord&) = default;
};

struct PromptFileStats {
  uint64_t skipped = 0;  // ShareGPT conversations without a non-empty first human turn
};

inline constexpr size_t kMaxPromptFileBytes = size_t{1} << 30;
inline constexpr size_t kMaxPromptBytes = size_t{1} << 20;      // of one prompt / all messages
inline constexpr size_t kMaxPromptLineBytes = size_t{8} << 20;  // of a JSON line
inline constexpr size_t kMaxShareGptEntryBytes = size_t{64} << 20;
inline constexpr size_t kMaxPromptRecords = 10'000'000;

// Formats, detected from the first non-blank character:
//  '{'  JSON lines, one object per line (blank lines skipped), each one of
//         {"prompt": "..."}
//         {"messages": [{"role": "user", "content": "..."}, ...]}
//         {"conversations": [...]}        (one ShareGPT entry, as below)
//       with an optional "max_tokens" (alias "output_tokens"): an integer in [1, 10M].
//  '['  ShareGPT JSON: [{"conversations": [{"from": "human", "value": "..."},
//                                          {"from": "gpt", "value": "..."}, ...]}, ...]
//       The first turn from "human" (or "user") is the prompt; the word count of the turn after
//       it, when that is an answer (not human/user/system), is the output_tokens hint.
//       Entries without a non-empty human turn are skipped and counted in stats->skipped.
// Unknown keys are ignored. Bounds: the whole text kMaxPromptFileBytes, a JSON line
// kMaxPromptLineBytes, a ShareGPT entry kMaxShareGptEntryBytes, a prompt (or the sum of a
// record's message contents) kMaxPromptBytes of UTF-8, kMaxPromptRecords records; beyond them
// OUT_OF_RANGE. Malformed content is INVALID_ARGUMENT "name:line:column: what was expected"
// (for a ShareGPT entry, the position of the entry's '{'). No records at all is an error.
Result<std::vector<PromptRecord>> ParsePromptFile(std::string_view text, std::string_view name,
                                                  PromptFileStats* stats = nullptr);

Result<std::vector<PromptRecord>> ReadPromptFile(const std::string& path,
                                                 PromptFileStats* stats = nullptr);

}  // namespace titan::load
