#include "src/trace/importers/importer.h"

#include <sys/stat.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "src/trace/importers/event_batch.h"
#include "src/trace/testing/synthetic.h"
#include "src/trace/testing/temp_dir.h"

namespace titan::trace {
namespace {

std::string Gzip(std::string_view data) {
  z_stream zs{};
  deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&zs, data.size()), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

Result<RankTrace> FromMemory(const std::string& data, const std::string& name = "mem.json",
                             const ImportOptions& options = {}) {
  return ImportTrace(MemoryOpener(data, name), name, options);
}

// More than 8 MiB of events (several buffer refills and batches) whose names and args hold
// JSON-like text and escapes, pretty-printed or on one line.
std::string LargeKinetoDoc(bool pretty, int n) {
  std::string events;
  for (int i = 0; i < n; ++i) {
    if (i) events += pretty ? ",\n  " : ",";
    events += fmt::format(
        R"({{"ph": "X", "cat": "cpu_op", "name": "op \"{}\" }}, {{ [x] \\", "pid": 1, "tid": 2, "ts": {}.5, "dur": 3, "args": {{"note": "a,b}}]{{", "nested": [[1, 2], {{"k": "v"}}]}}}})",
        i, 1000 + i);
  }
  return R"({"traceEvents": [)" + events + R"(], "distributedInfo": {"rank": 5}})";
}

using testing::TempDir;

TEST(MicrosToNanos, RecoversTheDecimalKinetoWrote) {
  int64_t ns = 0;
  ASSERT_TRUE(MicrosToNanos(4458676522690.655, &ns));
  EXPECT_EQ(ns, 4458676522690655);
  ASSERT_TRUE(MicrosToNanos(156.777, &ns));
  EXPECT_EQ(ns, 156777);
  ASSERT_TRUE(MicrosToNanos(0.001, &ns));
  EXPECT_EQ(ns, 1);
  bool is_float = false;
  ASSERT_TRUE(internal::ParseMicrosToken("1682725898236567", &ns, &is_float));
  EXPECT_EQ(ns, 1682725898236567000);
  EXPECT_FALSE(is_float);
  ASSERT_TRUE(internal::ParseMicrosToken("68.0", &ns, &is_float));
  EXPECT_EQ(ns, 68000);
  EXPECT_TRUE(is_float);
  ASSERT_TRUE(internal::ParseMicrosToken("-1.5", &ns, &is_float));
  EXPECT_EQ(ns, -1500);
  EXPECT_FALSE(internal::ParseMicrosToken("12abc", &ns, &is_float));
}

TEST(KinetoImporter, ReadsEventsMetadataAndCollectives) {
  testing::SyntheticOptions o;
  o.rank = 3;
  o.steps = 2;
  Result<RankTrace> t = FromMemory(testing::KinetoTrace(o));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->rank, 3);
  EXPECT_EQ(t->rank_source, "distributedInfo");
  EXPECT_EQ(t->world_size, 4);
  EXPECT_TRUE(t->wall_clock);
  EXPECT_EQ(t->format, TraceFormat::kKineto);
  EXPECT_EQ(t->ops.size(), 2u * 7);     // 7 complete events per step
  EXPECT_EQ(t->stats.flow_events, 2u);  // one ac2g per step
  EXPECT_FALSE(t->hta_float_ts);
  int kernels = 0;
  for (const Op& op : t->ops) {
    if (op.kind != EventKind::kKernel) continue;
    ++kernels;
    EXPECT_EQ(op.stream, 7);
    EXPECT_GT(op.correlation, 1000);
  }
  EXPECT_EQ(kernels, 4);
  ASSERT_FALSE(t->collectives.empty());
  EXPECT_EQ(t->strings.Get(t->collectives.back().collective_name), "allreduce");
  EXPECT_EQ(t->collectives.back().in_nelems, 1048576);
}

TEST(KinetoImporter, LargeTracesCrossBatchAndBufferBoundaries) {
  for (bool pretty : {false, true}) {
    const int n = 60000;
    std::string doc = LargeKinetoDoc(pretty, n);
    ASSERT_GT(doc.size(), 8u << 20);
    for (bool gz : {false, true}) {
      Result<RankTrace> t = FromMemory(gz ? Gzip(doc) : doc);
      ASSERT_TRUE(t.ok()) << t.status().ToString();
      EXPECT_EQ(t->ops.size(), static_cast<size_t>(n));
      EXPECT_EQ(t->rank, 5);
      EXPECT_TRUE(t->hta_float_ts);
      EXPECT_EQ(t->ops[n - 1].ts_ns, (1000 + n - 1) * 1000 + 500);
      EXPECT_EQ(t->Name(t->ops[7]), "op \"7\" }, { [x] \\");
      EXPECT_EQ(t->input_bytes, doc.size());
      EXPECT_EQ(t->import_threads, 1);
    }
  }
}

