#include "src/s3/config.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "src/base/text.h"

namespace titan::s3 {
namespace {

constexpr size_t kMaxIniBytes = 1 << 20;

// The file's text, nullopt when it does not exist; larger than kMaxIniBytes is an error.
Result<std::optional<std::string>> ReadSmallFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::optional<std::string>();
  std::string text(kMaxIniBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > kMaxIniBytes) {
    return InvalidArgumentError(
        fmt::format("{} is larger than {} bytes; is it an AWS settings file?", path, kMaxIniBytes));
  }
  return std::optional<std::string>(std::move(text));
}

Result<IniFile> ReadIni(const std::string& path) {
  TITAN_ASSIGN_OR_RETURN(std::optional<std::string> text, ReadSmallFile(path));
  if (!text) return IniFile();
  return ParseIni(*text, path);
}

std::string HomeFile(const GetEnv& env, const char* variable, const char* relative) {
  if (std::optional<std::string> path = env(variable); path && !path->empty()) return *path;
  std::optional<std::string> home = env("HOME");
  return (home ? *home : std::string()) + "/" + relative;
}

const std::map<std::string, std::string>* Section(const IniFile& ini, const std::string& name) {
  auto it = ini.find(name);
  return it == ini.end() ? nullptr : &it->second;
}

std::string Value(const std::map<std::string, std::string>* section, const std::string& key) {
  if (section == nullptr) return "";
  auto it = section->find(key);
  return it == section->end() ? "" : it->second;
}

bool ValidBucket(std::string_view bucket) {
  if (bucket.size() < 3 || bucket.size() > 63) return false;
  for (char c : bucket) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-')) return false;
  }
  return bucket.front() != '.' && bucket.front() != '-' && bucket.back() != '.' &&
         bucket.back() != '-';
}

}  // namespace

Result<IniFile> ParseIni(std::string_view text, std::string_view source) {
  IniFile ini;
  std::string section;
  bool have_section = false;
  int line_number = 0;
  while (!text.empty()) {
    std::string_view raw = NextLine(&text);
    ++line_number;
    if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
    std::string_view line = Trim(raw);
    if (line.empty() || line.front() == '#' || line.front() == ';') continue;
    if (raw.front() == ' ' || raw.front() == '\t') continue;  // nested setting
    if (line.front() == '[') {
      if (line.back() != ']' || line.size() < 3) {
        return InvalidArgumentError(
            fmt::format("{}:{}: malformed section header '{}'; expected [name] or [profile name]",
                        source, line_number, line));
      }
      section = std::string(Trim(line.substr(1, line.size() - 2)));
      have_section = true;
      ini[section];
      continue;
    }
    size_t eq = line.find('=');
    if (eq == std::string_view::npos || Trim(line.substr(0, eq)).empty()) {
      return InvalidArgumentError(fmt::format(
          "{}:{}: expected 'name = value' or '[section]', got '{}'", source, line_number, line));
    }
    if (!have_section) {
      return InvalidArgumentError(fmt::format(
          "{}:{}: setting outside any [section]; put it under [default]", source, line_number));
    }
    ini[section][std::string(Trim(line.substr(0, eq)))] = std::string(Trim(line.substr(eq + 1)));
  }
  return ini;
}

