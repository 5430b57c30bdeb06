#include "src/supervisor/stack_capture.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <map>

#include <fmt/format.h>

#include "src/base/clock.h"
#include "src/base/env.h"
#include "src/supervisor/leftovers.h"
#include "src/supervisor/native_stack.h"
#include "src/supervisor/worker_env.h"

namespace titan::supervisor {
namespace {

using nlohmann::json;

constexpr size_t kMaxStackBytes = 64 * 1024;
// eu-stack on the hung workers: usually tens of ms each; a thread in D state can make one wait
// forever. One budget for all the workers of a hang, so recovery waits for it at most once.
constexpr int64_t kNativeStackBudgetNs = int64_t{10} * 1'000'000'000;

std::string ProcField(pid_t pid, const char* file) {
  auto r = Env::ReadFile(fmt::format("/proc/{}/{}", pid, file), 64 * 1024);
  return r.ok() ? *r : std::string();
}

int64_t FileSize(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
}

std::string ReadFrom(const std::string& path, int64_t offset, size_t max_bytes) {
  FILE* f = std::fopen(path.c_str(), "re");
  if (f == nullptr) return "";
  std::fseek(f, offset, SEEK_SET);
  std::string out(max_bytes, '\0');
  size_t n = std::fread(out.data(), 1, max_bytes, f);
  std::fclose(f);
  out.resize(n);
  return out;
}

}  // namespace

char ProcState(pid_t pid) {
  auto stat = ReadProcStat(pid);
  return stat.ok() ? stat->state : '?';
}

void CaptureStacks(const std::vector<Worker>& workers, const std::string& run_dir,
                   int64_t stack_wait_ns, RunLog& log) {
  std::map<int, int64_t> before;
  for (const Worker& w : workers) {
    if (!w.running) continue;
    before[w.rank] = FileSize(StackFile(run_dir, w.rank));
    char state = ProcState(w.pid);
    ::kill(w.pid, SIGUSR1);
    if (state == 'T') ::kill(w.pid, SIGCONT);  // a stopped process handles it once continued
  }
  // Wait until every file grew and stopped growing, or the deadline.
  int64_t deadline = MonoNowNs() + stack_wait_ns;
  std::map<int, int64_t> last;
  int stable_rounds = 0;
  while (MonoNowNs() < deadline) {
    ::usleep(50'000);
    bool all_grew = true, changed = false;
    for (const auto& [rank, size0] : before) {
      int64_t s = FileSize(StackFile(run_dir, rank));
      all_grew &= s > size0;
      changed |= last[rank] != s;
      last[rank] = s;
    }
    stable_rounds = changed ? 0 : stable_rounds + 1;
    if (all_grew && stable_rounds >= 2) break;
  }
  const int64_t native_deadline = MonoNowNs() + kNativeStackBudgetNs;
  for (const Worker& w : workers) {
    if (!before.count(w.rank)) continue;
    std::string py = ReadFrom(StackFile(run_dir, w.rank), before[w.rank], kMaxStackBytes);
    std::string wchan = ProcField(w.pid, "wchan");
    std::string kstack = ProcField(w.pid, "stack");
    if (kstack.size() > 4096) kstack.resize(4096);
    const int64_t native_left = native_deadline - MonoNowNs();
    const NativeStacks native = native_left > 0
                                    ? CaptureNativeStacks(w.pid, native_left)
                                    : NativeStacks{false,
                                                   "not taken: the 10 s budget for native stacks "
                                                   "went to the ranks before this one"};
    log.Write("stack",
              {{"rank", w.rank},
               {"pid", w.pid},
               {"state", std::string(1, ProcState(w.pid))},
               {"wchan", wchan},
               {"kernel_stack", kstack},
               {"native", native.ok ? json(native.text) : json(nullptr)},
               {"native_error", native.ok ? "" : native.text},
               {"python", py.empty() ? json(nullptr) : json(py)},
               {"note", py.empty() ? "no Python stack: is titan.client.init() called?" : ""}});
  }
}

}  // namespace titan::supervisor
