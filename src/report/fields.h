// Checked reads of an input's JSON fields for the report sections: a missing field or one of the
// wrong type throws InputError naming where it is (the file and the JSON path) and what was
// expected, which ReadInputs / BuildSections turn into a Status for the user.
//
// Thread safety: pure functions over const JSON.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace titan::report {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One JSON object and where it is ("ranks[3].total" in "trace.json"), for error messages.
class Fields {
 public:
  Fields(const nlohmann::json& object, std::string where);

  bool Has(std::string_view key) const;
  double Num(std::string_view key) const;                     // a number (null: NaN)
  double NumOr(std::string_view key, double fallback) const;  // absent or null: fallback
  int64_t Int(std::string_view key) const;
  std::string Str(std::string_view key) const;
  std::string StrOr(std::string_view key, std::string fallback) const;
  bool Bool(std::string_view key) const;
  const nlohmann::json& Array(std::string_view key) const;    // absent: error
  const nlohmann::json& ArrayOr(std::string_view key) const;  // absent: an empty array
  Fields Object(std::string_view key) const;
  // The element `i` of Array(key) as an object.
  Fields Element(std::string_view key, size_t i) const;

  const nlohmann::json& json() const { return object_; }
  const std::string& where() const { return where_; }

 private:
  const nlohmann::json& Get(std::string_view key) const;
  [[noreturn]] void Fail(std::string_view key, std::string_view expected,
                         const nlohmann::json* found) const;

  const nlohmann::json& object_;
  std::string where_;
};

// "a JSON string", "a JSON array of 3", ... for error messages.
std::string DescribeJson(const nlohmann::json& value);

}  // namespace titan::report
