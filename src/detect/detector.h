// Detector: a streaming anomaly detector over one signal (DESIGN.md: one file per detector).
//
// Update() is fed time-ordered samples of one series. A transient usually spans several samples;
// a detector reports it once, when it ends (the signal is back to normal) or when it has lasted
// max_duration, with its start, end, peak value and the baseline it was judged against.
// Samples inside a transient must not be folded into the baseline. The cusum detector reports a
// level shift when it is confirmed rather than when it ends (a shift has no end; see
// cusum_detector.h). NaN, +-inf and |value| > 1e150 are ignored (no state change).
//
// Detectors: zscore_detector.h, mad_detector.h, cusum_detector.h, periodic_detector.h; the
// per-rank step scorer (not a Detector) is straggler.h.
//
// Cost: Update() is the agent's hottest path (every sample of every watched series); it must not
// allocate and should run in tens of nanoseconds (bench/: >= 20 M updates/s per core).
// Thread safety: none; one detector instance belongs to one series and its recording thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "src/base/status.h"

namespace titan {

struct Detection {
  const char* detector = "";   // static name: "zscore", "mad", "cusum", "periodic"
  const char* direction = "";  // "spike" (above baseline) or "dip" (below)
  int64_t start_ns = 0;        // first anomalous sample
  int64_t end_ns = 0;          // last anomalous sample
  double peak = 0;             // the most extreme value in the transient
  double baseline = 0;         // expected value (mean / median / level before a shift)
  double score = 0;            // how extreme: sigmas, MADs, or the CUSUM statistic
  int64_t samples = 0;         // anomalous samples in the transient
  int64_t period = 0;          // periodic detector: the period in samples (else 0)
  double level = 0;            // cusum: the new level after the shift (mean of the run), else 0
};

class Detector {
 public:
  virtual ~Detector() = default;
  virtual std::string_view name() const = 0;
  // Feeds one sample. Returns true and fills *out when a transient is reported.
  virtual bool Update(int64_t time_ns, double value, Detection* out) = 0;
};

// A detector configuration, e.g. parsed from "zscore:window=100,k=3".
struct DetectorSpec {
  std::string kind;                      // zscore | mad | cusum | periodic
  std::map<std::string, double> params;  // kind-specific; unknown keys are an error
};

// Parses "kind" or "kind:key=value,key=value". Errors name the bad part and the allowed keys.
Result<DetectorSpec> ParseDetectorSpec(std::string_view text);
// Builds a detector; INVALID_ARGUMENT for unknown kinds, unknown keys or out-of-range values.
Result<std::unique_ptr<Detector>> MakeDetector(const DetectorSpec& spec);
// Every kind with its keys, ranges and defaults, one kind per line (for --help texts).
std::string DetectorSpecHelp();

}  // namespace titan
