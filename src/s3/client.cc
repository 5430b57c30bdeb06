#include "src/s3/client.h"

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <mutex>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "src/base/backoff.h"
#include "src/base/clock.h"
#include "src/base/duration.h"
#include "src/base/log.h"
#include "src/base/text.h"
#include "src/s3/etag.h"
#include "src/s3/sigv4.h"

// Requests are built with designated initializers; the members left out keep their defaults
// by design (GCC 12 warns about that anyway).
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace titan::s3 {

// A ListObjectsV2 page (1,000 keys) is ~300 KiB.
constexpr size_t kMaxListPage = 16 << 20;
// S3's longest key.
constexpr size_t kMaxKeyBytes = 1024;

struct Client::Request {
  const char* op = "";  // "PUT", "GET range", ... for messages
  std::string method = "GET";
  std::string bucket;
  std::string key;
  std::string listed_prefix;  // LIST: named in messages instead of the (empty) key
  std::vector<std::pair<std::string, std::string>> query;
  std::vector<std::pair<std::string, std::string>> headers;  // signed
  std::string_view body;
  // Where a 2xx body goes: into `into` (at most max_bytes), or exactly range_size bytes at dst.
  size_t max_bytes = 64 << 10;
  void* dst = nullptr;
  size_t range_size = 0;
  bool head = false;
  bool metadata = false;  // control plane: rate limited (listings, HEAD, DELETE, ...)
};

struct Client::Response {
  long status = 0;
  std::string body;
  std::string etag;
  uint64_t content_length = 0;
};

namespace {

// What one attempt's callbacks share.
struct Transfer {
  const Client::Request* request = nullptr;
  CURL* curl = nullptr;
  size_t max_error_body = 0;
  size_t sent = 0;
  std::string body;
  size_t written = 0;  // into request->dst
  bool overflow = false;
  bool error_body_cut = false;  // an error body reached its bound; the transfer was ended
  std::string etag;
  std::string location;
  std::string retry_after;
};

bool Success(long status) { return status >= 200 && status < 300; }

std::string Where(const Client::Request& r) {
  return Client::Describe(r.bucket, r.key.empty() ? r.listed_prefix : r.key);
}

size_t ReadBody(char* out, size_t size, size_t count, void* user) {
  Transfer* t = static_cast<Transfer*>(user);
  size_t n = std::min(size * count, t->request->body.size() - t->sent);
  std::memcpy(out, t->request->body.data() + t->sent, n);
  t->sent += n;
  return n;
}

// curl rewinds the body to resend it on a fresh connection (a kept-alive one found closed).
int SeekBody(void* user, curl_off_t offset, int origin) {
  Transfer* t = static_cast<Transfer*>(user);
  if (origin != SEEK_SET || offset < 0 || static_cast<size_t>(offset) > t->request->body.size()) {
    return CURL_SEEKFUNC_FAIL;
  }
  t->sent = static_cast<size_t>(offset);
  return CURL_SEEKFUNC_OK;
}

size_t WriteBody(char* data, size_t size, size_t count, void* user) {
  Transfer* t = static_cast<Transfer*>(user);
  size_t n = size * count;
  long status = 0;
  curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &status);
  if (!Success(status)) {
    // Keep the head of an error body; past the bound, end the transfer (curl then closes the
    // connection): a body that never ends must not hold the request.
    size_t room = t->max_error_body - std::min(t->max_error_body, t->body.size());
    t->body.append(data, std::min(n, room));
    if (n > room) {
      t->error_body_cut = true;
      return 0;
    }
    return n;
  }
  if (t->request->dst != nullptr) {
    if (t->written + n > t->request->range_size) {
      t->overflow = true;
      return 0;  // aborts the transfer
    }
    std::memcpy(static_cast<char*>(t->request->dst) + t->written, data, n);
    t->written += n;
    return n;
  }
  if (t->body.size() + n > t->request->max_bytes) {
    t->overflow = true;
    return 0;
  }
  t->body.append(data, n);
  return n;
}

size_t ReadHeader(char* data, size_t size, size_t count, void* user) {
  Transfer* t = static_cast<Transfer*>(user);
  std::string_view line(data, size * count);
  if (line.rfind("HTTP/", 0) == 0) {  // a new response (after a 100 Continue): start afresh
    t->etag.clear();
    t->location.clear();
    t->retry_after.clear();
  }
  size_t colon = line.find(':');
  if (colon != std::string_view::npos) {
    std::string name(Trim(line.substr(0, colon)));
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string value(Trim(line.substr(colon + 1)));
    if (name == "etag") t->etag = std::string(UnquoteEtag(value));
    if (name == "location") t->location = std::move(value);
    if (name == "retry-after") t->retry_after = std::move(value);
  }
  return size * count;
}

// Transport failures worth another attempt (a fresh connection).
bool TransientCurl(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SEND_FAIL_REWIND:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

// The store asks its clients to send less.
bool Throttling(long status, const ErrorBody& error) {
  return status == 429 || status == 503 || error.code == "SlowDown";
}

bool TransientHttp(long status, const ErrorBody& error) {
  return status == 500 || status == 502 || status == 503 || status == 504 || status == 429 ||
         error.code == "SlowDown" || error.code == "RequestTimeout" ||
         error.code == "InternalError";
}

// The store's words for an error answer, bounded and escaped: its code and message, else the
// head of a body that is no S3 error document; a redirect's Location.
std::string ServerWords(long status, const ErrorBody& error, std::string_view body,
                        std::string_view location) {
  std::string out = fmt::format("HTTP {}", status);
  if (!error.code.empty()) out += " " + RemoteText(error.code, 64);
  if (!error.message.empty()) out += " (" + RemoteText(error.message, 200) + ")";
  if (error.code.empty() && error.message.empty() && !body.empty()) {
    out += fmt::format(" with a body that is no S3 error document: '{}'", RemoteText(body, 120));
  }
  if (status >= 300 && status < 400) {
    out += location.empty() ? " (a redirect without a Location)"
                            : fmt::format(" redirecting to '{}'", RemoteText(location, 200));
  }
  return out;
}

Status MapHttpError(const Client::Request& r, long status, const ErrorBody& error,
                    std::string_view body, std::string_view location, const Config& config) {
  std::string where = Where(r);
  std::string what =
      fmt::format("{} {}: {}", r.op, where, ServerWords(status, error, body, location));
  std::string endpoint = config.endpoint.empty() ? "AWS S3" : config.endpoint;
  if (error.code == "NoSuchBucket") {
    return NotFoundError(
        fmt::format("{}: bucket '{}' does not exist at {}; create it or fix the "
                    "s3:// URL",
                    what, r.bucket, endpoint));
  }
  if (status >= 300 && status < 400) {
    return FailedPreconditionError(fmt::format(
        "{}: the store sends this request elsewhere (a bucket in another region, or a gateway in "
        "front of the store); point AWS_ENDPOINT_URL (and AWS_REGION) at where it redirects",
        what));
  }
  if (status == 404) return NotFoundError(what);
  if (error.code == "QuotaExceeded" || error.code == "EntityTooLarge" || status == 507) {
    return ResourceExhaustedError(fmt::format(
        "{}: the store is full or over its quota; free space or raise the quota", what));
  }
  if (status == 403 || status == 401) {
    return PermissionDeniedError(fmt::format(
        "{}: the store refused access key '{}' from {} (region {}); check the secret key, the "
        "region and the bucket's policy",
        what, config.access_key_id, config.credentials_source, config.region));
  }
  if (status == 412) {
    return FailedPreconditionError(fmt::format("{}: the object already exists", what));
  }
  if (status == 416) return OutOfRangeError(what);
  if (TransientHttp(status, error)) return UnavailableError(what);
  return InternalError(what);
}

// Keys go into the URL path: an empty, "." or ".." segment would name another object once a
// server or proxy normalises the path, so none is sent.
Status CheckKey(const Client::Request& r) {
  if (r.key.empty()) return OkStatus();
  if (r.key.size() > kMaxKeyBytes) {
    return InvalidArgumentError(fmt::format("{} {}: a key of {} bytes (S3 allows {})", r.op,
                                            Client::Describe(r.bucket, Excerpt(r.key)),
                                            r.key.size(), kMaxKeyBytes));
  }
  size_t begin = 0;
  while (true) {
    size_t slash = r.key.find('/', begin);
    std::string_view segment =
        std::string_view(r.key).substr(begin, slash == std::string::npos ? slash : slash - begin);
    if (segment.empty() || segment == "." || segment == "..") {
      return InvalidArgumentError(fmt::format(
          "{} {}: refused: the key has an empty, '.' or '..' path segment, which a store or proxy "
          "may resolve to another object",
          r.op, Client::Describe(r.bucket, RemoteText(r.key))));
    }
    if (slash == std::string::npos) return OkStatus();
    begin = slash + 1;
  }
}

std::string HostOf(std::string_view endpoint) {
  size_t scheme = endpoint.find("://");
  std::string_view rest = scheme == std::string_view::npos ? endpoint : endpoint.substr(scheme + 3);
  return std::string(rest.substr(0, rest.find('/')));
}

int64_t CappedMul(int64_t a, int64_t b) {
  return b != 0 && a > std::numeric_limits<int64_t>::max() / b ? std::numeric_limits<int64_t>::max()
                                                               : a * b;
}

Result<int64_t> DurationSetting(const GetEnv& env, const char* name, int64_t fallback,
                                int64_t at_least_ns, std::string_view example) {
  std::optional<std::string> v = env(name);
  if (!v) return fallback;
  int64_t ns = 0;
  if (!ParseDurationNs(*v, &ns) || ns < at_least_ns) {
    return InvalidArgumentError(
        fmt::format("{}='{}': expected a duration of at least {}, such as {}", name, *v,
                    FormatDuration(at_least_ns), example));
  }
  return ns;
}

std::once_flag curl_once;

}  // namespace

Result<ClientOptions> ClientOptions::FromEnvironment(const GetEnv& env) {
  ClientOptions options;
  TITAN_ASSIGN_OR_RETURN(int64_t attempts, IntSetting(env, "TITAN_S3_MAX_ATTEMPTS",
                                                      options.max_attempts, 1, 100, "attempts"));
  options.max_attempts = static_cast<int>(attempts);
  TITAN_ASSIGN_OR_RETURN(options.stall_timeout_ns,
                         DurationSetting(env, "TITAN_S3_STALL_TIMEOUT", options.stall_timeout_ns,
                                         kNsPerSecond, "30s"));
  TITAN_ASSIGN_OR_RETURN(options.request_timeout_ns,
                         DurationSetting(env, "TITAN_S3_REQUEST_TIMEOUT",
                                         options.request_timeout_ns, kNsPerSecond, "60s"));
  TITAN_ASSIGN_OR_RETURN(options.listing.deadline_ns,
                         DurationSetting(env, "TITAN_S3_LIST_TIMEOUT", options.listing.deadline_ns,
                                         kNsPerSecond, "10m"));
  TITAN_ASSIGN_OR_RETURN(int64_t deadline_kibps, IntSetting(env, "TITAN_S3_DEADLINE_KIBPS",
                                                            options.deadline_bytes_per_second >> 10,
                                                            1, 100 << 20, "KiB/s"));
  options.deadline_bytes_per_second = deadline_kibps << 10;
  TITAN_ASSIGN_OR_RETURN(int64_t min_kibps,
                         IntSetting(env, "TITAN_S3_MIN_KIBPS",
                                    options.low_speed_bytes_per_second >> 10, 1, 1 << 20, "KiB/s"));
  options.low_speed_bytes_per_second = min_kibps << 10;
  TITAN_ASSIGN_OR_RETURN(int64_t rps,
                         IntSetting(env, "TITAN_S3_METADATA_RPS",
                                    static_cast<int64_t>(options.metadata_requests_per_second), 0,
                                    100'000, "requests per second"));
  options.metadata_requests_per_second = static_cast<double>(rps);
  options.metadata_burst = static_cast<int>(std::max<int64_t>(1, 2 * rps));
  return options;
}

Result<std::unique_ptr<Client>> Client::Create(Config config, ClientOptions options) {
  std::call_once(curl_once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  return std::unique_ptr<Client>(new Client(std::move(config), options));
}

Client::Client(Config config, ClientOptions options)
    : config_(std::move(config)),
      options_(options),
      metadata_limiter_(options.metadata_requests_per_second, options.metadata_burst),
      retry_budget_(options.retry_ratio, options.retry_floor_per_second) {
  if (!config_.endpoint.empty()) host_ = HostOf(config_.endpoint);
}

Client::~Client() {
  for (void* handle : idle_handles_) curl_easy_cleanup(static_cast<CURL*>(handle));
}

std::string Client::Describe(std::string_view bucket, std::string_view key) {
  return fmt::format("s3://{}/{}", bucket, key);
}

void* Client::AcquireHandle() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_handles_.empty()) {
      void* handle = idle_handles_.back();
      idle_handles_.pop_back();
      return handle;
    }
  }
  return curl_easy_init();
}

void Client::ReleaseHandle(void* handle) {
  std::lock_guard<std::mutex> lock(mu_);
  idle_handles_.push_back(handle);
}

void Client::PauseAll(int64_t delay_ns) {
  stats_.throttled.fetch_add(1, std::memory_order_relaxed);
  int64_t until = MonoNowNs() + delay_ns;
  int64_t current = paused_until_ns_.load(std::memory_order_relaxed);
  while (current < until &&
         !paused_until_ns_.compare_exchange_weak(current, until, std::memory_order_relaxed)) {
  }
}

bool Client::WaitToSend(const Request& r, int64_t deadline_ns) {
  int64_t paused_until = paused_until_ns_.load(std::memory_order_relaxed);
  if (paused_until > MonoNowNs()) {
    if (paused_until > deadline_ns) return false;
    SleepUntilMonoNs(paused_until);
  }
  return !r.metadata || metadata_limiter_.Acquire(deadline_ns);
}

Result<Client::Response> Client::Perform(const Request& r) {
  TITAN_RETURN_IF_ERROR(CheckKey(r));
  std::string payload_hash = Sha256Hex(r.body);
  std::string host =
      host_.empty() ? fmt::format("{}.s3.{}.amazonaws.com", r.bucket, config_.region) : host_;
  std::string path = host_.empty() ? "/" + r.key : "/" + r.bucket + "/" + r.key;
  std::string base = host_.empty() ? "https://" + host : config_.endpoint;
  std::string url = base + UriEncode(path, false);
  if (std::string query = CanonicalQuery(r.query); !query.empty()) url += "?" + query;

  const int64_t started_ns = MonoNowNs();
  const uint64_t payload_bytes = std::max<uint64_t>(r.body.size(), r.range_size);
  const int64_t deadline_ns =
      started_ns + options_.request_timeout_ns +
      CappedMul(static_cast<int64_t>(payload_bytes / static_cast<uint64_t>(std::max<int64_t>(
                                                         1, options_.deadline_bytes_per_second))),
                kNsPerSecond);
  auto past_deadline = [&](const std::string& failure) {
    return DeadlineExceededError(fmt::format(
        "{} {}: no answer within its deadline of {} ({} + {} at {}/s){}; is the store at {} "
        "overloaded? (TITAN_S3_REQUEST_TIMEOUT sets the deadline)",
        r.op, Where(r), FormatDurationShort(deadline_ns - started_ns),
        FormatDurationShort(options_.request_timeout_ns), FormatBytes(payload_bytes),
        FormatBytes(static_cast<uint64_t>(options_.deadline_bytes_per_second)),
        failure.empty() ? "" : "; last attempt: " + failure,
        config_.endpoint.empty() ? "AWS S3" : config_.endpoint));
  };
  Backoff backoff(options_.first_backoff_ns, options_.max_backoff_ns);
  int64_t server_delay_ns = 0;  // what the last answer asked for (Retry-After, SlowDown)
  std::string last_failure;
  retry_budget_.OnRequest();
  for (int attempt = 1; attempt <= options_.max_attempts; ++attempt) {
    if (attempt > 1) {
      if (!retry_budget_.TryRetry()) {
        return UnavailableError(fmt::format(
            "{} {}: {}; not retried: this client's retry budget is spent (retries may add {:.0f}% "
            "of the requests plus {:.0f}/s), the store at {} fails most requests",
            r.op, Where(r), last_failure, options_.retry_ratio * 100,
            options_.retry_floor_per_second,
            config_.endpoint.empty() ? "AWS S3" : config_.endpoint));
      }
      stats_.retries.fetch_add(1, std::memory_order_relaxed);
      int64_t sleep_ns = std::max(backoff.Next(), server_delay_ns);
      if (MonoNowNs() + sleep_ns > deadline_ns) return past_deadline(last_failure);
      Log(LogLevel::kWarning, "s3", "{} {}: {}; attempt {} of {} in {}", r.op, Where(r),
          last_failure, attempt, options_.max_attempts, FormatDurationShort(sleep_ns));
      std::this_thread::sleep_for(std::chrono::nanoseconds(sleep_ns));
    }
    server_delay_ns = 0;
    if (!WaitToSend(r, deadline_ns)) return past_deadline(last_failure);
    RequestToSign sign{r.method, path, r.query, r.headers, payload_hash};
    std::string amz_date = AmzDate(WallNowNs() / 1'000'000'000);
    sign.headers.emplace_back("host", host);
    sign.headers.emplace_back("x-amz-date", amz_date);
    sign.headers.emplace_back("x-amz-content-sha256", payload_hash);
    if (!config_.session_token.empty()) {
      sign.headers.emplace_back("x-amz-security-token", config_.session_token);
    }
    curl_slist* headers = nullptr;
    for (const auto& [name, value] : sign.headers) {
      headers = curl_slist_append(headers, (name + ": " + value).c_str());
    }
    std::string authorization =
        "Authorization: " +
        Authorization({config_.access_key_id, config_.secret_access_key, config_.region}, amz_date,
                      sign);
    headers = curl_slist_append(headers, authorization.c_str());
    headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip
    headers = curl_slist_append(headers, "Content-Type:");

    CURL* c = static_cast<CURL*>(AcquireHandle());
    if (c == nullptr) {
      curl_slist_free_all(headers);
      return InternalError("curl_easy_init failed (out of memory?)");
    }
    curl_easy_reset(c);
    Transfer t;
    t.request = &r;
    t.curl = c;
    t.max_error_body = options_.max_error_body_bytes;
    const int64_t attempt_ms = std::max<int64_t>(1, (deadline_ns - MonoNowNs()) / kNsPerMs);
    char curl_error[CURL_ERROR_SIZE] = {0};
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, curl_error);
    curl_easy_setopt(c, CURLOPT_URL, url.c_str());
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    if (!config_.ca_bundle.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, config_.ca_bundle.c_str());
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(attempt_ms));
    curl_easy_setopt(
        c, CURLOPT_CONNECTTIMEOUT_MS,
        static_cast<long>(std::min(attempt_ms, options_.connect_timeout_ns / kNsPerMs)));
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT,
                     static_cast<long>(options_.low_speed_bytes_per_second));
    curl_easy_setopt(
        c, CURLOPT_LOW_SPEED_TIME,
        static_cast<long>(std::max<int64_t>(1, options_.stall_timeout_ns / kNsPerSecond)));
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, WriteBody);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, ReadHeader);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
    if (r.head) {
      curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    } else if (r.method == "PUT") {
      curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
      curl_easy_setopt(c, CURLOPT_READFUNCTION, ReadBody);
      curl_easy_setopt(c, CURLOPT_READDATA, &t);
      curl_easy_setopt(c, CURLOPT_SEEKFUNCTION, SeekBody);
      curl_easy_setopt(c, CURLOPT_SEEKDATA, &t);
      curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(r.body.size()));
    } else if (r.method == "POST") {
      curl_easy_setopt(c, CURLOPT_POST, 1L);
      curl_easy_setopt(c, CURLOPT_POSTFIELDS, r.body.data());
      curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body.size()));
    } else if (r.method != "GET") {
      curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, r.method.c_str());
    }
    stats_.requests.fetch_add(1, std::memory_order_relaxed);
    CURLcode code = curl_easy_perform(c);
    curl_slist_free_all(headers);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_off_t length = -1;
    curl_easy_getinfo(c, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
    stats_.bytes_sent.fetch_add(t.sent + (r.method == "POST" ? r.body.size() : 0),
                                std::memory_order_relaxed);
    stats_.bytes_received.fetch_add(t.written + t.body.size(), std::memory_order_relaxed);
    ReleaseHandle(c);

    if (t.overflow) {
      if (r.dst != nullptr) {
        return DataLossError(fmt::format("{} {}: the server sent more than the {} bytes asked for",
                                         r.op, Where(r), r.range_size));
      }
      return OutOfRangeError(
          fmt::format("{} {}: the object is larger than {} bytes", r.op, Where(r), r.max_bytes));
    }
    if (code != CURLE_OK && !t.error_body_cut) {
      // curl's own words say more ("Operation too slow. Less than 65536 bytes/sec ...").
      last_failure =
          fmt::format("{} ({})", curl_error[0] ? curl_error : curl_easy_strerror(code), url);
      if (code == CURLE_OPERATION_TIMEDOUT && MonoNowNs() >= deadline_ns) {
        return past_deadline(last_failure);
      }
      if (TransientCurl(code)) continue;
      return UnavailableError(fmt::format("{} {}: {}", r.op, Where(r), last_failure));
    }
    ErrorBody error;
    if (!Success(status) || (r.method == "POST" && IsErrorDocument(t.body))) {
      error = ParseError(t.body);
      if (Throttling(status, error) || !t.retry_after.empty()) {
        std::optional<int64_t> asked = ParseRetryAfter(t.retry_after, WallNowNs());
        server_delay_ns =
            std::min(options_.max_retry_after_ns, std::max(asked.value_or(0), backoff.Next()));
        PauseAll(server_delay_ns);
      }
      if (TransientHttp(status, error) || (Success(status) && !error.code.empty())) {
        last_failure = ServerWords(status, error, t.body, t.location);
        continue;
      }
      return MapHttpError(r, status, error, t.body, t.location, config_);
    }
    Response response;
    response.status = status;
    response.body = std::move(t.body);
    response.etag = std::move(t.etag);
    response.content_length = length < 0 ? 0 : static_cast<uint64_t>(length);
    if (r.dst != nullptr && t.written != r.range_size) {
      return DataLossError(fmt::format(
          "{} {}: got {} of the {} bytes asked for; the object is shorter than its manifest says "
          "(truncated or replaced?)",
          r.op, Where(r), t.written, r.range_size));
    }
    return response;
  }
  return UnavailableError(fmt::format(
      "{} {}: {} after {} attempts over {}; is the store at {} up? (TITAN_S3_MAX_ATTEMPTS sets "
      "the attempts)",
      r.op, Where(r), last_failure, options_.max_attempts,
      FormatDurationShort(MonoNowNs() - started_ns),
      config_.endpoint.empty() ? "AWS S3" : config_.endpoint));
}

