#include "src/sim/report.h"

#include <cmath>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "src/base/text.h"
#include "src/sim/scenario_text.h"

namespace titan::sim {
namespace {

using nlohmann::json;

std::vector<SweepRow> SmallSweep() {
  Result<json> tree = LoadScenarioTree("llama3-16k");
  EXPECT_TRUE(tree.ok());
  (*tree)["run"]["replicas"] = 8;
  (*tree)["run"]["duration_days"] = 5;
  Result<std::vector<SweepRow>> rows = Sweep(*tree, "gpus", {"2048", "16384", "65536"});
  EXPECT_TRUE(rows.ok()) << rows.status().ToString();
  return rows.ok() ? *rows : std::vector<SweepRow>{};
}

void ExpectAllNumbersFinite(const json& node, const std::string& path) {
  if (node.is_number()) {
    EXPECT_TRUE(std::isfinite(node.get<double>())) << path;
  } else if (node.is_object()) {
    for (auto it = node.begin(); it != node.end(); ++it)
      ExpectAllNumbersFinite(*it, path + "." + it.key());
  } else if (node.is_array()) {
    for (size_t i = 0; i < node.size(); ++i)
      ExpectAllNumbersFinite(node[i], path + "[" + std::to_string(i) + "]");
  }
}

TEST(ReportTest, SweepScalesSparesAndShowsFallingMtbf) {
  const std::vector<SweepRow> rows = SmallSweep();
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].summary.scenario.cluster.spares, 8);  // 64 * 2048 / 16384
  EXPECT_EQ(rows[2].summary.scenario.cluster.spares, 256);
  EXPECT_EQ(rows[0].summary.scenario.job.reference_gpus, 16384);
  EXPECT_NEAR(rows[0].summary.job_mtbf_seconds / rows[2].summary.job_mtbf_seconds, 32, 1e-9);
  EXPECT_GT(rows[0].summary.ettr.mean, rows[2].summary.ettr.mean);
  const std::string table = FormatSweepTable("gpus", rows);
  EXPECT_NE(table.find("65536"), std::string::npos) << table;
  EXPECT_NE(table.find("scaling"), std::string::npos);
}

TEST(ReportTest, JsonCarriesTheSummaryWithFiniteNumbers) {
  const std::vector<SweepRow> rows = SmallSweep();
  ASSERT_FALSE(rows.empty());
  const json one = SummaryJson(rows[1].summary);
  EXPECT_EQ(one["gpus"], 16384);
  EXPECT_EQ(one["interruptions_by_cause"].size(), 18u);
  EXPECT_NEAR(one["ettr"]["mean"].get<double>(), rows[1].summary.ettr.mean, 1e-12);
  double share_sum = 0;
  std::vector<std::string> names;
  for (const auto& [name, e] : one["time_share"].items()) {
    share_sum += e["mean"].get<double>();
    names.push_back(name);
  }
  EXPECT_NEAR(share_sum, 1.0, 1e-9);
  // titan's one goodput vocabulary: the same keys as titan run's ledger (GoodputLedger test).
  EXPECT_THAT(names,
              ::testing::UnorderedElementsAre("productive", "checkpoint", "lost_work", "detection",
                                              "restart", "startup", "waiting", "degraded"));
  EXPECT_EQ(one["time_share"]["startup"]["mean"], 0.0);  // sim counts start-up in restart
  const json sweep = SweepJson("gpus", rows);
  EXPECT_EQ(sweep["rows"].size(), 3u);
  EXPECT_EQ(sweep["rows"][2]["value"], "65536");
  ExpectAllNumbersFinite(sweep, "");
  // And it survives a round trip through text.
  EXPECT_EQ(json::parse(sweep.dump()), sweep);
}

TEST(ReportTest, CsvHasOneRowPerPointAndMatchingColumns) {
  const std::vector<SweepRow> rows = SmallSweep();
  const std::string csv = FormatCsv("gpus", rows);
  std::string_view rest = csv;
  std::vector<std::string_view> lines;
  while (!rest.empty()) lines.push_back(NextLine(&rest));
  ASSERT_EQ(lines.size(), 4u) << csv;
  auto columns = [](std::string_view line) {
    return std::count(line.begin(), line.end(), ',') + 1;
  };
  for (std::string_view line : lines) EXPECT_EQ(columns(line), columns(lines[0])) << line;
  EXPECT_EQ(lines[0].substr(0, 10), "name,sweep");
  EXPECT_NE(lines[3].find(",gpus,65536,65536,"), std::string::npos) << lines[3];
  EXPECT_EQ(csv.find("nan"), std::string::npos);
  EXPECT_EQ(csv.find("inf"), std::string::npos);
}

TEST(ReportTest, TableNamesEveryCauseAndTheFormulas) {
  const std::vector<SweepRow> rows = SmallSweep();
  ASSERT_FALSE(rows.empty());
  const std::string table = FormatTable(rows[1].summary);
  for (const char* needle : {"ETTR", "young", "daly", "faulty GPU", "system memory", "lost_work",
                             "waiting", "job MTBF"}) {
    EXPECT_NE(table.find(needle), std::string::npos) << needle << "\n" << table;
  }
}

}  // namespace
}  // namespace titan::sim