// Everything an importer fills in, for comparing two imports of one document.
void ExpectSameTrace(const RankTrace& a, const RankTrace& b) {
  ASSERT_EQ(a.ops.size(), b.ops.size());
  for (size_t i = 0; i < a.ops.size(); ++i) {
    ASSERT_EQ(a.ops[i].ts_ns, b.ops[i].ts_ns) << i;
    ASSERT_EQ(a.ops[i].dur_ns, b.ops[i].dur_ns) << i;
    ASSERT_EQ(a.ops[i].kind, b.ops[i].kind) << i;
    ASSERT_EQ(a.ops[i].correlation, b.ops[i].correlation) << i;
    ASSERT_EQ(a.ops[i].stream, b.ops[i].stream) << i;
    ASSERT_EQ(a.ops[i].collective, b.ops[i].collective) << i;
    ASSERT_EQ(a.Name(a.ops[i]), b.Name(b.ops[i])) << i;
  }
  EXPECT_EQ(a.collectives.size(), b.collectives.size());
  EXPECT_EQ(a.rank, b.rank);
  EXPECT_EQ(a.world_size, b.world_size);
  EXPECT_EQ(a.input_bytes, b.input_bytes);
  EXPECT_EQ(a.stats.events, b.stats.events);
  EXPECT_EQ(a.stats.complete_events, b.stats.complete_events);
  EXPECT_EQ(a.stats.malformed(), b.stats.malformed());
  EXPECT_EQ(a.hta_float_ts, b.hta_float_ts);
  EXPECT_EQ(a.hta_dur_float, b.hta_dur_float);
  EXPECT_EQ(a.first_op_is_first_event, b.first_op_is_first_event);
  EXPECT_EQ(a.warnings, b.warnings);
}

TEST(KinetoImporter, TwoThreadsImportWhatOneDoes) {
  testing::SyntheticOptions o;
  o.steps = 400;
  o.rank = 2;
  // 32000 events: 5 MiB, past the importer's 4 MiB first buffer and across five 1 MiB batches
  // (and small enough that the sanitizer builds run this in seconds, not minutes).
  const std::string compact = LargeKinetoDoc(false, 32000);
  ASSERT_GT(compact.size(), 4u << 20);
  for (const std::string& doc : {compact, LargeKinetoDoc(true, 32000), testing::KinetoTrace(o)}) {
    for (bool gz : {false, true}) {
      std::string data = gz ? Gzip(doc) : doc;
      Result<RankTrace> one = FromMemory(data);
      Result<RankTrace> two = FromMemory(data, "mem.json", {.parse_threads = 2});
      ASSERT_TRUE(one.ok()) << one.status().ToString();
      ASSERT_TRUE(two.ok()) << two.status().ToString();
      EXPECT_EQ(one->import_threads, 1);
      EXPECT_EQ(two->import_threads, 3);
      ExpectSameTrace(*one, *two);
    }
  }
}

TEST(KinetoImporter, TwoThreadsFailWithTheSameErrorAsOne) {
  const std::string good = LargeKinetoDoc(true, 32000);
  const size_t late = good.size() - good.size() / 5;  // several batches in
  ASSERT_GT(late, 4u << 20);                          // and past the importer's first buffer
  auto replace_at = [&](size_t at, std::string_view what, std::string_view with) {
    std::string bad = good;
    at = bad.find(what, at);
    bad.replace(at, what.size(), with);
    return bad;
  };
  std::string skipped = replace_at(late, "\"ts\": ", "\"ts\": \"x\", \"y\": ");
  struct Case {
    const char* what;
    std::string doc;
  } cases[] = {
      {"malformed JSON in a late event", replace_at(late, "\"ts\": ", "\"ts\": @")},
      {"invalid UTF-8 in a late event", replace_at(late, "cpu_op", "cpu\xff\xfe")},
      {"truncated inside the events", good.substr(0, late)},
      // Cut between two events: the scan reaches the end only after handing over the batch.
      {"a malformed event, then cut short in the same batch",
       replace_at(late, "\"ts\": ", "\"ts\": @").substr(0, good.find("},\n", late + 3000) + 2)},
      {"an event that is not an object", replace_at(late, "{\"ph\"", "7, {\"ph\"")},
      {"a malformed member after the events",
       good.substr(0, good.size() - 1) + R"(, "deviceProperties": [{"name": tru}]})"},
  };
  for (const Case& c : cases) {
    for (bool gz : {false, true}) {
      std::string data = gz ? Gzip(c.doc) : c.doc;
      Result<RankTrace> one = FromMemory(data);
      Result<RankTrace> two = FromMemory(data, "mem.json", {.parse_threads = 2});
      ASSERT_FALSE(one.ok()) << c.what;
      ASSERT_FALSE(two.ok()) << c.what;
      EXPECT_EQ(one.status().ToString(), two.status().ToString()) << c.what << (gz ? " (gz)" : "");
    }
  }
  // A malformed "ts" is skipped and counted, and both name the same first one.
  Result<RankTrace> one = FromMemory(skipped);
  Result<RankTrace> two = FromMemory(skipped, "mem.json", {.parse_threads = 2});
  ASSERT_TRUE(one.ok() && two.ok());
  EXPECT_EQ(two->stats.malformed_ts, 1u);
  ExpectSameTrace(*one, *two);
}

