#include "src/cluster/k8s/event_log.h"

#include "src/base/clock.h"
#include "src/base/json_text.h"
#include "src/base/log.h"

namespace titan::k8s {

Status EventLog::Open(const std::string& path) {
  return log_.Open(path == "-" ? "/dev/stdout" : path, "controller", MonoNowNs());
}

void EventLog::Write(const std::string& type, nlohmann::json fields) {
  std::string human = type;
  if (fields.is_object()) {
    for (const auto& [key, value] : fields.items()) {
      human += " " + key + "=" + (value.is_string() ? value.get<std::string>() : JsonText(value));
    }
  }
  Log(fields.contains("error") ? LogLevel::kWarning : LogLevel::kInfo, "k8s", "{}", human);
  std::lock_guard<std::mutex> lock(mu_);
  log_.Write(type, std::move(fields));
}

}  // namespace titan::k8s
