// Importers: one per trace format, behind one interface, in one explicit list (Perfetto style).
//
//   importers/kineto/  Kineto JSON written by torch.profiler (traceEvents + distributedInfo, ...)
//   importers/legacy/  the autograd profiler's bare event array (CPU only; torch <= 1.13 builds
//                      without Kineto, such as Debian's python3-torch)
//
// ImportTraceFile() streams one file (plain or gzip) through the importer that recognises its
// shape and returns a RankTrace with its rank resolved by a RankRule.
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

// How many threads one import may use.
enum class ImportThreads {
  kOne,  // everything on the calling thread
  kTwo,  // events parsed on a second thread while the calling thread reads (inflates) and
         // scans on: for a file analysed alone, or fewer files than cores. The same result.
         // (A third thread inflating gzip ahead was measured slower on 2 cores: 0.071 ->
         // 0.083 s for a 54 MB rank; the copy out of its chunks costs what it saves.)
};

// Streams `source` (named `name` in messages) into a RankTrace; the rank is not resolved.
Result<RankTrace> ImportTrace(ByteSource* source, const std::string& name,
                              ImportThreads threads = ImportThreads::kOne);

// How ImportTraceFile decides which rank a trace is.
struct RankRule {
  // >= 0: this rank, whatever the trace says (`titan trace analyze --rank N`; a warning says so
  // when distributedInfo.rank differs).
  int forced = -1;
  // The file is the only one analysed: without distributedInfo.rank it is rank 0, as HTA takes
  // it. Otherwise (several files) a rank token in the file name is used (with a warning), else
  // the file is refused.
  bool single_file = false;
};

// Opens, imports and resolves the rank of one trace file. A distributedInfo.rank that is not an
// integer in 0..2^31-1, or such a number in the file name, is an error naming the value.
Result<RankTrace> ImportTraceFile(const std::string& path, const RankRule& rule = {},
                                  ImportThreads threads = ImportThreads::kOne);

// The rank an explicit rank token in the base name gives: "rank3.json", "rank_3.pt.trace.json",
// "host_rank-12.json.gz" (case-insensitive; "rank" not preceded by a letter, then at most one of
// '_' '-', then digits). The last such token counts; other digits ("ROCm6_2", pids, timestamps)
// never do. -1 if there is none; values above INT32_MAX are returned as they are (saturating at
// 10^18) for the caller to refuse.
int64_t RankFromFileName(std::string_view path);

}  // namespace titan::trace
