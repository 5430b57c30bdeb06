#include "src/load/arrivals.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

namespace titan::load {
namespace {

constexpr int64_t kS = 1'000'000'000;

ArrivalSpec Parse(std::string_view text) {
  Result<ArrivalSpec> spec = ParseArrivalSpec(text);
  EXPECT_TRUE(spec.ok()) << text << ": " << spec.status().ToString();
  return spec.value_or(ArrivalSpec{});
}

std::vector<int64_t> All(std::string_view text, int64_t duration_ns, uint64_t max_requests = 0,
                         uint64_t seed = 1) {
  auto process = MakeArrivals(Parse(text), seed, duration_ns, max_requests);
  EXPECT_TRUE(process.ok()) << process.status().ToString();
  std::vector<int64_t> out;
  if (!process.ok()) return out;
  while (std::optional<int64_t> t = (*process)->Next()) out.push_back(*t);
  EXPECT_EQ((*process)->Next(), std::nullopt) << "an ended process stays ended";
  return out;
}

size_t CountIn(const std::vector<int64_t>& times, int64_t from_ns, int64_t to_ns) {
  size_t n = 0;
  for (int64_t t : times) n += t >= from_ns && t < to_ns;
  return n;
}

// Mean and coefficient of variation of the gaps (the first from 0).
std::pair<double, double> GapStats(const std::vector<int64_t>& times) {
  double sum = 0, sum2 = 0;
  int64_t last = 0;
  for (int64_t t : times) {
    const double gap = static_cast<double>(t - last);
    sum += gap;
    sum2 += gap * gap;
    last = t;
  }
  const double n = static_cast<double>(times.size());
  const double mean = sum / n;
  return {mean, std::sqrt(sum2 / n - mean * mean) / mean};
}

void ExpectNear(double got, double want, double relative, const std::string& what) {
  EXPECT_NEAR(got, want, want * relative) << what;
}

TEST(ArrivalSpecTest, ParsesEveryFormAndRoundTrips) {
  const char* forms[] = {
      "constant:rate=4",
      "poisson:rate=2.5",
      "gamma:rate=10,burstiness=0.25",
      "burst:quiet=10s,size=50,repeat=3,rate=2",
      "burst:quiet=1500ms,size=1,repeat=0",
      "stages:10x30s,100x30s,0x1m",
      "stages:5x2s,shape=constant",
      "ramp:from=0,to=100,over=1m",
      "ramp:from=50,to=5,over=10s,shape=constant",
      "poisson:rate=1e-05",
  };
  for (const char* text : forms) {
    ArrivalSpec spec = Parse(text);
    ArrivalSpec again = Parse(ToString(spec));
    EXPECT_EQ(spec, again) << text << " -> " << ToString(spec);
  }
  EXPECT_EQ(ToString(Parse("burst:quiet=10s,size=50")), "burst:quiet=10s,size=50,repeat=1");
  EXPECT_EQ(ToString(Parse(" gamma: rate = 3 , burstiness = 2 ")), "gamma:rate=3,burstiness=2");
}

TEST(ArrivalSpecTest, BareNumberIsPoisson) {
  ArrivalSpec spec = Parse("7.5");
  EXPECT_EQ(spec.kind, ArrivalKind::kPoisson);
  EXPECT_EQ(spec.rate, 7.5);
  EXPECT_EQ(ToString(spec), "poisson:rate=7.5");
}

TEST(ArrivalSpecTest, ParseErrorsNameThePartAndListTheForms) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "empty"},
      {"0", "the rate must be"},
      {"-3", "the rate must be"},
      {"fast", "expected a rate or KIND:PARAMETERS"},
      {"uniform:rate=3", "unknown kind 'uniform'"},
      {"poisson:rate=abc", "rate must be a number"},
      {"poisson:rate=1e9", "rate must be a number"},
      {"poisson:speed=3", "unknown key 'speed'"},
      {"poisson:rate=3,rate=4", "'rate' given twice"},
      {"poisson:", "missing rate=R"},
      {"constant:3", "expected key=value"},
      {"gamma:rate=3", "needs rate=R and burstiness=B"},
      {"gamma:rate=3,burstiness=0", "burstiness must be"},
      {"burst:size=5", "needs quiet=D and size=N"},
      {"burst:quiet=10,size=0", "size must be an integer"},
      {"burst:quiet=0s,size=5", "quiet must be a positive duration"},
      {"burst:quiet=10s,size=5,repeat=-1", "repeat must be"},
      {"stages:", "needs at least one"},
      {"stages:10", "expected a stage RATExDURATION"},
      {"stages:10x", "a stage's duration must be"},
      {"stages:0x10s", "every stage has rate 0"},
      {"stages:10x10s,shape=square", "shape must be poisson or constant"},
      {"ramp:from=1,to=2", "needs from=R0, to=R1 and over=D"},
      {"ramp:from=0,to=0,over=1s", "from and to are both 0"},
  };
  for (const auto& [text, what] : cases) {
    Result<ArrivalSpec> spec = ParseArrivalSpec(text);
    ASSERT_FALSE(spec.ok()) << text;
    EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_NE(spec.status().message().find(what), std::string_view::npos)
        << text << ": " << spec.status().message();
    EXPECT_NE(spec.status().message().find("accepted forms: R (same as poisson:rate=R)"),
              std::string_view::npos)
        << text;
  }
}

