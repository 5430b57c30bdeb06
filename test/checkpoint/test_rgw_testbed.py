"""Self-test of the S3 test bed (rgw.py, scripts/rgw.sh): a real Ceph RADOS gateway and the
HTTP fault proxy behave as titan's S3 checkpoint tests assume.

    cd test/checkpoint && /usr/bin/python3 -m unittest -v test_rgw_testbed

Skipped when Ceph is not installed (a failure under CI=true).
"""
import hashlib
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import rgw
from rgw import EMPTY_SHA256, CurlError, FaultProxy, Rgw, S3Error

BUCKET = "testbed"
MiB = 1 << 20


def processes_mentioning(d):
    """[(pid, command line)] of live processes other than this one whose command line or
    environment contains d."""
    found, needle = [], d.encode()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmdline = f.read()
            with open(f"/proc/{name}/environ", "rb") as f:
                environ = f.read()
        except OSError:
            continue
        if needle in cmdline or needle in environ:
            found.append((int(name), cmdline.replace(b"\0", b" ").decode(errors="replace")))
    return found


def random_file(path, size):
    """Writes size random bytes to path in 1 MiB pieces; returns their SHA-256."""
    h = hashlib.sha256()
    with open(path, "wb") as f:
        for _ in range(size // MiB):
            piece = os.urandom(MiB)
            h.update(piece)
            f.write(piece)
    return h.hexdigest()


def signed_curl(*args):
    """The curl command line titan's tests use for a signed S3 request."""
    return ["curl", "-sS", "--aws-sigv4", "aws:amz:us-east-1:s3", "--user",
            f"{rgw.ACCESS_KEY}:{rgw.SECRET_KEY}", "-H", f"x-amz-content-sha256: {EMPTY_SHA256}",
            *args]


class RgwTestBed(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="titan-rgwtest-")
        cls.rgw = Rgw()
        try:
            t0 = time.monotonic()
            cls.rgw.start(cls.tmp)
            print(f"\nrgw up in {time.monotonic() - t0:.1f} s at {cls.rgw.endpoint}",
                  file=sys.stderr)
            cls.rgw.make_bucket(BUCKET)
            cls.proxy = FaultProxy(cls.rgw.endpoint)
        except BaseException:
            cls.rgw.stop()
            shutil.rmtree(cls.tmp, ignore_errors=True)
            raise

    @classmethod
    def tearDownClass(cls):
        cls.proxy.close()
        d = cls.rgw.dir
        cls.rgw.stop()
        left = processes_mentioning(d)
        shutil.rmtree(cls.tmp, ignore_errors=True)
        if left:
            raise AssertionError(f"processes left after stop(): {left}")

    def setUp(self):
        self.proxy.clear()
        self.proxy.reset_requests()

    # -- the gateway itself -----------------------------------------------------------------

    def test_env_for_children(self):
        env = self.rgw.env()
        self.assertEqual(env["AWS_ENDPOINT_URL"], self.rgw.endpoint)
        self.assertEqual(env["AWS_ACCESS_KEY_ID"], "TITANAK")
        self.assertEqual(env["AWS_SECRET_ACCESS_KEY"], "TITANSECRET")
        self.assertEqual(env["AWS_REGION"], "us-east-1")
        self.assertEqual(env["TITAN_RGW_DIR"], self.rgw.dir)
        self.assertRegex(self.rgw.endpoint, r"^http://127\.0\.0\.1:\d+$")

    def test_put_get_list_delete(self):
        keys = ["direct/a", "direct/b c+d", "direct/sub/ü?&=", "direct/x/"]
        for i, k in enumerate(keys):
            etag = self.rgw.put_object(BUCKET, k, f"v{i}".encode()).headers["etag"]
            self.assertEqual(etag, '"%s"' % hashlib.md5(f"v{i}".encode()).hexdigest())
        self.assertEqual(self.rgw.list_keys(BUCKET, "direct/"), sorted(keys))
        self.assertEqual(self.rgw.list_keys(BUCKET, "direct/", page_size=1), sorted(keys))
        for i, k in enumerate(keys):
            self.assertEqual(self.rgw.get_object(BUCKET, k), f"v{i}".encode())
        self.rgw.delete_object(BUCKET, "direct/a")
        self.assertEqual(self.rgw.list_keys(BUCKET, "direct/"), sorted(keys[1:]))
        with self.assertRaises(S3Error) as e:
            self.rgw.get_object(BUCKET, "direct/a")
        self.assertEqual((e.exception.status, e.exception.code), (404, "NoSuchKey"))

    def test_list_with_delimiter(self):
        for k in ("delim/1", "delim/a/2", "delim/a/3", "delim/b/4"):
            self.rgw.put_object(BUCKET, k, b"x")
        r = self.rgw.request("GET", BUCKET, query={"list-type": "2", "prefix": "delim/",
                                                   "delimiter": "/"})
        self.assertEqual(r.status, 200)
        self.assertIn(b"<Key>delim/1</Key>", r.body)
        self.assertIn(b"<CommonPrefixes><Prefix>delim/a/</Prefix></CommonPrefixes>", r.body)
        self.assertIn(b"<CommonPrefixes><Prefix>delim/b/</Prefix></CommonPrefixes>", r.body)
        self.assertNotIn(b"delim/a/2", r.body)

    def test_wrong_secret_rejected(self):
        r = self.rgw.request("GET", BUCKET, query={"list-type": "2"}, secret_key="WRONG")
        self.assertEqual((r.status, r.code), (403, "SignatureDoesNotMatch"))
        p = subprocess.run(["curl", "--fail-with-body", "-sS", "--aws-sigv4",
                            "aws:amz:us-east-1:s3", "--user", "TITANAK:WRONG", "-H",
                            f"x-amz-content-sha256: {EMPTY_SHA256}", self.rgw.endpoint + "/"],
                           capture_output=True, timeout=30)
        self.assertEqual(p.returncode, 22)
        self.assertIn(b"SignatureDoesNotMatch", p.stdout)

    def test_payload_hash_checked(self):
        r = self.rgw.request("PUT", BUCKET, "hash/bad", data=b"abc",
                             headers={"x-amz-content-sha256": "0" * 64})
        self.assertEqual((r.status, r.code), (400, "XAmzContentSHA256Mismatch"))

    def test_if_none_match_star(self):
        h = {"If-None-Match": "*"}
        self.assertEqual(self.rgw.request("PUT", BUCKET, "cond/k", data=b"1", headers=h).status,
                         200)
        r = self.rgw.request("PUT", BUCKET, "cond/k", data=b"2", headers=h)
        self.assertEqual((r.status, r.code), (412, "PreconditionFailed"))
        self.assertEqual(self.rgw.get_object(BUCKET, "cond/k"), b"1")

    def test_multipart_upload(self):
        r = self.rgw.request("POST", BUCKET, "mp/obj", query={"uploads": None})
        self.assertEqual(r.status, 200, r.body)
        upload = r.body.split(b"<UploadId>")[1].split(b"</UploadId>")[0].decode()
        parts = [os.urandom(5 * MiB), b"tail"]
        etags = []
        for n, data in enumerate(parts, 1):
            r = self.rgw.request("PUT", BUCKET, "mp/obj", data=data,
                                 query={"partNumber": n, "uploadId": upload})
            self.assertEqual(r.status, 200, r.body)
            etags.append(r.headers["etag"])
        xml = "<CompleteMultipartUpload>" + "".join(
            f"<Part><PartNumber>{n}</PartNumber><ETag>{e}</ETag></Part>"
            for n, e in enumerate(etags, 1)) + "</CompleteMultipartUpload>"
        r = self.rgw.request("POST", BUCKET, "mp/obj", data=xml.encode(),
                             query={"uploadId": upload}, headers={"Content-Type": "application/xml"})
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(self.rgw.get_object(BUCKET, "mp/obj"), b"".join(parts))

    def test_gateway_slowdown(self):
        """The real gateway answers 503 SlowDown past rgw_max_concurrent_requests."""
        path = os.path.join(self.tmp, "slow")
        random_file(path, 8 * MiB)
        self.rgw.set_config("rgw_max_concurrent_requests", 1)
        try:
            statuses = []

            def put(i):
                statuses.append(self.rgw.request("PUT", BUCKET, f"slow/{i}", file=path).code)

            threads = [threading.Thread(target=put, args=(i,)) for i in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=120)
        finally:
            self.rgw.set_config("rgw_max_concurrent_requests", 1024)
        self.assertIn("SlowDown", statuses)

    def test_restart_gateway_keeps_objects(self):
        self.rgw.put_object(BUCKET, "restart/k", b"kept")
        endpoint, pid = self.rgw.endpoint, self.rgw.pids()["rgw"]
        self.rgw.restart_gateway()
        self.assertNotEqual(self.rgw.pids()["rgw"], pid)
        self.assertEqual(self.rgw.endpoint, endpoint)
        self.assertEqual(self.rgw.get_object(BUCKET, "restart/k"), b"kept")
        self.assertEqual(self.rgw.get_object(BUCKET, "restart/k", endpoint=self.proxy.url),
                         b"kept")

    # -- through the fault proxy ------------------------------------------------------------

    def test_proxy_roundtrip(self):
        url = self.proxy.url
        self.rgw.put_object(BUCKET, "proxy/a", b"through the proxy", endpoint=url)
        self.assertEqual(self.rgw.get_object(BUCKET, "proxy/a", endpoint=url),
                         b"through the proxy")
        self.assertEqual(self.rgw.list_keys(BUCKET, "proxy/", endpoint=url), ["proxy/a"])
        r = self.rgw.request("HEAD", BUCKET, "proxy/a", endpoint=url)
        self.assertEqual((r.status, r.headers["content-length"]), (200, "17"))
        self.rgw.delete_object(BUCKET, "proxy/a", endpoint=url)
        self.assertEqual(self.proxy.requests,
                         [("PUT", "/testbed/proxy/a"), ("GET", "/testbed/proxy/a"),
                          ("GET", "/testbed?list-type=2&prefix=proxy%2F"),
                          ("HEAD", "/testbed/proxy/a"), ("DELETE", "/testbed/proxy/a")])

    def test_proxy_streams_100mb(self):
        src, dst = os.path.join(self.tmp, "big"), os.path.join(self.tmp, "big.back")
        sha = random_file(src, 100 * MiB)
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t0 = time.monotonic()
        self.rgw.put_file(BUCKET, "proxy/big", src, endpoint=self.proxy.url)
        self.rgw.download(BUCKET, "proxy/big", dst, endpoint=self.proxy.url)
        elapsed = time.monotonic() - t0
        grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) / 1024
        print(f"\n100 MiB up and down through the proxy in {elapsed:.1f} s; "
              f"test process max RSS grew {grown:.0f} MiB", file=sys.stderr)
        self.assertEqual(os.path.getsize(dst), 100 * MiB)
        with open(dst, "rb") as f:
            self.assertEqual(hashlib.file_digest(f, "sha256").hexdigest(), sha)
        self.assertLess(grown, 32, "the proxy buffered the body")
        os.unlink(src)
        os.unlink(dst)
        self.rgw.delete_object(BUCKET, "proxy/big")

    def test_fail_next_500(self):
        url = self.proxy.url
        self.proxy.fail_next(1, status=500, method="PUT", path_contains="fail/")
        r = self.rgw.request("PUT", BUCKET, "fail/k", data=b"x", endpoint=url)
        self.assertEqual((r.status, r.code), (500, "InternalError"))
        self.assertEqual(self.rgw.request("GET", BUCKET, "fail/k").status, 404)  # not reached
        self.assertEqual(self.rgw.request("PUT", BUCKET, "fail/k", data=b"x", endpoint=url)
                         .status, 200)
        self.assertEqual(self.proxy.count("PUT", "fail/k"), 2)

    def test_fail_next_seen_by_curl_keep_alive(self):
        """One curl process, two requests on one connection: the injected 503 keeps the
        connection usable (framing right), the second request is forwarded."""
        self.rgw.put_object(BUCKET, "ka/k", b"v")
        self.proxy.fail_next(1, status=503, method="GET", headers={"Retry-After": "1"})
        url = f"{self.proxy.url}/{BUCKET}/ka/k"
        p = subprocess.run(signed_curl("-o", "/dev/null", "-o", "/dev/null", "-w",
                                       "%{http_code} %{num_connects}\n", url, url),
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.stdout.split("\n")[:2], ["503 1", "200 0"], p.stderr)
        p = subprocess.run(signed_curl("--fail-with-body", url), capture_output=True,
                           timeout=60)
        self.assertEqual(p.returncode, 0)
        self.proxy.fail_next(1, status=503)
        p = subprocess.run(signed_curl("--fail-with-body", url), capture_output=True,
                           timeout=60)
        self.assertEqual(p.returncode, 22)
        self.assertIn(b"<Code>SlowDown</Code>", p.stdout)

    def test_fail_put_with_expect_continue(self):
        path = os.path.join(self.tmp, "expect")
        random_file(path, 4 * MiB)  # curl sends Expect: 100-continue for this body
        self.proxy.fail_next(1, status=503, method="PUT")
        r = self.rgw.request("PUT", BUCKET, "expect/k", file=path, endpoint=self.proxy.url)
        self.assertEqual((r.status, r.code), (503, "SlowDown"))
        r = self.rgw.request("PUT", BUCKET, "expect/k", file=path, endpoint=self.proxy.url)
        self.assertEqual(r.status, 200)

    def test_drop_next_response(self):
        url = self.proxy.url
        self.proxy.drop_next(1, method="PUT")
        with self.assertRaises(CurlError) as e:
            self.rgw.request("PUT", BUCKET, "drop/done", data=b"x", endpoint=url)
        self.assertIn(e.exception.rc, (52, 56))
        # The gateway did the request: the client cannot tell.
        self.assertEqual(self.rgw.get_object(BUCKET, "drop/done"), b"x")

    def test_drop_next_request(self):
        path = os.path.join(self.tmp, "drop")
        random_file(path, 2 * MiB)
        self.proxy.drop_next(1, method="PUT", phase="request", after_bytes=MiB)
        with self.assertRaises(CurlError) as e:
            self.rgw.request("PUT", BUCKET, "drop/never", file=path, endpoint=self.proxy.url)
        self.assertIn(e.exception.rc, (52, 55, 56))
        self.assertEqual(self.rgw.request("GET", BUCKET, "drop/never").status, 404)

    def test_drop_mid_response(self):
        data = os.urandom(2 * MiB)
        self.rgw.put_object(BUCKET, "drop/big", data)
        self.proxy.drop_next(1, method="GET", after_bytes=MiB)
        with self.assertRaises(CurlError) as e:
            self.rgw.get_object(BUCKET, "drop/big", endpoint=self.proxy.url)
        self.assertIn(e.exception.rc, (18, 56))
        self.assertEqual(self.rgw.get_object(BUCKET, "drop/big", endpoint=self.proxy.url), data)

    def test_delay(self):
        url = self.proxy.url
        self.rgw.put_object(BUCKET, "delay/k", b"slow")
        self.proxy.delay(1.0, method="GET", n=1)
        t0 = time.monotonic()
        self.assertEqual(self.rgw.get_object(BUCKET, "delay/k", endpoint=url), b"slow")
        self.assertGreaterEqual(time.monotonic() - t0, 1.0)
        t0 = time.monotonic()
        self.rgw.get_object(BUCKET, "delay/k", endpoint=url)  # n=1: no delay now
        self.assertLess(time.monotonic() - t0, 1.0)
        # Stalled mid-answer past the client's timeout.
        self.proxy.delay(3.0, method="GET", phase="response", after_bytes=10)
        with self.assertRaises(CurlError) as e:
            self.rgw.request("GET", BUCKET, "delay/k", endpoint=url, timeout=1)
        self.assertEqual(e.exception.rc, 28)
        self.proxy.clear()


