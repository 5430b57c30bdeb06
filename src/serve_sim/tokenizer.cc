#include "src/serve_sim/tokenizer.h"

#include "src/base/check.h"

namespace titan::serve_sim {
namespace {

constexpr std::string_view kVocabulary[kVocabularySize] = {
    "the",       "of",        "and",      "to",      "in",      "is",      "that",     "it",
    "was",       "for",       "on",       "are",     "as",      "with",    "his",      "they",
    "at",        "be",        "this",     "from",    "have",    "or",      "by",       "one",
    "had",       "not",       "but",      "what",    "all",     "were",    "when",     "we",
    "there",     "can",       "an",       "your",    "which",   "their",   "said",     "if",
    "do",        "will",      "each",     "about",   "how",     "up",      "out",      "them",
    "then",      "she",       "many",     "some",    "so",      "these",   "would",    "other",
    "into",      "has",       "more",     "her",     "two",     "like",    "him",      "see",
    "time",      "could",     "no",       "make",    "than",    "first",   "been",     "its",
    "who",       "now",       "people",   "my",      "made",    "over",    "did",      "down",
    "only",      "way",       "find",     "use",     "may",     "water",   "long",     "little",
    "very",      "after",     "words",    "called",  "just",    "where",   "most",     "know",
    "get",       "through",   "back",     "much",    "go",      "good",    "new",      "write",
    "our",       "me",        "man",      "too",     "any",     "day",     "same",     "right",
    "look",      "think",     "also",     "around",  "another", "came",    "come",     "work",
    "three",     "word",      "must",     "because", "does",    "part",    "even",     "place",
    "well",      "such",      "here",     "take",    "why",     "things",  "help",     "put",
    "years",     "different", "away",     "again",   "off",     "went",    "old",      "number",
    "great",     "tell",      "men",      "say",     "small",   "every",   "found",    "still",
    "between",   "name",      "should",   "home",    "big",     "give",    "air",      "line",
    "set",       "own",       "under",    "read",    "last",    "never",   "us",       "left",
    "end",       "along",     "while",    "might",   "next",    "sound",   "below",    "saw",
    "something", "thought",   "both",     "few",     "those",   "always",  "looks",    "show",
    "large",     "often",     "together", "asked",   "house",   "world",   "going",    "want",
    "school",    "important", "until",    "form",    "food",    "keep",    "children", "feet",
    "land",      "side",      "without",  "boy",     "once",    "animals", "life",     "enough",
    "took",      "sometimes", "four",     "head",    "above",   "kind",    "began",    "almost",
    "live",      "page",      "got",      "earth",   "need",    "far",     "hand",     "high",
    "year",      "mother",    "light",    "parts",   "country", "father",  "let",      "night",
    "following", "picture",   "being",    "study",   "second",  "eyes",    "soon",     "times",
    "story",     "boys",      "since",    "white",   "days",    "ever",    "paper",    "hard",
    "near",      "sentence",  "better",   "best",    "across",  "during",  "today",    "others",
};

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

// Calls on_word(word) for each whitespace-separated word of `text`.
template <typename F>
void ForEachWord(std::string_view text, F on_word) {
  size_t i = 0;
  const size_t n = text.size();
  while (i < n) {
    while (i < n && IsSpace(text[i])) ++i;
    if (i == n) break;
    const size_t start = i;
    while (i < n && !IsSpace(text[i])) ++i;
    on_word(text.substr(start, i - start));
  }
}

uint32_t WordId(std::string_view word) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a 64
  for (char c : word) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return static_cast<uint32_t>(h & 0x7fffffffULL);
}

}  // namespace

std::string_view VocabularyWord(uint32_t id) {
  TITAN_CHECK(id < kVocabularySize) << "token id " << id;
  return kVocabulary[id];
}

int64_t CountTokens(std::string_view text) {
  int64_t count = 0;
  ForEachWord(text, [&](std::string_view) { ++count; });
  return count;
}

std::vector<uint32_t> TokenIds(std::string_view text) {
  std::vector<uint32_t> ids;
  ForEachWord(text, [&](std::string_view word) { ids.push_back(WordId(word)); });
  return ids;
}

PromptTokens TokenizePrompt(std::string_view text, int64_t block_tokens) {
  TITAN_CHECK(block_tokens > 0);
  PromptTokens out;
  uint64_t chain = 0x5e77e5117a11ULL;  // the hash "before" the first block
  uint64_t block = 0;
  int64_t in_block = 0;
  ForEachWord(text, [&](std::string_view word) {
    ++out.count;
    block = SplitMix64(block ^ WordId(word));
    if (++in_block == block_tokens) {
      chain = SplitMix64(chain ^ block);
      out.block_hashes.push_back(chain);
      block = 0;
      in_block = 0;
    }
  });
  return out;
}

}  // namespace titan::serve_sim
