#include "src/supervisor/etcd_client.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <mutex>

#include <nlohmann/json.hpp>

#include "src/base/clock.h"
#include "src/base/text.h"

namespace titan::supervisor {
namespace {

size_t AppendBody(char* data, size_t size, size_t n, void* user) {
  auto* out = static_cast<std::string*>(user);
  if (out->size() + size * n > (8u << 20)) return 0;  // bounded: abort absurd responses
  out->append(data, size * n);
  return size * n;
}

void GlobalInitOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::string Id(int64_t v) { return std::to_string(v); }

// An answer about other keys than the ones asked for (a proxy or a misbehaving server).
Status ForeignAnswer(std::string_view asked, std::string_view got) {
  return InvalidArgumentError(fmt::format(
      "etcd answered with key '{}' when asked for '{}'; not using it (a misbehaving proxy?)",
      RemoteText(got, 120), asked));
}

}  // namespace

EtcdClient::EtcdClient(std::string endpoint, int64_t timeout_ms)
    : endpoint_(std::move(endpoint)), timeout_ms_(timeout_ms) {
  if (endpoint_.find("://") == std::string::npos) endpoint_ = "http://" + endpoint_;
  while (!endpoint_.empty() && endpoint_.back() == '/') endpoint_.pop_back();
  GlobalInitOnce();
  curl_ = curl_easy_init();
}

EtcdClient::~EtcdClient() {
  if (curl_ != nullptr) curl_easy_cleanup(static_cast<CURL*>(curl_));
}

Result<std::string> EtcdClient::Post(std::string_view path, const std::string& body,
                                     int64_t timeout_ms, bool limited) {
  CURL* c = static_cast<CURL*>(curl_);
  if (c == nullptr) return InternalError("curl_easy_init failed");
  std::string url = endpoint_ + std::string(path);
  if (timeout_ms <= 0) timeout_ms = timeout_ms_;
  if (limited && !limiter_.Acquire(MonoNowNs() + timeout_ms * 1'000'000)) {
    return DeadlineExceededError(fmt::format(
        "etcd at {}: this client's rate limit ({:.0f} requests/s) left no room within {} ms", url,
        kRequestsPerSecond, timeout_ms));
  }
  std::string response;
  curl_easy_reset(c);
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_POST, 1L);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_ms));
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(timeout_ms));
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, AppendBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &response);
  struct curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  CURLcode rc = curl_easy_perform(c);
  long http = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &http);
  curl_slist_free_all(headers);
  if (rc != CURLE_OK) {
    std::string msg = fmt::format("etcd at {} ({}): {}; check --etcd and that etcd runs", url, path,
                                  curl_easy_strerror(rc));
    return rc == CURLE_OPERATION_TIMEDOUT ? DeadlineExceededError(msg) : UnavailableError(msg);
  }
  if (http != 200) {
    std::string detail = ParseErrorMessage(response);
    detail = RemoteText(detail.empty() ? response : detail, 200);
    if (http == 404 || detail.find("not found") != std::string::npos) {
      return NotFoundError(fmt::format("etcd {}: HTTP {}: {}", url, http, detail));
    }
    return UnavailableError(fmt::format("etcd {}: HTTP {}: {}", url, http, detail));
  }
  return response;
}

Status EtcdClient::Put(std::string_view key, std::string_view value, int64_t lease) {
  nlohmann::json req = {{"key", Base64Encode(key)}, {"value", Base64Encode(value)}};
  if (lease != 0) req["lease"] = Id(lease);
  return Post("/v3/kv/put", req.dump()).status();
}

Result<std::vector<EtcdKeyValue>> EtcdClient::GetPrefix(std::string_view prefix) {
  nlohmann::json req = {{"key", Base64Encode(prefix)},
                        {"range_end", Base64Encode(PrefixRangeEnd(prefix))}};
  TITAN_ASSIGN_OR_RETURN(std::string body, Post("/v3/kv/range", req.dump()));
  TITAN_ASSIGN_OR_RETURN(std::vector<EtcdKeyValue> kvs, ParseRangeResponse(body));
  for (const EtcdKeyValue& kv : kvs) {
    if (kv.key.compare(0, prefix.size(), prefix) != 0) return ForeignAnswer(prefix, kv.key);
  }
  return kvs;
}

Result<EtcdKeyValue> EtcdClient::Get(std::string_view key) {
  nlohmann::json req = {{"key", Base64Encode(key)}};
  TITAN_ASSIGN_OR_RETURN(std::string body, Post("/v3/kv/range", req.dump()));
  TITAN_ASSIGN_OR_RETURN(std::vector<EtcdKeyValue> kvs, ParseRangeResponse(body));
  if (kvs.empty()) return NotFoundError(fmt::format("etcd key '{}' does not exist", key));
  if (kvs.front().key != key) return ForeignAnswer(key, kvs.front().key);
  return kvs.front();
}

Status EtcdClient::Delete(std::string_view key) {
  nlohmann::json req = {{"key", Base64Encode(key)}};
  return Post("/v3/kv/deleterange", req.dump()).status();
}

Result<bool> EtcdClient::CreateIfAbsent(std::string_view key, std::string_view value,
                                        int64_t lease) {
  nlohmann::json put = {{"key", Base64Encode(key)}, {"value", Base64Encode(value)}};
  if (lease != 0) put["lease"] = Id(lease);
  nlohmann::json req = {{"compare",
                         {{{"key", Base64Encode(key)},
                           {"target", "CREATE"},
                           {"result", "EQUAL"},
                           {"create_revision", "0"}}}},
                        {"success", {{{"request_put", put}}}}};
  TITAN_ASSIGN_OR_RETURN(std::string body, Post("/v3/kv/txn", req.dump()));
  return ParseTxnResponse(body);
}

Result<bool> EtcdClient::CompareAndSwap(std::string_view key, std::string_view expected,
                                        std::string_view value) {
  nlohmann::json put = {{"key", Base64Encode(key)}, {"value", Base64Encode(value)}};
  nlohmann::json req = {{"compare",
                         {{{"key", Base64Encode(key)},
                           {"target", "VALUE"},
                           {"result", "EQUAL"},
                           {"value", Base64Encode(expected)}}}},
                        {"success", {{{"request_put", put}}}}};
  TITAN_ASSIGN_OR_RETURN(std::string body, Post("/v3/kv/txn", req.dump()));
  return ParseTxnResponse(body);
}

Result<int64_t> EtcdClient::GrantLease(int64_t ttl_seconds) {
  nlohmann::json req = {{"TTL", Id(ttl_seconds)}};
  TITAN_ASSIGN_OR_RETURN(std::string body, Post("/v3/lease/grant", req.dump()));
  return ParseLeaseGrantResponse(body);
}

Status EtcdClient::KeepAlive(int64_t lease, int64_t timeout_ms) {
  nlohmann::json req = {{"ID", Id(lease)}};
  TITAN_ASSIGN_OR_RETURN(std::string body,
                         Post("/v3/lease/keepalive", req.dump(), timeout_ms, /*limited=*/false));
  TITAN_ASSIGN_OR_RETURN(int64_t ttl, ParseLeaseKeepAliveResponse(body));
  if (ttl <= 0) return NotFoundError(fmt::format("etcd lease {} expired", lease));
  return OkStatus();
}

Status EtcdClient::RevokeLease(int64_t lease) {
  nlohmann::json req = {{"ID", Id(lease)}};
  return Post("/v3/lease/revoke", req.dump()).status();
}

}  // namespace titan::supervisor
