#include "src/gateway/stream_meter.h"

#include <simdjson.h>

namespace titan::gateway {

int64_t CompletionTokensOf(std::string_view json, bool* usage_only) {
  if (usage_only) *usage_only = false;
  // Cheap pre-check: most chunks carry no usage.
  if (json.find("\"usage\"") == std::string_view::npos) return -1;
  thread_local simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(json.data(), json.size()).get(doc)) return -1;
  simdjson::dom::array choices;
  if (usage_only && !doc["choices"].get(choices) && choices.size() == 0) *usage_only = true;
  int64_t tokens;
  if (doc["usage"]["completion_tokens"].get(tokens)) return -1;
  if (tokens < 0 || tokens >= (int64_t{1} << 40)) return -1;
  return tokens;
}

void StreamMeter::OnEvent(std::string_view data, int64_t now_ns) {
  if (data == "[DONE]") {
    done_ = true;
    return;
  }
  bool usage_only = false;
  const int64_t usage = CompletionTokensOf(data, &usage_only);
  if (usage >= 0) usage_tokens_ = usage;
  if (usage_only) return;  // a final usage chunk (choices empty) is not a token
  if (first_event_ns_ == 0) first_event_ns_ = now_ns;
  last_event_ns_ = now_ns;
  ++events_;
}

void StreamMeter::OnBody(std::string_view data, int64_t now_ns) {
  if (!stream_ || broken_) return;
  Status s = parser_.Feed(data, [&](const http::SseEvent& e) { OnEvent(e.data, now_ns); });
  if (!s.ok()) broken_ = true;
}

void StreamMeter::OnWholeBody(std::string_view body, int64_t now_ns) {
  first_event_ns_ = last_event_ns_ = now_ns;
  usage_tokens_ = CompletionTokensOf(body);
}

}  // namespace titan::gateway
