// titan's Kubernetes client, cordon and controller against an API server that misbehaves
// (issue 37): a node list whose `continue` never changes, watches answered 410 Gone (as the
// HTTP status and as an ERROR event), names that would escape their path, an answer about
// another node, throttling, a silent or a long watch, binary error bodies. The API server is a
// test double (test/support/fault_http_server.h): no real one misbehaves on demand, and none
// runs here (docs/run.md#kubernetes); test_k8s_e2e.py drives the well-behaved stand-in.
// CTest's TIMEOUT (30 s) fails a client that hangs.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>

#include "src/base/clock.h"
#include "src/cluster/k8s/api_client.h"
#include "src/cluster/k8s/controller.h"
#include "src/cluster/k8s/cordon.h"
#include "src/cluster/k8s/event_log.h"
#include "test/support/fault_http_server.h"

namespace titan::k8s {
namespace {

using testing::FaultHttpServer;
using testing::HttpRequest;

std::string Json(int status, const std::string& body,
                 const std::vector<std::pair<std::string, std::string>>& headers = {}) {
  auto all = headers;
  all.emplace_back("Content-Type", "application/json");
  return FaultHttpServer::Answer(status, body, all);
}

ApiEndpoint Endpoint(const FaultHttpServer& server) {
  ApiEndpoint e;
  e.server = server.url();
  e.source = "the test's API server";
  return e;
}

std::string Node(const std::string& name) {
  return R"({"kind":"Node","apiVersion":"v1","metadata":{"name":")" + name +
         R"(","resourceVersion":"7"},"spec":{},"status":{"conditions":[{"type":"Ready","status":"True"}]}})";
}

