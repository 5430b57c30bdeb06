#include "src/load/prompts.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "src/base/text.h"

namespace titan::load {
namespace {

LengthSpec ParseLength(std::string_view text) {
  Result<LengthSpec> spec = ParseLengthSpec(text);
  EXPECT_TRUE(spec.ok()) << text << ": " << spec.status().ToString();
  return spec.value_or(LengthSpec{});
}

std::vector<std::string_view> Words(std::string_view text) {
  std::vector<std::string_view> out;
  for (std::string_view w = NextField(&text); !w.empty(); w = NextField(&text)) out.push_back(w);
  return out;
}

// Mean and standard deviation of n samples.
std::pair<double, double> SampleStats(const LengthSpec& spec, int n, int64_t* min_seen,
                                      int64_t* max_seen) {
  Rng rng(11);
  double sum = 0, sum2 = 0;
  *min_seen = kMaxLengthTokens;
  *max_seen = 0;
  for (int i = 0; i < n; ++i) {
    const int64_t x = spec.Sample(rng);
    sum += static_cast<double>(x);
    sum2 += static_cast<double>(x) * static_cast<double>(x);
    *min_seen = std::min(*min_seen, x);
    *max_seen = std::max(*max_seen, x);
  }
  const double mean = sum / n;
  return {mean, std::sqrt(sum2 / n - mean * mean)};
}

TEST(LengthSpecTest, ParsesEveryFormAndRoundTrips) {
  for (const char* text :
       {"fixed:128", "uniform:10,20", "normal:mean=100,sd=15", "lognormal:mean=500,sigma=0.8"}) {
    EXPECT_EQ(ToString(ParseLength(text)), text);
    EXPECT_EQ(ParseLength(ToString(ParseLength(text))), ParseLength(text));
  }
  EXPECT_EQ(ToString(ParseLength(" 64 ")), "fixed:64");
  EXPECT_EQ(ToString(ParseLength("normal: sd=2 , mean=7")), "normal:mean=7,sd=2");
}

TEST(LengthSpecTest, ParseErrorsListTheForms) {
  const std::pair<const char*, const char*> cases[] = {
      {"0", "the length must be an integer in [1, 10000000]"},
      {"abc", "the length must be"},
      {":5", "missing the kind"},
      {"fixed:10000001", "the length must be"},
      {"uniform:5", "expected uniform:MIN,MAX"},
      {"uniform:9,3", "MIN is larger than MAX"},
      {"normal:mean=5", "needs mean=.. and sd=.."},
      {"normal:mean=5,sd=-1", "sd must be in"},
      {"normal:mean=5,sigma=1", "expected mean=.. and sd=.."},
      {"lognormal:mean=0.5,sigma=1", "mean must be in"},
      {"lognormal:mean=5,sigma=9", "sigma must be in [0, 4]"},
      {"zipf:1", "unknown kind 'zipf'"},
  };
  for (const auto& [text, what] : cases) {
    Result<LengthSpec> spec = ParseLengthSpec(text);
    ASSERT_FALSE(spec.ok()) << text;
    EXPECT_NE(spec.status().message().find(what), std::string_view::npos)
        << text << ": " << spec.status().message();
    EXPECT_NE(spec.status().message().find("accepted forms: N | fixed:N"), std::string_view::npos);
  }
}

TEST(LengthSpecTest, SamplesFollowTheDistributions) {
  int64_t lo = 0, hi = 0;
  auto [fixed_mean, fixed_sd] = SampleStats(ParseLength("fixed:77"), 1000, &lo, &hi);
  EXPECT_EQ(fixed_mean, 77);
  EXPECT_EQ(fixed_sd, 0);

  auto [u_mean, u_sd] = SampleStats(ParseLength("uniform:10,20"), 100000, &lo, &hi);
  EXPECT_EQ(lo, 10);
  EXPECT_EQ(hi, 20);
  EXPECT_NEAR(u_mean, 15, 0.05);

  auto [n_mean, n_sd] = SampleStats(ParseLength("normal:mean=1000,sd=100"), 100000, &lo, &hi);
  EXPECT_NEAR(n_mean, 1000, 2);
  EXPECT_NEAR(n_sd, 100, 2);
  SampleStats(ParseLength("normal:mean=2,sd=50"), 1000, &lo, &hi);
  EXPECT_EQ(lo, 1);  // clamped

  const LengthSpec lognormal = ParseLength("lognormal:mean=500,sigma=0.5");
  auto [l_mean, l_sd] = SampleStats(lognormal, 200000, &lo, &hi);
  EXPECT_NEAR(l_mean, 500, 5);  // M is the mean, not the median
  const double cv = std::sqrt(std::exp(0.25) - 1);
  EXPECT_NEAR(l_sd, 500 * cv, 8);
  EXPECT_DOUBLE_EQ(lognormal.Mean(), 500);
  EXPECT_DOUBLE_EQ(ParseLength("uniform:10,21").Mean(), 15.5);
}

TEST(SyntheticTextTest, WordsAreDeterministicPrefixesFromTheList) {
  const std::string text = SyntheticWords(1000, 5);
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.front(), ' ');
  EXPECT_EQ(text.find("  "), std::string::npos);
  const auto words = Words(text);
  EXPECT_EQ(words.size(), 1000u);
  std::set<std::string_view> distinct(words.begin(), words.end());
  EXPECT_GT(distinct.size(), 100u);
  for (std::string_view w : distinct) EXPECT_LE(w.size(), 6u) << w;
  EXPECT_EQ(text, SyntheticWords(1000, 5));
  EXPECT_NE(text, SyntheticWords(1000, 6));
  EXPECT_TRUE(text.starts_with(SyntheticWords(333, 5)));
  EXPECT_EQ(SyntheticWords(0, 5), "");
  EXPECT_EQ(SyntheticWords(-3, 5), "");
}

TEST(SyntheticTextTest, FixedSeedGivesFixedText) {
  // Pins the word list, the generator and the normal sampler: a change here changes every
  // recorded run's prompts.
  EXPECT_EQ(SyntheticWords(8, 2024), " were many could way just but who now");
  Rng rng(2024);
  const LengthSpec spec = ParseLength("lognormal:mean=100,sigma=1");
  EXPECT_EQ(spec.Sample(rng), 133);
  EXPECT_EQ(spec.Sample(rng), 29);
}

TEST(SyntheticTextTest, TokensToWords) {
  EXPECT_EQ(WordsForTokens(100), 100);
  EXPECT_EQ(WordsForTokens(100, 1.25), 80);
  EXPECT_EQ(WordsForTokens(0, 1.25), 0);
  EXPECT_EQ(WordsForTokens(10, 0), 0);
  EXPECT_EQ(Words(SyntheticText(130, 1, 1.3)).size(), 100u);
  EXPECT_EQ(SyntheticText(50, 9), SyntheticWords(50, 9));
}

TEST(SyntheticTextTest, PrefixBlocksShareTextByHashId) {
  EXPECT_EQ(PrefixBlockText(46), PrefixBlockText(46));
  EXPECT_EQ(Words(PrefixBlockText(46)).size(), 512u);
  EXPECT_NE(PrefixBlockText(46), PrefixBlockText(47));
  EXPECT_NE(PrefixBlockText(46, 512, /*salt=*/1), PrefixBlockText(46, 512, /*salt=*/2));
  EXPECT_TRUE(PrefixBlockText(46).starts_with(PrefixBlockText(46, 100)));

  const TraceRequest a{0, 1200, 10, {1, 2, 3}};
  const TraceRequest b{0, 1100, 10, {1, 2, 9}};
  const std::string ta = TraceRequestText(a, 100);
  const std::string tb = TraceRequestText(b, 200);
  EXPECT_EQ(Words(ta).size(), 1200u);
  EXPECT_EQ(Words(tb).size(), 1100u);
  const std::string shared = PrefixBlockText(1) + PrefixBlockText(2);
  EXPECT_TRUE(ta.starts_with(shared));
  EXPECT_TRUE(tb.starts_with(shared));
  EXPECT_EQ(ta, shared + PrefixBlockText(3, 176));  // the last block cut to 1200 - 1024
  EXPECT_NE(ta.substr(shared.size()), tb.substr(shared.size()));
  // Fewer ids than blocks: the rest is unique text; more ids than tokens: ignored.
  const TraceRequest c{0, 600, 1, {1}};
  EXPECT_EQ(TraceRequestText(c, 7), PrefixBlockText(1) + SyntheticWords(88, 7));
  const TraceRequest d{0, 10, 1, {1, 2, 3}};
  EXPECT_EQ(TraceRequestText(d, 7), PrefixBlockText(1, 10));
}

TEST(PromptBuilderTest, GroupsSharePrefixesAndSuffixesAreUnique) {
  PromptBuilderOptions options;
  options.num_groups = 4;
  options.prefix_tokens = 200;
  options.suffix = ParseLength("uniform:20,40");
  options.seed = 3;
  Result<PromptBuilder> builder = PromptBuilder::Create(options);
  ASSERT_TRUE(builder.ok()) << builder.status().ToString();
  std::vector<std::string> prefix_of(4);
  std::vector<int> per_group(4, 0);
  std::set<std::string> texts;
  for (uint64_t i = 0; i < 400; ++i) {
    BuiltPrompt p = builder->Build(i);
    ASSERT_GE(p.group, 0);
    ASSERT_LT(p.group, 4);
    ++per_group[p.group];
    EXPECT_EQ(p.prefix_words, 200);
    EXPECT_GE(p.suffix_tokens, 20);
    EXPECT_LE(p.suffix_tokens, 40);
    EXPECT_EQ(Words(p.text).size(), static_cast<size_t>(200 + p.suffix_words));
    const auto words = Words(p.text);
    std::string prefix;
    for (size_t w = 0; w < 200; ++w) prefix += " " + std::string(words[w]);
    EXPECT_TRUE(p.text.starts_with(prefix));
    if (prefix_of[p.group].empty()) prefix_of[p.group] = prefix;
    EXPECT_EQ(prefix, prefix_of[p.group]) << "group " << p.group;
    texts.insert(p.text);
    EXPECT_EQ(p.text, builder->Build(i).text) << "deterministic";
  }
  EXPECT_EQ(texts.size(), 400u);
  for (int g = 0; g < 4; ++g) {
    EXPECT_GT(per_group[g], 60) << g;
    for (int h = 0; h < g; ++h) EXPECT_NE(prefix_of[g], prefix_of[h]);
  }
}

TEST(PromptBuilderTest, RejectsOptionsOutOfRange) {
  PromptBuilderOptions options;
  options.num_groups = 0;
  EXPECT_FALSE(PromptBuilder::Create(options).ok());
  options.num_groups = 1000;
  options.prefix_tokens = 100'000;
  Result<PromptBuilder> big = PromptBuilder::Create(options);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("more than 16000000 words"), std::string_view::npos);
  options.prefix_tokens = 10;
  options.tokens_per_word = 0;
  EXPECT_FALSE(PromptBuilder::Create(options).ok());
  options.tokens_per_word = 1;
  options.suffix.fixed_tokens = 0;
  EXPECT_FALSE(PromptBuilder::Create(options).ok());
}

