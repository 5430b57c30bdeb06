// titan diagnose --json: its incidents, the primary first. For each (at most kMaxIncidents): the
// verdict, a timeline of its lines across ranks with the root marked, and the lines themselves.
#include <algorithm>
#include <ctime>
#include <set>

#include <fmt/format.h>

#include "src/report/fields.h"
#include "src/report/sections.h"

namespace titan::report {
namespace {

constexpr size_t kMaxIncidents = 8;
constexpr size_t kMaxRows = 40;

// "2024-04-09T01:21:38.5Z" as seconds since the epoch; NaN for "", "--04-09T..." (no year) and
// "boot+..." (no wall clock).
double EpochSeconds(const std::string& iso) {
  int y, mo, d, h, mi;
  double s;
  if (std::sscanf(iso.c_str(), "%d-%d-%dT%d:%d:%lfZ", &y, &mo, &d, &h, &mi, &s) != 6 || y < 1971) {
    return kNaN;
  }
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  return static_cast<double>(timegm(&tm)) + s;
}

std::string Culprit(const Fields& c) {
  std::string out;
  auto add = [&](const std::string& part) { out += (out.empty() ? "" : ", ") + part; };
  if (c.json().contains("rank") && c.json()["rank"].is_number())
    add(fmt::format("rank {}", c.Int("rank")));
  if (c.json().contains("node") && c.json()["node"].is_string()) add("node " + c.Str("node"));
  if (c.json().contains("gpu") && c.json()["gpu"].is_string()) add("GPU " + c.Str("gpu"));
  return out.empty() ? "not decided by the logs" : out;
}

std::string Where(const Fields& e) {
  const std::string file = e.Str("file");
  const std::string base = file.substr(file.rfind('/') + 1);
  return e.json().contains("line") && e.json()["line"].is_number()
             ? fmt::format("{}:{}", base, e.Int("line"))
             : base;
}

}  // namespace

void AddDiagnosis(const Input& input, Report* report) {
  const Fields doc(input.doc, input.path);
  const nlohmann::json& incidents = doc.Array("incidents");
  Section section("Diagnosis", input.path);
  if (incidents.empty()) {
    section.Text(fmt::format("No fault found in {} file(s).", doc.ArrayOr("files").size()), "ok");
    report->sections.push_back(std::move(section));
    return;
  }
  Table summary;
  summary.title = "Incidents (the primary first)";
  summary.columns = {"#", "class", "action", "culprit", "confidence", "root", "time"};
  for (size_t i = 0; i < incidents.size(); ++i) {
    const Fields inc = doc.Element("incidents", i);
    const Fields root = inc.Object("root");
    summary.rows.push_back({static_cast<int64_t>(i + 1), inc.Str("class"), inc.Str("action"),
                            Culprit(inc.Object("culprit")), inc.Num("confidence"), Where(root),
                            root.StrOr("time", "")});
  }
  const Fields primary = doc.Element("incidents", 0);
  section.Stats(
      {{"class", primary.Str("class"), primary.Str("class") == "unknown" ? "warn" : "bad"},
       {"action", primary.Str("action"), ""},
       {"culprit", Culprit(primary.Object("culprit")), ""},
       {"confidence", primary.Num("confidence"), ""}});
  section.Text(primary.StrOr("why", ""));
  section.Add(std::move(summary));
  for (size_t i = 0; i < std::min(incidents.size(), kMaxIncidents); ++i) {
    const Fields inc = doc.Element("incidents", i);
    const Fields root = inc.Object("root");
    // The lines on one clock across ranks: y is the line's rank (-1: a line of no rank, such as
    // the kernel's or the scheduler's).
    struct Point {
      double t, rank;
      bool is_root;
    };
    std::vector<Point> points;
    const double root_t = EpochSeconds(root.StrOr("time", ""));
    const double root_rank =
        inc.Object("culprit").json().value("rank", nlohmann::json(-1)).is_number()
            ? inc.Object("culprit").NumOr("rank", -1)
            : -1;
    if (!std::isnan(root_t)) points.push_back({root_t, root_rank, true});
    Table lines;
    lines.title =
        fmt::format("Incident {}: {} -> {}, its lines", i + 1, inc.Str("class"), inc.Str("action"));
    lines.columns = {"", "time", "rank", "where", "line"};
    lines.rows.push_back({"ROOT", root.StrOr("time", ""),
                          root_rank < 0 ? nlohmann::json("") : nlohmann::json(root_rank),
                          Where(root), root.Str("text").substr(0, 300)});
    const nlohmann::json& symptoms = inc.ArrayOr("symptoms");
    for (size_t k = 0; k < symptoms.size(); ++k) {
      const Fields s = inc.Element("symptoms", k);
      const double t = EpochSeconds(s.StrOr("time", ""));
      const double rank = s.NumOr("rank", -1);
      if (!std::isnan(t)) points.push_back({t, std::isnan(rank) ? -1 : rank, false});
      if (lines.rows.size() < kMaxRows) {
        lines.rows.push_back(
            {"symptom", s.StrOr("time", ""),
             rank < 0 || std::isnan(rank) ? nlohmann::json("") : nlohmann::json(rank), Where(s),
             s.Str("text").substr(0, 300)});
      }
    }
    if (inc.NumOr("symptoms_total", 0) > static_cast<double>(symptoms.size())) {
      lines.note = fmt::format("{} symptom lines in all; the first {} are listed",
                               inc.Int("symptoms_total"), symptoms.size());
    }
    if (points.size() >= 2) {
      std::sort(points.begin(), points.end(),
                [](const Point& a, const Point& b) { return a.t < b.t; });
      Plot plot;
      plot.title = fmt::format("Incident {}: its lines across ranks", i + 1);
      plot.note =
          "One point per log line on one clock; the root is marked. Rank -1: lines of no "
          "rank (kernel, scheduler).";
      plot.x = {"time", "s", false, true};
      plot.y = {"rank", ""};
      plot.series = {{"root", "", "points", "#d62728"}, {"symptoms", "", "points", "#7f7f7f"}};
      std::set<double> xs;
      for (const Point& p : points) xs.insert(p.t);
      plot.xs.assign(xs.begin(), xs.end());
      plot.ys.assign(2, std::vector<double>(plot.xs.size(), kNaN));
      for (const Point& p : points) {
        const size_t at = std::lower_bound(plot.xs.begin(), plot.xs.end(), p.t) - plot.xs.begin();
        plot.ys[p.is_root ? 0 : 1][at] = p.rank;
      }
      if (!std::isnan(root_t)) plot.marks.push_back({root_t, std::nullopt, "root", "bad"});
      plot.height = 220;
      section.Add(std::move(plot));
    }
    section.Add(std::move(lines));
  }
  report->sections.push_back(std::move(section));
}

}  // namespace titan::report
