// The controller's event log: titan run's RunLog (src/supervisor/run_log.h, one JSON object
// per line, node "controller"), made safe to write from any thread, and each event also logged
// on stderr for people.
//
// Thread safety: Write may be called from any thread (lines never interleave).
#pragma once

#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "src/base/status.h"
#include "src/supervisor/run_log.h"

namespace titan::k8s {

class EventLog {
 public:
  // "-": standard output; otherwise appends to `path`.
  Status Open(const std::string& path);
  // `fields`: a JSON object (or null).
  void Write(const std::string& type, nlohmann::json fields);

 private:
  std::mutex mu_;
  supervisor::RunLog log_;
};

}  // namespace titan::k8s
