// Update() throughput of each detector (target: >= 20 M samples/s per core for zscore) and the
// StragglerScorer's Observe() rate and Scores() cost. Samples: Gaussian noise with a 6-sigma
// spike every 1000 samples, so the transient path is exercised too. Detectors are called
// through the Detector interface, as the agent calls them.
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
