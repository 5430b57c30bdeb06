#include "src/metrics/text_parse.h"

#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace titan {
namespace {

TEST(PrometheusTextTest, ReadsVllmAndLlamaCppStyleSamples) {
  const std::string text =
      "# HELP vllm:num_requests_waiting Number of requests waiting.\n"
      "# TYPE vllm:num_requests_waiting gauge\n"
      "vllm:num_requests_waiting{model_name=\"m\",engine=\"0\"} 7.0\n"
      "llamacpp:requests_processing 2\r\n"
      "x_bucket{le=\"+Inf\",path=\"a}b\\\"c\"} 12 1700000000000\n"
      "up +Inf\n"
      "\n";
  std::vector<std::string> names, labels;
  std::vector<double> values;
  TextParseStats stats = ParsePrometheusText(text, [&](const PrometheusSample& s) {
    names.emplace_back(s.name);
    labels.emplace_back(s.labels);
    values.push_back(s.value);
  });
  EXPECT_EQ(stats.samples, 4u);
  EXPECT_EQ(stats.malformed_lines, 0u);
  ASSERT_EQ(names.size(), 4u);
  EXPECT_EQ(names[0], "vllm:num_requests_waiting");
  EXPECT_EQ(labels[0], "model_name=\"m\",engine=\"0\"");
  EXPECT_EQ(values[0], 7.0);
  EXPECT_EQ(names[1], "llamacpp:requests_processing");
  EXPECT_EQ(values[1], 2.0);
  EXPECT_EQ(labels[2], "le=\"+Inf\",path=\"a}b\\\"c\"");
  EXPECT_TRUE(std::isinf(values[3]));
}

TEST(PrometheusTextTest, MalformedLinesAreCountedAndSkipped) {
  const std::string text = "good 1\n9bad 2\nno_value\nopen{a=\"x\" 3\ntrail 1 2 3\nfine 4\n";
  std::vector<std::string> names;
  TextParseStats stats =
      ParsePrometheusText(text, [&](const PrometheusSample& s) { names.emplace_back(s.name); });
  EXPECT_EQ(names, (std::vector<std::string>{"good", "fine"}));
  EXPECT_EQ(stats.malformed_lines, 4u);
  EXPECT_EQ(stats.first_malformed_line, 2u);
}

}  // namespace
}  // namespace titan
