#include "src/trace/importers/importer.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "src/trace/importers/event_batch.h"
#include "src/trace/importers/kineto/kineto_importer.h"
#include "src/trace/importers/legacy/legacy_importer.h"

namespace titan::trace {

const std::vector<const TraceImporter*>& Importers() {
  static const KinetoImporter kineto;
  static const LegacyAutogradImporter legacy;
  static const std::vector<const TraceImporter*> list = {&kineto, &legacy};
  return list;
}

namespace {

// From this fraction of malformed 'X' events on, the text report warns: the numbers built on
// them (idle time above all) are then not to be trusted.
constexpr double kMalformedWarnFraction = 0.01;

// "2 with a "ts" that is not a number of microseconds, 1 with ...": the skipped events by reason.
std::string MalformedReasons(const ImportStats& s) {
  std::string reasons;
  for (auto [count, field] : {std::pair{s.malformed_ph, internal::kMalformedPh},
                              std::pair{s.malformed_ts, internal::kMalformedTs},
                              std::pair{s.malformed_dur, internal::kMalformedDur}}) {
    if (count == 0) continue;
    if (!reasons.empty()) reasons += ", ";
    reasons += fmt::format("{} with {}", count, internal::MalformedFieldText(field));
  }
  return reasons;
}

// A trace whose events were all skipped as malformed (nothing kept to analyse) is unusable.
Status RefuseIfNothingUsable(const RankTrace& t, const FirstMalformedEvent& first) {
  const ImportStats& s = t.stats;
  if (s.malformed() == 0 || !t.ops.empty()) return OkStatus();
  return InvalidArgumentError(fmt::format(
      "{}: no usable trace events: {} of {} events are malformed ({}); the first, at byte {}, "
      "has {}",
      t.path, s.malformed(), s.events, MalformedReasons(s), first.offset,
      internal::MalformedFieldText(first.field)));
}

// Adds a warning naming the count when events were skipped as malformed (always), or when a
// meaningful fraction of the complete events is malformed (negative durations; ts, dur or name
// missing). Counts alone are in ImportStats.
void WarnAboutMalformedEvents(RankTrace* t, const FirstMalformedEvent& first) {
  const ImportStats& s = t->stats;
  if (s.malformed() > 0) {
    t->warnings.push_back(fmt::format(
        "{} of {} trace events are malformed and were skipped ({}; the first at byte {}): the "
        "numbers below may be off",
        s.malformed(), s.events, MalformedReasons(s), first.offset));
  }
  const uint64_t seen = s.complete_events + s.missing_fields;
  auto meaningful = [&](uint64_t n) {
    return n > 0 && static_cast<double>(n) >= kMalformedWarnFraction * static_cast<double>(seen);
  };
  if (meaningful(s.negative_durations)) {
    t->warnings.push_back(fmt::format(
        "{} of {} complete ('X') events have a negative duration: the trace is malformed and "
        "the time split below is not to be trusted",
        s.negative_durations, s.complete_events));
  }
  if (meaningful(s.missing_fields)) {
    t->warnings.push_back(fmt::format(
        "{} complete ('X') events lack ts, dur or name (those without ts or dur are dropped; {} "
        "kept): the trace is malformed and the time split below is not to be trusted",
        s.missing_fields, s.complete_events));
  }
}

// A batch parsed on a worker thread, waiting to be appended to the trace.
struct ParsedBatch {
  RankTrace trace;
  FirstMalformedEvent first_malformed;
};

// One pass over the document. `*seam_cut_used` says whether a failure may be the cut's.
Result<RankTrace> ImportOnce(ByteSource* source, const std::string& name,
                             const ImportOptions& import_options, bool* seam_cut_used) {
  RankTrace trace;
  trace.path = name;
  const TraceImporter* importer = nullptr;
  EventParseOptions options;
  FirstMalformedEvent first_malformed;
  JsonStream stream(
      source, name,
      {import_options.parse_threads, import_options.seam_cut, import_options.batch_bytes});
  // Declared before the handler: the stream's workers write to them until Run returns.
  std::vector<ParsedBatch> batches(stream.batch_slots() > 1 ? stream.batch_slots() : 0);
  JsonStream::Handler handler;
  handler.on_top_level = [&](TopLevel top) -> Status {
    for (const TraceImporter* candidate : Importers()) {
      if (candidate->Accepts(top)) {
        importer = candidate;
        options = candidate->event_options();
        return OkStatus();
      }
    }
    return InvalidArgumentError(fmt::format("{}: no importer reads this document", name));
  };
  handler.on_member = [&](std::string_view key, simdjson::dom::element value,
                          const OffsetMap& offsets) -> Status {
    return importer->OnMember(key, value, offsets, &trace);
  };
  // One slot: parsed straight into the trace. Several: each into its own, appended in order.
  handler.on_batch = [&](const char* json, size_t len, size_t capacity, int64_t doc_offset,
                         size_t slot) -> Status {
    if (batches.empty()) {
      return ParseEventBatch(json, len, capacity, options, doc_offset, &trace, &first_malformed);
    }
    ParsedBatch& b = batches[slot];
    return ParseEventBatch(json, len, capacity, options, doc_offset, &b.trace, &b.first_malformed);
  };
  handler.on_batch_merge = [&](size_t slot) -> Status {
    if (batches.empty()) return OkStatus();
    ParsedBatch& b = batches[slot];
    if (first_malformed.offset < 0) first_malformed = b.first_malformed;
    b.first_malformed = FirstMalformedEvent{};
    AppendParsedBatch(&b.trace, &trace);
    return OkStatus();
  };
  TopLevel top;
  bool saw_events = false;
  Status run = stream.Run(handler, &top, &saw_events);
  *seam_cut_used = stream.seam_cut_used();
  TITAN_RETURN_IF_ERROR(run);
  trace.input_bytes = stream.bytes_read();
  trace.import_threads = 1 + (stream.used_workers() ? import_options.parse_threads : 0);
  TITAN_RETURN_IF_ERROR(RefuseIfNothingUsable(trace, first_malformed));
  TITAN_RETURN_IF_ERROR(importer->Finish(saw_events, &trace));
  WarnAboutMalformedEvents(&trace, first_malformed);
  return trace;
}

}  // namespace

SourceOpener MemoryOpener(std::string_view data, std::string name) {
  return [data, name = std::move(name)]() -> Result<std::unique_ptr<ByteSource>> {
    return MemorySource(data, name);
  };
}

Result<RankTrace> ImportTrace(const SourceOpener& open, const std::string& name,
                              const ImportOptions& options) {
  TITAN_ASSIGN_OR_RETURN(std::unique_ptr<ByteSource> source, open());
  bool seam_cut_used = false;
  Result<RankTrace> trace = ImportOnce(source.get(), name, options, &seam_cut_used);
  if (trace.ok() || !seam_cut_used) return trace;
  // A seam may have fallen inside an event: only exact cuts can tell a bad file from a bad cut.
  source.reset();
  TITAN_ASSIGN_OR_RETURN(source, open());
  ImportOptions exact = options;
  exact.seam_cut = false;
  trace = ImportOnce(source.get(), name, exact, &seam_cut_used);
  if (trace.ok()) trace->import_read_twice = true;
  return trace;
}

int64_t RankFromFileName(std::string_view path) {
  size_t slash = path.rfind('/');
  std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  auto lower = [&](size_t i) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(base[i])));
  };
  auto digit = [&](size_t i) {
    return i < base.size() && std::isdigit(static_cast<unsigned char>(base[i]));
  };
  int64_t rank = -1;
  for (size_t at = 0; at + 4 <= base.size(); ++at) {
    if (lower(at) != 'r' || lower(at + 1) != 'a' || lower(at + 2) != 'n' || lower(at + 3) != 'k')
      continue;
    if (at > 0 && std::isalpha(static_cast<unsigned char>(base[at - 1]))) continue;
    size_t i = at + 4;
    if (i < base.size() && (base[i] == '_' || base[i] == '-')) ++i;
    if (!digit(i)) continue;
    int64_t v = 0;
    for (; digit(i); ++i)
      v = std::min<int64_t>(v * 10 + (base[i] - '0'), 1'000'000'000'000'000'000);
    rank = v;
  }
  return rank;
}

