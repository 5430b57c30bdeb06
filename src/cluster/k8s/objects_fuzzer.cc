// Fuzzes the parsers of the API server's answers (list pages, watch event lines, Nodes), the
// cordon patch built from a node as read, and what titan puts into API paths from them (names,
// continue tokens, resourceVersions): outside input from a server or anything between. Must
// never crash or recurse without bound; an accepted patch always cordons; a name accepted for a
// path never holds '/', '?', '%' or "..", an escaped query value only unreserved characters and
// %XX; a list that answers the same page again ends.
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/base/listing_guard.h"
#include "src/cluster/k8s/names.h"
#include "src/cluster/k8s/node_patch.h"
#include "src/cluster/k8s/objects.h"

namespace {

void CheckPathSafe(std::string_view name) {
  if (name.find_first_of("/?%#& ") != std::string_view::npos ||
      name.find("..") != std::string_view::npos) {
    __builtin_trap();
  }
}

}  // namespace

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
    titan::ListingGuard guard("fuzz", {});
    int pages = 0;
    while (guard.Next(page->items.size(), page->continue_token).ok() &&
           !page->continue_token.empty()) {
      if (++pages > 2) __builtin_trap();
    }
    for (char c : titan::k8s::QueryValue(page->continue_token + page->resource_version)) {
      if (!std::isalnum(static_cast<unsigned char>(c)) &&
          std::string_view("-._~%").find(c) == std::string_view::npos) {
        __builtin_trap();
      }
    }
  }
  auto event = titan::k8s::ParseWatchEvent(input, "fuzz");
  if (event.ok() && !event->object.is_object()) __builtin_trap();
  if (titan::k8s::CheckSubdomainName(input, "fuzz").ok()) CheckPathSafe(input);
  if (titan::k8s::CheckLabelName(input, "fuzz").ok()) {
    CheckPathSafe(input);
    if (input.find('.') != std::string_view::npos) __builtin_trap();
  }
  return 0;
}
