// The gateway's policies on their own, free of I/O: configuration parsing and validation,
// the fair queue, the router, replica health and outlier ejection, and the stream meter.
// No clocks, no sleeps: every time is given.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "src/gateway/admission.h"
#include "src/gateway/capacity.h"
#include "src/gateway/config.h"
#include "src/gateway/hedge_budget.h"
#include "src/gateway/progress_watch.h"
#include "src/gateway/recent_latencies.h"
#include "src/gateway/replica_health.h"
#include "src/gateway/router.h"
#include "src/gateway/stream_meter.h"

namespace titan::gateway {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kSec = 1'000'000'000;

// ---------------------------------------------------------------------------------------------
// ParseConfig / ValidateConfig

constexpr std::string_view kFullConfig = R"yaml(
listen: 0.0.0.0:9000
replicas:
  - http://127.0.0.1:8001
  - url: http://127.0.0.1:8002
    pool: long
launch:
  command: "serve --port {port}"
  replicas: 3
  memory_max_bytes: 1073741824
  log_dir: /tmp/replica-logs
admission:
  classes:
    - name: interactive
      max_queue: 10
      deadline: 250ms
    - name: batch
      max_queue: 100
    - {name: bulk, max_queue: 0, deadline: 0}
  default_class: batch
  priority_header: x-prio
  tenant_header: x-tenant
  tenant_weights:
    alice: 3
    bob: 0.5
  deadline_header: x-deadline
  max_inflight_per_replica: 16
  adaptive: true
  min_inflight: 2
  target_ttft: 750ms
  token_budget_per_replica: 100000
  queue_timeout: 5s
limits:
  max_body_bytes: 1048576
  max_prompt_tokens: 8000
  long_prompt_tokens: 4000
  max_tokens: 2048
  default_max_tokens: 128
  max_n: 4
  chars_per_token: 3.5
  exact_near_limit: false
routing:
  policy: prefix
  prefix_chars: 512
  load_factor: 1.5
  session_header: x-sess
batching:
  enabled: true
  max_batch_size: 16
  max_queue_delay: 5ms
  preferred_sizes: [4, 8, 16]
health:
  path: /healthz
  interval: 500ms
  timeout: 1s
  failures_to_eject: 3
  warmup_requests: 1
  startup_timeout: 10m
outlier:
  interval: 2s
  min_requests: 5
  latency_ratio: 4
  consecutive_intervals: 3
  error_rate: 0.25
  consecutive_failures: 7
  base_ejection: 1s
  max_ejection: 1m
  max_ejected_fraction: 0.3
  slow_start: 0
retries: 2
scrape_interval: 100ms
upstream_timeout: 2m
upstream_idle_timeout: 45s
drain_timeout: 0
ttft_slo: 300ms
access_log: "-"
event_log: /tmp/events.jsonl
perfetto: /tmp/trace.json
)yaml";

TEST(ConfigTest, FullExampleParsesEveryField) {
  Result<GatewayConfig> r = ParseConfig(kFullConfig, "gw.yaml");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const GatewayConfig& c = *r;
  EXPECT_EQ(c.listen_address, "0.0.0.0");
  EXPECT_EQ(c.listen_port, 9000);

  ASSERT_EQ(c.replicas.size(), 2u);
  EXPECT_EQ(c.replicas[0].url, "http://127.0.0.1:8001");
  EXPECT_EQ(c.replicas[0].pool, "default");
  EXPECT_EQ(c.replicas[1].url, "http://127.0.0.1:8002");
  EXPECT_EQ(c.replicas[1].pool, "long");

  EXPECT_EQ(c.launch.command, "serve --port {port}");
  EXPECT_EQ(c.launch.replicas, 3);
  EXPECT_EQ(c.launch.memory_max_bytes, int64_t{1} << 30);
  EXPECT_EQ(c.launch.log_dir, "/tmp/replica-logs");

  const AdmissionConfig& a = c.admission;
  ASSERT_EQ(a.classes.size(), 3u);
  EXPECT_EQ(a.classes[0].name, "interactive");
  EXPECT_EQ(a.classes[0].max_queue, 10u);
  EXPECT_EQ(a.classes[0].deadline_ns, 250 * kMs);
  EXPECT_EQ(a.classes[1].name, "batch");
  EXPECT_EQ(a.classes[1].max_queue, 100u);
  EXPECT_EQ(a.classes[1].deadline_ns, 0);
  EXPECT_EQ(a.classes[2].name, "bulk");
  EXPECT_EQ(a.classes[2].max_queue, 0u);
  EXPECT_EQ(a.classes[2].deadline_ns, 0);
  EXPECT_EQ(a.default_class, "batch");
  EXPECT_EQ(a.priority_header, "x-prio");
  EXPECT_EQ(a.tenant_header, "x-tenant");
  std::map<std::string, double> weights;
  for (const TenantWeight& w : a.tenant_weights) weights[w.tenant] = w.weight;
  EXPECT_EQ(weights, (std::map<std::string, double>{{"alice", 3}, {"bob", 0.5}}));
  EXPECT_EQ(a.deadline_header, "x-deadline");
  EXPECT_EQ(a.max_inflight_per_replica, 16);
  EXPECT_TRUE(a.adaptive);
  EXPECT_EQ(a.min_inflight, 2);
  EXPECT_EQ(a.target_ttft_ns, 750 * kMs);
  EXPECT_EQ(a.token_budget_per_replica, 100000);
  EXPECT_EQ(a.queue_timeout_ns, 5 * kSec);

  const LimitsConfig& l = c.limits;
  EXPECT_EQ(l.max_body_bytes, 1048576u);
  EXPECT_EQ(l.max_prompt_tokens, 8000);
  EXPECT_EQ(l.long_prompt_tokens, 4000);
  EXPECT_EQ(l.max_tokens, 2048);
  EXPECT_EQ(l.default_max_tokens, 128);
  EXPECT_EQ(l.max_n, 4);
  EXPECT_DOUBLE_EQ(l.chars_per_token, 3.5);
  EXPECT_FALSE(l.exact_near_limit);

  EXPECT_EQ(c.routing.policy, RoutingPolicy::kPrefix);
  EXPECT_EQ(c.routing.prefix_chars, 512u);
  EXPECT_DOUBLE_EQ(c.routing.load_factor, 1.5);
  EXPECT_EQ(c.routing.session_header, "x-sess");

  EXPECT_TRUE(c.batching.enabled);
  EXPECT_EQ(c.batching.max_batch_size, 16u);
  EXPECT_EQ(c.batching.max_queue_delay_ns, 5 * kMs);
  EXPECT_EQ(c.batching.preferred_sizes, (std::vector<size_t>{4, 8, 16}));

  EXPECT_EQ(c.health.path, "/healthz");
  EXPECT_EQ(c.health.interval_ns, 500 * kMs);
  EXPECT_EQ(c.health.timeout_ns, 1 * kSec);
  EXPECT_EQ(c.health.failures_to_eject, 3);
  EXPECT_EQ(c.health.warmup_requests, 1);
  EXPECT_EQ(c.health.startup_timeout_ns, 600 * kSec);

  const OutlierConfig& o = c.outlier;
  EXPECT_EQ(o.interval_ns, 2 * kSec);
  EXPECT_EQ(o.min_requests, 5u);
  EXPECT_DOUBLE_EQ(o.latency_ratio, 4);
  EXPECT_EQ(o.consecutive_intervals, 3);
  EXPECT_DOUBLE_EQ(o.error_rate, 0.25);
  EXPECT_EQ(o.consecutive_failures, 7);
  EXPECT_EQ(o.base_ejection_ns, 1 * kSec);
  EXPECT_EQ(o.max_ejection_ns, 60 * kSec);
  EXPECT_DOUBLE_EQ(o.max_ejected_fraction, 0.3);
  EXPECT_EQ(o.slow_start_ns, 0);

  EXPECT_EQ(c.retries, 2);
  EXPECT_EQ(c.scrape_interval_ns, 100 * kMs);
  EXPECT_EQ(c.upstream_timeout_ns, 120 * kSec);
  EXPECT_EQ(c.upstream_idle_timeout_ns, 45 * kSec);
  EXPECT_EQ(c.drain_timeout_ns, 0);
  EXPECT_EQ(c.ttft_slo_ns, 300 * kMs);
  EXPECT_EQ(c.access_log, "-");
  EXPECT_EQ(c.event_log, "/tmp/events.jsonl");
  EXPECT_EQ(c.perfetto, "/tmp/trace.json");

  EXPECT_TRUE(ValidateConfig(c).ok()) << ValidateConfig(c).ToString();
}

// yaml-cpp 0.7's Load reads a document that starts with ',' as an empty one (and LoadAll loops
// on it): the config was taken as the defaults.
TEST(ConfigTest, ADocumentStartingWithACommaIsRefusedNotTakenAsEmpty) {
  Result<GatewayConfig> r = ParseConfig(",listen: x\n", "gw.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("gw.yaml: not valid YAML"), std::string::npos)
      << r.status().message();
}

TEST(ConfigTest, EmptyDocumentKeepsTheBase) {
  GatewayConfig base;
  base.replicas.push_back({"http://a:1", "default"});
  base.retries = 3;
  for (std::string_view text : {"", "# only a comment\n", "routing:\n"}) {
    Result<GatewayConfig> r = ParseConfig(text, "x.yaml", base);
    ASSERT_TRUE(r.ok()) << text << ": " << r.status().ToString();
    ASSERT_EQ(r->replicas.size(), 1u);
    EXPECT_EQ(r->replicas[0].url, "http://a:1");
    EXPECT_EQ(r->retries, 3);
    EXPECT_EQ(r->routing.policy, RoutingPolicy::kPowerOfTwo);
    ASSERT_EQ(r->admission.classes.size(), 3u);
  }
  // Keys given replace the base's; the others stay.
  Result<GatewayConfig> r = ParseConfig("retries: 0\n", "x.yaml", base);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->retries, 0);
  EXPECT_EQ(r->replicas.size(), 1u);
}

TEST(ConfigTest, RoutingPolicyNamesRoundTrip) {
  for (RoutingPolicy p :
       {RoutingPolicy::kRoundRobin, RoutingPolicy::kLeastOutstanding, RoutingPolicy::kPowerOfTwo,
        RoutingPolicy::kPrefix, RoutingPolicy::kSession}) {
    Result<RoutingPolicy> back = ParseRoutingPolicy(RoutingPolicyName(p));
    ASSERT_TRUE(back.ok()) << RoutingPolicyName(p);
    EXPECT_EQ(*back, p);
  }
  EXPECT_FALSE(ParseRoutingPolicy("P2C").ok());
  EXPECT_FALSE(ParseRoutingPolicy("").ok());
}

// The error of ParseConfig(text), which must fail.
std::string ParseError(std::string_view text) {
  Result<GatewayConfig> r = ParseConfig(text, "gw.yaml");
  if (r.ok()) return "<parsed>";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  return std::string(r.status().message());
}

TEST(ConfigTest, UnknownKeysAreRejectedWithTheirPath) {
  std::string e = ParseError("admission:\n  max_inflight: 4\n");
  EXPECT_THAT(e, HasSubstr("gw.yaml"));
  EXPECT_THAT(e, HasSubstr("admission.max_inflight is not a known key"));
  EXPECT_THAT(e, HasSubstr("max_inflight_per_replica"));  // the known keys are listed

  EXPECT_THAT(ParseError("replica:\n  - http://a:1\n"), HasSubstr("replica is not a known key"));
  EXPECT_THAT(ParseError("routing:\n  polcy: p2c\n"), HasSubstr("routing.polcy"));
  EXPECT_THAT(ParseError("outlier:\n  slowstart: 1s\n"), HasSubstr("outlier.slowstart"));
  EXPECT_THAT(ParseError("replicas:\n  - url: http://a:1\n    pol: long\n"),
              HasSubstr("replicas[0].pol"));
  EXPECT_THAT(ParseError("admission:\n  classes:\n    - name: a\n    - name: b\n      maxq: 1\n"),
              HasSubstr("admission.classes[1].maxq"));
  EXPECT_THAT(ParseError("- a\n- b\n"), HasSubstr("must be a mapping"));
  EXPECT_THAT(ParseError("health: 5\n"), HasSubstr("health must be a mapping"));
}

TEST(ConfigTest, BadDurationsNameTheKey) {
  std::string e = ParseError("health:\n  interval: fast\n");
  EXPECT_THAT(e, HasSubstr("health.interval"));
  EXPECT_THAT(e, HasSubstr("'fast' is not a duration"));
  EXPECT_THAT(ParseError("admission:\n  queue_timeout: -1s\n"),
              HasSubstr("admission.queue_timeout"));
  // Zero only where a delay may be off.
  EXPECT_THAT(ParseError("outlier:\n  base_ejection: 0\n"), HasSubstr("outlier.base_ejection"));
  EXPECT_THAT(ParseError("upstream_timeout: 0s\n"), HasSubstr("upstream_timeout"));
  EXPECT_THAT(ParseError("admission:\n  classes:\n    - name: a\n      deadline: soon\n"),
              HasSubstr("admission.classes[0].deadline"));
  EXPECT_THAT(ParseError("health:\n  timeout: [1s]\n"), HasSubstr("health.timeout"));
  // 0 and negative durations say what is wrong with them (both were "not a duration").
  EXPECT_THAT(ParseError("health:\n  interval: 0s\n"),
              HasSubstr("health.interval '0s' is zero; it must be more than 0"));
  EXPECT_THAT(ParseError("health:\n  interval: -2s\n"), HasSubstr("it is negative"));
  EXPECT_THAT(ParseError("health:\n  interval: 1e300h\n"), HasSubstr("at most 292 years"));
}