Status Client::PutObject(const std::string& bucket, const std::string& key, std::string_view data,
                         bool if_none_match) {
  Request r{.op = "PUT", .method = "PUT", .bucket = bucket, .key = key, .body = data};
  if (if_none_match) r.headers.emplace_back("if-none-match", "*");
  return Perform(r).status();
}

Result<bool> Client::ConditionalCreateHonoured(const std::string& bucket,
                                               const std::string& probe_prefix) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [b, honoured] : conditional_create_) {
      if (b == bucket) return honoured;
    }
  }
  std::string key = fmt::format("{}{}.titan-conditional-create-probe-{:x}", probe_prefix,
                                probe_prefix.empty() ? "" : "/", std::random_device{}());
  TITAN_RETURN_IF_ERROR_CTX(PutObject(bucket, key, "probe", /*if_none_match=*/true),
                            "probing whether the store honours If-None-Match");
  Status second = PutObject(bucket, key, "probe", /*if_none_match=*/true);
  DeleteObject(bucket, key).IgnoreError();
  bool honoured = second.code() == StatusCode::kFailedPrecondition;
  if (!second.ok() && !honoured) {
    return second.WithContext("probing whether the store honours If-None-Match");
  }
  if (!honoured) {
    Log(LogLevel::kWarning, "s3",
        "{} ignores If-None-Match: * (a second create of one key answered 200): a checkpoint's "
        "MANIFEST is created there after a HEAD, which cannot stop two writers that commit the "
        "same step at the same moment",
        Describe(bucket, ""));
  }
  std::lock_guard<std::mutex> lock(mu_);
  conditional_create_.emplace_back(bucket, honoured);
  return honoured;
}

