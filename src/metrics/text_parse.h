// Parser of the Prometheus text exposition format (0.0.4; OpenMetrics text is read the same way
// for samples), for reading other servers' /metrics: vLLM's, llama.cpp's, titan's own.
//
// Each sample line `name{a="x",b="y"} value [timestamp]` is handed to the callback with its
// labels as written between the braces (escapes kept) and its value; `# HELP` / `# TYPE`
// lines and comments are skipped. A malformed line is skipped and counted, never fatal: a
// scraper keeps what it can read.
//
// Thread safety: pure function.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

namespace titan {

struct PrometheusSample {
  std::string_view name;
  std::string_view labels;  // between the braces, "" when none
  double value;
};

struct TextParseStats {
  uint64_t samples = 0;
  uint64_t malformed_lines = 0;
  uint64_t first_malformed_line = 0;  // 1-based; 0 when none
};

TextParseStats ParsePrometheusText(std::string_view text,
                                   const std::function<void(const PrometheusSample&)>& on_sample);

}  // namespace titan
