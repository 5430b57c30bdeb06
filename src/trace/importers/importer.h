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

#include <functional>
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

// How one import runs.
struct ImportOptions {
  // Threads parsing events beside the calling thread, which reads (inflates) and cuts the
  // document into batches: 0 for everything on the calling thread (many files, one per core),
  // up to the cores for a file analysed alone (or fewer files than cores). The same result.
  int parse_threads = 0;
  // Cut batches at seams without scanning the structure between them (json_stream.h); a seam
  // that turns out not to lie between two events makes the import read the document again with
  // exact cuts (RankTrace::import_read_twice), and so does a malformed document before its
  // error is returned. Off: exact cuts only (tests compare the two).
  bool seam_cut = true;
  size_t batch_bytes = JsonStreamOptions::kBatchBytes;  // tests and fuzzers make it small
};

// Opens the document afresh (an import may read it twice).
using SourceOpener = std::function<Result<std::unique_ptr<ByteSource>>()>;

// An opener over bytes in memory (tests and fuzzers); `data` must outlive the import.
SourceOpener MemoryOpener(std::string_view data, std::string name);

// Streams the document that `open` gives (named `name` in messages) into a RankTrace; the rank
// is not resolved.
Result<RankTrace> ImportTrace(const SourceOpener& open, const std::string& name,
                              const ImportOptions& options = {});

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
                                  const ImportOptions& options = {});

// The rank an explicit rank token in the base name gives: "rank3.json", "rank_3.pt.trace.json",
// "host_rank-12.json.gz" (case-insensitive; "rank" not preceded by a letter, then at most one of
// '_' '-', then digits). The last such token counts; other digits ("ROCm6_2", pids, timestamps)
// never do. -1 if there is none; values above INT32_MAX are returned as they are (saturating at
// 10^18) for the caller to refuse.
int64_t RankFromFileName(std::string_view path);

}  // namespace titan::trace
