// An S3 client (libcurl, SigV4 signed by titan): the object operations titan's checkpoint
// storage needs, each retried with capped exponential back-off and full jitter on transient
// failures (connection errors, stalls, HTTP 500/502/503/504, 429, SlowDown, RequestTimeout).
//
// Every request carries the SHA-256 of its body (x-amz-content-sha256), so the store rejects a
// body changed in transit. Errors name the operation, s3://bucket/key and what to do; codes:
// NOT_FOUND (no such key or bucket), PERMISSION_DENIED (403: credentials, signature, policy),
// RESOURCE_EXHAUSTED (quota, full store), FAILED_PRECONDITION (a conditional write refused),
// UNAVAILABLE (transient failures outlasted the attempts), DATA_LOSS (a short body).
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

#include "src/base/status.h"
#include "src/s3/config.h"
#include "src/s3/responses.h"

namespace titan::s3 {

struct ClientOptions {
  int max_attempts = 8;  // per request, the first included
  int64_t first_backoff_ns = 100'000'000;
  int64_t max_backoff_ns = 5'000'000'000;
  int64_t connect_timeout_ns = 10'000'000'000;
  // An attempt that moves no byte for this long is abandoned (and retried).
  int64_t stall_timeout_ns = 30'000'000'000;

  // Overrides from TITAN_S3_MAX_ATTEMPTS and TITAN_S3_STALL_TIMEOUT (a duration, "30s").
  // A malformed value is INVALID_ARGUMENT naming the variable.
  static Result<ClientOptions> FromEnvironment(const GetEnv& env = ProcessEnv);
};

// Counters since the client was created (relaxed atomics; for logs, tests and benchmarks).
struct ClientStats {
  std::atomic<uint64_t> requests{0};
  std::atomic<uint64_t> retries{0};
  std::atomic<uint64_t> bytes_sent{0};
  std::atomic<uint64_t> bytes_received{0};
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

  // PUT. With if_none_match the write fails (FAILED_PRECONDITION) if the key exists.
  Status PutObject(const std::string& bucket, const std::string& key, std::string_view data,
                   bool if_none_match = false);
  // Whole object of at most max_bytes (more: OUT_OF_RANGE).
  Result<std::string> GetObject(const std::string& bucket, const std::string& key,
                                size_t max_bytes);
  // Exactly `size` bytes at `offset` into dst (a ranged GET); fewer is DATA_LOSS.
  Status GetRange(const std::string& bucket, const std::string& key, uint64_t offset, size_t size,
                  void* dst);
  // The object's size (HEAD).
  Result<uint64_t> HeadObject(const std::string& bucket, const std::string& key);
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
  void* AcquireHandle();
  void ReleaseHandle(void* handle);

  const Config config_;
  const ClientOptions options_;
  std::string host_;  // Host header: "127.0.0.1:7480", or "" for AWS (per bucket)
  ClientStats stats_;
  std::mutex mu_;
  std::vector<void*> idle_handles_;  // CURL*, guarded by mu_
};

}  // namespace titan::s3
