// `titan demo`: the end-to-end demonstration (the README's first command).
//
// 1. A fault-free reference: the tiny transformer LM of examples/train_tiny_lm.py trained with
//    PyTorch DDP (gloo, CPU) by 4 workers under one `titan run`.
// 2. The same job as 2 nodes x 2 workers: two `titan run` processes on loopback that meet
//    through a real etcd started here (temporary data dir; single-node mode with a note when
//    /usr/bin/etcd is absent), with a straggler, a crash and a hang injected. titan detects each,
//    captures the hung worker's stack, restarts from the newest titan checkpoint and finishes.
// 3. A summary: timeline of transients and decisions, goodput ledger, final loss against the
//    reference, and where the event logs and the Perfetto trace are.
#include "src/demo/demo_command.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "src/base/atomic_file.h"
#include "src/base/clock.h"
#include "src/base/command_line.h"
#include "src/base/env.h"
#include "src/base/goodput_category.h"
#include "src/base/json_text.h"
#include "src/http/client.h"
#include "src/report/report.h"
#include "src/supervisor/rendezvous.h"

#ifndef TITAN_SOURCE_DIR
#define TITAN_SOURCE_DIR "."
#endif
#ifndef TITAN_BINARY_DIR
#define TITAN_BINARY_DIR "."
#endif

namespace titan {
namespace {

using nlohmann::json;

// A child process that dies with us (PDEATHSIG) and in its own process group.
pid_t Start(const std::vector<std::string>& argv, const std::string& log_path,
            const std::vector<std::string>& extra_env) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid != 0) return pid;
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);
  int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd >= 0) {
    ::dup2(fd, 1);
    ::dup2(fd, 2);
  }
  for (const std::string& kv : extra_env) ::putenv(const_cast<char*>(kv.c_str()));
  ::execvp(args[0], args.data());
  ::_exit(127);
}

int Wait(pid_t pid) {
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

void Kill(pid_t pid) {
  ::kill(-pid, SIGKILL);
  ::kill(pid, SIGKILL);
  Wait(pid);
}

std::string Self() {
  auto p = std::filesystem::read_symlink("/proc/self/exe");
  return p.string();
}

struct DemoFiles {
  std::string example;     // the training script
  std::string pythonpath;  // the directory holding the `titan` Python package
};

// An installed titan (PREFIX/bin/titan) finds its files under PREFIX; one run from a build tree
// finds them in the source and build trees it was built from.
DemoFiles LocateDemoFiles(const std::string& self) {
  const std::filesystem::path prefix = std::filesystem::path(self).parent_path().parent_path();
  const std::filesystem::path installed =
      prefix / TITAN_INSTALL_DATADIR / "examples" / "train_tiny_lm.py";
  std::error_code ec;
  if (std::filesystem::is_regular_file(installed, ec)) {
    return {installed.string(), (prefix / TITAN_INSTALL_PYTHONDIR).string()};
  }
  return {std::string(TITAN_SOURCE_DIR) + "/examples/train_tiny_lm.py",
          std::string(TITAN_BINARY_DIR) + "/python"};
}

std::vector<json> ReadEvents(const std::string& path) {
  std::vector<json> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    json j = json::parse(line, nullptr, false);
    if (j.is_object()) out.push_back(std::move(j));
  }
  return out;
}

json ReadJson(const std::string& path) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  json j = json::parse(text, nullptr, false);
  return j.is_discarded() ? json() : j;
}

// Saves the agent's whole flight recorder (GET /recorder on the port its log names) as
// OUT/agent-recorder.json for the report; returns a line for the file list, or why not.
std::string SaveAgentRecorder(const std::string& out_dir) {
  const std::string log = Env::ReadFile(out_dir + "/agent.log", 64 << 20).value_or("");
  const std::string marker = "listening on http://127.0.0.1:";
  const size_t at = log.find(marker);
  if (at == std::string::npos) return "agent recorder: not saved (the agent never listened)";
  const int port = std::atoi(log.c_str() + at + marker.size());
  http::OutgoingRequest request;
  request.method = "GET";
  request.target = "/recorder?last=10m";
  // The agent's whole recorder as JSON: about 3x --recorder-memory-mb (512 by default).
  auto res = http::Fetch(http::Url{"127.0.0.1", port, ""}, std::move(request), 60 * kNsPerSecond,
                         size_t{2} << 30);
  if (!res.ok() || res->status != 200) return "agent recorder: not saved (GET /recorder failed)";
  const std::string path = out_dir + "/agent-recorder.json";
  if (Status s = WriteFileAtomically(path, res->body); !s.ok()) {
    return "agent recorder: not saved: " + std::string(s.message());
  }
  return "agent recorder: " + path + " (every signal the agent sampled, on the same clock)";
}

}  // namespace

