// net: per-interface traffic from /proc/net/dev (the loopback interface "lo" is skipped unless
// NetCollectorOptions::include_loopback).
//
// Series (label device):
//   titan_network_{receive,transmit}_{bytes,packets,drops,errors}_total   counters
//   titan_network_{receive,transmit}_bytes_per_second                      gauges from deltas
//
// Interfaces come and go (containers create veths): state for a vanished interface is dropped,
// its series go stale; at most kMaxInterfaces are tracked. A counter going backwards (the
// interface was re-created) is taken as a restart from zero: the exported total keeps growing, no
// rate is computed for that interval, and it is reported via ctx.invalid_sample.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "src/base/env.h"
#include "src/base/status.h"
#include "src/collectors/collector.h"

namespace titan {

struct NetDevStats {
  std::string_view name;  // points into the parsed text
  // Indices into `value`, in /proc/net/dev column order of the kept columns.
  enum Column {
    kRxBytes,
    kRxPackets,
    kRxErrors,
    kRxDrops,
    kTxBytes,
    kTxPackets,
    kTxErrors,
    kTxDrops,
    kColumnCount
  };
  uint64_t value[kColumnCount] = {};
};

// Parses /proc/net/dev into *out (cleared; capacity reused). Header lines (containing '|') are
// skipped. INVALID_ARGUMENT naming the line when an interface line has no ':' or fewer than 16
// numeric columns. Extra columns are ignored.
Status ParseNetDev(std::string_view text, std::vector<NetDevStats>* out);

struct NetCollectorOptions {
  bool include_loopback = false;
};

class NetCollector : public Collector {
 public:
  static constexpr size_t kMaxInterfaces = 1024;

  explicit NetCollector(NetCollectorOptions options = {});
  ~NetCollector() override;
  std::string_view name() const override { return "net"; }
  // NOT_FOUND when <proc>/net/dev cannot be read; INVALID_ARGUMENT when it does not parse.
  Status Init(const CollectorContext& ctx) override;
  Status Collect(int64_t now_ns) override;

 private:
  struct Interface;
  void Resolve(Interface& entry, std::string_view device);

  NetCollectorOptions options_;
  CollectorContext ctx_;
  std::unique_ptr<FileReader> reader_;
  std::vector<NetDevStats> parsed_;
  struct Table;
  std::unique_ptr<Table> table_;
};

std::unique_ptr<Collector> MakeNetCollector();

}  // namespace titan
