// Each log source reads its format (fixtures in the documented formats: NCCL's RAS guide,
// kubectl's Event objects, titan's own event log, PyTorch's Flight Recorder tutorial), and every
// file is read within its limits whatever it is (sparse 10 GB files, FIFOs, endless lines,
// binary data, many files).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "src/base/json_text.h"
#include "src/diagnose/diagnose.h"
#include "src/diagnose/report.h"
#include "src/diagnose/testing/dumps.h"

namespace titan::diagnose {
namespace {

using testing::DumpEntry;
using testing::FlightRecorderPickle;
using testing::TempDir;

TEST(TextSourceTest, KindFromTheMarkersOfTheHeadAndFindingsFromEveryLine) {
  TempDir dir;
  // A rank's log: 3 MB of worker lines (markers on every line), NCCL's WARN deep inside.
  std::string worker;
  for (int i = 0; i < 40'000; ++i) {
    worker += fmt::format("[rank3]:2024-05-06 10:56:41,123 INFO step {} loss 1.79 lr 3.0e-4\n", i);
  }
  worker +=
      "gpu7:1234:1300 [3] NCCL WARN NET/IB : Got completion from peer 10.0.0.2<4321> with "
      "status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:10.0.0.1\n";
  SourceOutput out = ReadLogFile(dir.Write("rank3.log", worker), {});
  EXPECT_EQ(out.file.kind, "worker_output");
  EXPECT_EQ(out.file.lines, 40'001);
  ASSERT_FALSE(out.findings.empty());
  EXPECT_EQ(out.findings.back().evidence.line, 40'001);

  // No marker in the first 64 KiB: the kind comes from the first one after it.
  std::string late(100'000, ' ');
  for (size_t i = 99; i < late.size(); i += 100) late[i] = '\n';
  late += "[  +0.000004] NVRM: Xid (PCI:0000:a1:00): 79, pid=1234, GPU has fallen off the bus.\n";
  SourceOutput k = ReadLogFile(dir.Write("dmesg.txt", late), {});
  EXPECT_EQ(k.file.kind, "kernel_log");
}

TEST(RasSourceTest, TextNamesTheUnresponsiveProcessAndItsRank) {
  TempDir dir;
  const std::string path =
      dir.Write("ras.txt",
                "Communicators... (2.05s)\n"
                "=============\n\n"
                "Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors\n"
                "    #  in group  per comm  per node  per comm  in group\n"
                "    0         1         4       7-8        32        32   RUNNING  INCOMPLETE\n\n"
                "Errors\n======\n\n"
                "INCOMPLETE\n"
                "  Missing communicator data from 1 job process\n"
                "  Process 3487984 on node 172.16.64.213 managing GPU 5\n\n"
                "#0-0 (cf264af53edbe986) INCOMPLETE\n"
                "  Missing communicator data from 1 rank\n"
                "  The missing rank: 21\n");
  SourceOutput out = ReadLogFile(path, {});
  EXPECT_EQ(out.file.kind, "nccl_ras");
  ASSERT_EQ(out.findings.size(), 1u);
  const Finding& f = out.findings[0];
  EXPECT_EQ(f.where.node, "172.16.64.213");
  EXPECT_EQ(f.where.rank, 21);
  EXPECT_EQ(f.pid, 3487984);
  EXPECT_EQ(f.evidence.line, 13);
  EXPECT_EQ(f.evidence.text, "  Process 3487984 on node 172.16.64.213 managing GPU 5");
}

TEST(RasSourceTest, JsonNamesTheMissingRank) {
  TempDir dir;
  const std::string path = dir.Write("ras.json", R"({
  "nccl_version": "2.29.1", "timestamp": "2025-12-19 13:06:53", "communicators_count": 1,
  "communicators": [{"hash": "0xae94", "size": 2, "ranks_count": 1, "missing_ranks_count": 1,
    "ranks": [{"rank": 0, "host": "172.16.64.245", "pid": 1524344, "cuda_dev": 0}],
    "missing_ranks": [{"rank": 1, "host": "172.16.64.245", "pid": 1524345, "cuda_dev": 1,
      "nvml_dev": 1, "status": {"unresponsive": true, "considered_dead": false}}]}],
  "ras": {"collection_time_sec": 0.000, "timeouts_count": 0}})");
  SourceOutput out = ReadLogFile(path, {});
  EXPECT_EQ(out.file.kind, "nccl_ras");
  ASSERT_EQ(out.findings.size(), 1u);
  EXPECT_EQ(out.findings[0].where.rank, 1);
  EXPECT_EQ(out.findings[0].pid, 1524345);
  EXPECT_EQ(out.findings[0].evidence.line, 5);
  EXPECT_EQ(FormatLogTime(out.findings[0].evidence.time), "2025-12-19T13:06:53Z");
}

TEST(K8sEventsSourceTest, EvictionIsHostOomOnItsNode) {
  TempDir dir;
  const std::string path = dir.Write("events.json", R"({
  "apiVersion": "v1", "kind": "List",
  "items": [
    {"kind": "Event", "type": "Warning", "reason": "Evicted",
     "message": "The node was low on resource: memory. Container trainer was using 61Gi.",
     "involvedObject": {"kind": "Pod", "name": "trainer-0"},
     "source": {"component": "kubelet", "host": "gpu-node-3"},
     "lastTimestamp": "2024-05-06T10:00:00Z"},
    {"kind": "Event", "type": "Normal", "reason": "Scheduled", "message": "Successfully assigned",
     "involvedObject": {"kind": "Pod", "name": "trainer-1"}}
  ]})");
  SourceOutput out = ReadLogFile(path, {});
  EXPECT_EQ(out.file.kind, "k8s_events");
  ASSERT_EQ(out.findings.size(), 1u);
  const Finding& f = out.findings[0];
  EXPECT_EQ(f.fault, FaultClass::kOomHost);
  EXPECT_EQ(f.where.node, "gpu-node-3");
  EXPECT_EQ(f.evidence.line, 5);
  EXPECT_EQ(FormatLogTime(f.evidence.time), "2024-05-06T10:00:00Z");
}

TEST(TitanEventsSourceTest, OomKillInTheJobCgroupAndTheRankOutOfTheCollective) {
  TempDir dir;
  const std::string path = dir.Write(
      "events.jsonl",
      // The first line as titan run's RunLog writes it: nlohmann's keys in sorted order.
      R"J({"command":["python3","train.py"],"job":"default","node":"n1-7","pid":7,"t":0.0,"time_ns":1699999999000000000,"type":"start"})J"
      "\n"
      R"J({"time_ns":1700000000000000000,"t":0.1,"node":"n1-7","type":"spawn","host":"n1","workers":[{"rank":0,"pid":100},{"rank":1,"pid":101}]})J"
      "\n"
      R"J({"time_ns":1700000005000000000,"t":5.0,"node":"n1-7","type":"crash","rank":1,"pid":101,"status":"signal 9 (Killed)","oom_kills":1})J"
      "\n"
      R"J({"time_ns":1700000060000000000,"t":60,"node":"n1-7","type":"hang","rank":0,"silent_s":12.0,"threshold_s":10.0})J"
      "\n"
      R"J({"time_ns":1700000061000000000,"t":61,"node":"n1-7","type":"stack","rank":0,"python":"Thread 0x1 (most recent call first):\n  File \"/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py\", line 1536 in all_reduce\n  File \"/job/train.py\", line 40 in step\n"})J"
      "\n"
      R"J({"time_ns":1700000061000000000,"t":61,"node":"n1-7","type":"stack","rank":1,"python":"Thread 0x1 (most recent call first):\n  File \"/job/train.py\", line 57 in load_batch\n  File \"/job/train.py\", line 41 in step\n"})J"
      "\n");
  SourceOutput out = ReadLogFile(path, {});
  EXPECT_EQ(out.file.kind, "titan_events");
  ASSERT_EQ(out.pid_ranks.size(), 2u);
  ASSERT_GE(out.findings.size(), 3u);
  const Finding& crash = out.findings[0];
  EXPECT_EQ(crash.fault, FaultClass::kOomHost);
  EXPECT_EQ(crash.tier, Tier::kCause);
  EXPECT_EQ(crash.where.rank, 1);
  EXPECT_EQ(crash.where.node, "n1");
  const Finding& stacks = out.findings.back();
  EXPECT_EQ(stacks.rule, "titan_stacks");
  EXPECT_EQ(stacks.fault, FaultClass::kHangCollectiveMismatch);
  EXPECT_EQ(stacks.where.rank, 1);
  EXPECT_NE(stacks.detail.find("train.py:57 in load_batch"), std::string::npos) << stacks.detail;
}