TEST(ConfigTest, AKeyGivenTwiceIsRefusedWithItsLine) {
  // yaml-cpp keeps both; the gateway read the first, silently.
  EXPECT_THAT(ParseError("retries: 1\nretries: 5\n"),
              HasSubstr("retries is given twice (line 2); keep one"));
  EXPECT_THAT(ParseError("replicas: [http://a:1]\nreplicas: [http://b:1]\n"),
              HasSubstr("replicas is given twice"));
  EXPECT_THAT(ParseError("health:\n  interval: 1s\n  interval: 2s\n"),
              HasSubstr("health.interval is given twice (line 3)"));
  EXPECT_THAT(ParseError("admission:\n  tenant_weights: {a: 1, a: 2}\n"),
              HasSubstr("admission.tenant_weights.a is given twice"));
}

TEST(ConfigTest, HugeValuesAreRefusedAndNotEchoedWhole) {
  const std::string huge(1 << 20, 'a');
  std::string e = ParseError("access_log: " + huge + "\n");
  EXPECT_THAT(e, HasSubstr("access_log is 1048576 bytes long; at most 4096"));
  EXPECT_LT(e.size(), 1000u);
  e = ParseError("routing:\n  policy: " + std::string(4000, 'p') + "\n");
  EXPECT_THAT(e, HasSubstr("... (4000 bytes)"));
  EXPECT_LT(e.size(), 1000u);
  e = ParseError("health:\n  interval: " + std::string(4000, '9') + "\n");
  EXPECT_THAT(e, HasSubstr("... (4000 bytes)"));
  EXPECT_LT(e.size(), 1000u);
  EXPECT_THAT(ParseError(huge.substr(0, 1000) + ": 1\n"),
              HasSubstr("... (1000 bytes) is not a known key"));
  // A header name: a token no longer than a header can be.
  EXPECT_THAT(ParseError("admission:\n  priority_header: " + std::string(300, 'h') + "\n"),
              HasSubstr("admission.priority_header"));
  EXPECT_THAT(ParseError("admission:\n  tenant_header: 'x tenant'\n"),
              HasSubstr("is not an HTTP header name"));
  EXPECT_THAT(ParseError("routing:\n  session_header: '\xc3\xa9'\n"),
              HasSubstr("routing.session_header"));
  EXPECT_THAT(ParseError("health:\n  path: no-slash\n"), HasSubstr("must start with '/'"));
}

TEST(ConfigTest, OutOfRangeNumbersNameTheKeyAndTheRange) {
  std::string e = ParseError("admission:\n  max_inflight_per_replica: 0\n");
  EXPECT_THAT(e, HasSubstr("admission.max_inflight_per_replica"));
  EXPECT_THAT(e, HasSubstr("[1, 100000]"));
  EXPECT_THAT(ParseError("retries: 11\n"), HasSubstr("retries must be an integer in [0, 10]"));
  EXPECT_THAT(ParseError("retries: 1.5\n"), HasSubstr("retries"));
  EXPECT_THAT(ParseError("retries: many\n"), HasSubstr("retries"));
  EXPECT_THAT(ParseError("limits:\n  max_n: 99999999999999999999999\n"), HasSubstr("limits.max_n"));
  EXPECT_THAT(ParseError("limits:\n  chars_per_token: 0.1\n"), HasSubstr("limits.chars_per_token"));
  EXPECT_THAT(ParseError("routing:\n  load_factor: 0.5\n"), HasSubstr("routing.load_factor"));
  EXPECT_THAT(ParseError("outlier:\n  max_ejected_fraction: 1.5\n"),
              HasSubstr("outlier.max_ejected_fraction"));
  EXPECT_THAT(ParseError("launch:\n  replicas: 0\n"), HasSubstr("launch.replicas"));
  EXPECT_THAT(ParseError("admission:\n  classes:\n    - name: a\n      max_queue: -1\n"),
              HasSubstr("admission.classes[0].max_queue"));
  EXPECT_THAT(ParseError("batching:\n  enabled: sometimes\n"),
              HasSubstr("batching.enabled must be true or false"));
  EXPECT_THAT(ParseError("admission:\n  tenant_weights:\n    alice: 0\n"),
              HasSubstr("admission.tenant_weights.alice"));
  EXPECT_THAT(ParseError("admission:\n  tenant_weights:\n    bob: heavy\n"),
              HasSubstr("admission.tenant_weights.bob"));
  EXPECT_THAT(ParseError("batching:\n  preferred_sizes: [8, 4]\n"),
              HasSubstr("batching.preferred_sizes"));
  EXPECT_THAT(ParseError("batching:\n  preferred_sizes: [0]\n"),
              HasSubstr("batching.preferred_sizes"));
}

TEST(ConfigTest, OtherBadValues) {
  std::string e = ParseError("routing:\n  policy: random\n");
  EXPECT_THAT(e, HasSubstr("routing.policy"));
  EXPECT_THAT(e, HasSubstr("'random'"));
  EXPECT_THAT(e, HasSubstr("least_outstanding"));  // what is allowed
  EXPECT_THAT(ParseError("listen: localhost\n"), HasSubstr("listen"));
  EXPECT_THAT(ParseError("listen: 'localhost:'\n"), HasSubstr("listen"));
  EXPECT_THAT(ParseError("listen: localhost:99999\n"), HasSubstr("listen"));
  EXPECT_THAT(ParseError("listen: localhost:80x\n"), HasSubstr("listen"));
  EXPECT_THAT(ParseError("listen: ':-1'\n"), HasSubstr("is not ADDRESS:PORT"));
  EXPECT_THAT(ParseError("replicas: http://a:1\n"), HasSubstr("replicas must be a list"));
  EXPECT_THAT(ParseError("replicas:\n  - pool: long\n"), HasSubstr("replicas[0] needs a url"));
  EXPECT_THAT(ParseError("admission:\n  classes: []\n"), HasSubstr("admission.classes"));
  EXPECT_THAT(ParseError("admission:\n  classes:\n    - max_queue: 3\n"),
              HasSubstr("admission.classes[0] needs a name"));
  EXPECT_THAT(ParseError("admission:\n  tenant_weights: [a, b]\n"),
              HasSubstr("admission.tenant_weights"));
}

TEST(ConfigTest, InvalidYamlNamesTheLine) {
  std::string e = ParseError("retries: 1\nhealth:\n  path: /h\nlisten: a: b\n");
  EXPECT_THAT(e, HasSubstr("gw.yaml"));
  EXPECT_THAT(e, HasSubstr("not valid YAML at line 4"));
  e = ParseError("retries: 1\nreplicas: [http://a:1,\n");
  EXPECT_THAT(e, HasSubstr("not valid YAML at line"));
}

GatewayConfig WithReplica() {
  GatewayConfig c;
  c.replicas.push_back({"http://127.0.0.1:8001", "default"});
  return c;
}

TEST(ConfigTest, ValidateAcceptsTheDefaultsWithAReplica) {
  EXPECT_TRUE(ValidateConfig(WithReplica()).ok());
  GatewayConfig launched;
  launched.launch.command = "serve --port {port}";
  EXPECT_TRUE(ValidateConfig(launched).ok());
}

TEST(ConfigTest, ValidateNeedsReplicasOrLaunch) {
  Status s = ValidateConfig(GatewayConfig{});
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("no replicas"));
}

TEST(ConfigTest, ValidateRefusesReplicaUrlsTheGatewayCannotUse) {
  // Credentials were taken for a host name ("cannot resolve 'u:p@127.0.0.1'", exit 1), and a
  // query made a replica that never became ready.
  for (const char* url : {"http://u:p@127.0.0.1:9000", "http://127.0.0.1:9000/?a=b",
                          "http://127.0.0.1:9000/v1#c", "http://127.0.0.1:9000?x"}) {
    GatewayConfig c;
    c.replicas.push_back({url, "default"});
    Status s = ValidateConfig(c);
    EXPECT_THAT(std::string(s.message()), HasSubstr("replicas[0] (--replica): bad URL")) << url;
  }
  // One backend twice counted as two replicas (twice its in-flight limit).
  GatewayConfig twice;
  twice.replicas = {{"http://127.0.0.1:9000", "default"}, {"http://127.0.0.1:9000/", "default"}};
  EXPECT_THAT(std::string(ValidateConfig(twice).message()), HasSubstr("is replicas[0] again"));
}

TEST(ConfigTest, ValidateNeedsPortInLaunchCommand) {
  GatewayConfig c;
  c.launch.command = "serve --port 8000";
  Status s = ValidateConfig(c);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("{port}"));
}

TEST(ConfigTest, ValidateNeedsTheDefaultClass) {
  GatewayConfig c = WithReplica();
  c.admission.default_class = "missing";
  Status s = ValidateConfig(c);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("admission.default_class 'missing'"));
}

TEST(ConfigTest, ValidateRejectsDuplicateClasses) {
  GatewayConfig c = WithReplica();
  c.admission.classes = {{"high", 1, 0}, {"default", 1, 0}, {"high", 2, 0}};
  Status s = ValidateConfig(c);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("'high' is given twice"));
}

TEST(ConfigTest, ValidateRejectsPreferredSizeOverMaxBatch) {
  GatewayConfig c = WithReplica();
  c.batching.max_batch_size = 8;
  c.batching.preferred_sizes = {4, 8};
  EXPECT_TRUE(ValidateConfig(c).ok());
  c.batching.preferred_sizes = {4, 16};
  Status s = ValidateConfig(c);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("batching.preferred_sizes"));
}

TEST(ConfigTest, ALoopPeriodBelowTheFloorIsRefused) {
  // "1ns" spun the health-check loop; 10ms is the shortest period of any loop.
  GatewayConfig c = WithReplica();
  c.health.interval_ns = 1;
  EXPECT_THAT(std::string(ValidateConfig(c).message()),
              HasSubstr("health.interval (--health-interval): 1ns is shorter than the shortest "
                        "period, 10ms"));
  c = WithReplica();
  c.outlier.interval_ns = 9 * kMs;
  EXPECT_THAT(std::string(ValidateConfig(c).message()), HasSubstr("outlier.interval"));
  c = WithReplica();
  c.scrape_interval_ns = 1000;
  EXPECT_THAT(std::string(ValidateConfig(c).message()), HasSubstr("(0 turns it off)"));
  c.scrape_interval_ns = 0;
  c.health.interval_ns = 10 * kMs;
  c.outlier.interval_ns = 10 * kMs;
  EXPECT_TRUE(ValidateConfig(c).ok());
}

TEST(ConfigTest, ValidateCrossFieldRanges) {
  GatewayConfig c = WithReplica();
  c.admission.min_inflight = 9;
  c.admission.max_inflight_per_replica = 8;
  EXPECT_THAT(std::string(ValidateConfig(c).message()), HasSubstr("admission.min_inflight"));
  c = WithReplica();
  c.outlier.base_ejection_ns = 10 * kSec;
  c.outlier.max_ejection_ns = 5 * kSec;
  EXPECT_THAT(std::string(ValidateConfig(c).message()), HasSubstr("outlier.max_ejection"));
}

TEST(ConfigTest, ParsedFileFailsValidationWhereItShould) {
  Result<GatewayConfig> r =
      ParseConfig("replicas:\n  - http://a:1\nadmission:\n  default_class: vip\n", "gw.yaml");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(ValidateConfig(*r).ok());
  r = ParseConfig("replicas:\n  - http://a:1\nbatching:\n  preferred_sizes: [4, 32]\n", "gw.yaml");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(ValidateConfig(*r).ok());  // max_batch_size is 8 by default
}

// ---------------------------------------------------------------------------------------------
// FairQueue

AdmissionConfig ThreeClasses(size_t max_queue = 1024) {
  AdmissionConfig a;
  a.classes = {{"high", max_queue, 0}, {"default", max_queue, 0}, {"low", max_queue, 0}};
  a.default_class = "default";
  return a;
}

Waiter MakeWaiter(uint64_t id, size_t class_index, std::string tenant, int64_t enqueued_ns) {
  Waiter w;
  w.id = id;
  w.class_index = class_index;
  w.tenant = std::move(tenant);
  w.enqueued_ns = enqueued_ns;
  return w;
}

std::vector<uint64_t> PopAll(FairQueue& q) {
  std::vector<uint64_t> ids;
  while (const Waiter* next = q.Peek()) {
    const uint64_t peeked = next->id;
    Waiter w = q.Pop();
    EXPECT_EQ(w.id, peeked) << "Pop disagrees with Peek";
    ids.push_back(w.id);
  }
  EXPECT_EQ(q.size(), 0u);
  return ids;
}

TEST(FairQueueTest, ClassIndexFallsBackToTheDefault) {
  FairQueue q(ThreeClasses());
  EXPECT_EQ(q.class_count(), 3u);
  EXPECT_EQ(q.ClassIndex("high"), 0u);
  EXPECT_EQ(q.ClassIndex("default"), 1u);
  EXPECT_EQ(q.ClassIndex("low"), 2u);
  EXPECT_EQ(q.ClassIndex("nope"), 1u);
  EXPECT_EQ(q.ClassIndex(""), 1u);
  EXPECT_EQ(q.ClassName(2), "low");
  EXPECT_EQ(q.Peek(), nullptr);
}

TEST(FairQueueTest, StrictPriorityAcrossClasses) {
  FairQueue q(ThreeClasses());
  int64_t t = 0;
  // Interleaved arrivals: low, default, high, low, default, high, ...
  for (uint64_t i = 0; i < 9; ++i) {
    const size_t cls = 2 - i % 3;
    ASSERT_EQ(q.Push(MakeWaiter(i, cls, "t", ++t)), Shed::kNone);
  }
  EXPECT_EQ(q.size(), 9u);
  EXPECT_EQ(q.depth(0), 3u);
  EXPECT_EQ(PopAll(q), (std::vector<uint64_t>{2, 5, 8, 1, 4, 7, 0, 3, 6}));
}

TEST(FairQueueTest, HigherClassArrivingLaterGoesFirst) {
  FairQueue q(ThreeClasses());
  for (uint64_t i = 0; i < 5; ++i) q.Push(MakeWaiter(i, 2, "t", static_cast<int64_t>(i)));
  EXPECT_EQ(q.Pop().id, 0u);
  q.Push(MakeWaiter(100, 0, "t", 10));
  EXPECT_EQ(q.Peek()->id, 100u);
  EXPECT_EQ(q.Pop().class_index, 0u);
  EXPECT_EQ(q.Pop().id, 1u);
}

