// Fuzzes the document sources: the first byte picks one (Flight Recorder JSON, NCCL RAS text, NCCL
// RAS JSON, Kubernetes events, titan's event log, titan diagnose summaries), the rest is the
// document; whatever it reads goes through the incident builder.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/diagnose/diagnose.h"
#include "src/diagnose/report.h"
#include "src/diagnose/sources/source.h"
#include "src/diagnose/testing/memfd.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace titan::diagnose;
  if (size == 0) return 0;
  const LogSource* sources[] = {NewFlightRecorderSource(), NewRasTextSource(),
                                NewRasJsonSource(),        NewK8sEventsSource(),
                                NewTitanEventsSource(),    NewTitanSummarySource()};
  const LogSource* source = sources[data[0] % std::size(sources)];
  const std::string_view doc(reinterpret_cast<const char*>(data) + 1, size - 1);
  int fd = testing::MemoryFile(doc);
  if (fd < 0) return 0;
  FileHead head{"doc_rank_1.json", doc.substr(0, kSniffBytes), static_cast<int64_t>(doc.size())};
  SourceOutput out;
  out.file.path = "doc_rank_1.json";
  (void)source->Sniff(head);
  (void)source->Read(fd, head, ReadLimits{}, &out);
  ::close(fd);
  std::vector<SourceOutput> outputs;
  outputs.push_back(std::move(out));
  Diagnosis d = DiagnoseOutputs(std::move(outputs), {});
  (void)DiagnosisJson(d).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return 0;
}
