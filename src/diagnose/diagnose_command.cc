#include "src/diagnose/diagnose_command.h"

#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "src/base/atomic_file.h"
#include "src/base/clock.h"
#include "src/base/command_line.h"
#include "src/base/duration_option.h"
#include "src/base/json_text.h"
#include "src/base/text.h"
#include "src/diagnose/diagnose.h"
#include "src/diagnose/line_matcher.h"
#include "src/diagnose/report.h"
#include "src/diagnose/summary.h"

namespace titan {

int DiagnoseCommand(int argc, char** argv) {
  using namespace diagnose;
  CLI::App app{
      "Find the root cause of a failed, hung or slow training job from every log it left: "
      "worker output (Python tracebacks, torchrun summaries, ProcessGroupNCCL watchdog lines, "
      "CUDA and NCCL errors), kernel logs (dmesg, journalctl -k: Xid, GPUs fallen off the bus, "
      "PCIe AER, the OOM killer), NCCL RAS output (text and -f json), PyTorch Flight Recorder "
      "dumps (pickle, read safely, or JSON), Slurm and kubectl output, Kubernetes events "
      "(kubectl get events -o json), titan run's event logs and titan diagnose summaries.\n\n"
      "Each file's kind is read from its content, not its name; an unrecognised file is said "
      "to be unknown. The lines of all files are put on one clock and grouped into incidents; "
      "in each, the first line that states a cause is the root and the rest are its symptoms. "
      "Each incident gets a class (gpu_hardware, gpu_memory_ecc, nvlink, network, nccl_config, "
      "cuda_software, oom_gpu, oom_host, user_code, hang_collective_mismatch, rendezvous, "
      "scheduler, storage, or unknown when the logs do not decide), an action (restart_app, "
      "reset_gpu, reboot_node, drain_node, fix_network, fix_config, fix_code, reduce_memory, "
      "none), a culprit (rank, node, GPU as 0000:a1:00.0) and a confidence.\n\n"
      "usage: titan diagnose RUN_DIR | LOG_DIR | FILE... [--json FILE]\n"
      "       titan diagnose --summarize OUT.json LOGS...   (on each node; then diagnose the "
      "summaries together)",
      "titan diagnose"};
  std::vector<std::string> paths;
  std::string json_path, summarize_path;
  bool patterns = false, quiet = false;
  DiagnoseOptions o;
  app.add_option("paths", paths, "run directories, log directories or files")->type_name("PATH");
  app.add_option("--json", json_path,
                 "also write the diagnosis as JSON ({\"incidents\": [...], \"files\": [...]}) to "
                 "FILE ('-': standard output, and the text goes to standard error)");
  app.add_option("--summarize", summarize_path,
                 "write a compact summary of these logs (for `titan diagnose` of all nodes' "
                 "summaries) to FILE ('-': standard output) instead of a diagnosis");
  app.add_flag("--patterns", patterns,
               "print the line patterns diagnose looks for, one per line (POSIX ERE: usable "
               "with grep -E -f), and exit");
  app.add_flag("-q,--quiet", quiet, "no text diagnosis (with --json)");
  app.add_option("--max-files", o.max_files, "read at most this many files")
      ->check(CLI::Range(int64_t{1}, int64_t{100'000'000}))
      ->capture_default_str();
  app.add_option("--max-file-bytes", o.limits.max_file_bytes,
                 "per file: a larger one is read from its start and its end, half each")
      ->check(CLI::Range(int64_t{1024}, int64_t{1} << 50))
      ->capture_default_str();
  app.add_option("--max-line-bytes", o.limits.max_line_bytes,
                 "a longer line is analysed up to here")
      ->check(CLI::Range(size_t{256}, size_t{64} << 20))
      ->capture_default_str();
  app.add_option("--max-document-bytes", o.limits.max_document_bytes,
                 "JSON and pickle documents are parsed whole up to this size")
      ->check(CLI::Range(int64_t{1024}, int64_t{16} << 30))
      ->capture_default_str();
  app.add_option("--threads", o.threads, "files read at once (0: one per core)")
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();
  AddDurationOption(app, "--gap", &o.incidents.gap_ns,
                    "a quiet gap this long between log lines starts a new incident", kNsPerSecond,
                    int64_t{30} * 86400 * kNsPerSecond);
  AddDurationOption(app, "--escalation-window", &o.incidents.escalation_window_ns,
                    "a GPU or node that fails again within this window is drained", kNsPerSecond,
                    int64_t{365} * 86400 * kNsPerSecond);
  if (std::optional<int> done = ParseCommandLine(app, argc, argv)) return *done;

  if (patterns) {
    std::fputs(LineMatcher::Default().PatternList().c_str(), stdout);
    return 0;
  }
  if (paths.empty()) {
    std::fprintf(stderr,
                 "titan diagnose: name the logs to read (a run directory, a directory of "
                 "logs, or files); see titan diagnose --help\n");
    return kExitUsageError;
  }
  std::vector<OutputFlag> outputs = {{"--json", json_path}, {"--summarize", summarize_path}};
  if (Status clash = RefuseClashingOutputs(outputs, paths); !clash.ok()) {
    std::fprintf(stderr, "titan diagnose: %s\n", std::string(clash.message()).c_str());
    return kExitUsageError;
  }
  if (isatty(STDERR_FILENO)) {
    o.progress = [](size_t done, size_t all) {
      if (all >= 100) std::fprintf(stderr, "\rtitan diagnose: read %zu/%zu files", done, all);
      if (all >= 100 && done == all) std::fputc('\n', stderr);
    };
  }

  if (!summarize_path.empty()) {
    std::vector<std::string> notes;
    auto files = CollectInputs(paths, o.max_files, &notes);
    if (!files.ok()) {
      std::fprintf(stderr, "titan diagnose: %s\n", std::string(files.status().message()).c_str());
      return 1;
    }
    std::vector<SourceOutput> read;
    for (const std::string& f : *files) read.push_back(ReadLogFile(f, o.limits));
    char host[256] = {0};
    ::gethostname(host, sizeof(host) - 1);
    nlohmann::ordered_json summary = SummaryJson(read, host);
    if (!notes.empty()) summary["notes"] = notes;
    Status written = WriteFileAtomically(
        summarize_path,
        summary.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
    if (!written.ok()) {
      std::fprintf(stderr, "titan diagnose: writing --summarize: %s\n",
                   std::string(written.message()).c_str());
      return 1;
    }
    if (summarize_path != "-" && !quiet) {
      std::fprintf(stderr, "titan diagnose: summarized %zu file(s), %zu finding(s) into %s\n",
                   read.size(), summary["findings"].size(), summarize_path.c_str());
    }
    return 0;
  }

  auto d = Diagnose(paths, o);
  if (!d.ok()) {
    std::fprintf(stderr, "titan diagnose: %s\n", std::string(d.status().message()).c_str());
    return 1;
  }
  if (!json_path.empty()) {
    Status written = WriteFileAtomically(json_path, JsonText(DiagnosisJson(*d), 2) + "\n");
    if (!written.ok()) {
      std::fprintf(stderr, "titan diagnose: writing --json: %s\n",
                   std::string(written.message()).c_str());
      return 1;
    }
  }
  if (!quiet) {
    FILE* out = json_path == "-" ? stderr : stdout;
    std::fputs(DiagnosisText(*d, isatty(fileno(out)) != 0).c_str(), out);
  }
  return 0;
}

}  // namespace titan
