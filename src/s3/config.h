// Where an S3-compatible store is and how to sign for it, from the standard AWS settings:
//
//   credentials  AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN), else the
//                profile (AWS_PROFILE, default "default") in AWS_SHARED_CREDENTIALS_FILE
//                (~/.aws/credentials), else in AWS_CONFIG_FILE (~/.aws/config)
//   region       AWS_REGION, AWS_DEFAULT_REGION, the profile's `region`, else us-east-1
//   endpoint     AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the profile's `endpoint_url`, else
//                AWS itself (https://s3.<region>.amazonaws.com, virtual-hosted buckets)
//   TLS roots    AWS_CA_BUNDLE, the profile's `ca_bundle`, else the system's
//
// A configured endpoint (Ceph RGW, MinIO, ...) is addressed path-style: ENDPOINT/bucket/key.
// Thread safety: pure functions; ResolveConfig reads the environment and two small files.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "src/base/status.h"

namespace titan::s3 {

struct Config {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // "" when none
  std::string region = "us-east-1";
  std::string endpoint;   // "http://127.0.0.1:7480" (no trailing '/'); "" means AWS
  std::string ca_bundle;  // AWS_CA_BUNDLE or the profile's ca_bundle; "" for curl's default
  std::string credentials_source;  // "environment", "~/.aws/credentials [prod]", for errors
};

// "section" -> key -> value of an AWS-style INI file. Errors name `source` and the line.
// Lines indented under a key (nested service settings) are skipped.
using IniFile = std::map<std::string, std::map<std::string, std::string>>;
Result<IniFile> ParseIni(std::string_view text, std::string_view source);

// Looks up an environment variable; a test passes its own.
using GetEnv = std::function<std::optional<std::string>(const char* name)>;
std::optional<std::string> ProcessEnv(const char* name);

// A whole-number setting: `fallback` when unset; anything but a number in [low, high] is
// INVALID_ARGUMENT naming the variable and the range.
Result<int64_t> IntSetting(const GetEnv& env, const char* name, int64_t fallback, int64_t low,
                           int64_t high, std::string_view unit);

// Missing credentials are NOT_FOUND with what to set; a malformed file INVALID_ARGUMENT.
Result<Config> ResolveConfig(const GetEnv& env = ProcessEnv);

// "s3://bucket/some/prefix" -> bucket "bucket", prefix "some/prefix" (no leading or trailing
// '/'). Bucket names follow S3's rules (3..63 of [a-z0-9.-]).
struct Location {
  std::string bucket;
  std::string prefix;
};
bool IsS3Url(std::string_view text);
Result<Location> ParseS3Url(std::string_view url);

}  // namespace titan::s3
