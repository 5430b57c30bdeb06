// Fuzzes the trace replay parser (outside input: a trace file downloaded or handed over by a
// user). ParseTrace must never crash, hang or read out of bounds, and whatever it accepts must
// keep its contract: sorted offsets from 0, token counts within bounds.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "src/load/trace_file.h"

namespace {

void Check(std::string_view text) {
  auto trace = titan::load::ParseTrace(text, "fuzz");
  if (!trace.ok()) {
    if (!trace.status().message().starts_with("fuzz")) __builtin_trap();  // errors name the file
    return;
  }
  if (trace->empty() || trace->front().offset_ns != 0) __builtin_trap();
  int64_t last = 0;
  for (const titan::load::TraceRequest& r : *trace) {
    if (r.offset_ns < last || r.offset_ns > titan::load::kMaxTraceSpanNs * 2) __builtin_trap();
    if (r.input_tokens < 0 || r.input_tokens > titan::load::kMaxTraceTokens) __builtin_trap();
    if (r.output_tokens < 0 || r.output_tokens > titan::load::kMaxTraceTokens) __builtin_trap();
    last = r.offset_ns;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  Check(input);
  // Most mutations break the header; also parse the input as rows under a valid one.
  Check("TIMESTAMP,ContextTokens,GeneratedTokens\n" + std::string(input));
  return 0;
}
