#include "src/load/prompts.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>
#include <simdjson.h>

#include "src/base/env.h"
#include "src/base/text.h"
#include "src/load/input_text.h"

namespace titan::load {
namespace {

constexpr std::string_view kLengthForms =
    "accepted forms: N | fixed:N | uniform:MIN,MAX | normal:mean=M,sd=S | "
    "lognormal:mean=M,sigma=S (token counts in [1, 10000000])";
constexpr double kMaxSigma = 4;

// MixSeed streams.
constexpr uint64_t kWordStream = 0x776f7264;     // "word"
constexpr uint64_t kBlockStream = 0x626c6f63;    // "bloc"
constexpr uint64_t kGroupStream = 0x67726f75;    // "grou"
constexpr uint64_t kSuffixStream = 0x73756666;   // "suff"
constexpr uint64_t kRequestStream = 0x72657175;  // "requ"

// 128 common short English words; each, after a space, is one token for llama and GPT BPEs.
constexpr std::string_view kWords[128] = {
    "the",  "of",    "and",    "to",    "in",   "is",     "it",    "that",  "for",   "was",
    "on",   "are",   "as",     "with",  "his",  "they",   "at",    "be",    "this",  "have",
    "from", "or",    "one",    "had",   "by",   "but",    "not",   "what",  "all",   "were",
    "we",   "when",  "your",   "can",   "said", "there",  "use",   "an",    "each",  "which",
    "she",  "do",    "how",    "their", "if",   "will",   "up",    "other", "about", "out",
    "many", "then",  "them",   "these", "so",   "some",   "her",   "would", "make",  "like",
    "him",  "into",  "time",   "has",   "look", "two",    "more",  "go",    "see",   "no",
    "way",  "could", "people", "my",    "than", "first",  "been",  "call",  "who",   "its",
    "now",  "find",  "long",   "down",  "day",  "did",    "get",   "come",  "made",  "may",
    "part", "over",  "new",    "take",  "only", "little", "work",  "know",  "place", "year",
    "live", "me",    "back",   "give",  "most", "very",   "after", "thing", "our",   "just",
    "name", "good",  "man",    "think", "say",  "great",  "where", "help",  "much",  "before",
    "line", "right", "too",    "old",   "any",  "same",   "tell",  "world"};

Status LengthError(std::string_view text, std::string_view what) {
  return InvalidArgumentError(fmt::format("length spec '{}': {}; {}", text, what, kLengthForms));
}

Status ParseTokenCount(std::string_view text, std::string_view what, std::string_view value,
                       int64_t* out) {
  if (!ParseInt64(Trim(value), out) || *out < 1 || *out > kMaxLengthTokens) {
    return LengthError(text, fmt::format("{} must be an integer in [1, {}], got '{}'", what,
                                         kMaxLengthTokens, value));
  }
  return OkStatus();
}

// "a=1,b=2" with exactly the keys `k1`, `k2`.
Status ParseTwoKeys(std::string_view text, std::string_view params, std::string_view k1, double* v1,
                    std::string_view k2, double* v2) {
  bool seen1 = false, seen2 = false;
  while (!params.empty()) {
    const size_t comma = params.find(',');
    std::string_view item = Trim(params.substr(0, comma));
    params = comma == std::string_view::npos ? std::string_view() : params.substr(comma + 1);
    const size_t eq = item.find('=');
    std::string_view key = Trim(item.substr(0, eq));
    std::string_view value = eq == std::string_view::npos ? "" : Trim(item.substr(eq + 1));
    bool* seen = key == k1 ? &seen1 : key == k2 ? &seen2 : nullptr;
    if (eq == std::string_view::npos || seen == nullptr) {
      return LengthError(text, fmt::format("expected {}=.. and {}=.., got '{}'", k1, k2, item));
    }
    if (*seen) return LengthError(text, fmt::format("'{}' given twice", key));
    *seen = true;
    if (!ParseDouble(value, key == k1 ? v1 : v2)) {
      return LengthError(text, fmt::format("{} must be a number, got '{}'", key, value));
    }
  }
  if (!seen1 || !seen2) return LengthError(text, fmt::format("needs {}=.. and {}=..", k1, k2));
  return OkStatus();
}

int64_t ClampTokens(double x) {
  return static_cast<int64_t>(std::llround(std::clamp(x, 1.0, double{kMaxLengthTokens})));
}

void AppendWords(int64_t words, uint64_t seed, std::string* out) {
  words = std::clamp<int64_t>(words, 0, kMaxSyntheticWords);
  out->reserve(out->size() + static_cast<size_t>(words) * 6);
  Rng rng(MixSeed(seed, kWordStream));
  uint64_t bits = 0;
  int left = 0;
  for (int64_t i = 0; i < words; ++i) {
    if (left == 0) {
      bits = rng.NextU64();
      left = 9;  // 9 draws of 7 bits from each 64
    }
    out->push_back(' ');
    out->append(kWords[bits & 127]);
    bits >>= 7;
    --left;
  }
}

}  // namespace

// ---- Length distributions ----

Result<LengthSpec> ParseLengthSpec(std::string_view text) {
  text = Trim(text);
  LengthSpec spec;
  const size_t colon = text.find(':');
  std::string_view kind = colon == std::string_view::npos ? "" : Trim(text.substr(0, colon));
  std::string_view params = colon == std::string_view::npos ? text : text.substr(colon + 1);
  if (kind.empty() || kind == "fixed") {
    if (colon != std::string_view::npos && kind.empty()) {
      return LengthError(text, "missing the kind before ':'");
    }
    spec.kind = LengthKind::kFixed;
    TITAN_RETURN_IF_ERROR(ParseTokenCount(text, "the length", params, &spec.fixed_tokens));
    return spec;
  }
  if (kind == "uniform") {
    spec.kind = LengthKind::kUniform;
    const size_t comma = params.find(',');
    if (comma == std::string_view::npos) return LengthError(text, "expected uniform:MIN,MAX");
    TITAN_RETURN_IF_ERROR(ParseTokenCount(text, "MIN", params.substr(0, comma), &spec.min_tokens));
    TITAN_RETURN_IF_ERROR(ParseTokenCount(text, "MAX", params.substr(comma + 1), &spec.max_tokens));
    if (spec.min_tokens > spec.max_tokens) return LengthError(text, "MIN is larger than MAX");
    return spec;
  }
  if (kind == "normal" || kind == "lognormal") {
    const bool normal = kind == "normal";
    spec.kind = normal ? LengthKind::kNormal : LengthKind::kLognormal;
    double spread = 0;
    TITAN_RETURN_IF_ERROR(
        ParseTwoKeys(text, params, "mean", &spec.mean_tokens, normal ? "sd" : "sigma", &spread));
    if (spec.mean_tokens < 1 || spec.mean_tokens > kMaxLengthTokens) {
      return LengthError(text, fmt::format("mean must be in [1, {}]", kMaxLengthTokens));
    }
    if (normal) {
      if (spread < 0 || spread > kMaxLengthTokens) {
        return LengthError(text, fmt::format("sd must be in [0, {}]", kMaxLengthTokens));
      }
      spec.sd_tokens = spread;
    } else {
      if (spread < 0 || spread > kMaxSigma) {
        return LengthError(text, fmt::format("sigma must be in [0, {}]", kMaxSigma));
      }
      spec.sigma = spread;
    }
    return spec;
  }
  return LengthError(text, fmt::format("unknown kind '{}'", kind));
}

std::string ToString(const LengthSpec& spec) {
  switch (spec.kind) {
    case LengthKind::kFixed:
      return fmt::format("fixed:{}", spec.fixed_tokens);
    case LengthKind::kUniform:
      return fmt::format("uniform:{},{}", spec.min_tokens, spec.max_tokens);
    case LengthKind::kNormal:
      return fmt::format("normal:mean={},sd={}", spec.mean_tokens, spec.sd_tokens);
    case LengthKind::kLognormal:
      return fmt::format("lognormal:mean={},sigma={}", spec.mean_tokens, spec.sigma);
  }
  return "";
}

int64_t LengthSpec::Sample(Rng& rng) const {
  switch (kind) {
    case LengthKind::kFixed:
      return std::clamp<int64_t>(fixed_tokens, 1, kMaxLengthTokens);
    case LengthKind::kUniform:
      return std::clamp<int64_t>(rng.UniformInt(min_tokens, std::max(min_tokens, max_tokens)), 1,
                                 kMaxLengthTokens);
    case LengthKind::kNormal:
      return ClampTokens(mean_tokens + sd_tokens * rng.Normal());
    case LengthKind::kLognormal: {
      const double mu = std::log(std::max(mean_tokens, 1e-9)) - sigma * sigma / 2;
      return ClampTokens(std::exp(mu + sigma * rng.Normal()));
    }
  }
  return 1;
}

double LengthSpec::Mean() const {
  switch (kind) {
    case LengthKind::kFixed:
      return static_cast<double>(fixed_tokens);
    case LengthKind::kUniform:
      return (static_cast<double>(min_tokens) + static_cast<double>(max_tokens)) / 2;
    case LengthKind::kNormal:
    case LengthKind::kLognormal:
      return mean_tokens;
  }
  return 0;
}

// ---- Synthetic text ----

std::string SyntheticWords(int64_t words, uint64_t seed) {
  std::string out;
  AppendWords(words, seed, &out);
  return out;
}

int64_t WordsForTokens(int64_t tokens, double tokens_per_word) {
  if (tokens <= 0 || !(tokens_per_word > 0)) return 0;
  const double words = std::round(static_cast<double>(tokens) / tokens_per_word);
  return static_cast<int64_t>(std::min(words, double{kMaxSyntheticWords}));
}

std::string SyntheticText(int64_t tokens, uint64_t seed, double tokens_per_word) {
  return SyntheticWords(WordsForTokens(tokens, tokens_per_word), seed);
}

std::string PrefixBlockText(uint64_t hash_id, int64_t block_tokens, uint64_t salt,
                            double tokens_per_word) {
  return SyntheticText(block_tokens, MixSeed(MixSeed(salt, kBlockStream), hash_id),
                       tokens_per_word);
}

std::string TraceRequestText(const TraceRequest& request, uint64_t unique_seed,
                             int64_t block_tokens, uint64_t salt, double tokens_per_word) {
  std::string out;
  int64_t covered = 0;
  const uint64_t block_seed = MixSeed(salt, kBlockStream);
  if (block_tokens > 0) {
    for (uint64_t id : request.hash_ids) {
      if (covered >= request.input_tokens) break;
      const int64_t tokens = std::min(block_tokens, request.input_tokens - covered);
      AppendWords(WordsForTokens(tokens, tokens_per_word), MixSeed(block_seed, id), &out);
      covered += tokens;
    }
  }
  if (covered < request.input_tokens) {
    AppendWords(WordsForTokens(request.input_tokens - covered, tokens_per_word), unique_seed, &out);
  }
  return out;
}

// ---- Shared-prefix groups ----

Result<PromptBuilder> PromptBuilder::Create(const PromptBuilderOptions& options) {
  if (options.num_groups < 1 || options.num_groups > 1'000'000) {
    return InvalidArgumentError(fmt::format(
        "prompt groups: num_groups must be in [1, 1000000], got {}", options.num_groups));
  }
  if (options.prefix_tokens < 0 || options.prefix_tokens > kMaxLengthTokens) {
    return InvalidArgumentError(
        fmt::format("prompt groups: prefix_tokens must be in [0, {}], got {}", kMaxLengthTokens,
                    options.prefix_tokens));
  }
  if (!(options.tokens_per_word > 0.01) || options.tokens_per_word > 100) {
    return InvalidArgumentError(fmt::format(
        "prompt groups: tokens_per_word must be in (0.01, 100], got {}", options.tokens_per_word));
  }
  TITAN_RETURN_IF_ERROR_CTX(ParseLengthSpec(ToString(options.suffix)).status(),
                            "prompt groups: suffix");
  PromptBuilder builder(options);
  builder.prefix_words_ = WordsForTokens(options.prefix_tokens, options.tokens_per_word);
  if (builder.prefix_words_ > kMaxPrefixWordsTotal / options.num_groups) {
    return InvalidArgumentError(fmt::format(
        "prompt groups: {} groups of {} prefix words is more than {} words in all; use fewer "
        "groups or shorter prefixes",
        options.num_groups, builder.prefix_words_, kMaxPrefixWordsTotal));
  }
  const uint64_t group_seed = MixSeed(options.seed, kGroupStream);
  builder.prefixes_.reserve(static_cast<size_t>(options.num_groups));
  for (int64_t g = 0; g < options.num_groups; ++g) {
    builder.prefixes_.push_back(
        SyntheticWords(builder.prefix_words_, MixSeed(group_seed, static_cast<uint64_t>(g))));
  }
  return builder;
}

BuiltPrompt PromptBuilder::Build(uint64_t request_index) const {
  Rng rng(MixSeed(MixSeed(options_.seed, kRequestStream), request_index));
  BuiltPrompt out;
  out.group = rng.UniformInt(0, num_groups() - 1);
  out.prefix_words = prefix_words_;
  out.suffix_tokens = options_.suffix.Sample(rng);
  out.suffix_words = WordsForTokens(out.suffix_tokens, options_.tokens_per_word);
  out.text = prefixes_[static_cast<size_t>(out.group)];
  AppendWords(out.suffix_words, MixSeed(MixSeed(options_.seed, kSuffixStream), request_index),
              &out.text);
  return out;
}

// ---- Prompt files ----

namespace {

constexpr size_t kMaxPromptLineDepth = 16;

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

int64_t CountWords(std::string_view text) {
  int64_t words = 0;
  bool in_word = false;
  for (char c : text) {
    const bool space = IsSpace(c);
    if (!space && !in_word) ++words;
    in_word = !space;
  }
  return words;
}

bool IsHuman(std::string_view from) { return from == "human" || from == "user"; }

// The index one past the '}' or ']' that closes the value opening at text[at], skipping strings;
// npos if the text ends first.
size_t ScanComposite(std::string_view text, size_t at) {
  size_t depth = 0;
  for (size_t i = at; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\') ++i;
      }
      if (i >= text.size()) return std::string_view::npos;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return std::string_view::npos;
}

class PromptFileParser {
 public:
  PromptFileParser(std::string_view name, PromptFileStats* stats) : name_(name), stats_(stats) {}