// Events whose text holds seams ('}' ',' '{') that are not between two events, of one kind.
enum class SeamTrap { kNone, kInString, kInNestedList, kInLaterMember };
std::string SeamTrapDoc(int n, SeamTrap trap) {
  std::string events;
  for (int i = 0; i < n; ++i) {
    if (i) events += ",\n  ";
    events += fmt::format(
        R"({{"ph": "X", "cat": "kernel", "name": "{}", "ts": {}, "dur": 2, "tid": 7, )"
        R"("args": {{"correlation": {}, "stream": 7{}}}}})",
        trap == SeamTrap::kInString ? fmt::format("k{}}}, {{x", i) : fmt::format("k{}", i),
        1000 + 10 * i, i,
        trap == SeamTrap::kInNestedList ? R"(, "list": [{"a": 1}, {"b": 2}])" : "");
  }
  std::string devices;  // longer than a test's batch: some batch ends in it
  for (int i = 0; trap == SeamTrap::kInLaterMember && i < 200; ++i) {
    devices += fmt::format(R"({}{{"id": {}, "name": "A"}})", i ? ", " : "", i);
  }
  return R"({"traceEvents": [)" + events + "]" +
         (devices.empty() ? "" : R"(, "deviceProperties": [)" + devices + "]") +
         R"(, "distributedInfo": {"rank": 1}})";
}

// Seam cuts (on every thread count) read exactly what exact cuts read; a seam inside a string or
// a nested value fails its batch and the document is read again, never misread.
TEST(KinetoImporter, SeamCutsReadWhatExactCutsRead) {
  testing::SyntheticOptions o;
  o.steps = 300;
  struct Case {
    const char* what;
    std::string doc;
    bool read_twice;
  } cases[] = {
      {"a synthetic trace (every seam between two events)", testing::KinetoTrace(o), false},
      {"every seam between two events", SeamTrapDoc(3000, SeamTrap::kNone), false},
      {"seams in strings", SeamTrapDoc(3000, SeamTrap::kInString), true},
      {"seams in nested lists", SeamTrapDoc(3000, SeamTrap::kInNestedList), true},
      {"seams in a member after the events", SeamTrapDoc(3000, SeamTrap::kInLaterMember), true},
      {"seams in strings, on one line", LargeKinetoDoc(false, 3000), true},
  };
  for (const Case& c : cases) {
    ASSERT_GT(c.doc.size(), 200u << 10) << c.what;  // hundreds of 1 KiB batches
    Result<RankTrace> exact = FromMemory(c.doc, "mem.json", {.seam_cut = false});
    ASSERT_TRUE(exact.ok()) << exact.status().ToString();
    for (int threads : {0, 2, 3}) {
      SCOPED_TRACE(fmt::format("{}, {} parse threads", c.what, threads));
      Result<RankTrace> seams =
          FromMemory(c.doc, "mem.json", {.parse_threads = threads, .batch_bytes = 1024});
      ASSERT_TRUE(seams.ok()) << seams.status().ToString();
      EXPECT_EQ(seams->import_read_twice, c.read_twice);
      ExpectSameTrace(*exact, *seams);
    }
  }
}

// An event that outgrows the read buffer is scanned again after each refill, up to its last
// ASCII byte (a UTF-8 sequence is never cut); wherever that falls in a string (the scan then
// appends a closing quote), the event is read. CI's Kineto fuzzer found the scan one byte longer
// than its scanner could take ("a document that big"). Small batches make a small buffer.
TEST(KinetoImporter, AnEventLargerThanTheBufferIsReadWhereverItsStringEnds) {
  std::string accents;
  for (int i = 0; i < 300; ++i) accents += "\xc3\xa9";  // U+00E9
  for (size_t length = 1; length <= 600; ++length) {
    const std::string name = std::string(length, 'n') + accents;
    const std::string doc =
        R"({"traceEvents": [{"ph": "X", "ts": 1, "dur": 2, "name": ")" + name + R"("}]})";
    for (bool seam_cut : {false, true}) {
      SCOPED_TRACE(
          fmt::format("{} ASCII bytes before the accents, seam cuts {}", length, seam_cut));
      Result<RankTrace> t = FromMemory(doc, "mem.json", {.seam_cut = seam_cut, .batch_bytes = 4});
      ASSERT_TRUE(t.ok()) << t.status().ToString();
      ASSERT_EQ(t->ops.size(), 1u);
      EXPECT_EQ(t->Name(t->ops[0]), name);
    }
  }
}

// A document that is bad at a seam-cut batch fails with the exact cut's error.
TEST(KinetoImporter, SeamCutsFailWithTheExactCutsError) {
  const std::string good = SeamTrapDoc(3000, SeamTrap::kNone);
  std::string bad = good;
  bad.insert(bad.find("\"ts\": ", good.size() / 2) + 6, "@");
  Result<RankTrace> exact = FromMemory(bad, "mem.json", {.seam_cut = false});
  Result<RankTrace> seams = FromMemory(bad, "mem.json", {.parse_threads = 2, .batch_bytes = 1024});
  ASSERT_FALSE(exact.ok());
  ASSERT_FALSE(seams.ok());
  EXPECT_EQ(exact.status().ToString(), seams.status().ToString());
}

