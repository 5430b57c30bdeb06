#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "src/fleet/diagnose_source.h"
#include "src/fleet/fleet_jsonl.h"
#include "src/fleet/read_history.h"
#include "src/fleet/recorder_source.h"
#include "src/fleet/run_log_source.h"
#include "src/fleet/shared_data_for_tests.h"
#include "src/fleet/time_text.h"
#include "src/fleet/titan_csv.h"

namespace titan::fleet {
namespace {

TEST(TimeTextTest, ParsesCalendarTimesAndEpochSeconds) {
  double t = 0;
  ASSERT_TRUE(ParseTimeSeconds("1970-01-02", &t));
  EXPECT_EQ(t, 86400);
  ASSERT_TRUE(ParseTimeSeconds("2016-10-01 08:14:20", &t));
  EXPECT_EQ(t, 1475309660);
  ASSERT_TRUE(ParseTimeSeconds("2016-10-01T08:14:20.5Z", &t));
  EXPECT_EQ(t, 1475309660.5);
  ASSERT_TRUE(ParseTimeSeconds("2016-10-01T10:14:20+02:00", &t));
  EXPECT_EQ(t, 1475309660);
  ASSERT_TRUE(ParseTimeSeconds("1475309660.25", &t));
  EXPECT_EQ(t, 1475309660.25);
  EXPECT_EQ(FormatTime(1475309660.9), "2016-10-01T08:14:20Z");
  EXPECT_EQ(FormatDate(1475309660), "2016-10-01");
  for (const char* bad : {"", "2016-13-01", "2016-02-30", "2016-10-01X", "2016-10-01 25:00",
                          "yesterday", "1e400", "2016-10-01T08:14:20Zjunk"}) {
    EXPECT_FALSE(ParseTimeSeconds(bad, &t)) << bad;
  }
}

constexpr char kJsonl[] = R"(# a comment line
{"time":"2016-10-01T00:00:00Z","component":"g1","event":"enter","attributes":{"node_name":"n1","cage":2}}
{"time":"2016-10-01T00:00:00Z","component":"g2","event":"enter","attributes":{"node_name":"n2"}}
{"time":1475366400,"component":"g1","event":"fail","class":"DBE","text":"double-bit"}
{"time":"2016-10-03","component":"g1","event":"observe","values":{"xid_total":3,"temp_c":70.5}}
{"time":"2016-10-04","component":"g1","event":"repair","text":"reseated"}
{"time":"2016-10-05","component":"g1","event":"leave","text":"RMA"}
not json
{"component":"g1","event":"fail"}
{"time":"2016-10-06","component":"g1","event":"explode"}
{"time":"2016-10-06","event":"fail"}
{"time":"2016-10-06","component":"g1","event":"observe","values":{"x":"hot"}}
{"time":"2016-10-10","event":"end"}
)";

TEST(FleetJsonlTest, ReadsEveryKindAndCountsBadRecords) {
  HistoryBuilder b;
  ReadFleetJsonl(kJsonl, "h.jsonl", &b);
  auto h = std::move(b).Build();
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  ASSERT_EQ(h->events().size(), 6u);
  EXPECT_EQ(h->components().size(), 2u);
  const Event& enter = h->events()[0];
  EXPECT_EQ(enter.kind, EventKind::kEnter);
  ASSERT_NE(FindAttribute(enter.attributes, "cage"), nullptr);
  EXPECT_EQ(*FindAttribute(enter.attributes, "cage"), "2");
  const Event& fail = h->events()[2];
  EXPECT_EQ(fail.kind, EventKind::kFail);
  EXPECT_EQ(h->failure_classes()[fail.failure_class], "DBE");
  EXPECT_EQ(fail.text, "double-bit");
  const Event& obs = h->events()[3];
  ASSERT_EQ(obs.values.size(), 2u);
  EXPECT_EQ(h->covariates()[obs.values[1].first], "temp_c");
  EXPECT_EQ(obs.values[1].second, 70.5);
  EXPECT_EQ(h->events()[4].kind, EventKind::kRepair);
  EXPECT_EQ(h->events()[5].kind, EventKind::kLeave);
  EXPECT_EQ(h->end_seconds(), CivilToSeconds(2016, 10, 10));
  const ReadStats& s = h->stats();
  EXPECT_EQ(s.skipped.at("not a JSON object"), 1);
  EXPECT_EQ(s.skipped.at("no 'time'"), 1);
  EXPECT_EQ(s.skipped.at("no 'component'"), 1);
  EXPECT_EQ(s.skipped.count("unknown event (expected enter, fail, repair, leave, observe or end)"),
            1u);
  EXPECT_EQ(s.skipped.at("value 'x' is not a finite number"), 1);
  ASSERT_FALSE(s.examples.empty());
  EXPECT_EQ(s.examples[0], "h.jsonl:8: not a JSON object");
}

TEST(FleetJsonlTest, WrittenHistoryReadsBackTheSame) {
  HistoryBuilder b;
  ReadFleetJsonl(kJsonl, "h.jsonl", &b);
  b.SetComponentAttribute("g2", "batch", "new");
  auto h = std::move(b).Build();
  ASSERT_TRUE(h.ok());
  std::string text = WriteFleetJsonl(*h);
  HistoryBuilder again;
  ReadFleetJsonl(text, "w.jsonl", &again);
  EXPECT_TRUE(again.stats().skipped.empty());
  auto h2 = std::move(again).Build();
  ASSERT_TRUE(h2.ok());
  ASSERT_EQ(h2->events().size(), h->events().size());
  for (size_t i = 0; i < h->events().size(); ++i) {
    EXPECT_EQ(h2->events()[i].kind, h->events()[i].kind);
    EXPECT_EQ(h2->events()[i].time_seconds, h->events()[i].time_seconds);
    EXPECT_EQ(h2->events()[i].text, h->events()[i].text);
  }
  EXPECT_EQ(*FindAttribute(h2->events()[1].attributes, "batch"), "new");
  EXPECT_EQ(h2->end_seconds(), h->end_seconds());
  EXPECT_EQ(WriteFleetJsonl(*h2), text);
}

TEST(FleetJsonlTest, AHistoryWithoutRecordsIsAnErrorThatSaysWhy) {
  HistoryBuilder b;
  ReadFleetJsonl("{\"time\":\"x\",\"event\":\"enter\"}\n", "bad.jsonl", &b);
  auto h = std::move(b).Build();
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.status().message().find("bad.jsonl:1: time is not a calendar time"),
            std::string::npos)
      << h.status().message();
}

