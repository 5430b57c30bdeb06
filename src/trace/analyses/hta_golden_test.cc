// Golden tests: HTA-compatible mode reproduces Holistic Trace Analysis' CSVs byte for byte,
//  - for three real multi-rank traces (shared/data/traces/*/hta_reference/), and
//  - for every trace of HTA's own tests/data (shared/data/hta_tests/, 161 tables; its README
//    says how HTA made them), each analysed alone as `titan trace analyze --hta-compat FILE`.
// The data lives in ../shared beside the source tree: missing, the tests skip, and fail under
// CI=true (CI has ../shared beside the clone).
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "src/trace/analyses/hta_compat.h"
#include "src/trace/analyze.h"
#include "src/trace/importers/importer.h"
#include "src/trace/testing/temp_dir.h"

namespace titan::trace {
namespace {

namespace fs = std::filesystem;

const char* const kHtaTables[] = {"temporal_breakdown",  "kernel_type_breakdown",
                                  "kernel_breakdown",    "idle_time_breakdown",
                                  "idle_interval_stats", "comm_comp_overlap"};

fs::path SharedData(const char* what) {
  return fs::path(TITAN_SOURCE_DIR) / ".." / "shared" / "data" / what;
}

// Whether `dir` is there; if not, the calling test skips, or fails under CI=true.
#define REQUIRE_SHARED_DATA(dir)                                                  \
  do {                                                                            \
    if (!fs::exists(dir)) {                                                       \
      const char* ci = std::getenv("CI");                                         \
      if (ci != nullptr && std::string(ci) == "true") {                           \
        FAIL() << (dir) << " is missing (CI has ../shared beside the clone)";     \
      }                                                                           \
      GTEST_SKIP() << "trace data not found at " << (dir) << " (../shared/data)"; \
    }                                                                             \
  } while (0)

std::string ReadAll(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// "" when `actual` is byte for byte `expected`; else how they differ: the first differing row
// (1 = the header) of each, or which one has more rows.
std::string CsvDifference(const std::string& expected, const std::string& actual) {
  if (expected == actual) return "";
  std::vector<std::string> e = Lines(expected), a = Lines(actual);
  for (size_t i = 0; i < std::min(e.size(), a.size()); ++i) {
    if (e[i] != a[i]) {
      return "row " + std::to_string(i + 1) + ":\n      HTA:   " + e[i] + "\n      titan: " + a[i];
    }
  }
  if (e.size() != a.size()) {
    const bool more = a.size() > e.size();
    return (more ? "titan has an extra row " : "titan lacks row ") +
           std::to_string(std::min(e.size(), a.size()) + 1) + ": " +
           (more ? a : e)[std::min(e.size(), a.size())];
  }
  return "the same rows, but line endings or a final newline differ";
}

void CheckDataset(const std::string& dataset, const std::string& prefix) {
  fs::path dir = SharedData("traces") / dataset;
  REQUIRE_SHARED_DATA(dir);
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
  testing::TempDir out;
  ASSERT_TRUE(WriteHtaCsvs(ranks, out.path(), prefix).ok());
  for (const char* table : kHtaTables) {
    std::string name = prefix + "." + table + ".csv";
    std::string expected = ReadAll(dir / "hta_reference" / name);
    ASSERT_FALSE(expected.empty()) << name;
    EXPECT_EQ(CsvDifference(expected, ReadAll(fs::path(out.path()) / name)), "")
        << "table " << name << " differs from HTA's";
  }
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

// The reference directory of a trace: its path under traces/ with '/' as "__" and the
// extensions (from the first '.' of the file name) dropped.
std::string ReferenceKey(const fs::path& relative) {
  std::string name = relative.filename().string();
  std::string key = (relative.parent_path() / name.substr(0, name.find('.'))).string();
  for (size_t at; (at = key.find('/')) != std::string::npos;) key.replace(at, 1, "__");
  return key;
}

TEST(HtaGolden, HtaOwnTestDataEveryTableIdentical) {
  const fs::path root = SharedData("hta_tests");
  REQUIRE_SHARED_DATA(root / "traces");
  std::vector<fs::path> traces;
  for (const auto& entry : fs::recursive_directory_iterator(root / "traces")) {
    const std::string p = entry.path().string();
    if (entry.is_regular_file() && (p.ends_with(".json") || p.ends_with(".json.gz"))) {
      traces.push_back(entry.path());
    }
  }
  std::sort(traces.begin(), traces.end());
  ASSERT_FALSE(traces.empty());
  AnalyzeOptions options;
  options.hta_compat = true;
  options.threads = 1;
  options.rank_rule.single_file = true;  // as `titan trace analyze --hta-compat FILE`
  int tables = 0, identical = 0, titan_only = 0;
  std::string report, refused;
  for (const fs::path& trace : traces) {
    const std::string key = ReferenceKey(fs::relative(trace, root / "traces"));
    const fs::path reference = root / "hta_reference" / key;
    ASSERT_TRUE(fs::is_directory(reference)) << "no HTA reference for " << trace;
    AnalysisResult result = AnalyzeRanks({trace.string()}, options);
    // A file titan refuses (an execution trace, not a profiler trace) gives header-only tables,
    // as HTA's are where it finds no kernels; any table HTA filled then differs.
    for (const std::string& e : result.errors) refused += "  refused: " + e + "\n";
    testing::TempDir out;
    ASSERT_TRUE(WriteHtaCsvs(result.hta, out.path(), "hta").ok());
    for (const char* table : kHtaTables) {
      const fs::path expected = reference / (std::string(table) + ".csv");
      if (!fs::exists(expected)) {
        ++titan_only;  // HTA raised an error on this trace (hta.json says which); titan writes one
        continue;
      }
      ++tables;
      const std::string actual =
          ReadAll(fs::path(out.path()) / ("hta." + std::string(table) + ".csv"));
      const std::string difference = CsvDifference(ReadAll(expected), actual);
      if (difference.empty()) {
        ++identical;
      } else {
        report += "  " + key + "/" + table + ".csv, " + difference + "\n";
      }
    }
  }
  std::printf(
      "HTA's own test data: %d of %d tables identical (%d traces; %d tables where HTA "
      "raised an error, titan writes a table)\n",
      identical, tables, static_cast<int>(traces.size()), titan_only);
  std::printf("%s", refused.c_str());
  EXPECT_EQ(identical, tables) << "tables that differ from HTA's:\n" << report;
}

TEST(HtaGolden, CsvDifferenceNamesTheFirstDifferingRow) {
  EXPECT_EQ(CsvDifference("a,b\n1,2\n", "a,b\n1,2\n"), "");
  EXPECT_EQ(CsvDifference("a,b\n1,2\n3,4\n", "a,b\n1,2.0\n3,4\n"),
            "row 2:\n      HTA:   1,2\n      titan: 1,2.0");
  EXPECT_EQ(CsvDifference("a\n1\n", "a\n1\n2\n"), "titan has an extra row 3: 2");
  EXPECT_EQ(CsvDifference("a\n1\n2\n", "a\n1\n"), "titan lacks row 3: 2");
  EXPECT_EQ(CsvDifference("a\n1\n", "a\n1"),
            "the same rows, but line endings or a final newline differ");
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