TEST(FairQueueTest, FifoWithinOneTenant) {
  FairQueue q(ThreeClasses());
  std::vector<uint64_t> expected;
  for (uint64_t i = 0; i < 50; ++i) {
    q.Push(MakeWaiter(i, 1, "alice", static_cast<int64_t>(i)));
    expected.push_back(i);
  }
  EXPECT_EQ(PopAll(q), expected);
}

TEST(FairQueueTest, WeightsShareThreeToOneWhenBothBacklogged) {
  AdmissionConfig a = ThreeClasses();
  a.tenant_weights = {{"heavy", 3}, {"light", 1}};
  FairQueue q(a);
  uint64_t id = 0;
  for (int i = 0; i < 100; ++i) {
    q.Push(MakeWaiter(id, 1, "light", static_cast<int64_t>(id)));
    ++id;
    q.Push(MakeWaiter(id, 1, "heavy", static_cast<int64_t>(id)));
    ++id;
  }
  int heavy = 0, light = 0;
  uint64_t last_heavy = 0, last_light = 0;
  for (int i = 0; i < 40; ++i) {
    Waiter w = q.Pop();
    if (w.tenant == "heavy") {
      ++heavy;
      if (heavy > 1) {
        EXPECT_GT(w.id, last_heavy) << "a tenant's own requests stay in order";
      }
      last_heavy = w.id;
    } else {
      ++light;
      if (light > 1) {
        EXPECT_GT(w.id, last_light);
      }
      last_light = w.id;
    }
  }
  EXPECT_GE(heavy, 28);
  EXPECT_LE(heavy, 32);
  EXPECT_EQ(heavy + light, 40);
  EXPECT_EQ(q.size(), 160u);
}

TEST(FairQueueTest, UnweightedTenantsAlternate) {
  FairQueue q(ThreeClasses());
  for (uint64_t i = 0; i < 10; ++i) q.Push(MakeWaiter(i, 1, "a", static_cast<int64_t>(i)));
  for (uint64_t i = 10; i < 20; ++i) q.Push(MakeWaiter(i, 1, "b", static_cast<int64_t>(i)));
  std::vector<uint64_t> order = PopAll(q);
  std::vector<uint64_t> expected;
  for (uint64_t i = 0; i < 10; ++i) {
    expected.push_back(i);
    expected.push_back(10 + i);
  }
  EXPECT_EQ(order, expected);
}

TEST(FairQueueTest, FloodingTenantDoesNotDelayANewcomer) {
  FairQueue q(ThreeClasses());
  for (uint64_t i = 0; i < 100; ++i) q.Push(MakeWaiter(i, 1, "flood", static_cast<int64_t>(i)));
  // Right away: behind at most the flood's first.
  q.Push(MakeWaiter(1000, 1, "newcomer", 100));
  {
    std::vector<uint64_t> first;
    for (int i = 0; i < 3; ++i) first.push_back(q.Pop().id);
    const auto pos = std::find(first.begin(), first.end(), 1000u) - first.begin();
    EXPECT_LE(pos, 1) << "the newcomer waited behind " << pos << " flooding requests";
  }
  // After the flood has been served for a while, a second newcomer again goes (almost) first.
  for (int i = 0; i < 20; ++i) EXPECT_EQ(q.Pop().tenant, "flood");
  q.Push(MakeWaiter(2000, 1, "late", 200));
  std::vector<uint64_t> next;
  for (int i = 0; i < 3; ++i) next.push_back(q.Pop().id);
  const auto pos = std::find(next.begin(), next.end(), 2000u) - next.begin();
  EXPECT_LE(pos, 1) << "the late newcomer waited behind " << pos << " flooding requests";
}

