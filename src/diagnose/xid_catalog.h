// NVIDIA Xid codes: what each means for a training job and the immediate action.
//
// Built from NVIDIA's Xid catalog ("Analyzing Xid errors", the catalog sheet's immediate
// resolution) with two deliberate differences, the way cluster health agents (gpud, NVSentinel)
// act on them: a GPU that fell off the bus (79) is drained, since the node cannot use it until a
// reboot and it is the usual sign of failing hardware; and memory errors that need the page to be
// remapped (48, 94, 95) reboot the node, since remapping needs the GPU reset that a node running
// jobs rarely allows. The catalog's "ignore" is Action::kNone; "contact support" and "check
// mechanicals" are kDrainNode. Codes the catalog marks unused are not listed: an unknown Xid is
// reported as such, not guessed.
//
// Thread safety: immutable tables.
#pragma once

#include <string_view>

#include "src/diagnose/types.h"

namespace titan::diagnose {

struct XidInfo {
  int code = 0;
  std::string_view name;  // "GPU has fallen off the bus"
  FaultClass fault = FaultClass::kUnknown;
  Action action = Action::kNone;
  // A consequence of another fault more than a fault of its own (43: the GPU stopped the app's
  // channel after its exception; 45: preemptive cleanup): ranks below a cause in an incident.
  bool follows_other = false;
};

// nullptr for a code the catalog does not list.
const XidInfo* FindXid(int code);

}  // namespace titan::diagnose
