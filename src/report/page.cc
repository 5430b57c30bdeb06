#include "src/report/page.h"

#include <cmath>

#include "src/base/check.h"
#include "src/report/assets.h"
#include "src/report/decimate.h"

namespace titan::report {

namespace {

using nlohmann::json;

// Report numbers: 5 significant digits; whole numbers without a fraction (smaller pages).
json Number(double v) {
  if (!std::isfinite(v)) return nullptr;
  if (v == std::floor(v) && std::fabs(v) < 1e15) return static_cast<int64_t>(v);
  return RoundSignificant(v);
}

json ColumnJson(const std::vector<double>& values) {
  json out = json::array();
  for (double v : values) out.push_back(Number(v));
  return out;
}

json AxisJson(const Axis& a) {
  json out = {
      {"label", a.label}, {"unit", a.unit}, {"log", a.log}, {"time", a.time}, {"format", a.format}};
  if (!a.categories.empty()) out["categories"] = a.categories;
  if (a.min) out["min"] = *a.min;
  if (a.max) out["max"] = *a.max;
  return out;
}

// Text placed inside <script> or <style>: "</" would end the element early.
void AppendRaw(std::string_view text, std::string* out) {
  TITAN_CHECK(text.find("</") == std::string_view::npos) << "asset holds '</'";
  out->append(text);
}

}  // namespace

double RoundSignificant(double value, int digits) {
  if (value == 0 || !std::isfinite(value)) return value;
  const double scale =
      std::pow(10.0, digits - 1 - static_cast<int>(std::floor(std::log10(std::fabs(value)))));
  const double rounded = std::round(value * scale) / scale;
  return std::isfinite(rounded) ? rounded : value;
}

Section::Section(std::string title, std::string source)
    : title_(std::move(title)), source_(std::move(source)) {}

void Section::Text(std::string text, std::string tone) {
  blocks_.push_back({{"type", "text"}, {"text", std::move(text)}, {"tone", std::move(tone)}});
}

void Section::Stats(std::vector<Stat> stats) {
  json items = json::array();
  for (Stat& s : stats) {
    json value = s.value.is_number() ? Number(s.value.get<double>()) : std::move(s.value);
    items.push_back(
        {{"label", std::move(s.label)}, {"value", std::move(value)}, {"tone", std::move(s.tone)}});
  }
  blocks_.push_back({{"type", "stats"}, {"items", std::move(items)}});
}

void Section::Add(Table table) {
  json rows = json::array();
  for (auto& row : table.rows) {
    json cells = json::array();
    for (auto& cell : row) cells.push_back(cell.is_number() ? Number(cell.get<double>()) : cell);
    rows.push_back(std::move(cells));
  }
  blocks_.push_back({{"type", "table"},
                     {"title", std::move(table.title)},
                     {"note", std::move(table.note)},
                     {"columns", std::move(table.columns)},
                     {"rows", std::move(rows)}});
}

void Section::Add(Plot plot) {
  TITAN_CHECK(plot.ys.size() == plot.series.size()) << plot.title << ": one column per series";
  for (const auto& column : plot.ys) {
    TITAN_CHECK(column.size() == plot.xs.size()) << plot.title << ": columns of unequal length";
  }
  Columns columns{std::move(plot.xs), std::move(plot.ys)};
  const size_t points = columns.x.size();
  if (points > 2 * plot.max_points) columns = MinMaxDecimate(columns, plot.max_points);
  json data = json::array({ColumnJson(columns.x)});
  for (const auto& y : columns.ys) data.push_back(ColumnJson(y));
  json series = json::array();
  for (const Series& s : plot.series) {
    series.push_back({{"label", s.label},
                      {"unit", s.unit},
                      {"style", s.style},
                      {"dash", s.dash},
                      {"span_gaps", s.span_gaps},
                      {"axis", s.right_axis ? "y2" : "y"}});
    if (!s.color.empty()) series.back()["color"] = s.color;
  }
  json marks = json::array();
  for (const Mark& m : plot.marks) {
    json mark = {{"x", Number(m.x)}, {"label", m.label}, {"tone", m.tone}};
    if (m.x2) mark["x2"] = Number(*m.x2);
    marks.push_back(std::move(mark));
  }
  json hlines = json::array();
  for (const HLine& h : plot.hlines) {
    hlines.push_back({{"y", Number(h.y)}, {"label", h.label}, {"tone", h.tone}});
  }
  json bands = json::array();
  for (auto [upper, lower] : plot.bands) bands.push_back({{"upper", upper}, {"lower", lower}});
  json out = {{"type", "plot"},
              {"title", plot.title},
              {"note", plot.note},
              {"x", AxisJson(plot.x)},
              {"y", AxisJson(plot.y)},
              {"series", std::move(series)},
              {"data", std::move(data)},
              {"marks", std::move(marks)},
              {"hlines", std::move(hlines)},
              {"bands", std::move(bands)},
              {"stacked", plot.stacked},
              {"height", plot.height}};
  if (plot.y2) out["y2"] = AxisJson(*plot.y2);
  if (columns.x.size() < points) {
    out["decimated"] = {{"from", points}, {"to", columns.x.size()}};
  }
  blocks_.push_back(std::move(out));
  ++plots_;
}

void Section::Add(Heatmap heatmap) {
  TITAN_CHECK(heatmap.values.size() == heatmap.rows.size()) << heatmap.title << ": rows";
  json values = json::array();
  for (const auto& row : heatmap.values) {
    TITAN_CHECK(row.size() == heatmap.cols.size()) << heatmap.title << ": columns";
    values.push_back(ColumnJson(row));
  }
  blocks_.push_back({{"type", "heatmap"},
                     {"title", std::move(heatmap.title)},
                     {"note", std::move(heatmap.note)},
                     {"x", AxisJson(heatmap.x)},
                     {"unit", std::move(heatmap.unit)},
                     {"rows", std::move(heatmap.rows)},
                     {"cols", std::move(heatmap.cols)},
                     {"values", std::move(values)}});
  ++plots_;
}

json Section::ToJson() const {
  return {{"title", title_}, {"source", source_}, {"blocks", blocks_}};
}

std::string RenderHtml(const Report& report, const std::string& created) {
  json doc = {{"title", report.title},
              {"generator", "titan report"},
              {"created", created},
              {"sections", json::array()}};
  for (const Section& s : report.sections) doc["sections"].push_back(s.ToJson());
  // Invalid UTF-8 from an input (a label, a path) is replaced, not thrown on.
  std::string data = doc.dump(-1, ' ', false, json::error_handler_t::replace);
  std::string out;
  out.reserve(data.size() + 128 * 1024);
  out.append(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>");
  for (char c : report.title) {
    if (c == '<')
      out.append("&lt;");
    else if (c == '&')
      out.append("&amp;");
    else
      out.push_back(c);
  }
  out.append("</title>\n<style>\n");
  AppendRaw(assets::UplotCss(), &out);
  out.append("\n");
  AppendRaw(assets::ReportCss(), &out);
  out.append("</style>\n</head>\n<body>\n<main id=\"report\"></main>\n");
  out.append("<script id=\"titan-report-data\" type=\"application/json\">");
  for (char c : data) {
    if (c == '<')
      out.append("\\u003c");  // no "</script>" or "<!--" inside the element
    else
      out.push_back(c);
  }
  out.append("</script>\n<script>\n");
  AppendRaw(assets::UplotJs(), &out);
  out.append("\n</script>\n<script>\n");
  AppendRaw(assets::ReportJs(), &out);
  out.append("</script>\n</body>\n</html>\n");
  return out;
}

}  // namespace titan::report
