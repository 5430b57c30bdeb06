#include "src/supervisor/rendezvous.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include <fmt/format.h>

#include "src/base/backoff.h"
#include "src/base/clock.h"
#include "src/base/json_depth.h"
#include "src/base/log.h"
#include "src/base/text.h"
#include "src/supervisor/etcd_client.h"

namespace titan::supervisor {

int PickFreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  int port = 0;
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

namespace {

constexpr int64_t kWaitReportNs = 5 * kNsPerSecond;  // how often Join says what it waits for

using nlohmann::json;

// A fixed membership: one node (no etcd), or the nodes a scheduler placed the job on (Slurm's
// node list, no etcd). One node restarts in place as often as the budget allows; several nodes
// cannot agree on a restart without etcd, so a failure ends the job there.
class StaticRendezvous final : public Rendezvous {
 public:
  explicit StaticRendezvous(StaticPlan plan) : plan_(std::move(plan)) {}

  Result<Assignment> Join(int64_t after_generation, int64_t excluded_until_mono_ns,
                          const std::function<bool()>& stop) override {
    const int nnodes = static_cast<int>(plan_.members.size());
    if (nnodes > 1 && after_generation >= 0) {
      return FailedPreconditionError(fmt::format(
          "the {} nodes of this job met without etcd (a static plan: the scheduler's node list "
          "or --node-rank), "
          "so they cannot agree on a restart in place: the job ends here (give --etcd for "
          "in-place recovery and isolation, or let the scheduler requeue the job)",
          nnodes));
    }
    if (MonoNowNs() < excluded_until_mono_ns) {
      return FailedPreconditionError(
          "the only node is excluded after repeated failures and no other node can continue "
          "(raise --max-failures or fix the node)");
    }
    Assignment a;
    a.generation = std::max(after_generation + 1, generation_);
    generation_ = a.generation;
    a.master_addr = plan_.master_addr;
    a.master_port = plan_.master_port > 0 ? plan_.master_port : PickFreePort();
    a.members = plan_.members;
    a.member_hosts = plan_.members;
    a.group_rank = plan_.index;
    a.nnodes = nnodes;
    a.rank_offset = plan_.index * plan_.nproc;
    a.world_size = nnodes * plan_.nproc;
    a.reason = reason_;
    return a;
  }
  Result<bool> RequestRestart(int64_t generation, const nlohmann::json& reason) override {
    reason_ = reason;
    generation_ = generation + 1;
    return true;
  }
  Result<Health> Poll(const Assignment&) override { return Health{}; }
  Status MarkDone(const Assignment&) override { return OkStatus(); }
  // The scheduler waits for every node's titan run; each ends when its own workers did.
  Result<bool> AllDone(const Assignment&) override { return true; }
  Status PublishStats(const Assignment&, const std::map<int, double>&) override {
    return OkStatus();
  }
  Result<std::map<int, double>> ReadStats(const Assignment&) override {
    return std::map<int, double>();
  }
  void Leave() override {}
  void Abandon() override {}

 private:
  StaticPlan plan_;
  int64_t generation_ = 0;
  nlohmann::json reason_ = {{"reason", "start"}};
};

nlohmann::json ParseJsonOr(const std::string& text, nlohmann::json fallback) {
  if (!CheckJsonDepth(text, "etcd value").ok()) return fallback;
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  return j.is_discarded() ? fallback : j;
}

int64_t GenOf(const nlohmann::json& rec) {
  auto it = rec.find("gen");
  return (it != rec.end() && it->is_number_integer()) ? it->get<int64_t>() : 0;
}

// The node id of a join key ".../join/<id>".
std::string JoinedId(const EtcdKeyValue& kv) { return kv.key.substr(kv.key.rfind('/') + 1); }

class EtcdRendezvous final : public Rendezvous {
 public:
  explicit EtcdRendezvous(EtcdRendezvousOptions o)
      : o_(std::move(o)),
        etcd_(o_.endpoint, o_.request_timeout_ms),
        prefix_("/titan/" + o_.job_id + "/") {}

  ~EtcdRendezvous() override { StopKeepAlive(); }

