#include "src/diagnose/log_time.h"

#include <gtest/gtest.h>

namespace titan::diagnose {
namespace {

std::string Read(std::string_view line) { return FormatLogTime(ParseLineTime(line)); }

TEST(LogTimeTest, ReadsTheFormatsLogsUse) {
  EXPECT_EQ(Read("kern  :warn  : 2025-01-21T04:41:44,283302+00:00 NVRM: Xid"),
            "2025-01-21T04:41:44.283302Z");
  EXPECT_EQ(Read("2025-01-21T06:41:44.5+02:00 host kernel: x"), "2025-01-21T04:41:44.5Z");
  EXPECT_EQ(Read("[2025-06-02 20:51:24,182] [INFO] [launch.py:319:sigkill_handler] Killing"),
            "2025-06-02T20:51:24.182Z");
  EXPECT_EQ(Read("  time      : 2025-06-12_22:45:44"), "2025-06-12T22:45:44Z");
  EXPECT_EQ(Read("08/13/2020 18:56:31 - INFO - transformers.trainer"), "2020-08-13T18:56:31Z");
  EXPECT_EQ(Read("[Tue Apr  9 01:21:38 2024] NVRM: Xid"), "2024-04-09T01:21:38Z");
  EXPECT_EQ(Read("Apr  9 01:21:38 node1 kernel: NVRM: Xid"), "--04-09T01:21:38Z");
  EXPECT_EQ(Read("[80746] [rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] x"),
            "--03-21T02:07:08.408271257Z");
  EXPECT_EQ(Read("E0321 02:07:08.408271 1234 file.cc:1] x"), "--03-21T02:07:08.408271Z");
  EXPECT_EQ(Read("[856341.770960] Out of memory: Killed process"), "boot+856341.770960s");
  EXPECT_EQ(Read("[  +0.000005] pcieport 0000:00:03.0: AER"), "");
  EXPECT_EQ(Read("[80746] step 12 loss 1.0"), "");
  EXPECT_EQ(Read("NCCL version 2.21.5+cuda12.4"), "");
}

// Times whose nanoseconds do not fit an int64_t are no time, not an overflow (UBSan found
// "127942797604 * 1000000000 cannot be represented" through diagnose_text_fuzzer).
TEST(LogTimeTest, TimesBeyondTheClocksRangeAreNoTime) {
  EXPECT_EQ(Read("[Tue Apr  9 01:21:38 6024] NVRM: Xid"), "");
  EXPECT_EQ(Read("9999-12-31T23:59:59Z x"), "");
  EXPECT_EQ(Read("[999999999999.000001] Out of memory"), "");
  EXPECT_EQ(Read("2200-01-01T00:00:00Z x"), "2200-01-01T00:00:00Z");
}

TEST(LogTimeTest, YearlessTimesArePlacedInAYear) {
  LogTime t = ParseLineTime("Mar  1 00:00:01 h kernel: x");
  EXPECT_EQ(FormatLogTime(PlaceInYear(t, 2023)), "2023-03-01T00:00:01Z");  // not a leap year
  EXPECT_EQ(FormatLogTime(PlaceInYear(t, 2024)), "2024-03-01T00:00:01Z");
  LogTime feb29 = ParseLineTime("Feb 29 12:00:00 h kernel: x");
  EXPECT_EQ(FormatLogTime(PlaceInYear(feb29, 2024)), "2024-02-29T12:00:00Z");
}

TEST(PciTest, NormalForm) {
  EXPECT_EQ(NormalizePci("0000:a1:00"), "0000:a1:00.0");
  EXPECT_EQ(NormalizePci("PCI:00000000:A1:00.0"), "0000:a1:00.0");
  EXPECT_EQ(NormalizePci("a1:00.1"), "0000:a1:00.1");
  EXPECT_EQ(NormalizePci("..."), "");
  EXPECT_EQ(NormalizePci("12:34:56"), "") << "a time is not a PCI address";
}

}  // namespace
}  // namespace titan::diagnose
