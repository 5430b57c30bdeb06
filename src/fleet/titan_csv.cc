#include "src/fleet/titan_csv.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "src/base/csv.h"
#include "src/base/text.h"
#include "src/fleet/time_text.h"

namespace titan::fleet {

namespace {

struct Columns {
  int sn = -1, location = -1, insert = -1, remove = -1, out = -1, event = -1;
  bool ok() const { return sn >= 0 && location >= 0 && insert >= 0 && remove >= 0 && event >= 0; }
};

Columns FindColumns(std::string_view header_line) {
  std::vector<std::string> names;
  Columns c;
  if (!SplitCsvRecord(header_line, &names)) return c;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& n = names[i];
    int idx = static_cast<int>(i);
    if (n == "SN") c.sn = idx;
    if (n == "location") c.location = idx;
    if (n == "insert") c.insert = idx;
    if (n == "remove") c.remove = idx;
    if (n == "out") c.out = idx;
    if (n == "event") c.event = idx;
  }
  return c;
}

struct Row {
  std::string sn, location, event;
  bool stay = false, out = false;
  double insert = 0, remove = 0;
  int64_t line = 0;
};

// Reads "c<col>-<row>c<cage>s<slot>n<node>".
bool ReadNumber(std::string_view s, size_t* p, int* out) {
  size_t start = *p;
  int v = 0;
  while (*p < s.size() && s[*p] >= '0' && s[*p] <= '9' && *p - start < 6) {
    v = v * 10 + (s[*p] - '0');
    ++*p;
  }
  *out = v;
  return *p > start;
}

}  // namespace

bool ParseTitanLocation(std::string_view s, int parts[5]) {
  size_t p = 0;
  static constexpr char kSeps[] = {'c', '-', 'c', 's', 'n'};
  for (int i = 0; i < 5; ++i) {
    if (p >= s.size() || s[p] != kSeps[i]) return false;
    ++p;
    if (!ReadNumber(s, &p, &parts[i])) return false;
  }
  return p == s.size();
}

bool LooksLikeTitanCsv(std::string_view text) {
  std::string_view rest = text;
  if (rest.empty()) return false;
  return FindColumns(Trim(NextLine(&rest))).ok();
}

void ReadTitanCsv(std::string_view text, std::string_view source, HistoryBuilder* builder) {
  ReadStats& stats = builder->stats();
  if (text.empty()) return;
  const Columns cols = FindColumns(Trim(NextLine(&text)));
  if (!cols.ok()) {
    stats.Skip("no gc_full.csv header (SN,location,insert,remove,...,event)",
               fmt::format("{}:1", source));
    return;
  }
  const int needed =
      std::max({cols.sn, cols.location, cols.insert, cols.remove, cols.out, cols.event}) + 1;
  std::vector<Row> rows;
  std::vector<std::string> f;
  int64_t line_no = 1;
  double data_end = -1e300;
  while (!text.empty()) {
    std::string_view line = NextLine(&text);
    ++line_no;
    if (Trim(line).empty()) continue;
    auto where = [&] { return fmt::format("{}:{}", source, line_no); };
    if (!SplitCsvRecord(line, &f) || static_cast<int>(f.size()) < needed) {
      stats.Skip("malformed CSV row (too few fields or a bad quote)", where());
      continue;
    }
    Row r;
    r.line = line_no;
    r.sn = f[cols.sn];
    r.location = f[cols.location];
    r.event = f[cols.event];
    r.out = cols.out >= 0 && f[cols.out] == "TRUE";
    r.stay = !f[cols.insert].empty();
    if (r.sn.empty()) {
      stats.Skip("no serial number", where());
      continue;
    }
    if (!ParseTimeSeconds(f[cols.remove], &r.remove) ||
        (r.stay && !ParseTimeSeconds(f[cols.insert], &r.insert))) {
      stats.Skip("unreadable insert or remove time", where());
      continue;
    }
    if (r.stay && r.insert > r.remove) {
      stats.Skip("stay removed before it was inserted", where());
      continue;
    }
    if (!r.stay && r.event.empty()) {
      stats.Skip("row with neither a stay nor an event", where());
      continue;
    }
    int parts[5];
    if (r.stay && !ParseTitanLocation(r.location, parts)) {
      stats.Skip("location is not cCOL-ROWcCAGEsSLOTnNODE", where());
      continue;
    }
    data_end = std::max(data_end, r.remove);
    rows.push_back(std::move(r));
  }
  if (rows.empty()) return;
  builder->End(data_end);
  // In time order, so that a stay's leave is added before a next enter at the same second.
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return (a.stay ? a.insert : a.remove) < (b.stay ? b.insert : b.remove);
  });

  static const double kNewBatchSeconds = CivilToSeconds(2016, 1, 1);
  std::map<std::string, double> first_seen;
  for (const Row& r : rows) {
    if (!r.stay) continue;
    auto [it, inserted] = first_seen.try_emplace(r.sn, r.insert);
    if (!inserted) it->second = std::min(it->second, r.insert);
  }
  for (const auto& [sn, t] : first_seen) {
    builder->SetComponentAttribute(sn, "batch", t >= kNewBatchSeconds ? "new" : "old");
  }
  for (const Row& r : rows) {
    if (!r.stay) {
      builder->Fail(r.sn, r.remove, r.event, "repeated at " + r.location);
      continue;
    }
    int p[5];
    ParseTitanLocation(r.location, p);
    Attributes a = {{"col", std::to_string(p[0])},
                    {"row", std::to_string(p[1])},
                    {"cage", std::to_string(p[2])},
                    {"slot", std::to_string(p[3])},
                    {"node", std::to_string(p[4])},
                    {"cabinet", fmt::format("c{}-{}", p[0], p[1])},
                    {"slot_name", fmt::format("c{}-{}c{}s{}", p[0], p[1], p[2], p[3])},
                    {"node_name", r.location}};
    builder->Enter(r.sn, r.insert, std::move(a));
    if (!r.event.empty()) builder->Fail(r.sn, r.remove, r.event, "at " + r.location);
    const bool censored = r.event.empty() && !r.out && r.remove >= data_end;
    if (!censored) {
      builder->Leave(r.sn, r.remove,
                     r.out ? "left service for good" : "removed from " + r.location);
    }
  }
}

}  // namespace titan::fleet
