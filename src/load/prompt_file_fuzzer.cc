// Fuzzes the prompt file parser (outside input: JSON lines or a ShareGPT dump from the web).
// ParsePromptFile must never crash, hang or read out of bounds, and whatever it accepts must
// keep its contract: a prompt or messages per record, within the size bounds.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "src/load/prompts.h"

namespace {

void Check(std::string_view text) {
  titan::load::PromptFileStats stats;
  auto records = titan::load::ParsePromptFile(text, "fuzz", &stats);
  if (!records.ok()) {
    if (!records.status().message().starts_with("fuzz")) __builtin_trap();  // errors name the file
    return;
  }
  if (records->empty()) __builtin_trap();
  for (const titan::load::PromptRecord& r : *records) {
    if (r.prompt.empty() == r.messages.empty()) __builtin_trap();  // exactly one of them
    size_t bytes = r.prompt.size();
    for (const titan::load::ChatMessage& m : r.messages) {
      if (m.role.empty()) __builtin_trap();
      bytes += m.content.size();
    }
    if (bytes > titan::load::kMaxPromptBytes) __builtin_trap();
    if (r.output_tokens != -1 &&
        (r.output_tokens < 1 || r.output_tokens > titan::load::kMaxLengthTokens)) {
      __builtin_trap();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  Check(input);
  // Also as the entries of a ShareGPT array, to reach the entry scanner from any input.
  Check("[" + std::string(input) + "]");
  return 0;
}
