#include "src/diagnose/summary.h"

#include <map>

#include <fmt/format.h>

namespace titan::diagnose {
namespace {

using nlohmann::json;

std::string_view ClockName(ClockKind k) {
  switch (k) {
    case ClockKind::kWall:
      return "wall";
    case ClockKind::kWallNoYear:
      return "wall_no_year";
    case ClockKind::kBoot:
      return "boot";
    case ClockKind::kNone:
      break;
  }
  return "none";
}

bool ParseClock(std::string_view s, ClockKind* k) {
  for (ClockKind c :
       {ClockKind::kNone, ClockKind::kWall, ClockKind::kWallNoYear, ClockKind::kBoot}) {
    if (ClockName(c) == s) {
      *k = c;
      return true;
    }
  }
  return false;
}

json FindingJson(const Finding& f) {
  return {{"rule", f.rule},
          {"file", f.evidence.file},
          {"line", f.evidence.line},
          {"offset", f.evidence.offset},
          {"text", f.evidence.text},
          {"text_cut", f.evidence.text_cut},
          {"clock", ClockName(f.evidence.time.kind)},
          {"time_ns", f.evidence.time.ns},
          {"class", FaultClassName(f.fault)},
          {"action", ActionName(f.action)},
          {"tier", static_cast<int>(f.tier)},
          {"confidence", f.confidence},
          {"rank", f.where.rank},
          {"node", f.where.node},
          {"gpu", f.where.gpu},
          {"blame", fmt::format("{}{}{}", f.blame.rank ? "r" : "", f.blame.node ? "n" : "",
                                f.blame.gpu ? "g" : "")},
          {"pid", f.pid},
          {"xid", f.xid},
          {"ran_for_ns", f.ran_for_ns},
          {"detail", f.detail},
          {"collective", f.collective}};
}

Result<Finding> FindingFrom(const json& j, std::string_view what) {
  if (!j.is_object())
    return InvalidArgumentError(fmt::format("{}: a finding is not an object", what));
  Finding f;
  try {
    f.rule = j.at("rule").get<std::string>();
    f.evidence.file = j.at("file").get<std::string>();
    f.evidence.line = j.at("line").get<int64_t>();
    f.evidence.offset = j.at("offset").get<int64_t>();
    f.evidence.text = j.at("text").get<std::string>();
    f.evidence.text_cut = j.at("text_cut").get<bool>();
    if (!ParseClock(j.at("clock").get<std::string>(), &f.evidence.time.kind)) {
      return InvalidArgumentError(fmt::format("{}: unknown clock in a finding", what));
    }
    f.evidence.time.ns = j.at("time_ns").get<int64_t>();
    if (!ParseFaultClass(j.at("class").get<std::string>(), &f.fault) ||
        !ParseAction(j.at("action").get<std::string>(), &f.action)) {
      return InvalidArgumentError(fmt::format("{}: unknown class or action in a finding", what));
    }
    const int tier = j.at("tier").get<int>();
    if (tier < 1 || tier > 3)
      return InvalidArgumentError(fmt::format("{}: tier {} out of range", what, tier));
    f.tier = static_cast<Tier>(tier);
    f.confidence = j.at("confidence").get<double>();
    f.where.rank = j.at("rank").get<int64_t>();
    f.where.node = j.at("node").get<std::string>();
    f.where.gpu = j.at("gpu").get<std::string>();
    const std::string blame = j.at("blame").get<std::string>();
    f.blame = {blame.find('r') != std::string::npos, blame.find('n') != std::string::npos,
               blame.find('g') != std::string::npos};
    f.pid = j.at("pid").get<int64_t>();
    f.xid = j.at("xid").get<int>();
    f.ran_for_ns = j.at("ran_for_ns").get<int64_t>();
    f.detail = j.at("detail").get<std::string>();
    f.collective = j.at("collective").get<std::string>();
  } catch (const json::exception& e) {
    return InvalidArgumentError(
        fmt::format("{}: a finding lacks a field or has the wrong type ({})", what, e.what()));
  }
  return f;
}

json RecordJson(const FlightRecord& r) {
  json groups = json::array();
  for (const auto& [pg, ranks] : r.groups) groups.push_back({pg, ranks});
  json entries = json::array();
  for (const FlightRecord::Entry& e : r.entries) {
    entries.push_back({e.record_id, e.pg, e.pg_desc, e.seq, e.p2p, e.op, e.sizes, e.dtypes, e.state,
                       e.time_created_ns, e.frame});
  }
  return {{"file", r.file},   {"rank", r.rank},     {"version", r.version},
          {"groups", groups}, {"entries", entries}, {"entries_total", r.entries_total}};
}

Result<FlightRecord> RecordFrom(const json& j, std::string_view what) {
  FlightRecord r;
  try {
    r.file = j.at("file").get<std::string>();
    r.rank = j.at("rank").get<int64_t>();
    r.version = j.at("version").get<std::string>();
    r.entries_total = j.at("entries_total").get<int64_t>();
    for (const json& g : j.at("groups")) {
      r.groups.emplace_back(g.at(0).get<std::string>(), g.at(1).get<std::vector<int64_t>>());
    }
    for (const json& e : j.at("entries")) {
      FlightRecord::Entry x;
      x.record_id = e.at(0).get<int64_t>();
      x.pg = e.at(1).get<std::string>();
      x.pg_desc = e.at(2).get<std::string>();
      x.seq = e.at(3).get<int64_t>();
      x.p2p = e.at(4).get<bool>();
      x.op = e.at(5).get<std::string>();
      x.sizes = e.at(6).get<std::string>();
      x.dtypes = e.at(7).get<std::string>();
      x.state = e.at(8).get<std::string>();
      x.time_created_ns = e.at(9).get<int64_t>();
      x.frame = e.at(10).get<std::string>();
      r.entries.push_back(std::move(x));
    }
  } catch (const json::exception& e) {
    return InvalidArgumentError(
        fmt::format("{}: a Flight Recorder record is malformed ({})", what, e.what()));
  }
  return r;
}

}  // namespace

nlohmann::ordered_json SummaryJson(const std::vector<SourceOutput>& outputs,
                                   const std::string& host) {
  json files = json::array(), findings = json::array(), rank_gpus = json::array(),
       pid_ranks = json::array(), records = json::array();
  for (const SourceOutput& o : outputs) {
    files.push_back({{"path", o.file.path},
                     {"kind", o.file.kind},
                     {"bytes", o.file.bytes},
                     {"bytes_read", o.file.bytes_read},
                     {"lines", o.file.lines},
                     {"findings", o.file.findings},
                     {"findings_dropped", o.file.findings_dropped},
                     {"notes", o.file.notes},
                     {"error", o.file.error}});
    std::map<std::string, int> per_rule;
    int64_t left_out = 0;
    for (const Finding& f : o.findings) {
      if (f.tier == Tier::kSymptom && ++per_rule[f.rule] > kSummarySymptomsPerRule) {
        ++left_out;
        continue;
      }
      findings.push_back(FindingJson(f));
    }
    if (left_out > 0) {
      files.back()["notes"].push_back(
          fmt::format("the summary keeps the first {} symptoms of each kind: {} more left out",
                      kSummarySymptomsPerRule, left_out));
    }
    for (const RankGpu& g : o.rank_gpus) rank_gpus.push_back({g.node, g.gpu, g.rank});
    for (const PidRank& p : o.pid_ranks) pid_ranks.push_back({p.node, p.pid, p.rank});
    for (const FlightRecord& r : o.flight_records) records.push_back(RecordJson(r));
  }
  nlohmann::ordered_json out;
  out["titan_diagnose_summary"] = kSummaryVersion;  // first: how a reader recognises it
  out["host"] = host;
  out["files"] = files;
  out["findings"] = findings;
  out["rank_gpus"] = rank_gpus;
  out["pid_ranks"] = pid_ranks;
  out["flight_records"] = records;
  return out;
}

Result<std::vector<SourceOutput>> ReadSummary(const json& doc, std::string_view what) {
  if (!doc.is_object() || !doc.contains("titan_diagnose_summary")) {
    return InvalidArgumentError(fmt::format("{}: not a titan diagnose summary", what));
  }
  if (doc["titan_diagnose_summary"] != kSummaryVersion) {
    return InvalidArgumentError(fmt::format(
        "{}: summary version {} is not {} (made by another titan version: summarize again)", what,
        doc["titan_diagnose_summary"].dump(), kSummaryVersion));
  }
  std::vector<SourceOutput> outputs;
  std::map<std::string, size_t> index;
  try {
    for (const json& f : doc.at("files")) {
      SourceOutput o;
      o.file.path = f.at("path").get<std::string>();
      o.file.kind = f.at("kind").get<std::string>();
      o.file.bytes = f.at("bytes").get<int64_t>();
      o.file.bytes_read = f.at("bytes_read").get<int64_t>();
      o.file.lines = f.at("lines").get<int64_t>();
      o.file.findings = f.at("findings").get<int64_t>();
      o.file.findings_dropped = f.at("findings_dropped").get<int64_t>();
      o.file.notes = f.at("notes").get<std::vector<std::string>>();
      o.file.error = f.at("error").get<std::string>();
      index[o.file.path] = outputs.size();
      outputs.push_back(std::move(o));
    }
    if (outputs.empty()) outputs.emplace_back();
    for (const json& j : doc.at("findings")) {
      TITAN_ASSIGN_OR_RETURN(Finding f, FindingFrom(j, what));
      auto it = index.find(f.evidence.file);
      outputs[it == index.end() ? 0 : it->second].findings.push_back(std::move(f));
    }
    for (const json& g : doc.at("rank_gpus")) {
      outputs[0].rank_gpus.push_back(
          {g.at(0).get<std::string>(), g.at(1).get<std::string>(), g.at(2).get<int64_t>()});
    }
    for (const json& p : doc.at("pid_ranks")) {
      outputs[0].pid_ranks.push_back(
          {p.at(0).get<std::string>(), p.at(1).get<int64_t>(), p.at(2).get<int64_t>()});
    }
    for (const json& r : doc.at("flight_records")) {
      TITAN_ASSIGN_OR_RETURN(FlightRecord rec, RecordFrom(r, what));
      auto it = index.find(rec.file);
      outputs[it == index.end() ? 0 : it->second].flight_records.push_back(std::move(rec));
    }
  } catch (const json::exception& e) {
    return InvalidArgumentError(fmt::format("{}: malformed summary ({})", what, e.what()));
  }
  return outputs;
}

}  // namespace titan::diagnose
