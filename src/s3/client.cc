#include "src/s3/client.h"

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "src/base/clock.h"
#include "src/base/duration.h"
#include "src/base/log.h"
#include "src/base/text.h"
#include "src/s3/sigv4.h"

// Requests are built with designated initializers; the members left out keep their defaults
// by design (GCC 12 warns about that anyway).
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace titan::s3 {

// Error bodies past this are cut (they are a few hundred bytes of XML).
constexpr size_t kMaxErrorBody = 64 << 10;
// A ListObjectsV2 page (1,000 keys) is ~300 KiB.
constexpr size_t kMaxListPage = 16 << 20;

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
  size_t max_bytes = kMaxErrorBody;
  void* dst = nullptr;
  size_t range_size = 0;
  bool head = false;
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
  size_t sent = 0;
  std::string body;
  size_t written = 0;  // into request->dst
  bool overflow = false;
  std::string etag;
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
  if (Success(status) && t->request->dst != nullptr) {
    if (t->written + n > t->request->range_size) {
      t->overflow = true;
      return 0;  // aborts the transfer
    }
    std::memcpy(static_cast<char*>(t->request->dst) + t->written, data, n);
    t->written += n;
    return n;
  }
  size_t cap = Success(status) ? t->request->max_bytes : kMaxErrorBody;
  if (t->body.size() + n > cap) {
    if (Success(status)) {
      t->overflow = true;
      return 0;
    }
    n = cap - t->body.size();  // keep the head of an oversized error body
    t->body.append(data, n);
    return size * count;
  }
  t->body.append(data, n);
  return n;
}

