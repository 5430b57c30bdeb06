// Leftovers: the record's text, /proc/PID/stat parsing, and CleanUpLeftovers on real processes
// (a process group whose leader lives, one whose leader is gone, one whose leader's start time
// says the pid was reused).
#include "src/supervisor/leftovers.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>

#include "src/base/env.h"

namespace titan::supervisor {
namespace {

TEST(LeftoversTest, StatFieldsAreCountedAfterTheLastParenthesis) {
  std::string fields;
  for (int f = 4; f <= 52; ++f) fields += " " + std::to_string(f);
  auto stat = ParseProcStat("12 (a) b (c d) S" + fields + "\n");
  ASSERT_TRUE(stat.ok()) << stat.status().ToString();
  EXPECT_EQ(stat->state, 'S');
  EXPECT_EQ(stat->pgrp, 5);
  EXPECT_EQ(stat->start, 22u);
  EXPECT_EQ(stat->arg_start, 48u);
  EXPECT_EQ(stat->arg_end, 49u);
  EXPECT_FALSE(ParseProcStat("12 (a) S 1 2").ok());
  auto self = ReadProcStat(getpid());
  ASSERT_TRUE(self.ok());
  EXPECT_EQ(self->pgrp, getpgrp());
  EXPECT_GT(self->arg_end, self->arg_start);
  EXPECT_FALSE(ReadProcStat(-1).ok());
}

TEST(LeftoversTest, RecordRoundTripsAndMalformedOnesAreRefused) {
  LeftoversRecord record{42, 1234, {{100, 7}, {200, 8}}, "/sys/fs/cgroup/titan-run-42-0"};
  auto parsed = ParseLeftovers(FormatLeftovers(record));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->pid, 42);
  EXPECT_EQ(parsed->start, 1234u);
  ASSERT_EQ(parsed->groups.size(), 2u);
  EXPECT_EQ(parsed->groups[1].pgid, 200);
  EXPECT_EQ(parsed->groups[1].leader_start, 8u);
  EXPECT_EQ(parsed->cgroup_dir, record.cgroup_dir);
  for (const char* bad :
       {"", "[]", "{\"pid\":1}",
        R"({"pid":1,"start":2,"groups":[{"pgid":1,"leader_start":3}],)"
        R"("cgroup":""})",
        R"({"pid":1,"start":2,"groups":[{"pgid":-5,"leader_start":3}],"cgroup":""})"}) {
    EXPECT_FALSE(ParseLeftovers(bad).ok()) << bad;
  }
}

class CleanUpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/leftovers_test.XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    path_ = std::string(dir) + "/" + kLeftoversFile;
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);  // orphaned grandchildren come back to us to be reaped
  }
  void TearDown() override {
    ::prctl(PR_SET_CHILD_SUBREAPER, 0);
    ::unlink(path_.c_str());
    ::rmdir(path_.substr(0, path_.rfind('/')).c_str());
  }
  void Write(const LeftoversRecord& record) { std::ofstream(path_) << FormatLeftovers(record); }
  // A new process group: its leader and one more member, both waiting; returns {leader, member}.
  static std::pair<pid_t, pid_t> StartGroup() {
    int fds[2];
    EXPECT_EQ(pipe(fds), 0);
    pid_t leader = fork();
    if (leader == 0) {
      setpgid(0, 0);
      pid_t member = fork();
      if (member == 0) {
        pause();
        _exit(0);
      }
      (void)!write(fds[1], &member, sizeof(member));
      pause();
      _exit(0);
    }
    setpgid(leader, leader);
    pid_t member = -1;
    EXPECT_EQ(read(fds[0], &member, sizeof(member)), static_cast<ssize_t>(sizeof(member)));
    close(fds[0]);
    close(fds[1]);
    return {leader, member};
  }
  static int KillSignal(pid_t pid) {
    int status = 0;
    EXPECT_EQ(waitpid(pid, &status, 0), pid);
    return WIFSIGNALED(status) ? WTERMSIG(status) : -1;
  }
  std::string path_;
};

TEST_F(CleanUpTest, NoRecordIsNothingToDo) {
  auto cleanup = CleanUpLeftovers(path_);
  ASSERT_TRUE(cleanup.ok()) << cleanup.status().ToString();
  EXPECT_FALSE(cleanup->found);
}

TEST_F(CleanUpTest, ALiveOwnerIsLeftAlone) {
  auto own = OwnLeftoversRecord();
  ASSERT_TRUE(own.ok());
  Write(*own);
  auto cleanup = CleanUpLeftovers(path_);
  EXPECT_EQ(cleanup.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(access(path_.c_str(), F_OK), 0);
}

TEST_F(CleanUpTest, GroupsOfADeadOwnerAreKilledUnlessTheirLeaderIsAStranger) {
  auto [live_leader, live_member] = StartGroup();
  auto [gone_leader, orphan] = StartGroup();
  auto [stranger, stranger_member] = StartGroup();
  auto live_start = ReadProcStat(live_leader), gone_start = ReadProcStat(gone_leader),
       stranger_start = ReadProcStat(stranger);
  ASSERT_TRUE(live_start.ok() && gone_start.ok() && stranger_start.ok());
  kill(gone_leader, SIGKILL);  // as PR_SET_PDEATHSIG does: the orphan lives on in its group
  EXPECT_EQ(KillSignal(gone_leader), SIGKILL);
  auto own = OwnLeftoversRecord();
  ASSERT_TRUE(own.ok());
  LeftoversRecord record = *own;
  record.start += 1;  // a dead owner whose pid was reused (by this test)
  record.groups = {{live_leader, live_start->start},
                   {gone_leader, gone_start->start},
                   {stranger, stranger_start->start + 1}};
  Write(record);

  auto cleanup = CleanUpLeftovers(path_);
  ASSERT_TRUE(cleanup.ok()) << cleanup.status().ToString();
  EXPECT_TRUE(cleanup->found);
  EXPECT_EQ(cleanup->killed_groups, (std::vector<pid_t>{live_leader, gone_leader}));
  EXPECT_EQ(cleanup->killed_processes, 3);
  EXPECT_NE(cleanup->Describe().find("killed 3 process(es) in 2 process group(s)"),
            std::string::npos)
      << cleanup->Describe();
  EXPECT_EQ(KillSignal(live_leader), SIGKILL);
  EXPECT_EQ(KillSignal(live_member), SIGKILL);
  EXPECT_EQ(KillSignal(orphan), SIGKILL);
  EXPECT_EQ(kill(stranger, 0), 0) << "a group whose leader has another start time was killed";
  EXPECT_NE(access(path_.c_str(), F_OK), 0) << "the record outlived its cleanup";
  kill(-stranger, SIGKILL);
  KillSignal(stranger);
  KillSignal(stranger_member);
}

}  // namespace
}  // namespace titan::supervisor