TEST(FlightRecorderTest, RankThatNeverJoinedIsTheCulpritWhicheverDumpIsReadFirst) {
  TempDir dir;
  std::vector<std::string> paths;
  for (int rank = 0; rank < 4; ++rank) {
    std::vector<DumpEntry> entries;
    const int last = rank == 2 ? 4 : 6;  // rank 2 never issued #5 and #6
    for (int seq = 1; seq <= last; ++seq) {
      entries.push_back(
          {seq, "nccl:all_reduce", 4, seq < last || rank == 2 ? "completed" : "scheduled"});
    }
    paths.push_back(
        dir.Write("nccl_trace_rank_" + std::to_string(rank), FlightRecorderPickle(entries, 4)));
  }
  auto d = Diagnose({dir.path()}, {});
  ASSERT_TRUE(d.ok());
  for (const FileReport& f : d->files) EXPECT_EQ(f.kind, "flight_recorder") << f.path << f.error;
  ASSERT_FALSE(d->incidents.empty());
  const Incident& inc = d->incidents[0];
  EXPECT_EQ(inc.fault, FaultClass::kHangCollectiveMismatch);
  EXPECT_EQ(inc.culprit.rank, 2);
  EXPECT_NE(inc.root.evidence.text.find("collective #5"), std::string::npos)
      << inc.root.evidence.text;
  EXPECT_NE(inc.root.evidence.text.find("never by rank(s) 2"), std::string::npos);
  EXPECT_NE(inc.root.detail.find("train.py:44 in step"), std::string::npos) << inc.root.detail;
}

