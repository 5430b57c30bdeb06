#include "src/http/message.h"

namespace titan::http {

namespace {
// ASCII only, as HTTP's case-insensitivity is (std::tolower is a locale-dependent call per byte,
// and FindHeader runs for every header of every request).
constexpr char AsciiLower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; }
}  // namespace

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (AsciiLower(a[i]) != AsciiLower(b[i])) return false;
  }
  return true;
}

bool SafeInHead(std::string_view text) {
  for (const char c : text) {
    if (c == '\r' || c == '\n' || c == '\0') return false;
  }
  return true;
}

bool IsToken(std::string_view text) {
  constexpr std::string_view kPunctuation = "!#$%&'*+-.^_`|~";
  if (text.empty()) return false;
  for (const char c : text) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!alnum && kPunctuation.find(c) == std::string_view::npos) return false;
  }
  return true;
}

bool IsFramingHeader(std::string_view name) {
  return EqualsIgnoreCase(name, "Content-Length") || EqualsIgnoreCase(name, "Transfer-Encoding") ||
         EqualsIgnoreCase(name, "Connection");
}

std::string_view FindHeader(const Headers& headers, std::string_view name) {
  for (const Header& h : headers) {
    if (EqualsIgnoreCase(h.name, name)) return h.value;
  }
  return {};
}

std::string_view Request::path() const {
  std::string_view t = target;
  size_t q = t.find('?');
  return q == std::string_view::npos ? t : t.substr(0, q);
}

std::optional<std::string_view> Request::FindQueryParam(std::string_view key) const {
  std::string_view t = target;
  size_t q = t.find('?');
  if (q == std::string_view::npos) return std::nullopt;
  std::string_view query = t.substr(q + 1);
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    size_t eq = pair.find('=');
    if (pair.substr(0, eq) == key) {
      return eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return std::nullopt;
}

std::string_view Request::QueryParam(std::string_view key) const {
  return FindQueryParam(key).value_or(std::string_view());
}

std::optional<std::string> Request::DecodedQueryParam(std::string_view key) const {
  const std::optional<std::string_view> raw = FindQueryParam(key);
  if (!raw) return std::nullopt;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(raw->size());
  for (size_t i = 0; i < raw->size(); ++i) {
    const char c = (*raw)[i];
    if (c == '+') {
      out += ' ';
    } else if (c == '%' && i + 2 < raw->size() && hex((*raw)[i + 1]) >= 0 &&
               hex((*raw)[i + 2]) >= 0) {
      out += static_cast<char>(hex((*raw)[i + 1]) * 16 + hex((*raw)[i + 2]));
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

std::string_view ReasonPhrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 204:
      return "No Content";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 413:
      return "Content Too Large";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "Unknown";
  }
}

}  // namespace titan::http