Result<std::string> Client::GetObject(const std::string& bucket, const std::string& key,
                                      size_t max_bytes) {
  TITAN_ASSIGN_OR_RETURN(
      Response response,
      Perform({.op = "GET", .bucket = bucket, .key = key, .max_bytes = max_bytes}));
  return std::move(response.body);
}

Status Client::GetRange(const std::string& bucket, const std::string& key, uint64_t offset,
                        size_t size, void* dst) {
  if (size == 0) return OkStatus();
  return Perform({.op = "GET range",
                  .bucket = bucket,
                  .key = key,
                  .headers = {{"range", fmt::format("bytes={}-{}", offset, offset + size - 1)}},
                  .dst = dst,
                  .range_size = size})
      .status();
}

Result<ObjectInfo> Client::StatObject(const std::string& bucket, const std::string& key) {
  TITAN_ASSIGN_OR_RETURN(Response response, Perform({.op = "HEAD",
                                                     .method = "HEAD",
                                                     .bucket = bucket,
                                                     .key = key,
                                                     .head = true,
                                                     .metadata = true}));
  return ObjectInfo{response.content_length, std::move(response.etag)};
}

Result<uint64_t> Client::HeadObject(const std::string& bucket, const std::string& key) {
  TITAN_ASSIGN_OR_RETURN(ObjectInfo info, StatObject(bucket, key));
  return info.size_bytes;
}

