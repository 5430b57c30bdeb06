// Runs the real `titan predict` (the titan binary) on the Titan data in ../shared and R's survival
// package (Rscript, Debian r-cran-survival) side by side: what a user sees, and the reference.
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "src/fleet/shared_data_for_tests.h"
#include "test/support/subprocess.h"

namespace {

using nlohmann::json;

using Output = titan::testing::ShellResult;
Output Shell(const std::string& command) { return titan::testing::RunShell(command); }

std::string Titan() { return std::string(TITAN_BINARY_DIR) + "/tools/titan/titan predict "; }

json ReadJson(const std::string& path) {
  std::ifstream f(path);
  return json::parse(f);
}

// R's output: "name v1 v2 ..." per line.
std::map<std::string, std::vector<std::string>> ReadR(const std::string& path) {
  std::map<std::string, std::vector<std::string>> out;
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream words(line);
    std::string name, w;
    words >> name;
    while (words >> w) out[name].push_back(w);
  }
  return out;
}

std::vector<double> Numbers(const std::vector<std::string>& words) {
  std::vector<double> v;
  for (const std::string& w : words) v.push_back(w == "NA" ? NAN : std::stod(w));
  return v;
}

std::vector<double> Numbers(const json& a) {
  std::vector<double> v;
  for (const json& x : a) v.push_back(x.is_null() ? NAN : x.get<double>());
  return v;
}

// Equal within `rel` relative (or `rel` absolute near 0); NaN equals NaN.
void ExpectClose(const std::vector<double>& got, const std::vector<double>& want, double rel,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << "[" << i << "]";
      continue;
    }
    EXPECT_NEAR(got[i], want[i], rel * std::max(1.0, std::fabs(want[i])))
        << what << "[" << i << "]";
  }
}

TEST(PredictCliTest, SurvivalEqualsRsSurvivalPackageOnTheTitanData) {
  const std::string data = titan::fleet::TitanGcFullCsv();
  TITAN_REQUIRE_SHARED_FILE(data);
  const std::string dir = ::testing::TempDir();
  Output o = Shell(Titan() + "survival " + data + " --by cage --by node --json " + dir +
                   "/surv.json --records " + dir + "/records.csv");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_NE(o.out.find("Kaplan-Meier survival by age"), std::string::npos) << o.out;
  Output r = Shell("Rscript " + std::string(TITAN_SOURCE_DIR) + "/src/predict/r_reference.R " +
                   dir + "/records.csv " + dir + "/r.txt cage node");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const json a = ReadJson(dir + "/surv.json");
  auto ref = ReadR(dir + "/r.txt");
  // Kaplan-Meier of the whole fleet: every event time, within 1e-9 (both sum the same terms).
  const json& km = a["kaplan_meier"][0];
  ASSERT_EQ(km["group"], "all");
  ExpectClose(Numbers(km["time_days"]), Numbers(ref["km_time"]), 1e-12, "time");
  ExpectClose(Numbers(km["n_risk"]), Numbers(ref["km_n_risk"]), 0, "n.risk");
  ExpectClose(Numbers(km["surv"]), Numbers(ref["km_surv"]), 1e-9, "surv");
  ExpectClose(Numbers(km["std_err"]), Numbers(ref["km_std_err"]), 1e-9, "std.err");
  ExpectClose(Numbers(km["lower"]), Numbers(ref["km_lower"]), 1e-9, "lower");
  ExpectClose(Numbers(km["upper"]), Numbers(ref["km_upper"]), 1e-9, "upper");
  // Cox: coefficients and both standard errors within 1e-6 relative (R stops Newton-Raphson at
  // a relative log-likelihood change of 1e-9, as titan does), log-likelihoods within 1e-9.
  std::vector<double> coef, se, rse;
  for (const json& t : a["cox"]["terms"]) {
    coef.push_back(t["coef"]);
    se.push_back(t["se"]);
    rse.push_back(t["robust_se"]);
  }
  EXPECT_EQ(ref["cox_terms"],
            (std::vector<std::string>{"cage1", "cage2", "node1", "node2", "node3"}));
  ExpectClose(coef, Numbers(ref["cox_coef"]), 1e-6, "coef");
  ExpectClose(se, Numbers(ref["cox_se"]), 1e-6, "se");
  ExpectClose(rse, Numbers(ref["cox_robust_se"]), 1e-6, "robust se");
  ExpectClose({a["cox"]["loglik_null"], a["cox"]["loglik"]}, Numbers(ref["cox_loglik"]), 1e-9,
              "loglik");
  // Aalen-Johansen: R lists every time with an event or a censoring; compare at titan's (event)
  // times through R's step function.
  const json& ci = a["cumulative_incidence"];
  std::vector<double> rt = Numbers(ref["aj_time"]);
  for (size_t c = 0; c < ci["classes"].size(); ++c) {
    const std::string cls = ci["classes"][c];
    std::vector<double> rv = Numbers(ref["aj_" + cls]), want;
    for (double t : Numbers(ci["time_days"])) {
      size_t k = std::upper_bound(rt.begin(), rt.end(), t) - rt.begin();
      want.push_back(k == 0 ? 0 : rv[k - 1]);
    }
    ExpectClose(Numbers(ci["incidence"][c]), want, 1e-9, "incidence " + cls);
  }
}

