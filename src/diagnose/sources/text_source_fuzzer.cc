// Fuzzes the line-log reader (every line rule, their refiners and look-backs, time parsing)
// with small chunks and line limits, so that chunk seams, look-backs across them and cut lines
// are exercised; then builds incidents from what it found.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/base/check.h"
#include "src/diagnose/diagnose.h"
#include "src/diagnose/report.h"
#include "src/diagnose/testing/memfd.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace titan::diagnose;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  int fd = testing::MemoryFile(text);
  if (fd < 0) return 0;
  ReadLimits limits;
  limits.chunk_bytes = 512;
  limits.max_line_bytes = 300;
  limits.max_file_bytes = size > 4096 ? 2048 : limits.max_file_bytes;  // also the start+end path
  FileHead head{"fuzz.log", text.substr(0, kSniffBytes), static_cast<int64_t>(size)};
  SourceOutput out;
  out.file.path = "fuzz.log";
  const titan::Status s = NewTextSource()->Read(fd, head, limits, &out);
  ::close(fd);
  TITAN_CHECK(s.ok()) << s.ToString();
  for (const Finding& f : out.findings) {
    TITAN_CHECK(f.evidence.text.size() <= kMaxEvidenceBytes);
    TITAN_CHECK(f.evidence.line >= 0);
  }
  std::vector<SourceOutput> outputs;
  outputs.push_back(std::move(out));
  Diagnosis d = DiagnoseOutputs(std::move(outputs), {});
  (void)DiagnosisJson(d).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  (void)DiagnosisText(d);
  return 0;
}
