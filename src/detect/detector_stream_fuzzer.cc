// Fuzzes the detectors with arbitrary sample streams (NaN, inf, denormals, huge values, flat runs)
// and the StragglerScorer with arbitrary reports. The first byte picks a detector spec; the rest
// is read as 8-byte doubles, or, when the byte's top bit is set, as runs of a repeated value (so
// flat stretches and level shifts occur often). Checks: no crash, and every Detection is sane
// (finite numbers, start <= end, samples >= 1, known direction). Memory is fixed at construction,
// so ASan/LSan would catch any growth past it.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string_view>

#include "src/detect/detector.h"
#include "src/detect/straggler.h"

namespace {

constexpr const char* kSpecs[] = {
    "zscore",
    "zscore:window=3,min_samples=2,max_duration=2",
    "zscore:direction=dip,k=0.5",
    "mad",
    "mad:window=3,min_samples=3,k=1",
    "mad:window=200,direction=spike",
    "cusum",
    "cusum:drift=0,h=0.5,alpha=1,clamp=100",
    "cusum:min_samples=2",
    "periodic",
    "periodic:window=4,min_samples=2,k=0.5,tolerance=0.4",
};

void Check(const titan::Detection& d) {
  const bool sane =
      std::isfinite(d.peak) && std::isfinite(d.baseline) && std::isfinite(d.score) &&
      std::isfinite(d.level) && d.score >= 0 && d.samples >= 1 && d.start_ns <= d.end_ns &&
      d.period >= 0 &&
      (std::string_view(d.direction) == "spike" || std::string_view(d.direction) == "dip");
  if (!sane) __builtin_trap();
}

void FuzzStraggler(const uint8_t* data, size_t size) {
  titan::StragglerScorerOptions options;
  options.window_steps = 8;
  options.max_ranks = 16;
  titan::StragglerScorer scorer(options);
  for (size_t i = 0; i + 4 <= size; i += 4) {
    const int64_t rank = data[i] % 20;
    const int64_t step = data[i + 1] == 255   ? 1'000'000
                         : data[i + 1] == 254 ? std::numeric_limits<int64_t>::max()
                                              : data[i + 1];
    const int64_t duration_ns = int64_t{data[i + 2]} << (data[i + 3] % 40);
    (void)scorer.Observe(rank, step, duration_ns).ok();
    if (i % 64 == 0) {
      for (const titan::RankScore& s : scorer.Scores()) {
        if (!std::isfinite(s.score) || s.steps_seen > options.window_steps) __builtin_trap();
      }
    }
  }
  if (scorer.ranks() > options.max_ranks) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t selector = data[0];
  ++data;
  --size;
  const size_t spec_count = sizeof(kSpecs) / sizeof(kSpecs[0]);
  if (selector % (spec_count + 1) == spec_count) {
    FuzzStraggler(data, size);
    return 0;
  }
  auto detector =
      titan::MakeDetector(*titan::ParseDetectorSpec(kSpecs[selector % (spec_count + 1)]));
  if (!detector.ok()) __builtin_trap();
  const bool runs = (selector & 0x80) != 0;
  titan::Detection d;
  int64_t time_ns = 0;
  for (size_t i = 0; i + 8 <= size; i += 8) {
    double value;
    std::memcpy(&value, data + i, sizeof(value));
    const int repeat = runs ? 1 + data[i] % 64 : 1;
    for (int r = 0; r < repeat; ++r) {
      time_ns += 10'000'000;
      if ((*detector)->Update(time_ns, value, &d)) Check(d);
    }
  }
  return 0;
}
