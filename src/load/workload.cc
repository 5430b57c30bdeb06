#include "src/load/workload.h"

#include <fmt/format.h>
#include <simdjson.h>

#include "src/base/clock.h"
#include "src/load/rng.h"

namespace titan::load {
namespace {

// Arrivals from a process, prompts synthetic or from a file.
class GeneratedWorkload : public Workload {
 public:
  GeneratedWorkload(const WorkloadOptions& options, std::unique_ptr<ArrivalProcess> arrivals,
                    std::optional<PromptBuilder> builder, std::vector<PromptRecord> prompts)
      : options_(options),
        arrivals_(std::move(arrivals)),
        builder_(std::move(builder)),
        prompts_(std::move(prompts)),
        lengths_(MixSeed(options.seed, 2)) {}

  std::optional<WorkItem> Next() override {
    // A closed loop ignores arrival times: its users end the run at the duration, so the
    // arrival process (built for an open loop's rate) must not run out first.
    std::optional<int64_t> planned =
        options_.closed_loop ? std::optional<int64_t>(0) : arrivals_->Next();
    if (!planned) return std::nullopt;
    if (options_.closed_loop && options_.max_requests > 0 && count_ >= options_.max_requests) {
      return std::nullopt;
    }
    const uint64_t index = count_++;
    WorkItem item;
    item.planned_ns = *planned;
    int64_t output = options_.output_tokens.Sample(lengths_);
    if (!prompts_.empty()) {
      const PromptRecord& record = prompts_[index % prompts_.size()];
      if (record.output_tokens > 0) output = record.output_tokens;
      item.prompt_tokens = WordCount(record);
      item.body = BuildRequestBody(options_.api, record.prompt, record.messages, output);
    } else {
      BuiltPrompt prompt = builder_->Build(index);
      item.group = options_.prefix_groups > 0 ? static_cast<int32_t>(prompt.group) : -1;
      item.prompt_tokens = static_cast<int64_t>(
          (prompt.prefix_words + prompt.suffix_words) * options_.tokens_per_word + 0.5);
      item.body = BuildRequestBody(options_.api, prompt.text, {}, output);
    }
    item.output_tokens = output;
    return item;
  }

 private:
  static int64_t WordCount(const PromptRecord& record) {
    auto words = [](std::string_view text) {
      int64_t n = 0;
      bool in_word = false;
      for (char c : text) {
        const bool space = c == ' ' || c == '\n' || c == '\t' || c == '\r';
        if (!space && !in_word) ++n;
        in_word = !space;
      }
      return n;
    };
    int64_t n = words(record.prompt);
    for (const ChatMessage& m : record.messages) n += words(m.content);
    return n;
  }

  WorkloadOptions options_;
  std::unique_ptr<ArrivalProcess> arrivals_;
  std::optional<PromptBuilder> builder_;
  std::vector<PromptRecord> prompts_;
  Rng lengths_;
  uint64_t count_ = 0;
};

// A trace's own times, lengths and prefix blocks.
class TraceWorkload : public Workload {
 public:
  TraceWorkload(const WorkloadOptions& options, std::vector<TraceRequest> requests)
      : options_(options), requests_(std::move(requests)) {}

  std::optional<WorkItem> Next() override {
    if (next_ >= requests_.size()) return std::nullopt;
    if (options_.max_requests > 0 && next_ >= options_.max_requests) return std::nullopt;
    const TraceRequest& request = requests_[next_];
    const uint64_t index = next_++;
    WorkItem item;
    item.planned_ns = static_cast<int64_t>(request.offset_ns / options_.time_scale);
    if (options_.duration_ns > 0 && item.planned_ns >= options_.duration_ns) return std::nullopt;
    item.prompt_tokens = request.input_tokens;
    item.output_tokens = std::max<int64_t>(1, request.output_tokens);
    std::string text =
        TraceRequestText(request, MixSeed(options_.seed, 1000 + index), kDefaultBlockTokens,
                         options_.seed, options_.tokens_per_word);
    item.body = BuildRequestBody(options_.api, text, {}, item.output_tokens);
    return item;
  }

