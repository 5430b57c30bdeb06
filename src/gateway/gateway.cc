// titan gateway's lifecycle: start, reload (ApplyConfig), drain and stop. The request path and
// the replica set live in the files gateway_impl.h names.
#include "src/gateway/gateway.h"

#include <sys/resource.h>

#include <algorithm>

#include <fmt/format.h>

#include "src/base/duration.h"
#include "src/base/log.h"
#include "src/gateway/gateway_impl.h"

namespace titan::gateway {

namespace {

// Client connections the gateway accepts: each may hold an upstream connection too, and the
// health checks, scrapes and logs need descriptors of their own. Past this, clients get 503 at
// once, instead of the gateway running out of descriptors and failing its own health checks
// (which ejected healthy replicas).
size_t ClientConnectionCap(size_t configured) {
  constexpr size_t kReserved = 64;
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return configured;
  const size_t descriptors = static_cast<size_t>(limit.rlim_cur);
  return std::min(configured, descriptors > 2 * kReserved ? (descriptors - kReserved) / 2 : 16);
}

}  // namespace

Status Gateway::Impl::ApplyConfig(GatewayConfig next) {
  TITAN_RETURN_IF_ERROR(ValidateConfig(next));
  if (next.listen_address != config.listen_address || next.listen_port != config.listen_port) {
    return InvalidArgumentError(fmt::format(
        "listen cannot change on reload: the gateway serves {}:{}, the new configuration says "
        "{}:{} (from the file or --listen; 127.0.0.1:8000 when neither sets it); restart the "
        "gateway to move it, or keep listen as it is",
        config.listen_address, config.listen_port, next.listen_address, next.listen_port));
  }
  if (next.launch.command != config.launch.command ||
      next.launch.replicas != config.launch.replicas) {
    return InvalidArgumentError("launch cannot change on reload: restart the gateway");
  }
  // Static replicas: keep those still listed, add new ones, retire the rest.
  std::set<std::string> wanted;
  for (const ReplicaConfig& rc : next.replicas) wanted.insert(rc.url);
  std::set<std::string> have;
  for (const auto& r : replicas) {
    if (r->launched >= 0 || r->removed) continue;
    have.insert(r->name);
  }
  for (const ReplicaConfig& rc : next.replicas) {
    if (have.count(rc.url)) continue;
    Result<http::Url> url = http::ParseUrl(rc.url);
    if (!url.ok()) return url.status();
  }
  const int old_limit = config.admission.max_inflight_per_replica;
  const bool budgets_changed = config.admission.classes.size() != next.admission.classes.size() ||
                               config.hedging.budget != next.hedging.budget ||
                               config.hedging.budget_window_ns != next.hedging.budget_window_ns;
  config = std::move(next);
  health_config = config.health;
  outlier_config = config.outlier;
  stall_config = config.stall;
  if (budgets_changed) ResetHedgeBudgets();
  router->Reconfigure(config.routing);
  for (auto& [pool, queue] : queues) queue.Reconfigure(config.admission);
  queue_depth_series.clear();  // class names may have changed
  for (const auto& r : replicas) {
    if (r->launched < 0 && !r->removed && !wanted.count(r->name)) {
      r->removed = true;
      telemetry.Event("replica_removed", r->name, {});
    }
    if (r->limit == old_limit || r->limit > config.admission.max_inflight_per_replica) {
      r->limit = config.admission.max_inflight_per_replica;
    }
  }
  for (const ReplicaConfig& rc : config.replicas) {
    if (have.count(rc.url)) continue;
    Status added = AddReplica(rc, -1);
    if (!added.ok()) return added;
    telemetry.Event("replica_added", rc.url, {});
  }
  telemetry.Event("reload", "", {{"replicas", config.replicas.size()}});
  Dispatch();
  return OkStatus();
}

void Gateway::Impl::ResetHedgeBudgets() {
  hedge_budgets.clear();
  for (size_t i = 0; i < config.admission.classes.size(); ++i) {
    hedge_budgets.emplace_back(config.hedging.budget, config.hedging.budget_window_ns);
  }
}

Gateway::Gateway(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

Gateway::~Gateway() { Stop(); }

Result<std::unique_ptr<Gateway>> Gateway::Start(GatewayConfig config) {
  TITAN_RETURN_IF_ERROR(ValidateConfig(config));
  auto impl = std::make_shared<Impl>();
  impl->config = config;
  impl->health_config = config.health;
  impl->outlier_config = config.outlier;
  impl->stall_config = config.stall;
  impl->ResetHedgeBudgets();
  impl->router = std::make_unique<Router>(config.routing);
  TITAN_RETURN_IF_ERROR(impl->telemetry.Open(config.event_log));
  if (!config.access_log.empty()) {
    impl->access_log =
        config.access_log == "-" ? stdout : std::fopen(config.access_log.c_str(), "a");
    if (!impl->access_log) {
      return ErrnoError(errno, fmt::format("opening the access log {}", config.access_log));
    }
  }
  for (const ReplicaConfig& rc : config.replicas) {
    TITAN_RETURN_IF_ERROR_CTX(impl->AddReplica(rc, -1), fmt::format("replica {}", rc.url));
  }
  http::ServerOptions options;
  options.address = config.listen_address;
  options.port = config.listen_port;
  options.threads = 1;
  options.max_body_bytes = config.limits.max_body_bytes;
  options.max_connections = ClientConnectionCap(options.max_connections);
  Impl* raw = impl.get();
  TITAN_ASSIGN_OR_RETURN(impl->server,
                         http::Server::Start(options, [raw](http::Exchange& ex) -> awaitable<void> {
                           return raw->Handle(ex);
                         }));
  impl->executor = impl->server->executor();
  if (!config.launch.command.empty()) {
    LaunchOptions launch;
    launch.command = config.launch.command;
    launch.replicas = config.launch.replicas;
    launch.memory_max_bytes = config.launch.memory_max_bytes;
    launch.log_dir = config.launch.log_dir;
    std::weak_ptr<Impl> weak = impl;
    auto launched = ReplicaLauncher::Start(launch, [weak](const ReplicaProcessEvent& e) {
      if (auto self = weak.lock()) {
        asio::post(self->executor, [weak, e] {
          if (auto s = weak.lock()) s->OnProcessEvent(e);
        });
      }
    });
    if (!launched.ok()) return launched.status().WithContext("--launch");
    impl->launcher = std::move(*launched);
    std::vector<std::string> urls = impl->launcher->urls();
    Status added = raw->OnLoop([&] {
      for (size_t i = 0; i < urls.size(); ++i) {
        TITAN_RETURN_IF_ERROR(raw->AddReplica({urls[i], "default"}, static_cast<int>(i)));
      }
      return OkStatus();
    });
    TITAN_RETURN_IF_ERROR(added);
  }
  raw->OnLoop([&] {
    raw->telemetry.Event("start", "",
                         {{"port", raw->server->port()},
                          {"replicas", raw->replicas.size()},
                          {"routing", RoutingPolicyName(config.routing.policy)}});
    raw->StartBackground();
    return 0;
  });
  return std::unique_ptr<Gateway>(new Gateway(std::move(impl)));
}

int Gateway::port() const { return impl_->server ? impl_->server->port() : 0; }

Status Gateway::Reload(GatewayConfig config) {
  return impl_->OnLoop([&] { return impl_->ApplyConfig(std::move(config)); });
}

int Gateway::Drain() {
  Impl* impl = impl_.get();
  if (!impl->server) return 0;
  impl->OnLoop([impl] {
    impl->draining = true;
    impl->telemetry.Event("drain", "", {{"in_flight", impl->counters.in_flight}});
    for (auto& [pool, queue] : impl->queues) {
      while (const Waiter* w = queue.Peek()) {
        Ticket* t = static_cast<Ticket*>(w->owner);
        queue.Pop();
        t->shed = Shed::kDraining;
        t->wake->Notify();
      }
    }
    return 0;
  });
  impl->server->StopAccepting();
  const int64_t deadline = MonoNowNs() + impl->config.drain_timeout_ns;
  uint64_t left = 0;
  for (;;) {
    left = impl->OnLoop([impl] { return impl->counters.in_flight; });
    if (left == 0 || MonoNowNs() >= deadline) break;
    SleepUntilMonoNs(MonoNowNs() + 20 * kNsPerMs);
  }
  // What still runs is cut: each client gets a 503 (or an error event ending its stream), not
  // a connection closed without an answer when the server stops.
  impl->OnLoop([impl] {
    impl->CutCallsForDrain();
    return 0;
  });
  const int64_t answered_by = MonoNowNs() + 2 * kNsPerSecond;
  while (impl->OnLoop([impl] { return impl->handlers; }) > 0 && MonoNowNs() < answered_by) {
    SleepUntilMonoNs(MonoNowNs() + 10 * kNsPerMs);
  }
  return static_cast<int>(left);
}

void Gateway::Stop() {
  Impl* impl = impl_.get();
  if (!impl || !impl->server) return;
  impl->OnLoop([impl] {
    impl->stopping = true;
    impl->telemetry.Event("stop", "", {{"in_flight", impl->counters.in_flight}});
    // Pooled connections belong to the loop's io_context: close them before it goes.
    for (const auto& r : impl->replicas) r->idle.clear();
    return 0;
  });
  // Replicas first, while the loop still takes the launcher's events; then the loop.
  if (impl->launcher) impl->launcher->Stop();
  impl->server->Stop();
  if (!impl->config.perfetto.empty()) {
    Status written = impl->telemetry.WritePerfetto(impl->config.perfetto);
    if (!written.ok()) Log(LogLevel::kWarning, "gateway", "{}", written.ToString());
  }
  if (impl->access_log) std::fflush(impl->access_log);
  // The loop has stopped (its thread joined), but its io_context still exists: connections a
  // request pooled while the server stopped are closed now, before the io_context goes (an
  // ASan run found them closed after it, a use after free).
  for (const auto& r : impl->replicas) r->idle.clear();
  // The coroutines died with the server's loop; nothing refers to the replicas any more.
  impl->server.reset();
}

std::vector<ReplicaSnapshot> Gateway::Replicas() const {
  if (!impl_->server) return {};
  return impl_->OnLoop([this] { return impl_->Snapshot(); });
}

GatewayCounters Gateway::Counters() const {
  if (!impl_->server) return impl_->counters;
  return impl_->OnLoop([this] { return impl_->counters; });
}

std::string Gateway::Metrics() const {
  if (!impl_->server) return "";
  return impl_->OnLoop([this] { return impl_->telemetry.RenderMetrics(""); });
}

}  // namespace titan::gateway