// A flood that mints a new tenant name for every request (a rotating header or API key) buys
// no place ahead of a tenant already waiting: with 16 of its requests always queued, alice
// waits behind at most those 16, however many names the flood uses.
TEST(FairQueueTest, MintingANewTenantPerRequestDoesNotStarveAWaitingOne) {
  FairQueue q(ThreeClasses(100'000));
  uint64_t id = 0;
  int64_t t = 0;
  for (int i = 0; i < 16; ++i, ++id) q.Push(MakeWaiter(id, 1, "m" + std::to_string(id), ++t));
  q.Push(MakeWaiter(id++, 1, "alice", ++t));
  int alice_served = 0, longest_wait = 0, waited = 0;
  for (int pop = 0; pop < 20'000; ++pop) {
    Waiter w = q.Pop();
    if (w.tenant == "alice") {
      ++alice_served;
      longest_wait = std::max(longest_wait, waited);
      waited = 0;
      q.Push(MakeWaiter(id++, 1, "alice", ++t));  // closed loop: her next request
    } else {
      ++waited;
      q.Push(MakeWaiter(id, 1, "m" + std::to_string(id), ++t));  // a fresh name each time
      ++id;
    }
  }
  EXPECT_GE(alice_served, 20'000 / 17 - 1);
  EXPECT_LE(longest_wait, 16);
}

// Per-tenant tags do not pile up under such a flood: stale ones are dropped as it goes.
TEST(FairQueueTest, TagsOfPastTenantsAreDropped) {
  FairQueue q(ThreeClasses(100'000));
  uint64_t id = 0;
  auto push_new_tenant = [&] {  // tenant "m<id>" for waiter id
    q.Push(MakeWaiter(id, 1, "m" + std::to_string(id), 0));
    ++id;
  };
  for (int i = 0; i < 16; ++i) push_new_tenant();
  for (int pop = 0; pop < 100'000; ++pop) {
    q.Pop();
    push_new_tenant();
  }
  EXPECT_LE(q.tracked_tenants(), 256u);
}

TEST(FairQueueTest, FullClassSheds) {
  AdmissionConfig a = ThreeClasses(2);
  FairQueue q(a);
  EXPECT_EQ(q.Push(MakeWaiter(1, 1, "t", 1)), Shed::kNone);
  EXPECT_EQ(q.Push(MakeWaiter(2, 1, "t", 2)), Shed::kNone);
  EXPECT_EQ(q.Push(MakeWaiter(3, 1, "t", 3)), Shed::kQueueFull);
  EXPECT_EQ(q.size(), 2u);
  EXPECT_EQ(q.depth(1), 2u);
  EXPECT_FALSE(q.Remove(3));  // the shed one was never queued
  // Other classes have their own bounds.
  EXPECT_EQ(q.Push(MakeWaiter(4, 0, "t", 4)), Shed::kNone);
  EXPECT_EQ(q.Push(MakeWaiter(5, 2, "t", 5)), Shed::kNone);
  // Room again once one leaves.
  EXPECT_EQ(q.Pop().id, 4u);
  EXPECT_EQ(q.Push(MakeWaiter(6, 1, "t", 6)), Shed::kQueueFull);
  EXPECT_EQ(q.Pop().id, 1u);
  EXPECT_EQ(q.Push(MakeWaiter(6, 1, "t", 6)), Shed::kNone);
  EXPECT_EQ(ShedName(Shed::kQueueFull), "queue_full");

  AdmissionConfig closed = ThreeClasses();
  closed.classes[2].max_queue = 0;
  FairQueue none(closed);
  EXPECT_EQ(none.Push(MakeWaiter(1, 2, "t", 1)), Shed::kQueueFull);
}

TEST(FairQueueTest, RemoveTakesOneWaiterOut) {
  FairQueue q(ThreeClasses());
  for (uint64_t i = 1; i <= 5; ++i) q.Push(MakeWaiter(i, 1, "t", static_cast<int64_t>(i)));
  q.Push(MakeWaiter(6, 0, "t", 6));
  EXPECT_TRUE(q.Remove(3));
  EXPECT_FALSE(q.Remove(3));
  EXPECT_FALSE(q.Remove(42));
  EXPECT_EQ(q.size(), 5u);
  EXPECT_EQ(q.depth(1), 4u);
  EXPECT_TRUE(q.Remove(6));  // the head
  EXPECT_EQ(q.Peek()->id, 1u);
  EXPECT_EQ(q.depth(0), 0u);
  EXPECT_EQ(PopAll(q), (std::vector<uint64_t>{1, 2, 4, 5}));
  EXPECT_FALSE(q.Remove(1));  // popped
}

TEST(FairQueueTest, AheadOfCountsTheClassAndHigherOnes) {
  FairQueue q(ThreeClasses());
  uint64_t id = 0;
  for (int i = 0; i < 2; ++i) q.Push(MakeWaiter(id++, 0, "t", 1));
  for (int i = 0; i < 3; ++i) q.Push(MakeWaiter(id++, 1, "t", 1));
  for (int i = 0; i < 4; ++i) q.Push(MakeWaiter(id++, 2, "t", 1));
  EXPECT_EQ(q.AheadOf(0), 2u);
  EXPECT_EQ(q.AheadOf(1), 5u);
  EXPECT_EQ(q.AheadOf(2), 9u);
  q.Pop();
  EXPECT_EQ(q.AheadOf(0), 1u);
  EXPECT_EQ(q.AheadOf(2), 8u);
  EXPECT_TRUE(q.Remove(8));
  EXPECT_EQ(q.AheadOf(2), 7u);
  EXPECT_EQ(q.AheadOf(1), 4u);
}

TEST(FairQueueTest, ReconfigureKeepsWaitersAndMovesThoseOfARemovedClass) {
  FairQueue q(ThreeClasses());
  // enqueued_ns gives the arrival order.
  q.Push(MakeWaiter(1, 2, "a", 10));  // low
  q.Push(MakeWaiter(2, 1, "a", 20));  // default
  q.Push(MakeWaiter(3, 0, "a", 30));  // high
  q.Push(MakeWaiter(4, 2, "a", 40));  // low
  q.Push(MakeWaiter(5, 1, "a", 50));  // default

  AdmissionConfig next;
  next.classes = {{"urgent", 10, 0}, {"high", 10, 0}, {"normal", 10, 0}};
  next.default_class = "normal";
  q.Reconfigure(next);

  ASSERT_EQ(q.class_count(), 3u);
  EXPECT_EQ(q.ClassName(0), "urgent");
  EXPECT_EQ(q.ClassIndex("default"), 2u);  // unknown now: the new default
  EXPECT_EQ(q.size(), 5u);
  EXPECT_EQ(q.depth(0), 0u);
  EXPECT_EQ(q.depth(1), 1u);  // "high" kept its waiter at its new index
  EXPECT_EQ(q.depth(2), 4u);  // "default" and "low" are gone: their waiters wait in "normal"

  std::vector<Waiter> popped;
  while (q.Peek()) popped.push_back(q.Pop());
  ASSERT_EQ(popped.size(), 5u);
  EXPECT_EQ(popped[0].id, 3u);
  EXPECT_EQ(popped[0].class_index, 1u);
  // The moved waiters keep their arrival order.
  std::vector<uint64_t> rest;
  for (size_t i = 1; i < popped.size(); ++i) {
    rest.push_back(popped[i].id);
    EXPECT_EQ(popped[i].class_index, 2u);
  }
  EXPECT_EQ(rest, (std::vector<uint64_t>{1, 2, 4, 5}));
}

TEST(FairQueueTest, ReconfigureKeepsRemoveAndBounds) {
  FairQueue q(ThreeClasses());
  for (uint64_t i = 0; i < 6; ++i) q.Push(MakeWaiter(i, 1, "a", static_cast<int64_t>(i)));
  AdmissionConfig next = ThreeClasses(4);
  next.tenant_weights = {{"b", 2}};
  q.Reconfigure(next);
  EXPECT_EQ(q.size(), 6u);  // waiters over the new bound stay
  EXPECT_EQ(q.Push(MakeWaiter(10, 1, "a", 10)), Shed::kQueueFull);
  EXPECT_TRUE(q.Remove(2));  // ids still known after the reload
  EXPECT_FALSE(q.Remove(2));
  EXPECT_EQ(PopAll(q), (std::vector<uint64_t>{0, 1, 3, 4, 5}));
}

TEST(FairQueueTest, ReconfigureKeepsFifoForWaitersOfTheSameInstant) {
  // Waiters that arrived in the same nanosecond (one event-loop tick, a coarse clock) must
  // still come out in their order after a reload.
  FairQueue q(ThreeClasses());
  std::vector<uint64_t> expected;
  for (uint64_t i = 0; i < 100; ++i) {
    q.Push(MakeWaiter(i, 1, "a", 7));
    expected.push_back(i);
  }
  q.Reconfigure(ThreeClasses());
  EXPECT_EQ(PopAll(q), expected);
}

TEST(FairQueueTest, ReconfigureWithTheSameConfigKeepsTheDispatchOrder) {
  // A reload of an unchanged file (SIGHUP) must not reorder anyone: "no one loses their place".
  AdmissionConfig a = ThreeClasses();
  a.tenant_weights = {{"heavy", 3}};
  FairQueue q(a), reloaded(a);
  for (FairQueue* f : {&q, &reloaded}) {
    for (uint64_t i = 1; i <= 3; ++i) f->Push(MakeWaiter(i, 1, "light", static_cast<int64_t>(i)));
    for (uint64_t i = 4; i <= 6; ++i) f->Push(MakeWaiter(i, 1, "heavy", static_cast<int64_t>(i)));
    for (int i = 0; i < 3; ++i) f->Pop();
    f->Push(MakeWaiter(7, 1, "heavy", 7));
  }
  reloaded.Reconfigure(a);
  const std::vector<uint64_t> before = PopAll(q);
  // Tags: light 1-3 enter one share behind virtual time 0 (1, 2, 3); heavy 4-6 at 1/3, 2/3, 1;
  // after 4, 5, 1 (virtual time 1), heavy 7 takes 4/3.
  EXPECT_EQ(before, (std::vector<uint64_t>{6, 7, 2, 3}));
  EXPECT_EQ(PopAll(reloaded), before);
}

// ---------------------------------------------------------------------------------------------
// Router

RoutingConfig Policy(RoutingPolicy policy) {
  RoutingConfig c;
  c.policy = policy;
  return c;
}

std::vector<Candidate> Idle(int n) {
  std::vector<Candidate> c;
  for (int i = 0; i < n; ++i) c.push_back(Candidate{10 + i, 0, 0, 1});
  return c;
}

TEST(RouterTest, NoCandidates) {
  for (RoutingPolicy p :
       {RoutingPolicy::kRoundRobin, RoutingPolicy::kLeastOutstanding, RoutingPolicy::kPowerOfTwo,
        RoutingPolicy::kPrefix, RoutingPolicy::kSession}) {
    Router router(Policy(p));
    EXPECT_EQ(router.Pick({}, std::nullopt), -1);
    EXPECT_EQ(router.Pick({}, 42u), -1);
    EXPECT_EQ(router.Pick(Idle(1), 42u), 0);
    EXPECT_EQ(router.Pick(Idle(1), std::nullopt), 0);
  }
}

TEST(RouterTest, RoundRobinCycles) {
  Router router(Policy(RoutingPolicy::kRoundRobin));
  std::vector<Candidate> c = Idle(3);
  c[0].in_flight = 50;  // load plays no part
  std::vector<int> picks;
  for (int i = 0; i < 9; ++i) picks.push_back(router.Pick(c, std::nullopt));
  EXPECT_EQ(picks, (std::vector<int>{0, 1, 2, 0, 1, 2, 0, 1, 2}));
}

TEST(RouterTest, LeastOutstandingPicksTheLeastLoadPerWeight) {
  Router router(Policy(RoutingPolicy::kLeastOutstanding));
  std::vector<Candidate> c = {
      {0, 4, 0, 1},     // 4
      {1, 1, 2, 1},     // 3
      {2, 1, 0, 0.25},  // 4 (slow start)
      {3, 2, 0.5, 1},   // 2.5
  };
  EXPECT_EQ(router.Pick(c, std::nullopt), 3);
  c[3].in_flight = 5;  // 5.5
  EXPECT_EQ(router.Pick(c, std::nullopt), 1);
  c[2].weight = 1;  // 1
  EXPECT_EQ(router.Pick(c, std::nullopt), 2);
  c[0].queued = -7;  // a nonsense negative scrape does not make a replica attractive: 4
  EXPECT_EQ(router.Pick(c, std::nullopt), 2);
  // Ties: the lower index.
  EXPECT_EQ(router.Pick(Idle(4), std::nullopt), 0);
}

TEST(RouterTest, PowerOfTwoPrefersTheLighterOfTwo) {
  Router router(Policy(RoutingPolicy::kPowerOfTwo), 12345);
  // Two candidates: both are always drawn, the lighter always wins.
  std::vector<Candidate> two = {{0, 9, 0, 1}, {1, 1, 0, 1}};
  for (int i = 0; i < 200; ++i) ASSERT_EQ(router.Pick(two, std::nullopt), 1);

  // Loads {0, 100, 100}: index 0 wins whenever it is drawn, i.e. 2/3 of the time.
  std::vector<Candidate> c = {{0, 0, 0, 1}, {1, 100, 0, 1}, {2, 100, 0, 1}};
  std::vector<int> count(3);
  constexpr int kDraws = 3000;
  for (int i = 0; i < kDraws; ++i) {
    const int pick = router.Pick(c, std::nullopt);
    ASSERT_GE(pick, 0);
    ASSERT_LT(pick, 3);
    ++count[pick];
  }
  EXPECT_GT(count[0], 1800);  // expected 2000, sd ~26
  EXPECT_LT(count[0], 2200);
  EXPECT_GT(count[1], 300);  // expected 500 each
  EXPECT_GT(count[2], 300);

  // The most loaded of three is never picked when the two others are lighter.
  std::vector<Candidate> worst = {{0, 3, 0, 1}, {1, 100, 0, 1}, {2, 5, 0, 1}};
  std::vector<int> seen(3);
  for (int i = 0; i < kDraws; ++i) ++seen[router.Pick(worst, std::nullopt)];
  EXPECT_EQ(seen[1], 0);
  EXPECT_GT(seen[0], seen[2]);  // 0 wins both its pairs, 2 only against 1
}

TEST(RouterTest, PowerOfTwoIsReproducibleFromItsSeed) {
  std::vector<Candidate> c = Idle(5);
  Router a(Policy(RoutingPolicy::kPowerOfTwo), 7), b(Policy(RoutingPolicy::kPowerOfTwo), 7);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(a.Pick(c, std::nullopt), b.Pick(c, std::nullopt));
}

TEST(RouterTest, PrefixKeyUsesOnlyTheFirstPrefixChars) {
  EXPECT_EQ(PrefixKey("", 256), std::nullopt);
  ASSERT_TRUE(PrefixKey("a", 256).has_value());
  EXPECT_EQ(PrefixKey("system: be brief. user: hello", 8),
            PrefixKey("system: be careful. user: bye", 8));
  EXPECT_NE(PrefixKey("system: be brief", 16), PrefixKey("system: be caref", 16));
  EXPECT_EQ(PrefixKey("short", 256), PrefixKey("short", 5));
  EXPECT_NE(PrefixKey("short", 256), PrefixKey("short!", 256));
  EXPECT_EQ(SessionKey(""), std::nullopt);
  EXPECT_EQ(SessionKey("user-1"), SessionKey("user-1"));
  EXPECT_NE(SessionKey("user-1"), SessionKey("user-2"));
}

TEST(RouterTest, SameKeySameReplicaWhenLoadsAreEqual) {
  Router router(Policy(RoutingPolicy::kPrefix));
  std::vector<Candidate> c = Idle(4);
  for (int k = 0; k < 50; ++k) {
    const auto key = PrefixKey("prompt number " + std::to_string(k), 256);
    const int first = router.Pick(c, key);
    for (int i = 0; i < 10; ++i) ASSERT_EQ(router.Pick(c, key), first);
    // Equal non-zero loads do not move it either.
    std::vector<Candidate> busy = c;
    for (Candidate& b : busy) b.in_flight = 3;
    ASSERT_EQ(router.Pick(busy, key), first);
  }
  // The order of the candidates does not matter: the replica id does.
  const auto key = PrefixKey("order", 256);
  std::vector<Candidate> reversed(c.rbegin(), c.rend());
  EXPECT_EQ(c[router.Pick(c, key)].replica, reversed[router.Pick(reversed, key)].replica);
}

TEST(RouterTest, SessionPolicyHashesTheSession) {
  Router router(Policy(RoutingPolicy::kSession));
  std::vector<Candidate> c = Idle(4);
  std::set<int> used;
  for (int s = 0; s < 100; ++s) {
    const auto key = SessionKey("session-" + std::to_string(s));
    const int pick = router.Pick(c, key);
    EXPECT_EQ(router.Pick(c, key), pick);
    used.insert(pick);
  }
  EXPECT_EQ(used.size(), 4u);
}

TEST(RouterTest, DifferentKeysSpreadOverReplicas) {
  Router router(Policy(RoutingPolicy::kPrefix));
  std::vector<Candidate> c = Idle(4);
  std::vector<int> count(4);
  for (int k = 0; k < 1000; ++k) ++count[router.Pick(c, PrefixKey("p" + std::to_string(k), 256))];
  for (int i = 0; i < 4; ++i) {
    EXPECT_GE(count[i], 150) << "replica " << i;
    EXPECT_LE(count[i], 350) << "replica " << i;
  }
}

TEST(RouterTest, NewPrefixesSplitEvenlyWhereAHashAloneWouldNot) {
  // 4 prefixes over 2 replicas: rendezvous hashing alone (what the session policy does with a
  // key) splits 3:1 or 4:0 in 10 of 16 key sets; the prefix policy gives each replica 2.
  int uneven_by_hash = 0;
  for (int set = 0; set < 200; ++set) {
    Router prefix(Policy(RoutingPolicy::kPrefix));
    Router hash(Policy(RoutingPolicy::kSession));
    const std::vector<Candidate> c = Idle(2);
    int on_first = 0;
    int on_first_by_hash = 0;
    for (int k = 0; k < 4; ++k) {
      const auto key =
          PrefixKey("set " + std::to_string(set) + " prefix " + std::to_string(k), 256);
      on_first += prefix.Pick(c, key) == 0;
      on_first_by_hash += hash.Pick(c, key) == 0;
    }
    ASSERT_EQ(on_first, 2) << "set " << set;
    uneven_by_hash += on_first_by_hash != 2;
  }
  EXPECT_GT(uneven_by_hash, 80);
}

TEST(RouterTest, NewPrefixesAvoidAReplicaOverTheBound) {
  Router router(Policy(RoutingPolicy::kPrefix));
  std::vector<Candidate> c = Idle(2);
  c[0].in_flight = 10;  // mean 5, bound 7.5
  for (int k = 0; k < 20; ++k) {
    ASSERT_EQ(router.Pick(c, PrefixKey("new " + std::to_string(k), 256)), 1);
  }
  // Once both are within the bound, new keys go to the one owning fewer until they are even.
  const std::vector<Candidate> idle = Idle(2);
  for (int k = 0; k < 20; ++k) {
    ASSERT_EQ(router.Pick(idle, PrefixKey("later " + std::to_string(k), 256)), 0);
  }
}

TEST(RouterTest, PrefixOwnersAreBoundedAndForgetTheLeastRecentlyUsed) {
  Router router(Policy(RoutingPolicy::kPrefix));
  const std::vector<Candidate> c = Idle(2);
  const auto kept = PrefixKey("kept", 256);
  const int kept_on = router.Pick(c, kept);
  const size_t n = Router::kMaxPrefixOwners + 1000;
  for (size_t k = 0; k < n; ++k) {
    router.Pick(c, PrefixKey("k" + std::to_string(k), 256));
    if (k % 10'000 == 0) {
      ASSERT_EQ(router.Pick(c, kept), kept_on);  // used: remembered
    }
    ASSERT_LE(router.prefix_owners(), Router::kMaxPrefixOwners);
  }
  EXPECT_EQ(router.prefix_owners(), Router::kMaxPrefixOwners);
  // The per-replica counts stayed in step with the evictions: new keys still alternate.
  std::vector<int> count(2);
  for (int k = 0; k < 100; ++k) ++count[router.Pick(c, PrefixKey("n" + std::to_string(k), 256))];
  EXPECT_EQ(count[0], 50);
  EXPECT_EQ(count[1], 50);
}

TEST(RouterTest, BoundedLoadSpillsAHotKey) {
  RoutingConfig config = Policy(RoutingPolicy::kPrefix);
  config.load_factor = 1.25;
  Router router(config);
  std::vector<Candidate> c = Idle(4);
  int moved = 0;
  for (int k = 0; k < 100; ++k) {
    const auto key = PrefixKey("hot " + std::to_string(k), 256);
    const int first = router.Pick(c, key);
    // A little over the others but within load_factor * (mean + 1): stays.
    std::vector<Candidate> mild = c;
    mild[first].in_flight = 1;  // mean 0.25, bound 1.5625
    ASSERT_EQ(router.Pick(mild, key), first);
    // Far over: mean 25, bound 32.5, load 100.
    std::vector<Candidate> hot = c;
    hot[first].in_flight = 100;
    const int spilled = router.Pick(hot, key);
    ASSERT_NE(spilled, first);
    ASSERT_GE(spilled, 0);
    // It spills to its second choice, the same one every time.
    ASSERT_EQ(router.Pick(hot, key), spilled);
    // Which is where the key goes when its first choice is not a candidate at all.
    std::vector<Candidate> without;
    for (size_t i = 0; i < c.size(); ++i) {
      if (static_cast<int>(i) != first) without.push_back(c[i]);
    }
    ASSERT_EQ(without[router.Pick(without, key)].replica, hot[spilled].replica);
    // The key keeps its owner: back within the bound, it returns there.
    ASSERT_EQ(router.Pick(c, key), first);
    ++moved;
  }
  EXPECT_EQ(moved, 100);
}

TEST(RouterTest, BoundedLoadUsesWeightedLoads) {
  Router router(Policy(RoutingPolicy::kPrefix));
  std::vector<Candidate> c = Idle(4);
  const auto key = PrefixKey("slow start", 256);
  const int first = router.Pick(c, key);
  for (Candidate& x : c) x.in_flight = 4;  // mean 4, bound 6.25
  ASSERT_EQ(router.Pick(c, key), first);
  c[first].weight = 0.1;  // load 40: mean 13, bound 17.5
  EXPECT_NE(router.Pick(c, key), first);
}

TEST(RouterTest, RemovingACandidateRemapsOnlyItsKeys) {
  Router router(Policy(RoutingPolicy::kPrefix));
  std::vector<Candidate> all = Idle(5);
  std::vector<Candidate> fewer;
  for (const Candidate& c : all) {
    if (c.replica != 12) fewer.push_back(c);
  }
  int remapped = 0;
  for (int k = 0; k < 1000; ++k) {
    const auto key = PrefixKey("k" + std::to_string(k), 256);
    const int before = all[router.Pick(all, key)].replica;
    const int after = fewer[router.Pick(fewer, key)].replica;
    if (before == 12) {
      ++remapped;
      EXPECT_NE(after, 12);
    } else {
      EXPECT_EQ(after, before) << "key " << k << " moved though its replica stayed";
    }
  }
  EXPECT_GT(remapped, 100);  // ~200 of the 1000 were on it
  EXPECT_LT(remapped, 300);
  // Adding it back restores the old mapping exactly.
  for (int k = 0; k < 100; ++k) {
    const auto key = PrefixKey("k" + std::to_string(k), 256);
    std::vector<Candidate> again = fewer;
    again.push_back(all[2]);
    EXPECT_EQ(again[router.Pick(again, key)].replica, all[router.Pick(all, key)].replica);
  }
}

TEST(RouterTest, PrefixWithoutKeyFallsBackToPowerOfTwo) {
  for (RoutingPolicy p : {RoutingPolicy::kPrefix, RoutingPolicy::kSession}) {
    Router router(Policy(p), 99);
    const auto key = PrefixKey("", 256);
    ASSERT_EQ(key, std::nullopt);
    std::vector<Candidate> c = {{0, 0, 0, 1}, {1, 100, 0, 1}, {2, 100, 0, 1}};
    std::vector<int> count(3);
    for (int i = 0; i < 3000; ++i) ++count[router.Pick(c, key)];
    EXPECT_GT(count[0], 1800) << RoutingPolicyName(p);
    EXPECT_LT(count[0], 2200) << RoutingPolicyName(p);
    EXPECT_GT(count[1] + count[2], 800) << RoutingPolicyName(p);
  }
}

TEST(RouterTest, ReconfigureChangesThePolicy) {
  Router router(Policy(RoutingPolicy::kRoundRobin));
  std::vector<Candidate> c = {{0, 5, 0, 1}, {1, 0, 0, 1}};
  EXPECT_EQ(router.Pick(c, std::nullopt), 0);
  router.Reconfigure(Policy(RoutingPolicy::kLeastOutstanding));
  EXPECT_EQ(router.config().policy, RoutingPolicy::kLeastOutstanding);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(router.Pick(c, std::nullopt), 1);
}

// ---------------------------------------------------------------------------------------------
// ReplicaHealth

class ReplicaHealthTest : public ::testing::Test {
 protected:
  ReplicaHealthTest() {
    health_.failures_to_eject = 3;
    outlier_.consecutive_failures = 5;
    outlier_.base_ejection_ns = 5 * kSec;
    outlier_.max_ejection_ns = 60 * kSec;
    outlier_.slow_start_ns = 10 * kSec;
  }
  // A replica made ready at `now`.
  ReplicaHealth Ready(int64_t now) {
    ReplicaHealth h(&health_, &outlier_, ReplicaState::kStarting);
    EXPECT_TRUE(h.OnHealthCheck(true, now).has_value());
    EXPECT_TRUE(h.OnWarmedUp(now).has_value());
    EXPECT_EQ(h.state(), ReplicaState::kReady);
    return h;
  }
  HealthConfig health_;
  OutlierConfig outlier_;
};

TEST_F(ReplicaHealthTest, StartingWarmingReady) {
  ReplicaHealth h(&health_, &outlier_, ReplicaState::kStarting);
  EXPECT_EQ(h.state(), ReplicaState::kStarting);
  EXPECT_FALSE(h.Routable());
  EXPECT_FALSE(h.OnWarmedUp(1 * kSec).has_value());  // not healthy yet
  EXPECT_FALSE(h.OnHealthCheck(false, 1 * kSec).has_value());
  EXPECT_FALSE(h.OnHealthCheck(false, 2 * kSec).has_value());
  EXPECT_FALSE(h.OnHealthCheck(false, 3 * kSec).has_value());  // loading: not ejected
  EXPECT_EQ(h.state(), ReplicaState::kStarting);

  std::optional<Transition> t = h.OnHealthCheck(true, 4 * kSec);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->from, ReplicaState::kStarting);
  EXPECT_EQ(t->to, ReplicaState::kWarming);
  EXPECT_EQ(h.state(), ReplicaState::kWarming);
  EXPECT_FALSE(h.Routable());
  EXPECT_FALSE(h.OnHealthCheck(true, 5 * kSec).has_value());  // still warming

  t = h.OnWarmedUp(6 * kSec);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->from, ReplicaState::kWarming);
  EXPECT_EQ(t->to, ReplicaState::kReady);
  EXPECT_TRUE(h.Routable());
  EXPECT_FALSE(h.OnWarmedUp(7 * kSec).has_value());
  EXPECT_EQ(ReplicaStateName(ReplicaState::kReady), "ready");
  EXPECT_EQ(ReplicaStateName(ReplicaState::kEjected), "ejected");
}

TEST_F(ReplicaHealthTest, FailedChecksEjectAReadyReplica) {
  ReplicaHealth h = Ready(0);
  EXPECT_FALSE(h.OnHealthCheck(false, 1 * kSec).has_value());
  EXPECT_FALSE(h.OnHealthCheck(false, 2 * kSec).has_value());
  EXPECT_FALSE(h.OnHealthCheck(true, 3 * kSec).has_value());  // the run is broken
  EXPECT_FALSE(h.OnHealthCheck(false, 4 * kSec).has_value());
  EXPECT_FALSE(h.OnHealthCheck(false, 5 * kSec).has_value());
  EXPECT_TRUE(h.Routable());
  std::optional<Transition> t = h.OnHealthCheck(false, 6 * kSec);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->from, ReplicaState::kReady);
  EXPECT_EQ(t->to, ReplicaState::kEjected);
  EXPECT_THAT(t->reason, HasSubstr("3 failed health checks"));
  EXPECT_EQ(t->ejection_ns, 5 * kSec);
  EXPECT_EQ(h.ejected_until_ns(), 11 * kSec);
  EXPECT_FALSE(h.Routable());
  EXPECT_EQ(h.ejections(), 1);
}

TEST_F(ReplicaHealthTest, ConsecutiveFailedRequestsTripTheBreaker) {
  ReplicaHealth h = Ready(0);
  for (int i = 0; i < 4; ++i) EXPECT_FALSE(h.OnRequestEnd(false, kSec).has_value());
  EXPECT_FALSE(h.OnRequestEnd(true, kSec).has_value());  // a success resets the run
  for (int i = 0; i < 4; ++i) EXPECT_FALSE(h.OnRequestEnd(false, 2 * kSec).has_value());
  EXPECT_TRUE(h.Routable());
  std::optional<Transition> t = h.OnRequestEnd(false, 2 * kSec);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->to, ReplicaState::kEjected);
  EXPECT_THAT(t->reason, HasSubstr("5 failed requests in a row"));
  EXPECT_EQ(h.ejected_until_ns(), 7 * kSec);
  // Failures of requests still in flight do not eject it again.
  EXPECT_FALSE(h.OnRequestEnd(false, 3 * kSec).has_value());
  EXPECT_EQ(h.ejections(), 1);
}

TEST_F(ReplicaHealthTest, EjectedComesBackOnlyAfterItsTimeAndAGoodCheck) {
  ReplicaHealth h = Ready(0);
  ASSERT_TRUE(h.Eject("test", 10 * kSec).has_value());
  EXPECT_EQ(h.ejected_until_ns(), 15 * kSec);
  EXPECT_FALSE(h.OnHealthCheck(true, 12 * kSec).has_value());  // too early
  EXPECT_FALSE(h.OnHealthCheck(true, 15 * kSec - 1).has_value());
  EXPECT_EQ(h.state(), ReplicaState::kEjected);
  EXPECT_FALSE(h.OnHealthCheck(false, 16 * kSec).has_value());  // time is up but unhealthy
  EXPECT_EQ(h.state(), ReplicaState::kEjected);
  std::optional<Transition> t = h.OnHealthCheck(true, 17 * kSec);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->from, ReplicaState::kEjected);
  EXPECT_EQ(t->to, ReplicaState::kWarming);
  EXPECT_FALSE(h.Routable());
  ASSERT_TRUE(h.OnWarmedUp(18 * kSec).has_value());
  EXPECT_TRUE(h.Routable());
  EXPECT_DOUBLE_EQ(h.Weight(18 * kSec), 0.1);  // slow start again after readmission
}