  Result<std::vector<PromptRecord>> Parse(std::string_view text) {
    if (text.size() > kMaxPromptFileBytes) {
      return OutOfRangeError(fmt::format("{}: {} bytes is over the {}-byte limit of a prompt file",
                                         name_, text.size(), kMaxPromptFileBytes));
    }
    if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
    if (parser_.allocate(1 << 16, kMaxPromptLineDepth) != simdjson::SUCCESS) {
      return InternalError("allocating a JSON parser");
    }
    const size_t first = text.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos) {
      return InvalidArgumentError(fmt::format("{}: no prompts (the file is empty)", name_));
    }
    if (text[first] == '[') {
      TITAN_RETURN_IF_ERROR(ParseShareGpt(text, first));
    } else if (text[first] == '{') {
      TITAN_RETURN_IF_ERROR(ParseJsonLines(text));
    } else {
      Advance(text, first);
      return Error(Here(first),
                   "expected JSON lines ({\"prompt\": ..} or {\"messages\": [..]} per line) or "
                   "a ShareGPT JSON array ([{\"conversations\": [..]}, ..])");
    }
    if (records_.empty()) {
      return InvalidArgumentError(
          fmt::format("{}: no prompts ({} ShareGPT conversations without a human turn skipped)",
                      name_, skipped_));
    }
    if (stats_ != nullptr) stats_->skipped = skipped_;
    return std::move(records_);
  }

