// Fuzzes the parsers of the API server's answers (list pages, watch event lines, Nodes) and the
// cordon patch built from a node as read: outside input from a server or anything between.
// Must never crash or recurse without bound; an accepted patch always cordons.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/cluster/k8s/node_patch.h"
#include "src/cluster/k8s/objects.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  auto page = titan::k8s::ParseListPage(input, "fuzz");
  if (page.ok()) {
    for (const auto& item : page->items) {
      titan::k8s::ParseNodeView(item, "fuzz").status().IgnoreError();
      auto patch = titan::k8s::CordonPatch(item, "fuzz", 0, true);
      if (patch.ok() && patch->has_value() && (**patch)["spec"]["unschedulable"] != true) {
        __builtin_trap();
      }
    }
  }
  auto event = titan::k8s::ParseWatchEvent(input, "fuzz");
  if (event.ok() && !event->object.is_object()) __builtin_trap();
  return 0;
}
