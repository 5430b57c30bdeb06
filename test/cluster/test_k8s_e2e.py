"""End-to-end tests of `titan k8s` (crd, manifests, cordon, controller).

TEST DOUBLE: no kube-apiserver can be installed on the test machine, so these tests run against
k8s_api.py, a Kubernetes API stand-in (Python, stdlib http.server, TLS with a throw-away CA).
That stand-in is the one test double here. Everything else is real: the titan binary, Debian's
kubectl (package kubernetes-client) driving the same stand-in to show that titan and kubectl
speak the same wire protocol, python3-jsonschema checking the CRD's openAPIV3 schema, real
timeouts and refused requests. titan k8s has NOT yet been run against a real kube-apiserver.
"""

import base64
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import jsonschema
import pytest
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import k8s_api  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TITAN = os.environ.get("TITAN_BIN", os.path.join(ROOT, "build/release/tools/titan/titan"))
KUBECTL = shutil.which("kubectl")
TOKEN = "titan-test-token"


def titan(*args, check=False, timeout=60):
    p = subprocess.run([TITAN, "k8s", *args], capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError("titan k8s %s: exit %d\n%s" % (args, p.returncode, p.stderr))
    return p


def node(name, gpus=2, taints=None):
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "spec": {"taints": taints} if taints else {},
            "status": {"conditions": [{"type": "Ready", "status": "True"}],
                       "allocatable": {"nvidia.com/gpu": str(gpus), "cpu": "8"}}}


LLMJOB = {"apiVersion": "titan.io/v1alpha1", "kind": "LLMJob",
          "metadata": {"name": "llm", "namespace": "training"},
          "spec": {"replicas": 6, "minReplicas": 4, "maxReplicas": 8, "scaleDownDelay": "3s",
                   "image": "registry.example.com/llm-train:1.0", "command": ["python3", "train.py"],
                   "checkpointDir": "/shared/ckpt/llm",
                   "resources": {"limits": {"nvidia.com/gpu": 1}}}}


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    d = tmp_path_factory.mktemp("tls")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-keyout", str(d / "key.pem"), "-out", str(d / "cert.pem"),
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    return d


@pytest.fixture
def api(tls, tmp_path):
    standin = k8s_api.StandIn(token=TOKEN, cert=str(tls / "cert.pem"), key=str(tls / "key.pem"))
    for n in (node("n1"), node("n2", taints=[{"key": "nvidia.com/gpu", "value": "present",
                                               "effect": "NoSchedule"}]), node("n3")):
        standin.state.put("nodes", n)
    standin.state.put("llmjobs", LLMJOB)
    standin.state.put("jobs", {"metadata": {"name": "llm", "namespace": "training"},
                               "spec": {"parallelism": 6, "completions": 6,
                                        "completionMode": "Indexed"}})
    standin.state.put("pods", {"metadata": {"name": "llm-2-x7k2p", "namespace": "training"},
                               "spec": {"nodeName": "n3"}})
    standin.start()
    ca = base64.b64encode((tls / "cert.pem").read_bytes()).decode()
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "standin",
        "clusters": [{"name": "standin", "cluster": {"server": standin.url,
                                                     "certificate-authority-data": ca}}],
        "users": [{"name": "titan", "user": {"token": TOKEN}}],
        "contexts": [{"name": "standin", "context": {"cluster": "standin", "user": "titan",
                                                     "namespace": "training"}}]}))
    standin.kubeconfig = str(kubeconfig)
    yield standin
    standin.stop()


