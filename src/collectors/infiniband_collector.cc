#include "src/collectors/infiniband_collector.h"

#include <sys/stat.h>

#include <string>

#include "src/base/text.h"
#include "src/collectors/collector_support.h"

namespace titan {
namespace {

using collectors_internal::CounterDesc;
using collectors_internal::GaugeDesc;
using collectors_internal::ResettableCounter;

struct CounterFile {
  std::string_view file;  // under counters/
  double scale;           // to the exported unit
  bool required;          // Init() skips a port without it
};
// In this order; the first two are the byte counters the rates come from.
constexpr CounterFile kCounterFiles[] = {
    {"port_rcv_data", 4, true},   {"port_xmit_data", 4, true}, {"port_rcv_errors", 1, false},
    {"symbol_error", 1, false},   {"link_downed", 1, false},   {"port_xmit_discards", 1, false},
    {"port_xmit_wait", 1, false},
};
constexpr size_t kCounterCount = std::size(kCounterFiles);
// The most each counter of kCounterFiles can grow per second on one port: data of 1.6 Tbit/s
// (in 4-byte words), packets of that rate in minimum-size packets for the error and discard
// counts, 1e4 link downs, and 1e10 wait ticks. A faster increase is a glitch and drops the
// interval (see ResettableCounter).
constexpr double kMaxPerSecond[kCounterCount] = {
    1.6e12 / 8 / 4, 1.6e12 / 8 / 4, 3e9, 3e9, 1e4, 3e9, 1e10};

struct Descs {
  SignalDesc counters[kCounterCount] = {
      CounterDesc("titan_infiniband_receive_bytes_total", "Bytes received (port_rcv_data x 4).",
                  {"device", "port"}),
      CounterDesc("titan_infiniband_transmit_bytes_total",
                  "Bytes transmitted (port_xmit_data x 4).", {"device", "port"}),
      CounterDesc("titan_infiniband_receive_errors_total", "Packets received with errors.",
                  {"device", "port"}),
      CounterDesc("titan_infiniband_symbol_errors_total", "Link symbol errors.",
                  {"device", "port"}),
      CounterDesc("titan_infiniband_link_downed_total", "Times the link went down.",
                  {"device", "port"}),
      CounterDesc("titan_infiniband_transmit_discards_total", "Outbound packets discarded.",
                  {"device", "port"}),
      CounterDesc("titan_infiniband_transmit_wait_total",
                  "Ticks with data to send but no credits (congestion).", {"device", "port"}),
  };
  SignalDesc receive_rate = GaugeDesc("titan_infiniband_receive_bytes_per_second",
                                      "Receive throughput over the last sampling interval.",
                                      {"device", "port"}, RateBuckets(100e9), /*detect=*/true);
  SignalDesc transmit_rate = GaugeDesc("titan_infiniband_transmit_bytes_per_second",
                                       "Transmit throughput over the last sampling interval.",
                                       {"device", "port"}, RateBuckets(100e9), /*detect=*/true);
  SignalDesc state = GaugeDesc("titan_infiniband_port_state",
                               "Port state: 1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE, 5 ACTIVE_DEFER.",
                               {"device", "port"}, {});
  SignalDesc link_rate = GaugeDesc("titan_infiniband_link_rate_bytes_per_second",
                                   "Link signalling rate.", {"device", "port"}, {});
};

const Descs& D() {
  static const Descs* descs = new Descs();
  return *descs;
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

}  // namespace

Status ParseIbCounter(std::string_view text, uint64_t* out) {
  if (!ParseUint64(Trim(text), out)) {
    return InvalidArgumentError("counter file holds '" + std::string(Trim(text).substr(0, 40)) +
                                "', not a decimal number");
  }
  return OkStatus();
}

Status ParseIbState(std::string_view text, int64_t* out) {
  const std::string_view trimmed = Trim(text);
  const size_t colon = trimmed.find(':');
  if (colon == std::string_view::npos || !ParseInt64(trimmed.substr(0, colon), out) || *out < 0) {
    return InvalidArgumentError("state file holds '" + std::string(trimmed.substr(0, 40)) +
                                "', expected '<number>: <NAME>'");
  }
  return OkStatus();
}

Status ParseIbRate(std::string_view text, double* bytes_per_second) {
  std::string_view rest = Trim(text);
  const std::string_view number = NextField(&rest);
  const std::string_view unit = NextField(&rest);
  double gbits = 0;
  if (!ParseDouble(number, &gbits) || gbits < 0 || unit != "Gb/sec") {
    return InvalidArgumentError("rate file holds '" + std::string(Trim(text).substr(0, 40)) +
                                "', expected '<number> Gb/sec ...'");
  }
  *bytes_per_second = gbits * 1e9 / 8;
  return OkStatus();
}

struct InfinibandCollector::Port {
  std::string path;  // .../ports/<n>, for messages
  std::unique_ptr<FileReader> counters[kCounterCount];
  Series* counter_series[kCounterCount] = {};
  ResettableCounter values[kCounterCount];
  std::unique_ptr<FileReader> state;
  std::unique_ptr<FileReader> rate;
  Series* receive_rate = nullptr;
  Series* transmit_rate = nullptr;
  Series* state_series = nullptr;
  Series* link_rate_series = nullptr;
  int64_t last_ns = 0;
};

InfinibandCollector::InfinibandCollector() = default;
InfinibandCollector::~InfinibandCollector() = default;

Status InfinibandCollector::Init(const CollectorContext& ctx) {
  ctx_ = ctx;
  const std::string root = ctx.env->SysPath("class/infiniband");
  Result<std::vector<std::string>> devices = Env::ListDir(root);
  if (!devices.ok()) {
    return FailedPreconditionError("no InfiniBand devices: " + devices.status().ToString());
  }
  MetricRegistry& r = *ctx.registry;
  for (const std::string& device : *devices) {
    Result<std::vector<std::string>> ports = Env::ListDir(root + "/" + device + "/ports");
    if (!ports.ok()) continue;
    for (const std::string& port_name : *ports) {
      auto port = std::make_unique<Port>();
      port->path = root + "/" + device + "/ports/" + port_name;
      if (!Exists(port->path + "/counters/port_rcv_data")) continue;  // not a port with counters
      const LabelValues labels = {device, port_name};
      for (size_t c = 0; c < kCounterCount; ++c) {
        const std::string file = port->path + "/counters/" + std::string(kCounterFiles[c].file);
        if (!Exists(file)) continue;
        port->counters[c] = std::make_unique<FileReader>(file, 256);
        port->counter_series[c] = r.GetOrCreate(D().counters[c], labels, ctx.interval_ns);
      }
      if (port->counters[0] == nullptr || port->counters[1] == nullptr) continue;
      port->receive_rate = r.GetOrCreate(D().receive_rate, labels, ctx.interval_ns);
      port->transmit_rate = r.GetOrCreate(D().transmit_rate, labels, ctx.interval_ns);
      if (Exists(port->path + "/state")) {
        port->state = std::make_unique<FileReader>(port->path + "/state", 256);
        port->state_series = r.GetOrCreate(D().state, labels, ctx.interval_ns);
      }
      if (Exists(port->path + "/rate")) {
        port->rate = std::make_unique<FileReader>(port->path + "/rate", 256);
        port->link_rate_series = r.GetOrCreate(D().link_rate, labels, ctx.interval_ns);
      }
      ports_.push_back(std::move(port));
    }
  }
  if (ports_.empty()) {
    return FailedPreconditionError("no InfiniBand port with counters under " + root);
  }
  return OkStatus();
}

Status InfinibandCollector::CollectPort(Port& port, int64_t now_ns) {
  uint64_t readings[kCounterCount] = {};  // a counter file the port lacks stays 0
  for (size_t c = 0; c < kCounterCount; ++c) {
    if (port.counters[c] == nullptr) continue;
    TITAN_RETURN_IF_ERROR(
        collectors_internal::ReadAndParse(*port.counters[c], ParseIbCounter, &readings[c]));
  }
  uint64_t delta[kCounterCount] = {};
  const bool have_delta = collectors_internal::AdvanceAll(
      ctx_, name(), "InfiniBand", port.path, kCounterCount, readings, kMaxPerSecond,
      now_ns - port.last_ns, port.values, delta);
  for (size_t c = 0; c < kCounterCount; ++c) {
    collectors_internal::SetCounter(port.counter_series[c], now_ns,
                                    port.values[c].total * kCounterFiles[c].scale);
  }
  double rate = 0;
  if (have_delta && collectors_internal::RatePerSecond(static_cast<double>(delta[0]) * 4,
                                                       now_ns - port.last_ns, &rate)) {
    collectors_internal::RecordGauge(port.receive_rate, now_ns, rate);
    collectors_internal::RatePerSecond(static_cast<double>(delta[1]) * 4, now_ns - port.last_ns,
                                       &rate);
    collectors_internal::RecordGauge(port.transmit_rate, now_ns, rate);
  }
  port.last_ns = now_ns;
  if (port.state != nullptr) {
    int64_t state = 0;
    TITAN_RETURN_IF_ERROR(collectors_internal::ReadAndParse(*port.state, ParseIbState, &state));
    collectors_internal::RecordGauge(port.state_series, now_ns, static_cast<double>(state));
  }
  if (port.rate != nullptr) {
    double link_rate = 0;
    TITAN_RETURN_IF_ERROR(collectors_internal::ReadAndParse(*port.rate, ParseIbRate, &link_rate));
    collectors_internal::RecordGauge(port.link_rate_series, now_ns, link_rate);
  }
  return OkStatus();
}

Status InfinibandCollector::Collect(int64_t now_ns) {
  Status first_error;
  for (auto& port : ports_) {
    Status status = CollectPort(*port, now_ns);
    if (!status.ok() && first_error.ok()) first_error = status;
  }
  return first_error;
}

std::unique_ptr<Collector> MakeInfinibandCollector() {
  return std::make_unique<InfinibandCollector>();
}

}  // namespace titan
