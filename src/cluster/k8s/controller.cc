#include "src/cluster/k8s/controller.h"

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "src/base/backoff.h"
#include "src/base/clock.h"
#include "src/base/duration.h"
#include "src/base/json_depth.h"
#include "src/base/json_text.h"
#include "src/base/listing_guard.h"
#include "src/base/text.h"
#include "src/cluster/k8s/cordon.h"
#include "src/cluster/k8s/llmjob.h"
#include "src/cluster/k8s/manifests.h"
#include "src/cluster/k8s/names.h"
#include "src/cluster/k8s/node_patch.h"
#include "src/cluster/k8s/objects.h"
#include "src/cluster/k8s/reconcile.h"

namespace titan::k8s {

namespace {

using nlohmann::json;

// Signals the reconcile loop that a cache changed.
struct Wakeup {
  std::mutex mu;
  std::condition_variable cv;
  uint64_t generation = 0;

  void Notify() {
    {
      std::lock_guard<std::mutex> lock(mu);
      ++generation;
    }
    cv.notify_one();
  }
};

// List + watch of one resource into a map keyed "namespace/name".
class Informer {
 public:
  Informer(std::string resource, std::string path, const ApiClient& client,
           const ControllerOptions& options, EventLog* events, Wakeup* wakeup)
      : resource_(std::move(resource)),
        path_(std::move(path)),
        client_(client),
        options_(options),
        events_(events),
        wakeup_(wakeup) {}

  void Run(const std::atomic<bool>& stop) {
    Backoff backoff(options_.first_backoff_ns, options_.max_backoff_ns);
    while (!stop.load()) {
      const bool listing = resource_version_.empty();
      const int64_t started_ns = MonoNowNs();
      Status status = listing ? List() : Watch();
      if (stop.load()) break;
      if (status.ok() && listing) continue;  // watch from the list's resourceVersion at once
      if (status.ok() && MonoNowNs() - started_ns >= options_.max_backoff_ns) {
        backoff.Reset();  // a watch that lasted: the server is healthy, watch again at once
        continue;
      }
      // A failure, a relist after 410, or a watch that ended at once: wait before the next
      // request, longer each time until a watch lasts.
      int64_t sleep_ns = backoff.Next();
      if (!status.ok()) {
        events_->Write("api_error", {{"resource", resource_},
                                     {"what", listing ? "list" : "watch"},
                                     {"error", std::string(status.message())},
                                     {"retry_in", FormatDurationShort(sleep_ns)}});
      }
      SleepUnlessStopped(sleep_ns, &stop);
    }
  }

  // Copies of the cached objects and whether a list has completed.
  std::vector<json> Snapshot(bool* synced) {
    std::lock_guard<std::mutex> lock(mu_);
    *synced = synced_;
    std::vector<json> out;
    out.reserve(objects_.size());
    for (const auto& [key, object] : objects_) out.push_back(object);
    return out;
  }

 private:
  static std::string Key(const json& object) {
    const json& meta = object["metadata"];
    std::string ns =
        meta.value("namespace", json("")).is_string() ? meta.value("namespace", "") : "";
    return ns + "/" + meta.value("name", json("")).get<std::string>();
  }

  Status List() {
    std::map<std::string, json> objects;
    std::string continue_token, resource_version;
    ListingLimits limits;
    limits.deadline_ns = options_.list_timeout_ns;
    ListingGuard guard(fmt::format("list {}{}", client_.endpoint().server, path_), limits);
    do {
      std::string path = path_ + "?limit=500";
      if (!continue_token.empty()) path += "&continue=" + QueryValue(continue_token);
      TITAN_ASSIGN_OR_RETURN(std::string body,
                             client_.Call("GET", path, "", "", options_.request_timeout_ns));
      TITAN_ASSIGN_OR_RETURN(
          ListPage page,
          ParseListPage(body, fmt::format("GET {}{}", client_.endpoint().server, path)));
      TITAN_RETURN_IF_ERROR(guard.Next(page.items.size(), page.continue_token));
      for (json& item : page.items) {
        std::string key = Key(item);  // before the move below
        objects[key] = std::move(item);
      }
      continue_token = page.continue_token;
      resource_version = page.resource_version;
    } while (!continue_token.empty());
    if (resource_version.empty()) {
      return InvalidArgumentError(
          fmt::format("GET {}{}: list answer without metadata.resourceVersion",
                      client_.endpoint().server, path_));
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      objects_ = std::move(objects);
      synced_ = true;
      events_->Write("list", {{"resource", resource_},
                              {"items", objects_.size()},
                              {"resource_version", resource_version}});
    }
    resource_version_ = resource_version;
    wakeup_->Notify();
    return OkStatus();
  }

