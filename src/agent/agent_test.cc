// Unit tests of the agent's parts, and of a whole Agent serving HTTP on loopback with the real
// /proc of this machine (no GPU here: the NVML collector is disabled, see collectors/nvml_*).
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <regex>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "src/agent/agent.h"
#include "src/agent/correlator.h"
#include "src/agent/detection.h"
#include "src/agent/http_server.h"
#include "src/agent/recorder_dump.h"
#include "src/base/clock.h"
#include "src/client/titan_client.h"
#include "test/support/subprocess.h"

namespace titan {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr int64_t kT0 = 1'700'000'000LL * kNsPerSecond;

const SignalDesc kStep{"titan_step_duration_seconds",
                       "Step time.",
                       SignalKind::kGauge,
                       {"rank"},
                       SecondsBuckets(),
                       true};
const SignalDesc kDisk{
    "titan_disk_write_bytes_per_second", "Disk writes.", SignalKind::kGauge, {"device"}, {}};
const SignalDesc kGpu{"titan_gpu_utilization_ratio", "GPU.", SignalKind::kGauge, {"gpu"}, {}, true};
const SignalDesc kStragglerScore{
    "titan_straggler_score", "Lateness.", SignalKind::kGauge, {"rank"}, {}};
const SignalDesc kCounter{"titan_x_total", "A counter.", SignalKind::kCounter, {}, {}};

AppEvent MakeApp(wire::EventKind kind, int32_t rank, int64_t step, int64_t time_ns) {
  AppEvent e{};
  e.kind = kind;
  e.rank = rank;
  e.step = step;
  e.time_ns = time_ns;
  return e;
}

TEST(GlobTest, MatchesStars) {
  EXPECT_TRUE(GlobMatch("titan_gpu_*", "titan_gpu_utilization_ratio"));
  EXPECT_TRUE(GlobMatch("*ratio", "titan_gpu_utilization_ratio"));
  EXPECT_TRUE(GlobMatch("titan_*_ratio", "titan_gpu_utilization_ratio"));
  EXPECT_FALSE(GlobMatch("titan_cpu_*", "titan_gpu_utilization_ratio"));
  EXPECT_TRUE(GlobMatch("exact", "exact"));
  EXPECT_FALSE(GlobMatch("exact", "exactly"));
}

TEST(DetectorRulesTest, DefaultsAndOverrides) {
  DetectorRules rules;
  ASSERT_EQ(rules.SpecsFor(kStep).size(), 2u);
  EXPECT_EQ(rules.SpecsFor(kStep)[0].kind, "zscore");
  EXPECT_EQ(rules.SpecsFor(kStep)[1].kind, "periodic");
  ASSERT_EQ(rules.SpecsFor(kGpu).size(), 1u);
  EXPECT_EQ(rules.SpecsFor(kGpu)[0].kind, "mad");
  EXPECT_TRUE(rules.SpecsFor(kDisk).empty());     // no rule
  EXPECT_TRUE(rules.SpecsFor(kCounter).empty());  // counters are never watched
  const SignalDesc eligible{"titan_memory_used_bytes", "x", SignalKind::kGauge, {}, {}, true};
  EXPECT_TRUE(rules.SpecsFor(eligible).empty());
  ASSERT_EQ(DetectorRules(/*detect_all=*/true).SpecsFor(eligible).size(), 1u);

  ASSERT_TRUE(rules.Add("titan_gpu_*=off").ok());
  EXPECT_TRUE(rules.SpecsFor(kGpu).empty());
  ASSERT_TRUE(rules.Add("titan_disk_*=zscore:k=4;cusum").ok());
  ASSERT_EQ(rules.SpecsFor(kDisk).size(), 2u);
  EXPECT_EQ(rules.SpecsFor(kDisk)[1].kind, "cusum");
}

TEST(DetectorRulesTest, BadRulesAreExplained) {
  DetectorRules rules;
  Status no_eq = rules.Add("titan_gpu_utilization_ratio");
  EXPECT_EQ(no_eq.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(no_eq.message()), HasSubstr("FAMILY=SPEC"));
  Status bad_kind = rules.Add("titan_gpu_*=nonsense");
  EXPECT_EQ(bad_kind.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad_kind.message()), HasSubstr("titan_gpu_*=nonsense"));
}

