#include "src/diagnose/report.h"

#include <cmath>

#include <fmt/format.h>

#include "src/base/text.h"

namespace titan::diagnose {
namespace {

using nlohmann::json;

json OrNull(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

std::string Where(const Evidence& e) {
  return e.line > 0 ? fmt::format("{}:{}", e.file, e.line) : e.file;
}

std::string CulpritText(const Culprit& c) {
  std::string out;
  auto add = [&](std::string part) { out += (out.empty() ? "" : ", ") + part; };
  if (c.rank >= 0) add(fmt::format("rank {}", c.rank));
  if (!c.node.empty()) add("node " + c.node);
  if (!c.gpu.empty()) add("GPU " + c.gpu);
  return out.empty() ? "not decided by the logs" : out;
}

// A line for a terminal: control bytes (the posters' ^M, ESC) shown, long lines shortened.
std::string Printable(std::string_view text, size_t max_bytes) {
  std::string out;
  for (char c : text.substr(0, max_bytes)) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      out += fmt::format("\\x{:02x}", u);
    } else {
      out += c;
    }
  }
  if (text.size() > max_bytes) out += fmt::format("... ({} bytes)", text.size());
  return out;
}

}  // namespace

json EvidenceJson(const Evidence& e) {
  json j = {{"file", e.file},
            {"line", e.line > 0 ? json(e.line) : json(nullptr)},
            {"text", e.text},
            {"time", OrNull(FormatLogTime(e.time))}};
  if (e.text_cut) j["text_cut"] = true;
  return j;
}

json CulpritJson(const Culprit& c) {
  return {{"rank", c.rank >= 0 ? json(c.rank) : json(nullptr)},
          {"node", OrNull(c.node)},
          {"gpu", OrNull(c.gpu)}};
}

json IncidentJson(const Incident& inc) {
  json symptoms = json::array();
  for (const Finding& f : inc.symptoms) {
    symptoms.push_back(EvidenceJson(f.evidence));
    if (f.where.rank >= 0) symptoms.back()["rank"] = f.where.rank;
  }
  json j = {{"class", FaultClassName(inc.fault)},
            {"action", ActionName(inc.action)},
            {"culprit", CulpritJson(inc.culprit)},
            {"root", EvidenceJson(inc.root.evidence)},
            {"symptoms", symptoms},
            {"confidence", std::round(inc.confidence * 100) / 100},
            {"why", inc.root.detail},
            {"rule", inc.root.rule},
            {"symptoms_total", inc.symptoms_total},
            {"first", OrNull(FormatLogTime(inc.first))},
            {"last", OrNull(FormatLogTime(inc.last))}};
  if (inc.root.xid > 0) j["xid"] = inc.root.xid;
  if (!inc.root.collective.empty()) j["collective"] = inc.root.collective;
  if (inc.escalated) {
    j["escalated"] = true;
    j["escalation"] = inc.escalation;
  }
  return j;
}

json DiagnosisJson(const Diagnosis& d) {
  json incidents = json::array();
  for (const Incident& inc : d.incidents) incidents.push_back(IncidentJson(inc));
  json files = json::array();
  for (const FileReport& f : d.files) {
    json j = {{"path", f.path},   {"kind", f.kind},
              {"bytes", f.bytes}, {"bytes_read", f.bytes_read},
              {"lines", f.lines}, {"findings", f.findings}};
    if (f.findings_dropped > 0) j["findings_dropped"] = f.findings_dropped;
    if (!f.notes.empty()) j["notes"] = f.notes;
    if (!f.error.empty()) j["error"] = f.error;
    files.push_back(std::move(j));
  }
  json out = {{"kind", "titan.diagnose"}, {"incidents", incidents}, {"files", files}};
  if (!d.notes.empty()) out["notes"] = d.notes;
  return out;
}

std::string IncidentLine(const Incident& inc) {
  return fmt::format("{} -> {} ({}): {} [confidence {:.2f}]", FaultClassName(inc.fault),
                     ActionName(inc.action), CulpritText(inc.culprit), inc.root.detail,
                     inc.confidence);
}

std::string DiagnosisText(const Diagnosis& d, bool color) {
  const char* bold = color ? "\033[1m" : "";
  const char* reset = color ? "\033[0m" : "";
  std::string out;
  size_t understood = 0;
  for (const FileReport& f : d.files) understood += f.kind != "unknown" && f.error.empty();
  if (d.incidents.empty()) {
    out +=
        fmt::format("titan diagnose: no fault found in {} file(s) ({} read as logs titan knows)\n",
                    d.files.size(), understood);
  } else {
    out += fmt::format("titan diagnose: {} incident(s) in {} file(s); the primary first\n",
                       d.incidents.size(), d.files.size());
  }
  for (size_t i = 0; i < d.incidents.size(); ++i) {
    const Incident& inc = d.incidents[i];
    const bool unknown = inc.fault == FaultClass::kUnknown;
    out += fmt::format("\n{}#{} {} -> {}{}   confidence {:.2f}\n", bold, i + 1,
                       unknown ? "undetermined" : FaultClassName(inc.fault), ActionName(inc.action),
                       reset, inc.confidence);
    out += fmt::format("   culprit:  {}\n", CulpritText(inc.culprit));
    const Evidence& r = inc.root.evidence;
    const std::string when = FormatLogTime(r.time);
    out += fmt::format("   root:     {}{}\n             {}\n", Where(r),
                       when.empty() ? "" : "  [" + when + "]", Printable(r.text, 240));
    if (!inc.root.detail.empty()) out += fmt::format("   why:      {}\n", inc.root.detail);
    if (unknown) {
      out +=
          "   next:     the logs name no cause: collect Flight Recorder dumps, stacks "
          "(py-spy dump) and every node's kernel log of the window\n";
    }
    if (!inc.root.collective.empty())
      out += fmt::format("   collective: {}\n", inc.root.collective);
    if (inc.escalated) out += fmt::format("   escalated: {}\n", inc.escalation);
    if (inc.symptoms_total > 0) {
      out += fmt::format("   symptoms: {} line(s), the first: {}  {}\n", inc.symptoms_total,
                         Where(inc.symptoms.front().evidence),
                         Printable(inc.symptoms.front().evidence.text, 160));
    }
  }
  out += fmt::format("\nfiles ({}):\n", d.files.size());
  const size_t shown = std::min<size_t>(d.files.size(), 20);
  for (size_t i = 0; i < shown; ++i) {
    const FileReport& f = d.files[i];
    std::string line = fmt::format("  {:<16} {}", f.kind, f.path);
    if (f.lines > 0) line += fmt::format("  ({} lines)", f.lines);
    if (!f.error.empty()) line += "  ERROR: " + f.error;
    for (const std::string& n : f.notes) line += "  [" + n + "]";
    out += line + "\n";
  }
  if (shown < d.files.size()) {
    out += fmt::format("  ... and {} more (--json lists them all)\n", d.files.size() - shown);
  }
  for (const std::string& n : d.notes) out += "note: " + n + "\n";
  return out;
}

}  // namespace titan::diagnose
