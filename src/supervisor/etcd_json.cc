#include "src/supervisor/etcd_json.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "src/base/json_depth.h"
#include "src/base/text.h"

namespace titan::supervisor {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int DecodeChar(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

Result<nlohmann::json> ParseObject(std::string_view body, std::string_view what) {
  TITAN_RETURN_IF_ERROR(CheckJsonDepth(body, fmt::format("etcd {} response", what)));
  nlohmann::json j = nlohmann::json::parse(body.begin(), body.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return InvalidArgumentError(
        fmt::format("etcd {} response is not a JSON object: '{}'", what, body.substr(0, 200)));
  }
  return j;
}

// An int64 that the gateway writes as a string (or, tolerated, a number); missing: 0.
Result<int64_t> Int64Field(const nlohmann::json& obj, const char* name) {
  auto it = obj.find(name);
  if (it == obj.end()) return int64_t{0};
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_string()) {
    int64_t v = 0;
    if (ParseInt64(it->get_ref<const std::string&>(), &v)) return v;
  }
  return InvalidArgumentError(fmt::format("etcd response field '{}' is not an integer", name));
}

Result<std::string> B64Field(const nlohmann::json& obj, const char* name) {
  auto it = obj.find(name);
  if (it == obj.end()) return std::string();
  if (!it->is_string()) {
    return InvalidArgumentError(fmt::format("etcd response field '{}' is not a string", name));
  }
  auto decoded = Base64Decode(it->get_ref<const std::string&>());
  if (!decoded.ok()) return decoded.status().WithContext(fmt::format("etcd field '{}'", name));
  return decoded;
}

}  // namespace

std::string Base64Encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    uint32_t v = (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8) | uint8_t(bytes[i + 2]);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (i + 1 == bytes.size()) {
    uint32_t v = uint8_t(bytes[i]) << 16;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == bytes.size()) {
    uint32_t v = (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

Result<std::string> Base64Decode(std::string_view text) {
  if (text.size() % 4 != 0) return InvalidArgumentError("base64 length is not a multiple of 4");
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    int c[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      char ch = text[i + k];
      if (ch == '=' && i + 4 == text.size() && k >= 2) {
        c[k] = 0;
        ++pad;
        continue;
      }
      if (pad > 0) return InvalidArgumentError("base64 has data after padding");
      c[k] = DecodeChar(ch);
      if (c[k] < 0) return InvalidArgumentError("base64 has a character outside the alphabet");
    }
    uint32_t v = (c[0] << 18) | (c[1] << 12) | (c[2] << 6) | c[3];
    if ((pad == 1 && (v & 0xFF) != 0) || (pad == 2 && (v & 0xFFFF) != 0)) {
      return InvalidArgumentError("base64 has non-zero bits in its padding");
    }
    out += static_cast<char>((v >> 16) & 0xFF);
    if (pad < 2) out += static_cast<char>((v >> 8) & 0xFF);
    if (pad < 1) out += static_cast<char>(v & 0xFF);
  }
  return out;
}

std::string PrefixRangeEnd(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    if (static_cast<uint8_t>(end.back()) < 0xFF) {
      end.back() = static_cast<char>(static_cast<uint8_t>(end.back()) + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // every key
}

Result<std::vector<EtcdKeyValue>> ParseRangeResponse(std::string_view body) {
  TITAN_ASSIGN_OR_RETURN(nlohmann::json j, ParseObject(body, "range"));
  std::vector<EtcdKeyValue> out;
  auto it = j.find("kvs");
  if (it == j.end()) return out;
  if (!it->is_array()) return InvalidArgumentError("etcd range response: 'kvs' is not an array");
  for (const nlohmann::json& kv : *it) {
    if (!kv.is_object()) return InvalidArgumentError("etcd range response: a kv is not an object");
    EtcdKeyValue e;
    TITAN_ASSIGN_OR_RETURN(e.key, B64Field(kv, "key"));
    TITAN_ASSIGN_OR_RETURN(e.value, B64Field(kv, "value"));
    TITAN_ASSIGN_OR_RETURN(e.create_revision, Int64Field(kv, "create_revision"));
    TITAN_ASSIGN_OR_RETURN(e.mod_revision, Int64Field(kv, "mod_revision"));
    TITAN_ASSIGN_OR_RETURN(e.lease, Int64Field(kv, "lease"));
    out.push_back(std::move(e));
  }
  return out;
}

Result<int64_t> ParseLeaseGrantResponse(std::string_view body) {
  TITAN_ASSIGN_OR_RETURN(nlohmann::json j, ParseObject(body, "lease grant"));
  TITAN_ASSIGN_OR_RETURN(int64_t id, Int64Field(j, "ID"));
  if (id == 0) {
    return UnavailableError(fmt::format("etcd granted no lease: {}", ParseErrorMessage(body)));
  }
  return id;
}

Result<int64_t> ParseLeaseKeepAliveResponse(std::string_view body) {
  TITAN_ASSIGN_OR_RETURN(nlohmann::json j, ParseObject(body, "lease keepalive"));
  auto it = j.find("result");
  if (it == j.end() || !it->is_object()) return int64_t{0};
  return Int64Field(*it, "TTL");
}

Result<bool> ParseTxnResponse(std::string_view body) {
  TITAN_ASSIGN_OR_RETURN(nlohmann::json j, ParseObject(body, "txn"));
  if (j.contains("error") || j.contains("code")) {
    return UnavailableError(fmt::format("etcd txn failed: {}", ParseErrorMessage(body)));
  }
  auto it = j.find("succeeded");
  if (it == j.end()) return false;
  if (!it->is_boolean()) return InvalidArgumentError("etcd txn response: 'succeeded' not a bool");
  return it->get<bool>();
}

std::string ParseErrorMessage(std::string_view body) {
  nlohmann::json j = nlohmann::json::parse(body.begin(), body.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return "";
  for (const char* name : {"message", "error"}) {
    auto it = j.find(name);
    if (it != j.end() && it->is_string()) return it->get<std::string>();
  }
  return "";
}

}  // namespace titan::supervisor
