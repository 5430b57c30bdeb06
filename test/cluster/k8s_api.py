"""A Kubernetes API server stand-in for titan k8s's tests: the one test double titan's k8s tests
use, because no kube-apiserver (nor etcd-backed control plane) can be installed on the test
machine. It is NOT Kubernetes: it answers the subset of the REST API that `titan k8s` and Debian's
`kubectl` (cordon, uncordon, taint, annotate, get, scale) use, the way the API documents it:

- discovery: /version, /api, /apis, /api/v1, /apis/<group>/<version>
- nodes: GET, LIST, WATCH (?watch=1&resourceVersion=RV, chunked JSON lines), PATCH (strategic
  merge, JSON merge and JSON patch; spec.taints is atomic, as in core/v1), PUT
- pods (GET), batch/v1 jobs (GET, LIST, PATCH), titan.io/v1alpha1 llmjobs (GET, LIST, WATCH,
  PATCH, status and scale subresources)
- metadata.resourceVersion preconditions (409 Conflict), 404/401 Status objects, bearer tokens,
  TLS when given a certificate.

It records every request (method, path, query, content type, body) for the tests to inspect, and
injects faults on request: answer 403, hang, answer garbage (see Fault).

Run alone: python3 k8s_api.py --port 0 --state state.json --token T [--cert C --key K]
"""

import argparse
import copy
import json
import re
import ssl
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

GROUPS = {
    # group/version: [(resource, kind, namespaced, verbs)]
    "v1": [("nodes", "Node", False, ["get", "list", "watch", "patch", "update"]),
           ("pods", "Pod", True, ["get", "list"]),
           ("services", "Service", True, ["get", "list", "create"]),
           ("serviceaccounts", "ServiceAccount", True, ["get", "create"]),
           ("namespaces", "Namespace", False, ["get", "create"])],
    "batch/v1": [("jobs", "Job", True, ["get", "list", "patch"])],
    "apps/v1": [("statefulsets", "StatefulSet", True, ["get", "create"]),
                ("deployments", "Deployment", True, ["get", "create"])],
    "rbac.authorization.k8s.io/v1": [
        ("clusterroles", "ClusterRole", False, ["get", "create"]),
        ("clusterrolebindings", "ClusterRoleBinding", False, ["get", "create"]),
        ("roles", "Role", True, ["get", "create"]),
        ("rolebindings", "RoleBinding", True, ["get", "create"])],
    "titan.io/v1alpha1": [("llmjobs", "LLMJob", True, ["get", "list", "watch", "patch", "update"]),
                          ("llmjobs/status", "LLMJob", True, ["get", "patch", "update"]),
                          ("llmjobs/scale", "Scale", True, ["get", "patch", "update"])],
}
STORED = {"nodes": "v1", "pods": "v1", "jobs": "batch/v1", "llmjobs": "titan.io/v1alpha1"}