Status Client::ConfirmObject(const std::string& bucket, const std::string& key, uint64_t size_bytes,
                             const std::string& expected_etag) {
  Result<ObjectInfo> info = StatObject(bucket, key);
  if (info.status().code() == StatusCode::kNotFound) {
    return DataLossError(fmt::format(
        "{}: the store acknowledged the write but holds no such object; it is not committed (a "
        "store that loses writes?)",
        Describe(bucket, key)));
  }
  if (!info.ok()) return info.status().WithContext("confirming the write");
  if (info->size_bytes != size_bytes) {
    return DataLossError(fmt::format(
        "{}: the store acknowledged the write but keeps {} bytes of the {} sent; it is not "
        "committed (a multipart upload completed with a part missing?)",
        Describe(bucket, key), info->size_bytes, size_bytes));
  }
  if (IsMd5Etag(info->etag) && info->etag != expected_etag) {
    return DataLossError(fmt::format(
        "{}: the store keeps an object of the right size but with ETag {}, not the {} of the "
        "bytes sent; it is not committed (parts out of order or another writer's data?)",
        Describe(bucket, key), RemoteText(info->etag, 80), expected_etag));
  }
  return OkStatus();
}

Status Client::DeleteObject(const std::string& bucket, const std::string& key) {
  Status status =
      Perform({.op = "DELETE", .method = "DELETE", .bucket = bucket, .key = key, .metadata = true})
          .status();
  if (status.code() == StatusCode::kNotFound &&
      status.message().find("NoSuchBucket") == std::string::npos) {
    return OkStatus();
  }
  return status;
}