 private:
  Status Error(Pos pos, std::string_view what) const {
    return InvalidArgumentError(fmt::format("{}:{}:{}: {}", name_, pos.line, pos.column, what));
  }
  Status RangeError(Pos pos, std::string_view what) const {
    return OutOfRangeError(fmt::format("{}:{}:{}: {}", name_, pos.line, pos.column, what));
  }

  // Line counting for positions: moves the cursor forward to text[to].
  void Advance(std::string_view text, size_t to) {
    while (cursor_ < to) {
      const void* nl = std::memchr(text.data() + cursor_, '\n', to - cursor_);
      if (nl == nullptr) {
        cursor_ = to;
        break;
      }
      cursor_ = static_cast<size_t>(static_cast<const char*>(nl) - text.data()) + 1;
      ++line_;
      line_start_ = cursor_;
    }
  }
  Pos Here(size_t offset) const { return {line_, offset - line_start_ + 1}; }

  Status AddRecord(PromptRecord record, Pos pos) {
    if (records_.size() == kMaxPromptRecords) {
      return RangeError(pos,
                        fmt::format("more than {} prompts; split the file", kMaxPromptRecords));
    }
    records_.push_back(std::move(record));
    return OkStatus();
  }

  Result<simdjson::dom::object> ParseObject(std::string_view json, Pos pos, std::string_view what) {
    simdjson::dom::element root;
    if (auto error = parser_.parse(json.data(), json.size()).get(root)) {
      return Error(pos,
                   fmt::format("{} is not valid JSON: {}", what, simdjson::error_message(error)));
    }
    simdjson::dom::object object;
    if (root.get_object().get(object) != simdjson::SUCCESS) {
      return Error(pos, fmt::format("expected {} to be a JSON object", what));
    }
    return object;
  }

