#include "src/cluster/k8s/api_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <mutex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "src/base/json_depth.h"

namespace titan::k8s {

namespace {

constexpr size_t kMaxBody = 64 << 20;
constexpr size_t kMaxErrorBody = 64 << 10;
constexpr size_t kMaxWatchLine = 16 << 20;

std::once_flag curl_once;

struct Transfer {
  CURL* curl = nullptr;
  std::string body;
  bool overflow = false;
  // Watch only.
  const std::function<bool(std::string_view)>* on_line = nullptr;
  bool stopped_by_reader = false;
  const std::atomic<bool>* stop = nullptr;
};

bool Success(long status) { return status >= 200 && status < 300; }

size_t WriteBody(char* data, size_t size, size_t count, void* user) {
  Transfer* t = static_cast<Transfer*>(user);
  size_t n = size * count;
  long status = 0;
  curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &status);
  if (t->on_line != nullptr && Success(status)) {
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
  size_t cap = Success(status) ? kMaxBody : kMaxErrorBody;
  if (t->body.size() + n > cap) {
    t->overflow = true;
    if (!Success(status)) {
      t->body.append(data, cap - t->body.size());  // keep the head of an error body
      return n;
    }
    return 0;
  }
  t->body.append(data, n);
  return n;
}

int Progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  Transfer* t = static_cast<Transfer*>(user);
  return t->stop != nullptr && t->stop->load(std::memory_order_relaxed) ? 1 : 0;
}

// The API's Status message in an error body, or the body's head when it is not one.
std::string ServerMessage(const std::string& body) {
  if (CheckJsonDepth(body, "answer").ok()) {
    nlohmann::json status = nlohmann::json::parse(body, nullptr, false);
    if (status.is_object() && status.value("message", nlohmann::json()).is_string()) {
      return status["message"].get<std::string>();
    }
  }
  std::string head = body.substr(0, 200);
  std::replace(head.begin(), head.end(), '\n', ' ');
  return head.empty() ? "(empty body)" : head;
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
      return status >= 500 ? "the API server failed: retry later, check its health"
                           : "see the message";
  }
}

ApiClient::ApiClient(ApiEndpoint endpoint, const std::atomic<bool>* stop)
    : endpoint_(std::move(endpoint)), stop_(stop) {
  std::call_once(curl_once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

namespace {

struct CallSpec {
  std::string_view method;
  const std::string* path;
  std::string_view body;
  std::string_view content_type;
  int64_t timeout_ns;
  const std::function<bool(std::string_view)>* on_line;
};

Result<std::string> Perform(const ApiEndpoint& e, const std::atomic<bool>* stop,
                            const CallSpec& spec) {
  std::string url = e.server + *spec.path;
  std::string what = fmt::format("{} {}", spec.method, url);
  CURL* c = curl_easy_init();
  if (c == nullptr) return InternalError("curl_easy_init failed (out of memory?)");
  Transfer t;
  t.curl = c;
  t.on_line = spec.on_line;
  t.stop = stop;
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
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, std::min(timeout_ms, 10'000L));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, WriteBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
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

  if (t.stopped_by_reader) return std::string();
  if (code == CURLE_ABORTED_BY_CALLBACK) return CancelledError(what + ": stopped");
  if (code == CURLE_OPERATION_TIMEDOUT) {
    return DeadlineExceededError(fmt::format(
        "{}: no complete answer within {} ms ({}); is the API server ({}) overloaded or "
        "unreachable?",
        what, timeout_ms, error[0] ? error : "timeout", e.source));
  }
  if (t.overflow && Success(status)) {
    return OutOfRangeError(fmt::format("{}: answer larger than {} MiB", what, kMaxBody >> 20));
  }
  if (code != CURLE_OK) {
    return UnavailableError(fmt::format("{}: {} (curl: {}); check the server address and CA in {}",
                                        what, error[0] ? error : curl_easy_strerror(code),
                                        curl_easy_strerror(code), e.source));
  }
  if (!Success(status)) {
    std::string message =
        fmt::format("{}: HTTP {}: {}; {}", what, status, ServerMessage(t.body), AdviceFor(status));
    switch (status) {
      case 401:
      case 403:
        return PermissionDeniedError(message);
      case 404:
        return NotFoundError(message);
      case 409:
        return FailedPreconditionError(message);
      case 410:
        return OutOfRangeError(message);
      case 400:
      case 415:
      case 422:
        return InvalidArgumentError(message);
      default:
        return UnavailableError(message);
    }
  }
  return std::move(t.body);
}

}  // namespace

Result<std::string> ApiClient::Call(std::string_view method, const std::string& path,
                                    std::string_view body, std::string_view content_type,
                                    int64_t timeout_ns) const {
  return Perform(endpoint_, stop_, {method, &path, body, content_type, timeout_ns, nullptr});
}

Status ApiClient::Watch(const std::string& path, int64_t timeout_ns,
                        const std::function<bool(std::string_view)>& on_line) const {
  Result<std::string> rest =
      Perform(endpoint_, stop_, {"GET", &path, "", "", timeout_ns, &on_line});
  if (!rest.ok()) return rest.status();
  // A last line without '\n' (the server closed the stream after it).
  if (!rest->empty()) on_line(*rest);
  return OkStatus();
}

}  // namespace titan::k8s