// An API server for the controller: LLMJobs list empty and their watch stays open; Nodes as
// `nodes` says (list and watch).
class ControllerServer {
 public:
  using NodeHandler = std::function<void(const HttpRequest&, FaultHttpServer::Connection&)>;
  explicit ControllerServer(NodeHandler nodes)
      : server_([nodes](const HttpRequest& r, FaultHttpServer::Connection& c) {
          if (r.path.find("/llmjobs") != std::string::npos) {
            if (r.query.count("watch")) {
              c.Write(
                  "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                  "Transfer-Encoding: chunked\r\n\r\n");
              while (c.Sleep(100'000'000)) {
              }
              c.Close();
              return;
            }
            c.Write(Json(200,
                         R"({"kind":"LLMJobList","metadata":{"resourceVersion":"3"},"items":[]})"));
            return;
          }
          nodes(r, c);
        }) {}

  // Runs the controller for `seconds`; returns the requests for nodes.
  size_t RunAndCountNodeRequests(double seconds) {
    std::atomic<bool> stop{false};
    ApiClient client(Endpoint(server_), &stop);
    ControllerOptions options;
    options.run_for_ns = static_cast<int64_t>(seconds * 1e9);
    options.watch_timeout_ns = 5 * kNsPerSecond;
    options.request_timeout_ns = 2 * kNsPerSecond;
    EventLog events;
    EXPECT_TRUE(events.Open("").ok());
    EXPECT_TRUE(RunController(client, options, &events, &stop).ok());
    return server_.count("GET", "/api/v1/nodes");
  }
  FaultHttpServer& server() { return server_; }

 private:
  FaultHttpServer server_;
};

// S5: a node list that always answers `continue: "same"` got 26,144 LISTs in 12 s. The list
// stops at the repeated token and is retried after a growing back-off.
TEST(K8sControllerFaults, ANodeListWhoseContinueNeverChangesIsNoStorm) {
  ControllerServer server([](const HttpRequest& r, FaultHttpServer::Connection& c) {
    c.Write(Json(
        200,
        R"({"kind":"NodeList","metadata":{"resourceVersion":"1","continue":"same"},"items":[]})"));
  });
  size_t lists = server.RunAndCountNodeRequests(2);
  EXPECT_GE(lists, 2u);
  EXPECT_LE(lists, 30u) << "a storm of node lists";
}

// S5: a watch answered with HTTP 410 Gone: 14,253 requests. Each relist waits a back-off.
TEST(K8sControllerFaults, AWatchAnswered410IsNoStorm) {
  ControllerServer server([](const HttpRequest& r, FaultHttpServer::Connection& c) {
    if (r.query.count("watch")) {
      c.Write(Json(410, R"({"kind":"Status","code":410,"reason":"Expired","message":"too old"})"));
    } else {
      c.Write(Json(200, R"({"kind":"NodeList","metadata":{"resourceVersion":"5"},"items":[]})"));
    }
  });
  size_t requests = server.RunAndCountNodeRequests(2);
  EXPECT_GE(requests, 4u);  // it does list again after 410
  EXPECT_LE(requests, 30u) << "a storm of relists";
}

// S5: a 410 as an ERROR event on the watch: 18,555 requests.
TEST(K8sControllerFaults, AWatchErrorEvent410IsNoStorm) {
  ControllerServer server([](const HttpRequest& r, FaultHttpServer::Connection& c) {
    if (r.query.count("watch")) {
      c.Write(Json(200,
                   R"({"type":"ERROR","object":{"kind":"Status","code":410,"message":"too old"}})"
                   "\n"));
    } else {
      c.Write(Json(200, R"({"kind":"NodeList","metadata":{"resourceVersion":"5"},"items":[]})"));
    }
  });
  size_t requests = server.RunAndCountNodeRequests(2);
  EXPECT_GE(requests, 4u);
  EXPECT_LE(requests, 30u) << "a storm of relists";
}

// A watch that ends at once without an error (a proxy closing it) is no storm either.
TEST(K8sControllerFaults, AWatchThatEndsAtOnceIsNoStorm) {
  ControllerServer server([](const HttpRequest& r, FaultHttpServer::Connection& c) {
    c.Write(
        r.query.count("watch")
            ? Json(200, "")
            : Json(200, R"({"kind":"NodeList","metadata":{"resourceVersion":"5"},"items":[]})"));
  });
  size_t requests = server.RunAndCountNodeRequests(2);
  EXPECT_LE(requests, 30u) << "a storm of watches";
}

// Moderate: `titan k8s cordon '../namespaces/default/pods/victim'` sent its GET to
// /api/v1/namespaces/default/pods/victim. Names are checked (DNS-1123) before any request.
TEST(K8sCordonFaults, NamesThatAreNotDns1123AreRefusedBeforeAnyRequest) {
  FaultHttpServer server([](const HttpRequest& r, FaultHttpServer::Connection& c) {
    c.Write(Json(200, Node("victim")));
  });
  ApiClient client(Endpoint(server));
  for (const std::string& name :
       std::vector<std::string>{"../namespaces/default/pods/victim", "n1/../../x", "N1", "n1?x=1",
                                "", "-n1", std::string(254, 'a')}) {
    CordonRequest request;
    request.node = name;
    request.reason = "xid-79";
    request.pod_namespace = "default";
    Result<CordonResult> result = CordonNode(client, request);
    EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument) << name;
  }
  CordonRequest bad_namespace;
  bad_namespace.node = "n1";
  bad_namespace.reason = "r";
  bad_namespace.pod_namespace = "../kube-system";
  EXPECT_EQ(CordonNode(client, bad_namespace).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(server.count(), 0u);
}

// Moderate: the cordon did not check that the node it got back is the node it asked for.
TEST(K8sCordonFaults, AnAnswerAboutAnotherNodeIsNotActedOn) {
  FaultHttpServer server([](const HttpRequest& r, FaultHttpServer::Connection& c) {
    c.Write(Json(200, Node("n2")));  // whatever was asked
  });
  ApiClient client(Endpoint(server));
  CordonRequest request;
  request.node = "n1";
  request.reason = "xid-79";
  Result<CordonResult> result = CordonNode(client, request);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("asked for node 'n1' but the answer is about node 'n2'"),
            std::string::npos)
      << result.status().ToString();
  EXPECT_EQ(server.count("PATCH"), 0u);
}

// titan run's node id is a pod name: the pod that comes back must be that pod.
TEST(K8sCordonFaults, AnAnswerAboutAnotherPodIsNotActedOn) {
  FaultHttpServer server([](const HttpRequest& r, FaultHttpServer::Connection& c) {
    if (r.path.find("/pods/") != std::string::npos) {
      c.Write(Json(
          200,
          R"({"kind":"Pod","metadata":{"name":"other","namespace":"default"},"spec":{"nodeName":"n9"}})"));
    } else {
      c.Write(Json(404, R"({"kind":"Status","code":404,"message":"not found"})"));
    }
  });
  ApiClient client(Endpoint(server));
  CordonRequest request;
  request.node = "llm-3";
  request.reason = "xid-79";
  request.pod_namespace = "default";
  Result<CordonResult> result = CordonNode(client, request);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("asked for pod 'llm-3'"), std::string::npos)
      << result.status().ToString();
  EXPECT_EQ(server.count("GET", "/api/v1/nodes/n9"), 0u);
}

