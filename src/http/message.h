// Plain request/response heads shared by titan's HTTP server and client, free of Boost.Beast
// types so that code using them stays quick to compile. Header names compare
// case-insensitively (RFC 9110); values are kept as received.
// Thread safety: plain values.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace titan::http {

struct Header {
  std::string name;
  std::string value;
};

using Headers = std::vector<Header>;

// The value of the first header named `name` (case-insensitive), or "" when absent.
std::string_view FindHeader(const Headers& headers, std::string_view name);

bool EqualsIgnoreCase(std::string_view a, std::string_view b);

// True when `text` holds no CR, LF or NUL: it cannot end a request line or header early
// (request splitting) when written in a message head.
bool SafeInHead(std::string_view text);

// True when `text` is an HTTP token (RFC 9110 section 5.6.2: one or more letters, digits and
// !#$%&'*+-.^_`|~), as a method and a header name must be.
bool IsToken(std::string_view text);

// True for the headers that frame a message (Content-Length, Transfer-Encoding, Connection):
// titan's client and server write these themselves, never from a caller's extra headers.
bool IsFramingHeader(std::string_view name);

struct Request {
  std::string method;  // "GET", "POST", ...
  std::string target;  // path and query as sent: "/v1/completions?x=1"
  Headers headers;
  std::string body;

  // The path without the query string.
  std::string_view path() const;
  // The value of query parameter `key` ("" when absent; not percent-decoded).
  std::string_view QueryParam(std::string_view key) const;
  // The value of query parameter `key` percent-decoded ('+' is a space; a malformed escape is
  // kept as sent), nullopt when the parameter is absent ("x" and "x=" give "").
  std::optional<std::string> DecodedQueryParam(std::string_view key) const;

 private:
  std::optional<std::string_view> FindQueryParam(std::string_view key) const;
};

// The reason phrase of a status code ("Too Many Requests"), "Unknown" for unknown codes.
std::string_view ReasonPhrase(int status);

}  // namespace titan::http
