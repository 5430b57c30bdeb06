#include "src/trace/importers/kineto/kineto_importer.h"

#include <fmt/format.h>

namespace titan::trace {
namespace {

// Timestamps above this many microseconds (2001-09-09) are taken as wall-clock epoch times.
constexpr int64_t kEpochThresholdNs = int64_t{1'000'000'000} * 1'000'000'000;

}  // namespace

Status KinetoImporter::OnMember(std::string_view key, simdjson::dom::element value,
                                const OffsetMap& offsets, RankTrace* out) const {
  if (key == "distributedInfo") {
    simdjson::dom::object info;
    if (value.get_object().get(info)) {
      out->warnings.push_back("distributedInfo is not an object; ignored");
      return OkStatus();
    }
    // null counts as absent; anything else must be a rank (ImportTraceFile refuses others).
    simdjson::dom::element rank;
    if (!info["rank"].get(rank) && !rank.is_null()) {
      int64_t r = -1;
      bool integer = !rank.get_int64().get(r);
      if (!integer && rank.is_uint64()) r = INT64_MAX;  // above INT64_MAX: out of range below
      if (r < 0 || r > kMaxRank) {
        out->rank_problem =
            fmt::format("distributedInfo.rank {} is {}", simdjson::minify(rank),
                        r > kMaxRank ? fmt::format("out of range (0..{})", kMaxRank)
                                     : std::string("invalid: expected an integer from 0"));
        return OkStatus();
      }
      out->rank = static_cast<int>(r);
      out->rank_source = "distributedInfo";
    }
    int64_t i;
    std::string_view s;
    if (!info["world_size"].get_int64().get(i)) {
      if (i >= 1 && i <= kMaxWorldSize) {
        out->world_size = static_cast<int>(i);
      } else {
        out->warnings.push_back(fmt::format(
            "distributedInfo.world_size {} is impossible (expected 1..{}); taken as unknown", i,
            kMaxWorldSize));
      }
    }
    if (!info["backend"].get_string().get(s)) out->backend = std::string(s);
  } else if (key == "deviceProperties") {
    simdjson::dom::array devices;
    if (value.get_array().get(devices)) return OkStatus();
    for (simdjson::dom::element device : devices) {
      std::string_view name;
      if (!device["name"].get_string().get(name)) out->device_name = std::string(name);
      break;
    }
  } else if (key == "baseTimeNanoseconds") {
    int64_t base;  // past kMaxTraceTimeNs it is not a clock: the trace is read without one
    if (!value.get_int64().get(base) && IsTraceTime(base)) {
      out->epoch_offset_ns = base;
      out->wall_clock = true;
    }
  }
  return OkStatus();
}

Status KinetoImporter::Finish(bool saw_events, RankTrace* out) const {
  out->format = TraceFormat::kKineto;
  if (!saw_events) {
    return InvalidArgumentError(fmt::format(
        "{}: not a PyTorch profiler trace: the JSON object has no \"traceEvents\" array; pass "
        "the file written by torch.profiler (export_chrome_trace or tensorboard_trace_handler)",
        out->path));
  }
  if (!out->wall_clock && !out->ops.empty() && out->ops.front().ts_ns > kEpochThresholdNs) {
    out->wall_clock = true;  // epoch microseconds
  }
  if (out->ops.empty()) {
    out->warnings.push_back("the trace has no complete ('X') events");
  }
  return OkStatus();
}

}  // namespace titan::trace
