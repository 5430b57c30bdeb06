#include "src/collectors/psi_collector.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "src/base/clock.h"
#include "src/base/log.h"
#include "src/base/text.h"
#include "src/collectors/collector_support.h"

namespace titan {
namespace {

using collectors_internal::CounterDesc;
using collectors_internal::GaugeDesc;
using collectors_internal::MonotonicCounter;

constexpr std::string_view kResources[] = {"cpu", "memory", "io"};
constexpr std::string_view kKinds[2] = {"some", "full"};
constexpr long kProcSuperMagic = 0x9fa0;
constexpr double kRatioSlack = 0.05;
// A total= counts microseconds of a share of wall time: at most 1e6 per second, twice that for a
// reading taken late. A faster increase is a glitch: not exported, no ratio for the interval.
constexpr double kMaxStallUsPerSecond = 2e6;
constexpr int64_t kUnprivilegedWindowUs = 2'000'000;

struct Descs {
  SignalDesc stall_seconds =
      CounterDesc("titan_pressure_stall_seconds_total",
                  "Time some (or all, kind=full) non-idle tasks were stalled on the resource.",
                  {"resource", "kind"});
  SignalDesc stall_ratio =
      GaugeDesc("titan_pressure_stall_ratio", "Stalled share of the last sampling interval.",
                {"resource", "kind"}, RatioBuckets(), /*detect=*/true);
  SignalDesc avg10 = GaugeDesc("titan_pressure_avg10_ratio",
                               "The kernel's 10 s running average of the stalled share.",
                               {"resource", "kind"}, RatioBuckets());
  SignalDesc events =
      CounterDesc("titan_pressure_stall_events_total",
                  "PSI trigger notifications: the stall threshold was crossed.", {"resource"});
  SignalDesc trigger_active = GaugeDesc(
      "titan_pressure_trigger_active",
      "1 while a kernel PSI trigger is armed for the resource; 0: sampled only.", {"resource"}, {});
};

const Descs& D() {
  static const Descs* descs = new Descs();
  return *descs;
}

Status ParseLine(std::string_view rest, int line_number, PressureLine* out) {
  bool has_total = false;
  for (std::string_view field = NextField(&rest); !field.empty(); field = NextField(&rest)) {
    const size_t eq = field.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view key = field.substr(0, eq);
    const std::string_view value = field.substr(eq + 1);
    bool ok = true;
    if (key == "avg10") {
      ok = ParseDouble(value, &out->avg10);
    } else if (key == "avg60") {
      ok = ParseDouble(value, &out->avg60);
    } else if (key == "avg300") {
      ok = ParseDouble(value, &out->avg300);
    } else if (key == "total") {
      ok = ParseUint64(value, &out->total_us);
      has_total = ok;
    }
    if (!ok) {
      return InvalidArgumentError("pressure line " + std::to_string(line_number) + ": bad " +
                                  std::string(key) + " value '" + std::string(value) + "'");
    }
  }
  if (!has_total) {
    return InvalidArgumentError("pressure line " + std::to_string(line_number) + ": no total=");
  }
  return OkStatus();
}

}  // namespace

Status ParsePressure(std::string_view text, Pressure* out) {
  *out = Pressure{};
  int line_number = 0;
  while (!text.empty()) {
    std::string_view rest = NextLine(&text);
    ++line_number;
    const std::string_view kind = NextField(&rest);
    if (kind == "some") {
      TITAN_RETURN_IF_ERROR(ParseLine(rest, line_number, &out->some));
      out->has_some = true;
    } else if (kind == "full") {
      TITAN_RETURN_IF_ERROR(ParseLine(rest, line_number, &out->full));
      out->has_full = true;
    }
  }
  if (!out->has_some && !out->has_full) {
    return InvalidArgumentError("no 'some' or 'full' line; is this a /proc/pressure file?");
  }
  return OkStatus();
}

struct PsiCollector::Resource {
  std::string_view name;
  std::unique_ptr<FileReader> reader;
  Series* stall_seconds[2] = {};
  Series* stall_ratio[2] = {};
  Series* avg10[2] = {};
  MonotonicCounter totals[2];
  int64_t last_ns = 0;
  Series* events = nullptr;
  Series* trigger_active = nullptr;
  int trigger_fd = -1;
  std::atomic<bool> armed{false};
};

PsiCollector::PsiCollector(PsiCollectorOptions options) : options_(std::move(options)) {}

PsiCollector::~PsiCollector() {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    if (write(stop_fd_, &one, sizeof(one)) < 0) {
      Log(LogLevel::kError, "psi", "cannot wake the trigger thread: {}", strerror(errno));
    }
    thread_.join();
  }
  if (stop_fd_ >= 0) close(stop_fd_);
  for (auto& resource : resources_) {
    if (resource->trigger_fd >= 0) close(resource->trigger_fd);
  }
}

