#include "src/agent/live_view.h"

#include <fmt/format.h>

#include "src/agent/correlator.h"
#include "src/base/clock.h"

namespace titan {
namespace {

// Families shown, in order, with a short title.
struct Row {
  const char* family;
  const char* title;
};
constexpr Row kRows[] = {
    {"titan_cpu_utilization_ratio", "cpu"},
    {"titan_memory_used_bytes", "mem used"},
    {"titan_network_receive_bytes_per_second", "net rx"},
    {"titan_network_transmit_bytes_per_second", "net tx"},
    {"titan_disk_read_bytes_per_second", "disk rd"},
    {"titan_disk_write_bytes_per_second", "disk wr"},
    {"titan_pressure_some_ratio", "pressure"},
    {"titan_gpu_utilization_ratio", "gpu util"},
    {"titan_gpu_memory_used_bytes", "gpu mem"},
    {"titan_gpu_power_watts", "gpu power"},
    {"titan_step_duration_seconds", "step"},
    {"titan_straggler_score", "straggler"},
    {"titan_checkpoint_duration_seconds", "ckpt"},
};
constexpr size_t kMaxSeriesPerRow = 8;

}  // namespace

std::string RenderLiveView(Agent& agent, int window_seconds) {
  const int64_t now = WallNowNs();
  std::string out = fmt::format(
      "titan agent  http://{}:{}  series {}  transients {}  app events {}   (window {} s)\n\n",
      agent.options().listen_address, agent.port(), agent.registry().series_count(),
      agent.event_log().transient_count(), agent.event_log().app_event_count(), window_seconds);
  out += fmt::format("{:<11} {:<34} {:>12} {:>12} {:>12}\n", "signal", "series", "last",
                     "window min", "window max");
  agent.registry().ForEachFamily([&](const MetricRegistry::Family& family) {
    const Row* row = nullptr;
    for (const Row& r : kRows) {
      if (family.desc->name == r.family) row = &r;
    }
    if (row == nullptr) return;
    size_t shown = 0;
    for (const Series* s : family.series) {
      const WindowStats w = s->Window(now, window_seconds);
      if (w.count == 0) continue;
      if (++shown > kMaxSeriesPerRow) {
        out += fmt::format("{:<11} ... {} more\n", "", family.series.size() - kMaxSeriesPerRow);
        break;
      }
      const std::string& name = family.desc->name;
      std::string labels = s->label_text();
      if (labels.size() > 34) labels = labels.substr(0, 31) + "...";
      out += fmt::format("{:<11} {:<34} {:>12} {:>12} {:>12}\n", row->title, labels,
                         FormatSignalValue(name, w.last), FormatSignalValue(name, w.min),
                         FormatSignalValue(name, w.max));
    }
  });
  out += "\nlatest transients:\n";
  const uint64_t total = agent.event_log().transient_count();
  const auto recent = agent.event_log().TransientsAfter(total > 5 ? total - 5 : 0, 5);
  if (recent.empty()) out += "  (none yet)\n";
  for (const TransientEvent& e : recent) {
    std::string summary = e.summary;
    if (summary.size() > 200) summary = summary.substr(0, 197) + "...";
    out += fmt::format("  #{} {}\n", e.id, summary);
  }
  return out;
}

}  // namespace titan