def kubectl(api, *args):
    p = subprocess.run([KUBECTL, "--kubeconfig", api.kubeconfig, *args], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, "kubectl %s: %s" % (args, p.stderr)
    return p.stdout


def used_permissions(api):
    """{(api group, resource, verb)} of titan's requests to the stand-in, as RBAC names them."""
    used = set()
    for r in api.requests():
        if not r["user_agent"].startswith("titan"):
            continue
        m = k8s_api.ROUTE.match(r["path"])
        group = "" if m.group("core") else m.group("group")
        resource = m.group("resource") + ("/" + m.group("sub") if m.group("sub") else "")
        if r["method"] == "GET":
            verb = "get" if m.group("name") else "watch" if r["query"].get("watch") else "list"
        else:
            verb = r["method"].lower()
        used.add((group, resource, verb))
    return used


def granted(docs, kind):
    return {(g, res, v) for d in docs if d["kind"] == kind for rule in d["rules"]
            for g in rule["apiGroups"] for res in rule["resources"] for v in rule["verbs"]}


def kubectl_node(api, name):
    return json.loads(kubectl(api, "get", "node", name, "-o", "json"))


# --- the CRD, its schema and CEL rules, the manifests ------------------------------------------

CRD_PATH = os.path.join(ROOT, "deploy/k8s/llmjob-crd.yaml")

# The CRD's CEL rules (x-kubernetes-validations) as equivalent Python predicates. This is not a
# CEL evaluator: the predicates are hand-derived from the rule texts, and the test below fails
# when the CRD's rules change without this table following.
CEL_RULES = {
    "self.minReplicas <= self.replicas && self.replicas <= self.maxReplicas":
        lambda s: s["minReplicas"] <= s["replicas"] <= s["maxReplicas"],
    "!has(self.checkpointDir) || self.checkpointDir.startsWith('/') || "
    "self.checkpointDir.startsWith('s3://')":
        lambda s: "checkpointDir" not in s or s["checkpointDir"].startswith("/")
        or s["checkpointDir"].startswith("s3://"),
}


def crd_version():
    with open(CRD_PATH) as f:
        crd = yaml.safe_load(f)
    return crd["spec"]["versions"][0]


def admitted(obj):
    """(schema errors, failed CEL rules) of an LLMJob against the CRD."""
    version = crd_version()
    schema = version["schema"]["openAPIV3Schema"]
    errors = [e.message for e in jsonschema.Draft7Validator(schema).iter_errors(obj)]
    failed = []
    if not errors:
        for rule in schema["properties"]["spec"]["x-kubernetes-validations"]:
            if not CEL_RULES[rule["rule"]](obj["spec"]):
                failed.append(rule["message"])
    return errors, failed


def test_crd_is_the_file_in_deploy_and_has_the_subresources():
    p = titan("crd", check=True)
    with open(CRD_PATH) as f:
        assert p.stdout == f.read()
    version = crd_version()
    assert version["subresources"]["scale"]["specReplicasPath"] == ".spec.replicas"
    assert "status" in version["subresources"]
    rules = [r["rule"] for r in
             version["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"]]
    assert sorted(rules) == sorted(CEL_RULES), "CRD rules changed: update CEL_RULES"


def spec_with(**changes):
    obj = json.loads(json.dumps(LLMJOB))
    obj["spec"].update(changes)
    return obj


@pytest.mark.parametrize("changes,field", [
    ({"minReplicas": 7}, "spec.minReplicas (7) is greater than spec.replicas (6)"),
    ({"maxReplicas": 5}, "spec.maxReplicas (5) is less than spec.replicas (6)"),
    ({"replicas": "six"}, "spec.replicas must be an integer"),
    ({"scaleDownDelay": "soon"}, "spec.scaleDownDelay 'soon' is not a duration"),
    ({"checkpointDir": "relative/dir"}, "spec.checkpointDir 'relative/dir' must be an absolute"),
])
def test_titan_refuses_what_the_crd_refuses(tmp_path, changes, field):
    obj = spec_with(**changes)
    errors, failed = admitted(obj)
    assert errors or failed, "the CRD would admit %s" % changes
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(obj))
    p = titan("manifests", str(path))
    assert p.returncode == 1
    assert field in p.stderr and str(path) in p.stderr, p.stderr