Status PsiCollector::Init(const CollectorContext& ctx) {
  ctx_ = ctx;
  std::string first_error;
  MetricRegistry& r = *ctx.registry;
  for (std::string_view name : kResources) {
    auto resource = std::make_unique<Resource>();
    resource->name = name;
    resource->reader =
        std::make_unique<FileReader>(ctx.env->ProcPath("pressure/" + std::string(name)));
    Result<std::string_view> text = resource->reader->Read();
    Status status = text.ok() ? ParsePressure(*text, &parsed_) : text.status();
    if (!status.ok()) {
      if (first_error.empty())
        first_error = status.WithContext(resource->reader->path()).ToString();
      continue;
    }
    for (int k = 0; k < 2; ++k) {
      if (k == 1 && !parsed_.has_full) continue;
      const LabelValues labels = {std::string(name), std::string(kKinds[k])};
      resource->stall_seconds[k] = r.GetOrCreate(D().stall_seconds, labels, ctx.interval_ns);
      resource->stall_ratio[k] = r.GetOrCreate(D().stall_ratio, labels, ctx.interval_ns);
      resource->avg10[k] = r.GetOrCreate(D().avg10, labels, ctx.interval_ns);
    }
    resource->events = r.GetOrCreate(D().events, {std::string(name)}, ctx.interval_ns);
    resource->trigger_active = r.GetOrCreate(D().trigger_active, {std::string(name)}, 0);
    resources_.push_back(std::move(resource));
  }
  if (resources_.empty()) {
    return FailedPreconditionError(
        "no readable pressure file (" + first_error +
        "); PSI needs Linux 4.20+ built with CONFIG_PSI=y and not booted with psi=0");
  }
  if (!options_.triggers) return OkStatus();
  std::string refused;
  for (auto& resource : resources_) {
    Status armed = ArmTrigger(*resource);
    if (!armed.ok()) refused += (refused.empty() ? "" : "; ") + armed.ToString();
  }
  if (!refused.empty()) {
    Log(LogLevel::kWarning, "psi",
        "PSI triggers not armed, stalls are only sampled every {} ms: {}", ctx.interval_ns / 1e6,
        refused);
  }
  if (active_triggers_.load() > 0) {
    stop_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (stop_fd_ < 0) return ErrnoError(errno, "creating the PSI trigger thread's eventfd");
    thread_ = std::thread([this] { TriggerLoop(); });
  }
  return OkStatus();
}

Status PsiCollector::ArmTrigger(Resource& resource) {
  const std::string& path = resource.reader->path();
  const int fd = open(path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return ErrnoError(errno, "opening " + path + " for writing a trigger");
  struct statfs fs;
  if (fstatfs(fd, &fs) != 0 || fs.f_type != kProcSuperMagic) {
    close(fd);  // never write a trigger into an ordinary file (a test fixture)
    return FailedPreconditionError(path + " is not on procfs");
  }
  auto arm = [&](int64_t threshold_us, int64_t window_us, std::string* trigger) {
    *trigger = options_.trigger_kind + " " + std::to_string(threshold_us) + " " +
               std::to_string(window_us);
    return write(fd, trigger->c_str(), trigger->size() + 1) < 0 ? errno : 0;
  };
  std::string trigger;
  int error = arm(options_.trigger_threshold_us, options_.trigger_window_us, &trigger);
  if (error == EINVAL && options_.trigger_window_us % kUnprivilegedWindowUs != 0) {
    // Without CAP_SYS_RESOURCE (Linux 6.5+) windows must be multiples of 2 s: keep the stalled
    // share of the window and retry with the next such window.
    const int64_t window_us =
        (options_.trigger_window_us / kUnprivilegedWindowUs + 1) * kUnprivilegedWindowUs;
    const int64_t threshold_us = options_.trigger_threshold_us * window_us /
                                 std::max<int64_t>(options_.trigger_window_us, 1);
    std::string retry;
    if (arm(threshold_us, window_us, &retry) == 0) {
      Log(LogLevel::kInfo, "psi",
          "PSI trigger '{}' refused without CAP_SYS_RESOURCE; armed '{}' on {} instead", trigger,
          retry, path);
      error = 0;
    }
  }
  if (error != 0) {
    close(fd);
    return ErrnoError(error, "writing trigger '" + trigger + "' to " + path);
  }
  resource.trigger_fd = fd;
  resource.armed.store(true);
  active_triggers_.fetch_add(1);
  return OkStatus();
}

void PsiCollector::TriggerLoop() {
  std::vector<pollfd> fds;
  std::vector<Resource*> owners;
  fds.push_back({stop_fd_, POLLIN, 0});
  owners.push_back(nullptr);
  for (auto& resource : resources_) {
    if (resource->trigger_fd < 0) continue;
    fds.push_back({resource->trigger_fd, POLLPRI, 0});
    owners.push_back(resource.get());
  }
  for (;;) {
    const int ready = poll(fds.data(), fds.size(), -1);
    if (ready < 0) {
      if (errno == EINTR) continue;
      Log(LogLevel::kError, "psi", "poll on PSI triggers failed: {}; triggers stop",
          strerror(errno));
      break;
    }
    if (fds[0].revents != 0) break;  // stop requested
    for (size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents & (POLLERR | POLLNVAL | POLLHUP)) {
        Log(LogLevel::kWarning, "psi", "PSI trigger on {} went away; sampling only",
            owners[i]->name);
        owners[i]->armed.store(false);
        active_triggers_.fetch_sub(1);
        fds[i].fd = -1;  // poll() ignores negative descriptors
      } else if (fds[i].revents & POLLPRI) {
        OnTrigger(*owners[i]);
      }
    }
  }
  for (size_t i = 1; i < fds.size(); ++i) {
    if (fds[i].fd >= 0 && owners[i]->armed.exchange(false)) active_triggers_.fetch_sub(1);
  }
}