constexpr char kTitanCsv[] =
    "SN,location,insert,remove,duration,out,event\n"
    "A,c1-2c0s3n1,2014-01-01 00:00:00,2015-01-01 00:00:00,1,FALSE,\n"
    "A,c4-0c2s7n0,2015-02-01 00:00:00,2016-03-01 00:00:00,1,TRUE,DBE\n"
    "A,c4-0c2s7n0,,2016-02-28 00:00:00,,,DBE\n"
    "B,c1-2c0s3n1,2016-06-01 00:00:00,2019-08-01 20:07:33,1,FALSE,\n"
    "C,c9-9c9s9n9,2014-01-01 00:00:00,2019-08-01 20:07:33,1,TRUE,\n"
    "D,nowhere,2014-01-01 00:00:00,2015-01-01 00:00:00,1,FALSE,\n"
    "E,c1-1c1s1n1,2015-01-01 00:00:00,2014-01-01 00:00:00,1,FALSE,\n";

TEST(TitanCsvTest, StaysFailuresCensoringAndBatch) {
  ASSERT_TRUE(LooksLikeTitanCsv(kTitanCsv));
  HistoryBuilder b;
  ReadTitanCsv(kTitanCsv, "gc.csv", &b);
  auto h = std::move(b).Build();
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->stats().skipped.at("location is not cCOL-ROWcCAGEsSLOTnNODE"), 1);
  EXPECT_EQ(h->stats().skipped.at("stay removed before it was inserted"), 1);
  // A: enter, leave (moved), enter, fail (event-only row, earlier), fail, leave. B: enter only
  // (censored at the end). C: enter, leave (out at the end).
  std::vector<std::string> seen;
  for (const Event& e : h->events()) {
    seen.push_back(h->components()[e.component].id + ":" + std::string(EventKindName(e.kind)));
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"A:enter", "C:enter", "A:leave", "A:enter", "A:fail",
                                            "A:fail", "A:leave", "B:enter", "C:leave"}));
  const Event& first = h->events()[0];
  EXPECT_EQ(*FindAttribute(first.attributes, "node_name"), "c1-2c0s3n1");
  EXPECT_EQ(*FindAttribute(first.attributes, "slot_name"), "c1-2c0s3");
  EXPECT_EQ(*FindAttribute(first.attributes, "cage"), "0");
  EXPECT_EQ(*FindAttribute(first.attributes, "node"), "1");
  EXPECT_EQ(*FindAttribute(h->components()[first.component].attributes, "batch"), "old");
  EXPECT_EQ(*FindAttribute(h->components()[h->events()[7].component].attributes, "batch"), "new");
  EXPECT_EQ(h->failure_classes()[h->events()[4].failure_class], "DBE");
  EXPECT_EQ(h->end_seconds(), CivilToSeconds(2019, 8, 1) + 20 * 3600 + 7 * 60 + 33);
}

