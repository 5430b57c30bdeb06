#include "src/base/text.h"

#include <charconv>
#include <cmath>

namespace titan {

bool ParseInt64(std::string_view text, int64_t* out) {
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  return ec == std::errc() && ptr == end;
}

bool ParseUint64(std::string_view text, uint64_t* out) {
  if (text.empty() || text.front() == '-') return false;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  return ec == std::errc() && ptr == end;
}

bool ParseDouble(std::string_view text, double* out) {
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  return ec == std::errc() && ptr == end && std::isfinite(*out);
}

std::string_view NextLine(std::string_view* rest) {
  const size_t newline = rest->find('\n');
  std::string_view line = rest->substr(0, newline);
  rest->remove_prefix(newline == std::string_view::npos ? rest->size() : newline + 1);
  return line;
}

std::string_view NextField(std::string_view* rest) {
  size_t begin = 0;
  while (begin < rest->size() && ((*rest)[begin] == ' ' || (*rest)[begin] == '\t')) ++begin;
  size_t end = begin;
  while (end < rest->size() && (*rest)[end] != ' ' && (*rest)[end] != '\t') ++end;
  std::string_view field = rest->substr(begin, end - begin);
  rest->remove_prefix(end);
  return field;
}

std::string_view Trim(std::string_view text) {
  auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

}  // namespace titan
