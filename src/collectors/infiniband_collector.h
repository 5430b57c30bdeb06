// infiniband: per-port counters of InfiniBand / RoCE HCAs from
// <sys>/class/infiniband/<device>/ports/<port>/{counters/*,state,rate}.
//
// Series (labels device, port):
//   counters titan_infiniband_receive_bytes_total / titan_infiniband_transmit_bytes_total
//            (port_rcv_data / port_xmit_data, which count 4-byte words), and
//            titan_infiniband_{receive_errors,symbol_errors,link_downed,transmit_discards}_total,
//            titan_infiniband_transmit_wait_total (port_xmit_wait ticks, where the HCA has it)
//   gauges   titan_infiniband_{receive,transmit}_bytes_per_second (from deltas),
//            titan_infiniband_port_state (4 = ACTIVE, 1 = DOWN, ...),
//            titan_infiniband_link_rate_bytes_per_second (from `rate`, e.g. "200 Gb/sec (4X HDR)")
//
// Reading these files can cost a firmware round trip on some HCAs: sample at ~1 s.
// Errors: Init() returns FAILED_PRECONDITION when <sys>/class/infiniband is missing or has no
// ports. Collect() reads every port; a port whose files vanished is skipped and the first error is
// returned after the others were read. A counter going backwards (HCA reset) is taken as a
// restart and reported via ctx.invalid_sample.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "src/base/env.h"
#include "src/base/status.h"
#include "src/collectors/collector.h"

namespace titan {

// A sysfs counter file: one decimal number and a newline.
Status ParseIbCounter(std::string_view text, uint64_t* out);
// A port `state` file such as "4: ACTIVE": the leading number.
Status ParseIbState(std::string_view text, int64_t* out);
// A port `rate` file such as "100 Gb/sec (4X EDR)": the link rate in bytes per second.
Status ParseIbRate(std::string_view text, double* bytes_per_second);

class InfinibandCollector : public Collector {
 public:
  InfinibandCollector();
  ~InfinibandCollector() override;
  std::string_view name() const override { return "infiniband"; }
  Status Init(const CollectorContext& ctx) override;
  Status Collect(int64_t now_ns) override;
  size_t port_count() const { return ports_.size(); }

 private:
  struct Port;
  Status CollectPort(Port& port, int64_t now_ns);

  CollectorContext ctx_;
  std::vector<std::unique_ptr<Port>> ports_;
};

std::unique_ptr<Collector> MakeInfinibandCollector();

}  // namespace titan
