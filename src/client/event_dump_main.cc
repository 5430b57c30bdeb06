// titan_event_dump [--count-only] SOCKET_PATH: receives titan client events on SOCKET_PATH and
// prints each as one JSON line on stdout (with --count-only: nothing per event, for benchmarks)
// until SIGTERM or SIGINT, then the receiver's counters as one JSON line on stderr. The first
// stdout line, {"ready":true,...}, is written once the socket is bound, so a test or a person can
// start senders after reading it. Exit status: 0 after a signal, 1 if the socket cannot be bound
// (the error on stderr), 2 on bad usage.
//
// A debugging and testing tool: `titan agent` embeds the same EventReceiver.
#include <signal.h>

#include <cstdio>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "src/client/event_receiver.h"

namespace {

nlohmann::json ToJson(const titan::wire::ParsedEvent& e) {
  return {{"kind", titan::wire::EventKindName(e.kind)},
          {"rank", e.rank},
          {"pid", e.pid()},
          {"claimed_pid", e.claimed_pid},
          {"uid", e.sender_uid},
          {"step", e.step},
          {"value", e.value},
          {"name", std::string(e.name())},
          {"time_ns", e.time_ns},
          {"received_ns", e.received_ns}};
}

}  // namespace

int main(int argc, char** argv) {
  const bool count_only = argc == 3 && std::string_view(argv[1]) == "--count-only";
  if (argc != 2 + count_only || argv[argc - 1][0] == '-') {
    std::fprintf(stderr, "usage: %s [--count-only] SOCKET_PATH\n", argv[0]);
    return 2;
  }
  // Block the stop signals before any thread starts, then wait for them synchronously.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  titan::EventReceiverOptions options;
  options.socket_path = argv[argc - 1];
  options.on_event = [count_only](const titan::wire::ParsedEvent& e) {
    if (count_only) return;
    std::string line = ToJson(e).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    line += '\n';
    std::fwrite(line.data(), 1, line.size(), stdout);
    std::fflush(stdout);
  };
  auto receiver = titan::EventReceiver::Start(std::move(options));
  if (!receiver.ok()) {
    std::fprintf(stderr, "titan_event_dump: %s\n", receiver.status().ToString().c_str());
    return 1;
  }
  std::printf("%s\n", nlohmann::json({{"ready", true},
                                      {"socket", (*receiver)->socket_path()},
                                      {"receive_buffer_bytes", (*receiver)->receive_buffer_bytes()},
                                      {"max_datagram_queue", (*receiver)->max_datagram_queue()}})
                          .dump()
                          .c_str());
  std::fflush(stdout);

  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  (*receiver)->Stop();  // delivers what is already queued
  const titan::EventReceiverStats s = (*receiver)->Stats();
  nlohmann::json rejected = nlohmann::json::object();
  for (size_t i = 0; i < titan::wire::kRejectReasonCount; ++i) {
    rejected[std::string(
        titan::wire::RejectReasonName(static_cast<titan::wire::RejectReason>(i)))] = s.rejected[i];
  }
  std::fprintf(stderr, "%s\n",
               nlohmann::json({{"datagrams", s.datagrams},
                               {"accepted", s.accepted},
                               {"rejected", rejected},
                               {"oversized", s.oversized},
                               {"names_repaired", s.names_repaired},
                               {"receive_errors", s.receive_errors}})
                   .dump()
                   .c_str());
  return 0;
}