TEST(PredictCliTest, TheTitanPapersShapeAndTheIssuesCounts) {
  const std::string data = titan::fleet::TitanGcFullCsv();
  TITAN_REQUIRE_SHARED_FILE(data);
  const std::string out = ::testing::TempDir() + "/shape.json";
  Output o = Shell(Titan() + "survival " + data + " --by cage --mtbf-by batch --json " + out);
  ASSERT_EQ(o.exit_code, 0) << o.out;
  const json a = ReadJson(out);
  // Cage 0 survives best, cage 2 worst, by a wide margin (hazard ratios well above 1).
  const json& terms = a["cox"]["terms"];
  EXPECT_GT(terms[0]["hr"].get<double>(), 2);
  EXPECT_GT(terms[1]["hr"].get<double>(), terms[0]["hr"].get<double>() * 2);
  std::map<std::string, json> q;
  for (const json& row : a["mtbf"]["rows"]) q[row["period"]] = row;
  EXPECT_EQ(q["2016-Q4"]["failures"], 846);
  EXPECT_NEAR(q["2016-Q4"]["mtbf_hours"].get<double>(), 2.6, 0.1);  // paper: 2.7 (813)
  EXPECT_GT(q["2015-Q1"]["mtbf_hours"].get<double>(), 33);          // paper: above 33 before
  EXPECT_NEAR(q["2015-Q4"]["mtbf_hours"].get<double>(), 7.8, 0.1);  // paper: 7.7
  // The new batch's MTBF about 12x the old's (2018-Q4: 7.9 h vs 96 h in the paper).
  const json& b = q["2018-Q4"]["by_group"];
  EXPECT_GT(b["new"]["mtbf_hours"].get<double>() / b["old"]["mtbf_hours"].get<double>(), 8);
}

TEST(PredictCliTest, BacktestFieldsAndTheDefaultBeatsTheBaselines) {
  const std::string data = titan::fleet::TitanGcFullCsv();
  TITAN_REQUIRE_SHARED_FILE(data);
  const std::string out = ::testing::TempDir() + "/bt.json";
  Output o = Shell(Titan() + "backtest " + data +
                   " --split 2017-01-01 --horizon 30d --every 15d --json " + out);
  ASSERT_EQ(o.exit_code, 0) << o.out;
  const json b = ReadJson(out);
  ASSERT_EQ(b["default_model"], "cox_history");
  for (const char* name :
       {"cox_history", "xgboost_cox", "repeat_offenders", "kaplan_meier", "cox_batch_age"}) {
    ASSERT_TRUE(b["models"].contains(name)) << name;
    const json& m = b["models"][name];
    for (const char* f : {"c_index", "c_index_uno", "auc", "brier", "calibration_slope"}) {
      EXPECT_TRUE(m.contains(f)) << name << " " << f;
    }
    for (const char* f : {"precision_at", "recall_at", "lift_at"}) {
      for (const char* k : {"0.01", "0.05", "0.1"}) EXPECT_TRUE(m[f].contains(k)) << f << k;
    }
  }
  for (const char* unit : {"node_name", "slot_name"}) {
    EXPECT_TRUE(b["units"][unit]["models"].contains("cox_history")) << unit;
  }
  EXPECT_NEAR(b["models"]["kaplan_meier"]["c_index"].get<double>(), 0.5, 1e-9);
  // The stated margin (docs/predict.md): concordance at least 0.05 above cox_batch_age and
  // lift at the top 10% at least 1.5x, and above every baseline in both.
  const json& d = b["models"]["cox_history"];
  for (const char* base : {"repeat_offenders", "kaplan_meier", "cox_batch_age"}) {
    EXPECT_GT(d["c_index"].get<double>(), b["models"][base]["c_index"].get<double>()) << base;
    EXPECT_GT(d["lift_at"]["0.1"].get<double>(), b["models"][base]["lift_at"]["0.1"].get<double>())
        << base;
  }
  EXPECT_GE(b["default_vs_cox_batch_age"]["c_index_gain"].get<double>(), 0.05);
  EXPECT_GE(b["default_vs_cox_batch_age"]["lift_at_0.1_ratio"].get<double>(), 1.5);
  EXPECT_NEAR(d["calibration_slope"].get<double>(), 1, 0.25);
}

