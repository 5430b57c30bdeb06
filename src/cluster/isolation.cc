#include "src/cluster/isolation.h"

#include <fmt/format.h>

#include "src/base/bounded_command.h"
#include "src/base/clock.h"
#include "src/cluster/slurm.h"

namespace titan::cluster {
namespace {

constexpr size_t kMaxOutputBytes = 2048;
constexpr std::string_view kPlaceholders[] = {"{node}", "{rank}", "{reason}", "{job}"};

// 'text' for /bin/sh: single quotes, each ' written as '\''.
std::string ShellQuote(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string Substitute(std::string_view text, const IsolationTarget& t, bool quote) {
  auto value = [&](std::string_view name) {
    std::string v = name == "{node}"     ? t.node
                    : name == "{rank}"   ? std::to_string(t.rank)
                    : name == "{reason}" ? t.reason
                                         : t.job;
    return quote ? ShellQuote(v) : v;
  };
  std::string out;
  size_t pos = 0;
  while (pos < text.size()) {
    bool replaced = false;
    if (text[pos] == '{') {
      for (std::string_view p : kPlaceholders) {
        if (text.substr(pos, p.size()) == p) {
          out += value(p);
          pos += p.size();
          replaced = true;
          break;
        }
      }
    }
    if (!replaced) out += text[pos++];
  }
  return out;
}

Status CheckPlaceholders(std::string_view spec, std::string_view command) {
  size_t pos = 0;
  while ((pos = command.find('{', pos)) != std::string_view::npos) {
    size_t close = command.find('}', pos);
    if (close == std::string_view::npos) break;
    std::string_view name = command.substr(pos, close - pos + 1);
    bool known = false;
    for (std::string_view p : kPlaceholders) known |= name == p;
    // Shell syntax is not ours: ${x}, or a brace group with a space or quote inside ({ a; }).
    bool word = (pos == 0 || command[pos - 1] != '$') &&
                name.find_first_of(" \t'\"$;") == std::string_view::npos;
    if (!known && word) {
      return InvalidArgumentError(fmt::format(
          "--on-isolate '{}': unknown placeholder {} (known: {{node}} {{rank}} {{reason}} {{job}})",
          spec, name));
    }
    pos = close + 1;
  }
  return OkStatus();
}

}  // namespace

Result<IsolationAction> ParseIsolationAction(std::string_view spec,
                                             const std::string& titan_binary) {
  IsolationAction a;
  a.spec = std::string(spec);
  if (spec == "slurm-drain") {
    a.name = "slurm-drain";
    a.argv = SlurmDrainCommand("{node}", "{reason}");
    return a;
  }
  if (spec == "k8s-cordon") {
    a.name = "k8s-cordon";
    a.argv = {titan_binary, "k8s", "cordon", "{node}", "--reason", "{reason}"};
    return a;
  }
  std::string_view command = spec.starts_with("exec:") ? spec.substr(5) : spec;
  while (!command.empty() && command.front() == ' ') command.remove_prefix(1);
  if (command.empty()) {
    return InvalidArgumentError(fmt::format(
        "--on-isolate '{}': empty; give slurm-drain, k8s-cordon or a command (exec:CMD) with "
        "{{node}} {{rank}} {{reason}} {{job}}",
        spec));
  }
  TITAN_RETURN_IF_ERROR(CheckPlaceholders(spec, command));
  a.name = "exec";
  a.argv = {"/bin/sh", "-c", std::string(command)};
  return a;
}

std::vector<std::string> ExpandIsolationAction(const IsolationAction& action,
                                               const IsolationTarget& target) {
  std::vector<std::string> argv;
  for (size_t i = 0; i < action.argv.size(); ++i) {
    // Only a shell command line needs quoting; built-ins pass each value as one argument.
    bool shell_line = action.name == "exec" && i == 2;
    argv.push_back(Substitute(action.argv[i], target, shell_line));
  }
  return argv;
}

IsolationRunner::IsolationRunner(IsolationRunnerOptions options) : options_(std::move(options)) {
  if (enabled()) thread_ = std::thread([this] { Loop(); });
}

IsolationRunner::~IsolationRunner() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void IsolationRunner::Submit(IsolationTarget target) {
  if (!enabled()) return;
  std::lock_guard<std::mutex> l(mu_);
  if (pending_.size() >= options_.max_pending) {
    for (const IsolationAction& a : options_.actions) {
      IsolationOutcome o;
      o.target = target;
      o.action = a.name;
      o.command = ExpandIsolationAction(a, target);
      o.result = fmt::format("dropped: {} isolations already waiting", pending_.size());
      finished_.push_back(std::move(o));
    }
    return;
  }
  pending_.push_back(std::move(target));
  cv_.notify_all();
}

std::vector<IsolationOutcome> IsolationRunner::TakeFinished() {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<IsolationOutcome> out;
  out.swap(finished_);
  return out;
}

bool IsolationRunner::WaitIdle(int64_t timeout_ns) {
  std::unique_lock<std::mutex> l(mu_);
  return cv_.wait_for(l, std::chrono::nanoseconds(timeout_ns),
                      [this] { return pending_.empty() && !busy_; });
}

void IsolationRunner::Loop() {
  std::unique_lock<std::mutex> l(mu_);
  while (true) {
    cv_.wait(l, [this] { return stop_ || !pending_.empty(); });
    if (stop_) return;  // what is still queued is not run: the caller waited (WaitIdle) first
    IsolationTarget target = std::move(pending_.front());
    pending_.pop_front();
    busy_ = true;
    for (const IsolationAction& action : options_.actions) {
      l.unlock();
      IsolationOutcome o = RunOne(action, target);
      l.lock();
      finished_.push_back(std::move(o));
    }
    busy_ = false;
    cv_.notify_all();
  }
}

IsolationOutcome IsolationRunner::RunOne(const IsolationAction& action,
                                         const IsolationTarget& target) const {
  IsolationOutcome o;
  o.target = target;
  o.action = action.name;
  o.command = ExpandIsolationAction(action, target);
  o.dry_run = options_.dry_run;
  if (options_.dry_run) {
    o.ok = true;
    o.result = "dry run: not run";
    return o;
  }
  BoundedCommandResult r = RunBoundedCommand(o.command, options_.timeout_ns, kMaxOutputBytes);
  o.ok = r.ok();
  o.result = r.Describe();
  o.output = std::move(r.output);
  o.elapsed_ns = r.elapsed_ns;
  return o;
}

}  // namespace titan::cluster