void PsiCollector::OnTrigger(Resource& resource) {
  const int64_t now_ns = WallNowNs();
  if (resource.events != nullptr) resource.events->AddCounter(now_ns, 1);
  std::lock_guard<std::mutex> lock(events_mutex_);
  const StallEvent event{now_ns, resource.name};
  if (events_.size() < kMaxRecentEvents) {
    events_.push_back(event);
  } else {
    events_[events_next_] = event;
  }
  events_next_ = (events_next_ + 1) % kMaxRecentEvents;
}

std::vector<StallEvent> PsiCollector::RecentStallEvents(int64_t since_ns) const {
  std::vector<StallEvent> out;
  std::lock_guard<std::mutex> lock(events_mutex_);
  const size_t n = events_.size();
  const size_t oldest = n < kMaxRecentEvents ? 0 : events_next_;
  for (size_t i = 0; i < n; ++i) {
    const StallEvent& event = events_[(oldest + i) % n];
    if (event.time_ns >= since_ns) out.push_back(event);
  }
  return out;
}

Status PsiCollector::Collect(int64_t now_ns) {
  using collectors_internal::RecordGauge;
  for (auto& resource : resources_) {
    TITAN_RETURN_IF_ERROR(
        collectors_internal::ReadAndParse(*resource->reader, ParsePressure, &parsed_));
    const int64_t interval_ns = now_ns - resource->last_ns;
    for (int k = 0; k < 2; ++k) {
      if (resource->stall_seconds[k] == nullptr ||
          !(k == 0 ? parsed_.has_some : parsed_.has_full)) {
        continue;
      }
      const PressureLine& line = k == 0 ? parsed_.some : parsed_.full;
      const bool first = !resource->totals[k].seen;
      uint64_t delta_us = 0;
      const bool have_delta = collectors_internal::AdvanceOne(
          ctx_, name(), resource->reader->path(), kKinds[k], line.total_us, kMaxStallUsPerSecond,
          interval_ns, &resource->totals[k], &delta_us);
      collectors_internal::SetCounter(resource->stall_seconds[k], now_ns,
                                      resource->totals[k].total / 1e6);
      const double avg10 = line.avg10 / 100;
      if (collectors_internal::PlausibleRatio(avg10, 0)) {
        RecordGauge(resource->avg10[k], now_ns, avg10);
      } else {
        collectors_internal::ReportInvalid(ctx_, name(), "pressure avg10 outside 0..100");
      }
      if (first || !have_delta || interval_ns <= 0) continue;
      const double ratio = static_cast<double>(delta_us) * 1e3 / static_cast<double>(interval_ns);
      if (collectors_internal::PlausibleRatio(ratio, kRatioSlack)) {
        RecordGauge(resource->stall_ratio[k], now_ns, std::min(ratio, 1.0));
      } else {
        collectors_internal::ReportInvalid(ctx_, name(), "pressure stall ratio above 1");
      }
    }
    resource->last_ns = now_ns;
    RecordGauge(resource->trigger_active, now_ns, resource->armed.load() ? 1 : 0);
  }
  return OkStatus();
}

std::unique_ptr<Collector> MakePsiCollector() { return std::make_unique<PsiCollector>(); }

}  // namespace titan
