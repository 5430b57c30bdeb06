// Lines that say what a file is, where it was taken, and how ranks map to GPUs: no finding of
// their own. Also the shared helpers of the rule files.
#include <cctype>

#include "src/base/text.h"
#include "src/diagnose/rules/line_rule.h"

namespace titan::diagnose {
namespace {

// A rule that gives no finding: only its role.
constexpr LineRule Context(std::string_view id, Family family, RuleRole role,
                           std::string_view pattern) {
  return {id, family, role, pattern, Tier::kSymptom, FaultClass::kUnknown, Action::kNone,
          0,  {},     "",   nullptr};
}

constexpr LineRule kContextRules[] = {
    // Where the file was taken: a shell prompt ("root@node1:~# dmesg -T", "me@cn-234 ~ % ...").
    Context("shell_prompt", Family::kShell, RuleRole::kHost,
            R"(^[a-z_][A-Za-z0-9_.-]*@([A-Za-z0-9][A-Za-z0-9_.-]*)[~: ][^ ]* ?[#$%>] )"),
    // NCCL's init line: rank, cudaDev and PCI bus of each rank on this host.
    Context(
        "nccl_init_rank", Family::kNccl, RuleRole::kRankGpu,
        R"(NCCL INFO comm 0x[0-9a-f]+ rank ([0-9]+) nranks [0-9]+ cudaDev [0-9]+ (nvmlDev [0-9]+ )?busId ([0-9a-f]+))"),
    // The header titan run writes at the top of each rank's log (rank_logs.h).
    Context(
        "titan_rank_header", Family::kWorker, RuleRole::kFileRank,
        R"(^\[titan run\] rank ([0-9]+) \(local rank [0-9]+\) pid ([0-9]+) generation [0-9]+ started )"),
    // A Python exception raised while handling another: the next exception is its consequence.
    Context("exception_chain", Family::kWorker, RuleRole::kChain,
            R"(During handling of the above exception|The above exception was the direct cause)"),
    // Markers: only the file's kind.
    Context(
        "kernel_marker", Family::kKernel, RuleRole::kMarker,
        R"(NVRM: |^\[ *[0-9]+\.[0-9]+\] |^kern  *:[a-z]+ *: | kernel: |^\[ *\+[0-9]+\.[0-9]+\] )"),
    Context("nccl_marker", Family::kNccl, RuleRole::kMarker,
            R"( NCCL (INFO|WARN) |^NCCL version )"),
    Context(
        "worker_marker", Family::kWorker, RuleRole::kMarker,
        R"(^\[(rank|default)[0-9]+\]:|Traceback \(most recent call last\)|torch\.distributed|ProcessGroupNCCL|^  File ")"),
    Context(
        "slurm_marker", Family::kSlurm, RuleRole::kMarker,
        R"(^(srun|slurmstepd|sbatch|salloc): |^ *JobID +JobName |JobId=[0-9]+ |NodeName=[^ ]+ )"),
    Context("kubectl_marker", Family::kKubernetes, RuleRole::kMarker,
            R"(^NAME +READY +STATUS|^Events:|^ +Type +Reason +Age|^LAST SEEN +TYPE +REASON)"),
};

}  // namespace

std::span<const LineRule> ContextRules() { return kContextRules; }

std::string_view FamilyKind(Family f) {
  switch (f) {
    case Family::kKernel:
      return "kernel_log";
    case Family::kWorker:
      return "worker_output";
    case Family::kNccl:
      return "nccl_log";
    case Family::kSlurm:
      return "slurm_output";
    case Family::kKubernetes:
      return "kubectl_output";
    case Family::kShell:
      return "shell_transcript";
  }
  return "unknown";
}

const std::vector<const LineRule*>& AllLineRules() {
  static const std::vector<const LineRule*> all = [] {
    std::vector<const LineRule*> out;
    for (auto table : {ContextRules(), KernelRules(), NcclRules(), ClusterRules(), TorchRules()}) {
      for (const LineRule& r : table) out.push_back(&r);
    }
    return out;
  }();
  return all;
}

bool ParseNcclPrefix(std::string_view line, std::string_view* host, int64_t* pid) {
  // host:pid:tid [dev]
  size_t c1 = line.find(':');
  if (c1 == std::string_view::npos || c1 == 0) return false;
  size_t c2 = line.find(':', c1 + 1);
  if (c2 == std::string_view::npos) return false;
  size_t sp = line.find(" [", c2 + 1);
  if (sp == std::string_view::npos) return false;
  std::string_view h = line.substr(0, c1), p = line.substr(c1 + 1, c2 - c1 - 1),
                   t = line.substr(c2 + 1, sp - c2 - 1);
  auto digits = [](std::string_view s) {
    if (s.empty()) return false;
    for (char c : s) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    }
    return true;
  };
  if (!digits(p) || !digits(t)) return false;
  for (char c : h) {
    if (c == ' ' || c == '[' || c == ']') return false;
  }
  *host = h;
  *pid = CaptureInt(p);
  return true;
}

int64_t RankOfLine(std::string_view line) {
  // "[rank3]:" (torchrun's prefix) or "[Rank 3]" / "[PG 0 Rank 3]" (ProcessGroupNCCL).
  const std::string_view head = line.substr(0, 256);
  for (size_t at = head.find('['); at != std::string_view::npos; at = head.find('[', at + 1)) {
    std::string_view rest = head.substr(at + 1);
    if (rest.starts_with("PG ")) {
      size_t r = rest.find(" Rank ");
      if (r == std::string_view::npos || r > 24) continue;
      rest = rest.substr(r + 1);
    }
    if (!rest.starts_with("rank") && !rest.starts_with("Rank")) continue;
    rest.remove_prefix(4);
    if (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    size_t n = 0;
    while (n < rest.size() && n < 9 && std::isdigit(static_cast<unsigned char>(rest[n]))) ++n;
    if (n == 0 || n >= rest.size() || rest[n] != ']') continue;
    return CaptureInt(rest.substr(0, n));
  }
  return -1;
}

int64_t CaptureInt(std::string_view text, int64_t fallback) {
  int64_t v = 0;
  return ParseInt64(text, &v) ? v : fallback;
}

}  // namespace titan::diagnose