int StragglerNamedIn(std::string_view summary, std::string* claim) {
  constexpr std::string_view kClaim = "a straggler", kDenied = "not ";
  for (size_t at = summary.find(kClaim); at != std::string_view::npos;
       at = summary.find(kClaim, at + 1)) {
    if (at >= kDenied.size() && summary.substr(at - kDenied.size(), kDenied.size()) == kDenied) {
      continue;
    }
    const size_t rank_at = summary.rfind("rank ", at);
    if (rank_at == std::string_view::npos) continue;
    *claim = std::string(summary.substr(0, at + kClaim.size()));
    return std::atoi(std::string(summary.substr(rank_at + 5, 8)).c_str());
  }
  return -1;
}

namespace {

// What titan agent said of the straggler: the first transient that names "a straggler" and a rank
// ("rank 3 late against its peers ... a straggler holding the others"); rank -1 and an empty text
// when it said none (or could not be asked). The agent explains a transient 2 s after detecting
// it (GroupingOptions::hold_ns), and the slowdown ends a fraction of a second before the job does:
// the events are asked again for up to 5 s before "none" is the answer.
std::pair<int, std::string> AgentStraggler(const std::string& out_dir) {
  const std::string log = Env::ReadFile(out_dir + "/agent.log", 64 << 20).value_or("");
  const std::string marker = "listening on http://127.0.0.1:";
  const size_t at = log.find(marker);
  if (at == std::string::npos) return {-1, ""};
  const int port = std::atoi(log.c_str() + at + marker.size());
  const int64_t deadline = MonoNowNs() + 5 * kNsPerSecond;
  for (;;) {
    http::OutgoingRequest request;
    request.method = "GET";
    request.target = "/events?limit=10000";
    auto res = http::Fetch(http::Url{"127.0.0.1", port, ""}, std::move(request), 10 * kNsPerSecond,
                           size_t{64} << 20);
    if (!res.ok() || res->status != 200) return {-1, ""};
    json events = json::parse(res->body, nullptr, false);
    if (!events.is_array()) return {-1, ""};
    for (const json& e : events) {
      std::string claim;
      const int rank = StragglerNamedIn(e.value("summary", ""), &claim);
      if (rank >= 0) return {rank, claim};
    }
    if (MonoNowNs() >= deadline) return {-1, ""};
    ::usleep(250'000);
  }
}

// One line of the timeline for an event, or "" if it is not a transient or a decision.
std::string Describe(const json& e) {
  std::string type = e.value("type", "");
  if (type == "rendezvous") {
    return fmt::format("generation {} formed: {} node(s), world size {}", e.value("generation", 0),
                       e.value("nnodes", 0), e.value("world_size", 0));
  }
  if (type == "inject") {
    if (e.value("kind", "") == "slow-end")
      return fmt::format("slowdown of rank {} ends", e.value("rank", -1));
    return fmt::format("INJECTED {} on rank {} at step {}", e.value("kind", ""),
                       e.value("rank", -1), e.value("step", -1));
  }
  if (type == "crash") {
    std::string lat = e.contains("detection_ms")
                          ? fmt::format(", detected in {:.0f} ms", e["detection_ms"].get<double>())
                          : "";
    return fmt::format("DETECTED crash: rank {} {}{}", e.value("rank", -1), e.value("status", ""),
                       lat);
  }
  if (type == "hang") {
    return fmt::format(
        "DETECTED hang: rank {} silent {:.1f} s > bound {:.1f} s (max(k x p99 step, floor))",
        e.value("rank", -1), e.value("silent_s", 0.0), e.value("threshold_s", 0.0));
  }
  if (type == "stack") {
    std::string py = e["python"].is_string() ? e["python"].get<std::string>() : "";
    size_t at = py.find("train_tiny_lm.py");
    std::string where = "no Python stack";
    if (at != std::string::npos) {
      size_t start = py.rfind('\n', at);
      size_t end = py.find('\n', at);
      where = py.substr(start == std::string::npos ? 0 : start + 1,
                        end == std::string::npos ? std::string::npos : end - start - 1);
      while (!where.empty() && where.front() == ' ') where.erase(0, 1);
    }
    return fmt::format("  stack of rank {} (state {}): {}", e.value("rank", -1),
                       e.value("state", "?"), where);
  }
  if (type == "straggler") {
    return fmt::format("DETECTED straggler: rank {} computes in {:.0f} ms vs peers {:.0f} ms -> {}",
                       e.value("rank", -1), e.value("median_compute_ms", 0.0),
                       e.value("peers_median_ms", 0.0), e.value("action", "report"));
  }
  if (type == "decision") {
    if (e.contains("claimed")) {
      return fmt::format("decision: {} ({}){}", e.value("action", ""), e.value("detail", ""),
                         e.value("claimed", false) ? "" : " - following the node that saw it");
    }
    return fmt::format("decision: {} (requested by {}: {})", e.value("action", ""),
                       e.value("by", ""), e.value("reason", ""));
  }
  if (type == "restart") {
    return fmt::format("restarted as generation {}: {:.0f} ms from detection to workers exec'd",
                       e.value("generation", 0), e.value("detect_to_exec_ms", 0.0));
  }
  if (type == "exclude")
    return fmt::format("EXCLUDED node {}: {}", e.value("node", ""), e.value("reason", ""));
  if (type == "lost") return fmt::format("DETECTED lost node(s) {}", e["nodes"].dump());
  if (type == "finish") return fmt::format("finished: {}", e.value("reason", ""));
  return "";
}

// Chrome trace-event JSON (opens in https://ui.perfetto.dev): one track per node, a slice per
// generation, instants for every detection and decision.
Status WriteTrace(const std::string& path,
                  const std::vector<std::pair<std::string, std::vector<json>>>& nodes) {
  json trace = json::array();
  int pid = 1;
  for (const auto& [name, events] : nodes) {
    trace.push_back(
        {{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"args", {{"name", name}}}});
    int64_t gen_start = -1;
    int64_t gen = 0;
    for (const json& e : events) {
      int64_t ts_us = e.value("time_ns", int64_t{0}) / 1000;
      std::string type = e.value("type", "");
      if (type == "spawn") {
        gen_start = ts_us;
        gen = e.value("generation", int64_t{0});
      } else if ((type == "stopped" || type == "finish" || type == "ledger") && gen_start >= 0) {
        trace.push_back({{"ph", "X"},
                         {"name", fmt::format("generation {}", gen)},
                         {"pid", pid},
                         {"tid", 1},
                         {"ts", gen_start},
                         {"dur", std::max<int64_t>(ts_us - gen_start, 1)}});
        gen_start = -1;
      }
      std::string text = Describe(e);
      if (!text.empty() && type != "rendezvous") {
        trace.push_back({{"ph", "i"},
                         {"s", "p"},
                         {"name", text},
                         {"pid", pid},
                         {"tid", 2},
                         {"ts", ts_us},
                         {"args", e}});
      }
    }
    ++pid;
  }
  return WriteFileAtomically(path,
                             JsonText(json({{"traceEvents", trace}, {"displayTimeUnit", "ms"}})));
}

}  // namespace

int DemoCommand(int argc, char** argv) {
  CLI::App app{
      "The titan demo: PyTorch DDP training as 2 nodes x 2 workers under `titan run`, "
      "with a straggler, a crash and a hang injected and recovered; prints the "
      "timeline, the goodput ledger and the final loss against a fault-free run.",
      "titan demo"};
  std::string out_dir = fmt::format("/tmp/titan-demo-{}", ::getpid());
  std::string python = "/usr/bin/python3";
  const std::string self = Self();
  DemoFiles files = LocateDemoFiles(self);
  std::string etcd_bin = "/usr/bin/etcd";
  int steps = 160;
  bool with_agent = false;
  app.add_option("--out-dir", out_dir, "where logs, ledgers and the trace go");
  app.add_option("--python", python, "interpreter with PyTorch");
  app.add_option("--example", files.example, "the training script");
  app.add_option("--pythonpath", files.pythonpath, "where the titan Python package is");
  app.add_option("--etcd-binary", etcd_bin, "etcd server binary (absent: single-node mode)");
  app.add_option("--steps", steps, "training steps")->check(CLI::Range(60, 100000));
  app.add_flag("--with-agent", with_agent, "also start `titan agent` and send it the step events");
  if (std::optional<int> done = ParseCommandLine(app, argc, argv)) return *done;
  for (const std::string& f : {python, files.example}) {
    if (::access(f.c_str(), R_OK) != 0) {
      std::fprintf(stderr, "titan demo: %s not found (see --python / --example)\n", f.c_str());
      return 1;
    }
  }
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) {
    std::fprintf(stderr, "titan demo: cannot create %s: %s\n", out_dir.c_str(),
                 ec.message().c_str());
    return 1;
  }
  const std::vector<std::string> env = {"PYTHONPATH=" + files.pythonpath};
  const int64_t t0 = MonoNowNs();
  auto elapsed = [&] { return NsToSeconds(MonoNowNs() - t0); };
  const std::string train_args_steps = std::to_string(steps);
  auto train = [&](const std::string& out) {
    return std::vector<std::string>{
        "--",    python, files.example, "--steps", train_args_steps, "--ckpt-every", "20",
        "--dim", "48",   "--out",       out};
  };
  std::printf(
      "titan demo: PyTorch DDP (gloo, CPU) training a tiny transformer LM, %d steps, 4 workers\n",
      steps);
  std::printf("  output directory: %s\n\n", out_dir.c_str());

