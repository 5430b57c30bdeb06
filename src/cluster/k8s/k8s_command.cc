// `titan k8s`: flags -> the library calls (manifests.h, cordon.h, controller.h).
#include "src/cluster/k8s/k8s_command.h"

#include <signal.h>

#include <atomic>
#include <cstdio>
#include <string>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "src/base/atomic_file.h"
#include "src/base/command_line.h"
#include "src/base/duration.h"
#include "src/base/env.h"
#include "src/base/log.h"
#include "src/base/yaml_json.h"
#include "src/cluster/k8s/api_client.h"
#include "src/cluster/k8s/controller.h"
#include "src/cluster/k8s/cordon.h"
#include "src/cluster/k8s/crd_yaml.h"
#include "src/cluster/k8s/kubeconfig.h"
#include "src/cluster/k8s/llmjob.h"
#include "src/cluster/k8s/manifests.h"
#include "src/cluster/k8s/node_patch.h"

namespace titan::k8s {

namespace {

std::atomic<bool> g_stop{false};

void OnSignal(int) { g_stop.store(true); }

int Fail(const Status& status) {
  std::fprintf(stderr, "titan k8s: %s\n", std::string(status.message()).c_str());
  return 1;
}

// A duration flag: a validator for CLI11 (usage errors exit 2).
CLI::Validator DurationCheck() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        int64_t ns = 0;
        return ParseDurationNs(text, &ns) ? "" : "expected a duration such as 10s, 500ms, 2m";
      },
      "DURATION");
}

int64_t Ns(const std::string& text) {
  int64_t ns = 0;
  ParseDurationNs(text, &ns);  // checked by DurationCheck
  return ns;
}

int Manifests(const std::string& file, bool controller, const ManifestOptions& options,
              const ControllerManifestOptions& controller_options, const std::string& out) {
  std::vector<nlohmann::json> docs;
  if (controller) {
    docs = ControllerManifests(controller_options);
  } else {
    Result<std::string> text = Env::ReadFile(file, 1 << 20);
    if (!text.ok()) return Fail(text.status());
    Result<LlmJob> job = LoadLlmJobText(*text, file);
    if (!job.ok()) return Fail(job.status());
    docs = JobManifests(*job, options);
  }
  Status written = WriteFileAtomically(out, JsonToYaml(docs));
  return written.ok() ? 0 : Fail(written);
}

}  // namespace