  Status Watch() {
    int64_t timeout_s = std::max<int64_t>(1, options_.watch_timeout_ns / 1'000'000'000);
    std::string path = fmt::format(
        "{}?watch=1&allowWatchBookmarks=true&resourceVersion={}"
        "&timeoutSeconds={}",
        path_, QueryValue(resource_version_), timeout_s);
    std::string origin = fmt::format("watch {}{}", client_.endpoint().server, path_);
    Status failure;
    Status status = client_.Watch(
        path, options_.watch_timeout_ns + options_.request_timeout_ns, [&](std::string_view line) {
          Result<WatchEvent> event = ParseWatchEvent(line, origin);
          if (!event.ok()) {
            failure = event.status();
            return false;
          }
          if (event->type == "ERROR") {
            int code = event->object.value("code", json(0)).is_number_integer()
                           ? event->object.value("code", 0)
                           : 0;
            std::string message = event->object.value("message", json("")).is_string()
                                      ? event->object.value("message", "")
                                      : "";
            if (code == 410) {
              events_->Write("relist", {{"resource", resource_}, {"why", message}});
              resource_version_.clear();
            } else {
              failure = UnavailableError(
                  fmt::format("{}: ERROR event (code {}): {}", origin, code, message));
            }
            return false;
          }
          if (!event->resource_version.empty()) resource_version_ = event->resource_version;
          if (event->type == "BOOKMARK") return true;
          {
            std::lock_guard<std::mutex> lock(mu_);
            if (event->type == "DELETED") {
              objects_.erase(Key(event->object));
            } else {
              std::string key = Key(event->object);  // before the move below
              objects_[key] = std::move(event->object);
            }
          }
          wakeup_->Notify();
          return true;
        });
    if (!failure.ok()) return failure;
    if (status.code() == StatusCode::kOutOfRange) {  // 410 Gone as the HTTP status
      resource_version_.clear();
      return OkStatus();
    }
    return status;
  }

  const std::string resource_;
  const std::string path_;
  const ApiClient& client_;
  const ControllerOptions& options_;
  EventLog* events_;
  Wakeup* wakeup_;
  std::string resource_version_;  // the watcher thread's own
  std::mutex mu_;
  std::map<std::string, json> objects_;  // guarded by mu_
  bool synced_ = false;                  // guarded by mu_
};

std::string JobPath(const LlmJob& job) {
  return fmt::format("/apis/batch/v1/namespaces/{}/jobs/{}", job.namespace_, job.name);
}

std::string StatusPath(const LlmJob& job) {
  return fmt::format("/apis/{}/{}/namespaces/{}/{}/{}/status", kGroup, kVersion, job.namespace_,
                     kPlural, job.name);
}

class Reconciler {
 public:
  Reconciler(const ApiClient& client, const ControllerOptions& options, EventLog* events)
      : client_(client), options_(options), events_(events) {}

