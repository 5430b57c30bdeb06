// JobCgroup: the path logic on fixed /proc texts, and the real thing where this machine lets us
// make a cgroup (root with a cgroup v2 hierarchy, as on CI); elsewhere those tests skip and say
// why.
#include "src/supervisor/job_cgroup.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

namespace titan::supervisor {
namespace {

constexpr char kHybridMountinfo[] =
    "29 1 253:0 / / rw,relatime - ext4 /dev/vda rw\n"
    "35 31 0:31 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

TEST(JobCgroupTest, DirectoryIsAChildOfOurOwnV2Cgroup) {
  auto dir = JobCgroup::DirectoryFor(kHybridMountinfo, "4:memory:/x\n0::/\n", "titan-run-7-0");
  ASSERT_TRUE(dir.ok()) << dir.status().ToString();
  EXPECT_EQ(*dir, "/sys/fs/cgroup/unified/titan-run-7-0");
  auto unit = JobCgroup::DirectoryFor("30 1 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
                                      "0::/system.slice/train.service\n", "titan-run-7-0");
  ASSERT_TRUE(unit.ok()) << unit.status().ToString();
  EXPECT_EQ(*unit, "/sys/fs/cgroup/system.slice/train.service/titan-run-7-0");
}

TEST(JobCgroupTest, NoV2HierarchyOrPathIsAClearError) {
  auto none = JobCgroup::DirectoryFor("29 1 253:0 / / rw - ext4 /dev/vda rw\n", "0::/\n", "n");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no cgroup v2 hierarchy"), std::string::npos);
  auto v1_only = JobCgroup::DirectoryFor(kHybridMountinfo, "4:memory:/x\n", "n");
  ASSERT_FALSE(v1_only.ok());
  auto hostile = JobCgroup::DirectoryFor(kHybridMountinfo, "0::/../../etc\n", "n");
  ASSERT_FALSE(hostile.ok());
}

// A process that left its process group (setsid) is still killed through the cgroup.
TEST(JobCgroupTest, KillReachesAProcessThatLeftItsGroup) {
  auto cgroup = JobCgroup::Create();
  if (!cgroup.ok()) {
    GTEST_SKIP() << "cannot make a cgroup here (" << cgroup.status().ToString()
                 << "); CI runs as root with cgroup v2";
  }
  const std::string procs = cgroup->procs_path();
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (!JobCgroup::JoinSelf(procs.c_str())) _exit(3);
    setsid();
    execlp("sleep", "sleep", "300", static_cast<char*>(nullptr));
    _exit(127);
  }
  // It is in the cgroup once cgroup.procs lists it.
  bool listed = false;
  for (int i = 0; i < 200 && !listed; ++i) {
    std::ifstream in(procs);
    for (pid_t p; in >> p;) listed |= p == child;
    if (!listed) usleep(10'000);
  }
  ASSERT_TRUE(listed) << "child " << child << " never appeared in " << procs;
  ASSERT_TRUE(cgroup->Kill().ok());
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  const std::string dir = cgroup->dir();
  cgroup->Remove();
  EXPECT_NE(access(dir.c_str(), F_OK), 0) << dir << " was not removed";
}

}  // namespace
}  // namespace titan::supervisor