TEST(ArrivalsTest, ConstantIsEvenlySpacedFromZero) {
  EXPECT_EQ(All("constant:rate=4", kS),
            (std::vector<int64_t>{0, 250'000'000, 500'000'000, 750'000'000}));
  // No drift over many arrivals.
  std::vector<int64_t> times = All("constant:rate=3", 1000 * kS);
  ASSERT_EQ(times.size(), 3000u);
  EXPECT_EQ(times[2999], 999 * kS + 666'666'667);
}

TEST(ArrivalsTest, LimitsEndTheProcess) {
  EXPECT_EQ(All("constant:rate=10", 0, 5).size(), 5u);      // request limit only
  EXPECT_EQ(All("constant:rate=10", kS, 100).size(), 10u);  // duration first (exclusive)
  EXPECT_EQ(All("constant:rate=10", kS, 3).size(), 3u);     // request limit first
  EXPECT_FALSE(MakeArrivals(Parse("10"), 1, -1, 0).ok());   // negative duration
  ArrivalSpec bad = Parse("10");
  bad.rate = -1;
  EXPECT_FALSE(MakeArrivals(bad, 1, kS, 0).ok());
}

TEST(ArrivalsTest, PoissonHasTheMeanRateAndExponentialGaps) {
  std::vector<int64_t> times = All("poisson:rate=1000", 100 * kS);
  ExpectNear(static_cast<double>(times.size()), 100'000, 0.02, "count");
  auto [mean_gap, cv] = GapStats(times);
  ExpectNear(mean_gap, 1e6, 0.02, "mean gap");
  ExpectNear(cv, 1, 0.03, "cv");
}

TEST(ArrivalsTest, GammaCoefficientOfVariationIsOneOverSqrtB) {
  for (double b : {0.25, 1.0, 4.0}) {
    std::vector<int64_t> times =
        All("gamma:rate=100,burstiness=" + std::to_string(b), 0, 200'000, 7);
    ASSERT_EQ(times.size(), 200'000u);
    auto [mean_gap, cv] = GapStats(times);
    ExpectNear(mean_gap, 1e7, 0.03, "gamma mean gap B=" + std::to_string(b));
    ExpectNear(cv, 1 / std::sqrt(b), 0.04, "gamma cv B=" + std::to_string(b));
  }
}

TEST(ArrivalsTest, BurstTimesAreExact) {
  std::vector<int64_t> times = All("burst:quiet=10s,size=50,repeat=3", 0);
  ASSERT_EQ(times.size(), 150u);
  for (size_t i = 0; i < times.size(); ++i) {
    EXPECT_EQ(times[i], static_cast<int64_t>(i / 50 + 1) * 10 * kS) << i;
  }
  // repeat=0: until the run ends.
  std::vector<int64_t> endless = All("burst:quiet=10s,size=2,repeat=0", 35 * kS);
  EXPECT_EQ(endless, (std::vector<int64_t>{10 * kS, 10 * kS, 20 * kS, 20 * kS, 30 * kS, 30 * kS}));
}

TEST(ArrivalsTest, BurstWithBackgroundRate) {
  std::vector<int64_t> times = All("burst:quiet=10s,size=500,repeat=0,rate=100", 100 * kS);
  EXPECT_TRUE(std::is_sorted(times.begin(), times.end()));
  size_t at_bursts = 0;
  for (int64_t t : times) at_bursts += t % (10 * kS) == 0;
  EXPECT_EQ(at_bursts, 9u * 500u);  // bursts at 10 s .. 90 s; background never lands exactly
  ExpectNear(static_cast<double>(times.size() - at_bursts), 10'000, 0.05, "background");
}

TEST(ArrivalsTest, StagesFollowTheirRates) {
  std::vector<int64_t> times = All("stages:100x100s,1000x100s,200x100s", 0);
  ExpectNear(static_cast<double>(CountIn(times, 0, 100 * kS)), 10'000, 0.05, "stage 1");
  ExpectNear(static_cast<double>(CountIn(times, 100 * kS, 200 * kS)), 100'000, 0.02, "stage 2");
  ExpectNear(static_cast<double>(CountIn(times, 200 * kS, 300 * kS)), 20'000, 0.04, "stage 3");
  EXPECT_LT(times.back(), 300 * kS);  // ends after the last stage
}

TEST(ArrivalsTest, ConstantStagesAreEvenlySpacedAndSkipIdleStages) {
  EXPECT_EQ(All("stages:0x1s,2x1s,4x1s,shape=constant", 0),
            (std::vector<int64_t>{1 * kS, 1'500'000'000, 2 * kS, 2'250'000'000, 2'500'000'000,
                                  2'750'000'000}));
}

TEST(ArrivalsTest, RampRisesLinearlyThenHolds) {
  std::vector<int64_t> times = All("ramp:from=0,to=1000,over=100s", 110 * kS);
  // Lambda(t) = 5 t^2 on the ramp: 12500 by 50 s, 50000 by 100 s; then 1000/s.
  ExpectNear(static_cast<double>(CountIn(times, 0, 50 * kS)), 12'500, 0.03, "first half");
  ExpectNear(static_cast<double>(CountIn(times, 50 * kS, 100 * kS)), 37'500, 0.02, "second half");
  ExpectNear(static_cast<double>(CountIn(times, 100 * kS, 110 * kS)), 10'000, 0.04, "hold");
  // Falling to 0 ends the process.
  std::vector<int64_t> down = All("ramp:from=100,to=0,over=10s", 0);
  ExpectNear(static_cast<double>(down.size()), 500, 0.15, "ramp down");
  EXPECT_LT(down.back(), 10 * kS);
}

TEST(ArrivalsTest, EveryKindIsNonDecreasingAndDeterministic) {
  const char* forms[] = {"constant:rate=50",
                         "poisson:rate=50",
                         "gamma:rate=50,burstiness=0.1",
                         "burst:quiet=1s,size=20,repeat=0,rate=5",
                         "stages:50x3s,5x3s,100x4s",
                         "ramp:from=1,to=100,over=5s"};
  for (const char* text : forms) {
    std::vector<int64_t> a = All(text, 10 * kS, 0, 42);
    EXPECT_FALSE(a.empty()) << text;
    EXPECT_TRUE(std::is_sorted(a.begin(), a.end())) << text;
    EXPECT_GE(a.front(), 0) << text;
    EXPECT_LT(a.back(), 10 * kS) << text;
    EXPECT_EQ(a, All(text, 10 * kS, 0, 42)) << text;
    if (std::string_view(text).starts_with("constant")) continue;
    EXPECT_NE(a, All(text, 10 * kS, 0, 43)) << text;
  }
}

TEST(ArrivalsTest, FixedSeedGivesAFixedSequence) {
  // Pins the generator and the distribution code (xoshiro256** + titan's own inversion and
  // Marsaglia-Tsang): a change here changes every recorded run's schedule.
  EXPECT_EQ(All("poisson:rate=1", 0, 3, 2024),
            (std::vector<int64_t>{499089077, 584181218, 2218354875}));
  EXPECT_EQ(All("gamma:rate=1,burstiness=0.5", 0, 2, 2024),
            (std::vector<int64_t>{1723532799, 4388500734}));
}

TEST(ArrivalSpecTest, MeanRateAndWithRate) {
  EXPECT_DOUBLE_EQ(MeanRate(Parse("gamma:rate=8,burstiness=2")), 8);
  EXPECT_DOUBLE_EQ(MeanRate(Parse("burst:quiet=10s,size=50,rate=1")), 6);
  EXPECT_DOUBLE_EQ(MeanRate(Parse("stages:10x30s,100x30s,20x60s")), 37.5);
  EXPECT_DOUBLE_EQ(MeanRate(Parse("ramp:from=10,to=30,over=1m")), 20);

  EXPECT_EQ(ToString(WithRate(Parse("poisson:rate=3"), 12)), "poisson:rate=12");
  EXPECT_EQ(ToString(WithRate(Parse("gamma:rate=3,burstiness=0.5"), 6)),
            "gamma:rate=6,burstiness=0.5");
  EXPECT_EQ(ToString(WithRate(Parse("stages:10x30s,0x30s,50x30s"), 40)),
            "stages:20x30s,0x30s,100x30s");
  EXPECT_EQ(ToString(WithRate(Parse("ramp:from=0,to=10,over=1m"), 10)),
            "ramp:from=0,to=20,over=1m");
  EXPECT_EQ(ToString(WithRate(Parse("burst:quiet=10s,size=50,rate=5"), 20)),
            "burst:quiet=10s,size=100,repeat=1,rate=10");
  EXPECT_EQ(WithRate(Parse("burst:quiet=10s,size=3"), 0.01).burst_size, 1u);  // at least 1
  for (const char* text : {"constant:rate=2", "stages:1x1s,3x1s", "ramp:from=2,to=4,over=1s"}) {
    EXPECT_NEAR(MeanRate(WithRate(Parse(text), 77)), 77, 1e-9) << text;
  }
}

}  // namespace
}  // namespace titan::load