std::vector<PromptRecord> MustParsePrompts(std::string_view text,
                                           PromptFileStats* stats = nullptr) {
  Result<std::vector<PromptRecord>> records = ParsePromptFile(text, "prompts", stats);
  EXPECT_TRUE(records.ok()) << records.status().ToString();
  return records.value_or({});
}

std::string PromptError(std::string_view text, StatusCode code = StatusCode::kInvalidArgument) {
  Result<std::vector<PromptRecord>> records = ParsePromptFile(text, "p.jsonl");
  EXPECT_FALSE(records.ok()) << text;
  if (records.ok()) return "";
  EXPECT_EQ(records.status().code(), code) << records.status().ToString();
  return std::string(records.status().message());
}

TEST(PromptFileTest, ReadsJsonLines) {
  std::vector<PromptRecord> records = MustParsePrompts(
      "{\"prompt\": \"Hello \\u00e9\\n\", \"max_tokens\": 64}\n"
      "\n"
      "{\"messages\": [{\"role\": \"system\", \"content\": \"be brief\"}, {\"role\": \"user\", "
      "\"content\": \"hi\"}], \"output_tokens\": 5, \"id\": 9}\r\n"
      "{\"conversations\": [{\"from\": \"human\", \"value\": \"q\"}, {\"from\": \"gpt\", "
      "\"value\": \"one two  three\"}]}\n");
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].prompt, "Hello \xC3\xA9\n");
  EXPECT_EQ(records[0].output_tokens, 64);
  EXPECT_TRUE(records[1].prompt.empty());
  EXPECT_EQ(records[1].messages,
            (std::vector<ChatMessage>{{"system", "be brief"}, {"user", "hi"}}));
  EXPECT_EQ(records[1].output_tokens, 5);
  EXPECT_EQ(records[2].prompt, "q");
  EXPECT_EQ(records[2].output_tokens, 3);
}

