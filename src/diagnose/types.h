// The vocabulary of titan diagnose: fault classes, actions, culprits, evidence, and the findings
// (one per log line or record that says something about a failure) that readers produce and the
// incident builder (incidents.h) groups.
//
// Thread safety: plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace titan::diagnose {

// What kind of fault an incident is (docs/diagnose.md has the table).
enum class FaultClass : uint8_t {
  kUnknown = 0,  // the logs do not decide: "undetermined", never a guess
  kGpuHardware,
  kGpuMemoryEcc,
  kNvlink,
  kNetwork,       // fabric or NIC trouble between nodes
  kNcclConfig,    // NCCL/transport configuration of the host or container (GID, ACS, /dev/shm)
  kCudaSoftware,  // kernel-level faults of the application or framework (illegal address, Xid 13)
  kOomGpu,
  kOomHost,
  kUserCode,
  kHangCollectiveMismatch,
  kRendezvous,  // TCPStore / launch-time coordination
  kScheduler,   // Slurm / Kubernetes side
  kStorage,
};
inline constexpr int kFaultClassCount = 14;

// What to do about it. Ordered: for GPU faults a later value is a stronger action (an incident
// takes the strongest action of its GPU's faults).
enum class Action : uint8_t {
  kNone = 0,
  kRestartApp,
  kResetGpu,
  kRebootNode,
  kDrainNode,
  kFixNetwork,
  kFixConfig,
  kFixCode,
  kReduceMemory,
};
inline constexpr int kActionCount = 9;

std::string_view FaultClassName(FaultClass c);
std::string_view ActionName(Action a);
// Inverse of the names above; false for an unknown name.
bool ParseFaultClass(std::string_view name, FaultClass* out);
bool ParseAction(std::string_view name, Action* out);
// Hardware classes: a node or GPU is to blame (the escalation and isolation rules apply).
bool IsHardwareClass(FaultClass c);
// The order of GPU actions for escalation: none < restart_app < reset_gpu < reboot_node <
// drain_node; other actions rank 0.
int GpuActionRank(Action a);

// Who the logs say failed. Empty/negative fields are "not decided" (JSON null).
struct Culprit {
  int64_t rank = -1;  // global training rank
  std::string node;   // host name as the logs write it
  std::string gpu;    // PCI address in normal form "0000:a1:00.0" (pci.h)
  bool empty() const { return rank < 0 && node.empty() && gpu.empty(); }
  bool operator==(const Culprit&) const = default;
};

// A time on titan diagnose's one clock.
enum class ClockKind : uint8_t {
  kNone = 0,    // the line carries no time
  kWall,        // UTC ns since the epoch (a zone-less time is taken as UTC)
  kWallNoYear,  // month, day and time only (glog, syslog): the year is inferred across files
  kBoot,        // seconds since the node booted (dmesg's raw clock): orders lines of one file only
};
struct LogTime {
  ClockKind kind = ClockKind::kNone;
  int64_t ns = 0;  // kWall: epoch ns; kWallNoYear: ns since Jan 1 00:00 of a leap year; kBoot: ns
  bool operator==(const LogTime&) const = default;
};

// Where a finding was read: file, 1-based line (0 when unknown: the middle of a huge file was
// skipped), byte offset, the verbatim line (at most kMaxEvidenceBytes; longer lines are cut and
// marked), and the line's own time (or the nearest earlier time of its file).
struct Evidence {
  std::string file;
  int64_t line = 0;
  int64_t offset = -1;
  std::string text;
  bool text_cut = false;
  LogTime time;
};
inline constexpr size_t kMaxEvidenceBytes = 64 * 1024;

// Evidence of one line: its text verbatim up to kMaxEvidenceBytes (longer: cut and marked).
inline Evidence LineEvidence(std::string file, int64_t line, std::string_view text) {
  Evidence e;
  e.file = std::move(file);
  e.line = line;
  e.text_cut = text.size() > kMaxEvidenceBytes;
  e.text = std::string(text.substr(0, kMaxEvidenceBytes));
  return e;
}

// How much a finding says about the cause. Root selection prefers a higher tier, then the
// earlier time.
enum class Tier : uint8_t {
  kSymptom = 1,  // a consequence (peer timeouts, ChildFailedError, "Killing subprocess")
  kGeneric = 2,  // an error that names no cause ("unhandled system error", SIGKILL received)
  kCause = 3,    // states a specific cause (an Xid, the OOM killer, shm_open denied)
};

// Which of a finding's entities are to blame (the others only say where it was seen: a rank
// that reports a peer's timeout is a victim).
struct Blame {
  bool rank = false;
  bool node = false;
  bool gpu = false;
};

// One line or record that says something about a failure.
struct Finding {
  std::string rule;  // the rule that matched ("xid", "cuda_oom", "ib_completion", ...)
  Evidence evidence;
  FaultClass fault = FaultClass::kUnknown;
  Action action = Action::kNone;
  Tier tier = Tier::kSymptom;
  double confidence = 0.5;
  Culprit where;  // the entities the finding names (rank, node, GPU)
  Blame blame;    // which of them are culprits
  int64_t pid = -1;
  int xid = 0;
  // For timeouts: how long the stuck operation ran, so that its start can be linked to the
  // fault that caused it ten minutes earlier.
  int64_t ran_for_ns = 0;
  std::string detail;  // one line for people: what it means / what to do
  // Set by the reader for facts that belong in the incident (e.g. the collective of a hang).
  std::string collective;
  // Input order (files in the order given, lines in file order): breaks ties between findings
  // whose times do not decide. Set by the diagnosis, not by readers.
  int64_t order = 0;
};

// Whether `text` contains `what` (the rules' and readers' most common test).
inline bool Contains(std::string_view text, std::string_view what) {
  return text.find(what) != std::string_view::npos;
}

// Normalises a PCI address as the logs write it ("0000:a1:00", "00000000:A1:00.0", "a1:00.0")
// to "0000:a1:00.0"; "" when `text` is not one ("...", "PCI:...").
std::string NormalizePci(std::string_view text);

// ISO 8601 for people and JSON: "2024-04-09T01:21:38.000Z" (kWall), "--04-09T01:21:38Z"
// (kWallNoYear), "boot+856341.770960s" (kBoot), "" (kNone).
std::string FormatLogTime(const LogTime& t);

}  // namespace titan::diagnose
