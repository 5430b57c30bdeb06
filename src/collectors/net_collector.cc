#include "src/collectors/net_collector.h"

#include <string>

#include "src/base/text.h"
#include "src/collectors/collector_support.h"

namespace titan {
namespace {

using collectors_internal::CounterDesc;
using collectors_internal::GaugeDesc;
using collectors_internal::ResettableCounter;

constexpr int kProcColumns = 16;
// /proc/net/dev column of each NetDevStats::Column.
constexpr int kSourceColumn[NetDevStats::kColumnCount] = {0, 1, 2, 3, 8, 9, 10, 11};
// The most each column can grow per second on one interface: bytes of 1.6 Tbit/s (4 x 400
// Gbit/s links bonded), and packets (errors and drops are packets) of that rate in minimum
// 64-byte frames with their 20 bytes of preamble and gap (2.4e9/s), rounded up. A faster increase
// is a glitch (a driver reporting 2^64-1) and drops the interval (see ResettableCounter).
constexpr double kMaxBytesPerSecond = 1.6e12 / 8;
constexpr double kMaxPacketsPerSecond = 3e9;
constexpr double kMaxPerSecond[NetDevStats::kColumnCount] = {
    kMaxBytesPerSecond, kMaxPacketsPerSecond, kMaxPacketsPerSecond, kMaxPacketsPerSecond,
    kMaxBytesPerSecond, kMaxPacketsPerSecond, kMaxPacketsPerSecond, kMaxPacketsPerSecond};

struct Descs {
  SignalDesc counters[NetDevStats::kColumnCount] = {
      CounterDesc("titan_network_receive_bytes_total", "Bytes received.", {"device"}),
      CounterDesc("titan_network_receive_packets_total", "Packets received.", {"device"}),
      CounterDesc("titan_network_receive_errors_total", "Receive errors.", {"device"}),
      CounterDesc("titan_network_receive_drops_total", "Received packets dropped.", {"device"}),
      CounterDesc("titan_network_transmit_bytes_total", "Bytes transmitted.", {"device"}),
      CounterDesc("titan_network_transmit_packets_total", "Packets transmitted.", {"device"}),
      CounterDesc("titan_network_transmit_errors_total", "Transmit errors.", {"device"}),
      CounterDesc("titan_network_transmit_drops_total", "Transmitted packets dropped.", {"device"}),
  };
  SignalDesc receive_rate = GaugeDesc("titan_network_receive_bytes_per_second",
                                      "Receive throughput over the last sampling interval.",
                                      {"device"}, RateBuckets(50e9), /*detect=*/true);
  SignalDesc transmit_rate = GaugeDesc("titan_network_transmit_bytes_per_second",
                                       "Transmit throughput over the last sampling interval.",
                                       {"device"}, RateBuckets(50e9), /*detect=*/true);
};

const Descs& D() {
  static const Descs* descs = new Descs();
  return *descs;
}

}  // namespace

Status ParseNetDev(std::string_view text, std::vector<NetDevStats>* out) {
  out->clear();
  int line_number = 0;
  while (!text.empty()) {
    std::string_view line = NextLine(&text);
    ++line_number;
    if (Trim(line).empty() || line.find('|') != std::string_view::npos) continue;  // headers
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      return InvalidArgumentError("net/dev line " + std::to_string(line_number) +
                                  ": no ':' after the interface name");
    }
    NetDevStats stats;
    stats.name = Trim(line.substr(0, colon));
    std::string_view rest = line.substr(colon + 1);
    uint64_t columns[kProcColumns];
    bool bad = false;
    const int n = collectors_internal::ParseUintFields(&rest, columns, kProcColumns, &bad);
    if (stats.name.empty() || n < kProcColumns) {
      return InvalidArgumentError("net/dev line " + std::to_string(line_number) +
                                  ": expected an interface name and 16 numeric columns");
    }
    for (int c = 0; c < NetDevStats::kColumnCount; ++c) stats.value[c] = columns[kSourceColumn[c]];
    out->push_back(stats);
  }
  return OkStatus();
}

struct NetCollector::Interface {
  Series* counters[NetDevStats::kColumnCount] = {};
  Series* receive_rate = nullptr;
  Series* transmit_rate = nullptr;
  ResettableCounter values[NetDevStats::kColumnCount];
  int64_t last_ns = 0;
};

struct NetCollector::Table : collectors_internal::DeviceTable<NetCollector::Interface> {
  Table() : DeviceTable(kMaxInterfaces) {}
};

NetCollector::NetCollector(NetCollectorOptions options) : options_(options) {}
NetCollector::~NetCollector() = default;

Status NetCollector::Init(const CollectorContext& ctx) {
  ctx_ = ctx;
  reader_ = std::make_unique<FileReader>(ctx.env->ProcPath("net/dev"));
  table_ = std::make_unique<Table>();
  TITAN_RETURN_IF_ERROR(collectors_internal::ReadAndParse(*reader_, ParseNetDev, &parsed_));
  return OkStatus();
}

void NetCollector::Resolve(Interface& entry, std::string_view device) {
  MetricRegistry& r = *ctx_.registry;
  const LabelValues labels = {std::string(device)};
  for (int c = 0; c < NetDevStats::kColumnCount; ++c) {
    entry.counters[c] = r.GetOrCreate(D().counters[c], labels, ctx_.interval_ns);
  }
  entry.receive_rate = r.GetOrCreate(D().receive_rate, labels, ctx_.interval_ns);
  entry.transmit_rate = r.GetOrCreate(D().transmit_rate, labels, ctx_.interval_ns);
}

Status NetCollector::Collect(int64_t now_ns) {
  TITAN_RETURN_IF_ERROR(collectors_internal::ReadAndParse(*reader_, ParseNetDev, &parsed_));
  table_->BeginRound();
  for (const NetDevStats& stats : parsed_) {
    if (stats.name == "lo" && !options_.include_loopback) continue;
    bool created = false;
    Interface* entry = table_->Find(stats.name, &created);
    if (entry == nullptr) {
      collectors_internal::ReportInvalid(ctx_, name(), "too many network interfaces; ignoring");
      continue;
    }
    if (created) Resolve(*entry, stats.name);
    uint64_t delta[NetDevStats::kColumnCount];
    const bool have_delta = collectors_internal::AdvanceAll(
        ctx_, name(), "net/dev", stats.name, NetDevStats::kColumnCount, stats.value, kMaxPerSecond,
        now_ns - entry->last_ns, entry->values, delta);
    for (int c = 0; c < NetDevStats::kColumnCount; ++c) {
      collectors_internal::SetCounter(entry->counters[c], now_ns, entry->values[c].total);
    }
    double rate = 0;
    if (have_delta &&
        collectors_internal::RatePerSecond(static_cast<double>(delta[NetDevStats::kRxBytes]),
                                           now_ns - entry->last_ns, &rate)) {
      collectors_internal::RecordGauge(entry->receive_rate, now_ns, rate);
      collectors_internal::RatePerSecond(static_cast<double>(delta[NetDevStats::kTxBytes]),
                                         now_ns - entry->last_ns, &rate);
      collectors_internal::RecordGauge(entry->transmit_rate, now_ns, rate);
    }
    entry->last_ns = now_ns;
  }
  table_->EndRound();
  return OkStatus();
}

std::unique_ptr<Collector> MakeNetCollector() { return std::make_unique<NetCollector>(); }

}  // namespace titan