TEST(PromptFileTest, ReadsShareGptAndSkipsConversationsWithoutAHumanTurn) {
  PromptFileStats stats;
  std::vector<PromptRecord> records = MustParsePrompts(
      "\xEF\xBB\xBF[\n"
      "  {\"id\": \"a\", \"conversations\": [{\"from\": \"system\", \"value\": \"sys\"},\n"
      "     {\"from\": \"human\", \"value\": \"What is {x}? [y]\"},\n"
      "     {\"from\": \"gpt\", \"value\": \"It is\\n a \\\"thing\\\".\"}]},\n"
      "  {\"id\": \"b\", \"conversations\": []},\n"
      "  {\"id\": \"c\", \"conversations\": [{\"from\": \"gpt\", \"value\": \"hello\"}]},\n"
      "  {\"id\": \"d\", \"conversations\": [{\"from\": \"human\", \"value\": \"alone\"}]}\n"
      "]\n",
      &stats);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].prompt, "What is {x}? [y]");
  EXPECT_EQ(records[0].output_tokens, 4);
  EXPECT_EQ(records[1].prompt, "alone");
  EXPECT_EQ(records[1].output_tokens, -1);
  EXPECT_EQ(stats.skipped, 2u);
}

TEST(PromptFileTest, ErrorsNameLineAndColumn) {
  EXPECT_EQ(PromptError("{\"prompt\": \"a\"}\n{\"prompt\": 5}\n"),
            "p.jsonl:2:12: expected \"prompt\" to be a string");
  EXPECT_EQ(PromptError("{\"prompt\": \"a\", \"max_tokens\": 0}\n"),
            "p.jsonl:1:31: expected \"max_tokens\" to be an integer in [1, 10000000], got 0");
  EXPECT_EQ(PromptError("{\"prompt\": \"a\", \"max_tokens\": 2, \"output_tokens\": 2}\n"),
            "p.jsonl:1:51: both \"max_tokens\" and \"output_tokens\" given; use one");
  EXPECT_EQ(PromptError("\n  {\"prompt\": \"a\", \"messages\": []}\n"),
            "p.jsonl:2:3: expected exactly one of \"prompt\" (a string), \"messages\" (an array of "
            "{\"role\", \"content\"}) or \"conversations\" (ShareGPT)");
  EXPECT_EQ(PromptError("{\"messages\": [{\"role\": \"user\"}]}\n"),
            "p.jsonl:1:14: messages[0]: expected {\"role\": a non-empty string, \"content\": a "
            "string}");
  EXPECT_EQ(PromptError("{\"prompt\": \"\"}\n"), "p.jsonl:1:12: empty \"prompt\"");
  EXPECT_NE(PromptError("{\"prompt\": \"a\"\n").find("p.jsonl:1:1: this line is not valid JSON"),
            std::string::npos);
  EXPECT_NE(PromptError("{\"prompt\": \"a\"}\n[1]\n")
                .find("p.jsonl:2:1: expected this line to "
                      "be a JSON object"),
            std::string::npos);
  EXPECT_NE(PromptError("hello").find("p.jsonl:1:1: expected JSON lines"), std::string::npos);
  EXPECT_NE(PromptError("  \n").find("no prompts"), std::string::npos);
  EXPECT_NE(PromptError("[]").find("no prompts"), std::string::npos);
  // ShareGPT: positions of entries.
  EXPECT_EQ(PromptError("[{\"conversations\": [{\"from\": \"human\", \"value\": \"a\"}]},\n"
                        "   {\"conversations\": [{\"from\": \"human\"}]}]"),
            "p.jsonl:2:4: conversations[0]: expected {\"from\": a string, \"value\": a string}");
  EXPECT_EQ(PromptError("[\n{\"conversations\": 3}]"),
            "p.jsonl:2:1: expected a ShareGPT entry {\"conversations\": [{\"from\": \"human\", "
            "\"value\": ..}, ..]}");
  EXPECT_EQ(PromptError("[{\"conversations\": []}\n {\"x\": 1}]"),
            "p.jsonl:2:2: expected ',' or ']' after a ShareGPT entry");
  EXPECT_EQ(PromptError("[{\"conversations\": [{\"from\": \"human\", \"value\": \"a}]"),
            "p.jsonl:1:2: this ShareGPT entry is not closed before the end of the file");
  EXPECT_EQ(PromptError("[{\"conversations\": [{\"from\": \"human\", \"value\": \"a\"}]}] x"),
            "p.jsonl:1:56: unexpected content after the ShareGPT array's closing ']'");
  EXPECT_EQ(PromptError("[{\"conversations\": []},]"),
            "p.jsonl:1:24: expected a ShareGPT entry {\"conversations\": [..]}");
  EXPECT_NE(PromptError("[{\"conversations\": [}]")
                .find("p.jsonl:1:2: this ShareGPT entry is not "
                      "valid JSON"),
            std::string::npos);
}

