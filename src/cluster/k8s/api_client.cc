#include "src/cluster/k8s/api_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <limits>
#include <mutex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "src/base/backoff.h"
#include "src/base/clock.h"
#include "src/base/duration.h"
#include "src/base/json_depth.h"
#include "src/base/text.h"

namespace titan::k8s {

namespace {

constexpr size_t kMaxBody = 64 << 20;
constexpr size_t kMaxErrorBody = 64 << 10;
constexpr size_t kMaxWatchLine = 16 << 20;
constexpr int kMaxRetryAfterRetries = 10;  // client-go's

std::once_flag curl_once;

struct Transfer {
  CURL* curl = nullptr;
  std::string body;
  bool overflow = false;
  bool error_body_cut = false;
  std::string location;
  std::string retry_after;
  // Watch only.
  const std::function<bool(std::string_view)>* on_line = nullptr;
  bool stopped_by_reader = false;
  int64_t idle_timeout_ns = 0;  // > 0: no byte for this long ends the transfer
  int64_t last_byte_ns = 0;
  bool idle = false;
  const std::atomic<bool>* stop = nullptr;
};

bool Success(long status) { return status >= 200 && status < 300; }

size_t WriteBody(char* data, size_t size, size_t count, void* user) {
  Transfer* t = static_cast<Transfer*>(user);
  size_t n = size * count;
  t->last_byte_ns = MonoNowNs();
  long status = 0;
  curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &status);
  if (!Success(status)) {
    // Keep the head of an error body, then end the transfer: it may never end.
    size_t room = kMaxErrorBody - std::min(kMaxErrorBody, t->body.size());
    t->body.append(data, std::min(n, room));
    if (n > room) {
      t->error_body_cut = true;
      return 0;
    }
    return n;
  }
  if (t->on_line != nullptr) {
    t->body.append(data, n);
    size_t start = 0;
    for (size_t nl; (nl = t->body.find('\n', start)) != std::string::npos; start = nl + 1) {
      std::string_view line(t->body.data() + start, nl - start);
      if (!line.empty() && !(*t->on_line)(line)) {
        t->stopped_by_reader = true;
        return 0;
      }
    }
    t->body.erase(0, start);
    if (t->body.size() > kMaxWatchLine) {
      t->overflow = true;
      return 0;
    }
    return n;
  }
  if (t->body.size() + n > kMaxBody) {
    t->overflow = true;
    return 0;
  }
  t->body.append(data, n);
  return n;
}

size_t ReadHeader(char* data, size_t size, size_t count, void* user) {
  Transfer* t = static_cast<Transfer*>(user);
  t->last_byte_ns = MonoNowNs();
  std::string_view line(data, size * count);
  size_t colon = line.find(':');
  if (colon != std::string_view::npos) {
    std::string name(Trim(line.substr(0, colon)));
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (name == "location") t->location = std::string(Trim(line.substr(colon + 1)));
    if (name == "retry-after") t->retry_after = std::string(Trim(line.substr(colon + 1)));
  }
  return size * count;
}

// Called by curl at least once a second, data or not: ends a stopped transfer, and a watch
// silent for its idle timeout (curl's low-speed check averages over whole seconds, too coarse
// for a stream that delivers a few bytes at a time).
int Progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  Transfer* t = static_cast<Transfer*>(user);
  if (t->stop != nullptr && t->stop->load(std::memory_order_relaxed)) return 1;
  if (t->idle_timeout_ns > 0 && MonoNowNs() - t->last_byte_ns > t->idle_timeout_ns) {
    t->idle = true;
    return 1;
  }
  return 0;
}

// The API's Status message in an error body, or the body's head when it is not one; bounded
// and escaped either way (a hostile server's bytes never reach the terminal raw).
std::string ServerMessage(const std::string& body) {
  if (CheckJsonDepth(body, "answer").ok()) {
    nlohmann::json status = nlohmann::json::parse(body, nullptr, false);
    if (status.is_object() && status.value("message", nlohmann::json()).is_string()) {
      return RemoteText(status["message"].get<std::string>(), 300);
    }
  }
  return body.empty() ? "(empty body)" : RemoteText(body, 200);
}

}  // namespace

std::string_view AdviceFor(long status) {
  switch (status) {
    case 401:
      return "the credentials were not accepted: check the token or client certificate in the "
             "kubeconfig (or the pod's service account token)";
    case 403:
      return "the account lacks this permission: grant it with a ClusterRole (`titan k8s "
             "manifests` prints the roles titan needs)";
    case 404:
      return "it does not exist: check the name (and that the LLMJob CRD is installed: "
             "`titan k8s crd | kubectl apply -f -`)";
    case 409:
      return "it changed meanwhile: read it again and retry";
    case 410:
      return "the watch is too old: list again";
    case 400:
    case 415:
    case 422:
      return "the server refused the request body: report it as a titan bug with this message";
    case 429:
      return "the API server is throttling requests: retry later";
    default:
      if (status >= 300 && status < 400) {
        return "the server sends titan elsewhere: point the kubeconfig's server at the API "
               "server itself";
      }
      return status >= 500 ? "the API server failed: retry later, check its health"
                           : "see the message";
  }
}

