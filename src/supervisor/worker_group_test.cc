#include "src/supervisor/worker_group.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

#include "src/base/clock.h"
#include "src/base/env.h"

namespace titan::supervisor {
namespace {

// Processes in process group `pgid` that are alive (not zombies), from /proc.
int LiveInGroup(pid_t pgid) {
  int n = 0;
  auto dir = Env::ListDir("/proc");
  if (!dir.ok()) return -1;
  for (const std::string& name : *dir) {
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    auto stat = Env::ReadFile("/proc/" + name + "/stat");
    if (!stat.ok()) continue;
    size_t close = stat->rfind(')');
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

std::vector<std::string> Environ() {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  return env;
}

class BlockChld : public ::testing::Test {
 protected:
  void SetUp() override {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGCHLD);
    sigprocmask(SIG_BLOCK, &s, &old_);
  }
  void TearDown() override { sigprocmask(SIG_SETMASK, &old_, nullptr); }
  sigset_t old_;
};

using WorkerGroupTest = BlockChld;

TEST_F(WorkerGroupTest, ReportsExitCodesAndSignals) {
  WorkerGroup g;
  ASSERT_TRUE(g.Spawn({0, 0, {"sh", "-c", "exit 3"}, Environ(), ""}).ok());
  ASSERT_TRUE(g.Spawn({1, 1, {"sh", "-c", "kill -9 $$"}, Environ(), ""}).ok());
  ASSERT_TRUE(g.WaitAll(10 * kNsPerSecond));
  EXPECT_EQ(DescribeWaitStatus(g.workers()[0].wait_status), "exit code 3");
  EXPECT_NE(DescribeWaitStatus(g.workers()[1].wait_status).find("signal 9"), std::string::npos);
  EXPECT_FALSE(g.AllSucceeded());
}

TEST_F(WorkerGroupTest, MissingCommandIsAClearError) {
  WorkerGroup g;
  Status s = g.Spawn({0, 0, {"/nonexistent/titan-no-such-command"}, Environ(), ""});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("titan-no-such-command"), std::string_view::npos);
  EXPECT_TRUE(g.workers().empty());
}

TEST_F(WorkerGroupTest, StopKillsTheWholeGroupEvenIfSigtermIsIgnored) {
  WorkerGroup g;
  // The worker ignores SIGTERM and leaves a grandchild in its process group.
  ASSERT_TRUE(g.Spawn({0,
                       0,
                       {"sh", "-c", "trap '' TERM; sleep 300 & echo $! > /dev/null; sleep 300"},
                       Environ(),
                       ""})
                  .ok());
  pid_t pgid = g.workers()[0].pid;
  // The background sleep exists only once the trap is set: wait for it, not a fixed time (a
  // SIGTERM before the trap would end the shell within the grace).
  for (int i = 0; i < 1000 && LiveInGroup(pgid) < 2; ++i) usleep(10'000);
  ASSERT_GE(LiveInGroup(pgid), 2);  // the shell and its background sleep
  int killed = g.Stop(300'000'000);
  EXPECT_EQ(killed, 1);
  EXPECT_TRUE(g.AllExited());
  usleep(100'000);
  // Nothing is left alive in the process group (the orphaned sleep was killed with it).
  EXPECT_EQ(LiveInGroup(pgid), 0);
}

TEST_F(WorkerGroupTest, StoppedWorkerIsTerminated) {
  WorkerGroup g;
  ASSERT_TRUE(g.Spawn({0, 0, {"sleep", "300"}, Environ(), ""}).ok());
  kill(g.workers()[0].pid, SIGSTOP);
  EXPECT_EQ(g.Stop(2 * kNsPerSecond), 0);  // SIGTERM + SIGCONT ends it within the grace
  EXPECT_TRUE(WIFSIGNALED(g.workers()[0].wait_status));
  EXPECT_EQ(WTERMSIG(g.workers()[0].wait_status), SIGTERM);
}

// Waits up to 5 s for process group `pgid` to have no live member.
bool GroupEmptiesWithin5s(pid_t pgid) {
  for (int i = 0; i < 100 && LiveInGroup(pgid) > 0; ++i) usleep(50'000);
  return LiveInGroup(pgid) == 0;
}

// The case PR_SET_PDEATHSIG alone misses: `titan run` is SIGKILLed, the worker (a shell) dies
// with it, and the shell's child would run on. A forked child plays titan run (a WorkerGroup
// that never gets to clean up); the guardian must kill the grandchild.
TEST_F(WorkerGroupTest, GrandchildOfAWorkerDiesWhenTheOwnerIsSigkilled) {
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t owner = fork();
  ASSERT_GE(owner, 0);
  if (owner == 0) {
    close(ready[0]);
    auto* g = new WorkerGroup();  // never destroyed: the owner dies holding it
    if (!g->Spawn({0, 0, {"sh", "-c", "sleep 300 & wait"}, Environ(), ""}).ok()) _exit(1);
    pid_t pgid = g->workers()[0].pid;
    if (write(ready[1], &pgid, sizeof pgid) != sizeof pgid) _exit(1);
    pause();
    _exit(0);
  }
  close(ready[1]);
  pid_t pgid = 0;
  ASSERT_EQ(read(ready[0], &pgid, sizeof pgid), static_cast<ssize_t>(sizeof pgid));
  close(ready[0]);
  for (int i = 0; i < 100 && LiveInGroup(pgid) < 2; ++i) usleep(20'000);
  ASSERT_EQ(LiveInGroup(pgid), 2);  // the shell and its sleep
  kill(owner, SIGKILL);
  int st = 0;
  ASSERT_EQ(waitpid(owner, &st, 0), owner);
  EXPECT_TRUE(GroupEmptiesWithin5s(pgid)) << LiveInGroup(pgid) << " left in group " << pgid;
}

// A worker that exits by itself leaves a child behind; destroying the group (titan run ending
// normally) kills it, and the guardian, released, kills nothing else.
TEST_F(WorkerGroupTest, LeftoversOfAnExitedWorkerAreKilledAtTheEnd) {
  pid_t pgid = 0;
  {
    WorkerGroup g;
    ASSERT_TRUE(g.Spawn({0, 0, {"sh", "-c", "sleep 300 & exit 0"}, Environ(), ""}).ok());
    pgid = g.workers()[0].pid;
    ASSERT_TRUE(g.WaitAll(10 * kNsPerSecond));
    EXPECT_TRUE(g.AllSucceeded());
    EXPECT_EQ(LiveInGroup(pgid), 1);  // the sleep outlived its shell
  }
  EXPECT_TRUE(GroupEmptiesWithin5s(pgid));
}

TEST_F(WorkerGroupTest, KeepsARecordOfItsGroupsUntilItIsDestroyed) {
  char dir[] = "/tmp/worker_group_test.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/" + kLeftoversFile;
  {
    WorkerGroup g;
    g.SetLeftoversRecord(path);
    ASSERT_TRUE(g.Spawn({0, 0, {"sleep", "300"}, Environ(), ""}).ok());
    auto text = Env::ReadFile(path);
    ASSERT_TRUE(text.ok()) << text.status().ToString();
    auto record = ParseLeftovers(*text);
    ASSERT_TRUE(record.ok()) << record.status().ToString();
    EXPECT_EQ(record->pid, getpid());
    ASSERT_EQ(record->groups.size(), 1u);
    EXPECT_EQ(record->groups[0].pgid, g.workers()[0].pid);
    EXPECT_EQ(record->groups[0].leader_start, ReadProcStat(g.workers()[0].pid)->start);
    EXPECT_EQ(record->cgroup_dir, g.cgroup().valid() ? g.cgroup().dir() : "");
  }
  EXPECT_NE(access(path.c_str(), F_OK), 0) << "the record outlived its group";
  rmdir(dir);
}

bool Alive(pid_t pid) {
  auto stat = Env::ReadFile("/proc/" + std::to_string(pid) + "/stat");
  if (!stat.ok()) return false;
  const size_t close = stat->rfind(')');
  return close != std::string::npos && stat->size() > close + 2 && (*stat)[close + 2] != 'Z';
}

// A worker's child that called setsid() is in no worker's process group: only the job's cgroup
// reaches it when titan run is SIGKILLed (needs a cgroup of our own: root, as on CI).
TEST_F(WorkerGroupTest, AChildThatLeftTheGroupDiesWithASigkilledOwnerThroughTheCgroup) {
  if (auto probe = JobCgroup::Create(); !probe.ok()) {
    GTEST_SKIP() << "no cgroup of our own here (" << probe.status().ToString()
                 << "); CI runs as root with cgroup v2";
  }
  const std::string pidfile = "/tmp/titan-setsid-" + std::to_string(getpid());
  unlink(pidfile.c_str());
  pid_t owner = fork();
  ASSERT_GE(owner, 0);
  if (owner == 0) {
    auto* g = new WorkerGroup();  // never destroyed: the owner dies holding it
    const std::string script = "setsid sleep 300 & echo $! > " + pidfile + ".tmp && mv " + pidfile +
                               ".tmp " + pidfile + "; wait";
    if (!g->Spawn({0, 0, {"sh", "-c", script}, Environ(), ""}).ok()) _exit(1);
    pause();
    _exit(0);
  }
  pid_t escaped = 0;
  for (int i = 0; i < 500 && escaped == 0; ++i) {
    std::ifstream in(pidfile);
    if (!(in >> escaped)) escaped = 0;
    if (escaped == 0) usleep(10'000);
  }
  unlink(pidfile.c_str());
  ASSERT_GT(escaped, 0) << "the worker never started its setsid child";
  ASSERT_TRUE(Alive(escaped));
  kill(owner, SIGKILL);
  ASSERT_EQ(waitpid(owner, nullptr, 0), owner);
  for (int i = 0; i < 500 && Alive(escaped); ++i) usleep(10'000);
  EXPECT_FALSE(Alive(escaped)) << "setsid child " << escaped << " outlived a SIGKILLed owner";
  if (Alive(escaped)) kill(escaped, SIGKILL);
}

TEST(GuardianTest, ReleaseKillsNothing) {
  Guardian guardian;
  ASSERT_TRUE(guardian.Start().ok());
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    setpgid(0, 0);
    pause();
    _exit(0);
  }
  setpgid(child, child);
  EXPECT_TRUE(guardian.Watch(child));
  guardian.Release();
  EXPECT_FALSE(guardian.running());
  usleep(100'000);
  EXPECT_EQ(kill(child, 0), 0) << "a released guardian killed a watched group";
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
}

TEST(GuardianTest, IsNamedTitanGuardianAndHidesItsParentsCommandLine) {
  Guardian guardian;
  ASSERT_TRUE(guardian.Start().ok());
  const std::string proc = "/proc/" + std::to_string(guardian.pid());
  auto comm = Env::ReadFile(proc + "/comm");
  auto cmdline = Env::ReadFile(proc + "/cmdline");
  auto own = Env::ReadFile("/proc/self/cmdline");
  guardian.Release();
  ASSERT_TRUE(comm.ok() && cmdline.ok() && own.ok());
  EXPECT_EQ(*comm, "titan-guardian\n");
  EXPECT_EQ(cmdline->substr(0, cmdline->find('\0')), "titan-guardian");
  EXPECT_EQ(cmdline->find(own->substr(0, own->find('\0'))), std::string::npos) << *cmdline;
}

}  // namespace
}  // namespace titan::supervisor