// The first error in the document is the one reported, whatever the batch size: a malformed
// event before a structural error is parsed (and named) before the structure is blamed.
TEST(KinetoImporter, TheFirstErrorWinsWhateverTheBatchSize) {
  const std::string doc = R"({"traceEvents": [{"ph": "X", "ts": @, "dur": 1} {"ph": "X"}]})";
  for (size_t batch_bytes : {size_t{16}, JsonStreamOptions::kBatchBytes}) {
    Result<RankTrace> t = FromMemory(doc, "mem.json", {.batch_bytes = batch_bytes});
    ASSERT_FALSE(t.ok());
    EXPECT_NE(t.status().message().find("malformed JSON in the trace event starting here"),
              std::string_view::npos)
        << batch_bytes << ": " << t.status().ToString();
  }
}

TEST(LegacyImporter, ReadsTheAutogradProfilerArray) {
  std::string doc =
      R"([{"name": "ProfilerStep#1", "ph": "X", "ts": 161, "dur": 63727, "tid": 1, "pid": "CPU functions", "args": {}},)"
      R"( {"name": "gloo:all_reduce", "ph": "X", "ts": 22295, "dur": 24236, "tid": 2, "pid": "CPU functions", "args": {}}])";
  Result<RankTrace> t = FromMemory(doc);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->format, TraceFormat::kLegacyAutograd);
  EXPECT_FALSE(t->wall_clock);
  ASSERT_EQ(t->ops.size(), 2u);
  EXPECT_EQ(t->ops[0].kind, EventKind::kUserAnnotation);
  EXPECT_EQ(t->ops[1].kind, EventKind::kCpuOp);
  EXPECT_EQ(t->ops[1].dur_ns, 24236000);
  EXPECT_EQ(t->rank, -1);  // resolved from the file name by ImportTraceFile
}

TEST(ImportTraceFile, RankFromFileNameWithWarningElseError) {
  TempDir dir;
  std::string legacy =
      R"([{"name": "aten::mm", "ph": "X", "ts": 1, "dur": 2, "tid": 1, "pid": "CPU functions"}])";
  Result<RankTrace> t = ImportTraceFile(dir.Write("worker_rank-12.json", legacy));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->rank, 12);
  EXPECT_EQ(t->rank_source, "file name");
  ASSERT_EQ(t->warnings.size(), 1u);
  Result<RankTrace> none = ImportTraceFile(dir.Write("trace.json", legacy));
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("trace.json"), std::string_view::npos);
  EXPECT_NE(none.status().message().find("cannot tell which rank"), std::string_view::npos);
}

// Only an explicit rank token counts: "mi250_minitoy_train_ROCm6_2_kineto" was rank 2.
TEST(ImportTraceFile, OnlyARankTokenInTheFileNameGivesTheRank) {
  EXPECT_EQ(RankFromFileName("/x/rank3.json"), 3);
  EXPECT_EQ(RankFromFileName("rank_3.pt.trace.json"), 3);
  EXPECT_EQ(RankFromFileName("job_rank-12.json.gz"), 12);
  EXPECT_EQ(RankFromFileName("RANK7.json"), 7);
  EXPECT_EQ(RankFromFileName("rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"), 34);
  EXPECT_EQ(RankFromFileName("mi250_minitoy_train_ROCm6_2_kineto.json.gz"), -1);
  EXPECT_EQ(RankFromFileName("host_7.1690000.pt.trace.json.gz"), -1);
  EXPECT_EQ(RankFromFileName("frank3.json"), -1);
  EXPECT_EQ(RankFromFileName("/data/rank5/trace.json"), -1);  // the base name only
  EXPECT_GT(RankFromFileName("rank2147483653.json"), kMaxRank);
  TempDir dir;
  std::string legacy = R"([{"name": "mm", "ph": "X", "ts": 1, "dur": 2, "tid": 1}])";
  Result<RankTrace> big = ImportTraceFile(dir.Write("rank2147483653.json", legacy));
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("rank 2147483653 in the file name is out of range"),
            std::string_view::npos)
      << big.status().ToString();
}

// A lone trace without distributedInfo is rank 0 (as HTA takes it), not refused; --rank wins.
TEST(ImportTraceFile, ASingleFileIsRankZeroUnlessForced) {
  TempDir dir;
  std::string legacy = R"([{"name": "mm", "ph": "X", "ts": 1, "dur": 2, "tid": 1}])";
  const std::string path = dir.Write("mi250_ROCm6_2_kineto.json", legacy);
  Result<RankTrace> alone = ImportTraceFile(path, RankRule{.single_file = true});
  ASSERT_TRUE(alone.ok()) << alone.status().ToString();
  EXPECT_EQ(alone->rank, 0);
  EXPECT_TRUE(alone->warnings.empty());
  EXPECT_FALSE(ImportTraceFile(path).ok());  // one of several files: no rank token, refused
  Result<RankTrace> forced = ImportTraceFile(path, RankRule{.forced = 5, .single_file = true});
  ASSERT_TRUE(forced.ok());
  EXPECT_EQ(forced->rank, 5);
  std::string kineto = R"({"distributedInfo": {"rank": 3}, "traceEvents": [)"
                       R"({"ph": "X", "cat": "cpu_op", "name": "mm", "ts": 1, "dur": 2}]})";
  const std::string with_info = dir.Write("rank9.json", kineto);
  Result<RankTrace> info = ImportTraceFile(with_info, RankRule{.single_file = true});
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->rank, 3);
  Result<RankTrace> over = ImportTraceFile(with_info, RankRule{.forced = 5});
  ASSERT_TRUE(over.ok());
  EXPECT_EQ(over->rank, 5);
  ASSERT_EQ(over->warnings.size(), 1u);
  EXPECT_EQ(over->warnings[0], "distributedInfo.rank is 3; rank 5 used as --rank says");
}

