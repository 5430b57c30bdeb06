#include "src/cluster/k8s/event_log.h"

#include <cerrno>

#include "src/base/clock.h"
#include "src/base/json_text.h"
#include "src/base/log.h"

namespace titan::k8s {

EventLog::~EventLog() {
  if (owned_ && file_ != nullptr) std::fclose(file_);
}

Status EventLog::Open(const std::string& path) {
  start_mono_ns_ = MonoNowNs();
  if (path == "-") {
    file_ = stdout;
    return OkStatus();
  }
  file_ = std::fopen(path.c_str(), "a");
  if (file_ == nullptr) return ErrnoError(errno, "opening event log " + path);
  owned_ = true;
  return OkStatus();
}

void EventLog::Write(const std::string& type, nlohmann::json fields) {
  nlohmann::json line = {{"time_ns", WallNowNs()},
                         {"t", static_cast<double>(MonoNowNs() - start_mono_ns_) / 1e9},
                         {"type", type}};
  std::string human = type;
  if (fields.is_object()) {
    for (auto& [key, value] : fields.items()) {
      human += " " + key + "=" + (value.is_string() ? value.get<std::string>() : JsonText(value));
      line[key] = std::move(value);
    }
  }
  bool bad = fields.contains("error");
  Log(bad ? LogLevel::kWarning : LogLevel::kInfo, "k8s", "{}", human);
  std::lock_guard<std::mutex> lock(mu_);
  if (file_ == nullptr) return;
  std::string text = JsonText(line) + "\n";
  std::fwrite(text.data(), 1, text.size(), file_);
  std::fflush(file_);
}

}  // namespace titan::k8s