TEST(RunLogSourceTest, CrashesHangsLossesAndExclusions) {
  const char* log =
      R"({"time_ns":1700000000000000000,"t":0,"node":"n1","type":"start","job":"j"}
{"time_ns":1700000001000000000,"t":1,"node":"n1","type":"steps"}
{"time_ns":1700000002000000000,"t":2,"node":"n1","type":"crash","rank":3,"status":"killed by signal 9"}
{"time_ns":1700000003000000000,"t":3,"node":"n1","type":"hang","rank":1,"silent_s":30}
{"time_ns":1700000004000000000,"t":4,"node":"n1","type":"lost","nodes":["n2"],"reason":"lease"}
{"time_ns":1700000005000000000,"t":5,"node":"n1","type":"exclude","reason":"crash: 2 failures"}
{"t":6,"node":"n1","type":"crash"}
)";
  ASSERT_TRUE(LooksLikeRunLog(log));
  HistoryBuilder b;
  ReadRunLog(log, "run.jsonl", &b);
  auto h = std::move(b).Build();
  ASSERT_TRUE(h.ok());
  ASSERT_EQ(h->events().size(), 5u);
  EXPECT_EQ(h->events()[0].kind, EventKind::kEnter);
  EXPECT_EQ(h->failure_classes()[h->events()[1].failure_class], "crash");
  EXPECT_EQ(h->events()[1].text, "rank 3 killed by signal 9");
  EXPECT_EQ(h->failure_classes()[h->events()[2].failure_class], "hang");
  EXPECT_EQ(h->components()[h->events()[3].component].id, "n2");
  EXPECT_EQ(h->events()[4].kind, EventKind::kLeave);
  EXPECT_EQ(h->events()[4].time_seconds, 1700000005.0);
  EXPECT_EQ(h->stats().skipped.at("no numeric time_ns or no type"), 1);
}

TEST(DiagnoseSourceTest, IncidentsBecomeFailuresOfTheCulpritNode) {
  const char* verdict = R"({"incidents":[
    {"class":"gpu_xid","action":"exclude","culprit":{"rank":3,"node":"n7","gpu":5},
     "root":{"file":"kern.log","line":12,"text":"NVRM: Xid 79","time":"2024-01-01T00:00:00Z"},
     "symptoms":[],"confidence":0.9},
    {"class":"nccl_timeout","culprit":{"rank":0,"node":null},"root":{"time":1}},
    {"class":"oom","culprit":{"node":"n8"},"root":{"text":"x","time":1704067200000000000}}],
    "files":[]})";
  ASSERT_TRUE(LooksLikeDiagnoseVerdict(verdict));
  HistoryBuilder b;
  ReadDiagnoseVerdict(verdict, "v.json", &b);
  auto h = std::move(b).Build();
  ASSERT_TRUE(h.ok());
  ASSERT_EQ(h->events().size(), 2u);
  EXPECT_EQ(h->components()[h->events()[0].component].id, "n7");
  EXPECT_EQ(h->failure_classes()[h->events()[0].failure_class], "gpu_xid");
  EXPECT_EQ(h->events()[0].text, "gpu 5 rank 3: NVRM: Xid 79");
  EXPECT_EQ(h->events()[1].time_seconds, 1704067200.0);  // nanoseconds read as such
  EXPECT_EQ(h->stats().skipped.at("incident without a culprit node"), 1);
}