TEST_F(ReplicaHealthTest, EjectionsDoubleAndCap) {
  ReplicaHealth h = Ready(0);
  int64_t now = 0;
  std::vector<int64_t> lengths;
  for (int i = 0; i < 7; ++i) {
    std::optional<Transition> t = h.Eject("slow", now);
    ASSERT_TRUE(t.has_value()) << i;
    lengths.push_back(t->ejection_ns);
    EXPECT_EQ(h.ejected_until_ns(), now + t->ejection_ns);
    now = h.ejected_until_ns();
    ASSERT_TRUE(h.OnHealthCheck(true, now).has_value());
    ASSERT_TRUE(h.OnWarmedUp(now).has_value());
    now += kSec;
  }
  EXPECT_EQ(lengths, (std::vector<int64_t>{5 * kSec, 10 * kSec, 20 * kSec, 40 * kSec, 60 * kSec,
                                           60 * kSec, 60 * kSec}));
  EXPECT_EQ(h.ejections(), 7);
}

TEST_F(ReplicaHealthTest, ALongCleanStretchForgivesPastEjections) {
  ReplicaHealth h = Ready(0);
  ASSERT_TRUE(h.Eject("a", 0).has_value());
  ASSERT_TRUE(h.OnHealthCheck(true, 5 * kSec).has_value());
  ASSERT_TRUE(h.OnWarmedUp(5 * kSec).has_value());
  ASSERT_TRUE(h.Eject("b", 6 * kSec).has_value());
  EXPECT_EQ(h.ejections(), 2);
  int64_t now = h.ejected_until_ns();  // 16s
  ASSERT_TRUE(h.OnHealthCheck(true, now).has_value());
  ASSERT_TRUE(h.OnWarmedUp(now).has_value());
  EXPECT_FALSE(h.OnHealthCheck(true, now + 30 * kSec).has_value());
  EXPECT_EQ(h.ejections(), 2);  // not long enough yet
  EXPECT_FALSE(h.OnHealthCheck(true, now + 61 * kSec).has_value());
  EXPECT_EQ(h.ejections(), 0);
  std::optional<Transition> t = h.Eject("c", now + 62 * kSec);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->ejection_ns, 5 * kSec);  // back to the base length
}

TEST_F(ReplicaHealthTest, EjectOnlyFromReadyOrWarming) {
  ReplicaHealth starting(&health_, &outlier_, ReplicaState::kStarting);
  EXPECT_FALSE(starting.Eject("x", 0).has_value());
  ReplicaHealth down(&health_, &outlier_, ReplicaState::kDown);
  EXPECT_FALSE(down.Eject("x", 0).has_value());
  ReplicaHealth h = Ready(0);
  ASSERT_TRUE(h.Eject("x", 0).has_value());
  EXPECT_FALSE(h.Eject("again", 1).has_value());  // already out: no longer ejection
  EXPECT_EQ(h.ejections(), 1);
  EXPECT_EQ(h.ejected_until_ns(), 5 * kSec);
  ReplicaHealth warming(&health_, &outlier_, ReplicaState::kStarting);
  ASSERT_TRUE(warming.OnHealthCheck(true, 0).has_value());
  std::optional<Transition> t = warming.Eject("warm-up failed", 0);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->from, ReplicaState::kWarming);
  EXPECT_EQ(t->reason, "warm-up failed");
}

TEST_F(ReplicaHealthTest, WeightRampsOverSlowStart) {
  ReplicaHealth h = Ready(100 * kSec);
  EXPECT_DOUBLE_EQ(h.Weight(100 * kSec), 0.1);
  double last = 0.1;
  for (int64_t t = 100 * kSec; t <= 110 * kSec; t += kSec / 2) {
    const double w = h.Weight(t);
    EXPECT_GE(w, last) << t;
    EXPECT_GE(w, 0.1);
    EXPECT_LE(w, 1.0);
    last = w;
  }
  EXPECT_GT(h.Weight(105 * kSec), 0.1);
  EXPECT_LT(h.Weight(105 * kSec), 1.0);
  EXPECT_DOUBLE_EQ(h.Weight(110 * kSec), 1.0);
  EXPECT_DOUBLE_EQ(h.Weight(500 * kSec), 1.0);

  outlier_.slow_start_ns = 0;  // off
  EXPECT_DOUBLE_EQ(h.Weight(100 * kSec), 1.0);
}

TEST_F(ReplicaHealthTest, ProcessExitAndRestart) {
  ReplicaHealth h = Ready(0);
  std::optional<Transition> t = h.OnProcessExit("exit code 1");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->from, ReplicaState::kReady);
  EXPECT_EQ(t->to, ReplicaState::kDown);
  EXPECT_THAT(t->reason, HasSubstr("exit code 1"));
  EXPECT_FALSE(h.Routable());
  EXPECT_FALSE(h.OnHealthCheck(true, kSec).has_value());  // checks of a dead process: ignored
  EXPECT_EQ(h.state(), ReplicaState::kDown);
  EXPECT_FALSE(h.OnProcessExit("again").has_value());
  t = h.OnProcessStart();
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->from, ReplicaState::kDown);
  EXPECT_EQ(t->to, ReplicaState::kStarting);
  EXPECT_TRUE(h.OnHealthCheck(true, 2 * kSec).has_value());
  EXPECT_EQ(h.state(), ReplicaState::kWarming);

  // An ejected replica whose process dies is down too, and starts over when respawned.
  ReplicaHealth e = Ready(0);
  ASSERT_TRUE(e.Eject("x", 0).has_value());
  ASSERT_TRUE(e.OnProcessExit("killed").has_value());
  EXPECT_EQ(e.state(), ReplicaState::kDown);
  ASSERT_TRUE(e.OnProcessStart().has_value());
  EXPECT_EQ(e.state(), ReplicaState::kStarting);
}

// ---------------------------------------------------------------------------------------------
// EvaluateOutliers