size_t ReadHeader(char* data, size_t size, size_t count, void* user) {
  Transfer* t = static_cast<Transfer*>(user);
  std::string_view line(data, size * count);
  size_t colon = line.find(':');
  if (colon != std::string_view::npos) {
    std::string name(Trim(line.substr(0, colon)));
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (name == "etag") t->etag = std::string(Trim(line.substr(colon + 1)));
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

bool TransientHttp(long status, const ErrorBody& error) {
  return status == 500 || status == 502 || status == 503 || status == 504 || status == 429 ||
         error.code == "SlowDown" || error.code == "RequestTimeout" ||
         error.code == "InternalError";
}

std::string ServerWords(long status, const ErrorBody& error) {
  std::string out = fmt::format("HTTP {}", status);
  if (!error.code.empty()) out += " " + error.code;
  if (!error.message.empty()) out += " (" + error.message + ")";
  return out;
}

Status MapHttpError(const Client::Request& r, long status, const ErrorBody& error,
                    const Config& config) {
  std::string where = Where(r);
  std::string what = fmt::format("{} {}: {}", r.op, where, ServerWords(status, error));
  std::string endpoint = config.endpoint.empty() ? "AWS S3" : config.endpoint;
  if (error.code == "NoSuchBucket") {
    return NotFoundError(
        fmt::format("{}: bucket '{}' does not exist at {}; create it or fix the "
                    "s3:// URL",
                    what, r.bucket, endpoint));
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

std::string HostOf(std::string_view endpoint) {
  size_t scheme = endpoint.find("://");
  std::string_view rest = scheme == std::string_view::npos ? endpoint : endpoint.substr(scheme + 3);
  return std::string(rest.substr(0, rest.find('/')));
}

std::once_flag curl_once;

}  // namespace

Result<ClientOptions> ClientOptions::FromEnvironment(const GetEnv& env) {
  ClientOptions options;
  TITAN_ASSIGN_OR_RETURN(int64_t attempts, IntSetting(env, "TITAN_S3_MAX_ATTEMPTS",
                                                      options.max_attempts, 1, 100, "attempts"));
  options.max_attempts = static_cast<int>(attempts);
  if (std::optional<std::string> v = env("TITAN_S3_STALL_TIMEOUT")) {
    if (!ParseDurationNs(*v, &options.stall_timeout_ns) ||
        options.stall_timeout_ns < 1'000'000'000) {
      return InvalidArgumentError(fmt::format(
          "TITAN_S3_STALL_TIMEOUT='{}': expected a duration of at least 1s, such as 30s", *v));
    }
  }
  return options;
}

Result<std::unique_ptr<Client>> Client::Create(Config config, ClientOptions options) {
  std::call_once(curl_once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  return std::unique_ptr<Client>(new Client(std::move(config), options));
}

Client::Client(Config config, ClientOptions options)
    : config_(std::move(config)), options_(options) {
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

Result<Client::Response> Client::Perform(const Request& r) {
  std::string payload_hash = Sha256Hex(r.body);
  std::string host =
      host_.empty() ? fmt::format("{}.s3.{}.amazonaws.com", r.bucket, config_.region) : host_;
  std::string path = host_.empty() ? "/" + r.key : "/" + r.bucket + "/" + r.key;
  std::string base = host_.empty() ? "https://" + host : config_.endpoint;
  std::string url = base + UriEncode(path, false);
  if (std::string query = CanonicalQuery(r.query); !query.empty()) url += "?" + query;

  std::mt19937_64 jitter(std::random_device{}());
  int64_t started_ns = MonoNowNs();
  std::string last_failure;
  for (int attempt = 1; attempt <= options_.max_attempts; ++attempt) {
    if (attempt > 1) {
      stats_.retries.fetch_add(1, std::memory_order_relaxed);
      int64_t cap =
          std::min(options_.max_backoff_ns, options_.first_backoff_ns << std::min(attempt - 2, 20));
      int64_t sleep_ns = std::uniform_int_distribution<int64_t>(cap / 2, cap)(jitter);
      Log(LogLevel::kWarning, "s3", "{} {}: {}; attempt {} of {} in {}", r.op, Where(r),
          last_failure, attempt, options_.max_attempts, FormatDurationShort(sleep_ns));
      std::this_thread::sleep_for(std::chrono::nanoseconds(sleep_ns));
    }
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
    curl_easy_setopt(c, CURLOPT_URL, url.c_str());
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    if (!config_.ca_bundle.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, config_.ca_bundle.c_str());
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(options_.connect_timeout_ns / 1'000'000));
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(
        c, CURLOPT_LOW_SPEED_TIME,
        static_cast<long>(std::max<int64_t>(1, options_.stall_timeout_ns / 1'000'000'000)));
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
    if (code != CURLE_OK) {
      last_failure = fmt::format("{} ({})", curl_easy_strerror(code), url);
      if (TransientCurl(code)) continue;
      return UnavailableError(fmt::format("{} {}: {}", r.op, Where(r), last_failure));
    }
    ErrorBody error;
    if (!Success(status) || (r.method == "POST" && IsErrorDocument(t.body))) {
      error = ParseError(t.body);
      if (TransientHttp(status, error) || (Success(status) && !error.code.empty())) {
        last_failure = ServerWords(status, error);
        continue;
      }
      return MapHttpError(r, status, error, config_);
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

Result<uint64_t> Client::HeadObject(const std::string& bucket, const std::string& key) {
  TITAN_ASSIGN_OR_RETURN(
      Response response,
      Perform({.op = "HEAD", .method = "HEAD", .bucket = bucket, .key = key, .head = true}));
  return response.content_length;
}

Status Client::DeleteObject(const std::string& bucket, const std::string& key) {
  Status status =
      Perform({.op = "DELETE", .method = "DELETE", .bucket = bucket, .key = key}).status();
  if (status.code() == StatusCode::kNotFound &&
      status.message().find("NoSuchBucket") == std::string::npos) {
    return OkStatus();
  }
  return status;
}

Result<Listing> Client::List(const std::string& bucket, const std::string& prefix,
                             std::string_view delimiter, size_t max_entries) {
  Listing listing;
  std::string token;
  while (true) {
    Request r{.op = "LIST",
              .bucket = bucket,
              .listed_prefix = prefix,
              .query = {{"list-type", "2"}, {"prefix", prefix}},
              .max_bytes = kMaxListPage};
    if (!delimiter.empty()) r.query.emplace_back("delimiter", std::string(delimiter));
    if (!token.empty()) r.query.emplace_back("continuation-token", token);
    TITAN_ASSIGN_OR_RETURN(Response response, Perform(r));
    TITAN_ASSIGN_OR_RETURN(ListPage page,
                           ParseListObjectsV2(response.body, "LIST " + Describe(bucket, prefix)));
    for (ObjectEntry& o : page.objects) listing.objects.push_back(std::move(o));
    for (std::string& p : page.common_prefixes) listing.common_prefixes.push_back(std::move(p));
    if (listing.objects.size() + listing.common_prefixes.size() > max_entries) {
      return OutOfRangeError(
          fmt::format("LIST {}: more than {} entries", Describe(bucket, prefix), max_entries));
    }
    if (!page.truncated) return listing;
    if (page.next_continuation_token == token) {
      return InternalError(fmt::format("LIST {}: the server repeated continuation token '{}'",
                                       Describe(bucket, prefix), token));
    }
    token = page.next_continuation_token;
  }
}

Status Client::CheckBucket(const std::string& bucket, const std::string& prefix) {
  return Perform({.op = "LIST",
                  .bucket = bucket,
                  .listed_prefix = prefix,
                  .query = {{"list-type", "2"}, {"prefix", prefix}, {"max-keys", "1"}},
                  .max_bytes = kMaxListPage})
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
                  .query = {{"uploadId", upload_id}}})
      .status();
}

Result<std::vector<UploadsPage::Upload>> Client::ListMultipartUploads(const std::string& bucket,
                                                                      const std::string& prefix,
                                                                      size_t max_entries) {
  std::vector<UploadsPage::Upload> uploads;
  std::string key_marker, id_marker;
  while (true) {
    Request r{.op = "LIST ?uploads",
              .bucket = bucket,
              .listed_prefix = prefix,
              .query = {{"uploads", ""}, {"prefix", prefix}},
              .max_bytes = kMaxListPage};
    if (!key_marker.empty()) r.query.emplace_back("key-marker", key_marker);
    if (!id_marker.empty()) r.query.emplace_back("upload-id-marker", id_marker);
    TITAN_ASSIGN_OR_RETURN(Response response, Perform(r));
    TITAN_ASSIGN_OR_RETURN(
        UploadsPage page,
        ParseListMultipartUploads(response.body, "LIST ?uploads " + Describe(bucket, prefix)));
    for (UploadsPage::Upload& u : page.uploads) uploads.push_back(std::move(u));
    if (uploads.size() > max_entries) {
      return OutOfRangeError(fmt::format("LIST ?uploads {}: more than {} uploads",
                                         Describe(bucket, prefix), max_entries));
    }
    if (!page.truncated) return uploads;
    if (page.next_key_marker == key_marker && page.next_upload_id_marker == id_marker) {
      return InternalError(fmt::format("LIST ?uploads {}: the server repeated its marker",
                                       Describe(bucket, prefix)));
    }
    key_marker = page.next_key_marker;
    id_marker = page.next_upload_id_marker;
  }
}

}  // namespace titan::s3