// What titan diagnose --json writes (src/diagnose/report.cc): keys sorted, so "files" comes
// first and "kind" names the document; the GPU is a PCI address.
TEST(DiagnoseSourceTest, ReadsTitanDiagnoseOutputWithItsKeysSorted) {
  const char* verdict = R"({
  "files": [{"bytes": 783, "kind": "kernel_log", "path": "n7/dmesg.log"}],
  "incidents": [{"action": "drain_node", "class": "gpu_hardware", "confidence": 0.9,
    "culprit": {"gpu": "0000:9b:00.0", "node": "n7", "rank": null},
    "root": {"file": "n7/dmesg.log", "line": 4, "text": "NVRM: Xid (PCI:0000:9b:00): 79",
             "time": "2025-02-23T16:24:18Z"}, "symptoms": []}],
  "kind": "titan.diagnose"
})";
  ASSERT_TRUE(LooksLikeDiagnoseVerdict(verdict));
  EXPECT_FALSE(LooksLikeDiagnoseVerdict(R"({"files": [], "kind": "titan.other"})"));
  EXPECT_FALSE(LooksLikeDiagnoseVerdict(R"({"files": [], "note": "kind"})"));
  HistoryBuilder b;
  ASSERT_TRUE(ReadHistoryText(verdict, "v.json", "", &b).ok());
  auto history = std::move(b).Build();
  ASSERT_TRUE(history.ok());
  ASSERT_EQ(history->events().size(), 1u);
  EXPECT_EQ(history->components()[history->events()[0].component].id, "n7");
  EXPECT_EQ(history->failure_classes()[history->events()[0].failure_class], "gpu_hardware");
  EXPECT_EQ(history->events()[0].text, "gpu 0000:9b:00.0: NVRM: Xid (PCI:0000:9b:00): 79");
}

TEST(RecorderSourceTest, SumsCountersOverGpusAndTakesTheHottestGpu) {
  const char* dump =
      "time_ns,series,value\n"
      "60000000000,\"titan_gpu_xid_errors_total{gpu=\"\"0\"\",xid=\"\"79\"\"}\",1\n"
      "61000000000,\"titan_gpu_xid_errors_total{gpu=\"\"0\"\",xid=\"\"79\"\"}\",2\n"
      "61000000000,\"titan_gpu_xid_errors_total{gpu=\"\"1\"\",xid=\"\"48\"\"}\",5\n"
      "61000000000,\"titan_gpu_temperature_celsius{gpu=\"\"0\"\"}\",60\n"
      "61000000000,\"titan_gpu_temperature_celsius{gpu=\"\"1\"\"}\",75\n"
      "61000000000,\"titan_gpu_ecc_errors_total{gpu=\"\"1\"\",kind=\"\"dbe\"\"}\",1\n"
      "61000000000,titan_cpu_busy_ratio,0.5\n"
      "bad,row,x\n";
  HistoryBuilder b;
  ReadRecorderCsv(dump, "n3.csv", "n3", &b);
  auto h = std::move(b).Build();
  ASSERT_TRUE(h.ok());
  ASSERT_EQ(h->events().size(), 1u);
  const Event& e = h->events()[0];
  EXPECT_EQ(e.kind, EventKind::kObserve);
  EXPECT_EQ(e.time_seconds, 120.0);  // the end of the minute's bucket
  std::map<std::string, double> v;
  for (auto [i, x] : e.values) v[h->covariates()[i]] = x;
  EXPECT_EQ(v, (std::map<std::string, double>{
                   {"ecc_dbe_total", 1}, {"temperature_max_celsius", 75}, {"xid_total", 7}}));
  EXPECT_EQ(h->stats().skipped.size(), 1u);
}

TEST(ReadHistoryTest, AnUnknownFormatNamesTheFileAndTheFormats) {
  HistoryBuilder b;
  Status s = ReadHistoryText("hello\n", "x.txt", "", &b);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("x.txt: not a fleet history format titan reads (titan run event "
                             "log, fleet history JSONL, Titan gc_full.csv"),
            std::string::npos)
      << s.message();
}

TEST(ReadHistoryTest, TheTitanDataAsTheIssueCountsIt) {
  const std::string path = TitanGcFullCsv();
  TITAN_REQUIRE_SHARED_FILE(path);
  auto h = ReadHistory({path});
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_TRUE(h->stats().skipped.empty());
  EXPECT_EQ(h->components().size(), 30207u);
  int64_t stays = 0, fails = 0, q4_2016 = 0;
  const double q4_begin = CivilToSeconds(2016, 10, 1), q4_end = CivilToSeconds(2017, 1, 1);
  for (const Event& e : h->events()) {
    stays += e.kind == EventKind::kEnter;
    if (e.kind != EventKind::kFail) continue;
    ++fails;
    q4_2016 += e.time_seconds >= q4_begin && e.time_seconds < q4_end;
  }
  EXPECT_EQ(stays, 37343 - 1158);  // the rows with an insert
  EXPECT_EQ(fails, 4826 + 1541);   // every DBE and OTB row
  EXPECT_EQ(q4_2016, 846);         // the issue's count for 2016-Q4
}

}  // namespace
}  // namespace titan::fleet
