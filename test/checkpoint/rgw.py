"""A real Ceph RADOS gateway (S3) and an HTTP fault proxy for titan's end-to-end tests.

Standard library only (tests run under Debian's /usr/bin/python3); signed S3 requests are made
by the curl CLI (`--aws-sigv4`), so the test side never implements SigV4 itself.

    rgw = Rgw()
    rgw.start(tmpdir)                 # scripts/rgw.sh start; SkipTest if Ceph is not installed
    rgw.make_bucket("ckpt")
    env = {**os.environ, **rgw.env()} # AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, ... for a child
    proxy = FaultProxy(rgw.endpoint)  # point titan at proxy.url to inject HTTP faults
    proxy.fail_next(2, status=503, method="PUT")
    ...
    proxy.close()
    rgw.stop()

Contract of the helpers: `request` returns a `Response` for any HTTP status and raises
`CurlError` only when no HTTP response arrived (connection refused/reset, timeout); the
convenience methods (`make_bucket`, `put_object`, `get_object`, `list_keys`, `delete_object`)
raise `S3Error` for any status >= 300. Every helper takes `endpoint=` to go through a
`FaultProxy` instead of straight to the gateway.
"""
import atexit
import hashlib
import os
import select
import shutil
import socket
import struct
import subprocess
import tempfile
import threading
import unittest
import urllib.parse
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.normpath(os.path.join(HERE, "..", "..", "scripts", "rgw.sh"))
ACCESS_KEY = "TITANAK"
SECRET_KEY = "TITANSECRET"
REGION = "us-east-1"
EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
S3_NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"
TOOLS = ("ceph-mon", "ceph-osd", "radosgw", "radosgw-admin", "ceph", "ceph-authtool",
         "monmaptool", "curl")
START_TIMEOUT = 90  # seconds rgw.sh waits for the gateway (TITAN_RGW_TIMEOUT)


def require_ceph():
    """Skip the calling test when Ceph is missing; under CI=true a missing Ceph is a failure."""
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if not missing:
        return
    msg = (f"Ceph RADOS gateway test bed needs {' '.join(missing)}: run scripts/bootstrap.sh "
           "(Debian packages ceph-mon ceph-osd radosgw ceph-common curl)")
    if os.environ.get("CI") == "true":
        raise RuntimeError(msg)
    raise unittest.SkipTest(msg)


class CurlError(Exception):
    """curl got no HTTP response: `.rc` is curl's exit status (7 refused, 28 timeout,
    52 empty reply, 55/56 send/receive failure, 18 partial body), `.stderr` its message."""

    def __init__(self, rc, stderr):
        super().__init__(f"curl exit {rc}: {stderr.strip()}")
        self.rc = rc
        self.stderr = stderr


class S3Error(Exception):
    """An S3 answer with status >= 300: `.status`, `.code` (e.g. NoSuchKey), `.body`."""

    def __init__(self, response, what):
        super().__init__(f"{what}: HTTP {response.status} {response.code or ''} "
                         f"{response.body[:300]!r}")
        self.status = response.status
        self.code = response.code
        self.body = response.body


class Response:
    """One HTTP answer: `.status` (int), `.headers` ({lower-case name: value}), `.body`
    (bytes; empty when the body went to a file), `.code` (S3 error code or None)."""

    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    @property
    def code(self):
        if not self.body.lstrip().startswith(b"<"):
            return None
        try:
            root = ET.fromstring(self.body)
        except ET.ParseError:
            return None
        el = root.find("Code")
        return el.text if el is not None and root.tag == "Error" else None

    def __repr__(self):
        return f"Response({self.status}, code={self.code})"


def _quote(s, safe="-_.~"):
    return urllib.parse.quote(s, safe=safe)


def _sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            piece = f.read(1 << 20)
            if not piece:
                return h.hexdigest()
            h.update(piece)


