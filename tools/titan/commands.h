// Entry points of the titan subcommands. Each lives in its module's library (all logic there);
// main.cc only dispatches. Each takes the arguments after the subcommand name (argv[0] is
// "titan <subcommand>") and returns the process exit code: 0 success, 1 failure, 2 usage error.
#pragma once

namespace titan {

int AgentCommand(int argc, char** argv);     // src/agent/agent_command.cc
int SimCommand(int argc, char** argv);       // src/sim/sim_command.cc
int CkptCommand(int argc, char** argv);      // src/checkpoint/ckpt_command.cc
int RunCommand(int argc, char** argv);       // src/supervisor/run_command.cc
int TraceCommand(int argc, char** argv);     // src/trace/trace_command.cc
int DemoCommand(int argc, char** argv);      // src/supervisor/demo_command.cc
int ServeSimCommand(int argc, char** argv);  // src/serve_sim/serve_sim_command.cc
}  // namespace titan
