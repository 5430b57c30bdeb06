// serve-sim's tokenizer: one token per whitespace-separated word, so that a client can count
// the prompt tokens the server will report without a vocabulary (docs/serve-sim.md).
//
//  - A prompt's tokens are its maximal runs of non-whitespace bytes (whitespace: ' ', \t, \n,
//    \v, \f, \r). "Hello  world\n" is 2 tokens; "" is 0.
//  - A token's id is the FNV-1a hash of its bytes modulo 2^31 (stable across runs and builds).
//  - Output tokens are words of a fixed vocabulary of kVocabularySize English words, picked by
//    the engine's seeded generator and sent as " word".
//  - Prefix-cache blocks: the prompt is cut into blocks of `block_tokens`; each full block gets
//    a hash of its tokens chained with the hash of the block before it (as vLLM does), so a
//    block matches only when the whole prefix up to it matches.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace titan::serve_sim {

inline constexpr uint32_t kVocabularySize = 256;

// The word of output token `id` (without the leading space). Precondition: id < kVocabularySize.
std::string_view VocabularyWord(uint32_t id);

// Number of whitespace-separated words in `text`.
int64_t CountTokens(std::string_view text);

// Token ids of `text`'s words, in order.
std::vector<uint32_t> TokenIds(std::string_view text);

// What the engine needs of a prompt: its length and the chained hashes of its full blocks.
struct PromptTokens {
  int64_t count = 0;
  std::vector<uint64_t> block_hashes;  // one per full block of `block_tokens` tokens
};
// Tokenizes `text` in one pass. Precondition: block_tokens > 0.
PromptTokens TokenizePrompt(std::string_view text, int64_t block_tokens);

// splitmix64: the mixing function behind the per-request seeds and the block-hash chain.
inline uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace titan::serve_sim
