// Golden test: HTA-compatible mode reproduces Holistic Trace Analysis' CSVs for three real
// traces (shared/data/traces/*/hta_reference/), field by field as HTA printed them.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "src/trace/analyses/hta_compat.h"
#include "src/trace/importers/importer.h"

namespace titan::trace {
namespace {

namespace fs = std::filesystem;

std::string DataDir() { return std::string(TITAN_SOURCE_DIR) + "/../shared/data/traces"; }

std::string ReadAll(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void CheckDataset(const std::string& dataset, const std::string& prefix) {
  fs::path dir = fs::path(DataDir()) / dataset;
  if (!fs::exists(dir))
    GTEST_SKIP() << "trace data not found at " << dir << " (shared/data/traces)";
  std::vector<HtaRankResult> ranks;
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().string().ends_with(".json.gz")) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_FALSE(files.empty());
  for (const std::string& f : files) {
    Result<RankTrace> t = ImportTraceFile(f);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    ranks.push_back(ComputeHtaRank(*t, HtaOptions{}));
  }
  std::sort(ranks.begin(), ranks.end(),
            [](const HtaRankResult& a, const HtaRankResult& b) { return a.rank < b.rank; });
  fs::path out = fs::temp_directory_path() / ("titan_hta_golden_" + prefix);
  fs::create_directories(out);
  ASSERT_TRUE(WriteHtaCsvs(ranks, out, prefix).ok());
  int compared = 0;
  for (const char* table : {"temporal_breakdown", "kernel_type_breakdown", "kernel_breakdown",
                            "idle_time_breakdown", "idle_interval_stats", "comm_comp_overlap"}) {
    std::string name = prefix + "." + table + ".csv";
    std::string expected = ReadAll(dir / "hta_reference" / name);
    std::string actual = ReadAll(out / name);
    ASSERT_FALSE(expected.empty()) << name;
    EXPECT_EQ(actual, expected) << "table " << name << " differs from HTA's";
    ++compared;
  }
  EXPECT_EQ(compared, 6);
  fs::remove_all(out);
}

TEST(HtaGolden, A100WithCollectiveArgsAndFractionalTimestamps) {
  CheckDataset("hta_a100_2rank_ncclargs", "a100_2rankjob_rank0_ncclargs");
}

TEST(HtaGolden, V100Ddp) {
  CheckDataset("hta_df_index_resolver_v100_ddp", "df_index_resolver_v100_rank1");
}

TEST(HtaGolden, TwoSampledRanksOf128) {
  CheckDataset("hta_trace_filter_2rank", "trace_filter_2rank");
}

TEST(HtaCompat, PythonFloatFormatting) {
  EXPECT_EQ(PyFloat(338781.0), "338781.0");
  EXPECT_EQ(PyFloat(77.78), "77.78");
  EXPECT_EQ(PyFloat(429.19438745424225), "429.19438745424225");
  EXPECT_EQ(PyFloat(1e16), "1e+16");
  EXPECT_EQ(PyFloat(std::nan("")), "");
  EXPECT_EQ(NpRound(0.125, 2), 0.12);  // half to even, like numpy
}

}  // namespace
}  // namespace titan::trace
