// ReplicaLauncher with real processes: small shell commands play the replicas. Waits poll for a
// condition with a generous deadline; no test depends on how fast the machine is. The cgroup
// memory.max detection runs on fixed cgroup texts, and on the real machine where it allows it.
#include "src/gateway/replica_launcher.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <functional>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "src/base/clock.h"
#include "src/base/env.h"
#include "src/supervisor/job_cgroup.h"

namespace titan::gateway {
namespace {

using supervisor::JobCgroup;

// Polls `condition` every 10 ms for up to `seconds`.
bool Eventually(const std::function<bool()>& condition, int seconds = 20) {
  const int64_t deadline = MonoNowNs() + seconds * kNsPerSecond;
  while (MonoNowNs() < deadline) {
    if (condition()) return true;
    usleep(10'000);
  }
  return condition();
}

// Alive and not a zombie.
bool Alive(pid_t pid) {
  if (pid <= 0) return false;
  auto stat = Env::ReadFile("/proc/" + std::to_string(pid) + "/stat");
  if (!stat.ok()) return false;
  const size_t close = stat->rfind(')');
  return close != std::string::npos && stat->size() > close + 2 && (*stat)[close + 2] != 'Z';
}

// Live (non-zombie) processes in process group `pgid`, from /proc.
int LiveInGroup(pid_t pgid) {
  int n = 0;
  auto dir = Env::ListDir("/proc");
  if (!dir.ok()) return -1;
  for (const std::string& name : *dir) {
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    auto stat = Env::ReadFile("/proc/" + name + "/stat");
    if (!stat.ok()) continue;
    const size_t close = stat->rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    int ppid = 0, pg = 0;
    if (sscanf(stat->c_str() + close + 1, " %c %d %d", &state, &ppid, &pg) == 3 && pg == pgid &&
        state != 'Z') {
      ++n;
    }
  }
  return n;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/titan-launcher-test-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { (void)system(("rm -rf '" + path_ + "'").c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Collects the launcher's events (the listener runs on the launcher's thread).
class Events {
 public:
  ReplicaLauncher::Listener listener() {
    return [this](const ReplicaProcessEvent& e) {
      std::lock_guard<std::mutex> lock(mu_);
      events_.push_back(e);
    };
  }
  std::vector<ReplicaProcessEvent> Of(int index, const std::string& type) const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<ReplicaProcessEvent> out;
    for (const auto& e : events_) {
      if (e.index == index && e.type == type) out.push_back(e);
    }
    return out;
  }
  size_t Count(int index, const std::string& type) const { return Of(index, type).size(); }
  std::string Dump() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::string out;
    for (const auto& e : events_) {
      out += std::to_string(e.index) + " " + e.type + " port=" + std::to_string(e.port) +
             " pid=" + std::to_string(e.pid) + " " + e.detail + "\n";
    }
    return out;
  }

 private:
  mutable std::mutex mu_;
  std::vector<ReplicaProcessEvent> events_;
};

LaunchOptions Options(std::string command, int replicas = 1) {
  LaunchOptions o;
  o.command = std::move(command);
  o.replicas = replicas;
  o.restart_initial_backoff_ns = 200 * kNsPerMs;
  o.restart_max_backoff_ns = 2 * kNsPerSecond;
  o.stop_grace_ns = 5 * kNsPerSecond;
  return o;
}

TEST(ReplicaLauncherHelpersTest, SubstitutesEveryPlaceholder) {
  EXPECT_EQ(SubstituteCommand("srv --port {port} --id {index} # {port}", 8001, 2),
            "srv --port 8001 --id 2 # 8001");
  EXPECT_EQ(SubstituteCommand("{port}{index}{ports}", 1, 0), "10{ports}");
}

TEST(ReplicaLauncherHelpersTest, BackoffDoublesUpToTheMaximum) {
  const int64_t s = kNsPerSecond;
  EXPECT_EQ(BackoffForCrash(1, s, 30 * s), s);
  EXPECT_EQ(BackoffForCrash(2, s, 30 * s), 2 * s);
  EXPECT_EQ(BackoffForCrash(5, s, 30 * s), 16 * s);
  EXPECT_EQ(BackoffForCrash(6, s, 30 * s), 30 * s);
  EXPECT_EQ(BackoffForCrash(1000, s, 30 * s), 30 * s);
  EXPECT_EQ(DescribeBackoff(2 * s), "in 2s");
  EXPECT_EQ(DescribeBackoff(250 * kNsPerMs), "in 250ms");
  EXPECT_EQ(DescribeBackoff(1500 * kNsPerMs), "in 1.5s");
}

TEST(ReplicaLauncherTest, RejectsACommandWithoutPortAndBadOptions) {
  auto no_port = ReplicaLauncher::Start(Options("llama-server -m m.gguf"), nullptr);
  ASSERT_FALSE(no_port.ok());
  EXPECT_EQ(no_port.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(no_port.status().message().find("has no {port}"), std::string::npos)
      << no_port.status().ToString();
  auto zero = ReplicaLauncher::Start(Options("sleep 1 # {port}", 0), nullptr);
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.status().code(), StatusCode::kInvalidArgument);
  LaunchOptions ports = Options("sleep 1 # {port}", 2);
  ports.ports = {9000};
  EXPECT_EQ(ReplicaLauncher::Start(ports, nullptr).status().code(), StatusCode::kInvalidArgument);
  ports.ports = {9000, 9000};
  EXPECT_EQ(ReplicaLauncher::Start(ports, nullptr).status().code(), StatusCode::kInvalidArgument);
}

TEST(ReplicaLauncherTest, PortsAreDistinctAndSubstituted) {
  TempDir dir;
  Events events;
  auto launcher = ReplicaLauncher::Start(
      Options("echo {port} {index} $TITAN_REPLICA_PORT $TITAN_REPLICA_INDEX > " + dir.path() +
                  "/out-{index}.tmp && mv " + dir.path() + "/out-{index}.tmp " + dir.path() +
                  "/out-{index}; exec sleep 1000",
              3),
      events.listener());
  ASSERT_TRUE(launcher.ok()) << launcher.status().ToString();
  ReplicaLauncher& l = **launcher;
  ASSERT_EQ(l.replicas(), 3);
  std::set<int> ports;
  const std::vector<std::string> urls = l.urls();
  ASSERT_EQ(urls.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    const int port = l.port(i);
    EXPECT_GT(port, 0);
    ports.insert(port);
    EXPECT_EQ(urls[i], "http://127.0.0.1:" + std::to_string(port));
    EXPECT_GT(l.pid(i), 0);
    EXPECT_EQ(l.restarts(i), 0);
    ASSERT_EQ(events.Count(i, "spawned"), 1u) << events.Dump();  // before Start returned
    EXPECT_EQ(events.Of(i, "spawned")[0].port, port);
    EXPECT_EQ(events.Of(i, "spawned")[0].pid, l.pid(i));
    const std::string out = dir.path() + "/out-" + std::to_string(i);
    ASSERT_TRUE(Eventually([&] { return !ReadAll(out).empty(); })) << out;
    const std::string p = std::to_string(port), n = std::to_string(i);
    EXPECT_EQ(ReadAll(out), p + " " + n + " " + p + " " + n + "\n");
  }
  EXPECT_EQ(ports.size(), 3u);
  EXPECT_EQ(l.pid(3), -1);
  EXPECT_EQ(l.port(-1), 0);
}

TEST(ReplicaLauncherTest, GivenPortsAreUsed) {
  LaunchOptions o = Options("exec sleep 1000 # {port}", 2);
  o.ports = {18231, 18232};
  o.host = "::1";
  auto launcher = ReplicaLauncher::Start(o, nullptr);
  ASSERT_TRUE(launcher.ok()) << launcher.status().ToString();
  EXPECT_EQ((*launcher)->urls(),
            (std::vector<std::string>{"http://[::1]:18231", "http://[::1]:18232"}));
}

// A real HTTP server as the replica: it listens on the port the launcher picked.
TEST(ReplicaLauncherTest, AnHttpServerReplicaListensOnItsPort) {
  if (system("python3 -c 'import http.server' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "no python3 here";
  }
  TempDir dir;
  LaunchOptions o = Options("exec python3 -m http.server {port} --bind 127.0.0.1");
  o.log_dir = dir.path();
  auto launcher = ReplicaLauncher::Start(o, nullptr);
  ASSERT_TRUE(launcher.ok()) << launcher.status().ToString();
  const int port = (*launcher)->port(0);
  auto connects = [&] {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr = {};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    close(fd);
    return ok;
  };
  EXPECT_TRUE(Eventually(connects, 60))
      << "nothing listens on " << port << "; log: " << ReadAll(dir.path() + "/replica-0.log");
  const int pid = (*launcher)->pid(0);
  (*launcher)->Stop();
  EXPECT_FALSE(Alive(pid));
  EXPECT_TRUE(Eventually([&] { return !connects(); }));
}

TEST(ReplicaLauncherTest, ASigkilledReplicaIsRestartedOnItsPortAfterABackoff) {
  Events events;
  auto launcher = ReplicaLauncher::Start(Options("exec sleep 1000 # {port}", 2), events.listener());
  ASSERT_TRUE(launcher.ok()) << launcher.status().ToString();
  ReplicaLauncher& l = **launcher;
  const int old_pid = l.pid(0), other_pid = l.pid(1), port = l.port(0);
  ASSERT_EQ(kill(old_pid, SIGKILL), 0);
  ASSERT_TRUE(Eventually([&] { return l.restarts(0) == 1 && l.pid(0) > 0; })) << events.Dump();
  EXPECT_NE(l.pid(0), old_pid);
  EXPECT_TRUE(Alive(l.pid(0)));
  EXPECT_FALSE(Alive(old_pid));
  EXPECT_EQ(l.port(0), port);
  EXPECT_EQ(l.pid(1), other_pid);  // the other replica is untouched
  EXPECT_EQ(l.restarts(1), 0);
  const auto exited = events.Of(0, "exited");
  ASSERT_EQ(exited.size(), 1u) << events.Dump();
  EXPECT_EQ(exited[0].pid, old_pid);
  EXPECT_EQ(exited[0].detail, "signal 9 (Killed)");
  const auto scheduled = events.Of(0, "restart_scheduled");
  ASSERT_EQ(scheduled.size(), 1u);
  EXPECT_EQ(scheduled[0].detail, "in 200ms");
  const auto spawned = events.Of(0, "spawned");
  ASSERT_EQ(spawned.size(), 2u);
  EXPECT_EQ(spawned[1].port, port);
  EXPECT_EQ(spawned[1].pid, l.pid(0));
  EXPECT_EQ(spawned[1].detail, "restart 1");
  EXPECT_GE(spawned[1].mono_ns - exited[0].mono_ns, 200 * kNsPerMs);
}

TEST(ReplicaLauncherTest, KillRestartsTheReplicaLikeACrash) {
  Events events;
  auto launcher = ReplicaLauncher::Start(Options("exec sleep 1000 # {port}"), events.listener());
  ASSERT_TRUE(launcher.ok()) << launcher.status().ToString();
  ReplicaLauncher& l = **launcher;
  const int old_pid = l.pid(0);
  l.Kill(0);
  ASSERT_TRUE(Eventually([&] { return l.restarts(0) == 1 && l.pid(0) > 0; })) << events.Dump();
  EXPECT_FALSE(Alive(old_pid));
  const auto exited = events.Of(0, "exited");
  ASSERT_EQ(exited.size(), 1u) << events.Dump();
  EXPECT_EQ(exited[0].detail, "signal 9 (Killed); killed by Kill()");
  l.Kill(7);  // out of range: nothing
}

TEST(ReplicaLauncherTest, AReplicaThatKeepsExitingBacksOffExponentially) {
  Events events;
  LaunchOptions o = Options("exit 1 # {port}");
  o.restart_initial_backoff_ns = 50 * kNsPerMs;
  o.restart_max_backoff_ns = 200 * kNsPerMs;
  auto launcher = ReplicaLauncher::Start(o, events.listener());
  ASSERT_TRUE(launcher.ok()) << launcher.status().ToString();
  ReplicaLauncher& l = **launcher;
  ASSERT_TRUE(Eventually([&] { return events.Count(0, "restart_scheduled") >= 5; }))
      << events.Dump();
  l.Stop();
  const auto scheduled = events.Of(0, "restart_scheduled");
  const std::vector<std::string> expected = {"in 50ms", "in 100ms", "in 200ms", "in 200ms",
                                             "in 200ms"};
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(scheduled[i].detail, expected[i]);
  const auto exited = events.Of(0, "exited");
  ASSERT_GE(exited.size(), 5u);
  for (const auto& e : exited) EXPECT_EQ(e.detail, "exit code 1");
  // Each restart waited at least its back-off.
  const auto spawned = events.Of(0, "spawned");
  ASSERT_GE(spawned.size(), 4u);
  for (size_t i = 1; i < 4; ++i) {
    EXPECT_GE(spawned[i].mono_ns - exited[i - 1].mono_ns,
              BackoffForCrash(static_cast<int>(i), o.restart_initial_backoff_ns,
                              o.restart_max_backoff_ns));
  }
  EXPECT_GE(l.restarts(0), 4);
  EXPECT_EQ(l.pid(0), -1);
}

TEST(ReplicaLauncherTest, AReplicaThatStayedUpStartsItsBackoffAfresh) {
  Events events;
  LaunchOptions o = Options("sleep 0.3; exit 2 # {port}");
  o.restart_initial_backoff_ns = 50 * kNsPerMs;
  o.restart_reset_after_ns = 100 * kNsPerMs;  // every run counts as having stayed up
  auto launcher = ReplicaLauncher::Start(o, events.listener());
  ASSERT_TRUE(launcher.ok()) << launcher.status().ToString();
  ASSERT_TRUE(Eventually([&] { return events.Count(0, "restart_scheduled") >= 3; }))
      << events.Dump();
  (*launcher)->Stop();
  for (const auto& e : events.Of(0, "restart_scheduled")) EXPECT_EQ(e.detail, "in 50ms");
}

// Stop(): SIGTERM, and SIGKILL after the grace for a replica that ignores SIGTERM; grandchildren
// in the replica's process group go too; nothing is restarted after.
TEST(ReplicaLauncherTest, StopLeavesNoProcessBehind) {
  TempDir dir;
  Events events;
  LaunchOptions o =
      // The child's pid is published after the trap is set: Stop() must not race the trap.
      Options("sleep 1000 & child=$!; if [ {index} = 1 ]; then trap '' TERM; fi; echo $child > " +
                  dir.path() + "/child-{index}.tmp && mv " + dir.path() + "/child-{index}.tmp " +
                  dir.path() + "/child-{index}; exec sleep 1000 # {port}",
              2);
  o.stop_grace_ns = 500 * kNsPerMs;
  auto launcher = ReplicaLauncher::Start(o, events.listener());
  ASSERT_TRUE(launcher.ok()) << launcher.status().ToString();
  ReplicaLauncher& l = **launcher;
  std::vector<pid_t> pids, grandchildren;
  for (int i = 0; i < 2; ++i) {
    const std::string file = dir.path() + "/child-" + std::to_string(i);
    ASSERT_TRUE(Eventually([&] { return !ReadAll(file).empty(); }));
    grandchildren.push_back(std::stoi(ReadAll(file)));
    pids.push_back(l.pid(i));
    ASSERT_TRUE(Alive(grandchildren.back()));
    ASSERT_TRUE(Eventually([&] { return LiveInGroup(pids.back()) == 2; }));
  }
  l.Stop();
  l.Stop();  // idempotent
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(l.pid(i), -1);
    EXPECT_TRUE(kill(pids[i], 0) != 0 && errno == ESRCH) << "replica " << pids[i] << " remains";
    EXPECT_TRUE(Eventually([&] { return !Alive(grandchildren[i]); }))
        << "grandchild " << grandchildren[i] << " outlived Stop()";
    EXPECT_TRUE(Eventually([&] { return LiveInGroup(pids[i]) == 0; }));
    ASSERT_EQ(events.Count(i, "stopped"), 1u) << events.Dump();
    EXPECT_EQ(events.Count(i, "exited"), 0u) << events.Dump();
  }
  EXPECT_EQ(events.Of(0, "stopped")[0].detail, "signal 15 (Terminated)");
  EXPECT_EQ(events.Of(1, "stopped")[0].detail, "signal 9 (Killed); SIGKILLed after the stop grace");
  usleep(300'000);  // longer than the back-off: nothing may come back
  EXPECT_EQ(events.Count(0, "spawned"), 1u);
  EXPECT_EQ(events.Count(1, "spawned"), 1u);
}

// A replica that crashes leaves a child behind (holding its port, in a real server): it is killed
// before the restart.
TEST(ReplicaLauncherTest, LeftoversOfACrashedReplicaAreKilledBeforeTheRestart) {
  TempDir dir;
  Events events;
  const std::string file = dir.path() + "/child";
  auto launcher =
      ReplicaLauncher::Start(Options("sleep 1000 & echo $! > " + file + ".tmp && mv " + file +
                                     ".tmp " + file + "; exec sleep 1000 # {port}"),
                             events.listener());
  ASSERT_TRUE(launcher.ok()) << launcher.status().ToString();
  ASSERT_TRUE(Eventually([&] { return !ReadAll(file).empty(); }));
  const pid_t grandchild = std::stoi(ReadAll(file));
  unlink(file.c_str());
  ASSERT_EQ(kill((*launcher)->pid(0), SIGKILL), 0);
  EXPECT_TRUE(Eventually([&] { return !Alive(grandchild); }));
  EXPECT_TRUE(Eventually([&] { return (*launcher)->restarts(0) == 1; })) << events.Dump();
}

TEST(ReplicaLauncherTest, LogDirGetsEachReplicasOutput) {
  TempDir dir;
  LaunchOptions o = Options("echo out-{index}; echo err-{index} >&2; exec sleep 1000 # {port}", 2);
  o.log_dir = dir.path() + "/logs/sub";  // made if missing
  auto launcher = ReplicaLauncher::Start(o, nullptr);
  ASSERT_TRUE(launcher.ok()) << launcher.status().ToString();
  for (int i = 0; i < 2; ++i) {
    const std::string log = o.log_dir + "/replica-" + std::to_string(i) + ".log";
    const std::string n = std::to_string(i);
    ASSERT_TRUE(Eventually([&] {
      const std::string text = ReadAll(log);
      return text.find("out-" + n + "\n") != std::string::npos &&
             text.find("err-" + n + "\n") != std::string::npos;
    })) << log
        << ": " << ReadAll(log);
    EXPECT_NE(ReadAll(log).find("titan gateway: starting replica " + n + " on port " +
                                std::to_string((*launcher)->port(i))),
              std::string::npos);
  }
  // A restart appends to the same file.
  ASSERT_EQ(kill((*launcher)->pid(0), SIGKILL), 0);
  ASSERT_TRUE(Eventually([&] {
    const std::string text = ReadAll(o.log_dir + "/replica-0.log");
    return text.find("(restart 1)") != std::string::npos &&
           text.rfind("out-0\n") > text.find("(restart 1)");
  }));
}

TEST(ReplicaLauncherTest, AnUnusableLogDirFailsStart) {
  TempDir dir;
  const std::string file = dir.path() + "/a-file";
  std::ofstream(file) << "x";
  LaunchOptions o = Options("exec sleep 1000 # {port}");
  o.log_dir = file;
  auto launcher = ReplicaLauncher::Start(o, nullptr);
  ASSERT_FALSE(launcher.ok());
  EXPECT_NE(launcher.status().message().find("not a directory"), std::string::npos)
      << launcher.status().ToString();
}

// The gateway is SIGKILLed: its replicas (PR_SET_PDEATHSIG) and their children (the guardian)
// die with it. A forked child plays the gateway.
TEST(ReplicaLauncherTest, ReplicasAndTheirChildrenDieWithASigkilledGateway) {
  TempDir dir;
  const std::string file = dir.path() + "/child";
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t gateway = fork();
  ASSERT_GE(gateway, 0);
  if (gateway == 0) {
    close(ready[0]);
    auto launcher =
        ReplicaLauncher::Start(Options("sleep 1000 & echo $! > " + file + ".tmp && mv " + file +
                                       ".tmp " + file + "; exec sleep 1000 # {port}"),
                               nullptr);
    if (!launcher.ok()) _exit(1);
    const pid_t pid = (*launcher)->pid(0);
    if (write(ready[1], &pid, sizeof pid) != sizeof pid) _exit(1);
    pause();  // never destroys the launcher: it is SIGKILLed holding it
    _exit(0);
  }
  close(ready[1]);
  pid_t replica = 0;
  ASSERT_EQ(read(ready[0], &replica, sizeof replica), static_cast<ssize_t>(sizeof replica));
  close(ready[0]);
  ASSERT_TRUE(Eventually([&] { return !ReadAll(file).empty(); }));
  const pid_t grandchild = std::stoi(ReadAll(file));
  ASSERT_TRUE(Alive(replica));
  ASSERT_TRUE(Alive(grandchild));
  kill(gateway, SIGKILL);
  ASSERT_EQ(waitpid(gateway, nullptr, 0), gateway);
  EXPECT_TRUE(Eventually([&] { return !Alive(replica); })) << "replica " << replica;
  EXPECT_TRUE(Eventually([&] { return !Alive(grandchild); })) << "grandchild " << grandchild;
  if (Alive(replica)) kill(replica, SIGKILL);
  if (Alive(grandchild)) kill(grandchild, SIGKILL);
}

// memory.max: detection on fixed cgroup texts (what this machine's hybrid v1/v2 layout looks
// like, and a unified one).
TEST(ReplicaMemoryMaxTest, MemoryControllerDetection) {
  using MC = JobCgroup::MemoryController;
  // Hybrid: cgroup2 at /sys/fs/cgroup/unified has no controller of v1's.
  EXPECT_EQ(JobCgroup::ClassifyMemoryController("", "hugetlb\n"), MC::kUnavailable);
  EXPECT_EQ(JobCgroup::ClassifyMemoryController("", "cpuset cpu io memory_x pids\n"),
            MC::kUnavailable);
  // Unified, the parent has memory but does not hand it to children (subtree_control).
  EXPECT_EQ(JobCgroup::ClassifyMemoryController("cpu pids\n", "cpuset cpu io memory pids\n"),
            MC::kAvailableNotEnabled);
  EXPECT_EQ(JobCgroup::ClassifyMemoryController("cpu memory pids\n", "cpu io memory pids\n"),
            MC::kEnabled);
  EXPECT_EQ(JobCgroup::ParseOomKills("low 0\nhigh 0\nmax 3\noom 2\noom_kill 2\n"
                                     "oom_group_kill 0\n"),
            2);
  EXPECT_EQ(JobCgroup::ParseOomKills(""), -1);
}

// On the real machine: replicas start either way; where the machine allows memory.max, the
// replica's cgroup has it.
TEST(ReplicaMemoryMaxTest, ReplicasRunWithOrWithoutTheLimit) {
  LaunchOptions o = Options("exec sleep 1000 # {port}", 2);
  o.memory_max_bytes = int64_t{1} << 30;
  auto launcher = ReplicaLauncher::Start(o, nullptr);
  ASSERT_TRUE(launcher.ok()) << launcher.status().ToString();
  const int pid = (*launcher)->pid(0);
  ASSERT_TRUE(Alive(pid));
  auto self = Env::ReadFile("/proc/" + std::to_string(pid) + "/cgroup");
  auto mountinfo = Env::ReadFile("/proc/self/mountinfo");
  ASSERT_TRUE(self.ok() && mountinfo.ok());
  // The replica's own cgroup directory, found like JobCgroup does for itself.
  auto dir = JobCgroup::DirectoryFor(*mountinfo, *self, "x");
  if (!dir.ok() || self->find("titan-gateway-") == std::string::npos) {
    GTEST_SKIP() << "replicas run without a cgroup of their own here";
  }
  const std::string cgroup = dir->substr(0, dir->size() - 2);
  auto limit = Env::ReadFile(cgroup + "/memory.max");
  if (!limit.ok()) {
    GTEST_SKIP() << "no memory controller here (" << cgroup << "): the launcher logged why";
  }
  EXPECT_EQ(*limit, "1073741824\n");
}

}  // namespace
}  // namespace titan::gateway