class OutlierTest : public ::testing::Test {
 protected:
  OutlierTest() {
    outlier_.min_requests = 3;
    outlier_.latency_ratio = 3;
    outlier_.consecutive_intervals = 2;
    outlier_.error_rate = 0.5;
    outlier_.max_ejected_fraction = 0.5;
    for (int i = 0; i < 4; ++i) {
      healths_.emplace_back(&health_, &outlier_, ReplicaState::kReady);
    }
  }
  std::vector<ReplicaHealth*> Healths(size_t n) {
    std::vector<ReplicaHealth*> h;
    for (size_t i = 0; i < n; ++i) h.push_back(&healths_[i]);
    return h;
  }
  static IntervalStats Stats(size_t requests, size_t failures, double ttft_ms, double itl_ms) {
    IntervalStats s;
    s.requests = requests;
    s.failures = failures;
    s.ttft_count = requests;
    s.ttft_sum_ns = ttft_ms * kMs * requests;
    s.itl_count = requests;
    s.itl_sum_ns = itl_ms * kMs * requests;
    return s;
  }
  // `third`'s numbers beside two peers' at a 100 ms TTFT and a 10 ms ITL.
  static std::vector<IntervalStats> BesidePeers(IntervalStats third) {
    return {Stats(10, 0, 100, 10), Stats(10, 0, 100, 10), third};
  }
  HealthConfig health_;
  OutlierConfig outlier_;
  std::vector<ReplicaHealth> healths_;
};

TEST_F(OutlierTest, SlowItlNeedsConsecutiveIntervals) {
  std::vector<IntervalStats> stats = {Stats(10, 0, 100, 10), Stats(10, 0, 100, 12),
                                      Stats(10, 0, 100, 50), Stats(10, 0, 100, 11)};
  std::vector<OutlierVerdict> v = EvaluateOutliers(stats, Healths(4), outlier_, 4, 0);
  ASSERT_EQ(v.size(), 4u);
  for (const OutlierVerdict& s : v) EXPECT_EQ(s.reason, "") << "one interval is not enough";
  EXPECT_EQ(healths_[2].slow_intervals, 1);
  EXPECT_EQ(healths_[0].slow_intervals, 0);

  v = EvaluateOutliers(stats, Healths(4), outlier_, 4, 0);
  EXPECT_EQ(v[0].reason, "");
  EXPECT_EQ(v[1].reason, "");
  EXPECT_EQ(v[3].reason, "");
  EXPECT_THAT(v[2].reason, HasSubstr("itl"));
  EXPECT_THAT(v[2].reason, HasSubstr("2 intervals"));
  EXPECT_EQ(healths_[2].slow_intervals, 2);
}

TEST_F(OutlierTest, AGoodIntervalResetsTheCount) {
  outlier_.consecutive_intervals = 3;
  std::vector<IntervalStats> slow = {Stats(10, 0, 100, 10), Stats(10, 0, 100, 10),
                                     Stats(10, 0, 100, 50)};
  std::vector<IntervalStats> fine = {Stats(10, 0, 100, 10), Stats(10, 0, 100, 10),
                                     Stats(10, 0, 100, 10)};
  EXPECT_EQ(EvaluateOutliers(slow, Healths(3), outlier_, 3, 0)[2].reason, "");
  EXPECT_EQ(EvaluateOutliers(slow, Healths(3), outlier_, 3, 0)[2].reason, "");
  EXPECT_EQ(EvaluateOutliers(fine, Healths(3), outlier_, 3, 0)[2].reason, "");
  EXPECT_EQ(healths_[2].slow_intervals, 0);
  EXPECT_EQ(EvaluateOutliers(slow, Healths(3), outlier_, 3, 0)[2].reason, "");
  EXPECT_EQ(EvaluateOutliers(slow, Healths(3), outlier_, 3, 0)[2].reason, "");
  EXPECT_THAT(EvaluateOutliers(slow, Healths(3), outlier_, 3, 0)[2].reason, HasSubstr("itl"));
}

// A replica so slow that it finishes one request an interval (its peers ten) is judged on the
// numbers of three intervals, twice, instead of never reaching min_requests.
TEST_F(OutlierTest, AReplicaTooSlowToFinishMinRequestsIsJudgedOnALongerWindow) {
  IntervalStats slow;
  std::string reason;
  int intervals = 0;
  while (reason.empty() && intervals < 20) {
    ++intervals;
    const IntervalStats one = Stats(1, 0, 100, 50);
    slow.requests += one.requests;
    slow.ttft_count += one.ttft_count;
    slow.ttft_sum_ns += one.ttft_sum_ns;
    slow.itl_count += one.itl_count;
    slow.itl_sum_ns += one.itl_sum_ns;
    std::vector<IntervalStats> stats = {Stats(10, 0, 100, 10), Stats(10, 0, 100, 11), slow};
    const OutlierVerdict v = EvaluateOutliers(stats, Healths(3), outlier_, 3, 0)[2];
    reason = v.reason;
    StartNextInterval(&slow, &healths_[2], outlier_, v.judged);
  }
  EXPECT_THAT(reason, HasSubstr("itl"));
  EXPECT_EQ(intervals, 6) << "two windows of three intervals";
}

TEST_F(OutlierTest, AnIntervalTooThinToJudgeKeepsTheSlowCount) {
  const std::vector<IntervalStats> slow = BesidePeers(Stats(10, 0, 100, 50));
  const std::vector<IntervalStats> thin = BesidePeers(Stats(1, 0, 100, 10));
  EXPECT_EQ(EvaluateOutliers(slow, Healths(3), outlier_, 3, 0)[2].reason, "");
  EXPECT_EQ(EvaluateOutliers(thin, Healths(3), outlier_, 3, 0)[2].reason, "");
  EXPECT_EQ(healths_[2].slow_intervals, 1) << "one request says nothing either way";
  EXPECT_THAT(EvaluateOutliers(slow, Healths(3), outlier_, 3, 0)[2].reason, HasSubstr("itl"));
  const OutlierVerdict after = EvaluateOutliers(thin, Healths(3), outlier_, 3, 0)[2];
  EXPECT_EQ(after.reason, "") << "no verdict without numbers";
  EXPECT_FALSE(after.slow);
  EXPECT_EQ(healths_[2].slow_intervals, 2);
}

// A warm-up answer of one token has a TTFT and no ITL: fine in TTFT is not fine, while the
// ITL numbers are too few to compare.
TEST_F(OutlierTest, FineInTtftWithItlStillTooFewIsNotJudged) {
  healths_[2].slow_intervals = 1;
  IntervalStats s = Stats(3, 0, 100, 50);
  s.itl_count = 1;
  s.itl_sum_ns = 50 * kMs;
  const OutlierVerdict v = EvaluateOutliers(BesidePeers(s), Healths(3), outlier_, 3, 0)[2];
  EXPECT_FALSE(v.judged);
  EXPECT_EQ(healths_[2].slow_intervals, 1);
  s.itl_count = 0;  // no streams at all: TTFT is all there is to judge
  s.itl_sum_ns = 0;
  EXPECT_TRUE(EvaluateOutliers(BesidePeers(s), Healths(3), outlier_, 3, 0)[2].judged);
  EXPECT_EQ(healths_[2].slow_intervals, 0);
}

TEST_F(OutlierTest, WithoutPeersNumbersNothingIsJudged) {
  healths_[1].slow_intervals = 1;
  std::vector<OutlierVerdict> v =
      EvaluateOutliers({Stats(1, 0, 100, 10), Stats(10, 0, 900, 90)}, Healths(2), outlier_, 2, 0);
  EXPECT_FALSE(v[0].judged);
  EXPECT_FALSE(v[1].judged);
  EXPECT_EQ(healths_[1].slow_intervals, 1);
}

TEST_F(OutlierTest, NumbersTooFewAreDroppedAfterTheWindowWithTheSlowCount) {
  outlier_.max_window_intervals = 3;
  healths_[0].slow_intervals = 1;
  IntervalStats s = Stats(1, 0, 100, 50);
  StartNextInterval(&s, &healths_[0], outlier_, false);
  EXPECT_EQ(s.requests, 0u) << "the error rule's counts are per interval";
  EXPECT_EQ(s.ttft_count, 0u) << "and TTFT's";
  EXPECT_EQ(s.itl_count, 1u) << "ITL carries over";
  StartNextInterval(&s, &healths_[0], outlier_, false);
  EXPECT_EQ(s.intervals, 3);
  EXPECT_EQ(s.itl_count, 1u);
  EXPECT_EQ(healths_[0].slow_intervals, 1);
  StartNextInterval(&s, &healths_[0], outlier_, false);
  EXPECT_EQ(s.intervals, 1);
  EXPECT_EQ(s.itl_count, 0u);
  EXPECT_EQ(healths_[0].slow_intervals, 0);
  s = Stats(3, 0, 100, 50);
  healths_[0].slow_intervals = 1;
  StartNextInterval(&s, &healths_[0], outlier_, true);  // judged: the next starts afresh
  EXPECT_EQ(s.itl_count, 0u);
  EXPECT_EQ(s.intervals, 1);
  EXPECT_EQ(healths_[0].slow_intervals, 1) << "the verdict moved it, not the window";
}

TEST_F(OutlierTest, SlowTtftIsNamed) {
  outlier_.consecutive_intervals = 1;
  std::vector<IntervalStats> stats = {Stats(10, 0, 100, 10), Stats(10, 0, 900, 10),
                                      Stats(10, 0, 110, 10)};
  std::vector<OutlierVerdict> v = EvaluateOutliers(stats, Healths(3), outlier_, 4, 0);
  EXPECT_EQ(v[0].reason, "");
  EXPECT_THAT(v[1].reason, HasSubstr("ttft"));
  EXPECT_EQ(v[2].reason, "");
}

TEST_F(OutlierTest, UnderTheRatioIsKept) {
  outlier_.consecutive_intervals = 1;
  std::vector<IntervalStats> stats = {Stats(10, 0, 100, 10), Stats(10, 0, 100, 10),
                                      Stats(10, 0, 280, 29)};  // 2.8x, 2.9x < 3x
  for (int i = 0; i < 5; ++i) {
    for (const OutlierVerdict& s : EvaluateOutliers(stats, Healths(3), outlier_, 3, 0)) {
      EXPECT_EQ(s.reason, "");
    }
  }
}

TEST_F(OutlierTest, ErrorRateEjectsAtOnce) {
  std::vector<IntervalStats> stats = {Stats(10, 0, 100, 10), Stats(10, 6, 100, 10),
                                      Stats(10, 1, 100, 10), Stats(10, 4, 100, 10)};
  std::vector<OutlierVerdict> v = EvaluateOutliers(stats, Healths(4), outlier_, 4, 0);
  EXPECT_EQ(v[0].reason, "");
  EXPECT_THAT(v[1].reason, HasSubstr("6 of 10 requests failed"));
  EXPECT_EQ(v[2].reason, "");
  EXPECT_EQ(v[3].reason, "");  // 40% < 50%
}

TEST_F(OutlierTest, MinRequestsIsRespected) {
  outlier_.consecutive_intervals = 1;
  // Two requests, both failed and both slow: too few to judge.
  std::vector<IntervalStats> stats = {Stats(10, 0, 100, 10), Stats(10, 0, 100, 10),
                                      Stats(2, 2, 5000, 500)};
  for (const OutlierVerdict& s : EvaluateOutliers(stats, Healths(3), outlier_, 3, 0)) {
    EXPECT_EQ(s.reason, "");
  }
  EXPECT_EQ(healths_[2].slow_intervals, 0);
  // Peers with too few samples do not make a median: nobody to compare with.
  stats = {Stats(2, 0, 100, 10), Stats(1, 0, 100, 10), Stats(10, 0, 5000, 500)};
  for (const OutlierVerdict& s : EvaluateOutliers(stats, Healths(3), outlier_, 3, 0)) {
    EXPECT_EQ(s.reason, "");
  }
  EXPECT_EQ(healths_[2].slow_intervals, 0);
  // With three requests, it counts.
  stats = {Stats(10, 0, 100, 10), Stats(10, 0, 100, 10), Stats(3, 2, 100, 10)};
  EXPECT_THAT(EvaluateOutliers(stats, Healths(3), outlier_, 3, 0)[2].reason, HasSubstr("2 of 3"));
}

TEST_F(OutlierTest, MaxEjectedFractionCapsVerdicts) {
  // Two replicas, both failing everything, fraction 0.5: one verdict at most.
  std::vector<IntervalStats> stats = {Stats(10, 10, 100, 10), Stats(10, 10, 100, 10)};
  std::vector<OutlierVerdict> v = EvaluateOutliers(stats, Healths(2), outlier_, 2, 0);
  EXPECT_EQ(
      std::count_if(v.begin(), v.end(), [](const OutlierVerdict& s) { return !s.reason.empty(); }),
      1);
  // One of the two is already out: none more.
  v = EvaluateOutliers({Stats(10, 10, 100, 10)}, Healths(1), outlier_, 2, 1);
  EXPECT_EQ(v[0].reason, "");
  // Four replicas, fraction 0.5, three bad: two verdicts.
  stats = {Stats(10, 10, 100, 10), Stats(10, 10, 100, 10), Stats(10, 10, 100, 10),
           Stats(10, 0, 100, 10)};
  v = EvaluateOutliers(stats, Healths(4), outlier_, 4, 0);
  EXPECT_EQ(
      std::count_if(v.begin(), v.end(), [](const OutlierVerdict& s) { return !s.reason.empty(); }),
      2);
  EXPECT_EQ(v[3].reason, "");
  // Fraction 0: outlier rules never eject.
  outlier_.max_ejected_fraction = 0;
  v = EvaluateOutliers(stats, Healths(4), outlier_, 4, 0);
  for (const OutlierVerdict& s : v) EXPECT_EQ(s.reason, "");
}

TEST_F(OutlierTest, LatencyVerdictsSayHowSlowErrorVerdictsDoNot) {
  outlier_.consecutive_intervals = 1;
  std::vector<IntervalStats> stats = {Stats(10, 0, 100, 10), Stats(10, 0, 100, 10),
                                      Stats(10, 0, 100, 40), Stats(10, 8, 100, 10)};
  std::vector<OutlierVerdict> v = EvaluateOutliers(stats, Healths(4), outlier_, 4, 0);
  EXPECT_TRUE(v[2].slow);
  EXPECT_DOUBLE_EQ(v[2].ratio, 4.0);
  EXPECT_FALSE(v[3].slow) << "errors eject whatever the capacity";
  EXPECT_THAT(v[3].reason, HasSubstr("8 of 10"));
}

