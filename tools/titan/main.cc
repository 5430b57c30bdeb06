// titan: one binary, subcommands in a static table (ninja style). All logic is in the libraries.
#include <cstdio>
#include <cstring>
#include <string>

#include "src/agent/agent_command.h"
#include "src/checkpoint/ckpt_command.h"
#include "src/cluster/k8s/k8s_command.h"
#include "src/demo/demo_command.h"
#include "src/diagnose/diagnose_command.h"
#include "src/gateway/gateway_command.h"
#include "src/load/load_command.h"
#include "src/plan/plan_command.h"
#include "src/predict/predict_command.h"
#include "src/report/report.h"
#include "src/serve_sim/serve_sim_command.h"
#include "src/sim/sim_command.h"
#include "src/supervisor/run_command.h"
#include "src/trace/trace_command.h"

namespace {

struct Subcommand {
  const char* name;
  const char* summary;
  int (*run)(int argc, char** argv);
};

constexpr Subcommand kSubcommands[] = {
    {"agent", "per-node daemon: sample, detect transients, record, serve /metrics",
     titan::AgentCommand},
    {"demo", "2 nodes x 2 workers DDP demo: crash, hang, straggler, recovery, goodput",
     titan::DemoCommand},
    {"run", "launch a training job: detect, isolate, recover; goodput ledger", titan::RunCommand},
    {"load", "open-loop load tests of LLM servers: bursts, traces, SLOs, sweeps to the knee",
     titan::load::LoadCommand},
    {"ckpt", "inspect and maintain checkpoints: ls, inspect, verify, diff, gc", titan::CkptCommand},
    {"sim", "project failures, checkpoints and scaling to 10k-100k GPUs", titan::SimCommand},
    {"predict", "failure risk per GPU/node from a fleet's history: survival, risk, backtest",
     titan::PredictCommand},
    {"plan", "capacity plans: 30-day demand forecasts with intervals, training and serving plans",
     titan::PlanCommand},
    {"trace", "analyse multi-rank PyTorch profiler traces; merge agent telemetry",
     titan::TraceCommand},
    {"diagnose", "root cause, culprit and action from a failed or hung job's logs",
     titan::DiagnoseCommand},
    {"gateway", "OpenAI-compatible proxy: admission, limits, routing, batching, ejection",
     titan::gateway::GatewayCommand},
    {"report", "one self-contained HTML page with plots of titan results",
     titan::report::ReportCommand},
    {"k8s", "Kubernetes: LLMJob CRD and manifests, node cordon, elastic controller",
     titan::k8s::K8sCommand},
    {"serve-sim", "a simulated continuous-batching LLM server (OpenAI API, vLLM metrics, faults)",
     titan::ServeSimCommand},
};

void PrintUsage(FILE* out) {
  std::fprintf(out,
               "titan: find, measure and survive transients in LLM training and serving\n\n"
               "usage: titan <subcommand> [options]   (titan <subcommand> --help for more)\n\n"
               "subcommands:\n");
  for (const Subcommand& s : kSubcommands) std::fprintf(out, "  %-10s %s\n", s.name, s.summary);
  std::fprintf(out, "  %-10s %s\n", "version", "print the version");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") ||
      !std::strcmp(argv[1], "help")) {
    PrintUsage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (!std::strcmp(argv[1], "version") || !std::strcmp(argv[1], "--version")) {
    std::printf("titan %s\n", TITAN_VERSION);
    return 0;
  }
  for (const Subcommand& s : kSubcommands) {
    if (!std::strcmp(argv[1], s.name)) {
      std::string program = std::string("titan ") + s.name;
      argv[1] = program.data();
      return s.run(argc - 1, argv + 1);
    }
  }
  std::fprintf(stderr, "titan: unknown subcommand '%s'\n\n", argv[1]);
  PrintUsage(stderr);
  return 2;
}