TEST(EventLogTest, RingsAreBounded) {
  EventLog log(3, 4);
  for (int i = 0; i < 5; ++i) {
    TransientEvent e;
    e.signal = "s" + std::to_string(i);
    EXPECT_EQ(log.AddTransient(e), static_cast<uint64_t>(i + 1));
  }
  auto kept = log.TransientsAfter(0, 100);
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept.front().id, 3u);
  EXPECT_EQ(log.TransientsAfter(4, 100).size(), 1u);
  for (int i = 0; i < 10; ++i) log.AddAppEvent(MakeApp(wire::EventKind::kMark, 0, i, kT0 + i));
  EXPECT_EQ(log.app_event_count(), 10u);
  auto app = log.AppEventsBetween(0, kT0 + 100);
  ASSERT_EQ(app.size(), 4u);
  EXPECT_EQ(app.front().step, 6);
  EXPECT_EQ(app.back().step, 9);
}

TEST(CorrelatorTest, NamesTheSignalsAndEventsThatMovedTogether) {
  MetricRegistry registry;
  EventLog log(10, 100);
  Series* step = registry.GetOrCreate(kStep, {"3"}, 100 * kNsPerMs);
  Series* disk = registry.GetOrCreate(kDisk, {"nvme0"}, 100 * kNsPerMs);
  Series* gpu = registry.GetOrCreate(kGpu, {"0"}, 100 * kNsPerMs);
  // 20 s of calm: disk ~1 MB/s, GPU at 0.9 with a little noise.
  for (int i = 0; i < 200; ++i) {
    const int64_t t = kT0 + i * 100 * kNsPerMs;
    disk->RecordGauge(t, 1e6 + (i % 3) * 1e4);
    gpu->RecordGauge(t, 0.9 + (i % 2) * 0.01);
  }
  const int64_t spike = kT0 + 20 * kNsPerSecond;
  log.AddAppEvent(MakeApp(wire::EventKind::kCheckpointBegin, 0, 800, spike - 30 * kNsPerMs));
  log.AddAppEvent(MakeApp(wire::EventKind::kStepEnd, 3, 812, spike));
  disk->RecordGauge(spike - 10 * kNsPerMs, 2.1e9);  // the checkpoint writes
  gpu->RecordGauge(spike - 5 * kNsPerMs, 0.91);     // the GPU did not move

  TransientEvent event;
  event.detection.detector = "zscore";
  event.detection.direction = "spike";
  event.detection.start_ns = spike;
  event.detection.end_ns = spike;
  event.detection.peak = 1.24;
  event.detection.baseline = 1.0;
  event.detection.score = 4.1;
  Correlator(registry, log).Explain(*step, &event);
  EXPECT_THAT(event.summary, StartsWith("step 812 on rank 3 took 1.24 s, +240 ms over its "
                                        "baseline (4.1 sigma, zscore)"));
  EXPECT_THAT(event.summary,
              HasSubstr("titan_disk_write_bytes_per_second{device=\"nvme0\"} rose to 2.1 GB/s"));
  EXPECT_THAT(event.summary, HasSubstr("checkpoint_begin (rank 0, step 800) 30 ms before"));
  EXPECT_THAT(event.summary, ::testing::Not(HasSubstr("titan_gpu_utilization_ratio")));
  EXPECT_EQ(event.related.size(), 2u);
}

