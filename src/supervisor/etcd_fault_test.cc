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

// The first keep-alive hangs for 5 s; the old loop waited out its 1.5 s timeout and then a whole
// period (TTL/3) more: 2.8 s after the grant, past the 2 s TTL, and etcd drops the lease.
TEST(EtcdFaults, AKeepAliveWithoutAnAnswerIsRetriedWithinTheLeaseTtl) {
  std::atomic<bool> first{true};
  FaultHttpServer etcd([&](const HttpRequest& r, FaultHttpServer::Connection& c) {
    if (r.path == "/v3/lease/grant") {
      c.Write(Json(R"({"ID":"7","TTL":"2"})"));
    } else if (r.path == "/v3/lease/keepalive") {
      if (first.exchange(false)) {
        c.Sleep(5 * kNsPerSecond);
        c.Close();
        return;
      }
      c.Write(Json(R"({"result":{"ID":"7","TTL":"2"}})"));
    } else if (r.path == "/v3/kv/txn") {
      c.Write(Json(R"({"succeeded":true})"));
    } else {
      c.Write(Json("{}"));
    }
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
