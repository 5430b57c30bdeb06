#include "src/s3/sigv4.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include <algorithm>
#include <cctype>
#include <ctime>

#include <fmt/format.h>

namespace titan::s3 {
namespace {

std::string Hex(const unsigned char* bytes, size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(size * 2, '0');
  for (size_t i = 0; i < size; ++i) {
    out[2 * i] = kDigits[bytes[i] >> 4];
    out[2 * i + 1] = kDigits[bytes[i] & 15];
  }
  return out;
}

std::string HmacSha256(std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &size);
  return std::string(reinterpret_cast<const char*>(out), size);
}

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Header values are trimmed and inner runs of spaces collapse to one.
std::string CanonicalHeaderValue(std::string_view value) {
  std::string out;
  bool space = false;
  for (char c : value) {
    if (c == ' ' || c == '\t') {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> SortedHeaders(const RequestToSign& request) {
  std::vector<std::pair<std::string, std::string>> headers;
  for (const auto& [name, value] : request.headers) {
    headers.emplace_back(Lower(name), CanonicalHeaderValue(value));
  }
  std::sort(headers.begin(), headers.end());
  return headers;
}

std::string SignedHeaderNames(const std::vector<std::pair<std::string, std::string>>& headers) {
  std::string out;
  for (const auto& header : headers) {
    if (!out.empty()) out.push_back(';');
    out += header.first;
  }
  return out;
}

}  // namespace

std::string Sha256Hex(std::string_view data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  return Hex(digest, sizeof digest);
}

std::string UriEncode(std::string_view text, bool encode_slash) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    unsigned char u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '-' || c == '.' || c == '_' || c == '~' ||
        (c == '/' && !encode_slash)) {
      out.push_back(c);
    } else {
      out += fmt::format("%{:02X}", u);
    }
  }
  return out;
}

std::string CanonicalQuery(const std::vector<std::pair<std::string, std::string>>& query) {
  std::vector<std::pair<std::string, std::string>> encoded;
  for (const auto& [name, value] : query) {
    encoded.emplace_back(UriEncode(name, true), UriEncode(value, true));
  }
  std::sort(encoded.begin(), encoded.end());
  std::string out;
  for (const auto& [name, value] : encoded) {
    if (!out.empty()) out.push_back('&');
    out += name + "=" + value;
  }
  return out;
}

std::string CanonicalRequest(const RequestToSign& request) {
  std::vector<std::pair<std::string, std::string>> headers = SortedHeaders(request);
  std::string out = request.method + "\n" + UriEncode(request.path, false) + "\n" +
                    CanonicalQuery(request.query) + "\n";
  for (const auto& [name, value] : headers) out += name + ":" + value + "\n";
  out += "\n" + SignedHeaderNames(headers) + "\n" + request.payload_sha256;
  return out;
}

std::string Authorization(const SigningCredentials& credentials, std::string_view amz_date,
                          const RequestToSign& request) {
  std::string_view date = amz_date.substr(0, 8);
  std::string scope = fmt::format("{}/{}/s3/aws4_request", date, credentials.region);
  std::string to_sign = fmt::format("AWS4-HMAC-SHA256\n{}\n{}\n{}", amz_date, scope,
                                    Sha256Hex(CanonicalRequest(request)));
  std::string key = HmacSha256("AWS4" + credentials.secret_access_key, date);
  key = HmacSha256(key, credentials.region);
  key = HmacSha256(key, "s3");
  key = HmacSha256(key, "aws4_request");
  std::string signature = HmacSha256(key, to_sign);
  return fmt::format(
      "AWS4-HMAC-SHA256 Credential={}/{},SignedHeaders={},Signature={}", credentials.access_key_id,
      scope, SignedHeaderNames(SortedHeaders(request)),
      Hex(reinterpret_cast<const unsigned char*>(signature.data()), signature.size()));
}

std::string AmzDate(int64_t unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm;
  gmtime_r(&t, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y%m%dT%H%M%SZ", &tm);
  return buffer;
}

}  // namespace titan::s3
