#include "src/supervisor/failure_evidence.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "src/base/clock.h"
#include "src/diagnose/diagnose.h"
#include "src/diagnose/log_time.h"
#include "src/diagnose/report.h"

namespace titan::supervisor {
namespace {

constexpr const char* kDumpPrefix = "nccl_trace_rank_";
constexpr const char* kPipePrefix = "pipe_rank_";

bool Has(const std::vector<std::string>& env, std::string_view key) {
  for (const std::string& e : env) {
    if (e.size() > key.size() && e.compare(0, key.size(), key) == 0 && e[key.size()] == '=') {
      return true;
    }
  }
  return false;
}

int64_t FileSize(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : -1;
}

}  // namespace

std::vector<std::string> FlightRecorderEnv(const std::vector<std::string>& env,
                                           const std::string& dir) {
  std::vector<std::string> add;
  auto set = [&](const char* key, const std::string& value) {
    if (!Has(env, key)) add.push_back(fmt::format("{}={}", key, value));
  };
  // Both the TORCH_NCCL_ names and the TORCH_FR_ names newer PyTorch reads.
  if (!Has(env, "TORCH_NCCL_TRACE_BUFFER_SIZE") && !Has(env, "TORCH_FR_BUFFER_SIZE")) {
    add.push_back("TORCH_NCCL_TRACE_BUFFER_SIZE=2000");
    add.push_back("TORCH_FR_BUFFER_SIZE=2000");
  }
  set("TORCH_NCCL_DUMP_ON_TIMEOUT", "1");
  if (!Has(env, "TORCH_NCCL_DEBUG_INFO_TEMP_FILE") && !Has(env, "TORCH_FR_DUMP_TEMP_FILE")) {
    add.push_back(fmt::format("TORCH_NCCL_DEBUG_INFO_TEMP_FILE={}/{}", dir, kDumpPrefix));
    add.push_back(fmt::format("TORCH_FR_DUMP_TEMP_FILE={}/{}", dir, kDumpPrefix));
  }
  set("TORCH_NCCL_DEBUG_INFO_PIPE_FILE", fmt::format("{}/{}", dir, kPipePrefix));
  return add;
}

DumpRequest RequestFlightRecorderDumps(const std::string& dir, const std::vector<int>& ranks,
                                       int64_t wait_ns) {
  DumpRequest r;
  const int64_t t0 = MonoNowNs();
  for (int rank : ranks) {
    // ProcessGroupNCCL makes "<prefix><rank>.pipe" and dumps when anything is written to it.
    const std::string pipe = fmt::format("{}/{}{}.pipe", dir, kPipePrefix, rank);
    const int fd = ::open(pipe.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) continue;  // no pipe (buffer off, not NCCL), or nobody reading it (ENXIO)
    r.pipes += ::write(fd, "1\n", 2) == 2;
    ::close(fd);
  }
  auto dumps = [&] {
    int n = 0;
    int64_t bytes = 0;
    for (int rank : ranks) {
      const int64_t size = FileSize(fmt::format("{}/{}{}", dir, kDumpPrefix, rank));
      if (size > 0) {
        ++n;
        bytes += size;
      }
    }
    return std::pair{n, bytes};
  };
  if (r.pipes > 0) {
    int64_t last_bytes = -1;
    int stable = 0;
    while (MonoNowNs() - t0 < wait_ns) {
      ::usleep(100'000);
      auto [n, bytes] = dumps();
      stable = bytes == last_bytes ? stable + 1 : 0;
      last_bytes = bytes;
      if (n >= r.pipes && stable >= 3) break;
    }
  }
  r.dumps = dumps().first;
  r.waited_s = NsToSeconds(MonoNowNs() - t0);
  return r;
}

Result<int> CaptureKernelLog(const std::string& path, int64_t since_wall_ns, size_t max_bytes) {
  const int fd = ::open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return ErrnoError(errno, "reading the kernel log (/dev/kmsg)");
  // /dev/kmsg stamps records with the monotonic clock in microseconds.
  timespec mono{};
  ::clock_gettime(CLOCK_MONOTONIC, &mono);
  const int64_t wall_minus_mono = WallNowNs() - (mono.tv_sec * kNsPerSecond + mono.tv_nsec);
  std::string out;
  int lines = 0;
  char record[8192];
  while (out.size() < max_bytes) {
    const ssize_t n = ::read(fd, record, sizeof(record) - 1);
    if (n < 0 && errno == EPIPE) continue;  // records overwritten while reading: go on
    if (n <= 0) break;                      // EAGAIN: the end
    record[n] = '\0';
    // "PRI,SEQ,USEC,FLAGS;message\n continuation..."
    char* semi = std::strchr(record, ';');
    if (semi == nullptr) continue;
    int64_t usec = 0;
    if (std::sscanf(record, "%*[^,],%*[^,],%ld", &usec) != 1) continue;
    const int64_t wall = wall_minus_mono + usec * kNsPerUs;
    if (wall < since_wall_ns) continue;
    std::string_view msg(semi + 1);
    msg = msg.substr(0, msg.find('\n'));
    out += fmt::format("{} {}\n", diagnose::FormatLogTime({diagnose::ClockKind::kWall, wall}), msg);
    ++lines;
  }
  ::close(fd);
  if (out.empty()) return 0;
  FILE* f = std::fopen(path.c_str(), "ae");
  if (f == nullptr) return ErrnoError(errno, "writing " + path);
  const bool ok = std::fwrite(out.data(), 1, out.size(), f) == out.size();
  std::fclose(f);
  if (!ok) return ErrnoError(EIO, "writing " + path);
  return lines;
}

FailureFacts DiagnoseFailure(const std::vector<std::string>& files, int64_t since_wall_ns,
                             const std::string& kind, int64_t step,
                             const std::string& host_kernel_log,
                             const std::vector<int64_t>& worker_pids,
                             nlohmann::json* incident_json) {
  FailureFacts facts;
  facts.kind = kind;
  facts.step = step;
  *incident_json = nullptr;
  diagnose::ReadLimits limits;
  limits.max_file_bytes = int64_t{256} << 20;
  std::vector<diagnose::SourceOutput> outputs;
  for (const std::string& f : files) {
    outputs.push_back(diagnose::ReadLogFile(f, limits));
    diagnose::SourceOutput& o = outputs.back();
    // The host's kernel log: lines about other processes are not this job's.
    if (!host_kernel_log.empty() && f == host_kernel_log) {
      std::erase_if(o.findings, [&](const diagnose::Finding& finding) {
        return finding.pid >= 0 &&
               std::find(worker_pids.begin(), worker_pids.end(), finding.pid) == worker_pids.end();
      });
    }
    // The event log holds every generation: this failure is this generation's.
    if (o.file.kind == "titan_events") {
      std::erase_if(o.findings, [&](const diagnose::Finding& f) {
        return f.evidence.time.kind == diagnose::ClockKind::kWall &&
               f.evidence.time.ns < since_wall_ns;
      });
    }
  }
  diagnose::Diagnosis diagnosis = diagnose::DiagnoseOutputs(std::move(outputs), {});
  const auto* d = &diagnosis;
  // Incidents that ended before this generation (old kernel lines) are not this failure.
  const diagnose::Incident* found = nullptr;
  for (const diagnose::Incident& inc : d->incidents) {
    const diagnose::LogTime& t =
        inc.last.kind != diagnose::ClockKind::kNone ? inc.last : inc.root.evidence.time;
    const bool timed = t.kind == diagnose::ClockKind::kWall;
    if (timed && t.ns < since_wall_ns - 60 * kNsPerSecond) continue;
    found = &inc;
    break;
  }
  if (found == nullptr) return facts;
  facts.diagnosed = true;
  facts.fault = found->fault;
  facts.action = found->action;
  facts.confidence = found->confidence;
  facts.culprit = found->culprit;
  facts.root_text = found->root.evidence.text;
  facts.advice = found->root.detail;
  facts.signature = FailureSignature(found->root.rule, found->root.evidence.text);
  *incident_json = diagnose::IncidentJson(*found);
  return facts;
}

}  // namespace titan::supervisor
