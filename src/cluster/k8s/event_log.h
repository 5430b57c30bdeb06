// The controller's event log: one JSON object per line, in the shape of titan run's
// (src/supervisor/run_log.h): {"time_ns": <wall ns>, "t": <seconds since start>, "type": "...",
// ...fields}, flushed line by line; each event is also logged on stderr for people.
//
// Thread safety: Write may be called from any thread (lines never interleave).
#pragma once

#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "src/base/status.h"

namespace titan::k8s {

class EventLog {
 public:
  EventLog() = default;
  ~EventLog();
  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;

  // "-": standard output; otherwise appends to `path`.
  Status Open(const std::string& path);
  // `fields`: a JSON object (or null).
  void Write(const std::string& type, nlohmann::json fields);

 private:
  std::mutex mu_;
  FILE* file_ = nullptr;
  bool owned_ = false;
  int64_t start_mono_ns_ = 0;
};

}  // namespace titan::k8s