  // The column of the value of "key" in a one-line `json` starting at column `base`.
  static Pos KeyPos(std::string_view json, Pos base, std::string_view key) {
    const size_t at = FindKey(json, key);
    if (at == std::string_view::npos) return base;
    size_t i = at + key.size() + 2;
    while (i < json.size() && (json[i] == ' ' || json[i] == '\t' || json[i] == ':')) ++i;
    return {base.line, base.column + i};
  }

  Status ParseJsonLines(std::string_view text) {
    size_t offset = 0;
    while (offset < text.size()) {
      const size_t end = std::min(text.find('\n', offset), text.size());
      std::string_view line = text.substr(offset, end - offset);
      Advance(text, offset);
      const size_t line_offset = offset;
      offset = end + 1;
      if (line.size() > kMaxPromptLineBytes) {
        return RangeError(Here(line_offset),
                          fmt::format("line is longer than {} bytes", kMaxPromptLineBytes));
      }
      const size_t first = line.find_first_not_of(" \t\r");
      if (first == std::string_view::npos) continue;
      const Pos pos = Here(line_offset + first);
      const Pos base{pos.line, 1};
      TITAN_ASSIGN_OR_RETURN(simdjson::dom::object object, ParseObject(line, pos, "this line"));
      TITAN_RETURN_IF_ERROR(AddLineRecord(object, line, pos, base));
    }
    return OkStatus();
  }

