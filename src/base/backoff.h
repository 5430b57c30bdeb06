// Delays between attempts, for every client that retries (S3, Kubernetes, etcd): capped
// exponential back-off with jitter, and the delay a server asks for in Retry-After.
//
// Jitter is "equal jitter": each delay is drawn uniformly from [d/2, d] where d doubles from
// `first_ns` up to `max_ns`, so that clients that failed together do not retry together, and
// no delay is shorter than half its step (a storm of instant retries cannot happen).
// Thread safety: a Backoff is one caller's (not thread-safe); the free functions are pure or
// thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <random>
#include <string_view>

namespace titan {

class Backoff {
 public:
  Backoff(int64_t first_ns, int64_t max_ns);
  // The delay before the next attempt (ns); the step doubles after each call, up to max_ns.
  int64_t Next();
  // After a success: the next delay is drawn from the first step again.
  void Reset() { step_ns_ = first_ns_; }

 private:
  const int64_t first_ns_;
  const int64_t max_ns_;
  int64_t step_ns_;
  std::mt19937_64 random_;
};

// Sleeps `ns`, waking every 50 ms to look at `stop` (may be null). False when stopped.
bool SleepUnlessStopped(int64_t ns, const std::atomic<bool>* stop);

// A Retry-After header's value (RFC 9110 10.2.3): delay-seconds ("120") or an HTTP-date
// ("Wed, 21 Oct 2015 07:28:00 GMT", compared with `now_unix_ns`), as nanoseconds from now
// (0 for a date in the past). nullopt when malformed. Callers cap what they honour.
std::optional<int64_t> ParseRetryAfter(std::string_view value, int64_t now_unix_ns);

}  // namespace titan