namespace {

// A listing's entries must lie under the prefix asked for.
Status CheckUnderPrefix(std::string_view key, const std::string& prefix, std::string_view what) {
  if (key.substr(0, prefix.size()) == prefix) return OkStatus();
  return InvalidArgumentError(fmt::format(
      "{}: the store listed '{}', which is not under the prefix '{}' asked for; its answer is "
      "about something else (a misbehaving proxy or store?)",
      what, RemoteText(key, 120), prefix));
}

}  // namespace

Result<Listing> Client::List(const std::string& bucket, const std::string& prefix,
                             std::string_view delimiter, size_t max_entries) {
  std::string what = "LIST " + Describe(bucket, prefix);
  ListingGuard guard(what, options_.listing);
  Listing listing;
  std::string token;
  while (true) {
    Request r{.op = "LIST",
              .bucket = bucket,
              .listed_prefix = prefix,
              .query = {{"list-type", "2"}, {"prefix", prefix}},
              .max_bytes = kMaxListPage,
              .metadata = true};
    if (!delimiter.empty()) r.query.emplace_back("delimiter", std::string(delimiter));
    if (!token.empty()) r.query.emplace_back("continuation-token", token);
    TITAN_RETURN_IF_ERROR(guard.CheckDeadline());
    TITAN_ASSIGN_OR_RETURN(Response response, Perform(r));
    TITAN_ASSIGN_OR_RETURN(ListPage page, ParseListObjectsV2(response.body, what));
    for (ObjectEntry& o : page.objects) {
      TITAN_RETURN_IF_ERROR(CheckUnderPrefix(o.key, prefix, what));
      listing.objects.push_back(std::move(o));
    }
    for (std::string& p : page.common_prefixes) {
      TITAN_RETURN_IF_ERROR(CheckUnderPrefix(p, prefix, what));
      listing.common_prefixes.push_back(std::move(p));
    }
    if (listing.objects.size() + listing.common_prefixes.size() > max_entries) {
      return OutOfRangeError(fmt::format("{}: more than {} entries", what, max_entries));
    }
    TITAN_RETURN_IF_ERROR(guard.Next(page.objects.size() + page.common_prefixes.size(),
                                     page.truncated ? page.next_continuation_token : ""));
    if (!page.truncated) return listing;
    token = page.next_continuation_token;
  }
}