  Status AddLineRecord(simdjson::dom::object object, std::string_view line, Pos pos, Pos base) {
    simdjson::dom::element prompt, messages, conversations;
    const bool has_prompt = object.at_key("prompt").get(prompt) == simdjson::SUCCESS;
    const bool has_messages = object.at_key("messages").get(messages) == simdjson::SUCCESS;
    const bool has_conversations =
        object.at_key("conversations").get(conversations) == simdjson::SUCCESS;
    if (has_prompt + has_messages + has_conversations != 1) {
      return Error(pos,
                   "expected exactly one of \"prompt\" (a string), \"messages\" (an array of "
                   "{\"role\", \"content\"}) or \"conversations\" (ShareGPT)");
    }
    if (has_conversations) return AddShareGptEntry(object, pos);
    PromptRecord record;
    if (has_prompt) {
      const Pos at = KeyPos(line, base, "prompt");
      std::string_view value;
      if (prompt.get_string().get(value) != simdjson::SUCCESS) {
        return Error(at, "expected \"prompt\" to be a string");
      }
      if (value.empty()) return Error(at, "empty \"prompt\"");
      if (value.size() > kMaxPromptBytes) {
        return RangeError(at, fmt::format("a prompt of {} bytes is over the {}-byte limit",
                                          value.size(), kMaxPromptBytes));
      }
      record.prompt = value;
    } else {
      const Pos at = KeyPos(line, base, "messages");
      simdjson::dom::array array;
      if (messages.get_array().get(array) != simdjson::SUCCESS || array.size() == 0) {
        return Error(at,
                     "expected \"messages\" to be a non-empty array of {\"role\": .., "
                     "\"content\": ..}");
      }
      size_t bytes = 0;
      size_t index = 0;
      for (simdjson::dom::element m : array) {
        std::string_view role, content;
        if (m["role"].get_string().get(role) != simdjson::SUCCESS || role.empty() ||
            m["content"].get_string().get(content) != simdjson::SUCCESS) {
          return Error(at, fmt::format("messages[{}]: expected {{\"role\": a non-empty string, "
                                       "\"content\": a string}}",
                                       index));
        }
        bytes += content.size();
        if (bytes > kMaxPromptBytes) {
          return RangeError(
              at, fmt::format("the messages hold over {} bytes of content", kMaxPromptBytes));
        }
        record.messages.push_back({std::string(role), std::string(content)});
        ++index;
      }
    }
    for (std::string_view key : {"max_tokens", "output_tokens"}) {
      simdjson::dom::element value;
      if (object.at_key(key).get(value) != simdjson::SUCCESS) continue;
      const Pos at = KeyPos(line, base, key);
      if (record.output_tokens != -1) {
        return Error(at, "both \"max_tokens\" and \"output_tokens\" given; use one");
      }
      int64_t tokens = 0;
      if (value.get_int64().get(tokens) != simdjson::SUCCESS || tokens < 1 ||
          tokens > kMaxLengthTokens) {
        return Error(at, fmt::format("expected \"{}\" to be an integer in [1, {}], got {}", key,
                                     kMaxLengthTokens, Shown(simdjson::minify(value))));
      }
      record.output_tokens = tokens;
    }
    return AddRecord(std::move(record), pos);
  }

