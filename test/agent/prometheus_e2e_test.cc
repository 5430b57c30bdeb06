// End to end with real components: the real `titan` binary, a real Prometheus server (Debian's
// `prometheus`) scraping it, and `promtool check metrics` on its output. A short CPU burst on
// one core and a single slow training step are injected between two scrapes; the test asserts
// that what Prometheus stored shows them in the _window_max series, while the plain last-value
// gauge (what the DCGM exporter and node_exporter export) does not.
//
// Prometheus scrapes every 5 s with the agent's --window 5 (the same semantics as the 15 s
// default, a third of the wall time in CI).
#include <sched.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "src/client/titan_client.h"
#include "test/support/subprocess.h"

namespace titan {
namespace {

using namespace std::chrono_literals;
using testing::FreeTcpPort;
using ::testing::HasSubstr;
using testing::HttpGet;
using testing::Subprocess;
using testing::TempDir;

const std::string kTitan = std::string(TITAN_BINARY_DIR) + "/tools/titan/titan";

// Burns `core` for `duration` (pinned), to make a CPU transient on that core alone.
void BurnCore(int core, std::chrono::milliseconds duration) {
  std::thread burner([core, duration] {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(core, &set);
    sched_setaffinity(0, sizeof(set), &set);
    const auto end = std::chrono::steady_clock::now() + duration;
    volatile uint64_t x = 0;
    while (std::chrono::steady_clock::now() < end) x = x + 1;
  });
  burner.join();
}

// Value of a Prometheus instant query returning one series, or NaN.
double Query(int prometheus_port, const std::string& promql) {
  std::string path = "/api/v1/query?query=";
  for (char c : promql) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.') {
      path += c;
    } else {
      char hex[4];
      std::snprintf(hex, sizeof(hex), "%%%02X", static_cast<unsigned char>(c));
      path += hex;
    }
  }
  const std::string body = HttpGet(prometheus_port, path);
  auto json = nlohmann::json::parse(body, nullptr, false);
  if (json.is_discarded() || json["status"] != "success") return std::nan("");
  auto& result = json["data"]["result"];
  if (!result.is_array() || result.empty()) return std::nan("");
  return std::stod(result[0]["value"][1].get<std::string>());
}

TEST(PrometheusE2eTest, ShortTransientsSurviveTheScrape) {
  if (!testing::HaveProgram("prometheus")) {
    GTEST_SKIP() << "prometheus is not installed (scripts/bootstrap.sh installs it)";
  }
  TempDir dir;
  const std::string socket = dir.File("agent.sock");
  Subprocess agent({kTitan, "agent", "--port", "0", "--socket", socket, "--interval", "100ms",
                    "--window", "5", "--disable", "nvml"},
                   dir.File("agent.log"));
  ASSERT_TRUE(agent.WaitForOutput("listening on http://127.0.0.1:", 20s)) << agent.Output();
  std::smatch m;
  const std::string out = agent.Output();
  ASSERT_TRUE(std::regex_search(out, m, std::regex("127\\.0\\.0\\.1:(\\d+)")));
  const int agent_port = std::stoi(m[1]);

  const int prom_port = FreeTcpPort();
  {
    std::ofstream config(dir.File("prometheus.yml"));
    config << "global:\n  scrape_interval: 5s\n  scrape_timeout: 4s\n"
              "scrape_configs:\n  - job_name: titan\n    static_configs:\n"
              "      - targets: ['127.0.0.1:"
           << agent_port << "']\n";
  }
  Subprocess prometheus({"prometheus", "--config.file=" + dir.File("prometheus.yml"),
                         "--storage.tsdb.path=" + dir.File("tsdb"),
                         "--web.listen-address=127.0.0.1:" + std::to_string(prom_port)},
                        dir.File("prometheus.log"));
  // Wait for the first successful scrape.
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (Query(prom_port, "up{job=\"titan\"}") != 1) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "Prometheus never scraped the agent\n"
                                                          << prometheus.Output();
    std::this_thread::sleep_for(500ms);
  }

  // Normal steps of ~20 ms on rank 0, then one step of 300 ms, then normal again.
  Client client(socket, 0);
  ASSERT_TRUE(client.Hello("e2e"));
  int64_t step = 0;
  auto run_step = [&](std::chrono::milliseconds length) {
    client.StepBegin(step);
    std::this_thread::sleep_for(length);
    client.StepEnd(step);
    ++step;
  };
  for (int i = 0; i < 40; ++i) run_step(20ms);
  run_step(300ms);
  BurnCore(0, 400ms);
  for (int i = 0; i < 20; ++i) run_step(20ms);

  // Let two scrapes happen after the transients.
  std::this_thread::sleep_for(11s);
  const double step_max =
      Query(prom_port, "max_over_time(titan_step_duration_seconds_window_max{rank=\"0\"}[2m])");
  const double step_last_max =
      Query(prom_port, "max_over_time(titan_step_duration_seconds{rank=\"0\"}[2m])");
  EXPECT_GE(step_max, 0.29) << "the slow step is not in the scraped window max";
  EXPECT_LT(step_last_max, 0.29) << "the last-value gauge should have missed the slow step";
  const double cpu_max =
      Query(prom_port, "max_over_time(titan_cpu_utilization_ratio_window_max{cpu=\"0\"}[2m])");
  EXPECT_GE(cpu_max, 0.9) << "the CPU burst on core 0 is not in the scraped window max";
  EXPECT_EQ(Query(prom_port, "titan_steps_total{rank=\"0\"}"), 61);
  EXPECT_GE(Query(prom_port, "sum(titan_transients_total{signal=\"titan_step_duration_seconds\"})"),
            1)
      << HttpGet(agent_port, "/events");

  const std::string events = HttpGet(agent_port, "/events");
  // "step 40 on rank 0 took 300 ms, ..." or, when the next step was slowed too (a loaded CI
  // machine), "steps 40-41 on rank 0: step 40 took 300 ms, ...".
  EXPECT_THAT(events, HasSubstr("on rank 0"));
  EXPECT_THAT(events, ::testing::ContainsRegex("step 40 (on rank 0 )?took 30[0-9] ms"));
}