class RgwLifecycle(unittest.TestCase):
    def setUp(self):
        rgw.require_ceph()
        self.tmp = tempfile.mkdtemp(prefix="titan-rgwlife-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def test_two_instances_at_once(self):
        a, b = Rgw(), Rgw()
        self.addCleanup(a.stop)
        self.addCleanup(b.stop)
        a.start(os.path.join(self.tmp, "a"))
        b.start(os.path.join(self.tmp, "b"))
        self.assertNotEqual(a.endpoint, b.endpoint)
        a.make_bucket("only-a")
        b.make_bucket("only-b")
        self.assertIn(b"only-a", a.request("GET").body)
        self.assertNotIn(b"only-a", b.request("GET").body)
        dirs = [a.dir, b.dir]
        a.stop()
        self.assertEqual(processes_mentioning(dirs[0]), [])
        self.assertEqual(b.request("GET").status, 200)  # b unaffected
        b.stop()
        b.stop()  # idempotent
        self.assertEqual(processes_mentioning(dirs[1]), [])

    def test_owner_killed_leaves_nothing(self):
        """A test process killed with SIGKILL (no stop()) takes its daemons with it."""
        child = subprocess.Popen(
            [sys.executable, "-c",
             "import sys, time, rgw\nr = rgw.Rgw().start(sys.argv[1])\n"
             "print(r.dir, flush=True)\ntime.sleep(300)\n", self.tmp],
            cwd=os.path.dirname(os.path.abspath(__file__)), stdout=subprocess.PIPE,
            text=True)
        try:
            d = child.stdout.readline().strip()
            self.assertTrue(d, "child did not start the gateway")
            self.assertNotEqual(processes_mentioning(d), [])
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=30)
            child.stdout.close()
        deadline = time.monotonic() + 30
        while processes_mentioning(d) and time.monotonic() < deadline:
            time.sleep(0.2)
        self.assertEqual(processes_mentioning(d), [])


if __name__ == "__main__":
    unittest.main()
