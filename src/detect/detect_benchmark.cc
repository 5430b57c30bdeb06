// Update() throughput of each detector (target: >= 20 M samples/s per core for zscore) and the
// StragglerScorer's Observe() rate and Scores() cost. Samples: Gaussian noise with a 6-sigma
// spike every 1000 samples, so the transient path is exercised too. Detectors are called
// through the Detector interface, as the agent calls them.
#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include <benchmark/benchmark.h>

#include "src/detect/detector.h"
#include "src/detect/straggler.h"

namespace titan {
namespace {

const std::vector<double>& Samples() {
  static const std::vector<double> samples = [] {
    std::mt19937_64 rng(42);
    std::normal_distribution<double> gauss(100, 5);
    std::vector<double> values(1 << 16);
    for (size_t i = 0; i < values.size(); ++i) values[i] = i % 1000 == 999 ? 130 : gauss(rng);
    return values;
  }();
  return samples;
}

void BM_DetectorUpdate(benchmark::State& state, const char* spec_text) {
  std::unique_ptr<Detector> detector =
      std::move(MakeDetector(*ParseDetectorSpec(spec_text))).value();
  const std::vector<double>& samples = Samples();
  const size_t mask = samples.size() - 1;
  size_t i = 0;
  int64_t detections = 0;
  Detection d;
  for (auto _ : state) {
    detections += detector->Update(static_cast<int64_t>(i) * 10'000'000, samples[i & mask], &d);
    ++i;
  }
  benchmark::DoNotOptimize(detections);
  state.SetItemsProcessed(state.iterations());
  state.counters["detections"] = double(detections);
}
BENCHMARK_CAPTURE(BM_DetectorUpdate, zscore, "zscore");
BENCHMARK_CAPTURE(BM_DetectorUpdate, zscore_w1000, "zscore:window=1000");
BENCHMARK_CAPTURE(BM_DetectorUpdate, mad, "mad");
BENCHMARK_CAPTURE(BM_DetectorUpdate, mad_w1024, "mad:window=1024");
BENCHMARK_CAPTURE(BM_DetectorUpdate, cusum, "cusum");
BENCHMARK_CAPTURE(BM_DetectorUpdate, periodic, "periodic");

// Baselines a user would otherwise write. The seed document's pseudocode recomputes the mean and
// std of the last 100 samples for every new sample (np.mean/np.std over step_times[-100:]);
// here in C++ with no allocation, so the ratio shows the algorithm, not the language.
void BM_BaselineRecomputeZscore(benchmark::State& state) {
  constexpr size_t kWindow = 100;
  const std::vector<double>& samples = Samples();
  const size_t mask = samples.size() - 1;
  size_t i = kWindow;
  int64_t detections = 0;
  for (auto _ : state) {
    const double* window = &samples[(i - kWindow) & mask];
    if ((i & mask) < kWindow) window = &samples[0];
    double sum = 0, sum_sq = 0;
    for (size_t j = 0; j < kWindow; ++j) sum += window[j];
    const double mean = sum / kWindow;
    for (size_t j = 0; j < kWindow; ++j) sum_sq += (window[j] - mean) * (window[j] - mean);
    detections += samples[i & mask] > mean + 3 * std::sqrt(sum_sq / kWindow);
    ++i;
  }
  benchmark::DoNotOptimize(detections);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_BaselineRecomputeZscore);

// Rolling median/MAD the obvious way: copy the last 64 samples, nth_element twice.
void BM_BaselineNthElementMad(benchmark::State& state) {
  constexpr size_t kWindow = 64;
  const std::vector<double>& samples = Samples();
  const size_t mask = samples.size() - 1;
  std::vector<double> scratch(kWindow);
  size_t i = kWindow;
  int64_t detections = 0;
  for (auto _ : state) {
    const size_t begin = (i & mask) < kWindow ? 0 : (i & mask) - kWindow;
    std::copy(samples.begin() + begin, samples.begin() + begin + kWindow, scratch.begin());
    auto mid = scratch.begin() + kWindow / 2;
    std::nth_element(scratch.begin(), mid, scratch.end());
    const double median = *mid;
    for (double& v : scratch) v = std::fabs(v - median);
    std::nth_element(scratch.begin(), mid, scratch.end());
    detections += std::fabs(samples[i & mask] - median) > 3.5 * 1.4826 * *mid;
    ++i;
  }
  benchmark::DoNotOptimize(detections);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_BaselineNthElementMad);

// 8 ranks of one node reporting every step, in rank order.
void BM_StragglerObserve(benchmark::State& state) {
  StragglerScorer scorer;
  int64_t n = 0;
  for (auto _ : state) {
    Status s = scorer.Observe(n % 8, n / 8, 1'000'000'000 + (n % 7) * 1000);
    benchmark::DoNotOptimize(s);
    ++n;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_StragglerObserve);

// Scores() over a full 64-step window for `ranks` ranks (what a scrape pays).
void BM_StragglerScores(benchmark::State& state) {
  const int64_t ranks = state.range(0);
  StragglerScorer scorer;
  std::mt19937_64 rng(1);
  std::uniform_int_distribution<int64_t> jitter(0, 10'000'000);
  for (int64_t step = 0; step < 64; ++step) {
    for (int64_t r = 0; r < ranks; ++r)
      (void)scorer.Observe(r, step, 1'000'000'000 + jitter(rng)).ok();
  }
  for (auto _ : state) benchmark::DoNotOptimize(scorer.Scores());
}
BENCHMARK(BM_StragglerScores)->Arg(8)->Arg(64)->Arg(1024)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace titan