TEST(PrometheusE2eTest, PromtoolFindsNoLintProblems) {
  if (!testing::HaveProgram("promtool")) {
    GTEST_SKIP() << "promtool is not installed (scripts/bootstrap.sh installs prometheus)";
  }
  TempDir dir;
  const std::string socket = dir.File("agent.sock");
  Subprocess agent({kTitan, "agent", "--port", "0", "--socket", socket, "--disable", "nvml"},
                   dir.File("agent.log"));
  ASSERT_TRUE(agent.WaitForOutput("listening on http://127.0.0.1:", 20s)) << agent.Output();
  std::smatch m;
  const std::string out = agent.Output();
  ASSERT_TRUE(std::regex_search(out, m, std::regex("127\\.0\\.0\\.1:(\\d+)")));
  const int port = std::stoi(m[1]);
  Client client(socket, 2);
  client.StepBegin(1);
  client.StepEnd(1);
  client.CheckpointBegin(1);
  client.CheckpointEnd(1, 1 << 20);
  std::this_thread::sleep_for(1500ms);  // a few sampling rounds

  // promtool (2.42) lints the 0.0.4 text format only.
  int status = 0;
  const std::string metrics = HttpGet(port, "/metrics", &status);
  ASSERT_EQ(status, 200);
  ASSERT_THAT(metrics, HasSubstr("titan_cpu_utilization_ratio_window_max"));
  ASSERT_THAT(metrics, HasSubstr("titan_checkpoint_blocking_seconds_total{rank=\"2\"}"));
  const std::string file = dir.File("metrics.txt");
  std::ofstream(file) << metrics;
  const std::string lint_out = dir.File("lint.txt");
  const int rc =
      std::system(("promtool check metrics < " + file + " > " + lint_out + " 2>&1").c_str());
  std::ifstream lint(lint_out);
  std::string findings((std::istreambuf_iterator<char>(lint)), {});
  EXPECT_EQ(rc, 0) << findings;
  EXPECT_EQ(findings, "") << findings;

  // OpenMetrics by content negotiation: counter families without _total, and the # EOF end.
  const std::string om =
      HttpGet(port, "/metrics", &status, "application/openmetrics-text; version=1.0.0");
  ASSERT_EQ(status, 200);
  EXPECT_THAT(om, HasSubstr("# TYPE titan_steps counter\ntitan_steps_total{rank=\"2\"} 1\n"));
  EXPECT_TRUE(om.ends_with("# EOF\n"));
}

}  // namespace
}  // namespace titan
