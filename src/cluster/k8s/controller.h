// `titan k8s controller`: keeps LLMJobs' workloads sized to the usable nodes and cordons the
// nodes reported bad. Two informers (list, then watch from the list's resourceVersion; on 410
// Gone, as an HTTP status or as a watch ERROR event, list again) keep the Nodes and LLMJobs in
// memory. Every re-list and re-watch waits a jittered back-off of 200 ms doubling to 10 s,
// except a re-watch after a watch that lasted at least max_backoff_ns (which also resets the
// back-off), so that a server that ends every watch at once, or answers 410 to every one, sees
// a few requests a second at most, not thousands. A list pages with `limit=500` under a
// ListingGuard (listing_guard.h: repeated continue tokens, empty pages, list_timeout_ns). The
// client's rate limiter (api_client.h) bounds all of it. Meanwhile the informers keep the Nodes
// and LLMJobs in memory; every `resync` (and on every
// change) the controller reads each job's workload, calls Reconcile (reconcile.h) and carries
// out its actions: cordon (cordon.h) and resize the Indexed Job (a merge patch of
// parallelism and completions), then writes the LLMJob's status. Every decision and every
// failure is an event (event_log.h); a failing API server never stops the controller.
//
// Thread safety: Run blocks the calling thread and starts two watcher threads of its own.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "src/base/status.h"
#include "src/cluster/k8s/api_client.h"
#include "src/cluster/k8s/event_log.h"

namespace titan::k8s {

struct ControllerOptions {
  int64_t resync_ns = 1'000'000'000;
  int64_t request_timeout_ns = 10'000'000'000;
  // A watch asks the server to end it after this; the controller then watches again. A watch
  // silent for watch_timeout_ns + request_timeout_ns is dropped (an idle timeout).
  int64_t watch_timeout_ns = 60'000'000'000;
  // A list (all its pages) must end within this.
  int64_t list_timeout_ns = 120'000'000'000;
  int64_t first_backoff_ns = 200'000'000;
  int64_t max_backoff_ns = 10'000'000'000;
  std::string namespace_;  // LLMJobs of this namespace only; "" all
  int64_t run_for_ns = 0;  // 0: until `stop`
};

// Runs until `*stop` is set (or run_for passes; then it sets `*stop` to end its watchers, so
// `client` should have been made with the same flag). Returns OK then.
Status RunController(const ApiClient& client, const ControllerOptions& options, EventLog* events,
                     std::atomic<bool>* stop);

}  // namespace titan::k8s