// ---------------------------------------------------------------------------------------------
// ReplicaHealth: the stalled state

TEST_F(ReplicaHealthTest, AStallTakesItOutAndItsFirstByteBringsItBackAtOnce) {
  ReplicaHealth h = Ready(0);
  const uint64_t epoch = h.epoch();
  const double weight = h.Weight(3 * kSec);
  auto t = h.OnStall("no progress for 150ms");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->to, ReplicaState::kStalled);
  EXPECT_FALSE(h.Routable());
  EXPECT_FALSE(h.OnStall("again").has_value());
  // No back-off, no warm-up, no slow start: ready at once, weight as before.
  t = h.OnProgress("a byte");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->from, ReplicaState::kStalled);
  EXPECT_EQ(t->to, ReplicaState::kReady);
  EXPECT_EQ(h.ejections(), 0);
  EXPECT_DOUBLE_EQ(h.Weight(3 * kSec), weight);
  // Latency numbers from before the stall ended belong to an older epoch.
  EXPECT_EQ(h.epoch(), epoch + 1);
  // Progress of a replica that is not stalled changes nothing.
  EXPECT_FALSE(h.OnProgress("a byte").has_value());
}

TEST_F(ReplicaHealthTest, AStalledReplicaThatAlsoFailsIsEjected) {
  ReplicaHealth h = Ready(0);
  ASSERT_TRUE(h.OnStall("silent").has_value());
  std::optional<Transition> t;
  for (int i = 0; i < health_.failures_to_eject; ++i) t = h.OnHealthCheck(false, kSec);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->from, ReplicaState::kStalled);
  EXPECT_EQ(t->to, ReplicaState::kEjected);
  // Only a stalled replica's progress ends a stall: an ejected one stays out.
  EXPECT_FALSE(h.OnProgress("a byte").has_value());
  EXPECT_EQ(h.state(), ReplicaState::kEjected);
}

TEST_F(ReplicaHealthTest, EveryReadinessStartsANewEpoch) {
  ReplicaHealth h = Ready(0);
  const uint64_t first = h.epoch();
  ASSERT_TRUE(h.Eject("slow", kSec).has_value());
  ASSERT_TRUE(h.OnHealthCheck(true, 10 * kSec).has_value());  // warming
  ASSERT_TRUE(h.OnWarmedUp(10 * kSec).has_value());
  EXPECT_EQ(h.epoch(), first + 1);
}

// ---------------------------------------------------------------------------------------------
// ProgressWatch

class ProgressWatchTest : public ::testing::Test {
 protected:
  ProgressWatchTest() {
    config_.k = 3;
    config_.floor_ns = 100 * kMs;
    config_.initial_ns = kSec;
  }
  // `n` answers that each paused at most `pause` between two bytes, one every `every`, ending at
  // `*now`; each streams tokens `pause` apart.
  void Answers(ProgressWatch& w, int n, int64_t pause, int64_t* now, int64_t every = 10 * kMs) {
    for (int i = 0; i < n; ++i) {
      *now += every;
      w.OnProgress(*now, pause, false);
      w.OnAnswerEnd(*now, pause);
    }
  }
  // `n` first bytes, each `ttft` after its send, one every `ttft`, ending at `*now`.
  void FirstBytes(ProgressWatch& w, int n, int64_t ttft, int64_t* now) {
    for (int i = 0; i < n; ++i) w.OnProgress(*now += ttft, ttft, true);
  }
  // What a sample of `ns` counts as: its bucket's upper edge (recent_latencies.h).
  static int64_t Bucketed(int64_t ns) {
    return RecentLatencies::UpperEdgeNs(RecentLatencies::BucketOf(ns));
  }
  StallConfig config_;
  static constexpr int64_t kScrape = 250 * kMs;
};

TEST_F(ProgressWatchTest, AnIdleReplicaNeverStalls) {
  ProgressWatch w(&config_);
  EXPECT_FALSE(w.busy());
  EXPECT_FALSE(w.Stalled(100 * kSec, kScrape));
  EXPECT_EQ(w.SilenceNs(100 * kSec), 0);
}

TEST_F(ProgressWatchTest, WithoutSamplesTheInitialThresholdHolds) {
  ProgressWatch w(&config_);
  w.SetWork(1, 0, 0, 0);
  EXPECT_FALSE(w.Stalled(900 * kMs, kScrape));
  EXPECT_TRUE(w.Stalled(kSec + 1, kScrape));
  EXPECT_THAT(w.Explain(kSec + 1, kScrape), HasSubstr("initial"));
}

TEST_F(ProgressWatchTest, TheThresholdFollowsTheReplicasOwnPauses) {
  ProgressWatch w(&config_);
  int64_t now = 0;
  w.SetWork(8, 8, 0, now);
  Answers(w, 200, 10 * kMs, &now);
  // 3 x 10ms is under the floor.
  EXPECT_EQ(w.ThresholdNs(now, kScrape), 100 * kMs);
  EXPECT_FALSE(w.Stalled(now + 100 * kMs, kScrape));
  EXPECT_TRUE(w.Stalled(now + 101 * kMs, kScrape));
  // A replica whose answers pause up to 60ms is not stalled after 150ms of silence.
  Answers(w, 600, 60 * kMs, &now);
  const int64_t threshold = 3 * Bucketed(60 * kMs);  // 3 x 65.5ms
  EXPECT_EQ(w.ThresholdNs(now, kScrape), threshold);
  EXPECT_FALSE(w.Stalled(now + 150 * kMs, kScrape));
  EXPECT_TRUE(w.Stalled(now + threshold + 1, kScrape));
  EXPECT_THAT(w.Explain(now + threshold + 1, kScrape), HasSubstr("3 x p99 pause 65.5ms"));
}

TEST_F(ProgressWatchTest, BeforeAnyFirstByteTheTtftsAreTheScale) {
  ProgressWatch w(&config_);
  int64_t now = 0;
  w.SetWork(1, 0, 0, now);
  FirstBytes(w, 50, 80 * kMs, &now);
  Answers(w, 100, 5 * kMs, &now);  // fast tokens do not make a waiting request stalled
  EXPECT_EQ(w.ThresholdNs(now, kScrape), 3 * Bucketed(80 * kMs));
  EXPECT_FALSE(w.Stalled(now + 200 * kMs, kScrape));
  w.SetWork(1, 1, 0, now);  // now one answer streams: the pauses are the scale
  EXPECT_EQ(w.ThresholdNs(now, kScrape), 100 * kMs);
}

TEST_F(ProgressWatchTest, GapsSpanningAStallTeachItNothingSoTheNextStallIsSeenAsSoon) {
  ProgressWatch w(&config_);
  int64_t now = 0;
  w.SetWork(8, 8, 0, now);
  Answers(w, 300, 10 * kMs, &now);
  const int64_t threshold = w.ThresholdNs(now, kScrape);
  // A 3 s stall, detected; then all 8 streams resume, each with a 3 s gap that is no sample.
  const int64_t stall_start = now;
  ASSERT_TRUE(w.Stalled(stall_start + threshold + 1, kScrape));
  w.MarkStalled(stall_start + threshold + 1);
  now = stall_start + 3 * kSec;
  for (int i = 0; i < 8; ++i) {
    EXPECT_FALSE(w.OnProgress(now + i, 3 * kSec + i, false));
    w.OnAnswerEnd(now + i, 10 * kMs);  // their other gaps were 10ms
  }
  now += 8;
  EXPECT_EQ(w.ThresholdNs(now, kScrape), threshold);
  Answers(w, 20, 10 * kMs, &now);
  EXPECT_TRUE(w.OnProgress(now, 10 * kMs, false)) << "after the stall, gaps count again";
  EXPECT_EQ(w.ThresholdNs(now, kScrape), threshold);
  EXPECT_TRUE(w.Stalled(now + threshold + 1, kScrape));
}

TEST_F(ProgressWatchTest, ALongPromptsPrefillEveryFewSecondsIsNormalAtAnyLoad) {
  // Answers of 32 tokens every 10ms apart, and every 2 s a 200ms step (a long prompt's prefill)
  // that the 8 answers then running wait through: under 1% of the gaps, but a few percent of
  // the answers, always in the window.
  ProgressWatch w(&config_);
  int64_t now = 0;
  w.SetWork(8, 8, 0, now);
  for (int second = 0; second < 20; ++second) {
    Answers(w, 92, 10 * kMs, &now);
    Answers(w, 8, 200 * kMs, &now);
    EXPECT_GE(w.ThresholdNs(now, kScrape), 3 * 200 * kMs) << "at second " << second;
  }
  // A window with no such pause forgets it.
  for (int second = 0; second < 61; ++second) Answers(w, 100, 10 * kMs, &now);
  EXPECT_EQ(w.ThresholdNs(now, kScrape), config_.floor_ns);
}

TEST(RecentLatenciesTest, QuantilesAreTheBucketsUpperEdgeAndForgetTheirWindow) {
  RecentLatencies r(10);
  for (int i = 1; i <= 100; ++i) r.Add(i * kMs, 0);
  // Nearest rank 50 is 50ms, in a bucket whose upper edge is within 19% above it.
  const int64_t p50 = r.Quantile(0.5, 0);
  EXPECT_GE(p50, 50 * kMs);
  EXPECT_LE(p50, 60 * kMs);
  EXPECT_EQ(r.Quantile(0.99, 0), RecentLatencies::UpperEdgeNs(RecentLatencies::BucketOf(99 * kMs)));
  EXPECT_EQ(r.Quantile(0.5, 0, 101), -1) << "fewer samples than asked for";
  EXPECT_EQ(r.Count(9 * kSec), 100u);
  EXPECT_EQ(r.Count(10 * kSec), 0u) << "a 10 s window forgets second 0 at second 10";
  EXPECT_EQ(r.Quantile(0.5, 10 * kSec), -1);
  // Out-of-range values land in the end buckets.
  r.Add(0, 11 * kSec);
  r.Add(int64_t{1} << 62, 11 * kSec);
  EXPECT_EQ(r.Quantile(0.01, 11 * kSec), RecentLatencies::UpperEdgeNs(0));
  EXPECT_EQ(r.Quantile(0.99, 11 * kSec),
            RecentLatencies::UpperEdgeNs(RecentLatencies::kBuckets - 1));
}

TEST_F(ProgressWatchTest, BusyOnlyByItsOwnQueueItWaitsTwoScrapes) {
  ProgressWatch w(&config_);
  int64_t now = 0;
  w.SetWork(2, 0, 0, now);
  FirstBytes(w, 50, 50 * kMs, &now);  // 3 x 50ms: under two scrapes
  w.SetWork(0, 0, 5, now);            // none of ours in flight, five waiting in the replica
  EXPECT_TRUE(w.busy());
  EXPECT_EQ(w.ThresholdNs(now, kScrape), 2 * kScrape);
  EXPECT_FALSE(w.Stalled(now + 400 * kMs, kScrape));
  w.OnScrapedProgress(now + 400 * kMs);  // its generated-token count moved
  EXPECT_FALSE(w.Stalled(now + 800 * kMs, kScrape));
  EXPECT_TRUE(w.Stalled(now + 901 * kMs, kScrape));
}

TEST_F(ProgressWatchTest, OffNeverStalls) {
  config_.enabled = false;
  ProgressWatch w(&config_);
  w.SetWork(1, 0, 0, 0);
  EXPECT_FALSE(w.Stalled(100 * kSec, kScrape));
}

// ---------------------------------------------------------------------------------------------
// HedgeBudget

TEST(HedgeBudgetTest, SpendsOnlyWhatItsClassEarned) {
  HedgeBudget b(0.05, 60 * kSec);
  EXPECT_FALSE(b.CanSpend(64, 0)) << "nothing earned yet";
  for (int i = 0; i < 19; ++i) b.Earn(64, i * kMs);  // 19 x 64 x 5% = 60.8 < 64
  EXPECT_FALSE(b.TrySpend(64, 20 * kMs));
  b.Earn(64, 21 * kMs);  // 64
  EXPECT_TRUE(b.TrySpend(64, 22 * kMs));
  EXPECT_FALSE(b.TrySpend(1, 23 * kMs));
  EXPECT_EQ(b.spent_total(), 64);
}

TEST(HedgeBudgetTest, OverAnyRunHedgesStayWithinTheFraction) {
  HedgeBudget b(0.05, 60 * kSec);
  uint64_t state = 12345;
  auto next = [&] {
    return (state = state * 6364136223846793005ULL + 1442695040888963407ULL) >> 33;
  };
  double offered = 0;
  for (int64_t t = 0; t < 300 * kSec; t += 7 * kMs) {
    const int64_t tokens = 16 + static_cast<int64_t>(next() % 4096);
    b.Earn(tokens, t);
    offered += static_cast<double>(tokens);
    if (next() % 3 == 0) b.TrySpend(16 + static_cast<int64_t>(next() % 4096), t);
    ASSERT_LE(static_cast<double>(b.spent_total()), 0.05 * offered + 1e-6);
  }
  EXPECT_GT(b.spent_total(), 0.04 * offered) << "the budget is usable, not only safe";
}

TEST(HedgeBudgetTest, AnIdleStretchBanksNoMoreThanTheWindowEarned) {
  HedgeBudget b(0.1, 10 * kSec);
  for (int i = 0; i < 100; ++i) b.Earn(1000, i * 100 * kMs);  // 10 s at 100 tokens/s earned
  EXPECT_TRUE(b.CanSpend(9000, 10 * kSec));
  // An hour later the window holds nothing: no storm of hedges after a quiet hour.
  EXPECT_FALSE(b.CanSpend(1, 3600 * kSec));
  b.Earn(1000, 3601 * kSec);
  EXPECT_TRUE(b.CanSpend(100, 3601 * kSec));
  EXPECT_FALSE(b.CanSpend(101, 3601 * kSec));
}