int K8sCommand(int argc, char** argv) {
  CLI::App app{
      "titan k8s: run elastic LLM training jobs on Kubernetes (docs/run.md, \"Kubernetes\").\n"
      "An LLMJob (titan.io/v1alpha1) asks for `replicas` pods within minReplicas..maxReplicas;\n"
      "its workload is an Indexed Job of `titan run` pods. The controller cordons and taints\n"
      "nodes reported bad, shrinks jobs to the usable nodes (never below minReplicas) and grows\n"
      "them back once scaleDownDelay has passed since the last failure.\n\n"
      "Examples:\n"
      "  titan k8s crd | kubectl apply -f -\n"
      "  titan k8s manifests llmjob.yaml | kubectl apply -f -\n"
      "  titan k8s manifests --controller --image registry/titan:1 | kubectl apply -f -\n"
      "  titan k8s cordon node-17 --reason xid-79 --kubeconfig ~/.kube/config\n"
      "  titan k8s controller --kubeconfig ~/.kube/config --event-log events.jsonl\n",
      "titan k8s"};
  app.require_subcommand(1);

  CLI::App* crd = app.add_subcommand("crd", "print the LLMJob CustomResourceDefinition (YAML)");

  CLI::App* manifests =
      app.add_subcommand("manifests", "print the objects that run an LLMJob (or the controller)");
  std::string job_file, out = "-";
  bool controller_manifests = false;
  ManifestOptions manifest_options;
  ControllerManifestOptions controller_manifest_options;
  manifests->add_option("LLMJOB", job_file, "an LLMJob YAML file");
  manifests->add_flag("--controller", controller_manifests,
                      "the controller's Namespace, RBAC and Deployment instead");
  manifests->add_option("--etcd", manifest_options.etcd_endpoint,
                        "an existing etcd (http://HOST:2379) instead of one in the manifests");
  manifests->add_option("--etcd-image", manifest_options.etcd_image, "image of the included etcd")
      ->capture_default_str();
  manifests
      ->add_option("--titan", manifest_options.titan_path, "the titan binary in the job's image")
      ->capture_default_str();
  manifests
      ->add_option("--namespace", controller_manifest_options.namespace_,
                   "--controller: its namespace")
      ->capture_default_str();
  manifests
      ->add_option("--image", controller_manifest_options.image,
                   "--controller: an image with titan")
      ->capture_default_str();
  manifests->add_option("-o,--output", out, "write here instead of stdout (atomically)");

  CLI::App* cordon =
      app.add_subcommand("cordon", "cordon NODE and taint it titan.io/unhealthy=REASON:NoSchedule");
  CordonRequest request;
  std::string kubeconfig, context, timeout = "10s";
  cordon->add_option("NODE", request.node, "a Node name (or a pod name: its node)")->required();
  cordon->add_option("--reason", request.reason, "why (the taint's value, an annotation)")
      ->required();
  cordon->add_flag("--dry-run", request.dry_run, "print the patch; change nothing");
  cordon->add_option("--namespace", request.pod_namespace,
                     "where to look NODE up as a pod (default: the context's / the pod's)");
  cordon->add_option("--timeout", timeout, "bound of the whole operation")
      ->check(DurationCheck())
      ->capture_default_str();

  CLI::App* controller = app.add_subcommand(
      "controller", "watch Nodes and LLMJobs; cordon reported nodes; resize jobs");
  ControllerOptions controller_options;
  std::string event_log = "-", resync = "1s", request_timeout = "10s", watch_timeout = "60s",
              list_timeout = "2m", run_for, log_level = "info";
  controller->add_option("--namespace", controller_options.namespace_,
                         "LLMJobs of this namespace only (default: all)");
  controller->add_option("--event-log", event_log, "JSON lines events ('-': stdout)")
      ->capture_default_str();
  controller->add_option("--resync", resync, "reconcile at least this often")
      ->check(DurationCheck())
      ->capture_default_str();
  controller->add_option("--request-timeout", request_timeout, "bound of each API request")
      ->check(DurationCheck())
      ->capture_default_str();
  controller
      ->add_option("--watch-timeout", watch_timeout,
                   "a watch is renewed after this (and dropped when silent this long plus "
                   "--request-timeout)")
      ->check(DurationCheck())
      ->capture_default_str();
  controller->add_option("--list-timeout", list_timeout, "bound of a whole list (all its pages)")
      ->check(DurationCheck())
      ->capture_default_str();
  controller->add_option("--run-for", run_for, "stop after this long (default: until SIGTERM)")
      ->check(DurationCheck());
  controller->add_option("--log-level", log_level, "debug, info, warning, error")
      ->capture_default_str();
  ApiClientOptions client_options;
  for (CLI::App* sub : {cordon, controller}) {
    sub->add_option("--kubeconfig", kubeconfig,
                    "kubeconfig file (default: $KUBECONFIG, in-cluster, ~/.kube/config)");
    sub->add_option("--context", context, "kubeconfig context (default: current-context)");
    sub->add_option("--api-qps", client_options.requests_per_second,
                    "API requests per second, at most (client-go's default; 0: no limit)")
        ->check(CLI::Range(0.0, 10000.0))
        ->capture_default_str();
    sub->add_option("--api-burst", client_options.burst, "API requests at once after a pause")
        ->check(CLI::Range(1, 100000))
        ->capture_default_str();
  }

  if (std::optional<int> done = ParseCommandLine(app, argc, argv)) return *done;

  if (crd->parsed()) {
    std::fwrite(LlmJobCrdYaml().data(), 1, LlmJobCrdYaml().size(), stdout);
    return std::fflush(stdout) == 0 ? 0 : 1;
  }
  if (manifests->parsed()) {
    if (controller_manifests == !job_file.empty()) {
      std::fprintf(stderr,
                   "titan k8s manifests: give an LLMJob file or --controller (see --help)\n");
      return kExitUsageError;
    }
    return Manifests(job_file, controller_manifests, manifest_options, controller_manifest_options,
                     out);
  }

  Result<ApiEndpoint> endpoint = ResolveEndpoint(kubeconfig, context);
  if (!endpoint.ok()) return Fail(endpoint.status());
  ApiClient client(*endpoint, &g_stop, client_options);
  if (cordon->parsed()) {
    if (request.pod_namespace.empty()) request.pod_namespace = endpoint->namespace_;
    request.timeout_ns = Ns(timeout);
    Result<CordonResult> result = CordonNode(client, request);
    if (!result.ok()) {
      return Fail(result.status().WithContext(fmt::format("API server {}", endpoint->server)));
    }
    std::string via =
        result->node == request.node ? "" : fmt::format(" (pod {} runs on it)", request.node);
    if (request.dry_run) {
      std::printf("node/%s%s: would patch (%s): %s\n", result->node.c_str(), via.c_str(),
                  std::string(kStrategicMergePatch).c_str(),
                  result->patch.empty() ? "nothing, already cordoned" : result->patch.c_str());
    } else {
      std::printf("node/%s%s %s: unschedulable, taint titan.io/unhealthy=%s:NoSchedule\n",
                  result->node.c_str(), via.c_str(),
                  result->changed ? "cordoned" : "already cordoned",
                  TaintValue(request.reason).c_str());
    }
    return 0;
  }

  LogLevel level;
  if (!ParseLogLevel(log_level, &level)) {
    std::fprintf(stderr,
                 "titan k8s controller: --log-level '%s': expected debug, info, warning "
                 "or error\n",
                 log_level.c_str());
    return kExitUsageError;
  }
  SetLogLevel(level);
  controller_options.resync_ns = Ns(resync);
  controller_options.request_timeout_ns = Ns(request_timeout);
  controller_options.watch_timeout_ns = Ns(watch_timeout);
  controller_options.list_timeout_ns = Ns(list_timeout);
  if (!run_for.empty()) controller_options.run_for_ns = Ns(run_for);
  EventLog events;
  if (Status opened = events.Open(event_log); !opened.ok()) return Fail(opened);
  struct sigaction action = {};
  action.sa_handler = OnSignal;
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  Status status = RunController(client, controller_options, &events, &g_stop);
  return status.ok() ? 0 : Fail(status);
}

}  // namespace titan::k8s