def _parse_header_dump(path):
    """Status and headers of the last response in a `curl -D` dump (skips 100 Continue)."""
    with open(path, "rb") as f:
        text = f.read().decode("latin-1")
    blocks = [b for b in text.replace("\r\n", "\n").split("\n\n") if b.strip()]
    if not blocks:
        return 0, {}
    lines = blocks[-1].split("\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return status, headers


class Rgw:
    """One test cluster (ceph-mon + memstore OSD + radosgw) started by scripts/rgw.sh.

    `start(tmpdir)` keeps the cluster's state and logs in tmpdir/rgw and returns once the
    gateway answers signed S3 requests; `stop()` leaves no daemon running (also run at
    interpreter exit, and by a watcher in rgw.sh if this process dies without calling it);
    `restart_gateway()` kill -9s radosgw and starts it again on the same endpoint, objects kept.
    """

    def __init__(self):
        self.dir = None
        self.endpoint = None
        self._env = {}
        self._tmp = None

    # -- lifecycle ------------------------------------------------------------------------

    def start(self, tmpdir):
        require_ceph()
        if self.dir is not None:
            raise RuntimeError(f"already started in {self.dir}")
        d = os.path.join(os.path.abspath(tmpdir), "rgw")
        if len(d) > 80:  # ceph's admin sockets must fit a unix socket path
            d = self._tmp = tempfile.mkdtemp(prefix="titan-rgw-")
        os.makedirs(d, exist_ok=True)
        env = dict(os.environ, TITAN_RGW_WATCH_PID=str(os.getpid()),
                   TITAN_RGW_TIMEOUT=str(START_TIMEOUT))
        self.dir = d
        atexit.register(self.stop)
        try:
            p = subprocess.run(["bash", SCRIPT, "start", d], env=env, capture_output=True,
                               text=True, timeout=START_TIMEOUT + 60)
        except subprocess.TimeoutExpired as e:
            self.stop()
            raise RuntimeError(f"rgw.sh start timed out:\n{e.stderr or ''}") from None
        if p.returncode != 0:
            self.stop()
            raise RuntimeError(f"rgw.sh start failed ({p.returncode}):\n{p.stderr}")
        for line in p.stdout.splitlines():
            if line.startswith("export "):
                name, _, value = line[len("export "):].partition("=")
                self._env[name] = value
        self.endpoint = self._env["AWS_ENDPOINT_URL"]
        return self

    def stop(self):
        """Stops the daemons (SIGTERM, SIGKILL after 10 s); idempotent."""
        if self.dir is None:
            return
        atexit.unregister(self.stop)
        p = subprocess.run(["bash", SCRIPT, "stop", self.dir], capture_output=True, text=True,
                           timeout=120)
        self.dir, self.endpoint, self._env = None, None, {}
        if self._tmp:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None
        if p.returncode != 0:
            raise RuntimeError(f"rgw.sh stop failed ({p.returncode}):\n{p.stderr}")

    def restart_gateway(self):
        """kill -9 radosgw and start it again on the same port; returns once it answers S3."""
        p = subprocess.run(["bash", SCRIPT, "restart-rgw", self.dir], capture_output=True,
                           text=True, timeout=START_TIMEOUT + 30)
        if p.returncode != 0:
            raise RuntimeError(f"rgw.sh restart-rgw failed ({p.returncode}):\n{p.stderr}")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def env(self):
        """AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION and
        TITAN_RGW_DIR, to merge into a child's environment."""
        return dict(self._env)

    def pids(self):
        """{"mon"|"osd"|"rgw": pid} of the running daemons."""
        out = {}
        for name in ("mon", "osd", "rgw"):
            try:
                with open(os.path.join(self.dir, f"{name}.pid")) as f:
                    out[name] = int(f.read())
            except (OSError, ValueError):
                pass
        return out

    def set_config(self, option, value):
        """Changes a radosgw option at run time through its admin socket, e.g.
        set_config("rgw_max_concurrent_requests", 2) makes further requests get 503 SlowDown."""
        sock = os.path.join(self.dir, "run", "client.rgw.t.asok")
        subprocess.run(["ceph", "--admin-daemon", sock, "config", "set", option, str(value)],
                       check=True, capture_output=True, timeout=30)

    def set_bucket_quota(self, bucket, max_objects):
        """Enables a quota of `max_objects` objects on `bucket` (-1: none), checked at once
        (the gateway's quota cache is turned off first): a PUT past it gets 403 QuotaExceeded,
        as from a full store."""
        self.set_config("rgw_bucket_quota_ttl", 0)
        conf = os.path.join(self.dir, "ceph.conf")
        for args in (["quota", "set", "--quota-scope=bucket", f"--bucket={bucket}",
                      f"--max-objects={max_objects}"],
                     ["quota", "enable", "--quota-scope=bucket", f"--bucket={bucket}"]):
            subprocess.run(["radosgw-admin", "-c", conf, *args], check=True, capture_output=True,
                           timeout=30)

    # -- signed S3 requests through curl --------------------------------------------------

    def request(self, method, bucket="", key="", query=None, data=None, file=None,
                headers=None, endpoint=None, out_file=None, secret_key=None, timeout=120):
        """One signed S3 request; returns a Response whatever its status.

        query: {name: value} or [(name, value)] (value None or "" for `?uploads`); sorted and
        encoded here, as SigV4 wants and bookworm's curl does not do. data (bytes) or file (a
        path) is the body, sent with its SHA-256 as x-amz-content-sha256 (so the gateway checks
        it). out_file: write the body there instead of into Response.body. Raises CurlError when
        no HTTP answer came back (see FaultProxy.drop_next), or after `timeout` seconds.
        """
        url = (endpoint or self.endpoint).rstrip("/") + "/"
        if bucket:
            url += _quote(bucket)
            if key:
                url += "/" + _quote(key, safe="-_.~/")
        if query:
            items = query.items() if isinstance(query, dict) else query
            pairs = sorted((_quote(str(k)), _quote("" if v is None else str(v))) for k, v in items)
            url += "?" + "&".join(f"{k}={v}" for k, v in pairs)
        with tempfile.TemporaryDirectory(prefix="titan-s3-") as tmp:
            if data is not None:
                file = os.path.join(tmp, "body")
                with open(file, "wb") as f:
                    f.write(data)
            sha = _sha256_file(file) if file is not None else EMPTY_SHA256
            headers = dict(headers or {})
            for name in list(headers):  # the caller's own (e.g. a wrong one) wins
                if name.lower() == "x-amz-content-sha256":
                    sha = headers.pop(name)
            hdr, body = os.path.join(tmp, "headers"), out_file or os.path.join(tmp, "out")
            cmd = ["curl", "-sS", "--path-as-is", "--connect-timeout", "10",
                   "--max-time", str(timeout), "--aws-sigv4", f"aws:amz:{REGION}:s3",
                   "--user", f"{ACCESS_KEY}:{secret_key or SECRET_KEY}",
                   "-H", f"x-amz-content-sha256: {sha}", "-D", hdr, "-o", body,
                   "-w", "%{http_code}", "-X", method]
            for name, value in headers.items():
                cmd += ["-H", f"{name}: {value}"]
            if file is not None:
                # -T streams the file but appends its name to a URL ending in "/".
                streamed = method != "POST" and not url.endswith("/")
                cmd += ["-T", file] if streamed else ["--data-binary", f"@{file}"]
                if not any(n.lower() == "content-type" for n in headers):
                    cmd += ["-H", "Content-Type: application/octet-stream"]
            if method == "HEAD":
                cmd[cmd.index("-X"):cmd.index("-X") + 2] = ["-I"]
            cmd.append(url)
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout + 30)
            if p.returncode != 0:
                raise CurlError(p.returncode, p.stderr)
            status, headers_out = _parse_header_dump(hdr)
            content = b""
            if out_file is None and os.path.exists(body):
                with open(body, "rb") as f:
                    content = f.read()
            return Response(status, headers_out, content)

    def _ok(self, response, what):
        if response.status >= 300:
            raise S3Error(response, what)
        return response

    def make_bucket(self, name, endpoint=None):
        return self._ok(self.request("PUT", name, endpoint=endpoint), f"create bucket {name}")

    def put_object(self, bucket, key, data, headers=None, endpoint=None):
        """PUT bytes; returns the Response (ETag in .headers["etag"])."""
        return self._ok(self.request("PUT", bucket, key, data=data, headers=headers,
                                     endpoint=endpoint), f"put {bucket}/{key}")

    def put_file(self, bucket, key, path, headers=None, endpoint=None, timeout=300):
        """PUT a file, streamed by curl (never read into this process)."""
        return self._ok(self.request("PUT", bucket, key, file=path, headers=headers,
                                     endpoint=endpoint, timeout=timeout), f"put {bucket}/{key}")

    def get_object(self, bucket, key, endpoint=None):
        return self._ok(self.request("GET", bucket, key, endpoint=endpoint),
                        f"get {bucket}/{key}").body

    def download(self, bucket, key, path, endpoint=None, timeout=300):
        """GET into a file, streamed by curl."""
        return self._ok(self.request("GET", bucket, key, endpoint=endpoint, out_file=path,
                                     timeout=timeout), f"get {bucket}/{key}")

    def delete_object(self, bucket, key, endpoint=None):
        return self._ok(self.request("DELETE", bucket, key, endpoint=endpoint),
                        f"delete {bucket}/{key}")

    def list_keys(self, bucket, prefix="", endpoint=None, page_size=None):
        """All keys under prefix (ListObjectsV2, following continuation tokens), in order."""
        keys, token = [], None
        while True:
            q = {"list-type": "2", "prefix": prefix}
            if page_size:
                q["max-keys"] = str(page_size)
            if token:
                q["continuation-token"] = token
            r = self._ok(self.request("GET", bucket, query=q, endpoint=endpoint),
                         f"list {bucket}/{prefix}")
            root = ET.fromstring(r.body)
            keys += [c.findtext(f"{S3_NS}Key") for c in root.findall(f"{S3_NS}Contents")]
            if root.findtext(f"{S3_NS}IsTruncated") != "true":
                return keys
            token = root.findtext(f"{S3_NS}NextContinuationToken")
            if not token:
                raise S3Error(r, "truncated listing without NextContinuationToken")