TEST(K8sClientFaults, RetryAfterIsHonoured) {
  std::atomic<int> calls{0};
  FaultHttpServer server([&](const HttpRequest& r, FaultHttpServer::Connection& c) {
    if (calls++ == 0) {
      c.Write(Json(429, R"({"kind":"Status","code":429,"message":"slow down"})",
                   {{"Retry-After", "1"}}));
    } else {
      c.Write(Json(200, Node("n1")));
    }
  });
  ApiClient client(Endpoint(server));
  Result<std::string> body = client.Call("GET", "/api/v1/nodes/n1", "", "", 5 * kNsPerSecond);
  ASSERT_TRUE(body.ok()) << body.status().ToString();
  std::vector<HttpRequest> requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_GE(requests[1].mono_ns - requests[0].mono_ns, kNsPerSecond);
  // A Retry-After past the call's timeout is not waited for: the 429 is the answer.
  calls = 0;
  Result<std::string> quick = client.Call("GET", "/api/v1/nodes/n1", "", "", 300'000'000);
  EXPECT_EQ(quick.status().code(), StatusCode::kUnavailable) << quick.status().ToString();
}

TEST(K8sClientFaults, RequestsAreRateLimited) {
  FaultHttpServer server(
      [](const HttpRequest& r, FaultHttpServer::Connection& c) { c.Write(Json(200, Node("n1"))); });
  ApiClient client(Endpoint(server), nullptr, {.requests_per_second = 20, .burst = 2});
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(client.Call("GET", "/api/v1/nodes/n1", "", "", 5 * kNsPerSecond).ok());
  }
  std::vector<HttpRequest> requests = server.requests();
  ASSERT_EQ(requests.size(), 6u);
  EXPECT_GE(requests[5].mono_ns - requests[0].mono_ns, 190'000'000);  // 4 refills of 50 ms
}

// A watch has an idle timeout, not a deadline: one that keeps delivering is read to its end,
// one that goes silent is dropped.
TEST(K8sClientFaults, AWatchEndsWhenSilentNotWhileItDelivers) {
  FaultHttpServer server([](const HttpRequest& r, FaultHttpServer::Connection& c) {
    c.Write("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n");
    if (r.query.count("silent")) {
      while (c.Sleep(100'000'000)) {
      }
    } else {
      for (int i = 0; i < 12 && c.Sleep(200'000'000); ++i) {
        c.Write(R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":")" +
                std::to_string(i) + "\"}}}\n");
      }
    }
    c.Close();
  });
  ApiClient client(Endpoint(server));
  int lines = 0;
  Status delivered = client.Watch("/api/v1/nodes?watch=1", kNsPerSecond, [&](std::string_view) {
    ++lines;
    return true;
  });
  EXPECT_TRUE(delivered.ok())
      << delivered.ToString();  // 2.4 s of events, past the 1 s idle timeout
  EXPECT_EQ(lines, 12);
  Status silent = client.Watch("/api/v1/nodes?watch=1&silent=1", kNsPerSecond,
                               [&](std::string_view) { return true; });
  EXPECT_EQ(silent.code(), StatusCode::kDeadlineExceeded) << silent.ToString();
}

TEST(K8sClientFaults, ErrorBodiesAreEscapedAndRedirectsNamed) {
  FaultHttpServer server([](const HttpRequest& r, FaultHttpServer::Connection& c) {
    if (r.path == "/redirect") {
      c.Write(FaultHttpServer::Answer(307, "", {{"Location", "https://elsewhere:6443/api"}}));
    } else {
      c.Write(FaultHttpServer::Answer(500, "\x1b[2J\x1b]0;pwn\x07" + std::string(100000, 'x')));
    }
  });
  ApiClient client(Endpoint(server));
  Result<std::string> binary = client.Call("GET", "/api/v1/nodes/n1", "", "", kNsPerSecond);
  std::string message(binary.status().message());
  EXPECT_EQ(message.find('\x1b'), std::string::npos) << message;
  EXPECT_NE(message.find("\\x1b[2J"), std::string::npos) << message;
  EXPECT_LT(message.size(), 1000u);
  Result<std::string> redirect = client.Call("GET", "/redirect", "", "", kNsPerSecond);
  EXPECT_NE(redirect.status().message().find("redirecting to 'https://elsewhere:6443/api'"),
            std::string::npos)
      << redirect.status().ToString();
}

}  // namespace
}  // namespace titan::k8s