// distributedInfo.rank of -5, "zero" or 1.5 was reported as missing, and 2^31+5 became "rank 2
// taken from the file name".
TEST(ImportTraceFile, AnInvalidDistributedInfoRankIsNamed) {
  TempDir dir;
  auto import = [&](const std::string& rank, const RankRule& rule = {}) {
    return ImportTraceFile(
        dir.Write(
            "trace_rank2.json",
            R"({"distributedInfo": {"rank": )" + rank +
                R"(}, "traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "mm", "ts": 1, "dur": 2}]})"),
        rule);
  };
  for (const auto& [rank, problem] : std::vector<std::pair<std::string, std::string>>{
           {"-5", "distributedInfo.rank -5 is invalid: expected an integer from 0"},
           {R"("zero")", R"(distributedInfo.rank "zero" is invalid)"},
           {"1.5", "distributedInfo.rank 1.5 is invalid"},
           {"2147483653", "distributedInfo.rank 2147483653 is out of range (0..2147483647)"},
           {"18446744073709551615", "distributedInfo.rank 18446744073709551615 is out of range"}}) {
    Result<RankTrace> t = import(rank);
    ASSERT_FALSE(t.ok()) << rank;
    EXPECT_NE(t.status().message().find(problem), std::string_view::npos) << t.status().ToString();
    EXPECT_NE(t.status().message().find("trace_rank2.json"), std::string_view::npos);
    Result<RankTrace> forced = import(rank, RankRule{.forced = 1});
    ASSERT_TRUE(forced.ok()) << forced.status().ToString();
    EXPECT_EQ(forced->rank, 1);
    ASSERT_EQ(forced->warnings.size(), 1u);
    EXPECT_NE(forced->warnings[0].find(problem), std::string::npos) << forced->warnings[0];
  }
  Result<RankTrace> null = import("null");  // absent: the file name's rank token
  ASSERT_TRUE(null.ok()) << null.status().ToString();
  EXPECT_EQ(null->rank, 2);
}

// A FIFO made the import block in open() forever; /dev/zero was "empty".
TEST(ImportTraceFile, NonRegularFilesAreRefusedBeforeReading) {
  TempDir dir;
  const std::string fifo = dir.path() + "/rank1.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  Result<RankTrace> t = ImportTraceFile(fifo);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(), fifo + " is not a regular file (a FIFO): expected a trace file");
  Result<RankTrace> zero = ImportTraceFile("/dev/zero");
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.status().message(),
            "/dev/zero is not a regular file (a character device): expected a trace file");
  Result<RankTrace> directory = ImportTraceFile(dir.path());
  ASSERT_FALSE(directory.ok());
  EXPECT_NE(directory.status().message().find("(a directory)"), std::string_view::npos);
}

// 4811 of 4855 events with negative durations gave "host-bound, 100% idle" with no warning.
TEST(ImportTraceFile, AMeaningfulFractionOfMalformedEventsWarns) {
  // 200 complete events, the first `negative` of them with a negative duration.
  auto warnings = [](int negative) {
    std::string events;
    for (int i = 0; i < 200; ++i) {
      events +=
          fmt::format(R"({}{{"ph": "X", "cat": "cpu_op", "name": "op", "ts": {}, "dur": {}}})",
                      i == 0 ? "" : ",", i * 10, i < negative ? -5 : 5);
    }
    Result<RankTrace> t = FromMemory(R"({"traceEvents": [)" + events + "]}");
    EXPECT_TRUE(t.ok());
    return t.ok() ? t->warnings : std::vector<std::string>{};
  };
  std::vector<std::string> w = warnings(3);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("3 of 200 complete ('X') events have a negative duration"), std::string::npos)
      << w[0];
  EXPECT_TRUE(warnings(1).empty());  // one in 200 (0.5%) is noise, not worth a warning
}

// The old-style category "Kernel" was taken as unknown, so its kernels were no GPU work;
// CUDA's stream 4294967295 (a uint32 -1) was read as -1.
TEST(ImportTraceFile, OldStyleKernelCategoryAndUnsignedStreams) {
  Result<RankTrace> t = FromMemory(
      R"({"traceEvents": [{"ph": "X", "cat": "Kernel", "name": "k", "ts": 1, "dur": 2, "args": {"stream": 7}},)"
      R"( {"ph": "X", "cat": "cuda_sync", "name": "Context Sync", "ts": 1, "dur": 2, "args": {"stream": 4294967295}},)"
      R"( {"ph": "X", "cat": "Trace", "name": "whole", "ts": 0, "dur": 9}, {"ph": "X", "name": "no cat", "ts": 0, "dur": 9}]})");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->ops.size(), 4u);
  EXPECT_EQ(t->ops[0].kind, EventKind::kKernel);
  EXPECT_EQ(t->ops[1].stream, 4294967295);
  EXPECT_FALSE(t->ops[1].hta_dropped);
  EXPECT_TRUE(t->ops[2].hta_dropped);  // HTA's parser drops cat "Trace" and events without cat
  EXPECT_TRUE(t->ops[3].hta_dropped);
  EXPECT_FALSE(t->hta_float_ts);
  EXPECT_FALSE(t->hta_dur_missing);
}