def test_examples_are_admitted_and_manifests_are_well_formed(api, tmp_path):
    with open(os.path.join(ROOT, "deploy/k8s/example-llmjob.yaml")) as f:
        example = yaml.safe_load(f)
    for obj in (example, LLMJOB):
        assert admitted(obj) == ([], [])
    out = tmp_path / "manifests.yaml"
    titan("manifests", os.path.join(ROOT, "deploy/k8s/example-llmjob.yaml"), "-o", str(out),
          check=True)
    docs = list(yaml.safe_load_all(out.read_text()))
    kinds = [d["kind"] for d in docs]
    assert kinds == ["ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
                     "Service", "StatefulSet", "Service", "Job"]
    job = docs[-1]
    assert job["spec"]["completionMode"] == "Indexed"
    assert job["spec"]["parallelism"] == job["spec"]["completions"] == 1024
    command = job["spec"]["template"]["spec"]["containers"][0]["command"]
    assert command[:4] == ["titan", "run", "--nnodes", "512:2048"]
    assert command[command.index("--on-isolate") + 1] == "k8s-cordon"
    assert command[command.index("--node-id") + 1] == "$(POD_NAME)"
    assert command[command.index("--") + 1:] == example["spec"]["command"]
    # kubectl reads the YAML and maps every kind through the stand-in's discovery.
    p = subprocess.run([KUBECTL, "--kubeconfig", api.kubeconfig, "create", "--dry-run=client",
                        "--validate=false", "-o", "name", "-f", str(out)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "job.batch/llm" in p.stdout and "statefulset.apps/llm-etcd" in p.stdout


# --- titan k8s cordon, and kubectl on the same stand-in ----------------------------------------

def test_cordon_keeps_taints_is_idempotent_and_kubectl_sees_it(api):
    p = titan("cordon", "n2", "--reason", "xid-79", "--kubeconfig", api.kubeconfig, check=True)
    assert "node/n2 cordoned" in p.stdout
    patches = api.requests("PATCH", "/api/v1/nodes/n2$")
    assert len(patches) == 1
    assert patches[0]["content_type"] == "application/strategic-merge-patch+json"
    n2 = kubectl_node(api, "n2")
    assert n2["spec"]["unschedulable"] is True
    taints = {(t["key"], t.get("value"), t["effect"]) for t in n2["spec"]["taints"]}
    assert taints == {("nvidia.com/gpu", "present", "NoSchedule"),
                      ("titan.io/unhealthy", "xid-79", "NoSchedule")}
    assert n2["metadata"]["annotations"]["titan.io/unhealthy-reason"] == "xid-79"
    # Again: nothing to change, no second patch.
    p = titan("cordon", "n2", "--reason", "xid-79", "--kubeconfig", api.kubeconfig, check=True)
    assert "already cordoned" in p.stdout
    assert len(api.requests("PATCH", "/api/v1/nodes/n2$")) == 1
    # kubectl's own cordon and taint of another node go through the same code path of the
    # stand-in (strategic merge patches), and titan's cordon keeps kubectl's taint.
    kubectl(api, "taint", "nodes", "n1", "maintenance=planned:NoSchedule")
    kubectl(api, "cordon", "n1")
    kubectl_patches = [r for r in api.requests("PATCH", "/api/v1/nodes/n1$")
                       if r["user_agent"].startswith("kubectl")]
    assert {r["content_type"] for r in kubectl_patches} == {"application/strategic-merge-patch+json"}
    titan("cordon", "n1", "--reason", "ecc errors", "--kubeconfig", api.kubeconfig, check=True)
    n1 = kubectl_node(api, "n1")
    assert {t["key"] for t in n1["spec"]["taints"]} == {"maintenance", "titan.io/unhealthy"}
    assert [t["value"] for t in n1["spec"]["taints"] if t["key"] == "titan.io/unhealthy"] == [
        "ecc_errors"]
    columns = kubectl(api, "get", "nodes", "-o",
                      "custom-columns=NAME:.metadata.name,UNSCHEDULABLE:.spec.unschedulable,"
                      "TAINTS:.spec.taints[*].key")
    assert re.search(r"n2\s+true\s+nvidia.com/gpu,titan.io/unhealthy", columns), columns
    # kubectl undoes it the usual way.
    kubectl(api, "uncordon", "n2")
    kubectl(api, "taint", "nodes", "n2", "titan.io/unhealthy:NoSchedule-")
    assert "unschedulable" not in kubectl_node(api, "n2")["spec"]


def test_cordon_by_pod_name_and_dry_run(api):
    p = titan("cordon", "llm-2-x7k2p", "--reason", "hang", "--dry-run", "--kubeconfig",
              api.kubeconfig, check=True)
    assert "node/n3 (pod llm-2-x7k2p runs on it): would patch" in p.stdout
    assert not api.requests("PATCH")
    titan("cordon", "llm-2-x7k2p", "--reason", "hang", "--kubeconfig", api.kubeconfig, check=True)
    assert kubectl_node(api, "n3")["spec"]["unschedulable"] is True
    # The pods' RBAC grants exactly what the cordon used.
    docs = list(yaml.safe_load_all(titan("manifests", os.path.join(
        ROOT, "deploy/k8s/example-llmjob.yaml"), check=True).stdout))
    assert used_permissions(api) == granted(docs, "ClusterRole") | granted(docs, "Role")


def test_cordon_failures_are_clear(api, tmp_path):
    api.add_fault(r"^PATCH /api/v1/nodes/n1$", "403")
    p = titan("cordon", "n1", "--reason", "r", "--kubeconfig", api.kubeconfig)
    assert p.returncode == 1
    for part in (api.url, "node 'n1'", "HTTP 403", "ClusterRole"):
        assert part in p.stderr, p.stderr
    p = titan("cordon", "nope", "--reason", "r", "--kubeconfig", api.kubeconfig)
    assert p.returncode == 1 and "HTTP 404" in p.stderr and "nope" in p.stderr, p.stderr
    api.add_fault(r"^GET /api/v1/nodes/n3$", "hang")
    p = titan("cordon", "n3", "--reason", "r", "--timeout", "1s", "--kubeconfig", api.kubeconfig)
    assert p.returncode == 1 and "no complete answer within" in p.stderr, p.stderr
    bad = tmp_path / "bad-token"
    bad.write_text(open(api.kubeconfig).read().replace(TOKEN, "wrong"))
    p = titan("cordon", "n2", "--reason", "r", "--kubeconfig", str(bad))
    assert p.returncode == 1 and "HTTP 401" in p.stderr and "credentials" in p.stderr, p.stderr
    p = titan("cordon", "n2", "--kubeconfig", api.kubeconfig)
    assert p.returncode == 2  # --reason is required
    assert "unschedulable" not in kubectl_node(api, "n1")["spec"]


# --- the controller ----------------------------------------------------------------------------

class Controller:
    def __init__(self, api, tmp_path, *extra):
        self.path = tmp_path / "events.jsonl"
        self.stderr = open(tmp_path / "controller.stderr", "w")
        self.proc = subprocess.Popen(
            [TITAN, "k8s", "controller", "--kubeconfig", api.kubeconfig, "--event-log",
             str(self.path), "--resync", "200ms", "--request-timeout", "2s", *extra],
            stdout=subprocess.DEVNULL, stderr=self.stderr)

    def events(self):
        if not self.path.exists():
            return []
        return [json.loads(line) for line in self.path.read_text().splitlines() if line]

    def wait_for(self, predicate, what, timeout=20, since=0):
        """The first event from the `since`-th on that satisfies `predicate`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, "the controller exited: %s" % self.proc.returncode
            found = [e for e in self.events()[since:] if predicate(e)]
            if found:
                return found[0]
            time.sleep(0.05)
        raise AssertionError("no %s event within %d s; events:\n%s" % (
            what, timeout, "\n".join(json.dumps(e) for e in self.events())))

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(timeout=10) == 0
        self.stderr.close()


@pytest.fixture
def controller(api, tmp_path):
    c = Controller(api, tmp_path)
    yield c
    if c.proc.poll() is None:
        c.stop()


def job_size(api):
    spec = api.state.get("jobs", "training", "llm")["spec"]
    assert spec["parallelism"] == spec["completions"]
    return spec["parallelism"]


def test_controller_cordons_shrinks_and_grows_back(api, controller):
    # Until now n2 carries only a GPU taint: all 3 nodes x 2 GPUs are usable for 6 replicas.
    controller.wait_for(lambda e: e["type"] == "list" and e["resource"] == "llmjobs", "list")
    kubectl(api, "annotate", "node", "n2", "titan.io/report-unhealthy=xid-79")
    cordon = controller.wait_for(lambda e: e["type"] == "cordon", "cordon")
    assert cordon["node"] == "n2" and cordon["reason"] == "xid-79"
    shrink = controller.wait_for(lambda e: e["type"] == "scale", "scale")
    assert (shrink["from"], shrink["to"], shrink["job"]) == (6, 4, "training/llm")
    assert job_size(api) == 4
    n2 = kubectl_node(api, "n2")
    assert n2["spec"]["unschedulable"] is True
    assert "titan.io/report-unhealthy" not in n2["metadata"]["annotations"]  # consumed
    assert ("titan.io/unhealthy", "xid-79") in {(t["key"], t.get("value"))
                                               for t in n2["spec"]["taints"]}
    status = json.loads(kubectl(api, "get", "llmjob", "llm", "-n", "training", "-o", "json"))
    assert status["status"]["replicas"] == 4 and status["status"]["unusableNodes"] == ["n2"]
    assert status["status"]["selector"] == "titan.io/llmjob=llm"
    # The node comes back; the job grows back to replicas only once scaleDownDelay (3 s) has
    # passed since the failure, and says it is waiting meanwhile.
    kubectl(api, "uncordon", "n2")
    kubectl(api, "taint", "nodes", "n2", "titan.io/unhealthy:NoSchedule-")
    wait = controller.wait_for(lambda e: e["type"] == "grow_wait", "grow_wait")
    assert (wait["from"], wait["to"]) == (4, 6)
    grow = controller.wait_for(lambda e: e["type"] == "scale" and e["to"] == 6, "scale up")
    unusable = controller.wait_for(lambda e: e["type"] == "node_unusable", "node_unusable")
    assert grow["t"] - unusable["t"] >= 3.0  # the delay was respected (a lower bound only)
    assert job_size(api) == 6
    # The replicas asked for through the LLMJob's scale subresource, as `kubectl scale` does.
    mark = len(controller.events())
    kubectl(api, "scale", "llmjob", "llm", "-n", "training", "--replicas=5")
    controller.wait_for(lambda e: e["type"] == "scale" and e["to"] == 5, "scale to 5", since=mark)
    assert job_size(api) == 5
    # Never below minReplicas: two of three nodes gone leave capacity 2 < minReplicas 4.
    mark = len(controller.events())
    kubectl(api, "cordon", "n1")
    kubectl(api, "cordon", "n3")
    hold = controller.wait_for(lambda e: e["type"] == "hold", "hold at minReplicas", since=mark)
    assert (hold["replicas"], hold["capacity"]) == (4, 2)
    assert job_size(api) == 4
    # The controller's RBAC grants exactly what it used.
    docs = list(yaml.safe_load_all(titan("manifests", "--controller", check=True).stdout))
    assert used_permissions(api) == granted(docs, "ClusterRole")


def test_controller_survives_refusals_timeouts_and_garbage(api, tmp_path):
    # Watches renewed every 2 s, so that a fault on the watch path is met soon.
    c = Controller(api, tmp_path, "--watch-timeout", "2s")
    try:
        c.wait_for(lambda e: e["type"] == "list" and e["resource"] == "nodes", "list")
        api.add_fault(r"^PATCH /apis/batch/v1/namespaces/training/jobs/llm$", "403")
        kubectl(api, "annotate", "node", "n1", "titan.io/report-unhealthy=ecc")
        refused = c.wait_for(lambda e: e["type"] == "scale_failed", "scale_failed")
        assert "HTTP 403" in refused["error"] and "ClusterRole" in refused["error"]
        assert job_size(api) == 6
        api.clear_faults()
        c.wait_for(lambda e: e["type"] == "scale" and e["to"] == 4, "scale after 403 cleared")
        # A hung API server: the job read times out, is reported, the controller carries on.
        api.add_fault(r"^GET /apis/batch/v1/namespaces/training/jobs/llm$", "hang", times=1)
        hung = c.wait_for(lambda e: e["type"] == "api_error" and e.get("what") == "read workload",
                          "timeout")
        assert "no complete answer within 2000 ms" in hung["error"]
        # Garbage on the node watch: reported, and watched again.
        api.add_fault(r"^GET /api/v1/nodes$", "garbage", times=1)
        bad = c.wait_for(lambda e: e["type"] == "api_error" and "not JSON" in e["error"], "garbage")
        assert bad["resource"] == "nodes"
        kubectl(api, "annotate", "node", "n3", "titan.io/report-unhealthy=late")
        c.wait_for(lambda e: e["type"] == "cordon" and e["node"] == "n3", "cordon after garbage")
    finally:
        c.stop()
