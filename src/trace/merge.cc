#include "src/trace/merge.h"

#include <cstdio>
#include <filesystem>
#include <memory>
#include <vector>

#include <fmt/format.h>
#include <simdjson.h>

#include "src/base/atomic_file.h"
#include "src/trace/importers/byte_source.h"
#include "src/trace/importers/importer.h"
#include "src/trace/importers/json_stream.h"

namespace titan::trace {
namespace {

class Writer {
 public:
  explicit Writer(FILE* f) : f_(f) {}
  void Event(const std::string& json) {
    std::fputs(first_ ? "\n" : ",\n", f_);
    std::fputs(json.c_str(), f_);
    first_ = false;
  }

 private:
  FILE* f_;
  bool first_ = true;
};

std::string Micros(int64_t ns) {
  int64_t whole = ns / 1000, frac = ns % 1000;
  if (frac < 0) {
    frac += 1000;
    whole -= 1;
  }
  return frac == 0 ? fmt::format("{}", whole) : fmt::format("{}.{:03d}", whole, frac);
}

// A "ts" in nanoseconds; false (the event keeps its ts as written) for anything but a number
// of microseconds within kMaxTraceTimeNs, which the importers count as malformed.
bool TsNanos(simdjson::dom::element value, int64_t* ns) {
  double d;
  int64_t i;
  if (!value.get_int64().get(i)) {
    return !__builtin_mul_overflow(i, int64_t{1000}, ns) && IsTraceTime(*ns);
  }
  return !value.get_double().get(d) && MicrosToNanos(d, ns);
}

// Re-emits one event with `pid` rewritten and `ts` moved by `offset_ns`.
std::string Rewrite(simdjson::dom::object event, const std::string& pid_prefix, int64_t offset_ns,
                    bool rewrite) {
  std::string out = "{";
  bool first = true;
  for (auto [key, value] : event) {
    if (!first) out += ',';
    first = false;
    out += '"';
    out += key;
    out += "\":";
    int64_t ns = 0;
    if (rewrite && key == "ts" && TsNanos(value, &ns)) {
      out += Micros(ns + offset_ns);  // both within kMaxTraceTimeNs: no overflow
    } else if (rewrite && key == "pid") {
      std::string pid = simdjson::minify(value);
      if (!pid.empty() && pid.front() == '"') pid = pid.substr(1, pid.size() - 2);
      out += '"' + pid_prefix + pid + '"';
    } else {
      out += simdjson::minify(value);
    }
  }
  return out + "}";
}

Status StreamEvents(
    const std::string& path, const std::function<Status(simdjson::dom::object)>& on_event,
    const std::function<void(std::string_view, simdjson::dom::element)>& on_member) {
  TITAN_ASSIGN_OR_RETURN(std::unique_ptr<ByteSource> source, OpenTraceFile(path));
  JsonStream stream(source.get(), path);
  JsonStream::Handler h;
  h.on_event = [&](simdjson::dom::object e, const OffsetMap&) { return on_event(e); };
  h.on_member = [&](std::string_view key, simdjson::dom::element v, const OffsetMap&) {
    on_member(key, v);
    return OkStatus();
  };
  TopLevel top;
  bool saw = false;
  TITAN_RETURN_IF_ERROR(stream.Run(h, &top, &saw));
  if (!saw) return InvalidArgumentError(fmt::format("{}: no traceEvents array", path));
  return OkStatus();
}

}  // namespace

Result<MergeStats> MergeTelemetry(const std::vector<std::string>& trace_files,
                                  const std::string& agent_dump, const std::string& out_path) {
  MergeStats stats;
  // The output is written to a temporary file and renamed at the end: an output that names an
  // input would otherwise be truncated before it is read, and a failed merge would leave a
  // partial file over a good one.
  std::vector<std::string> inputs = trace_files;
  if (!agent_dump.empty()) inputs.push_back(agent_dump);
  TITAN_RETURN_IF_ERROR(RefuseOutputThatIsAnInput(out_path, inputs, "-o"));
  AtomicFileWriter out;
  TITAN_RETURN_IF_ERROR(out.Open(out_path));
  FILE* f = out.file();
  std::fputs("{\"displayTimeUnit\": \"ms\", \"traceEvents\": [", f);
  Writer w(f);
  for (const std::string& path : trace_files) {
    // First pass: rank and clock (small: metadata only is kept).
    TITAN_ASSIGN_OR_RETURN(RankTrace meta,
                           ImportTraceFile(path, RankRule{.single_file = trace_files.size() == 1},
                                           ImportOptions{.parse_threads = 2}));
    if (!meta.wall_clock) {
      stats.warnings.push_back(fmt::format(
          "{}: the trace has no wall clock (legacy profiler); its events keep their own "
          "timeline and will not line up with the agent's counters",
          path));
    }
    int64_t offset_ns = meta.epoch_offset_ns;
    std::string prefix = fmt::format("rank {}: ", meta.rank);
    meta = RankTrace();  // free the events
    TITAN_RETURN_IF_ERROR(StreamEvents(
        path,
        [&](simdjson::dom::object e) {
          w.Event(Rewrite(e, prefix, offset_ns, true));
          stats.rank_events++;
          return OkStatus();
        },
        [](std::string_view, simdjson::dom::element) {}));
  }
  if (!agent_dump.empty()) {
    // A counter whose ts is not a time (1e300, -9e18) would be drawn as data: left out, counted.
    uint64_t bad_ts = 0;
    TITAN_RETURN_IF_ERROR(StreamEvents(
        agent_dump,
        [&](simdjson::dom::object e) {
          simdjson::dom::element ts;
          int64_t ns;
          if (!e["ts"].get(ts) && !TsNanos(ts, &ns)) {
            ++bad_ts;
            return OkStatus();
          }
          w.Event(Rewrite(e, "", 0, false));
          stats.agent_events++;
          return OkStatus();
        },
        [](std::string_view, simdjson::dom::element) {}));
    if (bad_ts > 0) {
      stats.warnings.push_back(fmt::format(
          "{}: {} agent events with a \"ts\" that is not a number of microseconds within "
          "+-2^62 ns were left out",
          agent_dump, bad_ts));
    }
  }
  std::fputs("\n]}\n", f);
  TITAN_RETURN_IF_ERROR(out.Commit());
  return stats;
}

}  // namespace titan::trace
