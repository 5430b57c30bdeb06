// Importers: one per trace format, behind one interface, in one explicit list (Perfetto style).
//
//   importers/kineto/  Kineto JSON written by torch.profiler (traceEvents + distributedInfo, ...)
//   importers/legacy/  the autograd profiler's bare event array (CPU only; torch <= 1.13 builds
//                      without Kineto, such as Debian's python3-torch)
//
// ImportTraceFile() streams one file (plain or gzip) through the importer that recognises its
// shape and returns a RankTrace with its rank resolved: distributedInfo.rank, else a number in
// the file name (with a warning), else an error naming the file.
// Thread safety: importers are stateless; ImportTraceFile may run on many threads at once.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <simdjson.h>

#include "src/base/status.h"
#include "src/trace/importers/byte_source.h"
#include "src/trace/importers/chrome_event.h"
#include "src/trace/importers/json_stream.h"
#include "src/trace/model.h"

namespace titan::trace {

class TraceImporter {
 public:
  virtual ~TraceImporter() = default;
  virtual std::string_view name() const = 0;
  // Whether this importer reads documents of this shape.
  virtual bool Accepts(TopLevel top_level) const = 0;
  virtual EventParseOptions event_options() const = 0;
  // A top-level member other than traceEvents. Unknown members are ignored.
  virtual Status OnMember(std::string_view key, simdjson::dom::element value,
                          const OffsetMap& offsets, RankTrace* out) const {
    return OkStatus();
  }
  // After the whole document: format-specific checks and fix-ups.
  virtual Status Finish(bool saw_events, RankTrace* out) const = 0;
};

// The registered importers, in detection order.
const std::vector<const TraceImporter*>& Importers();

// Streams `source` (named `name` in messages) into a RankTrace; the rank is not resolved.
Result<RankTrace> ImportTrace(ByteSource* source, const std::string& name);

// Opens, imports and resolves the rank of one trace file.
Result<RankTrace> ImportTraceFile(const std::string& path);

// The rank in a file name such as "rank3.json", "trace_rank-12.json.gz", "worker_3.pt.trace.json"
// (the last number of the base name when no "rank" appears); -1 if there is none.
int RankFromFileName(std::string_view path);

}  // namespace titan::trace
