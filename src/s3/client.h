// An S3 client (libcurl, SigV4 signed by titan): the object operations titan's checkpoint
// storage needs, each bounded in time and retried with back-off on transient failures
// (connection errors, stalls, HTTP 500/502/503/504, 429, SlowDown, RequestTimeout).
//
// Bounds (ClientOptions; docs/checkpoint.md "Object storage" lists the defaults):
//   * every request, all its attempts and the waits between them, has a deadline of
//     request_timeout_ns + its payload (body sent or range read) at deadline_bytes_per_second;
//     an attempt that moves less than low_speed_bytes_per_second over stall_timeout_ns is
//     abandoned and retried;
//   * an error answer's body is read up to max_error_body_bytes, then the connection is
//     dropped (a body that never ends cannot hold a request);
//   * a listing fails when its continuation tokens repeat, after consecutive empty pages or
//     past its deadline (listing_guard.h);
//   * listings and metadata requests (LIST, HEAD, DELETE, bucket checks) are the control plane:
//     a token bucket caps their rate; object data (GET, PUT, parts) is not rate limited, but its
//     retries draw on a retry budget (rate_limiter.h), so a store that fails everything gets
//     a bounded extra load;
//   * a throttling answer (SlowDown, 429, 503, any Retry-After) pauses every request of this
//     client for max(Retry-After, the back-off), not only the one that got it.
// Keys are sent percent-encoded; a key with an empty, "." or ".." segment is refused before any
// request (INVALID_ARGUMENT), and a listing that answers with keys outside the prefix asked for
// is refused. What the store says (codes, messages, bodies, Location) is quoted bounded and
// escaped (RemoteText).
//
// Every request carries the SHA-256 of its body (x-amz-content-sha256), so the store rejects a
// body changed in transit; ConfirmObject checks what the store kept (size and MD5 ETag).
// Errors name the operation, s3://bucket/key and what to do; codes: NOT_FOUND (no such key or
// bucket), PERMISSION_DENIED (403: credentials, signature, policy), RESOURCE_EXHAUSTED (quota,
// full store), FAILED_PRECONDITION (a conditional write refused), UNAVAILABLE (transient
// failures outlasted the attempts or the retry budget), DEADLINE_EXCEEDED (the request's
// deadline), DATA_LOSS (a short body, an object that is not what was written),
// INVALID_ARGUMENT (a refused key, an answer about something else).
//
// Thread safety: all methods may be called concurrently; each request takes a libcurl handle
// (and its kept-alive connection) from a pool, so concurrent calls run in parallel.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/listing_guard.h"
#include "src/base/rate_limiter.h"
#include "src/base/status.h"
#include "src/s3/config.h"
#include "src/s3/responses.h"

namespace titan::s3 {

struct ClientOptions {
  int max_attempts = 8;  // per request, the first included
  int64_t first_backoff_ns = 100'000'000;
  int64_t max_backoff_ns = 5'000'000'000;
  int64_t connect_timeout_ns = 10'000'000'000;
  // A request's deadline, all attempts together: request_timeout_ns + its payload at
  // deadline_bytes_per_second.
  int64_t request_timeout_ns = 60'000'000'000;
  int64_t deadline_bytes_per_second = int64_t{1} << 20;
  // An attempt slower than low_speed_bytes_per_second for stall_timeout_ns is abandoned.
  int64_t low_speed_bytes_per_second = int64_t{64} << 10;
  int64_t stall_timeout_ns = 30'000'000'000;
  // Control plane (listings, HEAD, DELETE, bucket checks): requests per second (0: no limit)
  // and burst.
  double metadata_requests_per_second = 100;
  int metadata_burst = 200;
  ListingLimits listing;  // per listing: empty pages in a row, deadline
  size_t max_error_body_bytes = 16 << 10;
  // Retries of all requests: at most this share of the requests of the last 10 s, plus
  // retry_floor_per_second.
  double retry_ratio = 0.2;
  double retry_floor_per_second = 10;
  // A server's Retry-After is honoured up to this.
  int64_t max_retry_after_ns = 60'000'000'000;

