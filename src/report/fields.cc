#include "src/report/fields.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace titan::report {

namespace {
const nlohmann::json kEmptyArray = nlohmann::json::array();
}  // namespace

std::string DescribeJson(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::null:
      return "null";
    case nlohmann::json::value_t::object:
      return fmt::format("an object of {} keys", value.size());
    case nlohmann::json::value_t::array:
      return fmt::format("an array of {}", value.size());
    case nlohmann::json::value_t::string:
      return "a string";
    case nlohmann::json::value_t::boolean:
      return "a boolean";
    case nlohmann::json::value_t::binary:
      return "binary data";
    case nlohmann::json::value_t::discarded:
      return "nothing";
    default:
      return "a number";
  }
}

Fields::Fields(const nlohmann::json& object, std::string where)
    : object_(object), where_(std::move(where)) {
  if (!object_.is_object()) {
    throw InputError(
        fmt::format("{}: expected a JSON object, found {}", where_, DescribeJson(object_)));
  }
}

bool Fields::Has(std::string_view key) const { return object_.contains(key); }

const nlohmann::json& Fields::Get(std::string_view key) const {
  auto it = object_.find(key);
  if (it == object_.end()) Fail(key, "present", nullptr);
  return *it;
}

void Fields::Fail(std::string_view key, std::string_view expected,
                  const nlohmann::json* found) const {
  if (found == nullptr) {
    throw InputError(fmt::format("{}: field \"{}\" is missing", where_, key));
  }
  throw InputError(
      fmt::format("{}.{}: expected {}, found {}", where_, key, expected, DescribeJson(*found)));
}

double Fields::Num(std::string_view key) const {
  const nlohmann::json& v = Get(key);
  if (v.is_null()) return std::numeric_limits<double>::quiet_NaN();
  if (!v.is_number()) Fail(key, "a number", &v);
  return v.get<double>();
}

double Fields::NumOr(std::string_view key, double fallback) const {
  auto it = object_.find(key);
  if (it == object_.end() || it->is_null()) return fallback;
  if (!it->is_number()) Fail(key, "a number", &*it);
  return it->get<double>();
}

int64_t Fields::Int(std::string_view key) const {
  const nlohmann::json& v = Get(key);
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float() && std::isfinite(v.get<double>()) &&
      std::fabs(v.get<double>()) < 9.0e18) {
    return static_cast<int64_t>(v.get<double>());
  }
  Fail(key, "an integer", &v);
}

std::string Fields::Str(std::string_view key) const {
  const nlohmann::json& v = Get(key);
  if (!v.is_string()) Fail(key, "a string", &v);
  return v.get<std::string>();
}

std::string Fields::StrOr(std::string_view key, std::string fallback) const {
  auto it = object_.find(key);
  if (it == object_.end() || it->is_null()) return fallback;
  if (!it->is_string()) Fail(key, "a string", &*it);
  return it->get<std::string>();
}

bool Fields::Bool(std::string_view key) const {
  const nlohmann::json& v = Get(key);
  if (!v.is_boolean()) Fail(key, "true or false", &v);
  return v.get<bool>();
}

const nlohmann::json& Fields::Array(std::string_view key) const {
  const nlohmann::json& v = Get(key);
  if (!v.is_array()) Fail(key, "an array", &v);
  return v;
}

const nlohmann::json& Fields::ArrayOr(std::string_view key) const {
  auto it = object_.find(key);
  if (it == object_.end() || it->is_null()) return kEmptyArray;
  if (!it->is_array()) Fail(key, "an array", &*it);
  return *it;
}

Fields Fields::Object(std::string_view key) const {
  return Fields(Get(key), fmt::format("{}.{}", where_, key));
}

Fields Fields::Element(std::string_view key, size_t i) const {
  return Fields(Array(key)[i], fmt::format("{}.{}[{}]", where_, key, i));
}

}  // namespace titan::report
