// Log sources: one reader per log format, behind one interface, in one explicit list
// (registry.cc), as trace importers are. A reader says how sure it is that a file is its format
// from the file's first bytes (never its name), then reads the file into findings and the facts
// that tie findings together (which rank is which GPU or process).
//
//   text        line logs of any origin: worker output, kernel logs (dmesg, journalctl -k), NCCL
//               debug output, Slurm and kubectl output (one reader: real logs interleave them;
//               the rule table names each line's family and the file's kind follows)
//   nccl_ras    NCCL RAS status output, text and `ncclras -f json`
//   flight_recorder  PyTorch NCCL Flight Recorder dumps, pickle (read safely) and JSON
//   k8s_events  `kubectl get events -o json`
//   titan_events     titan run's event log (events.jsonl)
//   titan_summary    `titan diagnose --summarize` output
//
// Thread safety: readers are stateless and shared; Read() may run on many threads at once.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/base/status.h"
#include "src/diagnose/types.h"

namespace titan::diagnose {

// Limits that keep a diagnosis bounded in memory and time whatever the input.
struct ReadLimits {
  // Per file: at most this many bytes are analysed; a larger file is read from its start and its
  // end (half each), and the middle is skipped and reported.
  int64_t max_file_bytes = int64_t{1} << 30;
  // Read buffer of the text reader.
  size_t chunk_bytes = 4 << 20;
  // A longer line is analysed up to here; the rest of it is skipped (and counted).
  size_t max_line_bytes = 1 << 20;
  // Findings kept per file (the first ones: later repeats of a flood add nothing).
  size_t max_findings_per_file = 20'000;
  // Structured documents (JSON, pickle) are parsed whole, up to this size.
  int64_t max_document_bytes = int64_t{256} << 20;
};

// One file as the diagnosis read it.
struct FileReport {
  std::string path;
  std::string kind = "unknown";  // the reader's kind, or "unknown" (read, not understood)
  int64_t bytes = 0;             // the file's size
  int64_t bytes_read = 0;
  int64_t lines = 0;  // lines analysed (text)
  int64_t findings = 0;
  int64_t findings_dropped = 0;    // beyond max_findings_per_file
  std::vector<std::string> notes;  // what was skipped or could not be read, and why
  std::string error;               // the file could not be read at all
};

// Host + PCI address -> rank, from NCCL's init lines or titan's records.
struct RankGpu {
  std::string node;
  std::string gpu;  // normal form
  int64_t rank = -1;
};
// Process id -> rank (titan's spawn events, torchrun's summaries).
struct PidRank {
  std::string node;  // "" when unknown
  int64_t pid = -1;
  int64_t rank = -1;
};

// One rank's Flight Recorder dump, reduced to what the cross-rank analysis needs.
struct FlightRecord {
  struct Entry {
    int64_t record_id = -1;
    std::string pg;       // process group name ("0")
    std::string pg_desc;  // "default_pg"
    int64_t seq = -1;     // collective_seq_id (or p2p_seq_id for p2p)
    bool p2p = false;
    std::string op;     // profiling_name, "nccl:all_reduce"
    std::string sizes;  // input_sizes as text, "[[3, 4]]"
    std::string dtypes;
    std::string state;  // scheduled | started | completed
    int64_t time_created_ns = 0;
    std::string frame;  // the innermost user frame, "train.py:44 in step"
  };
  std::string file;
  int64_t rank = -1;
  std::string version;
  // Process group name -> ranks (pg_config), as written ("[0, 1]").
  std::vector<std::pair<std::string, std::vector<int64_t>>> groups;
  std::vector<Entry> entries;
  int64_t entries_total = 0;  // before the per-dump cap
};

struct SourceOutput {
  FileReport file;
  std::vector<Finding> findings;
  std::vector<RankGpu> rank_gpus;
  std::vector<PidRank> pid_ranks;
  std::vector<FlightRecord> flight_records;
  // A summary (titan diagnose --summarize) stands for the files it summarised.
  std::vector<SourceOutput> summarized;
};

// The first bytes of a file, for sniffing.
struct FileHead {
  std::string_view path;
  std::string_view bytes;  // at most kSniffBytes
  int64_t size = 0;
};
inline constexpr size_t kSniffBytes = 64 * 1024;

class LogSource {
 public:
  virtual ~LogSource() = default;
  virtual std::string_view name() const = 0;
  // 0: not this format; higher: surer (the registry picks the highest).
  virtual int Sniff(const FileHead& head) const = 0;
  // Reads the open regular file `fd` (owned by the caller) of `head.size` bytes.
  virtual Status Read(int fd, const FileHead& head, const ReadLimits& limits,
                      SourceOutput* out) const = 0;
};

// The registered sources, in the order ties are broken.
const std::vector<const LogSource*>& LogSources();

// Reads a whole small file (at most `max_bytes`) from `fd` with pread; the document readers'
// helper. OUT_OF_RANGE names the limit when the file is larger.
Result<std::string> ReadWhole(int fd, int64_t size, int64_t max_bytes, std::string_view path);

// A document reader's start: reads the whole file (ReadWhole with limits.max_document_bytes),
// counts it as read and sets the file's kind.
Result<std::string> ReadDocument(int fd, const FileHead& head, const ReadLimits& limits,
                                 std::string_view kind, SourceOutput* out);

// Parses `data` as JSON after the nesting check; INVALID_ARGUMENT naming `path` and `what` (the
// format expected) when it is not JSON.
Result<nlohmann::json> ParseJsonDocument(std::string_view data, std::string_view path,
                                         std::string_view what);

// Whether `bytes` look like text: no NUL, and mostly printable or UTF-8.
bool LooksLikeText(std::string_view bytes);

// The number of '\n' in [p, p + n).
int64_t CountNewlines(const char* p, size_t n);

// NCCL's busId ("1b000": domain, bus, device, function as hex digits, no separators) in PCI
// normal form ("0000:1b:00.0"); "" if it is not one.
std::string BusIdToPci(std::string_view bus_id);

// The findings of text in memory, read line by line as the text reader reads a file (for
// readers that render records as lines, such as Kubernetes events); evidence names `file` and
// the line within `text`.
std::vector<Finding> FindingsOfText(std::string_view text, const std::string& file);

// The sources (registry.cc lists them).
const LogSource* NewTextSource();
const LogSource* NewRasTextSource();
const LogSource* NewRasJsonSource();
const LogSource* NewFlightRecorderSource();
const LogSource* NewK8sEventsSource();
const LogSource* NewTitanEventsSource();
const LogSource* NewTitanSummarySource();

}  // namespace titan::diagnose
