// Fuzzes --extra-body (outside input: JSON object members given on a command line).
// SetExtraFields must never crash or hang, and whatever it accepts must keep its contract: every
// request body built with it is one valid JSON object in which no key appears twice.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "src/load/openai.h"

namespace {

bool OneObjectWithoutDuplicateKeys(const std::string& body) {
  bool duplicate = false;
  std::set<std::string> keys;
  nlohmann::json parsed = nlohmann::json::parse(
      body,
      [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& value) {
        if (depth == 1 && event == nlohmann::json::parse_event_t::key &&
            !keys.insert(value.get<std::string>()).second) {
          duplicate = true;
        }
        return true;
      },
      /*allow_exceptions=*/false);
  return parsed.is_object() && !duplicate;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  titan::load::ApiOptions options;
  if (!titan::load::SetExtraFields(text, &options).ok()) return 0;
  for (titan::load::Api api :
       {titan::load::Api::kCompletions, titan::load::Api::kChat, titan::load::Api::kEmbeddings}) {
    options.api = api;
    if (!OneObjectWithoutDuplicateKeys(titan::load::BuildRequestBody(options, "p", {}, 3))) {
      __builtin_trap();
    }
  }
  return 0;
}
