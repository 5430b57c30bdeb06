#include "src/agent/recorder_dump.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "src/base/atomic_file.h"
#include "src/base/check.h"
#include "src/base/csv.h"

namespace titan {
namespace {

constexpr int kSignalsPid = 1;
constexpr int kRanksPid = 2;
constexpr int kTransientsPid = 3;
// App-event ring entries scanned, and transients copied, per page: each page holds the event
// log's lock for one such copy.
constexpr size_t kAppEventsPerPage = 4096;
constexpr size_t kTransientsPerPage = 256;

// Microseconds with nanosecond decimals, exact (no double rounding in the text).
std::string Micros(int64_t ns) {
  const bool negative = ns < 0;
  const uint64_t a = negative ? static_cast<uint64_t>(-ns) : static_cast<uint64_t>(ns);
  return fmt::format("{}{}.{:03d}", negative ? "-" : "", a / 1000, static_cast<int>(a % 1000));
}

std::string JsonString(std::string_view s) { return nlohmann::json(std::string(s)).dump(); }

std::string FormatNumber(double v) { return std::isfinite(v) ? fmt::format("{}", v) : "null"; }

void AppendMetadata(int pid, int tid, std::string_view what, std::string_view name,
                    std::string* out) {
  fmt::format_to(
      std::back_inserter(*out),
      ",\n{{\"ph\":\"M\",\"pid\":{},\"tid\":{},\"name\":\"{}\",\"args\":{{\"name\":{}}}}}", pid,
      tid, what, JsonString(name));
}

void AppendSlice(int pid, int64_t tid, std::string_view name, int64_t start_ns, int64_t end_ns,
                 const std::string& args_json, std::string* out) {
  fmt::format_to(std::back_inserter(*out),
                 ",\n{{\"ph\":\"X\",\"pid\":{},\"tid\":{},\"name\":{},\"ts\":{},\"dur\":{},"
                 "\"args\":{}}}",
                 pid, tid, JsonString(name), Micros(start_ns), Micros(end_ns - start_ns),
                 args_json);
}

}  // namespace

DumpRenderer::DumpRenderer(const MetricRegistry& registry, const EventLog* log, DumpRequest request,
                           DumpFormat format)
    : registry_(registry), log_(log), request_(std::move(request)), format_(format) {
  TITAN_CHECK(log_ != nullptr || format_ == DumpFormat::kCsv) << "a Perfetto dump needs the log";
}

bool DumpRenderer::Next(size_t chunk_bytes, std::string* out) {
  const size_t before = out->size();
  const size_t limit = before + std::clamp<size_t>(chunk_bytes, 1, SIZE_MAX - before);
  const bool perfetto = format_ == DumpFormat::kPerfetto;
  while (phase_ != Phase::kDone && out->size() < limit) {
    switch (phase_) {
      case Phase::kHead:
        if (perfetto) {
          out->append("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
          out->append(
              "\n{\"ph\":\"M\",\"pid\":1,\"tid\":0,\"name\":\"process_name\","
              "\"args\":{\"name\":\"titan agent: signals\"}}");
          AppendMetadata(kRanksPid, 0, "process_name", "training ranks", out);
          AppendMetadata(kTransientsPid, 0, "process_name", "titan transients", out);
        } else {
          out->append("time_ns,series,value\n");
        }
        series_ = registry_.AllSeries();
        phase_ = Phase::kSeries;
        break;
      case Phase::kSeries:
        if (!SeriesPiece(limit, out)) phase_ = perfetto ? Phase::kAppEvents : Phase::kTail;
        break;
      case Phase::kAppEvents:
        if (!AppEventPiece(limit, out)) phase_ = Phase::kTransients;
        break;
      case Phase::kTransients:
        if (!TransientPiece(limit, out)) phase_ = Phase::kTail;
        break;
      case Phase::kTail:
        if (perfetto) out->append("\n]}\n");
        phase_ = Phase::kDone;
        break;
      case Phase::kDone:
        break;
    }
  }
  return out->size() > before;
}

bool DumpRenderer::SeriesPiece(size_t limit, std::string* out) {
  while (next_point_ >= points_.size()) {  // the current series is used up: load the next one
    if (next_series_ >= series_.size()) {
      points_ = {};
      return false;
    }
    const Series* series = series_[next_series_++];
    const std::string key = series->Key();
    points_.clear();
    next_point_ = 0;
    if (!request_.match.empty() && key.find(request_.match) == std::string::npos) continue;
    series->RecorderRange(request_.from_ns, request_.to_ns, &points_);
    // Keys hold commas and quotes.
    series_name_ = format_ == DumpFormat::kPerfetto ? JsonString(key) : CsvField(key);
  }
  for (; next_point_ < points_.size() && out->size() < limit; ++next_point_) {
    const RecordedPoint& p = points_[next_point_];
    if (format_ == DumpFormat::kPerfetto) {
      fmt::format_to(std::back_inserter(*out),
                     ",\n{{\"ph\":\"C\",\"pid\":{},\"tid\":0,\"name\":{},\"ts\":{},"
                     "\"args\":{{\"value\":{}}}}}",
                     kSignalsPid, series_name_, Micros(p.time_ns), FormatNumber(p.value));
    } else {
      fmt::format_to(std::back_inserter(*out), "{},{},{}\n", p.time_ns, series_name_,
                     FormatNumber(p.value));
    }
  }
  return true;
}

// Steps and checkpoints as slices per rank; marks as instants.
bool DumpRenderer::AppEventPiece(size_t limit, std::string* out) {
  while (next_app_event_ >= app_page_.size()) {  // the page is used up: copy the next one
    if (!app_events_left_) return false;
    app_page_.clear();
    next_app_event_ = 0;
    app_events_left_ = log_->AppEventsPage(request_.from_ns, request_.to_ns, &app_cursor_,
                                           kAppEventsPerPage, &app_page_);
  }
  for (; next_app_event_ < app_page_.size() && out->size() < limit; ++next_app_event_) {
    AppendAppEvent(app_page_[next_app_event_], out);
  }
  return true;
}

void DumpRenderer::AppendAppEvent(const AppEvent& e, std::string* out) {
  if (!named_ranks_[e.rank]) {
    named_ranks_[e.rank] = true;
    AppendMetadata(kRanksPid, e.rank, "thread_name", fmt::format("rank {}", e.rank), out);
  }
  switch (e.kind) {
    case wire::EventKind::kStepBegin:
      open_steps_[e.rank] = {e.step, e.time_ns};
      break;
    case wire::EventKind::kStepEnd: {
      auto it = open_steps_.find(e.rank);
      if (it != open_steps_.end() && it->second.first == e.step) {
        AppendSlice(kRanksPid, e.rank, fmt::format("step {}", e.step), it->second.second, e.time_ns,
                    fmt::format("{{\"rank\":{},\"step\":{}}}", e.rank, e.step), out);
        open_steps_.erase(it);
      }
      break;
    }
    case wire::EventKind::kCheckpointBegin:
      open_checkpoints_[e.rank] = {e.step, e.time_ns};
      break;
    case wire::EventKind::kCheckpointEnd: {
      auto it = open_checkpoints_.find(e.rank);
      if (it != open_checkpoints_.end()) {
        AppendSlice(kRanksPid, e.rank, "checkpoint", it->second.second, e.time_ns,
                    fmt::format("{{\"step\":{},\"bytes\":{}}}", e.step, e.value), out);
        open_checkpoints_.erase(it);
      }
      break;
    }
    case wire::EventKind::kMark:
      fmt::format_to(std::back_inserter(*out),
                     ",\n{{\"ph\":\"i\",\"s\":\"t\",\"pid\":{},\"tid\":{},\"name\":{},\"ts\":{}}}",
                     kRanksPid, e.rank,
                     JsonString(std::string_view(e.name, strnlen(e.name, wire::kNameBytes))),
                     Micros(e.time_ns));
      break;
    default:
      break;
  }
}

bool DumpRenderer::TransientPiece(size_t limit, std::string* out) {
  if (next_transient_ >= transient_page_.size()) {  // the page is used up: copy the next one
    if (transients_done_) return false;
    const uint64_t after = transient_page_.empty() ? 0 : transient_page_.back().id;
    transient_page_ = log_->TransientsAfter(after, kTransientsPerPage);
    next_transient_ = 0;
    if (transient_page_.empty()) {
      transients_done_ = true;
      return false;
    }
  }
  for (; next_transient_ < transient_page_.size() && out->size() < limit; ++next_transient_) {
    const TransientEvent& t = transient_page_[next_transient_];
    const Detection& d = t.detection;
    if (d.end_ns < request_.from_ns || d.start_ns > request_.to_ns) continue;
    // A one-sample transient still gets a visible width (1 us).
    AppendSlice(kTransientsPid, 0, fmt::format("{} {}", t.signal, d.direction), d.start_ns,
                std::max(d.end_ns, d.start_ns + 1000), TransientToJson(t), out);
  }
  return true;
}

void RenderPerfettoDump(const MetricRegistry& registry, const EventLog& log,
                        const DumpRequest& request, std::string* out) {
  DumpRenderer renderer(registry, &log, request, DumpFormat::kPerfetto);
  while (renderer.Next(SIZE_MAX, out)) {
  }
}

void RenderCsvDump(const MetricRegistry& registry, const DumpRequest& request, std::string* out) {
  DumpRenderer renderer(registry, nullptr, request, DumpFormat::kCsv);
  while (renderer.Next(SIZE_MAX, out)) {
  }
}

Status WritePerfettoDump(const MetricRegistry& registry, const EventLog& log,
                         const DumpRequest& request, const std::string& path) {
  std::string content;
  RenderPerfettoDump(registry, log, request, &content);
  return WriteFileAtomically(path, content);
}

}  // namespace titan