TEST(ImportTraceFile, TruncatedGzipNamesTheFileAndTheOffset) {
  TempDir dir;
  testing::SyntheticOptions o;
  o.steps = 50;
  std::string gz = Gzip(testing::KinetoTrace(o));
  std::string path = dir.Write("rank0.json.gz", gz.substr(0, gz.size() / 2));
  Result<RankTrace> t = ImportTraceFile(path);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(t.status().message().find(path), std::string_view::npos);
  EXPECT_NE(t.status().message().find("truncated"), std::string_view::npos);
  EXPECT_NE(t.status().message().find("compressed byte"), std::string_view::npos);
}

TEST(ImportTraceFile, CorruptGzipIsDataLoss) {
  TempDir dir;
  std::string gz = Gzip(testing::KinetoTrace({}));
  for (size_t i = 20; i < gz.size() - 20; i += 7) gz[i] ^= 0x5a;
  Result<RankTrace> t = ImportTraceFile(dir.Write("rank0.json.gz", gz));
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kDataLoss) << t.status().ToString();
}

TEST(ImportTraceFile, CorruptJsonGivesTheByteOffsetOfTheBadEvent) {
  TempDir dir;
  std::string good = testing::KinetoTrace({});
  size_t at = good.find("\"ts\": ", good.find("cudaLaunchKernel"));
  std::string bad = good;
  bad.replace(at, 6, "\"ts\": @");
  std::string path = dir.Write("rank0.json", bad);
  Result<RankTrace> t = ImportTraceFile(path);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  size_t event_start = bad.rfind('{', at);
  EXPECT_NE(t.status().message().find(fmt::format("at byte {}", event_start)),
            std::string_view::npos)
      << t.status().ToString();
  EXPECT_NE(t.status().message().find(path), std::string_view::npos);
}

TEST(ImportTraceFile, TruncatedJsonAndNonTraces) {
  TempDir dir;
  std::string good = testing::KinetoTrace({});
  Result<RankTrace> t = ImportTraceFile(dir.Write("rank0.json", good.substr(0, good.size() - 40)));
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kDataLoss) << t.status().ToString();

  Result<RankTrace> obj = ImportTraceFile(dir.Write("rank1.json", R"({"hello": [1, 2, 3]})"));
  ASSERT_FALSE(obj.ok());
  EXPECT_NE(obj.status().message().find("no \"traceEvents\""), std::string_view::npos);

  Result<RankTrace> text = ImportTraceFile(dir.Write("rank2.json", "hello world"));
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.status().message().find("not a JSON profiler trace"), std::string_view::npos);

  Result<RankTrace> empty = ImportTraceFile(dir.Write("rank3.json", ""));
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("empty"), std::string_view::npos);

  Result<RankTrace> missing = ImportTraceFile(dir.path() + "/nope.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

TEST(ImportTraceFile, UnknownCategoriesAndNegativeDurationsAreCountedNotFatal) {
  std::string doc =
      R"({"traceEvents": [{"ph": "X", "cat": "mystery", "name": "a", "ts": 1, "dur": -5, "pid": 1, "tid": 1},)"
      R"( {"ph": "X", "name": "no cat", "ts": 2, "dur": 1, "pid": 1, "tid": 1}, {"ph": "X", "cat": "cpu_op", "name": "no ts", "dur": 1}],)"
      R"( "distributedInfo": {"rank": 0}})";
  Result<RankTrace> t = FromMemory(doc);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->stats.unknown_category, 2u);
  EXPECT_EQ(t->stats.negative_durations, 1u);
  EXPECT_EQ(t->stats.missing_fields, 1u);
  EXPECT_TRUE(t->hta_float_ts);  // a missing ts makes pandas' column float
}

// A Kineto trace of five 'X' events whose third has `field` set to `value` (after args naming a
// collective, which must go with the event).
std::string TraceWithOneBadEvent(const std::string& field, const std::string& value) {
  std::string events;
  for (int i = 0; i < 5; ++i) {
    std::string ph = R"("X")", ts = std::to_string(10 * i), dur = "5";
    if (i == 2) (field == "ph" ? ph : field == "ts" ? ts : dur) = value;
    events += fmt::format(
        R"({}{{"name": "op{}", "args": {{"Collective name": "allreduce"}}, "ph": {}, "cat": "cpu_op", "ts": {}, "dur": {}}})",
        i == 0 ? "" : ", ", i, ph, ts, dur);
  }
  return R"({"traceEvents": [)" + events + "]}";
}

