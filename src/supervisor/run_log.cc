#include "src/supervisor/run_log.h"

#include <cerrno>

#include "src/base/clock.h"
#include "src/base/json_text.h"

namespace titan::supervisor {

namespace {
constexpr size_t kRecentMax = 2000;
}

RunLog::~RunLog() {
  if (file_ != nullptr) std::fclose(file_);
}

Status RunLog::Open(const std::string& path, std::string node, int64_t start_mono_ns) {
  node_ = std::move(node);
  start_mono_ns_ = start_mono_ns;
  path_ = path;
  if (path.empty()) return OkStatus();
  file_ = std::fopen(path.c_str(), "ae");
  if (file_ == nullptr) {
    return ErrnoError(errno, "opening the event log " + path + " (check --event-log)");
  }
  return OkStatus();
}

void RunLog::Write(const std::string& type, nlohmann::json fields) {
  nlohmann::json line = nlohmann::json::object();
  line["time_ns"] = WallNowNs();
  line["t"] = static_cast<double>(MonoNowNs() - start_mono_ns_) / 1e9;
  line["node"] = node_;
  line["type"] = type;
  if (fields.is_object()) {
    for (auto& [k, v] : fields.items()) line[k] = std::move(v);
  }
  if (file_ != nullptr) {
    std::string text = JsonText(line);
    text += '\n';
    errno = 0;
    bool written = std::fwrite(text.data(), 1, text.size(), file_) == text.size();
    written = std::fflush(file_) == 0 && written;
    if (!written) {
      ++lines_lost_;
      if (write_error_.ok()) {
        write_error_ = ErrnoError(errno != 0 ? errno : EIO, "writing the event log " + path_);
      }
      std::clearerr(file_);
    }
  }
  recent_.push_back(std::move(line));
  if (recent_.size() > kRecentMax) recent_.pop_front();
}

}  // namespace titan::supervisor
