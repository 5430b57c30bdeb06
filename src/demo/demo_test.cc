// titan demo's reading of titan agent's verdicts (the demo's one-line verdict compares them with
// titan run's).
#include <string>

#include <gtest/gtest.h>

#include "src/demo/demo_command.h"

namespace titan {
namespace {

TEST(StragglerNamedInTest, ClaimsNameTheirRankAndDenialsNameNone) {
  std::string claim;
  EXPECT_EQ(StragglerNamedIn("all 4 ranks slow at steps 10-31: rank 3 late against its peers "
                             "(straggler score 4.4): a straggler holding the others; slowest: x",
                             &claim),
            3);
  EXPECT_EQ(claim,
            "all 4 ranks slow at steps 10-31: rank 3 late against its peers (straggler score "
            "4.4): a straggler");
  EXPECT_EQ(StragglerNamedIn("step 40 on rank 2 took 90 ms; rank 2 alone of 4 ranks, 5 steps: a "
                             "straggler",
                             &claim),
            2);
  // The agent's denials (correlator.cc) contain the words "a straggler" too.
  EXPECT_EQ(StragglerNamedIn("step 73 on rank 0 took 209 ms, +45.1 ms over its baseline (3.1 "
                             "sigma, zscore); rank 0 alone of 4 ranks, one step: a blip, not a "
                             "straggler",
                             &claim),
            -1);
  EXPECT_EQ(StragglerNamedIn("all 4 ranks slow at step 9: a common cause, not a straggler", &claim),
            -1);
  EXPECT_EQ(StragglerNamedIn("2 of 4 ranks slow at step 9: not one straggler", &claim), -1);
}

}  // namespace
}  // namespace titan
