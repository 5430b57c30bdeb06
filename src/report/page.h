// The report page model and its HTML: sections of blocks (key figures, notes, tables, plots,
// heatmaps), rendered into one self-contained HTML file that inlines uPlot, titan's renderer
// (assets/report.js) and its style, with the report's data as JSON. The page makes no network
// request: its Content-Security-Policy allows only the inlined script and style.
//
// Units: every Axis and Series names its unit; values are plain doubles in that unit. NaN is a
// gap (null in the page). Plots with more than `max_points` x values are min/max decimated
// (src/report/decimate.h) so spikes survive.
//
// Thread safety: plain values; build a Report on one thread.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace titan::report {

struct Axis {
  std::string label{};
  std::string unit{};
  bool log = false;   // log scale (values <= 0 are not drawn)
  bool time = false;  // x as a wall-clock time axis (seconds since the Unix epoch)
  std::optional<double> min{}, max{};
  // "percentile": values are 1 / (1 - q) for quantile q, labelled p50, p90, p99 ...
  std::string format{};
  // Named x positions: x values 0, 1, 2 ... are labelled with these (bars of nodes, causes).
  std::vector<std::string> categories{};
};

struct Series {
  std::string label{};
  std::string unit{};
  std::string style = "line";  // line | points | bars | step | area
  std::string color{};         // empty: the palette's next color
  bool dash = false;
  bool right_axis = false;  // drawn against Plot::y2
  bool span_gaps = false;   // join points across NaN (series sampled on other series' x)
};

// A vertical mark: an instant (x) or a range (x .. x2), in x units; tone: bad | warn | info | ok.
struct Mark {
  double x = 0;
  std::optional<double> x2{};
  std::string label{};
  std::string tone = "warn";
};

// A horizontal reference line (an SLO, a baseline) in y units.
struct HLine {
  double y = 0;
  std::string label{};
  std::string tone = "bad";
};

struct Plot {
  std::string title{};
  std::string note{};
  Axis x{}, y{};
  std::optional<Axis> y2{};
  std::vector<Series> series{};
  std::vector<double> xs{};               // ascending
  std::vector<std::vector<double>> ys{};  // one column per series, each xs.size() long
  std::vector<Mark> marks{};
  std::vector<HLine> hlines{};
  bool stacked = false;                      // series are drawn as stacked bars
  std::vector<std::pair<int, int>> bands{};  // (upper, lower) series indices filled between
  int height = 300;                          // CSS pixels
  size_t max_points = 2000;                  // per series, before min/max decimation
};

// Rows x columns of values (NaN: no value), drawn as a color grid with a legend.
struct Heatmap {
  std::string title{};
  std::string note{};
  Axis x{};            // what the columns are
  std::string unit{};  // of the values
  std::vector<std::string> rows{}, cols{};
  std::vector<std::vector<double>> values{};  // rows.size() rows of cols.size() values
};

// A table; each cell is a string or a number (numbers are shown with 4 significant digits).
struct Table {
  std::string title{};
  std::string note{};
  std::vector<std::string> columns{};
  std::vector<std::vector<nlohmann::json>> rows{};
};

struct Stat {
  std::string label{};
  nlohmann::json value{};  // string or number
  std::string tone{};      // "" | bad | warn | ok
};

class Section {
 public:
  Section(std::string title, std::string source);

  void Text(std::string text, std::string tone = "");
  void Stats(std::vector<Stat> stats);
  void Add(Table table);
  void Add(Plot plot);
  void Add(Heatmap heatmap);

  const std::string& title() const { return title_; }
  size_t plots() const { return plots_; }
  nlohmann::json ToJson() const;

 private:
  std::string title_;
  std::string source_;
  nlohmann::json blocks_ = nlohmann::json::array();
  size_t plots_ = 0;
};

struct Report {
  std::string title = "titan report";
  std::vector<Section> sections{};
};

// The whole page. `created` is shown as when it was written (an ISO 8601 time).
std::string RenderHtml(const Report& report, const std::string& created);

// `value` rounded to `digits` significant digits (report data need not carry 17).
double RoundSignificant(double value, int digits = 5);

}  // namespace titan::report