TEST(FlightRecorderTest, MismatchedSizesAndMissingDumps) {
  TempDir dir;
  for (int rank = 0; rank < 3; ++rank) {  // rank 3 of 4 left no dump
    std::vector<DumpEntry> entries;
    for (int seq = 1; seq <= 5; ++seq)
      entries.push_back({seq, "nccl:all_reduce", seq == 3 && rank == 1 ? 99 : 4});
    dir.Write("trace_" + std::to_string(rank), FlightRecorderPickle(entries, 4));
  }
  auto d = Diagnose({dir.path()}, {});
  ASSERT_TRUE(d.ok());
  bool mismatch = false, missing = false;
  for (const Incident& inc : d->incidents) {
    for (const Finding* f : {&inc.root}) {
      if (f->rule == "flight_recorder") {
        mismatch = true;
        EXPECT_EQ(f->where.rank, 1) << "rank 1 differs from the other two";
        EXPECT_NE(f->evidence.text.find("collective #3 differs"), std::string::npos)
            << f->evidence.text;
      }
    }
    for (const Finding& s : inc.symptoms)
      missing |= s.rule == "flight_recorder_missing" && s.where.rank == 3;
    missing |= inc.root.rule == "flight_recorder_missing" && inc.root.where.rank == 3;
  }
  EXPECT_TRUE(mismatch);
  EXPECT_TRUE(missing);
}

TEST(FlightRecorderTest, JsonDumpReadsLikeThePickle) {
  TempDir dir;
  for (int rank = 0; rank < 2; ++rank) {
    std::string entries;
    for (int seq = 1; seq <= (rank == 0 ? 3 : 2); ++seq) {
      entries += fmt::format(
          R"({}{{"record_id": {}, "pg_id": 0, "process_group": ["0", "default_pg"], "collective_seq_id": {}, "p2p_seq_id": 0, "profiling_name": "nccl:broadcast", "time_created_ns": 1724779239936775119, "input_sizes": [[8]], "input_dtypes": ["Float"], "state": "completed", "is_p2p": false, "frames": []}})",
          seq > 1 ? ", " : "", seq, seq);
    }
    dir.Write(
        fmt::format("fr_rank{}.json", rank),
        fmt::format(
            R"({{"version": "2.5", "pg_config": {{"0": {{"name": "0", "desc": "default_pg", "ranks": "[0, 1]"}}}}, "entries": [{}]}})",
            entries));
  }
  auto d = Diagnose({dir.path()}, {});
  ASSERT_TRUE(d.ok());
  ASSERT_FALSE(d->incidents.empty());
  EXPECT_EQ(d->incidents[0].culprit.rank, 1);
}

// --- Bounded reading ---

