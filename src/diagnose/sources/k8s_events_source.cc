// `kubectl get events -o json` (an EventList or a List of Events). Each event is read as the
// line "<reason> <message>" through the line rules (so one rule reads an eviction whether kubectl
// printed it as a table or as JSON); the evidence is the event's message, on the line of the file
// where it stands, at its last (or only) time, on the node it names.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "src/base/json_depth.h"
#include "src/diagnose/log_time.h"
#include "src/diagnose/sources/source.h"

namespace titan::diagnose {
namespace {

std::string StringField(const nlohmann::json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

class K8sEventsSource final : public LogSource {
 public:
  std::string_view name() const override { return "k8s_events"; }
  int Sniff(const FileHead& head) const override {
    std::string_view b = head.bytes;
    const size_t first = b.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos || b[first] != '{') return 0;
    return Contains(b, "\"involvedObject\"") && Contains(b, "\"reason\"") ? 45 : 0;
  }
  Status Read(int fd, const FileHead& head, const ReadLimits& limits,
              SourceOutput* out) const override {
    const std::string path(head.path);
    TITAN_ASSIGN_OR_RETURN(std::string data, ReadDocument(fd, head, limits, "k8s_events", out));
    TITAN_ASSIGN_OR_RETURN(nlohmann::json doc,
                           ParseJsonDocument(data, path, "kubectl get events -o json"));
    std::vector<const nlohmann::json*> events;
    if (doc.contains("items") && doc["items"].is_array()) {
      for (const nlohmann::json& e : doc["items"]) events.push_back(&e);
    } else if (doc.contains("involvedObject")) {
      events.push_back(&doc);
    }
    size_t search_from = 0;
    for (const nlohmann::json* ev : events) {
      if (!ev->is_object()) continue;
      const std::string reason = StringField(*ev, "reason"), message = StringField(*ev, "message");
      // The event's line in the file: where its message stands.
      int64_t line_no = 0;
      if (!message.empty()) {
        const std::string quoted =
            nlohmann::json(message).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        size_t at = data.find(quoted, search_from);
        if (at != std::string::npos) {
          line_no = 1 + CountNewlines(data.data(), at);
          search_from = at + 1;
        }
      }
      std::vector<Finding> fs = FindingsOfText(reason + " " + message, path);
      if (fs.empty()) continue;
      Finding f = std::move(fs.front());
      f.evidence.line = line_no;
      f.evidence.text = message.substr(0, kMaxEvidenceBytes);
      for (const char* key : {"lastTimestamp", "eventTime", "firstTimestamp"}) {
        LogTime t = ParseLineTime(StringField(*ev, key));
        if (t.kind != ClockKind::kNone) {
          f.evidence.time = t;
          break;
        }
      }
      if (ev->contains("involvedObject") && (*ev)["involvedObject"].is_object()) {
        const nlohmann::json& obj = (*ev)["involvedObject"];
        if (StringField(obj, "kind") == "Node") f.where.node = StringField(obj, "name");
      }
      if (f.where.node.empty() && ev->contains("source") && (*ev)["source"].is_object()) {
        f.where.node = StringField((*ev)["source"], "host");
      }
      out->findings.push_back(std::move(f));
    }
    return OkStatus();
  }
};

}  // namespace

const LogSource* NewK8sEventsSource() {
  static const K8sEventsSource source;
  return &source;
}

}  // namespace titan::diagnose