 private:
  WorkloadOptions options_;
  std::vector<TraceRequest> requests_;
  size_t next_ = 0;
};

}  // namespace

Result<std::unique_ptr<Workload>> MakeWorkload(const WorkloadOptions& options) {
  if (!options.trace_path.empty()) {
    if (!(options.time_scale > 0)) return InvalidArgumentError("--time-scale must be > 0");
    TITAN_ASSIGN_OR_RETURN(std::vector<TraceRequest> requests, ReadTraceFile(options.trace_path));
    return std::unique_ptr<Workload>(new TraceWorkload(options, std::move(requests)));
  }
  if (options.duration_ns == 0 && options.max_requests == 0) {
    return InvalidArgumentError(
        "the run has no end: give --duration or --requests (or a trace with --trace)");
  }
  TITAN_ASSIGN_OR_RETURN(std::unique_ptr<ArrivalProcess> arrivals,
                         MakeArrivals(options.arrivals, MixSeed(options.seed, 1),
                                      options.duration_ns, options.max_requests));
  std::vector<PromptRecord> prompts;
  std::optional<PromptBuilder> builder;
  if (!options.prompt_file.empty()) {
    TITAN_ASSIGN_OR_RETURN(prompts, ReadPromptFile(options.prompt_file));
  } else {
    PromptBuilderOptions b;
    b.num_groups = std::max<int64_t>(1, options.prefix_groups);
    b.prefix_tokens = options.prefix_groups > 0 ? options.prefix_tokens : 0;
    b.suffix = options.input_tokens;
    b.tokens_per_word = options.tokens_per_word;
    b.seed = MixSeed(options.seed, 3);
    TITAN_ASSIGN_OR_RETURN(PromptBuilder built, PromptBuilder::Create(b));
    builder.emplace(std::move(built));
  }
  return std::unique_ptr<Workload>(
      new GeneratedWorkload(options, std::move(arrivals), std::move(builder), std::move(prompts)));
}

Result<double> MeasureTokensPerWord(const http::Url& url, int64_t timeout_ns) {
  constexpr int64_t kWords = 1000;
  const std::string text = SyntheticWords(kWords, 7);
  std::string quoted;
  AppendJsonString(text, &quoted);
  // llama.cpp reads "content", vLLM "prompt"; titan serve-sim either.
  const std::string bodies[] = {"{\"content\":" + quoted + "}", "{\"prompt\":" + quoted + "}"};
  std::string last_error = "no answer";
  for (const std::string& body : bodies) {
    http::OutgoingRequest request;
    request.method = "POST";
    request.target = "/tokenize";
    request.headers.push_back({"Content-Type", "application/json"});
    request.body = body;
    auto response = http::Fetch(url, request, timeout_ns);
    if (!response.ok()) {
      last_error = response.status().ToString();
      continue;
    }
    if (response->status != 200) {
      last_error = fmt::format("POST /tokenize answered HTTP {}", response->status);
      continue;
    }
    simdjson::dom::parser parser;
    simdjson::dom::element root;
    if (parser.parse(response->body).get(root) != simdjson::SUCCESS) {
      last_error = "POST /tokenize answered something that is not JSON";
      continue;
    }
    int64_t count = -1;
    simdjson::dom::array tokens;
    if (root["count"].get(count) != simdjson::SUCCESS) {
      if (root["tokens"].get(tokens) == simdjson::SUCCESS) count = tokens.size();
    }
    if (count <= 0) {
      last_error = "POST /tokenize answered without tokens";
      continue;
    }
    return static_cast<double>(count) / kWords;
  }
  return UnavailableError(fmt::format("cannot measure tokens per word: {}", last_error));
}

}  // namespace titan::load