# --------------------------------------------------------------------------------------------
# FaultProxy

_REASONS = {400: "Bad Request", 403: "Forbidden", 404: "Not Found", 408: "Request Timeout",
            409: "Conflict", 412: "Precondition Failed", 429: "Too Many Requests",
            500: "Internal Server Error", 501: "Not Implemented", 502: "Bad Gateway",
            503: "Service Unavailable", 504: "Gateway Timeout"}
_CODES = {400: "BadRequest", 403: "AccessDenied", 404: "NoSuchKey", 409: "OperationAborted",
          412: "PreconditionFailed", 429: "SlowDown", 500: "InternalError",
          501: "NotImplemented", 502: "BadGateway", 503: "SlowDown", 504: "GatewayTimeout"}
_PIECE = 256 * 1024
_MAX_HEAD = 64 * 1024


class _Closed(Exception):
    """The peer closed or reset, or a timeout passed: give up on this connection."""


class _Cut(Exception):
    """A drop rule cut the connection."""


class _Reader:
    """Buffered reads from a socket (whose timeout bounds every recv)."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = bytearray()

    def _fill(self):
        try:
            data = self.sock.recv(_PIECE)
        except (OSError, socket.timeout) as e:
            raise _Closed(str(e)) from None
        if not data:
            raise _Closed("EOF")
        self.buf += data

    def pending(self):
        """True when a read would not block (data buffered or arriving, or EOF)."""
        if self.buf:
            return True
        try:
            return bool(select.select([self.sock], [], [], 0)[0])
        except (OSError, ValueError):
            return True

    def head(self):
        """Bytes up to and including the blank line ending an HTTP head; None on a clean EOF
        before any byte."""
        while True:
            i = self.buf.find(b"\r\n\r\n")
            if i >= 0:
                out = bytes(self.buf[:i + 4])
                del self.buf[:i + 4]
                return out
            if len(self.buf) > _MAX_HEAD:
                raise _Closed("head too large")
            if not self.buf:
                try:
                    self._fill()
                except _Closed:
                    return None
            else:
                self._fill()

    def line(self):
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                out = bytes(self.buf[:i + 2])
                del self.buf[:i + 2]
                return out
            if len(self.buf) > _MAX_HEAD:
                raise _Closed("line too long")
            self._fill()

    def some(self, limit):
        """Up to limit bytes (at least one)."""
        if not self.buf:
            self._fill()
        out = bytes(self.buf[:limit])
        del self.buf[:limit]
        return out


class _Sink:
    """Writes to a socket, counting bytes; pauses once at `pause_at` for `pause_s` seconds and
    cuts (raises _Cut after calling on_cut) once `cut_at` bytes went through."""

    def __init__(self, sock, closing, cut_at=None, pause_at=None, pause_s=0.0, on_cut=None):
        self.sock = sock
        self.closing = closing
        self.cut_at = cut_at
        self.pause_at = pause_at
        self.pause_s = pause_s
        self.on_cut = on_cut
        self.sent = 0

    def write(self, data):
        while data:
            n = len(data)
            if self.pause_at is not None and self.sent + n > self.pause_at:
                n = self.pause_at - self.sent
            if self.cut_at is not None and self.sent + n > self.cut_at:
                n = self.cut_at - self.sent
            if n:
                try:
                    self.sock.sendall(data[:n])
                except (OSError, socket.timeout) as e:
                    raise _Closed(str(e)) from None
                self.sent += n
                data = data[n:]
            if self.pause_at is not None and self.sent == self.pause_at:
                self.pause_at = None
                self.closing.wait(self.pause_s)
                if self.closing.is_set():
                    raise _Closed("proxy closing")
            if self.cut_at is not None and self.sent == self.cut_at:
                self.on_cut()
                raise _Cut()


class _Request:
    def __init__(self, head):
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3:
            raise _Closed(f"bad request line {lines[0]!r}")
        self.method, self.target, self.version = parts
        self.head = head
        self.headers = _headers(lines[1:])
        conn = self.headers.get("connection", "").lower()
        self.close = "close" in conn or (self.version == "HTTP/1.0" and "keep-alive" not in conn)
        self.chunked = "chunked" in self.headers.get("transfer-encoding", "").lower()
        self.length = 0 if self.chunked else int(self.headers.get("content-length", "0") or 0)
        self.expect = self.headers.get("expect", "").lower() == "100-continue"
        self.has_body = self.chunked or self.length > 0


def _headers(lines):
    out = {}
    for line in lines:
        if ":" in line:
            name, _, value = line.partition(":")
            out[name.strip().lower()] = value.strip()
    return out


class _Rule:
    def __init__(self, action, n, method, path_contains, **kw):
        self.action = action
        self.left = n  # None: every match, until clear()
        self.method = method
        self.path_contains = path_contains
        self.__dict__.update(kw)

    def matches(self, method, target):
        return (self.left is None or self.left > 0) and \
            (self.method is None or self.method.upper() == method) and \
            (self.path_contains is None or self.path_contains in target)


class FaultProxy:
    """A threaded HTTP/1.1 proxy on 127.0.0.1 in front of `upstream` (e.g. Rgw.endpoint),
    injecting faults per request.

    Requests are framed (request line, headers, Content-Length or chunked bodies, Expect:
    100-continue), so rules act per request on keep-alive connections; bodies are streamed in
    256 KiB pieces, never held whole. The request head goes upstream unchanged (Host included,
    so SigV4 signatures made for `url` stay valid). Each client connection gets its own
    upstream connection. Rules match on method and a substring of the request target (path and
    query) and may be set while traffic flows; per request at most one fail/drop rule acts (the
    oldest matching) and one delay rule. Byte offsets count from the first byte of the head:
    of the request as sent upstream (phase "request") or of the final response as sent to the
    client (phase "response"; interim 100 Continue answers pass uncounted). `requests` lists (method, target) of every request seen, faulted ones
    included. Every socket operation is bounded by `io_timeout`; idle client connections are
    closed after `idle_timeout`. close() stops every thread and closes every socket.
    """

    def __init__(self, upstream, io_timeout=120.0, idle_timeout=120.0):
        u = urllib.parse.urlsplit(upstream)
        self.upstream = (u.hostname, u.port or 80)
        self.io_timeout = io_timeout
        self.idle_timeout = idle_timeout
        self._lock = threading.Lock()
        self._rules = []
        self._requests = []
        self._closing = threading.Event()
        self._socks = set()
        self._threads = set()
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=128)
        self.port = self._listener.getsockname()[1]
        self._acceptor = threading.Thread(target=self._accept, name="FaultProxy-accept",
                                          daemon=True)
        self._acceptor.start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    # -- rules ----------------------------------------------------------------------------

    def fail_next(self, n=1, status=500, method=None, path_contains=None, code=None,
                  message="injected by FaultProxy", headers=None, close=False):
        """The next n matching requests are answered by the proxy itself with `status` and an
        S3 error body (<Error><Code>code</Code>...; code defaults by status: 500
        InternalError, 503 SlowDown, ...), never reaching upstream. The request body is read
        and discarded and the connection kept alive, unless the client asked for close, sent
        Expect: 100-continue (then the body is never sent), or close=True. headers: extra
        response headers, e.g. {"Retry-After": "1"}."""
        self._add(_Rule("fail", n, method, path_contains, status=status,
                        code=code or _CODES.get(status, "InternalError"), message=message,
                        headers=headers or {}, close=close))

    def drop_next(self, n=1, method=None, path_contains=None, after_bytes=0, phase="response"):
        """The next n matching requests are forwarded, then the client connection is reset
        (RST) once `after_bytes` bytes went through: phase "response" (default) counts the
        response (0: the server did the request but the client gets no answer at all);
        phase "request" counts the request (0: nothing reaches the server). The upstream
        connection is closed too."""
        if phase not in ("request", "response"):
            raise ValueError(phase)
        self._add(_Rule("drop", n, method, path_contains, after_bytes=after_bytes, phase=phase))

    def delay(self, seconds, method=None, path_contains=None, n=None, phase="request",
              after_bytes=0):
        """Matching requests (the next n; every one until clear() when n is None) stall for
        `seconds` once `after_bytes` bytes of the request (phase "request": before it is
        forwarded, by default) or of the response (phase "response": mid-answer) went
        through."""
        if phase not in ("request", "response"):
            raise ValueError(phase)
        self._add(_Rule("delay", n, method, path_contains, seconds=seconds,
                        after_bytes=after_bytes, phase=phase))

    def clear(self):
        """Removes every rule (requests in flight keep the rule they matched)."""
        with self._lock:
            self._rules = []

    @property
    def requests(self):
        """[(method, target)] of every request seen so far, in arrival order (a copy)."""
        with self._lock:
            return list(self._requests)

    def count(self, method=None, path_contains=None):
        return sum(1 for m, t in self.requests
                   if (method is None or m == method) and
                   (path_contains is None or path_contains in t))

    def reset_requests(self):
        with self._lock:
            self._requests = []

    def _add(self, rule):
        with self._lock:
            self._rules.append(rule)

    def _match(self, method, target):
        """(fault rule or None, delay rule or None) for a request; records it."""
        with self._lock:
            self._requests.append((method, target))
            picked = {}
            for r in self._rules:
                kind = "delay" if r.action == "delay" else "fault"
                if kind not in picked and r.matches(method, target):
                    picked[kind] = r
                    if r.left is not None:
                        r.left -= 1
            self._rules = [r for r in self._rules if r.left is None or r.left > 0]
            return picked.get("fault"), picked.get("delay")

    # -- plumbing -------------------------------------------------------------------------

    def close(self):
        """Stops accepting, resets every open connection and joins every thread (bounded)."""
        self._closing.set()
        try:
            self._listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._listener.close()
        self._acceptor.join(timeout=5)
        with self._lock:
            socks, threads = list(self._socks), list(self._threads)
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for t in threads:
            t.join(timeout=5)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _accept(self):
        while not self._closing.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            t = threading.Thread(target=self._serve, args=(conn,), name="FaultProxy-conn",
                                 daemon=True)
            with self._lock:
                if self._closing.is_set():
                    conn.close()
                    return
                self._socks.add(conn)
                self._threads.add(t)
            t.start()

    def _track(self, sock, add):
        with self._lock:
            (self._socks.add if add else self._socks.discard)(sock)

    def _serve(self, client):
        conn = _Conn(self, client)
        try:
            conn.run()
        except (_Closed, _Cut):
            pass
        finally:
            conn.close()
            with self._lock:
                self._threads.discard(threading.current_thread())


def _reset(sock):
    """Abortive close: the peer sees ECONNRESET."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    sock.close()