  // Optional: titan agent watching the same events (the lead wires it in by default later).
  pid_t agent = -1;
  std::string agent_socket;
  if (with_agent) {
    agent_socket = out_dir + "/agent.sock";
    agent =
        Start({self, "agent", "--socket", agent_socket, "--port", "0"}, out_dir + "/agent.log", {});
  }
  std::vector<std::string> worker_env = env;
  if (!agent_socket.empty()) worker_env.push_back("TITAN_AGENT_SOCKET=" + agent_socket);

  // etcd, when installed: the nodes meet through it.
  pid_t etcd = -1;
  std::string etcd_url;
  if (::access(etcd_bin.c_str(), X_OK) == 0) {
    int client = supervisor::PickFreePort(), peer = supervisor::PickFreePort();
    etcd_url = fmt::format("http://127.0.0.1:{}", client);
    std::string peer_url = fmt::format("http://127.0.0.1:{}", peer);
    etcd = Start(
        {etcd_bin, "--name", "demo", "--data-dir", out_dir + "/etcd-data", "--listen-client-urls",
         etcd_url, "--advertise-client-urls", etcd_url, "--listen-peer-urls", peer_url,
         "--initial-advertise-peer-urls", peer_url, "--initial-cluster", "demo=" + peer_url},
        out_dir + "/etcd.log", {});
    ::usleep(500'000);
  } else {
    std::printf(
        "note: %s not found (Debian package etcd-server): running one node with 4 "
        "workers instead of 2 nodes x 2 through etcd\n\n",
        etcd_bin.c_str());
  }
  const bool multi = etcd > 0;
  const std::string shape =
      multi ? "2 nodes x 2 workers (two `titan run` on loopback, etcd " + etcd_url + ")"
            : std::string("1 node x 4 workers");
  struct Node {
    std::string name, dir;
    pid_t pid = -1;
    int rc = -1;
  };
  // Runs the job (every node) to its end; `dir` gets one subdirectory per node.
  auto run_job = [&](const std::string& job, const std::string& dir,
                     const std::vector<std::string>& injections) {
    std::vector<Node> nodes;
    for (int n = 0; n < (multi ? 2 : 1); ++n) {
      Node node;
      node.name = fmt::format("node-{}", static_cast<char>('a' + n));
      node.dir = dir + "/" + node.name;
      std::filesystem::create_directories(node.dir, ec);
      std::vector<std::string> cmd = {self,
                                      "run",
                                      "--quiet",
                                      "--job-id",
                                      job,
                                      "--node-id",
                                      node.name,
                                      "--run-dir",
                                      node.dir,
                                      "--checkpoint-dir",
                                      dir + "/ckpt",
                                      "--hang-floor",
                                      "3",
                                      "--failure-grace",
                                      "1",
                                      "--seed",
                                      "7"};
      if (multi) {
        for (const char* a : {"--nnodes", "2", "--nproc-per-node", "2", "--node-addr", "127.0.0.1",
                              "--lease-ttl", "3", "--last-call", "5"}) {
          cmd.emplace_back(a);
        }
        cmd.push_back("--etcd");
        cmd.push_back(etcd_url);
      } else {
        cmd.push_back("--nproc-per-node");
        cmd.push_back("4");
      }
      for (const std::string& inj : injections) {
        cmd.push_back("--inject");
        cmd.push_back(inj);
      }
      for (const std::string& a : train(dir + "/result.json")) cmd.push_back(a);
      node.pid = Start(cmd, node.dir + "/titan.log", worker_env);
      nodes.push_back(node);
    }
    for (Node& node : nodes) node.rc = Wait(node.pid);
    return nodes;
  };

  // 1. Reference.
  std::printf("[1/2] fault-free run: %s ...\n", shape.c_str());
  std::fflush(stdout);
  std::string ref_dir = out_dir + "/reference";
  std::vector<Node> ref_nodes = run_job("reference", ref_dir, {});
  json ref_result = ReadJson(ref_dir + "/result.json");
  if (ref_nodes[0].rc != 0 || !ref_result.is_object()) {
    std::fprintf(stderr, "titan demo: the fault-free run failed (exit %d); see %s/titan.log\n",
                 ref_nodes[0].rc, ref_nodes[0].dir.c_str());
    if (etcd > 0) Kill(etcd);
    if (agent > 0) Kill(agent);
    return 1;
  }
  std::printf("      done at %.0f s: held-out loss %.6f\n\n", elapsed(),
              ref_result["final_loss"].get<double>());

  // 2. The same job with faults.
  const std::vector<std::string> injections = {
      "slow@rank=3,factor=8,step=10,steps=50",  // a straggler for 50 steps
      fmt::format("crash@rank=1,step={}", steps * 2 / 5),
      fmt::format("hang@rank=2,step={}", steps * 3 / 4)};
  std::printf("[2/2] the same job with faults injected:\n      %s\n",
              fmt::format("{}", fmt::join(injections, "  ")).c_str());
  std::fflush(stdout);
  std::vector<Node> nodes = run_job("faulty", out_dir + "/faulty", injections);
  if (etcd > 0) Kill(etcd);
  std::string recorder_note;
  std::pair<int, std::string> agent_straggler{-1, ""};
  if (agent > 0) {
    agent_straggler = AgentStraggler(out_dir);
    recorder_note = SaveAgentRecorder(out_dir);
    Kill(agent);
  }
  double total_s = elapsed();

  // 3. Summary.
  std::vector<std::pair<std::string, std::vector<json>>> logs;
  std::vector<std::pair<int64_t, std::string>> lines;
  int64_t first_ns = INT64_MAX;
  for (const Node& node : nodes) {
    logs.emplace_back(node.name, ReadEvents(node.dir + "/events.jsonl"));
    for (const json& e : logs.back().second)
      first_ns = std::min(first_ns, e.value("time_ns", INT64_MAX));
  }
  for (const auto& [name, events] : logs) {
    for (const json& e : events) {
      std::string text = Describe(e);
      if (text.empty()) continue;
      if (e.value("type", "") == "rendezvous" && e.value("group_rank", 0) != 0) continue;  // once
      lines.emplace_back(
          e.value("time_ns", int64_t{0}),
          fmt::format("{:>7.1f}s  {:<7} {}", NsToSeconds(e.value("time_ns", int64_t{0}) - first_ns),
                      name, text));
    }
  }
  std::stable_sort(lines.begin(), lines.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::printf("\ntimeline of transients and decisions (seconds since the job started):\n");
  for (const auto& [t, line] : lines) std::printf("%s\n", line.c_str());
  // One verdict on the straggler: titan run's (per-rank median compute marks against the peers')
  // and the agent's (the same marks, scored by each step's lateness against the peers' spread)
  // must name the same rank.
  // The first straggler titan run found, by time: the nodes' logs are read one after another, and
  // a rank that the straggler's slowdown itself slows later (they share the CPUs) is not it.
  const json* run_straggler = nullptr;
  for (const auto& [name, events] : logs) {
    for (const json& e : events) {
      if (e.value("type", "") == "straggler" &&
          (run_straggler == nullptr ||
           e.value("time_ns", INT64_MAX) < run_straggler->value("time_ns", INT64_MAX))) {
        run_straggler = &e;
      }
    }
  }
  if (run_straggler != nullptr) {
    const int rank = run_straggler->value("rank", -1);
    std::string agent_part;
    if (agent_straggler.first == rank) {
      agent_part = fmt::format("titan agent agrees ({})", agent_straggler.second);
    } else if (agent_straggler.first >= 0) {
      agent_part = fmt::format("but titan agent named rank {}: {}", agent_straggler.first,
                               agent_straggler.second);
    } else {
      agent_part = "titan agent named no straggler";
    }
    std::printf(
        "\nverdict: rank %d is the straggler: it computes in %.0f ms where its peers take "
        "%.0f ms (titan run); %s\n",
        rank, run_straggler->value("median_compute_ms", 0.0),
        run_straggler->value("peers_median_ms", 0.0), agent_part.c_str());
  }

  json ledger = ReadJson(nodes[0].dir + "/ledger.json");
  if (ledger.is_object()) {
    std::printf("\ngoodput ledger (%s; wall time of the faulty run split by where it went):\n",
                nodes[0].name.c_str());
    double wall = ledger["wall_seconds"].get<double>();
    for (const char* c : kGoodputCategoryNames) {
      if (c == GoodputCategoryName(GoodputCategory::kDegraded)) continue;  // titan sim's only
      double s = ledger["seconds"].value(c, 0.0);
      std::printf("  %-11s %8.1f s %6.1f%%\n", c, s, wall > 0 ? 100 * s / wall : 0);
    }
    std::printf("  %-11s %8.1f s\n  ETTR = productive / wall = %.3f   restarts: %d\n", "wall", wall,
                ledger.value("ettr", 0.0), ledger.value("restarts", 0));
  }
  json result = ReadJson(out_dir + "/faulty/result.json");
  bool ok = true;
  for (const Node& node : nodes) ok &= node.rc == 0;
  std::printf("\nresult:\n");
  if (result.is_object()) {
    double a = result["final_loss"].get<double>(), b = ref_result["final_loss"].get<double>();
    bool same_params = result.value("param_sha256", "") == ref_result.value("param_sha256", "");
    double rel = b != 0 ? std::fabs(a - b) / std::fabs(b) : std::fabs(a - b);
    // Bit-identical at 2 ranks; at 4 ranks the all-reduce summation order may differ between
    // a first and a restarted generation (floating-point addition is not associative).
    const char* verdict = a == b       ? "EQUAL (bit-identical)"
                          : rel < 1e-4 ? "EQUAL within 1e-4 (all-reduce summation order)"
                                       : "DIFFERENT";
    std::printf("  final held-out loss %.6f, fault-free run %.6f: %s\n", a, b, verdict);
    std::printf("  parameters %s the fault-free run's (sha256 %s)\n",
                same_params ? "bit-identical to" : "differ slightly from",
                result.value("param_sha256", "").substr(0, 16).c_str());
    ok &= rel < 1e-4;
  } else {
    std::printf("  no result: the faulty run did not finish (exit codes:");
    for (const Node& node : nodes) std::printf(" %s=%d", node.name.c_str(), node.rc);
    std::printf(")\n");
    ok = false;
  }
  std::string trace = out_dir + "/demo_trace.json";
  if (Status written = WriteTrace(trace, logs); !written.ok()) {
    std::fprintf(stderr, "titan demo: writing the Perfetto trace: %s\n",
                 std::string(written.message()).c_str());
    ok = false;
  }
  std::printf("\nfiles:\n");
  for (const Node& node : nodes) {
    std::printf("  %s event log: %s/events.jsonl   ledger: %s/ledger.json   log: %s/titan.log\n",
                node.name.c_str(), node.dir.c_str(), node.dir.c_str(), node.dir.c_str());
  }
  std::printf("  Perfetto trace: %s (open https://ui.perfetto.dev and drop the file in)\n",
              trace.c_str());
  if (!recorder_note.empty()) std::printf("  %s\n", recorder_note.c_str());
  const std::string report_path = out_dir + "/report.html";
  Result<report::Written> report =
      report::WriteReportFromPaths({out_dir}, report_path, "titan demo");
  if (report.ok()) {
    std::printf("  report: %s (one page with every plot; open it in a browser)\n",
                report_path.c_str());
  } else {
    std::printf("  report: not written: %s\n", std::string(report.status().message()).c_str());
    ok = false;
  }
  std::printf("\ntitan demo %s in %.0f s\n", ok ? "succeeded" : "FAILED", total_s);
  return ok ? 0 : 1;
}

}  // namespace titan
