#include "src/gateway/config.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "src/base/clock.h"
#include "src/base/duration.h"
#include "src/base/env.h"
#include "src/base/text.h"
#include "src/base/yaml_json.h"
#include "src/http/client.h"
#include "src/http/message.h"

namespace titan::gateway {

std::string_view RoutingPolicyName(RoutingPolicy policy) {
  switch (policy) {
    case RoutingPolicy::kRoundRobin:
      return "round_robin";
    case RoutingPolicy::kLeastOutstanding:
      return "least_outstanding";
    case RoutingPolicy::kPowerOfTwo:
      return "p2c";
    case RoutingPolicy::kPrefix:
      return "prefix";
    case RoutingPolicy::kSession:
      return "session";
  }
  return "?";
}

Status ParseListen(std::string_view text, std::string* address, int* port) {
  const size_t colon = text.rfind(':');
  int64_t number = -1;
  if (colon == std::string_view::npos || !ParseInt64(text.substr(colon + 1), &number) ||
      number < 0 || number > 65535) {
    return InvalidArgumentError(
        fmt::format("'{}' is not ADDRESS:PORT (e.g. 127.0.0.1:8000; port 0: any)", Excerpt(text)));
  }
  *address = std::string(text.substr(0, colon));
  *port = static_cast<int>(number);
  return OkStatus();
}

Result<RoutingPolicy> ParseRoutingPolicy(std::string_view text) {
  for (RoutingPolicy p :
       {RoutingPolicy::kRoundRobin, RoutingPolicy::kLeastOutstanding, RoutingPolicy::kPowerOfTwo,
        RoutingPolicy::kPrefix, RoutingPolicy::kSession}) {
    if (text == RoutingPolicyName(p)) return p;
  }
  return InvalidArgumentError(fmt::format(
      "unknown routing policy '{}'; use round_robin, least_outstanding, p2c, prefix or session",
      Excerpt(text)));
}

namespace {

// A string value's bound: enough for any path (PATH_MAX) or URL a config names.
constexpr size_t kMaxStringBytes = 4096;

// Reads one YAML mapping, remembering which keys were used so that unknown ones are errors.
class Section {
 public:
  Section(const YAML::Node& node, std::string path, std::string_view source)
      : node_(node), path_(std::move(path)), source_(source) {}

  // A mapping's keys are each given once: yaml-cpp keeps both copies of a key and node_[key]
  // reads the first, which a reader may not expect.
  Status CheckNoKeyTwice() const {
    if (!node_ || !node_.IsMap()) return OkStatus();
    std::set<std::string> seen;
    for (const auto& item : node_) {
      const std::string key = item.first.as<std::string>();
      if (!seen.insert(key).second) {
        return Error(Excerpt(key),
                     fmt::format("is given twice (line {}); keep one", item.first.Mark().line + 1));
      }
    }
    return OkStatus();
  }

  Status Check() const {
    if (!node_ || node_.IsNull()) return OkStatus();
    if (!node_.IsMap()) return Error("", "must be a mapping of keys to values");
    TITAN_RETURN_IF_ERROR(CheckNoKeyTwice());
    for (const auto& item : node_) {
      const std::string key = item.first.as<std::string>();
      if (!used_.count(key)) {
        std::string known;
        for (const std::string& k : used_) known += (known.empty() ? "" : ", ") + k;
        return Error(Excerpt(key), fmt::format("is not a known key (known here: {})", known));
      }
    }
    return OkStatus();
  }

  YAML::Node Get(const std::string& key) {
    used_.insert(key);
    if (!node_ || !node_.IsMap()) return YAML::Node();
    return node_[key];
  }
  Section Child(const std::string& key) { return Section(Get(key), Name(key), source_); }