// One event with a "ph" that is not a string, or a "ts" or "dur" that is not a number of
// microseconds, failed the whole rank ("malformed trace event after byte ..."); a bad "cat" was
// only counted. Now the event is skipped, counted by reason and warned about.
TEST(ImportTraceFile, AMalformedPhTsOrDurSkipsThatEventCountsItAndWarns) {
  struct Case {
    std::string field, value;
    uint64_t ImportStats::*counter;
    std::string reason;
  };
  const std::string bad_ts = R"(a "ts" that is not a number of microseconds within +-2^62 ns)";
  const std::string bad_dur =
      R"(a "dur" that is not a number of microseconds or ends past +-2^62 ns)";
  for (const Case& c : std::vector<Case>{
           {"ph", "5", &ImportStats::malformed_ph, R"(a "ph" that is not a string)"},
           {"ph", "null", &ImportStats::malformed_ph, R"(a "ph" that is not a string)"},
           {"ts", R"("12")", &ImportStats::malformed_ts, bad_ts},
           {"ts", "1e16", &ImportStats::malformed_ts, bad_ts},
           {"ts", "9223372036854775807", &ImportStats::malformed_ts, bad_ts},
           // Past kMaxTraceTimeNs (2^62 - 1 ns), as an integer and as a double.
           {"ts", "4611686018427388", &ImportStats::malformed_ts, bad_ts},
           {"ts", "-4.7e15", &ImportStats::malformed_ts, bad_ts},
           {"dur", "{}", &ImportStats::malformed_dur, bad_dur},
           {"dur", "true", &ImportStats::malformed_dur, bad_dur},
           {"dur", "18446744073709551615", &ImportStats::malformed_dur, bad_dur},
           // Within the bound, but the event (at 20 us) then ends past it.
           {"dur", "4611686018427387", &ImportStats::malformed_dur, bad_dur}}) {
    SCOPED_TRACE(c.field + ": " + c.value);
    std::string doc = TraceWithOneBadEvent(c.field, c.value);
    Result<RankTrace> t = FromMemory(doc);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_EQ(t->ops.size(), 4u);
    EXPECT_EQ(t->collectives.size(), 4u);  // the skipped event's collective is not kept
    EXPECT_EQ(t->stats.events, 5u);
    EXPECT_EQ(t->stats.complete_events, 4u);
    EXPECT_EQ(t->stats.*c.counter, 1u);
    EXPECT_EQ(t->stats.malformed_ph + t->stats.malformed_ts + t->stats.malformed_dur, 1u);
    EXPECT_EQ(t->Name(t->ops[2]), "op3");
    const size_t bad_event = doc.find(R"({"name": "op2")");
    ASSERT_EQ(t->warnings.size(), 1u);
    EXPECT_EQ(t->warnings[0],
              fmt::format("1 of 5 trace events are malformed and were skipped (1 with {}; the "
                          "first at byte {}): the numbers below may be off",
                          c.reason, bad_event));
  }
}

// Nothing left to analyse: the import fails, saying what and where.
TEST(ImportTraceFile, ATraceWhoseEveryEventIsMalformedFails) {
  const std::string events =
      R"({"ph": 1, "name": "a", "ts": 1, "dur": 2}, {"ph": "X", "name": "b", "ts": "1", "dur": 2},)"
      R"( {"ph": "X", "name": "c", "ts": 1, "dur": null})";
  for (const std::string& doc : {R"({"traceEvents": [)" + events + "]}", "[" + events + "]"}) {
    Result<RankTrace> t = FromMemory(doc, "all_bad.json");
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(t.status().message(),
              fmt::format("all_bad.json: no usable trace events: 3 of 3 events are malformed (1 "
                          "with a \"ph\" that is not a string, 1 with a \"ts\" that is not a "
                          "number of microseconds within +-2^62 ns, 1 with a \"dur\" that is not "
                          "a number of microseconds or ends past +-2^62 ns); the first, at byte "
                          "{}, has a \"ph\" that is not a string",
                          doc.find(R"({"ph": 1)")));
  }
}

// The DOM and the On-Demand parser apply the same rules (one handler, event_fields.h).
TEST(EventBatch, BothParsersSkipAndCountTheSameMalformedEvents) {
  const std::string batch =
      R"([{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1, "dur": 2, "tid": "main"},)"
      R"( {"ph": ["X"], "cat": "cpu_op", "name": "b", "ts": 1, "dur": 2},)"
      R"( {"ph": "X", "cat": "kernel", "name": "c", "ts": 3.5, "dur": 2, "tid": 7},)"
      R"( {"ph": "X", "cat": "cpu_op", "name": "d", "ts": "3", "dur": 2},)"
      R"( {"ph": "X", "cat": "cpu_op", "name": "e", "ts": 3, "dur": -1e300},)"
      R"( {"ph": "M", "name": "process_name", "ts": false},)"
      R"( {"ph": "X", "cat": 5, "name": "f", "ts": 4, "dur": 1}])";
  const std::string padded = batch + std::string(64, ' ');
  RankTrace dom, chosen;
  ASSERT_TRUE(
      internal::ParseEventBatchDom(padded.data(), batch.size(), padded.size(), {}, 0, &dom).ok());
  ASSERT_TRUE(ParseEventBatch(padded.data(), batch.size(), padded.size(), {}, 0, &chosen).ok());
  for (const RankTrace* t : {&dom, &chosen}) {
    EXPECT_EQ(t->stats.events, 7u);
    EXPECT_EQ(t->stats.malformed_ph, 1u);
    EXPECT_EQ(t->stats.malformed_ts, 2u);
    EXPECT_EQ(t->stats.malformed_dur, 1u);
    EXPECT_EQ(t->stats.unknown_category, 1u);  // a bad cat is unknown, the event kept
    ASSERT_EQ(t->ops.size(), 3u);
    EXPECT_EQ(t->Name(t->ops[1]), "c");
    EXPECT_EQ(t->ops[1].ts_ns, 3500);
  }
  EXPECT_EQ(dom.ops[0].tid, chosen.ops[0].tid);  // string tids hash alike
  std::printf("batch parser in use: %s\n", EventBatchParserName());
}

