// ProgressWatch: whether one replica has stalled, seen while the stall lasts, from the progress
// of the work the gateway sent it. Free of I/O and clocks: the gateway says what happened and
// when (monotonic ns), so the rule is tested in virtual time.
//
// A replica is *busy* while it has work in flight: requests of the gateway's that it has not
// finished, or a queue of its own that its /metrics reports (vLLM's num_requests_waiting,
// llama.cpp's requests_deferred). *Progress* is any byte of an answer arriving from it (a head,
// an SSE event, a whole answer) or its scraped count of generated tokens moving. Its *silence*
// is the time since the later of its last progress and the moment it became busy.
//
// A busy replica is stalled when its silence exceeds what its own recent behaviour explains:
//     threshold = max(floor, k x p99 of its recent pauses)
// where, while any answer of its has begun, a pause is the longest gap each recent answer saw
// between two of its bytes, and while every answer still waits for its first byte, the time
// each recent answer waited for its first byte (TTFT). Per answer, not per gap: a long
// prompt's prefill pauses every stream of the batch once, which is well under 1% of the gaps
// but a few percent of the answers, and it is the replica's normal behaviour. Until it has
// kMinSamples of the kind, `initial` stands for the percentile's k-fold. When the replica is
// busy only by its scraped queue (none of the gateway's requests in flight), the threshold is
// at least two scrape intervals, the only progress then seen being the scraped token count.
//
// A gap that spans a stall is no sample (each stream that resumes brings one): a frozen GPU
// must not teach the watch that freezing is normal, or the next stall would go unseen. The
// percentiles are over the last stall.window (60 s), in time rather than in answers, so a
// replica that becomes slower for good moves its threshold within a window, at any load.
//
// Thread safety: none; owned by the gateway's event loop.
#pragma once

#include <cstdint>
#include <string>

#include "src/gateway/config.h"
#include "src/gateway/recent_latencies.h"

namespace titan::gateway {

class ProgressWatch {
 public:
  static constexpr uint64_t kMinSamples = 20;

  explicit ProgressWatch(const StallConfig* config)
      : config_(config),
        pauses_(static_cast<int>(config->window_ns / 1'000'000'000)),
        ttfts_(static_cast<int>(config->window_ns / 1'000'000'000)) {}

  // The replica's work in flight changed: `requests` of the gateway's (sent, not finished),
  // `streaming` of them have had a first byte, `scraped_queue` its own queue as last scraped.
  void SetWork(int requests, int streaming, double scraped_queue, int64_t now_ns);
  // A byte of an answer arrived. `gap_ns` is the time since the previous byte of the same
  // answer, or since its send for its first byte (`first_byte`: a TTFT sample). Returns
  // whether the gap counts as the answer's behaviour (false: it spans a stall).
  bool OnProgress(int64_t now_ns, int64_t gap_ns, bool first_byte);
  // An answer ended whole; `longest_gap_ns` is the longest of its counted gaps after its first
  // byte (-1 when it had none).
  void OnAnswerEnd(int64_t now_ns, int64_t longest_gap_ns);
  // The scraped count of generated tokens moved (progress the gateway's streams did not show).
  void OnScrapedProgress(int64_t now_ns);

  bool busy() const { return requests_ > 0 || scraped_queue_ > 0; }
  int64_t SilenceNs(int64_t now_ns) const;
  // The silence that would make it stalled now (see above). `scrape_interval_ns` is the
  // gateway's.
  int64_t ThresholdNs(int64_t now_ns, int64_t scrape_interval_ns);
  // Busy and silent past the threshold.
  bool Stalled(int64_t now_ns, int64_t scrape_interval_ns);
  // Why: "no progress for 212ms with 8 requests in flight (threshold 150ms: 3 x p99 pause 50ms)".
  std::string Explain(int64_t now_ns, int64_t scrape_interval_ns);

  // The gateway decided it stalled (at `now_ns`): gaps that span the stall are no samples.
  void MarkStalled(int64_t now_ns);
  // Last progress (0: none yet).
  int64_t last_progress_ns() const { return last_progress_ns_; }

 private:
  // The p99 the threshold reads now: of pauses while an answer has begun, else of TTFTs (-1
  // with fewer than kMinSamples).
  int64_t ActiveP99(int64_t now_ns) {
    return (streaming_ > 0 ? pauses_ : ttfts_).Quantile(0.99, now_ns, kMinSamples);
  }

  const StallConfig* config_;
  int requests_ = 0, streaming_ = 0;
  double scraped_queue_ = 0;
  int64_t busy_since_ns_ = 0, last_progress_ns_ = 0;
  // The last stall: from the progress before it to the first progress after it (-1: none, or
  // not ended yet).
  bool in_stall_ = false;
  int64_t stall_start_ns_ = -1, stall_end_ns_ = -1;
  RecentLatencies pauses_, ttfts_;
};

}  // namespace titan::gateway
