// The explicit list of every collector titan agent knows (like Perfetto's importer list and
// ninja's tool table): one obvious place to add one. The agent builds each wanted collector with
// make(), calls Init(ctx) and, on success, Collect(now_ns) every default_interval_ns (or the
// interval the user set) on a sampling thread.
//
// Thread safety: the list is immutable; MakeCollector is safe from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "src/base/status.h"
#include "src/collectors/collector.h"

namespace titan {

struct CollectorInfo {
  std::string_view name;  // as Collector::name() and the --collectors flag
  std::string_view help;  // one line for --help
  int64_t default_interval_ns;
  std::unique_ptr<Collector> (*make)();
};

// Every collector, in a stable order.
std::span<const CollectorInfo> AllCollectors();

// The collector called `name`; NOT_FOUND listing the known names otherwise.
Result<const CollectorInfo*> FindCollector(std::string_view name);

// Builds the collector called `name`; NOT_FOUND listing the known names otherwise.
Result<std::unique_ptr<Collector>> MakeCollector(std::string_view name);

}  // namespace titan