  void Pass(const std::vector<json>& node_objects, const std::vector<json>& job_objects) {
    int64_t now_ns = MonoNowNs();
    std::vector<NodeView> nodes;
    std::vector<std::string> unusable;
    for (const json& object : node_objects) {
      Result<NodeView> node = ParseNodeView(object, "node");
      if (!node.ok()) continue;  // the informer only stores objects with a name
      if (!node->Usable()) unusable.push_back(node->name);
      nodes.push_back(std::move(*node));
    }
    std::vector<JobView> jobs;
    for (const json& object : job_objects) {
      std::string name = object["metadata"].value("name", json("")).get<std::string>();
      Result<LlmJob> job = ParseLlmJob(object, "LLMJob " + name);
      if (!job.ok()) {
        std::string message(job.status().message());
        if (invalid_[name] != message) {
          invalid_[name] = message;
          events_->Write("invalid_llmjob", {{"job", name}, {"error", message}});
        }
        continue;
      }
      invalid_.erase(name);
      Result<int64_t> size = WorkloadSize(*job);
      if (!size.ok()) {
        events_->Write("api_error", {{"job", job->Key()},
                                     {"what", "read workload"},
                                     {"error", std::string(size.status().message())}});
        continue;
      }
      jobs.push_back({std::move(*job), *size});
    }
    Plan plan = Reconcile(nodes, jobs, now_ns, &state_);
    for (const Observation& o : plan.observations) events_->Write(o.type, o.fields);
    std::map<std::string, const JobView*> by_key;
    for (const JobView& job : jobs) by_key[job.job.Key()] = &job;
    for (const Action& action : plan.actions) {
      if (action.kind == Action::Kind::kCordon) {
        Cordon(action, now_ns);
      } else {
        Scale(action, *by_key[action.job], plan.capacity[action.job], unusable, now_ns);
      }
    }
    // A status that lags the workload (a new job, a resize by hand): write it.
    for (const JobView& view : jobs) {
      if (view.workload_replicas >= 0 && view.job.status_replicas != view.workload_replicas &&
          now_ns >= status_retry_at_ns_[view.job.Key()]) {
        WriteStatus(view.job, view.workload_replicas, plan.capacity[view.job.Key()], unusable, "",
                    now_ns);
      }
    }
  }

 private:
  Result<int64_t> WorkloadSize(const LlmJob& job) {
    Result<std::string> body =
        client_.Call("GET", JobPath(job), "", "", options_.request_timeout_ns);
    if (!body.ok() && body.status().code() == StatusCode::kNotFound) return int64_t{-1};
    if (!body.ok()) return body.status();
    std::string origin = "GET " + client_.endpoint().server + JobPath(job);
    TITAN_RETURN_IF_ERROR(CheckJsonDepth(*body, origin));
    json object = json::parse(*body, nullptr, false);
    json parallelism = object.is_object()
                           ? object.value("spec", json::object()).value("parallelism", json())
                           : json();
    if (!parallelism.is_number_integer()) {
      return InvalidArgumentError(fmt::format("{}: a Job without an integer spec.parallelism: '{}'",
                                              origin, RemoteText(*body, 120)));
    }
    return parallelism.get<int64_t>();
  }

  void Cordon(const Action& action, int64_t now_ns) {
    CordonRequest request;
    request.node = action.node;
    request.reason = action.reason;
    request.consume_report = true;
    request.timeout_ns = options_.request_timeout_ns;
    Result<CordonResult> result = CordonNode(client_, request);
    if (!result.ok()) {
      state_.CordonFailed(action.node, now_ns, jitter_(random_));
      events_->Write("cordon_failed", {{"node", action.node},
                                       {"reason", action.reason},
                                       {"error", std::string(result.status().message())}});
      return;
    }
    state_.CordonSucceeded(action.node, now_ns);
    events_->Write(
        "cordon",
        {{"node", result->node},
         {"reason", action.reason},
         {"taint", fmt::format("{}={}:NoSchedule", kUnhealthyTaint, TaintValue(action.reason))},
         {"changed", result->changed},
         {"why", action.why}});
  }

  void Scale(const Action& action, const JobView& view, int64_t capacity,
             const std::vector<std::string>& unusable, int64_t now_ns) {
    json patch = {{"spec", {{"parallelism", action.to}, {"completions", action.to}}}};
    Result<std::string> done = client_.Call("PATCH", JobPath(view.job), JsonText(patch),
                                            kMergePatch, options_.request_timeout_ns);
    if (!done.ok()) {
      state_.ScaleFailed(action.job, now_ns, jitter_(random_));
      events_->Write("scale_failed", {{"job", action.job},
                                      {"from", action.from},
                                      {"to", action.to},
                                      {"error", std::string(done.status().message())}});
      return;
    }
    state_.ScaleSucceeded(action.job);
    last_scale_ns_[action.job] = WallNowNs();
    events_->Write("scale", {{"job", action.job},
                             {"from", action.from},
                             {"to", action.to},
                             {"min", view.job.min_replicas},
                             {"max", view.job.max_replicas},
                             {"replicas", view.job.replicas},
                             {"capacity", capacity},
                             {"why", action.why}});
    WriteStatus(view.job, action.to, capacity, unusable, action.why, now_ns);
  }