Result<RankTrace> ImportTraceFile(const std::string& path, const RankRule& rule,
                                  const ImportOptions& options) {
  TITAN_ASSIGN_OR_RETURN(RankTrace trace,
                         ImportTrace([&] { return OpenTraceFile(path); }, path, options));
  if (rule.forced >= 0) {
    if (!trace.rank_problem.empty()) {
      trace.warnings.push_back(
          fmt::format("{}; rank {} used as --rank says", trace.rank_problem, rule.forced));
    } else if (trace.rank >= 0 && trace.rank != rule.forced) {
      trace.warnings.push_back(fmt::format(
          "distributedInfo.rank is {}; rank {} used as --rank says", trace.rank, rule.forced));
    }
    trace.rank = rule.forced;
    trace.rank_source = "--rank";
    return trace;
  }
  if (!trace.rank_problem.empty()) {
    return InvalidArgumentError(fmt::format(
        "{}: {}; fix the trace (or, for a single file, pass --rank N)", path, trace.rank_problem));
  }
  if (trace.rank >= 0) return trace;
  if (rule.single_file) {
    trace.rank = 0;  // HTA's choice for a lone trace without distributedInfo
    trace.rank_source = "single file";
    return trace;
  }
  int64_t rank = RankFromFileName(path);
  if (rank < 0) {
    return InvalidArgumentError(fmt::format(
        "{}: cannot tell which rank this trace is: it has no distributedInfo.rank and its file "
        "name has no rank token; rename it (e.g. rank3.json, rank_3.json) or export it with "
        "torch.distributed initialised",
        path));
  }
  if (rank > kMaxRank) {
    return InvalidArgumentError(
        fmt::format("{}: rank {} in the file name is out of range (0..{}); rename the file", path,
                    rank, kMaxRank));
  }
  trace.rank = static_cast<int>(rank);
  trace.rank_source = "file name";
  trace.warnings.push_back(
      fmt::format("no distributedInfo in the trace; rank {} taken from the file name", rank));
  return trace;
}

}  // namespace titan::trace