  // Overrides from the environment (docs/checkpoint.md): TITAN_S3_MAX_ATTEMPTS,
  // TITAN_S3_REQUEST_TIMEOUT (a duration), TITAN_S3_DEADLINE_KIBPS, TITAN_S3_MIN_KIBPS,
  // TITAN_S3_STALL_TIMEOUT (a duration), TITAN_S3_METADATA_RPS (0: no limit),
  // TITAN_S3_LIST_TIMEOUT (a duration). A malformed value is INVALID_ARGUMENT naming the
  // variable.
  static Result<ClientOptions> FromEnvironment(const GetEnv& env = ProcessEnv);
};

// Counters since the client was created (relaxed atomics; for logs, tests and benchmarks).
struct ClientStats {
  std::atomic<uint64_t> requests{0};
  std::atomic<uint64_t> retries{0};
  std::atomic<uint64_t> bytes_sent{0};
  std::atomic<uint64_t> bytes_received{0};
  std::atomic<uint64_t> throttled{0};  // throttling answers (SlowDown, 429, Retry-After)
};

// What a HEAD says about an object.
struct ObjectInfo {
  uint64_t size_bytes = 0;
  std::string etag;  // unquoted; "" when the store sent none
};

struct Listing {
  std::vector<ObjectEntry> objects;
  std::vector<std::string> common_prefixes;  // with their trailing delimiter
};

class Client {
 public:
  static Result<std::unique_ptr<Client>> Create(Config config, ClientOptions options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // "s3://bucket/key", for messages.
  static std::string Describe(std::string_view bucket, std::string_view key);

  // PUT. With if_none_match the write fails (FAILED_PRECONDITION) if the key exists, on a
  // store that honours If-None-Match (see ConditionalCreateHonoured).
  Status PutObject(const std::string& bucket, const std::string& key, std::string_view data,
                   bool if_none_match = false);
  // Whether the store refuses a PUT with If-None-Match: * over an existing key (AWS S3 since
  // 2024, Ceph RGW, MinIO do; others answer 200 and overwrite). Found out once per client and
  // bucket with a probe object under `probe_prefix` (created twice, then deleted).
  Result<bool> ConditionalCreateHonoured(const std::string& bucket,
                                         const std::string& probe_prefix);
  // Whole object of at most max_bytes (more: OUT_OF_RANGE).
  Result<std::string> GetObject(const std::string& bucket, const std::string& key,
                                size_t max_bytes);
  // Exactly `size` bytes at `offset` into dst (a ranged GET); fewer is DATA_LOSS.
  Status GetRange(const std::string& bucket, const std::string& key, uint64_t offset, size_t size,
                  void* dst);
  // The object's size (HEAD).
  Result<uint64_t> HeadObject(const std::string& bucket, const std::string& key);
  // HEAD: size and ETag.
  Result<ObjectInfo> StatObject(const std::string& bucket, const std::string& key);
  // Confirms that the store keeps what was just written: one HEAD, the size must be
  // `size_bytes` and an MD5-shaped ETag must equal `expected_etag` (etag.h); DATA_LOSS naming
  // both otherwise (a store that answered 200 and kept nothing, or completed an upload with a
  // part missing). Never reads the data back.
  Status ConfirmObject(const std::string& bucket, const std::string& key, uint64_t size_bytes,
                       const std::string& expected_etag);
  // Missing is OK.
  Status DeleteObject(const std::string& bucket, const std::string& key);
  // ListObjectsV2 under `prefix`, every page, at most max_entries objects + prefixes (more:
  // OUT_OF_RANGE). An empty delimiter lists recursively.
  Result<Listing> List(const std::string& bucket, const std::string& prefix,
                       std::string_view delimiter, size_t max_entries = 10'000'000);
  // The bucket exists and these credentials may list it (a cheap check before a long save).
  Status CheckBucket(const std::string& bucket, const std::string& prefix);

  Result<std::string> CreateMultipartUpload(const std::string& bucket, const std::string& key);
  // Part numbers start at 1. Returns the part's ETag.
  Result<std::string> UploadPart(const std::string& bucket, const std::string& key,
                                 const std::string& upload_id, int part_number,
                                 std::string_view data);
  Status CompleteMultipartUpload(const std::string& bucket, const std::string& key,
                                 const std::string& upload_id,
                                 const std::vector<std::string>& etags);
  Status AbortMultipartUpload(const std::string& bucket, const std::string& key,
                              const std::string& upload_id);
  // Incomplete multipart uploads under `prefix`, every page (at most max_entries).
  Result<std::vector<UploadsPage::Upload>> ListMultipartUploads(const std::string& bucket,
                                                                const std::string& prefix,
                                                                size_t max_entries = 1'000'000);

  const Config& config() const { return config_; }
  const ClientStats& stats() const { return stats_; }

  struct Request;  // one S3 call (client.cc)
  struct Response;

 private:
  Client(Config config, ClientOptions options);
  Result<Response> Perform(const Request& request);
  // Blocks until this client may send (throttling pause, control-plane rate); false past the
  // request's deadline.
  bool WaitToSend(const Request& request, int64_t deadline_ns);
  // A throttling answer: every request of this client waits `delay_ns` from now.
  void PauseAll(int64_t delay_ns);
  void* AcquireHandle();
  void ReleaseHandle(void* handle);

  const Config config_;
  const ClientOptions options_;
  std::string host_;  // Host header: "127.0.0.1:7480", or "" for AWS (per bucket)
  ClientStats stats_;
  RateLimiter metadata_limiter_;
  RetryBudget retry_budget_;
  std::atomic<int64_t> paused_until_ns_{0};  // monotonic; requests wait until then
  std::mutex mu_;
  std::vector<void*> idle_handles_;                               // CURL*, guarded by mu_
  std::vector<std::pair<std::string, bool>> conditional_create_;  // per bucket, guarded by mu_
};

}  // namespace titan::s3