  void WriteStatus(const LlmJob& job, int64_t replicas, int64_t capacity,
                   const std::vector<std::string>& unusable, const std::string& message,
                   int64_t now_ns) {
    json status = {{"replicas", replicas},
                   {"selector", JobSelector(job)},
                   {"capacity", capacity},
                   {"unusableNodes", unusable}};
    if (!message.empty()) status["message"] = message;
    if (auto it = last_scale_ns_.find(job.Key()); it != last_scale_ns_.end()) {
      status["lastScaleTime"] = Rfc3339(it->second);
    }
    if (state_.last_failure_ns != kNever) {
      status["lastFailureTime"] = Rfc3339(WallNowNs() - (now_ns - state_.last_failure_ns));
    }
    json patch = {{"status", status}};
    Result<std::string> done = client_.Call("PATCH", StatusPath(job), JsonText(patch), kMergePatch,
                                            options_.request_timeout_ns);
    if (!done.ok()) {
      status_retry_at_ns_[job.Key()] = now_ns + 10'000'000'000;
      events_->Write("status_failed",
                     {{"job", job.Key()}, {"error", std::string(done.status().message())}});
      return;
    }
    status_retry_at_ns_.erase(job.Key());
  }

  const ApiClient& client_;
  const ControllerOptions& options_;
  EventLog* events_;
  ReconcileState state_;
  std::mt19937_64 random_{std::random_device{}()};
  std::uniform_real_distribution<double> jitter_{0.0, 1.0};
  std::map<std::string, std::string> invalid_;  // job name -> last error said
  std::map<std::string, int64_t> last_scale_ns_;
  std::map<std::string, int64_t> status_retry_at_ns_;
};

}  // namespace

Status RunController(const ApiClient& client, const ControllerOptions& options, EventLog* events,
                     std::atomic<bool>* stop_flag) {
  const std::atomic<bool>& stop = *stop_flag;
  Wakeup wakeup;
  std::string jobs_path = options.namespace_.empty()
                              ? fmt::format("/apis/{}/{}/{}", kGroup, kVersion, kPlural)
                              : fmt::format("/apis/{}/{}/namespaces/{}/{}", kGroup, kVersion,
                                            options.namespace_, kPlural);
  Informer nodes("nodes", "/api/v1/nodes", client, options, events, &wakeup);
  Informer jobs("llmjobs", jobs_path, client, options, events, &wakeup);
  events->Write("start", {{"server", client.endpoint().server},
                          {"source", client.endpoint().source},
                          {"namespace", options.namespace_.empty() ? "(all)" : options.namespace_},
                          {"resync", FormatDuration(options.resync_ns)}});
  std::thread node_thread([&] { nodes.Run(stop); });
  std::thread job_thread([&] { jobs.Run(stop); });
  Reconciler reconciler(client, options, events);
  int64_t started_ns = MonoNowNs();
  uint64_t seen_generation = 0;
  int64_t last_pass_ns = 0;
  while (!stop.load()) {
    if (options.run_for_ns > 0 && MonoNowNs() - started_ns >= options.run_for_ns) break;
    {
      std::unique_lock<std::mutex> lock(wakeup.mu);
      // Short waits so that a signal's stop is noticed within 100 ms.
      wakeup.cv.wait_for(lock, std::chrono::milliseconds(100),
                         [&] { return wakeup.generation != seen_generation; });
    }
    bool changed = false;
    {
      std::lock_guard<std::mutex> lock(wakeup.mu);
      changed = wakeup.generation != seen_generation;
      seen_generation = wakeup.generation;
    }
    int64_t now_ns = MonoNowNs();
    if (!changed && now_ns - last_pass_ns < options.resync_ns) continue;
    last_pass_ns = now_ns;
    bool nodes_synced = false, jobs_synced = false;
    std::vector<json> node_objects = nodes.Snapshot(&nodes_synced);
    std::vector<json> job_objects = jobs.Snapshot(&jobs_synced);
    // Decide only on a full picture: before the first list of nodes every node looks gone.
    if (!nodes_synced || !jobs_synced) continue;
    reconciler.Pass(node_objects, job_objects);
  }
  events->Write("stop", json::object());
  stop_flag->store(true);  // ends the watchers (and aborts their requests)
  node_thread.join();
  job_thread.join();
  return OkStatus();
}

}  // namespace titan::k8s