TEST(PredictCliTest, RiskRanksWithReasons) {
  const std::string data = titan::fleet::TitanGcFullCsv();
  TITAN_REQUIRE_SHARED_FILE(data);
  const std::string out = ::testing::TempDir() + "/risk.json";
  Output o =
      Shell(Titan() + "risk " + data + " --at 2017-06-01 --horizon 30d --top 10 --json " + out);
  ASSERT_EQ(o.exit_code, 0) << o.out;
  const json r = ReadJson(out);
  ASSERT_EQ(r["components"].size(), 10u);
  double last = 1;
  for (const json& c : r["components"]) {
    const double p = c["p"];
    EXPECT_GT(p, 0);
    EXPECT_LE(p, last);
    last = p;
  }
  EXPECT_FALSE(r["components"][0]["reasons"].empty());
  EXPECT_GT(r["expected_failures"].get<double>(), 10);
  EXPECT_GT(r["components_in_service"].get<int>(), 15000);
}

TEST(PredictCliTest, TitanReportDrawsSurvivalRiskAndBacktest) {
  const std::string data = titan::fleet::TitanGcFullCsv();
  TITAN_REQUIRE_SHARED_FILE(data);
  const std::string dir = ::testing::TempDir();
  ASSERT_EQ(Shell(Titan() + "survival " + data + " --by cage --mtbf-by batch --json " + dir +
                  "/r_surv.json")
                .exit_code,
            0);
  ASSERT_EQ(
      Shell(Titan() + "risk " + data + " --at 2017-06-01 --json " + dir + "/r_risk.json").exit_code,
      0);
  ASSERT_EQ(Shell(Titan() + "backtest " + data +
                  " --split 2018-01-01 --refit 3650d --model cox_history --model kaplan_meier "
                  "--json " +
                  dir + "/r_bt.json")
                .exit_code,
            0);
  Output o =
      Shell(std::string(TITAN_BINARY_DIR) + "/tools/titan/titan report " + dir + "/r_surv.json " +
            dir + "/r_risk.json " + dir + "/r_bt.json -o " + dir + "/predict.html");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  std::ifstream f(dir + "/predict.html");
  std::stringstream html;
  html << f.rdbuf();
  for (const char* want :
       {"Fleet survival", "Kaplan-Meier survival by age", "Cox proportional hazards",
        "Fleet MTBF per quarter", "Failure risk", "Components most likely to fail",
        "Risk model backtest", "Backtest per component", "Backtest per node_name", "Calibration"}) {
    EXPECT_NE(html.str().find(want), std::string::npos) << want;
  }
}

TEST(PredictCliTest, BadInputIsAClearError) {
  const std::string bad = ::testing::TempDir() + "/notes.txt";
  std::ofstream(bad) << "hello\n";
  Output o = Shell(Titan() + "survival " + bad);
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.out.find("notes.txt: not a fleet history format titan reads"), std::string::npos)
      << o.out;
  const std::string one = ::testing::TempDir() + "/one.jsonl";
  std::ofstream(one) << R"({"time":"2020-01-01","component":"g","event":"enter"})"
                        "\n";
  o = Shell(Titan() + "risk " + one + " --at 2020-01-02");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.out.find("leaves less than two horizons of history"), std::string::npos) << o.out;
  o = Shell(Titan() + "risk " + one + " --at yesterday");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.out.find("expected a UTC time"), std::string::npos) << o.out;
}

}  // namespace