class _Conn:
    """One client connection and its upstream connection; requests handled in turn."""

    def __init__(self, proxy, client):
        self.p = proxy
        self.client = client
        self.cr = _Reader(client)
        self.up = None
        self.ur = None
        self.client_gone = False

    def close(self):
        self._close_upstream()
        self.p._track(self.client, False)
        if not self.client_gone:
            self.client.close()

    def _close_upstream(self, reset=False):
        if self.up is not None:
            self.p._track(self.up, False)
            (_reset if reset else socket.socket.close)(self.up)
            self.up, self.ur = None, None

    def _reset_client(self):
        self.client_gone = True
        self.p._track(self.client, False)
        _reset(self.client)
        self._close_upstream(reset=True)

    def _lingering_close(self):
        """Close without resetting a response the client has not read yet: stop writing, drain
        what it still sends (bounded), then close."""
        try:
            self.client.shutdown(socket.SHUT_WR)
            self.client.settimeout(2.0)
            for _ in range(4096):  # at most 1 GiB drained, 2 s per read
                if not self.client.recv(_PIECE):
                    break
        except OSError:
            pass
        raise _Closed("closed after response")

    def _connect(self):
        if self.up is not None and self.ur.pending():
            self._close_upstream()  # the server closed the idle connection meanwhile
        if self.up is None:
            try:
                self.up = socket.create_connection(self.p.upstream, timeout=self.p.io_timeout)
            except OSError as e:
                raise _Closed(f"upstream: {e}") from None
            self.p._track(self.up, True)
            self.ur = _Reader(self.up)

    def run(self):
        while not self.p._closing.is_set():
            self.client.settimeout(self.p.idle_timeout)
            head = self.cr.head()
            if head is None:
                return
            self.client.settimeout(self.p.io_timeout)
            req = _Request(head)
            fault, delay = self.p._match(req.method, req.target)
            if fault is not None and fault.action == "fail":
                keep = self._fail(req, fault, delay)
            else:
                keep = self._forward(req, fault, delay)
            if not keep:
                self._lingering_close()

    # request side ----------------------------------------------------------------------

    def _body_pieces(self, req):
        """The request body's raw bytes (chunk framing included), piece by piece."""
        if req.chunked:
            while True:
                line = self.cr.line()
                yield line
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while True:  # trailers up to the blank line
                        t = self.cr.line()
                        yield t
                        if t == b"\r\n":
                            return
                left = size + 2
                while left:
                    piece = self.cr.some(min(left, _PIECE))
                    left -= len(piece)
                    yield piece
        else:
            left = req.length
            while left:
                piece = self.cr.some(min(left, _PIECE))
                left -= len(piece)
                yield piece

    def _fail(self, req, rule, delay):
        if delay is not None and delay.phase == "request":
            self.p._closing.wait(delay.seconds)
            delay = None
        close = rule.close or req.close or (req.expect and req.has_body)
        if not close:
            for _ in self._body_pieces(req):
                pass
        body = (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{rule.code}</Code>'
                f'<Message>{rule.message}</Message><RequestId>faultproxy</RequestId>'
                f'</Error>').encode()
        extra = "".join(f"{k}: {v}\r\n" for k, v in rule.headers.items())
        head = (f"HTTP/1.1 {rule.status} {_REASONS.get(rule.status, 'Error')}\r\n"
                f"Content-Type: application/xml\r\nContent-Length: {len(body)}\r\n"
                f"x-amz-request-id: faultproxy\r\n{extra}"
                f"Connection: {'close' if close else 'keep-alive'}\r\n\r\n").encode()
        sink = self._client_sink(None, delay)
        sink.write(head + (b"" if req.method == "HEAD" else body))
        return not close

    def _client_sink(self, fault, delay=None):
        cut = pause_at = None
        pause_s = 0.0
        for r in (fault, delay):
            if r is None or getattr(r, "phase", None) != "response":
                continue
            if r.action == "drop":
                cut = r.after_bytes
            elif r.action == "delay":
                pause_at, pause_s = r.after_bytes, r.seconds
        return _Sink(self.client, self.p._closing, cut_at=cut, pause_at=pause_at,
                     pause_s=pause_s, on_cut=self._reset_client)

    def _forward(self, req, fault, delay):
        """Returns whether the client connection stays open for another request."""
        cut = pause_at = None
        if fault is not None and fault.phase == "request":
            cut = fault.after_bytes
        if delay is not None and delay.phase == "request":
            pause_at = delay.after_bytes
        # If the upstream fails (refused, reset), the client connection is closed without an
        # answer (the client sees an empty reply or a reset).
        self._connect()
        up = _Sink(self.up, self.p._closing, cut_at=cut, pause_at=pause_at,
                   pause_s=delay.seconds if pause_at is not None else 0.0,
                   on_cut=self._reset_client)
        out = self._client_sink(fault, delay)
        up.write(req.head)
        early = False
        if req.has_body:
            early = self._send_body(req, up, out)
        keep = self._relay_response(req, out)
        if early:  # the server answered before the whole body: the framing is lost
            self._close_upstream()
            return False
        return keep and not req.close

    def _send_body(self, req, up, out):
        """Streams the body upstream; relays 1xx answers (100 Continue) as they come. Returns
        True when the server sent a final answer before the body was through."""
        pieces = self._body_pieces(req)
        if req.expect:
            # Wait (1 s at most, as curl does) for the server's 100 Continue or early answer.
            if self.ur.pending() or select.select([self.up], [], [], 1.0)[0]:
                if not self._interim(out):
                    return True
        for piece in pieces:
            while self.ur.pending():
                if not self._interim(out):
                    return True
            up.write(piece)
        return False

    def _interim(self, out):
        """Reads an answer head that is already arriving; relays 1xx and returns True, or
        leaves a final answer for _relay_response and returns False."""
        head = self.ur.head()
        if head is None:
            raise _Closed("upstream closed")
        status = int(head.split(b" ", 2)[1])
        if 100 <= status < 200:
            self._interim_to_client(head)
            return True
        self.ur.buf[:0] = head  # put it back
        return False

    def _interim_to_client(self, head):
        """A 1xx answer (100 Continue) goes to the client as is: rules' byte offsets count the
        final answer only."""
        try:
            self.client.sendall(head)
        except (OSError, socket.timeout) as e:
            raise _Closed(str(e)) from None

    def _relay_response(self, req, out):
        while True:
            head = self.ur.head()
            if head is None:
                raise _Closed("upstream closed before answering")
            lines = head.decode("latin-1").split("\r\n")
            status = int(lines[0].split(" ", 2)[1])
            if 100 <= status < 200:
                self._interim_to_client(head)
                continue
            out.write(head)
            break
        h = _headers(lines[1:])
        conn = h.get("connection", "").lower()
        keep = "close" not in conn
        if req.method == "HEAD" or status in (204, 304):
            pass
        elif "chunked" in h.get("transfer-encoding", "").lower():
            while True:
                line = self.ur.line()
                out.write(line)
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while True:
                        t = self.ur.line()
                        out.write(t)
                        if t == b"\r\n":
                            break
                    break
                left = size + 2
                while left:
                    piece = self.ur.some(min(left, _PIECE))
                    left -= len(piece)
                    out.write(piece)
        elif "content-length" in h:
            left = int(h["content-length"])
            while left:
                piece = self.ur.some(min(left, _PIECE))
                left -= len(piece)
                out.write(piece)
        else:  # body until the server closes
            keep = False
            try:
                while True:
                    out.write(self.ur.some(_PIECE))
            except _Closed:
                if self.client_gone:
                    raise
        if not keep:
            self._close_upstream()
        return keep
