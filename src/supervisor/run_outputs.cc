#include "src/supervisor/run_outputs.h"

#include <cstdio>

#include <fmt/format.h>

#include "src/base/atomic_file.h"
#include "src/base/clock.h"
#include "src/base/duration.h"
#include "src/base/json_text.h"
#include "src/base/log.h"
#include "src/base/text.h"
#include "src/metrics/exposition.h"
#include "src/s3/config.h"

namespace titan::supervisor {

using nlohmann::json;

RunOutputs::~RunOutputs() {
  if (metrics_endpoint_) metrics_endpoint_->Stop();
}

Status RunOutputs::StartEndpoint() {
  if (o_.metrics_port > 0) {
    TITAN_ASSIGN_OR_RETURN(metrics_endpoint_, MetricsEndpoint::Start(o_.metrics_port));
  }
  return OkStatus();
}

void RunOutputs::FlushSteps(int64_t now, int64_t generation, bool force) {
  if (step_window_.empty() || (!force && !step_window_.Due(now))) return;
  json fields = step_window_.Take(now);
  fields["generation"] = generation;
  log_.Write("steps", std::move(fields));
}

void RunOutputs::PublishMetrics(int64_t now, const Assignment& a, uint64_t events_dropped,
                                bool force) {
  FlushSteps(now, a.generation, /*force=*/false);
  if (force) next_metrics_ns_ = 0;
  if (now < next_metrics_ns_) return;
  next_metrics_ns_ = now + kNsPerSecond;
  std::string text;
  ExpositionWriter out(&text);
  ledger_.AppendPrometheus(now, out);
  out.Family("titan_run_generation", "gauge", "Current generation of the worker group.")
      .Sample(a.generation);
  out.Family("titan_run_world_size", "gauge", "World size of the current generation.")
      .Sample(a.world_size);
  out.Family("titan_run_events_dropped_total", "counter", "Step events dropped by a full queue.")
      .Sample(static_cast<double>(events_dropped));
  if (metrics_endpoint_) metrics_endpoint_->Set(text);
  if (!o_.metrics_file.empty()) {
    // Checked and atomic; a failure (a full disk) is one warning per streak, not one a second.
    Status written = WriteFileAtomically(o_.metrics_file, text);
    if (!written.ok() && metrics_file_ok_) {
      log_.Write("warning", {{"what", std::string(written.message())}});
      Log(LogLevel::kWarning, "run", "--metrics-file: {}", written.message());
    }
    metrics_file_ok_ = written.ok();
  }
}

void RunOutputs::StartPrefetch(const Assignment& a) {
  if (!o_.checkpoint_prefetch || o_.checkpoint_mirror.empty() || o_.checkpoint_dir.empty() ||
      s3::IsS3Url(o_.checkpoint_dir) || (a.group_rank != 0 && !o_.checkpoint_node_local) ||
      (prefetch_ && !prefetch_->done())) {
    return;
  }
  ReportPrefetch();
  std::optional<checkpoint::NodeRanks> node;
  if (o_.checkpoint_node_local) node = checkpoint::NodeRanks{a.rank_offset, o_.nproc_per_node};
  auto started =
      checkpoint::CheckpointPrefetch::Start(o_.checkpoint_dir, o_.checkpoint_mirror, node);
  if (!started.ok()) {
    log_.Write("prefetch", {{"phase", "end"}, {"error", started.status().ToString()}});
    Log(LogLevel::kWarning, "run", "checkpoint prefetch: {}", started.status().ToString());
    return;
  }
  prefetch_ = std::move(started).value();
  log_.Write("prefetch", {{"phase", "start"},
                          {"from", o_.checkpoint_mirror},
                          {"to", o_.checkpoint_dir},
                          {"generation", a.generation}});
}

void RunOutputs::ReportPrefetch() {
  if (!prefetch_ || !prefetch_->done()) return;
  const auto& out = prefetch_->outcome();
  json e = {{"phase", "end"}};
  if (!out.ok()) {
    e["error"] = out.status().ToString();
    Log(LogLevel::kWarning, "run", "checkpoint prefetch failed (workers restore from {}): {}",
        o_.checkpoint_mirror, out.status().ToString());
  } else {
    auto step_or_null = [](const std::optional<int64_t>& s) { return s ? json(*s) : json(); };
    e["local_step"] = step_or_null(out->local_step);
    e["durable_step"] = step_or_null(out->durable_step);
    e["copied"] = out->copied;
    e["copied_bytes"] = out->copy.copied_bytes;
    e["files_copied"] = out->copy.files_copied;
    e["files_present"] = out->copy.files_present;
    e["seconds"] = NsToSeconds(out->elapsed_ns);
    if (out->copied) {
      Log(LogLevel::kInfo, "run", "prefetched step {} ({}) from {} in {}", *out->durable_step,
          FormatBytes(out->copy.copied_bytes), o_.checkpoint_mirror,
          FormatDurationShort(out->elapsed_ns));
    }
  }
  log_.Write("prefetch", std::move(e));
  prefetch_.reset();
}

void RunOutputs::EndPrefetch() {
  if (prefetch_ && !prefetch_->done()) {
    log_.Write("prefetch", {{"phase", "end"}, {"error", "cancelled: the run ended"}});
  }
  ReportPrefetch();
  prefetch_.reset();  // cancels a copy in flight
}

void RunOutputs::SetVerdict(const json& diagnosis, const std::string& decision) {
  diagnosis_ = diagnosis;
  decision_ = decision;
}

void RunOutputs::SetRankLogStats(const RankLogs::Stats& stats, const std::string& dir) {
  rank_logs_ = {{"dir", dir},
                {"bytes_read", stats.bytes_read},
                {"bytes_rotated_out", stats.bytes_rotated_out},
                {"bytes_dropped_on_disk", stats.bytes_on_disk_dropped},
                {"terminal_bytes_dropped", stats.terminal_bytes_dropped},
                {"max_bytes_per_rank", o_.rank_log_bytes}};
}

int RunOutputs::Finish(int code, int64_t now, const Assignment& a, uint64_t events_dropped,
                       int restart_count) {
  ledger_.Finish(now);
  PublishMetrics(now, a, events_dropped, /*force=*/true);
  json ledger = ledger_.ToJson(now);
  ledger["node"] = o_.node_id;
  ledger["job"] = o_.job_id;
  ledger["exit_code"] = code;
  ledger["generation"] = a.generation;
  ledger["world_size"] = a.world_size;
  ledger["event_log"] = o_.event_log;
  ledger["diagnosis"] = diagnosis_;
  ledger["verdict"] = decision_.empty() ? json(nullptr) : json(decision_);
  if (!rank_logs_.is_null()) ledger["rank_logs"] = rank_logs_;
  log_.Write("ledger", ledger);
  Status ledger_written = WriteFileAtomically(o_.ledger_json, JsonText(ledger, 2) + "\n");
  if (!ledger_written.ok()) {
    Log(LogLevel::kError, "run", "writing the ledger (--ledger-json): {}",
        ledger_written.message());
    records_error_ = ledger_written;
  } else if (!log_.write_error().ok()) {
    records_error_ = log_.write_error();
  }
  if (code == 0 && !records_error_.ok()) code = kExitRecordsNotWritten;
  if (!o_.quiet) PrintSummary(code, now, restart_count);
  return code;
}

void RunOutputs::PrintSummary(int code, int64_t now, int restart_count) {
  std::string out =
      fmt::format("\ntitan run: {} (exit {}) after {:.1f} s, {} restart(s)\n",
                  code == 0 || code == kExitRecordsNotWritten ? "job finished" : "job stopped",
                  code, NsToSeconds(now - start_ns_), restart_count);
  out += "timeline:\n";
  for (const json& e : log_.recent()) {
    std::string type = e.value("type", "");
    std::string line;
    if (type == "inject") {
      line = fmt::format("injected {} on rank {}", e.value("kind", ""), e.value("rank", -1));
    } else if (type == "crash") {
      line = fmt::format("crash: rank {} {}", e.value("rank", -1), e.value("status", ""));
    } else if (type == "hang") {
      line = fmt::format("hang: rank {} silent {:.1f} s > bound {:.1f} s", e.value("rank", -1),
                         e.value("silent_s", 0.0), e.value("threshold_s", 0.0));
    } else if (type == "straggler") {
      line = fmt::format("straggler: rank {} compute {:.0f} ms vs peers {:.0f} ms",
                         e.value("rank", -1), e.value("median_compute_ms", 0.0),
                         e.value("peers_median_ms", 0.0));
    } else if (type == "diagnosis") {
      const json culprit = e.value("culprit", json::object());
      line = fmt::format("diagnosis: {} -> {} (rank {}, node {}, GPU {}): {}", e.value("class", ""),
                         e.value("action", ""), culprit.value("rank", json(nullptr)).dump(),
                         culprit.value("node", json(nullptr)).dump(),
                         culprit.value("gpu", json(nullptr)).dump(),
                         e.contains("root") ? e["root"].value("text", "").substr(0, 160) : "");
    } else if (type == "decision") {
      line = fmt::format("decision: {} ({})", e.value("action", ""),
                         e.value("why", e.value("detail", e.value("reason", std::string()))));
    } else if (type == "exclude") {
      line = fmt::format("exclude node {}: {}", e.value("node", ""), e.value("reason", ""));
    } else if (type == "lost") {
      line = fmt::format("lost node(s): {}", e["nodes"].dump());
    } else if (type == "isolate") {
      line = fmt::format("isolate {} ({}): {}{}", e.value("node", ""), e.value("action", ""),
                         e.value("result", ""), e.value("ok", false) ? "" : " FAILED");
    } else if (type == "restart") {
      line = fmt::format("restarted generation {} ({:.0f} ms from detection to exec)",
                         e.value("generation", 0), e.value("detect_to_exec_ms", 0.0));
    } else if (type == "prefetch" && e.value("copied", false)) {
      line =
          fmt::format("prefetched checkpoint step {} ({}) in {:.1f} s while workers started",
                      e.value("durable_step", int64_t{-1}),
                      FormatBytes(e.value("copied_bytes", uint64_t{0})), e.value("seconds", 0.0));
    } else if (type == "preempt") {
      line = "preempted: SIGTERM forwarded to the workers";
    } else {
      continue;
    }
    out += fmt::format("  {:>7.1f}s  {}\n", e.value("t", 0.0), line);
  }
  if (!decision_.empty()) out += fmt::format("verdict: {}\n", decision_);
  if (!rank_logs_.is_null()) {
    out +=
        fmt::format("rank logs: {} (at most {} per rank and generation: its start and its end)\n",
                    rank_logs_.value("dir", ""), FormatBytes(o_.rank_log_bytes));
  }
  out += ledger_.ToTable(now);
  // Only files that were written are named as results.
  const Status& events_error = log_.write_error();
  out += events_error.ok() ? fmt::format("event log: {}\n", o_.event_log)
                           : fmt::format("event log: {} is INCOMPLETE: {} lines lost ({})\n",
                                         o_.event_log, log_.lines_lost(), events_error.message());
  out += records_error_.ok() || records_error_.message() == events_error.message()
             ? fmt::format("ledger:    {}\n", o_.ledger_json)
             : fmt::format("ledger:    NOT WRITTEN ({})\n", records_error_.message());
  if (!records_error_.ok()) {
    out += fmt::format(
        "titan run: its own records could not be written (exit {} when the job itself "
        "succeeded): free space in or fix --run-dir, --event-log, --ledger-json\n",
        kExitRecordsNotWritten);
  }
  std::fputs(out.c_str(), stderr);
}

}  // namespace titan::supervisor
