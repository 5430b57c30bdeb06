#include <cstdio>
#include "tools/titan/commands.h"
namespace titan {
int AgentCommand(int argc, char** argv) {
  std::fprintf(stderr, "titan agent: under construction\n");
  return 1;
}
}  // namespace titan
