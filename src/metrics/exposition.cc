#include "src/metrics/exposition.h"

#include <cmath>
#include <vector>

#include <fmt/format.h>

namespace titan {
namespace {

void AppendValue(double value, std::string* out) {
  if (std::isnan(value)) {
    out->append("NaN");
  } else if (std::isinf(value)) {
    out->append(value > 0 ? "+Inf" : "-Inf");
  } else {
    fmt::format_to(std::back_inserter(*out), "{}", value);
  }
}

void AppendHeader(std::string_view name, std::string_view type, std::string_view help,
                  std::string* out) {
  fmt::format_to(std::back_inserter(*out), "# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

void AppendSample(std::string_view name, std::string_view suffix, const std::string& labels,
                  double value, std::string* out) {
  out->append(name);
  out->append(suffix);
  out->append(labels);
  out->push_back(' ');
  AppendValue(value, out);
  out->push_back('\n');
}

// `{a="x",le="0.5"}` from `{a="x"}` or "".
std::string WithLe(const std::string& labels, std::string_view le) {
  if (labels.empty()) return fmt::format("{{le=\"{}\"}}", le);
  return fmt::format("{},le=\"{}\"}}", std::string_view(labels).substr(0, labels.size() - 1), le);
}

std::string BucketBound(double bound, bool open_metrics) {
  std::string s = fmt::format("{}", bound);
  // OpenMetrics wants canonical floats for le ("1.0", not "1").
  if (open_metrics && s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

}  // namespace

ExpositionWriter& ExpositionWriter::Family(std::string_view name, std::string_view type,
                                           std::string_view help) {
  name_ = name;
  AppendHeader(name, type, help, out_);
  return *this;
}

ExpositionWriter& ExpositionWriter::Sample(double value, std::string_view label,
                                           std::string_view label_value) {
  const std::string labels =
      label.empty()
          ? std::string()
          : fmt::format("{{{}=\"{}\"}}", label, EscapeLabelValue(std::string(label_value)));
  AppendSample(name_, "", labels, value, out_);
  return *this;
}

void RenderExposition(const MetricRegistry& registry, const ExpositionOptions& options,
                      std::string* out) {
  const bool open_metrics = options.format == ExpositionFormat::kOpenMetrics;
  std::vector<const Series*> live;
  std::vector<uint64_t> cumulative;
  registry.ForEachFamily([&](const MetricRegistry::Family& family) {
    const SignalDesc& desc = *family.desc;
    if (desc.kind == SignalKind::kCounter) {
      std::string_view family_name = desc.name;
      // OpenMetrics names the counter family without the _total suffix.
      if (open_metrics && family_name.ends_with("_total")) {
        family_name.remove_suffix(6);
      }
      AppendHeader(family_name, "counter", desc.help, out);
      for (const Series* s : family.series) {
        AppendSample(desc.name, "", s->label_text(), s->CounterValue(), out);
      }
      return;
    }
    live.clear();
    for (const Series* s : family.series) {
      const int64_t last = s->LastTimeNs();
      if (last != 0 && options.now_ns - last <= options.stale_after_ns) live.push_back(s);
    }
    if (live.empty()) return;
    std::vector<WindowStats> stats;
    stats.reserve(live.size());
    for (const Series* s : live) stats.push_back(s->Window(options.now_ns, options.window_seconds));

    AppendHeader(desc.name, "gauge", desc.help, out);
    for (size_t i = 0; i < live.size(); ++i) {
      AppendSample(desc.name, "", live[i]->label_text(), stats[i].last, out);
    }
    struct Stat {
      const char* suffix;
      const char* what;
      double WindowStats::*field;
    };
    static constexpr Stat kStats[] = {{"_window_min", "Minimum", &WindowStats::min},
                                      {"_window_max", "Maximum", &WindowStats::max},
                                      {"_window_mean", "Mean", &WindowStats::mean}};
    for (const Stat& stat : kStats) {
      const std::string name = desc.name + stat.suffix;
      AppendHeader(name, "gauge",
                   fmt::format("{} over the last {} s of samples: {}", stat.what,
                               options.window_seconds, desc.help),
                   out);
      for (size_t i = 0; i < live.size(); ++i) {
        if (stats[i].count == 0) continue;
        AppendSample(name, "", live[i]->label_text(), stats[i].*(stat.field), out);
      }
    }
    if (desc.buckets.empty()) return;
    const std::string hist_name = desc.name + "_samples";
    AppendHeader(hist_name, "histogram", "Distribution of every sample: " + desc.help, out);
    for (const Series* s : live) {
      double sum = 0;
      uint64_t count = 0;
      s->Histogram(&cumulative, &sum, &count);
      for (size_t b = 0; b < desc.buckets.size(); ++b) {
        AppendSample(hist_name, "_bucket",
                     WithLe(s->label_text(), BucketBound(desc.buckets[b], open_metrics)),
                     static_cast<double>(cumulative[b]), out);
      }
      AppendSample(hist_name, "_bucket", WithLe(s->label_text(), "+Inf"),
                   static_cast<double>(count), out);
      AppendSample(hist_name, "_sum", s->label_text(), sum, out);
      AppendSample(hist_name, "_count", s->label_text(), static_cast<double>(count), out);
    }
  });
  if (open_metrics) out->append("# EOF\n");
}

ExpositionFormat NegotiateFormat(std::string_view accept_header) {
  return accept_header.find("application/openmetrics-text") != std::string_view::npos
             ? ExpositionFormat::kOpenMetrics
             : ExpositionFormat::kPrometheusText;
}

std::string_view ContentType(ExpositionFormat format) {
  return format == ExpositionFormat::kOpenMetrics
             ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
             : "text/plain; version=0.0.4; charset=utf-8";
}

}  // namespace titan