TEST(EventBatch, BothParsersNameTheFirstMalformedEvent) {
  const std::string batch =
      R"([{"ph": "X", "name": "a, \"}{", "ts": 1, "dur": 2}, {"ph": "X", "ts": 1, "dur": "2"}])";
  const std::string padded = batch + std::string(64, ' ');
  FirstMalformedEvent dom, chosen;
  RankTrace a, b;
  ASSERT_TRUE(
      internal::ParseEventBatchDom(padded.data(), batch.size(), padded.size(), {}, 100, &a, &dom)
          .ok());
  ASSERT_TRUE(
      ParseEventBatch(padded.data(), batch.size(), padded.size(), {}, 100, &b, &chosen).ok());
  for (const FirstMalformedEvent& first : {dom, chosen}) {
    EXPECT_EQ(first.offset, 100 + static_cast<int64_t>(batch.find(R"({"ph": "X", "ts")")));
    EXPECT_EQ(first.field, internal::kMalformedDur);
  }
}

// A value that is not JSON at all is the file's fault, not one event's: both parsers fail (the
// DOM parser cannot read the batch), and JsonStream names the event.
TEST(EventBatch, BothParsersFailOnTimestampsThatAreNotJson) {
  for (std::string ts : {"NaN", "-Infinity", "1e400", "99999999999999999999", "@"}) {
    SCOPED_TRACE(ts);
    const std::string batch = R"([{"ph": "X", "name": "a", "ts": )" + ts + R"(, "dur": 2}])";
    const std::string padded = batch + std::string(64, ' ');
    RankTrace a, b;
    EXPECT_FALSE(
        internal::ParseEventBatchDom(padded.data(), batch.size(), padded.size(), {}, 0, &a).ok());
    EXPECT_FALSE(ParseEventBatch(padded.data(), batch.size(), padded.size(), {}, 0, &b).ok());
    Result<RankTrace> t = FromMemory(R"({"traceEvents": )" + batch + "}");
    ASSERT_FALSE(t.ok());
    EXPECT_NE(t.status().message().find("malformed JSON in the trace event starting here"),
              std::string_view::npos)
        << t.status().ToString();
    EXPECT_NE(t.status().message().find("at byte 17"), std::string_view::npos);
  }
}

TEST(EventBatch, OnDemandAndDomAgree) {
  testing::SyntheticOptions o;
  o.steps = 3;
  std::string doc = testing::KinetoTrace(o);
  size_t begin = doc.find('[');
  size_t end = doc.rfind(']');
  std::string batch = doc.substr(begin, end - begin + 1);
  std::string padded = batch + std::string(64, ' ');
  RankTrace a, b;
  ASSERT_TRUE(
      internal::ParseEventBatchDom(padded.data(), batch.size(), padded.size(), {}, 0, &a).ok());
  ASSERT_TRUE(ParseEventBatch(padded.data(), batch.size(), padded.size(), {}, 0, &b).ok());
  ASSERT_EQ(a.ops.size(), b.ops.size());
  for (size_t i = 0; i < a.ops.size(); ++i) {
    EXPECT_EQ(a.ops[i].ts_ns, b.ops[i].ts_ns);
    EXPECT_EQ(a.ops[i].dur_ns, b.ops[i].dur_ns);
    EXPECT_EQ(a.ops[i].correlation, b.ops[i].correlation);
    EXPECT_EQ(a.ops[i].stream, b.ops[i].stream);
    EXPECT_EQ(a.ops[i].kind, b.ops[i].kind);
    EXPECT_EQ(a.ops[i].hta_dropped, b.ops[i].hta_dropped);
    EXPECT_EQ(a.Name(a.ops[i]), b.Name(b.ops[i]));
  }
  EXPECT_EQ(a.collectives.size(), b.collectives.size());
  EXPECT_EQ(a.hta_float_ts, b.hta_float_ts);
  EXPECT_EQ(a.hta_ts_missing, b.hta_ts_missing);
  EXPECT_EQ(a.hta_dur_missing, b.hta_dur_missing);
  EXPECT_EQ(a.hta_dur_float, b.hta_dur_float);
  std::printf("batch parser in use: %s\n", EventBatchParserName());
}

}  // namespace
}  // namespace titan::trace