Status Client::CheckBucket(const std::string& bucket, const std::string& prefix) {
  return Perform({.op = "LIST",
                  .bucket = bucket,
                  .listed_prefix = prefix,
                  .query = {{"list-type", "2"}, {"prefix", prefix}, {"max-keys", "1"}},
                  .max_bytes = kMaxListPage,
                  .metadata = true})
      .status();
}

Result<std::string> Client::CreateMultipartUpload(const std::string& bucket,
                                                  const std::string& key) {
  TITAN_ASSIGN_OR_RETURN(Response response, Perform({.op = "POST ?uploads",
                                                     .method = "POST",
                                                     .bucket = bucket,
                                                     .key = key,
                                                     .query = {{"uploads", ""}}}));
  return ParseUploadId(response.body, "POST ?uploads " + Describe(bucket, key));
}

Result<std::string> Client::UploadPart(const std::string& bucket, const std::string& key,
                                       const std::string& upload_id, int part_number,
                                       std::string_view data) {
  TITAN_ASSIGN_OR_RETURN(
      Response response,
      Perform({.op = "PUT part",
               .method = "PUT",
               .bucket = bucket,
               .key = key,
               .query = {{"partNumber", std::to_string(part_number)}, {"uploadId", upload_id}},
               .body = data}));
  if (response.etag.empty()) {
    return InternalError(fmt::format("PUT part {} of {}: the server sent no ETag", part_number,
                                     Describe(bucket, key)));
  }
  return std::move(response.etag);
}

