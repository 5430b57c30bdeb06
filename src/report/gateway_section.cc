// Report section for a titan gateway event log (--event-log): what the gateway shed, retried and
// hedged per second, with each replica's stalls, ejections, readmissions and exits marked on the
// same axis, and every transition with its reason (a stall's with its detection delay).
#include <algorithm>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "src/report/fields.h"
#include "src/report/sections.h"

namespace titan::report {

namespace {

std::string ToneOf(const std::string& type) {
  if (type == "eject" || type == "replica_exit" || type == "stall") return "bad";
  if (type == "readmit" || type == "ready" || type == "unstall") return "ok";
  if (type == "weight") return "warn";
  return "";
}

}  // namespace

void AddGatewayLog(const Input& input, Report* report) {
  struct Event {
    double t;
    std::string type, replica;
    const nlohmann::json* fields;
  };
  std::vector<Event> events;
  int64_t t0 = std::numeric_limits<int64_t>::max();
  std::string routing = "?";
  double replicas = kNaN;
  for (size_t i = 0; i < input.doc.size(); ++i) {
    const Fields e(input.doc[i], fmt::format("{}:{}", input.path, i + 1));
    t0 = std::min(t0, e.Int("time_ns"));
    if (e.Str("type") == "start") {
      routing = e.StrOr("routing", routing);
      replicas = e.NumOr("replicas", replicas);
    }
  }
  for (size_t i = 0; i < input.doc.size(); ++i) {
    const Fields e(input.doc[i], fmt::format("{}:{}", input.path, i + 1));
    events.push_back(
        {(e.Int("time_ns") - t0) / 1e9, e.Str("type"), e.StrOr("replica", ""), &input.doc[i]});
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const Event& a, const Event& b) { return a.t < b.t; });
  Section section(fmt::format("Gateway: {} replicas, {} routing", replicas, routing), input.path);

  std::map<std::string, size_t> count;
  std::map<std::string, size_t> shed_by_reason;
  for (const Event& e : events) {
    ++count[e.type];
    if (e.type == "shed") {
      ++shed_by_reason[Fields(*e.fields, "shed").StrOr("reason", "?")];
    }
  }
  auto n = [&](const char* type) { return static_cast<double>(count[type]); };
  section.Stats({{"requests shed", n("shed"), count["shed"] ? "warn" : "ok"},
                 {"retries", n("retry")},
                 {"hedges and rescues", n("hedge")},
                 {"stalls", n("stall"), count["stall"] ? "warn" : "ok"},
                 {"ejections", n("eject"), count["eject"] ? "bad" : "ok"},
                 {"readmissions", n("readmit")},
                 {"replica exits", n("replica_exit"), count["replica_exit"] ? "bad" : ""}});

  // Sheds and retries per second, transitions marked.
  const double end = events.empty() ? 0 : events.back().t;
  const size_t seconds = static_cast<size_t>(end) + 1;
  Plot plot;
  plot.title = "Shed, retried and hedged requests per second";
  plot.note =
      "Red marks: a replica stalled, ejected or exited; green: making progress again, "
      "readmitted or ready; amber: weighted down instead of ejected.";
  plot.x = {"time since the gateway started", "s"};
  plot.y = {"requests", "1/s"};
  plot.series = {{"shed", "1/s", "bars", "#d62728"},
                 {"retried", "1/s", "bars", "#ff7f0e"},
                 {"hedged", "1/s", "bars", "#1f77b4"}};
  plot.ys.assign(3, std::vector<double>(seconds, 0));
  for (size_t s = 0; s < seconds; ++s) plot.xs.push_back(static_cast<double>(s));
  Table transitions{"Replica transitions",
                    "A stall's detection delay is its silence when it was detected (since the "
                    "replica's last byte of progress).",
                    {"time s", "replica", "event", "from", "to", "detected after ms", "reason"},
                    {}};
  for (const Event& e : events) {
    const size_t s = std::min(seconds - 1, static_cast<size_t>(e.t));
    if (e.type == "shed") plot.ys[0][s] += 1;
    if (e.type == "retry") plot.ys[1][s] += 1;
    if (e.type == "hedge") plot.ys[2][s] += 1;
    const std::string tone = ToneOf(e.type);
    if (tone.empty()) continue;
    const Fields f(*e.fields, "transition");
    plot.marks.push_back({e.t, std::nullopt, e.type + " " + e.replica, tone});
    const double silence_s = f.NumOr("silence_s", kNaN);
    transitions.rows.push_back({e.t, e.replica, e.type, f.StrOr("from", ""), f.StrOr("to", ""),
                                silence_s * 1e3, f.StrOr("reason", "").substr(0, 200)});
  }
  section.Add(std::move(plot));
  if (!shed_by_reason.empty()) {
    Table reasons{"Shed by reason",
                  "429 (queue full, deadline, timeout) and 503 (no replica, draining).",
                  {"reason", "requests"},
                  {}};
    for (auto& [reason, k] : shed_by_reason)
      reasons.rows.push_back({reason, static_cast<double>(k)});
    section.Add(std::move(reasons));
  }
  if (!transitions.rows.empty()) section.Add(std::move(transitions));
  report->sections.push_back(std::move(section));
}

}  // namespace titan::report
