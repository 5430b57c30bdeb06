// Fuzzes the restricted pickle reader and the Flight Recorder reader over what it builds: any
// byte string must give a tree or an error, never a crash, unbounded memory or time (shared and
// self-containing values included).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/diagnose/flight_recorder.h"
#include "src/diagnose/sources/plain_pickle.h"
#include "src/diagnose/sources/source.h"
#include "src/diagnose/testing/memfd.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace titan::diagnose;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto tree = ReadPlainPickle(bytes, "fuzz.pkl", 100'000);
  if (tree.ok()) (void)tree->ToJson(tree->root(), 32);
  // The same bytes as a rank's dump ("...rank_3"), as the Flight Recorder source reads them.
  int fd = testing::MemoryFile(bytes);
  if (fd < 0) return 0;
  FileHead head{"nccl_trace_rank_3", bytes.substr(0, kSniffBytes), static_cast<int64_t>(size)};
  SourceOutput out;
  (void)NewFlightRecorderSource()->Read(fd, head, ReadLimits{}, &out);
  ::close(fd);
  (void)AnalyzeFlightRecords(out.flight_records);
  return 0;
}
