// titan_sim_cli: `titan sim` as its own binary, for tests and for builds where other
// subcommands' libraries are not ready. Same entry point as the subcommand.
#include <string>

#include "tools/titan/commands.h"

int main(int argc, char** argv) {
  std::string program = "titan sim";
  argv[0] = program.data();
  return titan::SimCommand(argc, argv);
}