TEST(PromptFileTest, EnforcesThePromptSizeBound) {
  const std::string big(kMaxPromptBytes + 1, 'a');
  EXPECT_NE(PromptError("{\"prompt\": \"" + big + "\"}\n", StatusCode::kOutOfRange)
                .find("p.jsonl:1:12: a prompt of 1048577 bytes is over the 1048576-byte limit"),
            std::string::npos);
  const std::string half(kMaxPromptBytes / 2 + 1, 'b');
  EXPECT_NE(PromptError("{\"messages\": [{\"role\": \"user\", \"content\": \"" + half +
                            "\"}, {\"role\": \"user\", \"content\": \"" + half + "\"}]}\n",
                        StatusCode::kOutOfRange)
                .find("over 1048576 bytes of content"),
            std::string::npos);
  EXPECT_EQ(MustParsePrompts("{\"prompt\": \"" + std::string(kMaxPromptBytes, 'a') + "\"}")
                .at(0)
                .prompt.size(),
            kMaxPromptBytes);
}

TEST(PromptFileTest, ReadPromptFileReadsARealFile) {
  const std::string path = testing::TempDir() + "/prompts_test.jsonl";
  {
    std::ofstream out(path);
    out << "{\"prompt\": \"one\"}\n{\"prompt\": \"two\"}\n";
  }
  Result<std::vector<PromptRecord>> records = ReadPromptFile(path);
  ASSERT_TRUE(records.ok()) << records.status().ToString();
  ASSERT_EQ(records->size(), 2u);
  EXPECT_EQ((*records)[1].prompt, "two");
  std::remove(path.c_str());
  EXPECT_EQ(ReadPromptFile(path).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace titan::load