  // One ShareGPT conversation; errors point at the entry's '{'.
  Status AddShareGptEntry(simdjson::dom::object entry, Pos pos) {
    simdjson::dom::array turns;
    if (entry["conversations"].get_array().get(turns) != simdjson::SUCCESS) {
      return Error(pos,
                   "expected a ShareGPT entry {\"conversations\": [{\"from\": \"human\", "
                   "\"value\": ..}, ..]}");
    }
    std::string_view prompt;
    bool found = false;
    int64_t hint = -1;
    size_t index = 0;
    for (simdjson::dom::element turn : turns) {
      std::string_view from, value;
      if (turn["from"].get_string().get(from) != simdjson::SUCCESS ||
          turn["value"].get_string().get(value) != simdjson::SUCCESS) {
        return Error(pos, fmt::format("conversations[{}]: expected {{\"from\": a string, "
                                      "\"value\": a string}}",
                                      index));
      }
      ++index;
      if (!found) {
        if (IsHuman(from) && !value.empty()) {
          prompt = value;
          found = true;
        }
        continue;
      }
      if (!IsHuman(from) && from != "system") {
        const int64_t words = CountWords(value);
        if (words > 0) hint = std::min<int64_t>(words, kMaxLengthTokens);
      }
      break;
    }
    if (!found) {
      ++skipped_;
      return OkStatus();
    }
    if (prompt.size() > kMaxPromptBytes) {
      return RangeError(pos, fmt::format("a prompt of {} bytes is over the {}-byte limit",
                                         prompt.size(), kMaxPromptBytes));
    }
    PromptRecord record;
    record.prompt = prompt;
    record.output_tokens = hint;
    return AddRecord(std::move(record), pos);
  }

  Status ParseShareGpt(std::string_view text, size_t open) {
    size_t i = open + 1;
    bool first = true;
    auto skip_space = [&] {
      while (i < text.size() && IsSpace(text[i])) ++i;
    };
    while (true) {
      skip_space();
      if (i < text.size() && text[i] == ']') {
        ++i;
        break;
      }
      if (!first) {
        if (i >= text.size() || text[i] != ',') {
          Advance(text, std::min(i, text.size()));
          return Error(Here(std::min(i, text.size())),
                       "expected ',' or ']' after a ShareGPT entry");
        }
        ++i;
        skip_space();
      }
      first = false;
      Advance(text, std::min(i, text.size()));
      const Pos pos = Here(std::min(i, text.size()));
      if (i >= text.size() || text[i] != '{') {
        return Error(pos, "expected a ShareGPT entry {\"conversations\": [..]}");
      }
      const size_t end = ScanComposite(text, i);
      if (end == std::string_view::npos) {
        return Error(pos, "this ShareGPT entry is not closed before the end of the file");
      }
      if (end - i > kMaxShareGptEntryBytes) {
        return RangeError(pos, fmt::format("a ShareGPT entry of {} bytes is over the {}-byte limit",
                                           end - i, kMaxShareGptEntryBytes));
      }
      TITAN_ASSIGN_OR_RETURN(simdjson::dom::object entry,
                             ParseObject(text.substr(i, end - i), pos, "this ShareGPT entry"));
      TITAN_RETURN_IF_ERROR(AddShareGptEntry(entry, pos));
      i = end;
    }
    skip_space();
    if (i < text.size()) {
      Advance(text, i);
      return Error(Here(i), "unexpected content after the ShareGPT array's closing ']'");
    }
    return OkStatus();
  }

  const std::string_view name_;
  PromptFileStats* const stats_;
  simdjson::dom::parser parser_;
  std::vector<PromptRecord> records_;
  uint64_t skipped_ = 0;
  size_t cursor_ = 0;  // Advance(): text[cursor_] is on line line_, which starts at line_start_
  size_t line_ = 1;
  size_t line_start_ = 0;
};

}  // namespace

Result<std::vector<PromptRecord>> ParsePromptFile(std::string_view text, std::string_view name,
                                                  PromptFileStats* stats) {
  return PromptFileParser(name, stats).Parse(text);
}

Result<std::vector<PromptRecord>> ReadPromptFile(const std::string& path, PromptFileStats* stats) {
  TITAN_ASSIGN_OR_RETURN(std::string text, Env::ReadFile(path, kMaxPromptFileBytes));
  return ParsePromptFile(text, path, stats);
}

}  // namespace titan::load
