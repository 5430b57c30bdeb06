// titan run's etcd client against an etcd that misbehaves (issue 37): a keep-alive that gets no
// answer must not delay the next one past the lease's TTL, and etcd's error text reaches the
// terminal bounded and escaped. etcd is a test double here (test/support/fault_http_server.h):
// a real etcd does not hang one request on demand; test/run/test_run_e2e.py runs the real one.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "src/base/clock.h"
#include "src/supervisor/etcd_client.h"
#include "src/supervisor/rendezvous.h"
#include "test/support/fault_http_server.h"

namespace titan::supervisor {
namespace {

using testing::FaultHttpServer;
using testing::HttpRequest;

std::string Json(const std::string& body) {
  return FaultHttpServer::Answer(200, body, {{"Content-Type", "application/json"}});
}

// What a rendezvous needs from etcd: a lease of `ttl` seconds, keep-alives, a txn that succeeds,
// an empty answer to anything else.
void AnswerAsEtcd(const HttpRequest& r, FaultHttpServer::Connection& c, const std::string& ttl) {
  if (r.path == "/v3/lease/grant") {
    c.Write(Json(R"({"ID":"7","TTL":")" + ttl + "\"}"));
  } else if (r.path == "/v3/lease/keepalive") {
    c.Write(Json(R"({"result":{"ID":"7","TTL":")" + ttl + "\"}}"));
  } else if (r.path == "/v3/kv/txn") {
    c.Write(Json(R"({"succeeded":true})"));
  } else {
    c.Write(Json("{}"));
  }
}

// The first keep-alive hangs for 5 s; the old loop waited out its 1.5 s timeout and then a whole
// period (TTL/3) more: 2.8 s after the grant, past the 2 s TTL, and etcd drops the lease.
TEST(EtcdFaults, AKeepAliveWithoutAnAnswerIsRetriedWithinTheLeaseTtl) {
  std::atomic<bool> first{true};
  FaultHttpServer etcd([&](const HttpRequest& r, FaultHttpServer::Connection& c) {
    if (r.path == "/v3/lease/keepalive" && first.exchange(false)) {
      c.Sleep(5 * kNsPerSecond);
      c.Close();
      return;
    }
    AnswerAsEtcd(r, c, "2");
  });
  EtcdRendezvousOptions options;
  options.endpoint = etcd.url();
  options.self.id = "n1";
  options.lease_ttl_seconds = 2;
  options.request_timeout_ms = 1500;
  {
    Result<std::unique_ptr<Rendezvous>> rdzv = MakeEtcdRendezvous(options);
    ASSERT_TRUE(rdzv.ok()) << rdzv.status().ToString();
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    (*rdzv)->Abandon();
  }
  int64_t granted_ns = 0;
  std::vector<int64_t> keepalives_ns;
  for (const HttpRequest& r : etcd.requests()) {
    if (r.path == "/v3/lease/grant") granted_ns = r.mono_ns;
    if (r.path == "/v3/lease/keepalive") keepalives_ns.push_back(r.mono_ns);
  }
  ASSERT_GE(keepalives_ns.size(), 2u);
  EXPECT_LT(keepalives_ns[1] - granted_ns, 2 * kNsPerSecond)
      << "the keep-alive after the unanswered one came "
      << (keepalives_ns[1] - granted_ns) / 1'000'000 << " ms after the grant, past the 2 s TTL";
}

// During an etcd outage titan run's poll backs off (jittered, 200 ms doubling to 5 s) instead of
// failing every poll_interval (here 10 ms: about 200 polls in 2 s before).
TEST(EtcdFaults, PollsBackOffDuringAnOutage) {
  std::atomic<bool> down{false};
  FaultHttpServer etcd([&](const HttpRequest& r, FaultHttpServer::Connection& c) {
    if (down) {
      c.Write(FaultHttpServer::Answer(503, R"({"error":"etcdserver: leader changed"})"));
    } else {
      AnswerAsEtcd(r, c, "5");
    }
  });
  EtcdRendezvousOptions options;
  options.endpoint = etcd.url();
  options.self.id = "n1";
  options.poll_interval_ns = 10'000'000;
  Result<std::unique_ptr<Rendezvous>> rdzv = MakeEtcdRendezvous(options);
  ASSERT_TRUE(rdzv.ok()) << rdzv.status().ToString();
  down = true;
  size_t before = etcd.count("POST", "/v3/kv/range");
  Assignment current;
  current.members = {"n1"};
  int failed = 0;
  for (int64_t end = MonoNowNs() + 2 * kNsPerSecond; MonoNowNs() < end;) {
    failed += !(*rdzv)->Poll(current).ok();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  (*rdzv)->Abandon();
  size_t polls = etcd.count("POST", "/v3/kv/range") - before;
  EXPECT_GE(failed, 2);
  EXPECT_LE(polls, 12u) << "etcd polled at full rate during an outage";
}

// An answer about other keys than the ones asked for is refused, not used (it was taken as
// the value of the key asked for).
TEST(EtcdFaults, AnAnswerAboutAnotherKeyIsRefused) {
  FaultHttpServer etcd([](const HttpRequest& r, FaultHttpServer::Connection& c) {
    // Always key "/other" = "1" (base64 "L290aGVy", "MQ==").
    c.Write(Json(R"({"kvs":[{"key":"L290aGVy","value":"MQ=="}],"count":"1"})"));
  });
  EtcdClient client(etcd.url(), 1000);
  Result<EtcdKeyValue> got = client.Get("/titan/job/gen");
  EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument) << got.status().ToString();
  auto listed = client.GetPrefix("/titan/job/nodes/");
  EXPECT_EQ(listed.status().code(), StatusCode::kInvalidArgument) << listed.status().ToString();
}

TEST(EtcdFaults, ErrorTextIsBoundedAndEscaped) {
  FaultHttpServer etcd([](const HttpRequest& r, FaultHttpServer::Connection& c) {
    c.Write(FaultHttpServer::Answer(500, "\x1b[2J\x1b]0;pwn\x07" + std::string(100000, 'x')));
  });
  EtcdClient client(etcd.url(), 1000);
  Status status = client.Put("k", "v");
  std::string message(status.message());
  EXPECT_EQ(message.find('\x1b'), std::string::npos) << message;
  EXPECT_NE(message.find("\\x1b[2J"), std::string::npos) << message;
  EXPECT_LT(message.size(), 1000u);
}

}  // namespace
}  // namespace titan::supervisor
