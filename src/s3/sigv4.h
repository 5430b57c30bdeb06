// AWS Signature Version 4 for S3 requests (header form, "AWS4-HMAC-SHA256").
//
// titan signs its own requests instead of using libcurl's CURLOPT_AWS_SIGV4: bookworm's curl
// 7.88 signs a valueless query parameter ("?uploads") wrongly and does not send the payload
// hash S3 requires, and signing here lets every request carry the SHA-256 of its body.
// Reference: https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace titan::s3 {

// Lowercase hex SHA-256 of `data`.
std::string Sha256Hex(std::string_view data);
inline constexpr std::string_view kEmptySha256 =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

// RFC 3986 percent-encoding as SigV4 wants it: unreserved characters (A-Z a-z 0-9 - . _ ~)
// stay, every other byte becomes %XY (uppercase); '/' stays when !encode_slash (object keys).
std::string UriEncode(std::string_view text, bool encode_slash);

struct SigningCredentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string region;  // "us-east-1"
};

// One request to sign. `path` is the raw (unencoded) absolute path ("/bucket/a b.data");
// `query` holds raw names and values (a valueless parameter such as "uploads" has value "").
// `headers` must include "host", "x-amz-date" and "x-amz-content-sha256" (any case); all given
// headers are signed.
struct RequestToSign {
  std::string method;
  std::string path;
  std::vector<std::pair<std::string, std::string>> query;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string payload_sha256;  // hex, or "UNSIGNED-PAYLOAD"
};

// The canonical request (exposed for tests and for debugging a SignatureDoesNotMatch).
std::string CanonicalRequest(const RequestToSign& request);
// The value of the Authorization header. `amz_date` is "YYYYMMDDTHHMMSSZ" (UTC), the same
// value as the x-amz-date header.
std::string Authorization(const SigningCredentials& credentials, std::string_view amz_date,
                          const RequestToSign& request);
// The canonical query string ("a=1&b=%20x"): encoded, sorted by name then value.
std::string CanonicalQuery(const std::vector<std::pair<std::string, std::string>>& query);
// "YYYYMMDDTHHMMSSZ" for a Unix time in seconds.
std::string AmzDate(int64_t unix_seconds);

}  // namespace titan::s3
