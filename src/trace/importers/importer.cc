#include "src/trace/importers/importer.h"

#include <cctype>

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

Result<RankTrace> ImportTrace(ByteSource* source, const std::string& name) {
  RankTrace trace;
  trace.path = name;
  const TraceImporter* importer = nullptr;
  EventParseOptions options;
  JsonStream stream(source, name);
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
  handler.on_batch = [&](const char* json, size_t len, size_t capacity,
                         int64_t doc_offset) -> Status {
    return ParseEventBatch(json, len, capacity, options, doc_offset, &trace);
  };
  TopLevel top;
  bool saw_events = false;
  TITAN_RETURN_IF_ERROR(stream.Run(handler, &top, &saw_events));
  trace.input_bytes = stream.bytes_read();
  TITAN_RETURN_IF_ERROR(importer->Finish(saw_events, &trace));
  return trace;
}

int RankFromFileName(std::string_view path) {
  size_t slash = path.rfind('/');
  std::string base(slash == std::string_view::npos ? path : path.substr(slash + 1));
  std::string lower = base;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto number_at = [&](size_t i) -> int {
    while (i < lower.size() && !std::isdigit(static_cast<unsigned char>(lower[i]))) {
      if (std::isalpha(static_cast<unsigned char>(lower[i]))) return -1;
      ++i;
    }
    if (i >= lower.size()) return -1;
    long v = 0;
    while (i < lower.size() && std::isdigit(static_cast<unsigned char>(lower[i])) && v < 1000000) {
      v = v * 10 + (lower[i++] - '0');
    }
    return static_cast<int>(v);
  };
  size_t at = lower.rfind("rank");
  if (at != std::string::npos) {
    int r = number_at(at + 4);
    if (r >= 0) return r;
  }
  // Fall back to the last number before the extension(s).
  size_t dot = lower.find('.');
  std::string stem = lower.substr(0, dot);
  int last = -1;
  for (size_t i = 0; i < stem.size();) {
    if (std::isdigit(static_cast<unsigned char>(stem[i]))) {
      long v = 0;
      while (i < stem.size() && std::isdigit(static_cast<unsigned char>(stem[i])) && v < 1000000) {
        v = v * 10 + (stem[i++] - '0');
      }
      while (i < stem.size() && std::isdigit(static_cast<unsigned char>(stem[i]))) ++i;
      last = static_cast<int>(v);
    } else {
      ++i;
    }
  }
  return last;
}

Result<RankTrace> ImportTraceFile(const std::string& path) {
  TITAN_ASSIGN_OR_RETURN(std::unique_ptr<ByteSource> source, OpenTraceFile(path));
  TITAN_ASSIGN_OR_RETURN(RankTrace trace, ImportTrace(source.get(), path));
  if (trace.rank < 0) {
    int rank = RankFromFileName(path);
    if (rank < 0) {
      return InvalidArgumentError(fmt::format(
          "{}: cannot tell which rank this trace is: it has no distributedInfo.rank and its file "
          "name has no number; rename it (e.g. rank3.json) or export it with "
          "torch.distributed initialised",
          path));
    }
    trace.rank = rank;
    trace.rank_source = "file name";
    trace.warnings.push_back(
        fmt::format("no distributedInfo in the trace; rank {} taken from the file name", rank));
  }
  return trace;
}

}  // namespace titan::trace
