// Flight-recorder dumps: an interval of every recorded signal, the training processes' steps and
// checkpoints, and the detected transients, as
//  - Chrome/Perfetto trace JSON (opens in ui.perfetto.dev next to a PyTorch profiler trace; the
//    format `titan trace merge` reads):
//      pid 1 "titan agent: signals"  counter events  {"ph":"C","name":<series key>,
//                                                     "ts":<us since epoch>,"args":{"value":v}}
//      pid 2 "training ranks"        tid = rank: "step N" / "checkpoint" slices, marks as instants
//      pid 3 "titan transients"      one slice per transient, args carry the summary
//    Timestamps are wall-clock microseconds since the Unix epoch with nanosecond decimals, the
//    clock PyTorch's profiler uses for `ts` when baseTimeNanoseconds is absent.
//  - CSV: `time_ns,series,value`, one row per recorded point.
//
// A dump renders to about 3x the recorder's bytes (a 16 MB recorder to ~50 MB of JSON), so the
// agent's /recorder streams it from a DumpRenderer piece by piece instead of building one string.
//
// Thread safety: reads the registry and event log under their locks, one piece at a time;
// callable from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "src/agent/event_log.h"
#include "src/metrics/registry.h"

namespace titan {

struct DumpRequest {
  int64_t from_ns = 0;
  int64_t to_ns = 0;
  std::string match;  // only series whose key contains this (empty: all)
};

enum class DumpFormat { kPerfetto, kCsv };

// Renders one dump in pieces of about `chunk_bytes`, so that memory stays at one piece plus one
// series' points in the interval, whatever the dump's size. Each piece takes the registry's or
// the event log's locks only while it copies what it renders. The series are those that exist at
// construction; points recorded while a dump is rendered may or may not be in it.
//
// Thread safety: one thread at a time (it may move between threads between calls); `registry`
// and `log` must outlive it. `log` may be null for kCsv (CSV has only the signals).
class DumpRenderer {
 public:
  DumpRenderer(const MetricRegistry& registry, const EventLog* log, DumpRequest request,
               DumpFormat format);
  // Appends the next piece (about chunk_bytes; more when one record is longer) to *out.
  // Returns false, appending nothing, once the whole dump has been rendered.
  bool Next(size_t chunk_bytes, std::string* out);

 private:
  enum class Phase { kHead, kSeries, kAppEvents, kTransients, kTail, kDone };
  // Each renders records until out->size() reaches `limit`; false when none is left.
  bool SeriesPiece(size_t limit, std::string* out);
  bool AppEventPiece(size_t limit, std::string* out);
  bool TransientPiece(size_t limit, std::string* out);
  void AppendAppEvent(const AppEvent& event, std::string* out);

  const MetricRegistry& registry_;
  const EventLog* log_;
  const DumpRequest request_;
  const DumpFormat format_;
  Phase phase_ = Phase::kHead;

  std::vector<Series*> series_;
  size_t next_series_ = 0;
  std::string series_name_;  // the current series' key, quoted for the format
  std::vector<RecordedPoint> points_;
  size_t next_point_ = 0;

  uint64_t app_cursor_ = 0;  // EventLog::AppEventsPage's cursor
  bool app_events_left_ = true;
  std::vector<AppEvent> app_page_;
  size_t next_app_event_ = 0;
  std::map<int32_t, std::pair<int64_t, int64_t>> open_steps_;        // rank -> (step, begin)
  std::map<int32_t, std::pair<int64_t, int64_t>> open_checkpoints_;  // rank -> (step, begin)
  std::map<int32_t, bool> named_ranks_;

  std::vector<TransientEvent> transient_page_;
  size_t next_transient_ = 0;
  bool transients_done_ = false;
};

// The whole dump in one string, for small intervals and tests.
void RenderPerfettoDump(const MetricRegistry& registry, const EventLog& log,
                        const DumpRequest& request, std::string* out);
void RenderCsvDump(const MetricRegistry& registry, const DumpRequest& request, std::string* out);

// Writes a Perfetto dump to `path` atomically (tmp + rename). Errors name the path.
Status WritePerfettoDump(const MetricRegistry& registry, const EventLog& log,
                         const DumpRequest& request, const std::string& path);

}  // namespace titan
