// LiveView: a terminal view of what the agent sees, refreshed every second (`titan agent
// --live`): host CPU / memory / network / disk / pressure, each GPU, each rank's step time and
// straggler score, with the window's min and max next to the last value so a dip that came and
// went is still on screen, and the newest transients.
//
// Thread safety: Render() reads the agent under its locks; call from one thread.
#pragma once

#include <string>

#include "src/agent/agent.h"

namespace titan {

// One screenful of text (no terminal control codes).
std::string RenderLiveView(Agent& agent, int window_seconds);

}  // namespace titan