  // A string of at most kMaxStringBytes (a path, a name, a URL).
  Status String(const std::string& key, std::string* out) {
    YAML::Node n = Get(key);
    if (!n || n.IsNull()) return OkStatus();
    if (!n.IsScalar()) return Error(key, "must be a string");
    if (n.Scalar().size() > kMaxStringBytes) {
      return Error(key,
                   fmt::format("is {} bytes long; at most {}", n.Scalar().size(), kMaxStringBytes));
    }
    *out = n.Scalar();
    return OkStatus();
  }
  // An HTTP header name (a token of letters, digits and -_.!#$%&'*+^`|~, at most 256 bytes).
  Status HeaderName(const std::string& key, std::string* out) {
    std::string name;
    TITAN_RETURN_IF_ERROR(String(key, &name));
    if (name.empty()) return OkStatus();
    if (name.size() > 256 || !http::IsToken(name)) {
      return Error(key, fmt::format("'{}' is not an HTTP header name (a token of at most 256 "
                                    "letters, digits and -_.!#$%&'*+^`|~)",
                                    Excerpt(name)));
    }
    *out = name;
    return OkStatus();
  }
  Status Bool(const std::string& key, bool* out) {
    YAML::Node n = Get(key);
    if (!n || n.IsNull()) return OkStatus();
    bool value;
    if (!n.IsScalar() || !YAML::convert<bool>::decode(n, value)) {
      return Error(key, "must be true or false");
    }
    *out = value;
    return OkStatus();
  }
  template <typename Int>
  Status Integer(const std::string& key, Int* out, int64_t min, int64_t max) {
    YAML::Node n = Get(key);
    if (!n || n.IsNull()) return OkStatus();
    int64_t value;
    if (!n.IsScalar() || !YAML::convert<int64_t>::decode(n, value) || value < min || value > max) {
      return Error(key, fmt::format("must be an integer in [{}, {}]", min, max));
    }
    *out = static_cast<Int>(value);
    return OkStatus();
  }
  Status Number(const std::string& key, double* out, double min, double max) {
    YAML::Node n = Get(key);
    if (!n || n.IsNull()) return OkStatus();
    double value;
    if (!n.IsScalar() || !YAML::convert<double>::decode(n, value) || !(value >= min) ||
        !(value <= max)) {
      return Error(key, fmt::format("must be a number in [{}, {}]", min, max));
    }
    *out = value;
    return OkStatus();
  }
  // A duration in titan's syntax ("250ms", "2s"); `allow_zero` for delays that may be off.
  Status Duration(const std::string& key, int64_t* out_ns, bool allow_zero = false) {
    YAML::Node n = Get(key);
    if (!n || n.IsNull()) return OkStatus();
    const std::string text = n.IsScalar() ? n.Scalar() : "";
    int64_t ns = 0;
    if (!ParseDurationOrZeroNs(text, &ns)) {
      const bool negative = Trim(text).starts_with('-');
      return Error(key, fmt::format("'{}' is not {}; write e.g. 250ms, 2s or 1m{}", Excerpt(text),
                                    negative ? "a duration: it is negative"
                                             : "a duration (of at most 292 years)",
                                    allow_zero ? " (or 0 for off)" : ""));
    }
    if (ns == 0 && !allow_zero) {
      return Error(
          key, fmt::format("'{}' is zero; it must be more than 0 (e.g. 250ms, 2s)", Excerpt(text)));
    }
    *out_ns = ns;
    return OkStatus();
  }

  Status Error(std::string_view key, std::string_view what) const {
    return InvalidArgumentError(fmt::format("{}: {} {}", source_, Name(key), what));
  }
  std::string_view source() const { return source_; }
  std::string Name(std::string_view key) const {
    if (key.empty()) return path_.empty() ? "the document" : path_;
    return path_.empty() ? std::string(key) : fmt::format("{}.{}", path_, key);
  }