def status_object(code, reason, message):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def strategic_merge_patch(target, patch):
    """The strategic merge patch of the fields titan and kubectl send to Nodes: maps merge,
    null deletes, lists replace (core/v1 Node's spec.taints is atomic: no patch merge key);
    $setElementOrder/ and $retainKeys directives are accepted and have no effect here."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: v for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$setElementOrder/") or key in ("$retainKeys", "$patch"):
            continue
        if value is None:
            out.pop(key, None)
        else:
            merged = strategic_merge_patch(out.get(key), value)
            if merged is None:
                out.pop(key, None)
            else:
                out[key] = merged
    return out


def json_patch(target, ops):
    out = copy.deepcopy(target)
    for op in ops:
        parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        parent = out
        for p in parts[:-1]:
            parent = parent[int(p)] if isinstance(parent, list) else parent.setdefault(p, {})
        last = parts[-1]
        if op["op"] in ("add", "replace"):
            if isinstance(parent, list):
                if last == "-":
                    parent.append(op["value"])
                elif op["op"] == "add":
                    parent.insert(int(last), op["value"])
                else:
                    parent[int(last)] = op["value"]
            else:
                parent[last] = op["value"]
        elif op["op"] == "remove":
            if isinstance(parent, list):
                del parent[int(last)]
            else:
                del parent[last]
        elif op["op"] == "test":
            if (parent[int(last)] if isinstance(parent, list) else parent.get(last)) != op["value"]:
                raise ValueError("test failed")
    return out


class Fault:
    """A fault for requests whose 'METHOD path' matches `pattern` (a regex): mode '403', '500',
    'hang' (answers nothing until the stand-in stops) or 'garbage' (200 with a non-JSON body;
    for a watch, a non-JSON line). `times` (None: until cleared) bounds how often it fires."""

    def __init__(self, pattern, mode, times=None):
        self.pattern = re.compile(pattern)
        self.mode = mode
        self.times = times
        self.fired = 0


class State:
    def __init__(self, token=None):
        self.lock = threading.Condition()
        self.rv = 100
        self.objects = {r: {} for r in STORED}  # resource -> key (ns/name) -> object
        self.history = []  # (rv, resource, type, object)
        self.requests = []
        self.faults = []
        self.token = token
        self.stopping = False

    def _touch(self, obj):
        self.rv += 1
        obj.setdefault("metadata", {})["resourceVersion"] = str(self.rv)
        return obj

    def put(self, resource, obj, event="ADDED"):
        with self.lock:
            obj = copy.deepcopy(obj)
            meta = obj.setdefault("metadata", {})
            meta.setdefault("uid", "uid-%s-%s" % (resource, meta["name"]))
            meta.setdefault("creationTimestamp", "2026-01-01T00:00:00Z")
            obj.setdefault("apiVersion", STORED[resource])
            obj.setdefault("kind", dict((r, k) for r, k, _, _ in GROUPS[STORED[resource]])[resource])
            key = "%s/%s" % (meta.get("namespace", ""), meta["name"])
            if key in self.objects[resource]:
                event = "MODIFIED"
            self._touch(obj)
            self.objects[resource][key] = obj
            self.history.append((self.rv, resource, event, copy.deepcopy(obj)))
            self.lock.notify_all()
            return obj

    def get(self, resource, ns, name):
        with self.lock:
            return copy.deepcopy(self.objects[resource].get("%s/%s" % (ns or "", name)))

    def load(self, path):
        with open(path) as f:
            for resource, items in json.load(f).items():
                for obj in items:
                    self.put(resource, obj)

    def fault_for(self, method, path):
        with self.lock:
            for fault in self.faults:
                if fault.pattern.search("%s %s" % (method, path)) and (
                        fault.times is None or fault.fired < fault.times):
                    fault.fired += 1
                    return fault
        return None


ROUTE = re.compile(r"^/(?:api/(?P<core>v1)|apis/(?P<group>[^/]+)/(?P<version>[^/]+))"
                   r"(?:/namespaces/(?P<ns>[^/]+))?/(?P<resource>[a-z]+)(?:/(?P<name>[^/]+))?"
                   r"(?:/(?P<sub>status|scale))?$")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "titan-k8s-api-standin/0.1"

    def log_message(self, *args):
        pass

    @property
    def state(self):
        return self.server.state

    def send_json(self, code, obj, headers=()):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def fail(self, code, reason, message):
        self.send_json(code, status_object(code, reason, message))

    def handle_any(self, method):
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        record = {"method": method, "path": url.path, "query": query,
                  "content_type": self.headers.get("Content-Type", ""),
                  "user_agent": self.headers.get("User-Agent", ""),
                  "body": body.decode("utf-8", "replace")}
        with self.state.lock:
            self.state.requests.append(record)
        if self.state.token and self.headers.get("Authorization") != "Bearer " + self.state.token:
            return self.fail(401, "Unauthorized", "Unauthorized")
        fault = self.state.fault_for(method, url.path)
        if fault and fault.mode == "hang":
            with self.state.lock:
                while not self.state.stopping:
                    self.state.lock.wait(0.5)
            return
        if fault and fault.mode in ("403", "500"):
            code = int(fault.mode)
            return self.fail(code, "Forbidden" if code == 403 else "InternalError",
                             '%s "%s" is forbidden: User "system:serviceaccount:test:titan" cannot '
                             '%s this resource (injected by the stand-in)'
                             % (url.path, method, method.lower()) if code == 403 else "injected")
        if fault and fault.mode == "garbage" and query.get("watch") not in ("1", "true"):
            data = b"<html>502 Bad Gateway from a proxy</html>"
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        try:
            self.route(method, url.path, query, body, self.headers.get("Content-Type", ""),
                       garbage_watch=bool(fault and fault.mode == "garbage"))
        except (BrokenPipeError, ConnectionResetError):
            pass

    def do_GET(self):
        self.handle_any("GET")

    def do_PATCH(self):
        self.handle_any("PATCH")

    def do_PUT(self):
        self.handle_any("PUT")

    def do_POST(self):
        self.handle_any("POST")

    def discovery(self, path):
        if path == "/version":
            return {"major": "1", "minor": "30", "gitVersion": "v1.30.0-titan-standin",
                    "platform": "linux/amd64"}
        if path == "/api":
            return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
        if path == "/apis":
            groups = {}
            for gv in GROUPS:
                if "/" in gv:
                    g, v = gv.split("/")
                    groups.setdefault(g, []).append({"groupVersion": gv, "version": v})
            return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
                {"name": g, "versions": vs, "preferredVersion": vs[0]} for g, vs in groups.items()]}
        gv = "v1" if path == "/api/v1" else path[len("/apis/"):] if path.startswith("/apis/") else None
        if gv in GROUPS:
            return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
                    "resources": [{"name": r, "singularName": "" if "/" in r else k.lower(),
                                   "namespaced": ns, "kind": k, "verbs": verbs,
                                   "shortNames": ["llmj"] if r == "llmjobs" else []}
                                  for r, k, ns, verbs in GROUPS[gv]]}
        return None

    def route(self, method, path, query, body, content_type, garbage_watch):
        found = self.discovery(path) if method == "GET" else None
        if found is not None:
            return self.send_json(200, found)
        m = ROUTE.match(path)
        if not m or m.group("resource") not in STORED:
            return self.fail(404, "NotFound", "the server could not find the requested resource")
        resource, ns, name, sub = m.group("resource"), m.group("ns"), m.group("name"), m.group("sub")
        if name is None and method == "GET":
            if query.get("watch") in ("1", "true"):
                return self.watch(resource, ns, query, garbage_watch)
            return self.list(resource, ns)
        if name is None:
            return self.fail(405, "MethodNotAllowed", "not supported by the stand-in")
        obj = self.state.get(resource, ns, name)
        if obj is None:
            return self.fail(404, "NotFound", '%s "%s" not found' % (resource, name))
        if sub == "scale":
            return self.scale(method, resource, obj, body, content_type)
        if method == "GET":
            return self.send_json(200, obj)
        try:
            patch = json.loads(body)
        except ValueError:
            return self.fail(400, "BadRequest", "the body is not JSON")
        if method == "PUT":
            updated = patch
        elif "strategic-merge-patch" in content_type:
            if resource == "llmjobs":
                return self.fail(415, "UnsupportedMediaType",
                                 "strategic merge patch is not supported for custom resources")
            updated = strategic_merge_patch(obj, patch)
        elif "merge-patch" in content_type:
            updated = merge_patch(obj, patch)
        elif "json-patch" in content_type:
            updated = json_patch(obj, patch)
        else:
            return self.fail(415, "UnsupportedMediaType", "unsupported patch type " + content_type)
        wanted = (patch.get("metadata") or {}).get("resourceVersion") if isinstance(patch, dict) else None
        with self.state.lock:
            current = self.state.get(resource, ns, name)
            if wanted and wanted != current["metadata"]["resourceVersion"]:
                return self.fail(409, "Conflict",
                                 'Operation cannot be fulfilled on %s "%s": the object has been '
                                 'modified; please apply your changes to the latest version and '
                                 'try again' % (resource, name))
            if sub == "status":  # the status subresource changes only status
                kept = copy.deepcopy(current)
                kept["status"] = updated.get("status", {})
                updated = kept
            elif resource == "llmjobs":  # the main resource ignores status changes
                updated["status"] = current.get("status", {})
            updated["metadata"]["name"] = name
            self.send_json(200, self.state.put(resource, updated))

    def scale(self, method, resource, obj, body, content_type):
        meta = obj["metadata"]
        if method != "GET":
            patch = json.loads(body)
            if method == "PUT":
                replicas = patch["spec"]["replicas"]
            else:
                replicas = merge_patch({"spec": {"replicas": obj["spec"]["replicas"]}}, patch)["spec"]["replicas"]
            obj["spec"]["replicas"] = replicas
            obj = self.state.put(resource, obj)
        scale = {"kind": "Scale", "apiVersion": "autoscaling/v1",
                 "metadata": {"name": meta["name"], "namespace": meta.get("namespace"),
                              "resourceVersion": obj["metadata"]["resourceVersion"]},
                 "spec": {"replicas": obj["spec"]["replicas"]},
                 "status": {"replicas": obj.get("status", {}).get("replicas", 0),
                            "selector": obj.get("status", {}).get("selector", "")}}
        self.send_json(200, scale)

    def list(self, resource, ns):
        with self.state.lock:
            items = [copy.deepcopy(o) for o in self.state.objects[resource].values()
                     if ns is None or o["metadata"].get("namespace") == ns]
            rv = str(self.state.rv)
        kind = items[0]["kind"] if items else resource.capitalize()
        self.send_json(200, {"kind": kind + "List", "apiVersion": STORED[resource],
                             "metadata": {"resourceVersion": rv}, "items": items})

    def watch(self, resource, ns, query, garbage):
        since = int(query.get("resourceVersion") or 0)
        deadline = time.monotonic() + float(query.get("timeoutSeconds") or 60)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def chunk(data):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        if garbage:
            chunk(b"this is not a watch event\n")
        sent = since
        with self.state.lock:
            while not self.state.stopping and time.monotonic() < deadline:
                pending = [h for h in self.state.history if h[0] > sent and h[1] == resource and
                           (ns is None or h[3]["metadata"].get("namespace") == ns)]
                for rv, _, type_, obj in pending:
                    chunk(json.dumps({"type": type_, "object": obj}).encode() + b"\n")
                    sent = rv
                sent = max(sent, self.state.rv)
                self.state.lock.wait(min(0.5, max(0.01, deadline - time.monotonic())))
        chunk(b"")


class StandIn:
    """The stand-in on 127.0.0.1:<port> (0: any free port) in a thread of this process."""

    def __init__(self, port=0, token=None, cert=None, key=None):
        self.state = State(token)
        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.server.state = self.state
        self.scheme = "http"
        if cert:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(cert, key)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
            self.scheme = "https"
        self.url = "%s://127.0.0.1:%d" % (self.scheme, self.server.server_address[1])
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        with self.state.lock:
            self.state.stopping = True
            self.state.lock.notify_all()
        self.server.shutdown()
        self.server.server_close()

    def requests(self, method=None, path_regex=None):
        with self.state.lock:
            return [r for r in self.state.requests if (method is None or r["method"] == method)
                    and (path_regex is None or re.search(path_regex, r["path"]))]

    def add_fault(self, pattern, mode, times=None):
        fault = Fault(pattern, mode, times)
        with self.state.lock:
            self.state.faults.append(fault)
        return fault

    def clear_faults(self):
        with self.state.lock:
            self.state.faults.clear()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--state", help="JSON {resource: [objects]} to start with")
    parser.add_argument("--token")
    parser.add_argument("--cert")
    parser.add_argument("--key")
    args = parser.parse_args()
    standin = StandIn(args.port, args.token, args.cert, args.key)
    if args.state:
        standin.state.load(args.state)
    print(standin.url, flush=True)
    standin.server.serve_forever()


if __name__ == "__main__":
    main()
