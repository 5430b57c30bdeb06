// `titan plan`: the subcommands' table (ninja style); each lives in its own file.
#include "src/plan/plan_command.h"

#include <cstdio>
#include <string>

#include "src/base/command_line.h"
#include "src/plan/demand_command.h"
#include "src/plan/failures_command.h"
#include "src/plan/serving_command.h"
#include "src/plan/training_command.h"

namespace titan {

namespace {

struct Sub {
  const char* name;
  const char* summary;
  int (*run)(int argc, char** argv);
};

constexpr Sub kSubs[] = {
    {"demand", "forecast a demand series with prediction intervals; --backtest scores it",
     plan::DemandCommand},
    {"training", "GPUs, spares and checkpoint interval that meet a deadline, via titan sim",
     plan::TrainingCommand},
    {"serving", "replicas per hour for a demand forecast's peaks from a titan load sweep",
     plan::ServingCommand},
    {"failures", "a fleet's failure rates, repairs and projected failures; --backtest",
     plan::FailuresCommand},
};

void Usage(FILE* out) {
  std::fprintf(out,
               "titan plan: capacity plans from history: demand forecasts with intervals, "
               "training and serving plans\n\nusage: titan plan <command> [options]   (titan "
               "plan <command> --help for more)\n\ncommands:\n");
  for (const Sub& s : kSubs) std::fprintf(out, "  %-9s %s\n", s.name, s.summary);
}

}  // namespace

int PlanCommand(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    Usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? kExitUsageError : 0;
  }
  for (const Sub& s : kSubs) {
    if (std::string(argv[1]) == s.name) {
      std::string program = std::string("titan plan ") + s.name;
      argv[1] = program.data();
      return s.run(argc - 1, argv + 1);
    }
  }
  std::fprintf(stderr, "titan plan: unknown command '%s'\n\n", argv[1]);
  Usage(stderr);
  return kExitUsageError;
}

}  // namespace titan
