#include "src/cluster/hostlist.h"

#include <algorithm>
#include <cstdint>

#include <fmt/format.h>

namespace titan::cluster {
namespace {

// One piece of a name: fixed text, or the values of a bracket group (already formatted).
struct Piece {
  std::string text;                 // fixed text (group == false)
  std::vector<std::string> values;  // a group's values, in order (group == true)
  bool group = false;
};

Status ErrorAt(std::string_view hostlist, size_t offset, std::string_view what) {
  return InvalidArgumentError(
      fmt::format("hostlist '{}': {} at byte {}", hostlist.substr(0, 200), what, offset));
}

bool ParseNumber(std::string_view digits, uint64_t* value) {
  if (digits.empty() || digits.size() > 18) return false;
  uint64_t v = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *value = v;
  return true;
}

// The values of one group's text (between the brackets, which start at `offset`).
Status ExpandGroup(std::string_view hostlist, std::string_view group, size_t offset,
                   size_t max_values, std::vector<std::string>* out) {
  if (group.empty()) return ErrorAt(hostlist, offset, "an empty bracket group");
  size_t start = 0;
  while (start <= group.size()) {
    size_t comma = group.find(',', start);
    std::string_view item = group.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    size_t item_offset = offset + 1 + start;
    size_t dash = item.find('-');
    std::string_view lo_text = item.substr(0, dash);
    std::string_view hi_text = dash == std::string_view::npos ? lo_text : item.substr(dash + 1);
    uint64_t lo = 0, hi = 0;
    if (!ParseNumber(lo_text, &lo) || !ParseNumber(hi_text, &hi)) {
      return ErrorAt(hostlist, item_offset,
                     fmt::format("'{}' is not a number or a range LO-HI of up to 18 digits",
                                 item.substr(0, 40)));
    }
    if (hi < lo) {
      return ErrorAt(hostlist, item_offset,
                     fmt::format("range '{}' ends before it starts", item.substr(0, 40)));
    }
    if (hi - lo >= max_values || out->size() + (hi - lo + 1) > max_values) {
      return ErrorAt(
          hostlist, item_offset,
          fmt::format("more than {} names (raise the bound or check the list)", max_values));
    }
    const size_t width = lo_text.size();
    for (uint64_t v = lo;; ++v) {
      out->push_back(fmt::format("{:0{}}", v, width));
      if (v == hi) break;
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return OkStatus();
}

// Expands one name (no top-level comma) into `out`.
Status ExpandName(std::string_view hostlist, std::string_view name, size_t offset, size_t max_hosts,
                  std::vector<std::string>* out) {
  if (name.empty()) return ErrorAt(hostlist, offset, "an empty name");
  std::vector<Piece> pieces;
  size_t total = 1;
  size_t pos = 0;
  while (pos < name.size()) {
    size_t open = name.find('[', pos);
    size_t close_before =
        name.substr(pos, open == std::string_view::npos ? std::string_view::npos : open - pos)
            .find(']');
    if (close_before != std::string_view::npos) {
      return ErrorAt(hostlist, offset + pos + close_before, "a ']' without its '['");
    }
    if (open == std::string_view::npos) {
      pieces.push_back({std::string(name.substr(pos)), {}, false});
      break;
    }
    if (open > pos) pieces.push_back({std::string(name.substr(pos, open - pos)), {}, false});
    size_t close = name.find(']', open);
    if (close == std::string_view::npos) return ErrorAt(hostlist, offset + open, "an unclosed '['");
    std::string_view group = name.substr(open + 1, close - open - 1);
    if (size_t nested = group.find('['); nested != std::string_view::npos) {
      return ErrorAt(hostlist, offset + open + 1 + nested, "a nested '['");
    }
    Piece piece;
    piece.group = true;
    TITAN_RETURN_IF_ERROR(ExpandGroup(hostlist, group, offset + open, max_hosts, &piece.values));
    total *= piece.values.size();
    if (total > max_hosts || out->size() + total > max_hosts) {
      return ErrorAt(
          hostlist, offset + open,
          fmt::format("more than {} names (raise the bound or check the list)", max_hosts));
    }
    pieces.push_back(std::move(piece));
    pos = close + 1;
  }
  // A name without groups is one more: the check above sees only names with groups (a plain
  // name after the bound was reached went past it; the fuzzer found it).
  if (out->size() + total > max_hosts) {
    return ErrorAt(
        hostlist, offset,
        fmt::format("more than {} names (raise the bound or check the list)", max_hosts));
  }
  // The product of the groups, the first group varying slowest.
  std::vector<std::string> names = {""};
  for (const Piece& piece : pieces) {
    if (!piece.group) {
      for (std::string& n : names) n += piece.text;
      continue;
    }
    std::vector<std::string> next;
    next.reserve(names.size() * piece.values.size());
    for (const std::string& n : names) {
      for (const std::string& v : piece.values) next.push_back(n + v);
    }
    names.swap(next);
  }
  for (std::string& n : names) out->push_back(std::move(n));
  return OkStatus();
}

}  // namespace

Result<std::vector<std::string>> ExpandHostlist(std::string_view hostlist, size_t max_hosts) {
  std::vector<std::string> hosts;
  size_t start = 0;
  int depth = 0;
  for (size_t i = 0; i <= hostlist.size(); ++i) {
    const char c = i < hostlist.size() ? hostlist[i] : ',';
    if (i < hostlist.size() && (c == ' ' || c == '\t' || c == '\n' || c == '\0')) {
      return ErrorAt(hostlist, i, "a blank or control character");
    }
    if (c == '[') ++depth;
    if (c == ']') depth = std::max(depth - 1, 0);
    if (i < hostlist.size() && (c != ',' || depth > 0)) continue;
    TITAN_RETURN_IF_ERROR(
        ExpandName(hostlist, hostlist.substr(start, i - start), start, max_hosts, &hosts));
    start = i + 1;
  }
  return hosts;
}

}  // namespace titan::cluster