// ---------------------------------------------------------------------------------------------
// Capacity

TEST(CapacityTest, TheOthersCarryTheLoadOnlyWithinTheirRate) {
  // Three replicas of 8 seats, 0.8 s per request: 10 req/s each.
  std::vector<ReplicaCapacity> r = {{8, 0.8, true}, {8, 0.8, true}, {8, 0.8, true}};
  CapacityCheck c = OthersCanCarry(r, 2, 15, 0.9);
  EXPECT_TRUE(c.others_can_carry) << c.Explain();  // 15 <= 0.9 x 20
  EXPECT_EQ(c.others, 2u);
  EXPECT_DOUBLE_EQ(c.others_rps, 20);
  c = OthersCanCarry(r, 2, 24, 0.9);  // 80% of the three: too much for two
  EXPECT_FALSE(c.others_can_carry) << c.Explain();
  EXPECT_THAT(c.Explain(), HasSubstr("2 others carry 18.0 req/s at 90% for 24.0 req/s offered"));
}

TEST(CapacityTest, OnlyServingReplicasCountAndUnknownSeatTimesTakeThePeersMedian) {
  std::vector<ReplicaCapacity> r = {{8, 0.8, true}, {8, 0, true}, {8, 0.8, false}, {8, 9, true}};
  // Without #3 (the slow one): #0 (10/s) and #1 (no numbers: the median 0.8 s, 10/s); #2 is out.
  CapacityCheck c = OthersCanCarry(r, 3, 17, 0.9);
  EXPECT_EQ(c.others, 2u);
  EXPECT_DOUBLE_EQ(c.others_rps, 20);
  EXPECT_TRUE(c.others_can_carry);
  // Nobody else serves: never.
  EXPECT_FALSE(OthersCanCarry({{8, 0.8, true}}, 0, 0.1, 0.9).others_can_carry);
}

// ---------------------------------------------------------------------------------------------
// StreamMeter

constexpr std::string_view kStream =
    "data: {\"choices\":[{\"index\":0,\"text\":\"Hello\"}]}\n\n"
    ": a comment\n\n"
    "data: {\"choices\":[{\"index\":0,\"text\":\" there\"}]}\r\n\r\n"
    "event: message\ndata: {\"choices\":[{\"index\":0,\"text\":\",\"}]}\n\n"
    "data: {\"choices\":[{\"index\":0,\"text\":\" friend\",\"finish_reason\":\"length\"}]}\r\r"
    "data: {\"id\":\"x\",\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":"
    "7,\"total_tokens\":10}}\n\n"
    "data: [DONE]\n\n";

struct Metered {
  uint64_t events;
  bool done;
  int64_t tokens;
  bool from_usage;
  bool broken;
  bool operator==(const Metered&) const = default;
};

Metered Meter(const std::vector<std::string_view>& pieces) {
  StreamMeter m(true);
  int64_t now = kSec;
  for (std::string_view p : pieces) m.OnBody(p, now += kMs);
  return {m.events(), m.done(), m.completion_tokens(), m.tokens_from_usage(), m.broken()};
}

TEST(StreamMeterTest, CountsEventsAndUsage) {
  const Metered m = Meter({kStream});
  EXPECT_EQ(m.events, 4u);  // the usage-only chunk and [DONE] are not tokens
  EXPECT_TRUE(m.done);
  EXPECT_EQ(m.tokens, 7);  // from usage, not the 4 events
  EXPECT_TRUE(m.from_usage);
  EXPECT_FALSE(m.broken);
}

TEST(StreamMeterTest, SplitsDoNotMatter) {
  const Metered whole = Meter({kStream});
  for (size_t a = 0; a <= kStream.size(); ++a) {
    ASSERT_EQ(Meter({kStream.substr(0, a), kStream.substr(a)}), whole) << "split at " << a;
  }
  for (size_t a = 0; a <= kStream.size(); a += 7) {
    for (size_t b = a; b <= kStream.size(); b += 5) {
      ASSERT_EQ(Meter({kStream.substr(0, a), kStream.substr(a, b - a), kStream.substr(b)}), whole)
          << "split at " << a << ", " << b;
    }
  }
  std::vector<std::string_view> bytes;
  for (size_t i = 0; i < kStream.size(); ++i) bytes.push_back(kStream.substr(i, 1));
  EXPECT_EQ(Meter(bytes), whole);
}

TEST(StreamMeterTest, WithoutUsageTokensAreEvents) {
  const Metered m = Meter({"data: {\"choices\":[{\"text\":\"a\"}]}\n\n",
                           "data: {\"choices\":[{\"text\":\"b\"}]}\n\n", "data: [DONE]\n\n"});
  EXPECT_EQ(m.events, 2u);
  EXPECT_EQ(m.tokens, 2);
  EXPECT_FALSE(m.from_usage);
  EXPECT_TRUE(m.done);
  // Cut before [DONE].
  const Metered cut = Meter({"data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: [DO"});
  EXPECT_EQ(cut.events, 1u);
  EXPECT_FALSE(cut.done);
}

TEST(StreamMeterTest, NullUsageInEveryChunkIsIgnored) {
  // OpenAI with stream_options.include_usage: "usage": null in every chunk but the last.
  const Metered m =
      Meter({"data: {\"choices\":[{\"text\":\"a\"}],\"usage\":null}\n\n"
             "data: {\"choices\":[{\"text\":\"b\"}],\"usage\":null}\n\n"
             "data: {\"choices\":[],\"usage\":{\"completion_tokens\":2}}\n\n"
             "data: [DONE]\n\n"});
  EXPECT_EQ(m.events, 2u);
  EXPECT_EQ(m.tokens, 2);
  EXPECT_TRUE(m.from_usage);
}

TEST(StreamMeterTest, MeanItlFromTheGivenTimes) {
  StreamMeter m(true);
  EXPECT_EQ(m.mean_itl_ns(), 0);
  m.OnBody("data: {\"choices\":[{\"text\":\"a\"}]}\n\n", 1000 * kMs);
  EXPECT_EQ(m.first_event_ns(), 1000 * kMs);
  EXPECT_EQ(m.mean_itl_ns(), 0);  // one event: no gap yet
  m.OnBody("data: {\"choices\":[{\"text\":\"b\"}]}\n\ndata: {\"choices\":[{\"te", 1010 * kMs);
  m.OnBody("xt\":\"c\"}]}\n\n", 1040 * kMs);
  m.OnBody(": keep-alive\n\n", 1100 * kMs);  // not an event
  // The usage-only chunk is not a token: it does not stretch the gaps.
  m.OnBody("data: {\"choices\":[],\"usage\":{\"completion_tokens\":3}}\n\n", 1200 * kMs);
  m.OnBody("data: [DONE]\n\n", 1300 * kMs);
  EXPECT_EQ(m.events(), 3u);
  EXPECT_EQ(m.first_event_ns(), 1000 * kMs);
  EXPECT_EQ(m.last_event_ns(), 1040 * kMs);
  EXPECT_DOUBLE_EQ(m.mean_itl_ns(), 20.0 * kMs);  // (1040 - 1000) / 2
  EXPECT_EQ(m.completion_tokens(), 3);
}

TEST(StreamMeterTest, NonJsonDataIsCountedNotParsed) {
  const Metered m =
      Meter({"data: hello\n\n", "data: {\"usage\": {\"completion_tokens\": 5\n\n",
             std::string_view("data: \xff\xfe\x00\x01\n\n", 12), "data: {\"usage\":[1,2]}\n\n",
             "data: [\"usage\"]\n\n", "data: [DONE]\n\n"});
  EXPECT_EQ(m.events, 5u);
  EXPECT_EQ(m.tokens, 5);  // no usage could be read: the events
  EXPECT_FALSE(m.from_usage);
  EXPECT_TRUE(m.done);
  EXPECT_FALSE(m.broken);
}

TEST(StreamMeterTest, UsageOnlyChunkWithSpacesIsNotAToken) {
  // The same final chunk as JSON writers with spaces after ':' and ',' print it (Python's
  // json.dumps by default): still a usage-only chunk with empty choices, not a token.
  StreamMeter m(true);
  m.OnBody("data: {\"choices\": [{\"text\": \"a\"}]}\n\n", 1000 * kMs);
  m.OnBody("data: {\"choices\": [{\"text\": \"b\"}]}\n\n", 1010 * kMs);
  m.OnBody("data: {\"id\": \"x\", \"choices\": [], \"usage\": {\"completion_tokens\": 2}}\n\n",
           1500 * kMs);
  m.OnBody("data: [DONE]\n\n", 1600 * kMs);
  EXPECT_EQ(m.completion_tokens(), 2);
  EXPECT_EQ(m.events(), 2u);
  EXPECT_EQ(m.last_event_ns(), 1010 * kMs);
  EXPECT_DOUBLE_EQ(m.mean_itl_ns(), 10.0 * kMs);
}

TEST(StreamMeterTest, MultiLineDataIsOneEvent) {
  const Metered m = Meter({"data: {\"choices\":\ndata: [{\"text\":\"a\"}]}\n\n"});
  EXPECT_EQ(m.events, 1u);
}

TEST(StreamMeterTest, OverlongLineBreaksTheMeter) {
  StreamMeter m(true);
  m.OnBody("data: {\"choices\":[{\"text\":\"a\"}]}\n\n", kSec);
  const std::string huge = "data: " + std::string((1 << 20) + 10, 'x');
  m.OnBody(std::string_view(huge).substr(0, 1000), 2 * kSec);
  EXPECT_FALSE(m.broken());
  m.OnBody(std::string_view(huge).substr(1000), 3 * kSec);
  EXPECT_TRUE(m.broken());
  // Nothing more is metered, and nothing crashes.
  m.OnBody("\n\ndata: {\"choices\":[{\"text\":\"b\"}]}\n\ndata: [DONE]\n\n", 4 * kSec);
  EXPECT_TRUE(m.broken());
  EXPECT_EQ(m.events(), 1u);
  EXPECT_FALSE(m.done());

  // Many short data lines adding up to over the bound in one event break it too.
  StreamMeter lines(true);
  std::string body;
  const std::string line = "data: " + std::string(1000, 'y') + "\n";
  for (int i = 0; i < 1100; ++i) body += line;
  lines.OnBody(body, kSec);
  EXPECT_TRUE(lines.broken());
  EXPECT_EQ(lines.events(), 0u);
}

TEST(StreamMeterTest, NotAStreamIgnoresOnBody) {
  StreamMeter m(false);
  m.OnBody("data: {\"choices\":[{\"text\":\"a\"}]}\n\n", kSec);
  EXPECT_EQ(m.events(), 0u);
  EXPECT_FALSE(m.broken());
}

TEST(StreamMeterTest, WholeBodyReadsUsage) {
  StreamMeter m(false);
  m.OnWholeBody(
      R"({"id":"c1","object":"text_completion","choices":[{"index":0,"text":"hi there"}],
          "usage":{"prompt_tokens":4,"completion_tokens":12,"total_tokens":16}})",
      5 * kSec);
  EXPECT_EQ(m.completion_tokens(), 12);
  EXPECT_TRUE(m.tokens_from_usage());
  EXPECT_EQ(m.first_event_ns(), 5 * kSec);
  EXPECT_EQ(m.last_event_ns(), 5 * kSec);
  EXPECT_EQ(m.mean_itl_ns(), 0);

  StreamMeter none(false);
  none.OnWholeBody(R"({"choices":[{"text":"hi"}]})", kSec);
  EXPECT_FALSE(none.tokens_from_usage());
  EXPECT_EQ(none.completion_tokens(), 0);
}

TEST(StreamMeterTest, CompletionTokensOfSaneIntegersOnly) {
  EXPECT_EQ(CompletionTokensOf(R"({"usage":{"completion_tokens":9}})"), 9);
  EXPECT_EQ(CompletionTokensOf(R"({"usage":{"completion_tokens":0}})"), 0);
  EXPECT_EQ(CompletionTokensOf(R"( { "usage" : { "completion_tokens" : 9 } } )"), 9);
  EXPECT_EQ(CompletionTokensOf(R"({"usage":{"completion_tokens":1099511627775}})"),
            (int64_t{1} << 40) - 1);
  EXPECT_EQ(CompletionTokensOf(R"({"usage":{"completion_tokens":1099511627776}})"), -1);
  EXPECT_EQ(CompletionTokensOf(R"({"usage":{"completion_tokens":-1}})"), -1);
  EXPECT_EQ(CompletionTokensOf(R"({"usage":{"completion_tokens":2.5}})"), -1);
  EXPECT_EQ(CompletionTokensOf(R"({"usage":{"completion_tokens":"9"}})"), -1);
  EXPECT_EQ(CompletionTokensOf(R"({"usage":{"completion_tokens":18446744073709551615}})"), -1);
  EXPECT_EQ(CompletionTokensOf(R"({"usage":{"prompt_tokens":9}})"), -1);
  EXPECT_EQ(CompletionTokensOf(R"({"usage":null})"), -1);
  EXPECT_EQ(CompletionTokensOf(R"({"choices":[]})"), -1);
  EXPECT_EQ(CompletionTokensOf(R"(["usage"])"), -1);
  EXPECT_EQ(CompletionTokensOf(R"({"usage":{"completion_tokens":9})"), -1);  // cut
  EXPECT_EQ(CompletionTokensOf(""), -1);
}

TEST_F(ReplicaHealthTest, FailedChecksThatMayNotEjectOnlyCount) {
  ReplicaHealth h = Ready(0);
  for (int i = 1; i <= 5; ++i) {
    EXPECT_FALSE(h.OnHealthCheck(false, i * kSec, /*may_eject=*/false).has_value());
  }
  EXPECT_EQ(h.state(), ReplicaState::kReady);
  // Once ejection is allowed, the failures already counted eject at the next failure.
  std::optional<Transition> t = h.OnHealthCheck(false, 6 * kSec, true);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->to, ReplicaState::kEjected);
}

}  // namespace
}  // namespace titan::gateway