// A step faster than its baseline (a dip) is said as such, and a mark sent without a step
// (step -1 on the wire) is shown without one.
TEST(CorrelatorTest, AFastStepIsUnderItsBaselineAndMarksWithoutAStepShowNone) {
  MetricRegistry registry;
  EventLog log(10, 100);
  Series* step = registry.GetOrCreate(kStep, {"2"}, 100 * kNsPerMs);
  const int64_t dip = kT0 + 20 * kNsPerSecond;
  log.AddAppEvent(MakeApp(wire::EventKind::kMark, 2, -1, dip - 5 * kNsPerMs));
  log.AddAppEvent(MakeApp(wire::EventKind::kStepEnd, 2, 75, dip));
  TransientEvent event;
  event.detection.detector = "zscore";
  event.detection.direction = "dip";
  event.detection.start_ns = dip;
  event.detection.end_ns = dip;
  event.detection.peak = 0.102;
  event.detection.baseline = 0.167;
  event.detection.score = 3.7;
  Correlator(registry, log).Explain(*step, &event);
  EXPECT_THAT(event.summary, StartsWith("step 75 on rank 2 took 102 ms, 65 ms under its baseline "
                                        "(3.7 sigma, zscore)"));
  EXPECT_THAT(event.summary, HasSubstr("(rank 2) 5 ms before"));
  EXPECT_THAT(event.summary, ::testing::Not(HasSubstr("step -1")));
}

// Steps 0..n-1 of `rank` from kT0, each in the log (begin, end) and in `series`; the steps in
// `slow` take 1 s, the others 100 ms, 10 ms apart. Returns each step's (begin, end).
std::vector<std::pair<int64_t, int64_t>> RunSteps(EventLog& log, Series* series, int32_t rank,
                                                  int n, std::initializer_list<int> slow) {
  std::vector<std::pair<int64_t, int64_t>> steps;
  int64_t t = kT0;
  for (int i = 0; i < n; ++i) {
    const bool is_slow = std::find(slow.begin(), slow.end(), i) != slow.end();
    const int64_t end = t + (is_slow ? kNsPerSecond : 100 * kNsPerMs);
    log.AddAppEvent(MakeApp(wire::EventKind::kStepBegin, rank, i, t));
    log.AddAppEvent(MakeApp(wire::EventKind::kStepEnd, rank, i, end));
    series->RecordGauge(end, NsToSeconds(end - t));
    steps.emplace_back(t, end);
    t = end + 10 * kNsPerMs;
  }
  return steps;
}

Detection SlowSteps(const std::vector<std::pair<int64_t, int64_t>>& steps, int first, int last,
                    double score) {
  return Detection{
      "zscore",         "spike", steps[first].second, steps[last].second, 1.0, 0.1, score,
      last - first + 1, 0};
}