std::optional<std::string> ProcessEnv(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

Result<int64_t> IntSetting(const GetEnv& env, const char* name, int64_t fallback, int64_t low,
                           int64_t high, std::string_view unit) {
  std::optional<std::string> value = env(name);
  if (!value) return fallback;
  int64_t parsed = 0;
  if (!ParseInt64(*value, &parsed) || parsed < low || parsed > high) {
    return InvalidArgumentError(fmt::format("{}='{}': expected a whole number of {} from {} to {}",
                                            name, *value, unit, low, high));
  }
  return parsed;
}

Result<Config> ResolveConfig(const GetEnv& env) {
  auto get = [&](const char* name) {
    std::optional<std::string> v = env(name);
    return v ? *v : std::string();
  };
  std::string profile = get("AWS_PROFILE");
  if (profile.empty()) profile = "default";
  std::string credentials_path = HomeFile(env, "AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials");
  std::string config_path = HomeFile(env, "AWS_CONFIG_FILE", ".aws/config");
  TITAN_ASSIGN_OR_RETURN(IniFile credentials_file, ReadIni(credentials_path));
  TITAN_ASSIGN_OR_RETURN(IniFile config_file, ReadIni(config_path));
  const auto* credentials_section = Section(credentials_file, profile);
  const auto* config_section =
      Section(config_file, profile == "default" ? std::string("default") : "profile " + profile);

  Config config;
  config.access_key_id = get("AWS_ACCESS_KEY_ID");
  config.secret_access_key = get("AWS_SECRET_ACCESS_KEY");
  config.session_token = get("AWS_SESSION_TOKEN");
  config.credentials_source = "environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)";
  for (const auto* section : {credentials_section, config_section}) {
    if (!config.access_key_id.empty() || section == nullptr) continue;
    config.access_key_id = Value(section, "aws_access_key_id");
    config.secret_access_key = Value(section, "aws_secret_access_key");
    config.session_token = Value(section, "aws_session_token");
    config.credentials_source =
        fmt::format("{} [{}]", section == credentials_section ? credentials_path : config_path,
                    section == credentials_section ? profile : "profile " + profile);
  }
  if (config.access_key_id.empty() || config.secret_access_key.empty()) {
    return NotFoundError(fmt::format(
        "no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or put "
        "aws_access_key_id and aws_secret_access_key under [{}] in {} (profile from AWS_PROFILE)",
        profile, credentials_path));
  }
  for (std::string region :
       {get("AWS_REGION"), get("AWS_DEFAULT_REGION"), Value(config_section, "region")}) {
    if (!region.empty()) {
      config.region = region;
      break;
    }
  }
  config.ca_bundle = get("AWS_CA_BUNDLE");
  if (config.ca_bundle.empty()) config.ca_bundle = Value(config_section, "ca_bundle");
  for (std::string endpoint : {get("AWS_ENDPOINT_URL_S3"), get("AWS_ENDPOINT_URL"),
                               Value(config_section, "endpoint_url")}) {
    if (endpoint.empty()) continue;
    while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
    if (endpoint.rfind("http://", 0) != 0 && endpoint.rfind("https://", 0) != 0) {
      return InvalidArgumentError(
          fmt::format("S3 endpoint '{}' must start with http:// or https:// (AWS_ENDPOINT_URL_S3, "
                      "AWS_ENDPOINT_URL or endpoint_url in {})",
                      endpoint, config_path));
    }
    config.endpoint = endpoint;
    break;
  }
  return config;
}

bool IsS3Url(std::string_view text) { return text.rfind("s3://", 0) == 0; }

Result<Location> ParseS3Url(std::string_view url) {
  if (!IsS3Url(url)) {
    return InvalidArgumentError(fmt::format("'{}' is not an s3://bucket/prefix URL", url));
  }
  std::string_view rest = url.substr(5);
  size_t slash = rest.find('/');
  Location location;
  location.bucket = std::string(rest.substr(0, slash));
  if (!ValidBucket(location.bucket)) {
    return InvalidArgumentError(fmt::format(
        "'{}': bucket name '{}' is not valid (3 to 63 characters of a-z, 0-9, '.' and '-')", url,
        location.bucket));
  }
  std::string_view prefix = slash == std::string_view::npos ? "" : rest.substr(slash + 1);
  while (!prefix.empty() && prefix.back() == '/') prefix.remove_suffix(1);
  if (prefix.find("//") != std::string_view::npos || (!prefix.empty() && prefix.front() == '/')) {
    return InvalidArgumentError(
        fmt::format("'{}': the prefix has an empty path segment ('//')", url));
  }
  for (size_t begin = 0; !prefix.empty() && begin <= prefix.size();) {
    size_t slash = std::min(prefix.find('/', begin), prefix.size());
    std::string_view segment = prefix.substr(begin, slash - begin);
    if (segment == "." || segment == "..") {
      return InvalidArgumentError(fmt::format(
          "'{}': the prefix has a '{}' path segment, which a store may resolve elsewhere", url,
          segment));
    }
    begin = slash + 1;
  }
  location.prefix = std::string(prefix);
  return location;
}

}  // namespace titan::s3