 private:
  YAML::Node node_;
  std::string path_;
  std::string_view source_;
  std::set<std::string> used_;
};

Status ParseReplicas(Section& top, GatewayConfig* c) {
  YAML::Node list = top.Get("replicas");
  if (!list || list.IsNull()) return OkStatus();
  if (!list.IsSequence()) return top.Error("replicas", "must be a list of URLs or {url, pool}");
  c->replicas.clear();
  for (size_t i = 0; i < list.size(); ++i) {
    ReplicaConfig r;
    if (list[i].IsScalar()) {
      r.url = list[i].as<std::string>();
    } else {
      Section item(list[i], top.Name(fmt::format("replicas[{}]", i)), top.source());
      TITAN_RETURN_IF_ERROR(item.String("url", &r.url));
      TITAN_RETURN_IF_ERROR(item.String("pool", &r.pool));
      TITAN_RETURN_IF_ERROR(item.Check());
    }
    if (r.url.empty()) return top.Error(fmt::format("replicas[{}]", i), "needs a url");
    c->replicas.push_back(std::move(r));
  }
  return OkStatus();
}

Status ParseAdmission(Section s, AdmissionConfig* a) {
  YAML::Node classes = s.Get("classes");
  if (classes && !classes.IsNull()) {
    if (!classes.IsSequence() || classes.size() == 0) {
      return s.Error("classes", "must be a non-empty list of {name, max_queue, deadline}");
    }
    a->classes.clear();
    for (size_t i = 0; i < classes.size(); ++i) {
      Section item(classes[i], s.Name(fmt::format("classes[{}]", i)), s.source());
      PriorityClass pc;
      TITAN_RETURN_IF_ERROR(item.String("name", &pc.name));
      TITAN_RETURN_IF_ERROR(item.Integer("max_queue", &pc.max_queue, 0, 10'000'000));
      TITAN_RETURN_IF_ERROR(item.Duration("deadline", &pc.deadline_ns, true));
      TITAN_RETURN_IF_ERROR(item.Bool("hedge", &pc.hedge));
      TITAN_RETURN_IF_ERROR(item.Check());
      if (pc.name.empty()) return s.Error(fmt::format("classes[{}]", i), "needs a name");
      a->classes.push_back(std::move(pc));
    }
  }
  YAML::Node tenants = s.Get("tenant_weights");
  if (tenants && !tenants.IsNull()) {
    if (!tenants.IsMap()) return s.Error("tenant_weights", "must map tenant names to weights");
    TITAN_RETURN_IF_ERROR(Section(tenants, s.Name("tenant_weights"), s.source()).CheckNoKeyTwice());
    a->tenant_weights.clear();
    for (const auto& item : tenants) {
      TenantWeight w{item.first.as<std::string>(), 0};
      if (!item.second.IsScalar() || !YAML::convert<double>::decode(item.second, w.weight) ||
          !(w.weight > 0) || w.weight > 1e6) {
        return s.Error("tenant_weights." + Excerpt(w.tenant), "must be a number in (0, 1e6]");
      }
      a->tenant_weights.push_back(w);
    }
  }
  TITAN_RETURN_IF_ERROR(s.String("default_class", &a->default_class));
  TITAN_RETURN_IF_ERROR(s.HeaderName("priority_header", &a->priority_header));
  TITAN_RETURN_IF_ERROR(s.HeaderName("tenant_header", &a->tenant_header));
  TITAN_RETURN_IF_ERROR(s.HeaderName("deadline_header", &a->deadline_header));
  TITAN_RETURN_IF_ERROR(
      s.Integer("max_inflight_per_replica", &a->max_inflight_per_replica, 1, 100'000));
  TITAN_RETURN_IF_ERROR(s.Bool("adaptive", &a->adaptive));
  TITAN_RETURN_IF_ERROR(s.Integer("min_inflight", &a->min_inflight, 1, 100'000));
  TITAN_RETURN_IF_ERROR(s.Duration("target_ttft", &a->target_ttft_ns));
  TITAN_RETURN_IF_ERROR(
      s.Integer("token_budget_per_replica", &a->token_budget_per_replica, 0, int64_t{1} << 40));
  TITAN_RETURN_IF_ERROR(s.Duration("queue_timeout", &a->queue_timeout_ns));
  return s.Check();
}

Status ParseLimits(Section s, LimitsConfig* l) {
  TITAN_RETURN_IF_ERROR(s.Integer("max_body_bytes", &l->max_body_bytes, 1, int64_t{1} << 32));
  TITAN_RETURN_IF_ERROR(s.Integer("max_prompt_tokens", &l->max_prompt_tokens, 0, 1 << 30));
  TITAN_RETURN_IF_ERROR(s.Integer("long_prompt_tokens", &l->long_prompt_tokens, 0, 1 << 30));
  TITAN_RETURN_IF_ERROR(s.Integer("max_tokens", &l->max_tokens, 0, 1 << 30));
  TITAN_RETURN_IF_ERROR(s.Integer("default_max_tokens", &l->default_max_tokens, 1, 1 << 30));
  TITAN_RETURN_IF_ERROR(s.Integer("max_n", &l->max_n, 1, 1024));
  TITAN_RETURN_IF_ERROR(s.Number("chars_per_token", &l->chars_per_token, 0.5, 64));
  TITAN_RETURN_IF_ERROR(s.Bool("exact_near_limit", &l->exact_near_limit));
  return s.Check();
}

Status ParseRouting(Section s, RoutingConfig* r) {
  std::string policy;
  TITAN_RETURN_IF_ERROR(s.String("policy", &policy));
  if (!policy.empty()) {
    Result<RoutingPolicy> p = ParseRoutingPolicy(policy);
    if (!p.ok()) return s.Error("policy", p.status().message());
    r->policy = *p;
  }
  TITAN_RETURN_IF_ERROR(s.Integer("prefix_chars", &r->prefix_chars, 1, 1 << 20));
  TITAN_RETURN_IF_ERROR(s.Number("load_factor", &r->load_factor, 1, 100));
  TITAN_RETURN_IF_ERROR(s.HeaderName("session_header", &r->session_header));
  return s.Check();
}

Status ParseBatching(Section s, BatchingConfig* b) {
  TITAN_RETURN_IF_ERROR(s.Bool("enabled", &b->enabled));
  TITAN_RETURN_IF_ERROR(s.Integer("max_batch_size", &b->max_batch_size, 1, 4096));
  TITAN_RETURN_IF_ERROR(s.Duration("max_queue_delay", &b->max_queue_delay_ns, true));
  if (b->max_queue_delay_ns > 10 * kNsPerSecond) {
    return s.Error("max_queue_delay", "must be at most 10s: a request waits this long for a batch");
  }
  YAML::Node preferred = s.Get("preferred_sizes");
  if (preferred && !preferred.IsNull()) {
    if (!preferred.IsSequence()) return s.Error("preferred_sizes", "must be a list of integers");
    b->preferred_sizes.clear();
    for (const auto& item : preferred) {
      int64_t v;
      if (!item.IsScalar() || !YAML::convert<int64_t>::decode(item, v) || v < 1 || v > 4096 ||
          (!b->preferred_sizes.empty() && static_cast<size_t>(v) <= b->preferred_sizes.back())) {
        return s.Error("preferred_sizes", "must be ascending integers in [1, 4096]");
      }
      b->preferred_sizes.push_back(static_cast<size_t>(v));
    }
  }
  return s.Check();
}

Status ParseHealth(Section s, HealthConfig* h) {
  TITAN_RETURN_IF_ERROR(s.String("path", &h->path));
  if (!h->path.starts_with('/')) {
    return s.Error("path",
                   fmt::format("'{}' must start with '/' (e.g. /health)", Excerpt(h->path)));
  }
  TITAN_RETURN_IF_ERROR(s.Duration("interval", &h->interval_ns));
  TITAN_RETURN_IF_ERROR(s.Duration("timeout", &h->timeout_ns));
  TITAN_RETURN_IF_ERROR(s.Integer("failures_to_eject", &h->failures_to_eject, 1, 1000));
  TITAN_RETURN_IF_ERROR(s.Integer("warmup_requests", &h->warmup_requests, 0, 1000));
  TITAN_RETURN_IF_ERROR(s.Duration("startup_timeout", &h->startup_timeout_ns));
  return s.Check();
}

Status ParseOutlier(Section s, OutlierConfig* o) {
  TITAN_RETURN_IF_ERROR(s.Duration("interval", &o->interval_ns));
  TITAN_RETURN_IF_ERROR(s.Integer("min_requests", &o->min_requests, 1, 1'000'000));
  TITAN_RETURN_IF_ERROR(s.Number("latency_ratio", &o->latency_ratio, 1.01, 1000));
  TITAN_RETURN_IF_ERROR(s.Integer("consecutive_intervals", &o->consecutive_intervals, 1, 1000));
  TITAN_RETURN_IF_ERROR(s.Integer("max_window_intervals", &o->max_window_intervals, 1, 1000));
  TITAN_RETURN_IF_ERROR(s.Number("error_rate", &o->error_rate, 0.01, 1));
  TITAN_RETURN_IF_ERROR(s.Integer("consecutive_failures", &o->consecutive_failures, 1, 100000));
  TITAN_RETURN_IF_ERROR(s.Duration("base_ejection", &o->base_ejection_ns));
  TITAN_RETURN_IF_ERROR(s.Duration("max_ejection", &o->max_ejection_ns));
  TITAN_RETURN_IF_ERROR(s.Number("max_ejected_fraction", &o->max_ejected_fraction, 0, 1));
  TITAN_RETURN_IF_ERROR(s.Duration("slow_start", &o->slow_start_ns, true));
  TITAN_RETURN_IF_ERROR(s.Number("capacity_utilization", &o->capacity_utilization, 0.1, 1));
  return s.Check();
}

Status ParseStall(Section s, StallConfig* t) {
  TITAN_RETURN_IF_ERROR(s.Bool("enabled", &t->enabled));
  TITAN_RETURN_IF_ERROR(s.Number("k", &t->k, 1, 1000));
  TITAN_RETURN_IF_ERROR(s.Duration("floor", &t->floor_ns));
  TITAN_RETURN_IF_ERROR(s.Duration("initial", &t->initial_ns));
  TITAN_RETURN_IF_ERROR(s.Duration("window", &t->window_ns));
  if (t->window_ns < kNsPerSecond || t->window_ns > 3600 * kNsPerSecond) {
    return s.Error("window", "must be between 1s and 1h");
  }
  TITAN_RETURN_IF_ERROR(s.Duration("check_interval", &t->check_interval_ns));
  return s.Check();
}

Status ParseHedging(Section s, HedgingConfig* h) {
  TITAN_RETURN_IF_ERROR(s.Bool("enabled", &h->enabled));
  TITAN_RETURN_IF_ERROR(s.Bool("rescue", &h->rescue));
  TITAN_RETURN_IF_ERROR(s.Number("delay_factor", &h->delay_factor, 1, 1000));
  TITAN_RETURN_IF_ERROR(s.Duration("min_delay", &h->min_delay_ns));
  TITAN_RETURN_IF_ERROR(s.Number("budget", &h->budget, 0, 1));
  TITAN_RETURN_IF_ERROR(s.Duration("budget_window", &h->budget_window_ns));
  if (h->budget_window_ns < kNsPerSecond) {
    return s.Error("budget_window", "must be at least 1s (the budget keeps one-second slots)");
  }
  return s.Check();
}

Status ParseLaunch(Section s, LaunchConfig* l) {
  TITAN_RETURN_IF_ERROR(s.String("command", &l->command));
  TITAN_RETURN_IF_ERROR(s.Integer("replicas", &l->replicas, 1, 256));
  TITAN_RETURN_IF_ERROR(s.Integer("memory_max_bytes", &l->memory_max_bytes, 0, int64_t{1} << 50));
  TITAN_RETURN_IF_ERROR(s.String("log_dir", &l->log_dir));
  return s.Check();
}

}  // namespace

Result<GatewayConfig> ParseConfig(std::string_view yaml_text, std::string_view source,
                                  GatewayConfig base) {
  TITAN_RETURN_IF_ERROR(CheckYamlStream(yaml_text, source));
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(fmt::format("{}: not valid YAML at line {}, column {}: {}", source,
                                            e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  GatewayConfig c = std::move(base);
  try {
    Section top(root, "", source);
    std::string listen;
    TITAN_RETURN_IF_ERROR(top.String("listen", &listen));
    if (!listen.empty()) {
      Status parsed = ParseListen(listen, &c.listen_address, &c.listen_port);
      if (!parsed.ok()) return top.Error("listen", parsed.message());
    }
    TITAN_RETURN_IF_ERROR(ParseReplicas(top, &c));
    TITAN_RETURN_IF_ERROR(ParseLaunch(top.Child("launch"), &c.launch));
    TITAN_RETURN_IF_ERROR(ParseAdmission(top.Child("admission"), &c.admission));
    TITAN_RETURN_IF_ERROR(ParseLimits(top.Child("limits"), &c.limits));
    TITAN_RETURN_IF_ERROR(ParseRouting(top.Child("routing"), &c.routing));
    TITAN_RETURN_IF_ERROR(ParseBatching(top.Child("batching"), &c.batching));
    TITAN_RETURN_IF_ERROR(ParseHealth(top.Child("health"), &c.health));
    TITAN_RETURN_IF_ERROR(ParseOutlier(top.Child("outlier"), &c.outlier));
    TITAN_RETURN_IF_ERROR(ParseStall(top.Child("stall"), &c.stall));
    TITAN_RETURN_IF_ERROR(ParseHedging(top.Child("hedging"), &c.hedging));
    TITAN_RETURN_IF_ERROR(top.Integer("retries", &c.retries, 0, 10));
    TITAN_RETURN_IF_ERROR(top.Duration("scrape_interval", &c.scrape_interval_ns, true));
    TITAN_RETURN_IF_ERROR(top.Duration("upstream_timeout", &c.upstream_timeout_ns));
    TITAN_RETURN_IF_ERROR(top.Duration("upstream_idle_timeout", &c.upstream_idle_timeout_ns));
    TITAN_RETURN_IF_ERROR(top.Duration("drain_timeout", &c.drain_timeout_ns, true));
    TITAN_RETURN_IF_ERROR(top.Duration("ttft_slo", &c.ttft_slo_ns, true));
    TITAN_RETURN_IF_ERROR(top.String("access_log", &c.access_log));
    TITAN_RETURN_IF_ERROR(top.String("event_log", &c.event_log));
    TITAN_RETURN_IF_ERROR(top.String("perfetto", &c.perfetto));
    TITAN_RETURN_IF_ERROR(top.Check());
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(fmt::format("{}: {}", source, e.what()));
  }
  return c;
}

Result<GatewayConfig> LoadConfig(const std::string& path, GatewayConfig base) {
  // A regular file of at most 4 MiB: a FIFO would block the start, and a reload (SIGHUP) on
  // the signal thread, which then never saw SIGTERM.
  Result<std::string> text = Env::ReadFile(path, 4 << 20);
  if (!text.ok()) {
    return Status(text.status().code(),
                  fmt::format("cannot read the config file {} (give --config PATH): {}", path,
                              text.status().message()));
  }
  return ParseConfig(*text, path, std::move(base));
}

Status ValidateConfig(const GatewayConfig& c) {
  if (c.replicas.empty() && c.launch.command.empty()) {
    return InvalidArgumentError(
        "no replicas: give --replica URL (repeatable), --launch 'CMD --port {port}', or "
        "replicas: in the config file");
  }
  std::map<std::string, size_t> backends;  // normalised URL -> first index
  for (size_t i = 0; i < c.replicas.size(); ++i) {
    Result<http::Url> url = http::ParseUrl(c.replicas[i].url);
    if (!url.ok()) {
      return InvalidArgumentError(
          fmt::format("replicas[{}] (--replica): {}", i, url.status().message()));
    }
    const auto [first, added] = backends.emplace(url->ToString(), i);
    if (!added) {
      return InvalidArgumentError(fmt::format(
          "replicas[{}] (--replica) {} is replicas[{}] again: one backend would count as two "
          "(twice its in-flight limit)",
          i, Excerpt(c.replicas[i].url), first->second));
    }
  }
  if (!c.launch.command.empty() && c.launch.command.find("{port}") == std::string::npos) {
    return InvalidArgumentError(fmt::format(
        "launch command '{}' has no {{port}}: the gateway gives each replica its port there",
        c.launch.command));
  }
  bool found = false;
  std::set<std::string> names;
  for (const PriorityClass& pc : c.admission.classes) {
    if (!names.insert(pc.name).second) {
      return InvalidArgumentError(fmt::format("admission.classes: '{}' is given twice", pc.name));
    }
    found |= pc.name == c.admission.default_class;
  }
  if (!found) {
    return InvalidArgumentError(fmt::format(
        "admission.default_class '{}' is not one of admission.classes", c.admission.default_class));
  }
  if (c.admission.min_inflight > c.admission.max_inflight_per_replica) {
    return InvalidArgumentError(
        "admission.min_inflight must not exceed admission.max_inflight_per_replica");
  }
  if (c.outlier.max_ejection_ns < c.outlier.base_ejection_ns) {
    return InvalidArgumentError("outlier.max_ejection must be at least outlier.base_ejection");
  }
  // A loop's period has a floor, so that "1ns" cannot spin the gateway's threads.
  constexpr int64_t kMinPeriodNs = 10'000'000;
  for (auto [name, ns] : {std::pair{"health.interval (--health-interval)", c.health.interval_ns},
                          std::pair{"outlier.interval (--outlier-interval)", c.outlier.interval_ns},
                          std::pair{"stall.check_interval", c.stall.check_interval_ns},
                          std::pair{"scrape_interval (0 turns it off)", c.scrape_interval_ns}}) {
    if (ns != 0 && ns < kMinPeriodNs) {
      return InvalidArgumentError(fmt::format("{}: {} is shorter than the shortest period, {}",
                                              name, FormatDuration(ns),
                                              FormatDuration(kMinPeriodNs)));
    }
  }
  for (size_t b : c.batching.preferred_sizes) {
    if (b > c.batching.max_batch_size) {
      return InvalidArgumentError(
          "batching.preferred_sizes must not exceed batching.max_batch_size");
    }
  }
  return OkStatus();
}

}  // namespace titan::gateway
