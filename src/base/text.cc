#include "src/base/text.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

namespace titan {

std::string FormatBytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", v, units[u]);
}

std::string Excerpt(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return fmt::format("{}... ({} bytes)", text.substr(0, cut), text.size());
}

namespace {

// The length of the valid UTF-8 sequence at text[i] (2..4) and its code point, or 0 when the
// bytes there are no well-formed sequence (overlong, surrogate, past U+10FFFF, cut short).
size_t Utf8Sequence(std::string_view text, size_t i, uint32_t* code_point) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char lead = byte(i);
  size_t length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 0;
  if (length == 0 || lead > 0xF4 || i + length > text.size()) return 0;
  uint32_t cp = lead & (0x7F >> length);
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  static constexpr uint32_t kSmallest[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kSmallest[length] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  *code_point = cp;
  return length;
}

// Code points shown escaped: C1 controls, line and paragraph separators, and the bidi
// embeddings, overrides and isolates ("Trojan Source").
bool HidesText(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 ||
         (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0x200E ||
         cp == 0x200F || cp == 0x061C;
}

}  // namespace

std::string RemoteText(std::string_view text, size_t max_bytes) {
  std::string out;
  out.reserve(std::min(text.size(), max_bytes) + 16);
  size_t i = 0;
  while (i < text.size()) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7F) {
      if (i + 1 > max_bytes) break;
      out.push_back(static_cast<char>(c));
      ++i;
      continue;
    }
    uint32_t cp = 0;
    size_t length = c >= 0x80 ? Utf8Sequence(text, i, &cp) : 0;
    if (i + std::max<size_t>(length, 1) > max_bytes) break;
    if (length > 0 && !HidesText(cp)) {
      out.append(text.substr(i, length));
    } else if (length > 0) {
      out += fmt::format("\\u{:04x}", cp);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
    i += std::max<size_t>(length, 1);
  }
  if (i < text.size()) out += fmt::format("... ({} bytes)", text.size());
  return out;
}

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

void AppendJsonString(std::string_view text, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  size_t plain_from = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out->append(text.substr(plain_from, i - plain_from));
    plain_from = i + 1;
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      default:
        out->append("\\u00");
        out->push_back(kHex[c >> 4]);
        out->push_back(kHex[c & 15]);
    }
  }
  out->append(text.substr(plain_from));
  out->push_back('"');
}

}  // namespace titan
