#include "src/agent/recorder_dump.h"

#include <cmath>
#include <map>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "src/base/atomic_file.h"
#include "src/base/csv.h"

namespace titan {
namespace {

constexpr int kSignalsPid = 1;
constexpr int kRanksPid = 2;
constexpr int kTransientsPid = 3;

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

// Calls fn(key, points) for every series whose key contains request.match, with its recorded
// points in [from_ns, to_ns] (oldest first).
template <typename Fn>
void ForEachRecordedSeries(const MetricRegistry& registry, const DumpRequest& request, Fn fn) {
  std::vector<RecordedPoint> points;
  for (const Series* series : registry.AllSeries()) {
    const std::string key = series->Key();
    if (!request.match.empty() && key.find(request.match) == std::string::npos) continue;
    points.clear();
    series->RecorderRange(request.from_ns, request.to_ns, &points);
    fn(key, points);
  }
}

}  // namespace

void RenderPerfettoDump(const MetricRegistry& registry, const EventLog& log,
                        const DumpRequest& request, std::string* out) {
  out->append("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
  out->append(
      "\n{\"ph\":\"M\",\"pid\":1,\"tid\":0,\"name\":\"process_name\","
      "\"args\":{\"name\":\"titan agent: signals\"}}");
  AppendMetadata(kRanksPid, 0, "process_name", "training ranks", out);
  AppendMetadata(kTransientsPid, 0, "process_name", "titan transients", out);

  ForEachRecordedSeries(registry, request, [&](const std::string& key, const auto& points) {
    const std::string name = JsonString(key);
    for (const RecordedPoint& p : points) {
      fmt::format_to(std::back_inserter(*out),
                     ",\n{{\"ph\":\"C\",\"pid\":1,\"tid\":0,\"name\":{},\"ts\":{},"
                     "\"args\":{{\"value\":{}}}}}",
                     name, Micros(p.time_ns), FormatNumber(p.value));
    }
  });

  // Steps and checkpoints as slices per rank; marks as instants.
  std::map<int32_t, std::pair<int64_t, int64_t>> open_steps;        // rank -> (step, begin)
  std::map<int32_t, std::pair<int64_t, int64_t>> open_checkpoints;  // rank -> (step, begin)
  std::map<int32_t, bool> named;
  for (const AppEvent& e : log.AppEventsBetween(request.from_ns, request.to_ns)) {
    if (!named[e.rank]) {
      named[e.rank] = true;
      AppendMetadata(kRanksPid, e.rank, "thread_name", fmt::format("rank {}", e.rank), out);
    }
    switch (e.kind) {
      case wire::EventKind::kStepBegin:
        open_steps[e.rank] = {e.step, e.time_ns};
        break;
      case wire::EventKind::kStepEnd: {
        auto it = open_steps.find(e.rank);
        if (it != open_steps.end() && it->second.first == e.step) {
          AppendSlice(kRanksPid, e.rank, fmt::format("step {}", e.step), it->second.second,
                      e.time_ns, fmt::format("{{\"rank\":{},\"step\":{}}}", e.rank, e.step), out);
          open_steps.erase(it);
        }
        break;
      }
      case wire::EventKind::kCheckpointBegin:
        open_checkpoints[e.rank] = {e.step, e.time_ns};
        break;
      case wire::EventKind::kCheckpointEnd: {
        auto it = open_checkpoints.find(e.rank);
        if (it != open_checkpoints.end()) {
          AppendSlice(kRanksPid, e.rank, "checkpoint", it->second.second, e.time_ns,
                      fmt::format("{{\"step\":{},\"bytes\":{}}}", e.step, e.value), out);
          open_checkpoints.erase(it);
        }
        break;
      }
      case wire::EventKind::kMark:
        fmt::format_to(
            std::back_inserter(*out),
            ",\n{{\"ph\":\"i\",\"s\":\"t\",\"pid\":{},\"tid\":{},\"name\":{},\"ts\":{}}}",
            kRanksPid, e.rank,
            JsonString(std::string_view(e.name, strnlen(e.name, wire::kNameBytes))),
            Micros(e.time_ns));
        break;
      default:
        break;
    }
  }

  for (const TransientEvent& t : log.TransientsAfter(0, SIZE_MAX)) {
    const Detection& d = t.detection;
    if (d.end_ns < request.from_ns || d.start_ns > request.to_ns) continue;
    // A one-sample transient still gets a visible width (1 us).
    AppendSlice(kTransientsPid, 0, fmt::format("{} {}", t.signal, d.direction), d.start_ns,
                std::max(d.end_ns, d.start_ns + 1000), TransientToJson(t), out);
  }
  out->append("\n]}\n");
}

void RenderCsvDump(const MetricRegistry& registry, const DumpRequest& request, std::string* out) {
  out->append("time_ns,series,value\n");
  ForEachRecordedSeries(registry, request, [&](const std::string& key, const auto& points) {
    const std::string field = CsvField(key);  // keys hold commas and quotes
    for (const RecordedPoint& p : points) {
      fmt::format_to(std::back_inserter(*out), "{},{},{}\n", p.time_ns, field,
                     FormatNumber(p.value));
    }
  });
}

Status WritePerfettoDump(const MetricRegistry& registry, const EventLog& log,
                         const DumpRequest& request, const std::string& path) {
  std::string content;
  RenderPerfettoDump(registry, log, request, &content);
  return WriteFileAtomically(path, content);
}

}  // namespace titan