ApiClient::ApiClient(ApiEndpoint endpoint, const std::atomic<bool>* stop, ApiClientOptions options)
    : endpoint_(std::move(endpoint)),
      stop_(stop),
      options_(options),
      limiter_(std::make_unique<RateLimiter>(options.requests_per_second, options.burst)) {
  std::call_once(curl_once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

namespace {

struct CallSpec {
  std::string_view method;
  const std::string* path;
  std::string_view body;
  std::string_view content_type;
  int64_t timeout_ns;       // what is left of the call's timeout; 0 for a watch
  int64_t call_timeout_ns;  // the whole call's (for messages)
  int64_t idle_timeout_ns;  // a watch's: no byte for this long ends it
  const std::function<bool(std::string_view)>* on_line;
};

struct Answer {
  Result<std::string> body = std::string();
  long status = 0;
  std::string retry_after;
};

Answer Perform(const ApiEndpoint& e, const std::atomic<bool>* stop, const CallSpec& spec) {
  std::string url = e.server + *spec.path;
  std::string what = fmt::format("{} {}", spec.method, url);
  Answer answer;
  CURL* c = curl_easy_init();
  if (c == nullptr) {
    answer.body = InternalError("curl_easy_init failed (out of memory?)");
    return answer;
  }
  Transfer t;
  t.curl = c;
  t.on_line = spec.on_line;
  t.stop = stop;
  t.idle_timeout_ns = spec.on_line != nullptr ? spec.idle_timeout_ns : 0;
  t.last_byte_ns = MonoNowNs();
  curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, "Accept: application/json");
  std::string auth = "Authorization: Bearer " + e.token;
  if (!e.token.empty()) headers = curl_slist_append(headers, auth.c_str());
  std::string type = "Content-Type: " + std::string(spec.content_type);
  if (!spec.body.empty()) headers = curl_slist_append(headers, type.c_str());
  headers = curl_slist_append(headers, "Expect:");
  headers = curl_slist_append(headers, "User-Agent: titan-k8s/0.1");
  std::string method(spec.method);
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method.c_str());
  if (!spec.body.empty()) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, spec.body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(spec.body.size()));
  }
  long timeout_ms = static_cast<long>(std::max<int64_t>(1, spec.timeout_ns / 1'000'000));
  long idle_s = static_cast<long>(std::max<int64_t>(1, spec.idle_timeout_ns / 1'000'000'000));
  if (spec.on_line == nullptr) {
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, std::min(timeout_ms, 10'000L));
  } else {
    // A watch: no deadline (the server ends it after timeoutSeconds), an idle timeout instead
    // (Progress).
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, std::min(idle_s * 1000, 10'000L));
  }
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, WriteBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, ReadHeader);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, Progress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &t);
  if (!e.ca_file.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, e.ca_file.c_str());
  curl_blob ca{const_cast<char*>(e.ca_pem.data()), e.ca_pem.size(), CURL_BLOB_COPY};
  if (!e.ca_pem.empty()) curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &ca);
  if (e.insecure_skip_tls_verify) {
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if (!e.client_cert_file.empty()) curl_easy_setopt(c, CURLOPT_SSLCERT, e.client_cert_file.c_str());
  if (!e.client_key_file.empty()) curl_easy_setopt(c, CURLOPT_SSLKEY, e.client_key_file.c_str());
  curl_blob cert{const_cast<char*>(e.client_cert_pem.data()), e.client_cert_pem.size(),
                 CURL_BLOB_COPY};
  curl_blob key{const_cast<char*>(e.client_key_pem.data()), e.client_key_pem.size(),
                CURL_BLOB_COPY};
  if (!e.client_cert_pem.empty()) {
    curl_easy_setopt(c, CURLOPT_SSLCERTTYPE, "PEM");
    curl_easy_setopt(c, CURLOPT_SSLCERT_BLOB, &cert);
  }
  if (!e.client_key_pem.empty()) {
    curl_easy_setopt(c, CURLOPT_SSLKEYTYPE, "PEM");
    curl_easy_setopt(c, CURLOPT_SSLKEY_BLOB, &key);
  }
  char error[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  CURLcode code = curl_easy_perform(c);
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(c);
  curl_slist_free_all(headers);
  answer.status = status;
  answer.retry_after = t.retry_after;

  if (t.stopped_by_reader) return answer;
  if (t.idle) {
    answer.body = DeadlineExceededError(
        fmt::format("{}: the watch was silent for {} ms; dropped, it is opened again", what,
                    spec.idle_timeout_ns / 1'000'000));
    return answer;
  }
  if (code == CURLE_ABORTED_BY_CALLBACK) {
    answer.body = CancelledError(what + ": stopped");
    return answer;
  }
  if (code == CURLE_OPERATION_TIMEDOUT) {
    answer.body = DeadlineExceededError(fmt::format(
        "{}: no complete answer within {} ms ({}); is the API server ({}) overloaded or "
        "unreachable?",
        what, (spec.on_line != nullptr ? idle_s * 1000 : spec.call_timeout_ns / 1'000'000),
        error[0] ? error : "timeout", e.source));
    return answer;
  }
  if (t.overflow && Success(status)) {
    answer.body = OutOfRangeError(fmt::format("{}: answer larger than {} MiB", what,
                                              (spec.on_line ? kMaxWatchLine : kMaxBody) >> 20));
    return answer;
  }
  if (code != CURLE_OK && !t.error_body_cut) {
    answer.body = UnavailableError(fmt::format(
        "{}: {} (curl: {}); check the server address and CA in {}", what,
        error[0] ? error : curl_easy_strerror(code), curl_easy_strerror(code), e.source));
    return answer;
  }
  if (!Success(status)) {
    std::string redirect =
        status >= 300 && status < 400
            ? fmt::format(" redirecting to '{}'",
                          t.location.empty() ? "(no Location)" : RemoteText(t.location))
            : "";
    std::string message = fmt::format("{}: HTTP {}{}: {}; {}", what, status, redirect,
                                      ServerMessage(t.body), AdviceFor(status));
    switch (status) {
      case 401:
      case 403:
        answer.body = PermissionDeniedError(message);
        break;
      case 404:
        answer.body = NotFoundError(message);
        break;
      case 409:
        answer.body = FailedPreconditionError(message);
        break;
      case 410:
        answer.body = OutOfRangeError(message);
        break;
      case 400:
      case 415:
      case 422:
        answer.body = InvalidArgumentError(message);
        break;
      default:
        answer.body = status >= 300 && status < 400 ? FailedPreconditionError(message)
                                                    : UnavailableError(message);
    }
    return answer;
  }
  answer.body = std::move(t.body);
  return answer;
}

}  // namespace

Result<std::string> ApiClient::Call(std::string_view method, const std::string& path,
                                    std::string_view body, std::string_view content_type,
                                    int64_t timeout_ns) const {
  const int64_t deadline_ns = MonoNowNs() + timeout_ns;
  Backoff backoff(200'000'000, options_.max_retry_after_ns);
  for (int retry = 0;; ++retry) {
    if (!limiter_->Acquire(deadline_ns, stop_)) {
      if (stop_ != nullptr && stop_->load())
        return CancelledError(std::string(method) + " " + path + ": stopped");
      return DeadlineExceededError(fmt::format(
          "{} {}{}: the client's rate limit ({:.0f} requests/s) leaves no room within the {} "
          "timeout",
          method, endpoint_.server, path, limiter_->per_second(), FormatDurationShort(timeout_ns)));
    }
    Answer answer =
        Perform(endpoint_, stop_,
                {method, &path, body, content_type,
                 std::max<int64_t>(1'000'000, deadline_ns - MonoNowNs()), timeout_ns, 0, nullptr});
    bool throttled = answer.status == 429 || (answer.status == 503 && !answer.retry_after.empty());
    if (answer.body.ok() || !throttled || retry == kMaxRetryAfterRetries) {
      return std::move(answer.body);
    }
    // Retry-After honoured (at least the back-off, so that a "0" cannot make a storm).
    int64_t delay_ns = std::min(
        options_.max_retry_after_ns,
        std::max(ParseRetryAfter(answer.retry_after, WallNowNs()).value_or(0), backoff.Next()));
    if (MonoNowNs() + delay_ns >= deadline_ns) return std::move(answer.body);
    if (!SleepUnlessStopped(delay_ns, stop_)) return std::move(answer.body);
  }
}

Status ApiClient::Watch(const std::string& path, int64_t idle_timeout_ns,
                        const std::function<bool(std::string_view)>& on_line) const {
  if (!limiter_->Acquire(std::numeric_limits<int64_t>::max(), stop_)) {
    return CancelledError("watch " + path + ": stopped");
  }
  Answer answer =
      Perform(endpoint_, stop_, {"GET", &path, "", "", 0, 0, idle_timeout_ns, &on_line});
  if (!answer.body.ok()) return answer.body.status();
  // A last line without '\n' (the server closed the stream after it).
  if (!answer.body->empty()) on_line(*answer.body);
  return OkStatus();
}

}  // namespace titan::k8s