// 4 ranks stepping together through a TransientPipeline (grouping window 1 s, held until
// Drain); the ranks in `slow_ranks` take 1 s for steps 40-41 (`two_steps`) or step 40 and their
// zscore detection (score 9 + rank) is submitted; rank `straggler` scores 5 as a straggler at
// step 40. Returns the events.
std::vector<TransientEvent> FourRanks(std::initializer_list<int32_t> slow_ranks, bool two_steps,
                                      int32_t straggler = -1) {
  MetricRegistry registry;
  EventLog log(10, 10'000);
  TransientPipeline pipeline(registry, log, 20, GroupingOptions{kNsPerSecond, 3600 * kNsPerSecond});
  for (int32_t rank = 0; rank < 4; ++rank) {
    const bool slow = std::find(slow_ranks.begin(), slow_ranks.end(), rank) != slow_ranks.end();
    Series* step = registry.GetOrCreate(kStep, {std::to_string(rank)}, 100 * kNsPerMs);
    const auto steps = RunSteps(log, step, rank, 45,
                                !slow       ? std::initializer_list<int>{}
                                : two_steps ? std::initializer_list<int>{40, 41}
                                            : std::initializer_list<int>{40});
    if (rank == straggler) {
      registry.GetOrCreate(kStragglerScore, {std::to_string(rank)}, 100 * kNsPerMs)
          ->RecordGauge(steps[40].second, 5.0);
    }
    if (slow) pipeline.Submit(*step, SlowSteps(steps, 40, two_steps ? 41 : 40, 9 + rank));
  }
  pipeline.Drain();
  return log.TransientsAfter(0, 10);
}

// One slowdown of every rank at the same steps is one event that says so and names the ranks;
// each rank's own detection stays inside it.
TEST(TransientPipelineTest, AllRanksSlowAtTheSameStepsAreOneCommonCauseEvent) {
  const auto events = FourRanks({0, 1, 2, 3}, /*two_steps=*/true);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_THAT(events[0].summary,
              StartsWith("all 4 ranks slow at steps 40-41: a common cause, not a straggler; "
                         "slowest: steps 40-41 on rank 3: step 4"));
  const auto json = nlohmann::json::parse(TransientToJson(events[0]));
  EXPECT_EQ(json["ranks"], nlohmann::json::parse("[0, 1, 2, 3]"));
  ASSERT_EQ(json["members"].size(), 4u);
  EXPECT_EQ(json["members"][2]["signal"], "titan_step_duration_seconds{rank=\"2\"}");
  EXPECT_EQ(json["members"][2]["score"], 11);
  EXPECT_EQ(json["signal"], "titan_step_duration_seconds{rank=\"3\"}");
}

// All ranks slow while one of them is late against its peers: that rank held the others.
TEST(TransientPipelineTest, AllRanksSlowBehindOneLateRankNameThatRank) {
  const auto events = FourRanks({0, 1, 2, 3}, /*two_steps=*/true, /*straggler=*/1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_THAT(events[0].summary,
              StartsWith("all 4 ranks slow at steps 40-41: rank 1 late against its peers "
                         "(straggler score 5.0): a straggler holding the others; slowest: "));
}

// One rank slow among four for several steps is that rank's own event: a straggler.
TEST(TransientPipelineTest, OneRankSlowForStepsIsAStragglerEventOfThatRank) {
  const auto events = FourRanks({3}, /*two_steps=*/true);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_THAT(events[0].summary, HasSubstr("rank 3 alone of 4 ranks, 2 steps: a straggler"));
  EXPECT_EQ(nlohmann::json::parse(TransientToJson(events[0]))["ranks"],
            nlohmann::json::parse("[3]"));
}

// One slow step on one rank is a blip, not yet a straggler.
TEST(TransientPipelineTest, OneSlowStepOnOneRankIsABlip) {
  const auto events = FourRanks({3}, /*two_steps=*/false);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_THAT(events[0].summary,
              StartsWith("step 40 on rank 3 took 1 s, +900 ms over its baseline (12.0 sigma, "
                         "zscore); rank 3 alone of 4 ranks, one step: a blip, not a straggler"));
}

// A mark that every step has is the rhythm of training, not a cause.
TEST(CorrelatorTest, AMarkOfEveryStepIsNotAnExplanation) {
  MetricRegistry registry;
  EventLog log(10, 10'000);
  Series* step = registry.GetOrCreate(kStep, {"1"}, 100 * kNsPerMs);
  const auto steps = RunSteps(log, step, 1, 41, {40});
  for (const auto& [begin, end] : steps) {
    AppEvent compute = MakeApp(wire::EventKind::kMark, 1, -1, begin + 5 * kNsPerMs);
    std::strcpy(compute.name, "compute");
    log.AddAppEvent(compute);
  }
  log.AddAppEvent(
      MakeApp(wire::EventKind::kCheckpointBegin, 1, 39, steps[40].first + 50 * kNsPerMs));
  TransientEvent event;
  event.detection = SlowSteps(steps, 40, 40, 9);
  Correlator(registry, log).Explain(*step, &event);
  EXPECT_THAT(event.summary, ::testing::Not(HasSubstr("compute")));
  EXPECT_THAT(event.related,
              ::testing::ElementsAre(HasSubstr("checkpoint_begin (rank 1, step 39)")));
}

// What moved is named by how well it lines up with the slow step, at most 3 of them: within the
// step first (application events before signals), then the nearest before it.
TEST(CorrelatorTest, ExplanationsAreOrderedByAlignmentAndCapped) {
  MetricRegistry registry;
  EventLog log(10, 10'000);
  Series* step = registry.GetOrCreate(kStep, {"0"}, 100 * kNsPerMs);
  Series* disk = registry.GetOrCreate(kDisk, {"nvme0"}, 100 * kNsPerMs);
  const auto steps = RunSteps(log, step, 0, 41, {40});
  const int64_t begin = steps[40].first;
  for (int64_t t = kT0; t < steps[40].second; t += 100 * kNsPerMs) {
    disk->RecordGauge(t, t > begin + 300 * kNsPerMs && t < begin + 600 * kNsPerMs ? 2e9 : 1e6);
  }
  for (const auto& [name, offset_ms] :
       std::vector<std::pair<const char*, int64_t>>{{"a", -900}, {"c", -100}, {"b", -500}}) {
    AppEvent mark = MakeApp(wire::EventKind::kMark, 0, -1, begin + offset_ms * kNsPerMs);
    std::strcpy(mark.name, name);
    log.AddAppEvent(mark);
  }
  log.AddAppEvent(MakeApp(wire::EventKind::kCheckpointBegin, 0, 39, begin + 200 * kNsPerMs));
  TransientEvent event;
  event.detection = SlowSteps(steps, 40, 40, 9);
  Correlator(registry, log).Explain(*step, &event);
  EXPECT_THAT(event.related,
              ::testing::ElementsAre(StartsWith("checkpoint_begin (rank 0, step 39)"),
                                     StartsWith("titan_disk_write_bytes_per_second"),
                                     StartsWith("mark 'c' (rank 0) ")));
}

TEST(FormatTest, UsesTheUnitInTheName) {
  EXPECT_EQ(FormatSignalValue("x_seconds", 0.24), "240 ms");
  EXPECT_EQ(FormatSignalValue("x_seconds", 12.5), "12.5 s");
  EXPECT_EQ(FormatSignalValue("x_ratio", 0.97), "97.0 %");
  EXPECT_EQ(FormatSignalValue("x_bytes_per_second", 2.1e9), "2.1 GB/s");
  EXPECT_EQ(FormatSignalValue("x_bytes", 4096), "4.1 kB");
}

TEST(RecorderDumpTest, PerfettoJsonHasCountersSlicesAndTransients) {
  MetricRegistry registry;
  EventLog log(10, 100);
  Series* gpu = registry.GetOrCreate(kGpu, {"0"}, 100 * kNsPerMs);
  gpu->RecordGauge(kT0 + 123'456'789, 0.5);
  gpu->RecordGauge(kT0 + 223'456'789, 0.25);
  log.AddAppEvent(MakeApp(wire::EventKind::kStepBegin, 1, 7, kT0));
  log.AddAppEvent(MakeApp(wire::EventKind::kStepEnd, 1, 7, kT0 + 50 * kNsPerMs));
  TransientEvent t;
  t.signal = gpu->Key();
  t.detection = Detection{"mad", "dip", kT0 + 223'456'789, kT0 + 223'456'789, 0.25, 0.5, 6, 1, 0};
  t.summary = "gpu dip";
  log.AddTransient(t);

  std::string json_text;
  RenderPerfettoDump(registry, log, {kT0 - kNsPerSecond, kT0 + kNsPerSecond, ""}, &json_text);
  auto json = nlohmann::json::parse(json_text);  // throws (fails the test) if malformed
  int counters = 0, slices = 0, transients = 0;
  for (const auto& e : json["traceEvents"]) {
    if (e["ph"] == "C") {
      ++counters;
      EXPECT_EQ(e["name"], "titan_gpu_utilization_ratio{gpu=\"0\"}");
    }
    if (e["ph"] == "X" && e["pid"] == 2) {
      ++slices;
      EXPECT_EQ(e["name"], "step 7");
      EXPECT_EQ(e["tid"], 1);
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 50000.0);
    }
    if (e["ph"] == "X" && e["pid"] == 3) ++transients;
  }
  EXPECT_EQ(counters, 2);
  EXPECT_EQ(slices, 1);
  EXPECT_EQ(transients, 1);
  // Timestamps keep nanoseconds in the text: 1700000000123456.789 us.
  EXPECT_THAT(json_text, HasSubstr("\"ts\":1700000000123456.789"));

  std::string csv;
  RenderCsvDump(registry, {kT0, kT0 + kNsPerSecond, "gpu"}, &csv);
  EXPECT_EQ(csv,
            "time_ns,series,value\n"
            "1700000000123456789,\"titan_gpu_utilization_ratio{gpu=\"\"0\"\"}\",0.5\n"
            "1700000000223456789,\"titan_gpu_utilization_ratio{gpu=\"\"0\"\"}\",0.25\n");
}

TEST(EventLogTest, AppEventsPageWalksTheRingAndSkipsWhatWasOverwritten) {
  EventLog log(10, 100);
  for (int i = 0; i < 250; ++i) {  // events 0..149 are overwritten
    log.AddAppEvent(MakeApp(wire::EventKind::kMark, 0, i, kT0 + i));
  }
  std::vector<AppEvent> page;
  uint64_t cursor = 0;
  EXPECT_TRUE(log.AppEventsPage(kT0, kT0 + 1000, &cursor, 30, &page));
  ASSERT_EQ(page.size(), 30u);
  EXPECT_EQ(page.front().step, 150);  // the oldest kept
  EXPECT_EQ(page.back().step, 179);
  page.clear();
  // Only 190..199 of the next 30 (180..209) are in the interval.
  EXPECT_TRUE(log.AppEventsPage(kT0 + 190, kT0 + 199, &cursor, 30, &page));
  ASSERT_EQ(page.size(), 10u);
  EXPECT_EQ(page.front().step, 190);
  page.clear();
  while (log.AppEventsPage(kT0, kT0 + 1000, &cursor, 30, &page)) {
  }
  ASSERT_EQ(page.size(), 40u);  // 210..249
  EXPECT_EQ(page.back().step, 249);
  EXPECT_FALSE(log.AppEventsPage(kT0, kT0 + 1000, &cursor, 30, &page));
  EXPECT_EQ(log.AppEventsBetween(kT0, kT0 + 1000).size(), 100u);
}

// A dump streamed in small pieces is exactly the dump rendered whole, and no piece is much
// longer than asked: the series, the app events (over several pages of the log) and the
// transients (over several pages) each stop where the piece is full and resume there.
TEST(RecorderDumpTest, PiecesAddUpToTheWholeDumpAndStayNearTheirSize) {
  RegistryOptions options;
  options.recorder_duration_ns = 600 * kNsPerSecond;
  MetricRegistry registry(options);
  EventLog log(1000, 20000);
  for (int gpu = 0; gpu < 3; ++gpu) {
    Series* s = registry.GetOrCreate(kGpu, {std::to_string(gpu)}, 10 * kNsPerMs);
    for (int i = 0; i < 3000; ++i) s->RecordGauge(kT0 + i * 10 * kNsPerMs, 0.001 * i + gpu);
  }
  for (int step = 0; step < 5000; ++step) {  // 10,000 events: 3 pages of the log
    log.AddAppEvent(MakeApp(wire::EventKind::kStepBegin, step % 4, step, kT0 + step * kNsPerMs));
    log.AddAppEvent(MakeApp(wire::EventKind::kStepEnd, step % 4, step, kT0 + step * kNsPerMs + 1));
  }
  for (int i = 0; i < 600; ++i) {  // 3 pages of transients
    TransientEvent t;
    t.signal = "titan_gpu_utilization_ratio{gpu=\"0\"}";
    t.detection = Detection{"mad", "dip", kT0 + i * kNsPerMs, kT0 + i * kNsPerMs, 0, 1, 6, 1, 0};
    t.summary = "dip " + std::to_string(i);
    log.AddTransient(t);
  }
  const DumpRequest request{kT0 - kNsPerSecond, kT0 + 60 * kNsPerSecond, ""};
  for (DumpFormat format : {DumpFormat::kPerfetto, DumpFormat::kCsv}) {
    std::string whole;
    if (format == DumpFormat::kPerfetto) {
      RenderPerfettoDump(registry, log, request, &whole);
    } else {
      RenderCsvDump(registry, request, &whole);
    }
    DumpRenderer renderer(registry, &log, request, format);
    std::string streamed, piece;
    int pieces = 0;
    while (renderer.Next(4096, &piece)) {
      ASSERT_FALSE(piece.empty());
      ASSERT_LT(piece.size(), 4096u + 1024u) << "piece " << pieces;
      streamed += piece;
      piece.clear();
      ++pieces;
    }
    EXPECT_FALSE(renderer.Next(4096, &piece));
    EXPECT_TRUE(piece.empty());
    EXPECT_GT(pieces, 50);
    EXPECT_EQ(streamed, whole);
  }
  std::string json_text;
  RenderPerfettoDump(registry, log, request, &json_text);
  auto json = nlohmann::json::parse(json_text);
  int counters = 0, steps = 0, transients = 0;
  for (const auto& e : json["traceEvents"]) {
    counters += e["ph"] == "C";
    steps += e["ph"] == "X" && e["pid"] == 2;
    transients += e["ph"] == "X" && e["pid"] == 3;
  }
  EXPECT_EQ(counters, 9000);
  EXPECT_EQ(steps, 5000);
  EXPECT_EQ(transients, 600);
}

// The agent's /metrics once they contain `text` (polled for up to 20 s; the last answer if they
// never do). The agent reads its clients' events on its own thread: a test waits for them so.
std::string MetricsOnceTheyShow(int port, const std::string& text, int* status) {
  std::string metrics;
  for (int waited_ms = 0; waited_ms < 20'000; waited_ms += 20) {
    metrics = testing::HttpGet(port, "/metrics", status);
    if (metrics.find(text) != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return metrics;
}

class AgentTest : public ::testing::Test {
 protected:
  AgentOptions Options() {
    AgentOptions o;
    o.port = 0;
    o.socket_path = dir_.File("agent.sock");
    o.disabled_collectors = {"nvml"};
    o.interval_ns = 50 * kNsPerMs;
    return o;
  }
  testing::TempDir dir_;
};

TEST_F(AgentTest, AStepEndWithoutItsBeginIsCountedNotTimed) {
  auto agent = Agent::Start(Options());
  ASSERT_TRUE(agent.ok()) << agent.status().ToString();
  Client client(dir_.File("agent.sock"), 7);
  client.StepEnd(-1);  // "no step" and no begin: was timed from 1970, a 1.8e9 s step
  client.StepEnd(3);
  // Once the agent has read both (a fixed wait is a race on a loaded machine).
  int status = 0;
  const std::string metrics =
      MetricsOnceTheyShow((*agent)->port(), "titan_app_events_unmatched_total 2", &status);
  EXPECT_EQ(status, 200);
  EXPECT_THAT(metrics, HasSubstr("titan_app_events_unmatched_total 2"));
  EXPECT_THAT(metrics, Not(HasSubstr("titan_steps_total{rank=\"7\"} 1")));
  EXPECT_THAT(metrics, Not(HasSubstr("titan_step_duration_seconds{rank=\"7\"}")));
}

TEST_F(AgentTest, ServesMetricsEventsRecorderAndHealth) {
  auto agent = Agent::Start(Options());
  ASSERT_TRUE(agent.ok()) << agent.status().ToString();
  const int port = (*agent)->port();
  Client client(dir_.File("agent.sock"), 5);
  for (int i = 0; i < 30; ++i) {
    client.StepBegin(i);
    // Steps of 5-7 ms: a baseline with the jitter of real steps. Sleeps of exactly 5 ms vary by
    // microseconds, and the steps after the slow one, a few microseconds slower (cold caches),
    // then scored as spikes too: the slow step's transient stayed open and was never reported.
    std::this_thread::sleep_for(std::chrono::milliseconds(i == 25 ? 200 : 5 + i % 3));
    client.StepEnd(i);
  }
  // Drain() covers the detections submitted so far: first the agent must have read all 30 steps.
  int status = 0;
  const std::string metrics =
      MetricsOnceTheyShow(port, "titan_steps_total{rank=\"5\"} 30", &status);
  (*agent)->transients().Drain();
  EXPECT_EQ(status, 200);
  EXPECT_THAT(metrics, HasSubstr("titan_steps_total{rank=\"5\"} 30"));
  EXPECT_THAT(metrics, HasSubstr("titan_collector_up{collector=\"cpu\"} 1"));
  EXPECT_THAT(metrics, HasSubstr("titan_cpu_utilization_ratio_window_max{cpu=\"total\"}"));

  const std::string events = testing::HttpGet(port, "/events", &status);
  EXPECT_EQ(status, 200);
  auto json = nlohmann::json::parse(events);
  ASSERT_GE(json.size(), 1u) << events;
  // The slow step is named at the transient's peak: "step 25 on rank 5 took ..." or, when a
  // loaded machine also slowed a neighbouring step, "steps 24-26 on rank 5: step 25 took ...".
  // Other steps slowed by the load may raise transients of their own; look for this one.
  const std::regex slow_step("(step 25 on rank 5|steps [0-9]+-[0-9]+ on rank 5: step 25) took");
  const auto slow = std::find_if(json.begin(), json.end(), [&](const nlohmann::json& e) {
    return std::regex_search(e["summary"].get<std::string>(), slow_step);
  });
  ASSERT_NE(slow, json.end()) << events;
  EXPECT_EQ((*slow)["signal"], "titan_step_duration_seconds{rank=\"5\"}");

  const std::string dump = testing::HttpGet(port, "/recorder?last=30s&match=rank", &status);
  EXPECT_EQ(status, 200);
  EXPECT_THAT(dump, HasSubstr("\"name\":\"step 25\""));
  EXPECT_EQ(nlohmann::json::parse(dump, nullptr, false).is_discarded(), false);

  testing::HttpGet(port, "/recorder?last=soon", &status);
  EXPECT_EQ(status, 400);
  testing::HttpGet(port, "/metrics?window=999s", &status);
  EXPECT_EQ(status, 400);
  const std::string health = testing::HttpGet(port, "/healthz", &status);
  EXPECT_EQ(status, 200);
  EXPECT_THAT(health, HasSubstr("\"status\": \"ok\""));
}

TEST_F(AgentTest, OccupiedPortIsAClearError) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  AgentOptions o = Options();
  o.port = ntohs(addr.sin_port);
  auto agent = Agent::Start(o);
  close(fd);
  ASSERT_FALSE(agent.ok());
  EXPECT_EQ(agent.status().code(), StatusCode::kAlreadyExists);
  EXPECT_THAT(std::string(agent.status().message()), HasSubstr("--port"));
}

TEST_F(AgentTest, UnwritableDumpDirIsRejectedAtStart) {
  AgentOptions o = Options();
  o.dump_dir = dir_.File("does-not-exist");
  auto agent = Agent::Start(o);
  ASSERT_FALSE(agent.ok());
  EXPECT_THAT(std::string(agent.status().message()), HasSubstr("--dump-dir"));
}

TEST_F(AgentTest, MissingProcFilesDoNotStopTheAgent) {
  AgentOptions o = Options();
  o.proc_root = dir_.File("empty-proc");  // nothing there: every host collector is down
  auto agent = Agent::Start(o);
  ASSERT_TRUE(agent.ok()) << agent.status().ToString();
  int status = 0;
  const std::string metrics = testing::HttpGet((*agent)->port(), "/metrics", &status);
  EXPECT_EQ(status, 200);
  EXPECT_THAT(metrics, HasSubstr("titan_collector_up{collector=\"cpu\"} 0"));
}

}  // namespace
}  // namespace titan