Status Client::CompleteMultipartUpload(const std::string& bucket, const std::string& key,
                                       const std::string& upload_id,
                                       const std::vector<std::string>& etags) {
  std::string body = CompleteMultipartBody(etags);
  return Perform({.op = "POST ?uploadId (complete)",
                  .method = "POST",
                  .bucket = bucket,
                  .key = key,
                  .query = {{"uploadId", upload_id}},
                  .body = body})
      .status();
}

Status Client::AbortMultipartUpload(const std::string& bucket, const std::string& key,
                                    const std::string& upload_id) {
  return Perform({.op = "DELETE ?uploadId (abort)",
                  .method = "DELETE",
                  .bucket = bucket,
                  .key = key,
                  .query = {{"uploadId", upload_id}},
                  .metadata = true})
      .status();
}

Result<std::vector<UploadsPage::Upload>> Client::ListMultipartUploads(const std::string& bucket,
                                                                      const std::string& prefix,
                                                                      size_t max_entries) {
  std::string what = "LIST ?uploads " + Describe(bucket, prefix);
  ListingGuard guard(what, options_.listing);
  std::vector<UploadsPage::Upload> uploads;
  std::string key_marker, id_marker;
  while (true) {
    Request r{.op = "LIST ?uploads",
              .bucket = bucket,
              .listed_prefix = prefix,
              .query = {{"uploads", ""}, {"prefix", prefix}},
              .max_bytes = kMaxListPage,
              .metadata = true};
    if (!key_marker.empty()) r.query.emplace_back("key-marker", key_marker);
    if (!id_marker.empty()) r.query.emplace_back("upload-id-marker", id_marker);
    TITAN_RETURN_IF_ERROR(guard.CheckDeadline());
    TITAN_ASSIGN_OR_RETURN(Response response, Perform(r));
    TITAN_ASSIGN_OR_RETURN(UploadsPage page, ParseListMultipartUploads(response.body, what));
    for (UploadsPage::Upload& u : page.uploads) {
      TITAN_RETURN_IF_ERROR(CheckUnderPrefix(u.key, prefix, what));
      uploads.push_back(std::move(u));
    }
    if (uploads.size() > max_entries) {
      return OutOfRangeError(fmt::format("{}: more than {} uploads", what, max_entries));
    }
    // The two markers together are the continuation token (a NUL cannot occur in either).
    std::string next =
        page.truncated ? page.next_key_marker + std::string(1, '\0') + page.next_upload_id_marker
                       : std::string();
    TITAN_RETURN_IF_ERROR(guard.Next(page.uploads.size(), next));
    if (!page.truncated) return uploads;
    key_marker = page.next_key_marker;
    id_marker = page.next_upload_id_marker;
  }
}

}  // namespace titan::s3
