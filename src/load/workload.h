// The workloads titan load can send: when each request goes (an arrival process or a trace
// file's timestamps) and what it asks (synthetic prompts of planned lengths with optional
// shared-prefix groups, prompts from a file, or a trace's lengths and prefix hash ids).
//
// Thread safety: a Workload is used by one thread at a time (the runner's scheduler).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "src/base/status.h"
#include "src/load/arrivals.h"
#include "src/load/openai.h"
#include "src/load/prompts.h"
#include "src/load/runner.h"
#include "src/load/trace_file.h"

namespace titan::load {

struct WorkloadOptions {
  ApiOptions api;
  // When: an arrival process, or a trace file's own timestamps (trace_path set). For closed
  // loops the times are ignored.
  ArrivalSpec arrivals;
  int64_t duration_ns = 0;  // 0: no bound (then max_requests or the trace bounds the run)
  uint64_t max_requests = 0;
  // Closed loop (users): requests are handed out until max_requests or the users stop at the
  // duration; arrival times are not drawn.
  bool closed_loop = false;
  uint64_t seed = 1;
  double time_scale = 1;  // trace replay: 2 plays the trace twice as fast
  std::string trace_path;
  // What: synthetic (default), or a prompt file, or the trace's lengths.
  LengthSpec input_tokens{LengthKind::kFixed, 128};
  LengthSpec output_tokens{LengthKind::kFixed, 64};
  int64_t prefix_groups = 0;  // > 0: shared-prefix groups of prefix_tokens each
  int64_t prefix_tokens = 0;
  std::string prompt_file;
  double tokens_per_word = 1.0;  // measured through /tokenize when the server has it
};

// Builds the workload; errors name the file, line and column of bad input.
Result<std::unique_ptr<Workload>> MakeWorkload(const WorkloadOptions& options);

// Asks the server how many tokens its tokenizer makes of titan's synthetic words (POST
// /tokenize in llama.cpp's and vLLM's forms). Returns tokens per word, or an error when the
// server has no such endpoint (then lengths are in words, and the caller says so).
Result<double> MeasureTokensPerWord(const http::Url& url, int64_t timeout_ns);

}  // namespace titan::load
