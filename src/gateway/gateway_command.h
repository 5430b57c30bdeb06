// Entry point of `titan gateway` (tools/titan/main.cc dispatches here).
#pragma once

namespace titan::gateway {

// Runs the gateway until SIGTERM/SIGINT (then drains); SIGHUP reloads --config. Returns 0 on
// a clean stop, 1 when it cannot start, 2 for a usage error.
int GatewayCommand(int argc, char** argv);

}  // namespace titan::gateway
