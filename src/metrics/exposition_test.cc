#include "src/metrics/exposition.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "src/base/clock.h"

namespace titan {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const SignalDesc kUtil{
    "titan_test_utilization_ratio", "A test gauge.", SignalKind::kGauge, {"gpu"}, {0.5, 1}};
const SignalDesc kBytes{
    "titan_test_read_bytes_total", "A test counter.", SignalKind::kCounter, {"dev"}, {}};
constexpr int64_t kT0 = 1'700'000'000LL * kNsPerSecond;

TEST(ExpositionTest, RendersWindowStatsHistogramAndCounters) {
  MetricRegistry registry;
  Series* g = registry.GetOrCreate(kUtil, {"0"}, kNsPerSecond);
  g->RecordGauge(kT0, 0.2);
  g->RecordGauge(kT0 + kNsPerSecond, 0.9);
  g->RecordGauge(kT0 + 2 * kNsPerSecond, 0.4);
  registry.GetOrCreate(kBytes, {"sda\"x"}, 0)->SetCounter(kT0, 4096);
  std::string text;
  RenderExposition(registry, {ExpositionFormat::kPrometheusText, 15, kT0 + 3 * kNsPerSecond},
                   &text);
  EXPECT_THAT(text, HasSubstr("# TYPE titan_test_utilization_ratio gauge\n"
                              "titan_test_utilization_ratio{gpu=\"0\"} 0.4\n"));
  EXPECT_THAT(text, HasSubstr("titan_test_utilization_ratio_window_max{gpu=\"0\"} 0.9\n"));
  EXPECT_THAT(text, HasSubstr("titan_test_utilization_ratio_window_min{gpu=\"0\"} 0.2\n"));
  EXPECT_THAT(text,
              HasSubstr("titan_test_utilization_ratio_samples_bucket{gpu=\"0\",le=\"0.5\"} 2\n"));
  EXPECT_THAT(text,
              HasSubstr("titan_test_utilization_ratio_samples_bucket{gpu=\"0\",le=\"+Inf\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("titan_test_utilization_ratio_samples_count{gpu=\"0\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE titan_test_read_bytes_total counter\n"
                              "titan_test_read_bytes_total{dev=\"sda\\\"x\"} 4096\n"));
  EXPECT_THAT(text, Not(HasSubstr("# EOF")));
}

TEST(ExpositionTest, OpenMetricsNamesCounterFamilyAndEnds) {
  MetricRegistry registry;
  registry.GetOrCreate(kBytes, {"sda"}, 0)->SetCounter(kT0, 1);
  Series* g = registry.GetOrCreate(kUtil, {"0"}, kNsPerSecond);
  g->RecordGauge(kT0, 1);
  std::string text;
  RenderExposition(registry, {ExpositionFormat::kOpenMetrics, 15, kT0}, &text);
  EXPECT_THAT(text, HasSubstr("# TYPE titan_test_read_bytes counter\n"));
  EXPECT_THAT(text, HasSubstr("titan_test_read_bytes_total{dev=\"sda\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("le=\"1.0\""));
  EXPECT_TRUE(text.ends_with("# EOF\n"));
}

TEST(ExpositionTest, StaleGaugesAreOmitted) {
  MetricRegistry registry;
  registry.GetOrCreate(kUtil, {"0"}, kNsPerSecond)->RecordGauge(kT0, 0.5);
  std::string text;
  ExpositionOptions options{ExpositionFormat::kPrometheusText, 15, kT0 + 600 * kNsPerSecond};
  RenderExposition(registry, options, &text);
  EXPECT_THAT(text, Not(HasSubstr("titan_test_utilization_ratio")));
}

TEST(ExpositionWriterTest, WritesFamiliesAsTheRegistryExpositionDoes) {
  std::string text;
  ExpositionWriter out(&text);
  out.Family("titan_x_total", "counter", "Things.").Sample(3, "kind", "a \"b\"\\\n");
  out.Family("titan_y", "gauge", "A level.").Sample(0.25).Sample(std::nan(""));
  EXPECT_EQ(text,
            "# HELP titan_x_total Things.\n# TYPE titan_x_total counter\n"
            "titan_x_total{kind=\"a \\\"b\\\"\\\\\\n\"} 3\n"
            "# HELP titan_y A level.\n# TYPE titan_y gauge\ntitan_y 0.25\ntitan_y NaN\n");
}

TEST(ExpositionTest, NegotiatesFormat) {
  EXPECT_EQ(NegotiateFormat("application/openmetrics-text;version=1.0.0,text/plain;q=0.5"),
            ExpositionFormat::kOpenMetrics);
  EXPECT_EQ(NegotiateFormat("text/plain"), ExpositionFormat::kPrometheusText);
  EXPECT_EQ(NegotiateFormat(""), ExpositionFormat::kPrometheusText);
}

}  // namespace
}  // namespace titan