  Status Connect() {
    TITAN_RETURN_IF_ERROR(Register());
    // The generation record exists from the first node on.
    nlohmann::json first = {{"gen", 0}, {"reason", "start"}, {"node", o_.self.id}};
    TITAN_RETURN_IF_ERROR(etcd_.CreateIfAbsent(prefix_ + "gen", first.dump()).status());
    keepalive_ = std::thread([this] { KeepAliveLoop(); });
    return OkStatus();
  }

  Result<Assignment> Join(int64_t after_generation, int64_t excluded_until_mono_ns,
                          const std::function<bool()>& stop) override {
    const int64_t start = MonoNowNs();
    int64_t joined_gen = -1;
    int64_t min_reached_ns = -1;
    size_t last_count = 0;
    // What the loop waits for, said on stderr every kWaitReportNs (a silent wait of minutes
    // for a node that never comes looks like a hang).
    std::string waiting_for;
    int64_t next_report_ns = start + kWaitReportNs;
    while (true) {
      if (stop()) return UnavailableError("rendezvous interrupted by a signal");
      if (!waiting_for.empty() && MonoNowNs() >= next_report_ns) {
        next_report_ns = MonoNowNs() + kWaitReportNs;
        Log(LogLevel::kInfo, "run",
            "rendezvous (etcd {}, job '{}'): waiting for {}; {:.0f} s of --join-timeout left",
            o_.endpoint, o_.job_id, waiting_for,
            std::max<double>(0, (o_.join_timeout_ns - (MonoNowNs() - start)) / 1e9));
      }
      if (MonoNowNs() - start > o_.join_timeout_ns) {
        return DeadlineExceededError(fmt::format(
            "rendezvous: fewer than --min-nodes={} nodes joined within {} s (etcd {}, job '{}')",
            o_.min_nodes, o_.join_timeout_ns / kNsPerSecond, o_.endpoint, o_.job_id));
      }
      TITAN_RETURN_IF_ERROR(EnsureLease());
      auto done = etcd_.Get(prefix_ + "done");
      if (done.ok()) {
        Assignment a;
        a.job_done = true;
        return a;
      }
      TITAN_ASSIGN_OR_RETURN(EtcdKeyValue gen_kv, etcd_.Get(prefix_ + "gen"));
      nlohmann::json gen_rec = ParseJsonOr(gen_kv.value, nlohmann::json::object());
      int64_t gen = GenOf(gen_rec);
      std::string rdzv = fmt::format("{}rdzv/{}/", prefix_, gen);
      auto closed = etcd_.Get(rdzv + "closed");
      if (closed.ok()) {
        nlohmann::json members = ParseJsonOr(closed->value, nlohmann::json::array());
        if (gen > after_generation && members.is_array()) {
          auto a = AssignmentFrom(gen, members, gen_rec);
          if (a.ok()) return a;
        }
        // Not a member (late, excluded or stale): wait for the next generation.
        waiting_for = fmt::format(
            "generation {} to end (it started without this node) so that a new one admits it", gen);
      } else if (MonoNowNs() < excluded_until_mono_ns) {
        waiting_for = fmt::format("the end of this node's exclusion ({:.0f} s)",
                                  (excluded_until_mono_ns - MonoNowNs()) / 1e9);
      } else if (gen > after_generation) {
        if (joined_gen != gen) {
          nlohmann::json me = {{"id", o_.self.id},
                               {"addr", o_.self.addr},
                               {"host", o_.self.host},
                               {"nproc", o_.self.nproc},
                               {"port", PickFreePort()}};
          TITAN_RETURN_IF_ERROR(etcd_.Put(rdzv + "join/" + o_.self.id, me.dump(), lease_));
          joined_gen = gen;
          min_reached_ns = -1;
        }
        TITAN_ASSIGN_OR_RETURN(auto joins, etcd_.GetPrefix(rdzv + "join/"));
        if (joins.size() != last_count) {
          last_count = joins.size();
          min_reached_ns = -1;  // someone new came: the last call starts again
        }
        if (static_cast<int>(joins.size()) >= o_.min_nodes && min_reached_ns < 0) {
          min_reached_ns = MonoNowNs();
        }
        std::string ids;
        for (const EtcdKeyValue& kv : joins) {
          ids += (ids.empty() ? "" : ", ") + kv.key.substr(kv.key.rfind('/') + 1);
        }
        waiting_for =
            static_cast<int>(joins.size()) < o_.min_nodes
                ? fmt::format("{} more node(s): {} of --min-nodes {} joined ({})",
                              o_.min_nodes - static_cast<int>(joins.size()), joins.size(),
                              o_.min_nodes, ids)
                : fmt::format("the last call for more nodes ({} of at most {} joined: {})",
                              joins.size(), o_.max_nodes, ids);
        // With a risk table, reaching max_nodes is not full: spares may still come to choose
        // from, until the last call or one more node than needed.
        bool full = static_cast<int>(joins.size()) >= o_.max_nodes + (o_.risk ? 1 : 0);
        bool last_call_over =
            min_reached_ns >= 0 && MonoNowNs() - min_reached_ns >= o_.last_call_ns;
        if (full || last_call_over) {
          // With a risk table only the lowest-risk nodes are candidates (others stay spares).
          std::vector<std::string> chosen;
          if (o_.risk) {
            std::vector<std::string> ids;
            for (const EtcdKeyValue& kv : joins) ids.push_back(JoinedId(kv));
            chosen = predict::LowestRisk(*o_.risk, ids, o_.max_nodes);
          }
          nlohmann::json members = nlohmann::json::array();
          for (const EtcdKeyValue& kv : joins) {
            if (o_.risk && std::find(chosen.begin(), chosen.end(), JoinedId(kv)) == chosen.end()) {
              continue;
            }
            nlohmann::json m = ParseJsonOr(kv.value, nlohmann::json());
            if (m.is_object()) members.push_back(m);
            if (static_cast<int>(members.size()) == o_.max_nodes) break;
          }
          // Keys come sorted, so members are in node-id order: stable group ranks.
          TITAN_RETURN_IF_ERROR(etcd_.CreateIfAbsent(rdzv + "closed", members.dump()).status());
          continue;  // read it back: whoever created it decided
        }
      } else {
        waiting_for = fmt::format("a generation after {} (the one this node left)", gen);
      }
      ::usleep(50'000);
    }
  }

  Result<bool> RequestRestart(int64_t generation, const nlohmann::json& reason) override {
    TITAN_ASSIGN_OR_RETURN(EtcdKeyValue gen_kv, etcd_.Get(prefix_ + "gen"));
    nlohmann::json cur = ParseJsonOr(gen_kv.value, nlohmann::json::object());
    if (GenOf(cur) != generation) return false;  // someone else already restarted it
    nlohmann::json next = reason;
    next["gen"] = generation + 1;
    next["node"] = o_.self.id;
    return etcd_.CompareAndSwap(prefix_ + "gen", gen_kv.value, next.dump());
  }

  // Every poll_interval_ns; after a failure (etcd unreachable or refusing), not before a jittered
  // back-off of 200 ms doubling to 5 s, so that an outage is not polled at full rate by every
  // node.
  Result<Health> Poll(const Assignment& current) override {
    Health h;
    int64_t now = MonoNowNs();
    if (now < next_poll_ns_) return h;
    next_poll_ns_ = now + o_.poll_interval_ns;
    Result<Health> polled = PollEtcd(current);
    if (polled.ok()) {
      poll_backoff_.Reset();
    } else {
      next_poll_ns_ = now + std::max(o_.poll_interval_ns, poll_backoff_.Next());
    }
    return polled;
  }

 private:
  Result<Health> PollEtcd(const Assignment& current) {
    Health h;
    TITAN_RETURN_IF_ERROR(EnsureLease());
    TITAN_ASSIGN_OR_RETURN(EtcdKeyValue gen_kv, etcd_.Get(prefix_ + "gen"));
    nlohmann::json rec = ParseJsonOr(gen_kv.value, nlohmann::json::object());
    if (GenOf(rec) > current.generation) {
      h.restart = true;
      h.reason = rec;
    }
    TITAN_ASSIGN_OR_RETURN(auto nodes, etcd_.GetPrefix(prefix_ + "nodes/"));
    for (const std::string& m : current.members) {
      bool alive = std::any_of(nodes.begin(), nodes.end(), [&](const EtcdKeyValue& kv) {
        return kv.key == prefix_ + "nodes/" + m;
      });
      if (!alive) h.lost.push_back(m);
    }
    h.job_done = etcd_.Get(prefix_ + "done").ok();
    h.consulted = true;
    return h;
  }

 public:
  Status MarkDone(const Assignment& current) override {
    return etcd_.Put(fmt::format("{}rdzv/{}/done/{}", prefix_, current.generation, o_.self.id),
                     "1");
  }

  Result<bool> AllDone(const Assignment& current) override {
    if (etcd_.Get(prefix_ + "done").ok()) return true;
    TITAN_ASSIGN_OR_RETURN(
        auto done, etcd_.GetPrefix(fmt::format("{}rdzv/{}/done/", prefix_, current.generation)));
    if (done.size() < current.members.size()) return false;
    TITAN_RETURN_IF_ERROR(etcd_.CreateIfAbsent(prefix_ + "done", "1").status());
    return true;
  }

  Status PublishStats(const Assignment& current, const std::map<int, double>& medians) override {
    json j = json::object();
    for (const auto& [rank, m] : medians) j[std::to_string(rank)] = m;
    return etcd_.Put(fmt::format("{}rdzv/{}/stats/{}", prefix_, current.generation, o_.self.id),
                     j.dump(), lease_);
  }

  Result<std::map<int, double>> ReadStats(const Assignment& current) override {
    TITAN_ASSIGN_OR_RETURN(
        auto kvs, etcd_.GetPrefix(fmt::format("{}rdzv/{}/stats/", prefix_, current.generation)));
    std::map<int, double> out;
    for (const EtcdKeyValue& kv : kvs) {
      json j = ParseJsonOr(kv.value, json());
      if (!j.is_object()) continue;
      for (auto& [key, v] : j.items()) {
        int64_t rank = 0;
        if (ParseInt64(key, &rank) && v.is_number() && rank >= 0 && rank < (1 << 20)) {
          out[static_cast<int>(rank)] = v.get<double>();
        }
      }
    }
    return out;
  }

  void Leave() override {
    StopKeepAlive();
    std::lock_guard<std::mutex> l(lease_mu_);
    if (lease_ != 0) etcd_.RevokeLease(lease_).IgnoreError();
    lease_ = 0;
  }

  void Abandon() override { StopKeepAlive(); }

 private:
  Status Register() {
    TITAN_ASSIGN_OR_RETURN(int64_t lease, etcd_.GrantLease(o_.lease_ttl_seconds));
    nlohmann::json me = {
        {"id", o_.self.id}, {"addr", o_.self.addr}, {"nproc", o_.self.nproc}, {"pid", ::getpid()}};
    TITAN_RETURN_IF_ERROR(etcd_.Put(prefix_ + "nodes/" + o_.self.id, me.dump(), lease));
    std::lock_guard<std::mutex> l(lease_mu_);
    lease_ = lease;
    lease_lost_ = false;
    return OkStatus();
  }

  // If the keep-alive thread found the lease gone (this node was declared lost, e.g. after a
  // long stall), registers again with a new lease.
  Status EnsureLease() {
    bool lost;
    {
      std::lock_guard<std::mutex> l(lease_mu_);
      lost = lease_lost_;
    }
    if (!lost) return OkStatus();
    Log(LogLevel::kWarning, "run", "etcd lease of node {} expired; registering again", o_.self.id);
    return Register();
  }

  Result<Assignment> AssignmentFrom(int64_t gen, const nlohmann::json& members,
                                    const nlohmann::json& gen_rec) {
    Assignment a;
    a.generation = gen;
    a.reason = gen_rec;
    a.group_rank = -1;
    int offset = 0;
    for (const nlohmann::json& m : members) {
      if (!m.is_object() || !m.contains("id") || !m["id"].is_string() || !m.contains("nproc") ||
          !m["nproc"].is_number_integer() || !m.contains("addr") || !m["addr"].is_string() ||
          !m.contains("port") || !m["port"].is_number_integer()) {
        return InvalidArgumentError("etcd rendezvous record has a malformed member");
      }
      std::string id = m["id"].get<std::string>();
      if (a.members.empty()) {
        a.master_addr = m["addr"].get<std::string>();
        a.master_port = m["port"].get<int>();
      }
      if (id == o_.self.id) {
        a.group_rank = static_cast<int>(a.members.size());
        a.rank_offset = offset;
      }
      a.members.push_back(id);
      a.member_hosts.push_back(m.contains("host") && m["host"].is_string()
                                   ? m["host"].get<std::string>()
                                   : std::string());
      offset += m["nproc"].get<int>();
    }
    if (a.group_rank < 0) return NotFoundError("not a member");
    a.nnodes = static_cast<int>(a.members.size());
    a.world_size = offset;
    return a;
  }

  // Refreshes the lease every TTL/3. A refresh is never delayed past the TTL: an attempt may
  // take at most half of what is left of the TTL since the last refresh (so that a retry still
  // fits), and a failed one is retried after a short jittered back-off (at most TTL/12) instead
  // of a whole period later. The keep-alive has a client of its own and is not rate limited.
  void KeepAliveLoop() {
    EtcdClient client(o_.endpoint, o_.request_timeout_ms);
    const int64_t ttl_ns = o_.lease_ttl_seconds * kNsPerSecond;
    const int64_t period_ns = std::max<int64_t>(ttl_ns / 3, 200 * kNsPerMs);
    Backoff retry(50 * kNsPerMs, std::max<int64_t>(period_ns / 4, 50 * kNsPerMs));
    int64_t refreshed_lease = 0;
    int64_t refreshed_ns = MonoNowNs();
    int64_t next_ns = refreshed_ns + period_ns;
    std::unique_lock<std::mutex> l(lease_mu_);
    while (!stop_keepalive_) {
      cv_.wait_for(l, std::chrono::nanoseconds(std::max<int64_t>(0, next_ns - MonoNowNs())),
                   [this] { return stop_keepalive_; });
      if (stop_keepalive_) break;
      int64_t lease = lease_;
      int64_t now_ns = MonoNowNs();
      if (lease == 0 || lease_lost_) {
        next_ns = now_ns + period_ns;
        continue;
      }
      if (lease != refreshed_lease) {  // a new lease (registered again): granted about now
        refreshed_lease = lease;
        refreshed_ns = now_ns;
      }
      int64_t left_ms = (refreshed_ns + ttl_ns - now_ns) / kNsPerMs;
      int64_t timeout_ms = std::clamp<int64_t>(left_ms / 2, 100, o_.request_timeout_ms);
      l.unlock();
      Status s = client.KeepAlive(lease, timeout_ms);
      l.lock();
      if (s.ok()) {
        refreshed_ns = now_ns;
        retry.Reset();
        next_ns = now_ns + period_ns;
      } else if (s.code() == StatusCode::kNotFound) {
        if (lease == lease_) lease_lost_ = true;
        next_ns = MonoNowNs() + period_ns;
      } else {
        next_ns = MonoNowNs() + retry.Next();
      }
    }
  }

  void StopKeepAlive() {
    {
      std::lock_guard<std::mutex> l(lease_mu_);
      stop_keepalive_ = true;
    }
    cv_.notify_all();
    if (keepalive_.joinable()) keepalive_.join();
  }

  EtcdRendezvousOptions o_;
  EtcdClient etcd_;
  std::string prefix_;
  std::mutex lease_mu_;
  std::condition_variable cv_;
  int64_t lease_ = 0;
  bool lease_lost_ = false;
  bool stop_keepalive_ = false;
  std::thread keepalive_;
  int64_t next_poll_ns_ = 0;
  Backoff poll_backoff_{200'000'000, 5'000'000'000};
};

}  // namespace

std::unique_ptr<Rendezvous> MakeLocalRendezvous(std::string master_addr, int nproc) {
  return MakeStaticRendezvous(StaticPlan{{"local"}, 0, std::move(master_addr), 0, nproc});
}

std::unique_ptr<Rendezvous> MakeStaticRendezvous(StaticPlan plan) {
  return std::make_unique<StaticRendezvous>(std::move(plan));
}

Result<std::unique_ptr<Rendezvous>> MakeEtcdRendezvous(const EtcdRendezvousOptions& options) {
  auto r = std::make_unique<EtcdRendezvous>(options);
  TITAN_RETURN_IF_ERROR_CTX(r->Connect(), "joining the job through etcd");
  return std::unique_ptr<Rendezvous>(std::move(r));
}

}  // namespace titan::supervisor