TEST(BoundedReadTest, SparseTenGigabyteFileIsReadFromItsStartAndItsEnd) {
  TempDir dir;
  const std::string path = dir.path() + "/huge.log";
  int fd = ::open(path.c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  // Text at the start (what sniffing sees), a 10 GB hole, the fault at the end.
  std::string head;
  while (head.size() < (80 << 10)) head += "2024-05-06 10:00:00 step 1 loss 2.5\n";
  const std::string tail =
      "\n2024-05-06 10:30:00 [rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to "
      "allocate 1 GiB.\n";
  const int64_t size = int64_t{10} << 30;
  ASSERT_EQ(::pwrite(fd, head.data(), head.size(), 0), static_cast<ssize_t>(head.size()));
  ASSERT_EQ(::pwrite(fd, tail.data(), tail.size(), size - static_cast<int64_t>(tail.size())),
            static_cast<ssize_t>(tail.size()));
  ::close(fd);
  ReadLimits limits;
  limits.max_file_bytes = 1 << 20;
  limits.max_line_bytes = 64 << 10;
  const auto t0 = std::chrono::steady_clock::now();
  SourceOutput out = ReadLogFile(path, limits);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
  EXPECT_EQ(out.file.bytes, size);
  EXPECT_LE(out.file.bytes_read, limits.max_file_bytes);
  ASSERT_EQ(out.findings.size(), 1u);
  EXPECT_EQ(out.findings[0].rule, "cuda_oom");
  EXPECT_EQ(out.findings[0].evidence.line, 0) << "after the skipped middle, no line number";
  EXPECT_EQ(out.findings[0].evidence.offset, size - static_cast<int64_t>(tail.size()) + 1);
  ASSERT_FALSE(out.file.notes.empty());
  EXPECT_NE(out.file.notes[0].find("were not read"), std::string::npos);
}

TEST(BoundedReadTest, FifoIsRefusedWithoutBlocking) {
  TempDir dir;
  const std::string path = dir.path() + "/pipe";
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  SourceOutput out = ReadLogFile(path, {});
  EXPECT_NE(out.file.error.find("a FIFO"), std::string::npos) << out.file.error;
  auto d = Diagnose({dir.path()}, {});  // a directory walk skips it
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->files.empty());
}

TEST(BoundedReadTest, EndlessLineIsAnalysedUpToTheLimitAndTheNextLinesCountOn) {
  TempDir dir;
  std::string text = "[rank0]: ValueError: head of a long line " + std::string(3 << 20, 'x') +
                     " [rank1]: KeyError: beyond the limit\n" +
                     "[rank2]: TypeError: the next line\n";
  const std::string path = dir.Write("long.log", text);
  ReadLimits limits;
  limits.max_line_bytes = 64 << 10;
  limits.chunk_bytes = 256 << 10;
  SourceOutput out = ReadLogFile(path, limits);
  ASSERT_EQ(out.findings.size(), 2u);
  EXPECT_EQ(out.findings[0].where.rank, 0);
  EXPECT_EQ(out.findings[0].evidence.text.size(), limits.max_line_bytes);
  EXPECT_EQ(out.findings[1].where.rank, 2);
  EXPECT_EQ(out.findings[1].evidence.line, 2);
  EXPECT_EQ(out.file.lines, 2);
}

TEST(BoundedReadTest, BinaryDataAndUnrecognisedTextAreUnknown) {
  TempDir dir;
  std::string binary(4096, '\0');
  for (size_t i = 0; i < binary.size(); ++i) binary[i] = static_cast<char>(i * 7);
  const std::string core = dir.Write("core.bin", binary);
  const std::string text = dir.Write("notes.txt", "nothing here\n");
  auto d = Diagnose({core, text}, {});
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->files.size(), 2u);
  EXPECT_EQ(d->files[0].kind, "unknown");
  ASSERT_FALSE(d->files[0].notes.empty());
  EXPECT_NE(d->files[0].notes[0].find("binary"), std::string::npos);
  EXPECT_EQ(d->files[1].kind, "unknown") << "plain text titan does not recognise is unknown";
  EXPECT_TRUE(d->incidents.empty());
}

TEST(BoundedReadTest, ADirectoryOfManyFilesIsCutAtTheLimit) {
  TempDir dir;
  for (int i = 0; i < 30; ++i) dir.Write(fmt::format("f{:02}.log", i), "nothing here\n");
  DiagnoseOptions o;
  o.max_files = 10;
  auto d = Diagnose({dir.path()}, o);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->files.size(), 10u);
  ASSERT_EQ(d->notes.size(), 1u);
  EXPECT_NE(d->notes[0].find("more than 10 files"), std::string::npos);
}

TEST(BoundedReadTest, InvalidUtf8InAFaultLineStillGivesValidJson) {
  TempDir dir;
  dir.Write("w.log", "[rank1]: ValueError: bad byte \xff\xfe here\n");
  auto d = Diagnose({dir.path()}, {});
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->incidents.size(), 1u);
  const std::string text = JsonText(DiagnosisJson(*d));
  EXPECT_FALSE(nlohmann::json::parse(text, nullptr, false).is_discarded());
}

TEST(BoundedReadTest, MissingPathIsAClearError) {
  auto d = Diagnose({"/nonexistent/titan/logs"}, {});
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("/nonexistent/titan/logs"), std::string::npos);
}

}  // namespace
}  // namespace titan::diagnose
