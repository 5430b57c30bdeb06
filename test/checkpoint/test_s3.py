"""End-to-end: titan checkpoints in a real Ceph RADOS gateway (S3), through titan's own client.

Everything runs against scripts/rgw.sh's one-node Ceph (monitor, memstore OSD, radosgw) on
loopback; HTTP faults are injected by rgw.FaultProxy between titan and the gateway.

* A 4-rank gloo job saves to s3://, is killed with SIGKILL, and a 2-rank job reshards from the
  store bit for bit.
* titan ckpt ls / inspect / verify / cp / diff / gc work on s3:// as on directories.
* A wrong secret is refused by the gateway (the signature is real); a missing bucket is named; a
  full store (a bucket quota: 403 QuotaExceeded) and a read-only one (a bucket policy: 403
  AccessDenied) are clear errors and keep the previous.
* 503s, dropped connections (also the answer to a multipart completion) and slow answers are
  retried: the save and the load still succeed and match.
* kill -9 during an upload, and radosgw killed and restarted mid-save: the previous checkpoint
  stays loadable; the interrupted one is never visible.
* A corrupted or truncated object is detected and named; load falls back to the step before; a
  hostile `latest` object changes nothing.
* Tiering: saves go to a local directory and are copied to s3:// in the background; `titan ckpt
  ls` shows local / durable; a lost or corrupted local copy is restored from the store; a store
  that fails mid-run never fails a save; `titan run --checkpoint-mirror` sets it up for workers,
  and a restarted worker whose local disk was wiped resumes from the store.
* Node-local directories: a 4-rank job on two "nodes" (a directory each) uploads every rank's
  data and commits at the store; each node keeps only its ranks' files; a 2-rank job restores
  bit for bit reading its node's files locally; `titan run --checkpoint-node-local` on a new
  node prefetches only its ranks' files; a damaged local file makes the load read the store alone.
* Prefetch: titan run copies the store's newest checkpoint into an empty local directory while
  the worker starts; load_latest waits for it and reads no chunk from the store.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest
import xml.etree.ElementTree as ET

import torch

import titan.checkpoint as ck
from ckpt_testlib import Job, PYTHON, env
from rgw import FaultProxy, Rgw, require_ceph

TITAN = os.environ.get("TITAN_BINARY", "titan")
BUCKET = "ckpt"

# A child that saves a seeded state (MiB of float32 tensors) and optionally loads it back.
SAVER = textwrap.dedent("""
    import sys, time, torch, titan.checkpoint as ck
    url, step, mib, seed, check = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "1"
    def build(s):
        g = torch.Generator().manual_seed(s)
        return {"t%d" % i: torch.randn(1 << 18, generator=g) for i in range(mib)}
    state = {"w": build(seed), "step": step}
    print("SAVING", time.time(), flush=True)
    ck.save(state, step, async_=False, dir=url)
    print("SAVED", time.time(), flush=True)
    if check:
        fresh = {"w": build(seed + 1000), "step": -1}
        got = ck.load_latest(url, fresh)
        same = all(torch.equal(fresh["w"][k], state["w"][k]) for k in state["w"])
        print("LOADED", got, "SAME" if same and fresh["step"] == step else "DIFFERENT", flush=True)
""")


def tensors(mib, seed):
    g = torch.Generator().manual_seed(seed)
    return {"t%d" % i: torch.randn(1 << 18, generator=g) for i in range(mib)}


class S3CheckpointTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_ceph()
        cls.tmp = tempfile.mkdtemp(prefix="titan_s3_e2e_")
        os.environ.setdefault("TITAN_RGW_MEMSTORE_BYTES", str(6 << 30))
        cls.rgw = Rgw()
        cls.rgw.start(os.path.join(cls.tmp, "rgw"))
        cls.rgw.make_bucket(BUCKET)
        # titan (in this process and in children) finds the store through the standard variables.
        cls.saved_env = dict(os.environ)
        os.environ.update(cls.rgw.env())
        os.environ["TITAN_S3_PART_MIB"] = "5"  # many parts even for small states

    @classmethod
    def tearDownClass(cls):
        os.environ.clear()
        os.environ.update(cls.saved_env)
        cls.rgw.stop()
        subprocess.run(["rm", "-rf", cls.tmp])

    def url(self, name):
        return f"s3://{BUCKET}/{self.id().rsplit('.', 1)[1]}/{name}"

    def keys(self, url):
        prefix = url[len(f"s3://{BUCKET}/"):]
        return self.rgw.list_keys(BUCKET, prefix + "/")

    def uploads(self, url):
        """Keys of the incomplete multipart uploads under `url`."""
        prefix = url[len(f"s3://{BUCKET}/"):] + "/"
        r = self.rgw.request("GET", BUCKET, query={"uploads": "", "prefix": prefix})
        self.assertEqual(r.status, 200, r.body)
        ns = "{http://s3.amazonaws.com/doc/2006-03-01/}"
        return [u.findtext(f"{ns}Key") for u in ET.fromstring(r.body).findall(f"{ns}Upload")]

    def titan(self, *args, extra_env=None, check=True):
        p = subprocess.run([TITAN, *map(str, args)], capture_output=True, text=True, timeout=300,
                           env={**os.environ, **(extra_env or {})})
        if check and p.returncode != 0:
            raise AssertionError(f"titan {args} failed ({p.returncode}):\n{p.stderr}")
        return p

    def saver(self, url, step, mib, seed, check=False, extra_env=None):
        return subprocess.Popen([PYTHON, "-c", SAVER, url, str(step), str(mib), str(seed),
                                 "1" if check else "0"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={**env(), **(extra_env or {})})

    def test_save_at_4_kill_and_reshard_to_2_from_the_store(self):
        url = self.url("dist")
        out = tempfile.mkdtemp(dir=self.tmp)
        job = Job("train", 4, url, out, "--steps", 100, "--save-every", 4, "--ref-at", 8,
                  "--hang-after", 8)
        deadline = time.time() + 240
        while ck.latest_step(url) != 8 and time.time() < deadline:
            time.sleep(0.1)
        self.assertEqual(ck.latest_step(url), 8)
        for p in job.procs:
            os.kill(p.pid, signal.SIGKILL)
        job.kill()
        self.assertEqual(ck.verify(url + "/step_0000000008"), [])
        self.assertIn("step_0000000008/MANIFEST", " ".join(self.keys(url)))
        for o in Job("compare", 2, url, out, "--saved-world", 4).wait():
            self.assertIn("SAME", o)
            self.assertIn("step 8", o)

    def test_ckpt_commands_on_the_store(self):
        url = self.url("cli")
        ck.save({"w": tensors(8, 1), "step": 1}, 1, async_=False, dir=url)
        ck.save({"w": tensors(8, 2), "step": 2}, 2, async_=False, dir=url)
        ls = self.titan("ckpt", "ls", url).stdout
        self.assertRegex(ls, r"\n1 +\s")
        self.assertRegex(ls, r"\n2 +\* ")
        self.assertIn(f"{url}/step_0000000002", self.titan("ckpt", "inspect", url).stdout)
        self.assertIn("0 bad", self.titan("ckpt", "verify", url).stdout)
        local = os.path.join(self.tmp, "cli-local")
        cp = self.titan("ckpt", "cp", url, local).stdout
        self.assertIn("copied", cp)
        self.assertIn("latest updated", cp)
        diff = self.titan("ckpt", "diff", url + "/step_0000000002", local + "/step_0000000002")
        self.assertIn("0 tensors differ", diff.stdout)
        back = url + "-copy"
        self.titan("ckpt", "cp", local, back)
        self.assertEqual(ck.latest_step(back), 2)
        gc = self.titan("ckpt", "gc", url, "--keep-last", "1").stdout
        self.assertIn("dropped checkpoint step_0000000001", gc)
        self.assertEqual([k for k in self.keys(url) if "step_0000000001" in k], [])
        self.assertEqual(ck.list_steps(url), [2])

    def test_wrong_secret_and_missing_bucket_are_clear_errors(self):
        url = self.url("denied")
        p = self.titan("ckpt", "ls", url, extra_env={"AWS_SECRET_ACCESS_KEY": "wrong"},
                       check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("PERMISSION_DENIED", p.stderr)
        self.assertIn("SignatureDoesNotMatch", p.stderr)
        self.assertIn("TITANAK", p.stderr)
        saver = self.saver(url, 1, 1, 0, extra_env={"AWS_SECRET_ACCESS_KEY": "wrong"})
        _, err = saver.communicate(timeout=120)
        self.assertNotEqual(saver.returncode, 0)
        self.assertIn("SignatureDoesNotMatch", err)
        self.assertEqual(self.keys(url), [])  # nothing was written
        p = self.titan("ckpt", "ls", "s3://no-such-bucket/x", check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("bucket 'no-such-bucket' does not exist", p.stderr)
        p = self.titan("ckpt", "ls", url, extra_env={"AWS_ACCESS_KEY_ID": ""}, check=False)
        self.assertIn("no S3 credentials", p.stderr)

    def test_transient_http_faults_are_retried(self):
        url = self.url("faults")
        proxy = FaultProxy(self.rgw.endpoint)
        try:
            proxy.fail_next(2, status=503, method="PUT", path_contains="partNumber=2",
                            code="SlowDown")
            proxy.drop_next(1, method="PUT", path_contains="partNumber=3", after_bytes=0,
                            phase="request")
            # The completion succeeds but its answer is lost, and the retry finds no upload
            # (RGW itself answers a repeated completion with 200; other stores say NoSuchUpload).
            proxy.drop_next(1, method="POST", path_contains="uploadId=", phase="response")
            proxy.fail_next(1, status=404, method="POST", path_contains="uploadId=",
                            code="NoSuchUpload")
            proxy.drop_next(1, method="PUT", path_contains="MANIFEST", phase="response")
            proxy.fail_next(1, status=500, method="GET", code="InternalError")
            proxy.delay(1.5, method="GET", path_contains="rank_", n=1)
            saver = self.saver(url, 5, 24, 7, check=True,
                               extra_env={"AWS_ENDPOINT_URL": proxy.url})
            out, err = saver.communicate(timeout=300)
            self.assertEqual(saver.returncode, 0, err)
            self.assertIn("LOADED 5 SAME", out)
            self.assertIn("attempt 2 of", err)
            self.assertGreaterEqual(proxy.count("PUT", "partNumber=2"), 3)
            self.assertGreaterEqual(proxy.count("POST", "uploadId="), 2)
            self.assertGreaterEqual(proxy.count("PUT", "MANIFEST"), 2)
        finally:
            proxy.close()
        self.assertIn("0 bad", self.titan("ckpt", "verify", url).stdout)

    def test_faults_that_outlast_the_attempts_fail_clearly_and_keep_the_previous(self):
        url = self.url("exhausted")
        ck.save({"w": tensors(2, 3), "step": 1}, 1, async_=False, dir=url)
        proxy = FaultProxy(self.rgw.endpoint)
        try:
            proxy.fail_next(100, status=503, method="PUT", code="SlowDown")
            saver = self.saver(url, 2, 2, 4, extra_env={"AWS_ENDPOINT_URL": proxy.url,
                                                        "TITAN_S3_MAX_ATTEMPTS": "3"})
            _, err = saver.communicate(timeout=120)
        finally:
            proxy.close()
        self.assertNotEqual(saver.returncode, 0)
        self.assertIn("after 3 attempts", err)
        self.assertIn("503 SlowDown", err)
        self.assertEqual(ck.latest_step(url), 1)
        self.assertEqual(ck.list_steps(url), [1])

    def bucket_with_one_checkpoint(self, bucket, seed):
        """A new bucket holding step 1 at s3://BUCKET/run; returns (url, the saved state)."""
        self.rgw.make_bucket(bucket)
        url = f"s3://{bucket}/run"
        first = {"w": tensors(1, seed), "step": 1}
        ck.save(first, 1, async_=False, dir=url)
        return url, first

    def assert_save_refused_and_previous_kept(self, url, first, seed, *said):
        """A child's save of step 2 fails saying each of `said` and naming the key; step 1 is
        still the only checkpoint and loads bit for bit."""
        saver = self.saver(url, 2, 1, seed)
        _, err = saver.communicate(timeout=120)
        self.assertNotEqual(saver.returncode, 0)
        for words in (*said, f"{url}/step_0000000002/"):
            self.assertIn(words, err)
        self.assertEqual(ck.list_steps(url), [1])
        fresh = {"w": tensors(1, 99), "step": -1}
        self.assertEqual(ck.load_latest(url, fresh), 1)
        self.assertTrue(all(torch.equal(fresh["w"][k], first["w"][k]) for k in first["w"]))

    def test_a_full_store_is_a_clear_error_and_keeps_the_previous(self):
        # A bucket quota makes the gateway answer 403 QuotaExceeded, as a full store does.
        url, first = self.bucket_with_one_checkpoint("full-store", 21)
        self.rgw.set_bucket_quota("full-store",
                                  max_objects=len(self.rgw.list_keys("full-store", "run/")))
        try:
            self.assert_save_refused_and_previous_kept(
                url, first, 22, "RESOURCE_EXHAUSTED", "QuotaExceeded",
                "free space or raise the quota")
            self.assertIn("0 bad", self.titan("ckpt", "verify", url).stdout)
        finally:
            self.rgw.set_bucket_quota("full-store", max_objects=-1)
        # With room again, the next save lands.
        ck.save({"w": tensors(1, 23), "step": 3}, 3, async_=False, dir=url)
        self.assertEqual(ck.list_steps(url), [1, 3])

    def test_a_read_only_bucket_is_a_clear_error_and_keeps_the_previous(self):
        # A bucket policy that denies PutObject to everyone: the store is read-only.
        url, first = self.bucket_with_one_checkpoint("read-only-store", 31)
        deny = {"Version": "2012-10-17",
                "Statement": [{"Effect": "Deny", "Principal": "*", "Action": ["s3:PutObject"],
                               "Resource": ["arn:aws:s3:::read-only-store/*"]}]}
        r = self.rgw.request("PUT", "read-only-store", query={"policy": ""},
                             data=json.dumps(deny).encode())
        self.assertEqual(r.status, 204, r.body)
        self.assert_save_refused_and_previous_kept(
            url, first, 32, "PERMISSION_DENIED", "AccessDenied", "the bucket's policy")

    def test_kill_9_during_upload_keeps_the_previous_checkpoint(self):
        url = self.url("killed")
        first = {"w": tensors(4, 11), "step": 1}
        ck.save(first, 1, async_=False, dir=url)
        proxy = FaultProxy(self.rgw.endpoint)
        try:
            proxy.delay(0.5, method="PUT", path_contains="partNumber")
            saver = self.saver(url, 2, 64, 12, extra_env={"AWS_ENDPOINT_URL": proxy.url})
            deadline = time.time() + 120
            while proxy.count("PUT", "partNumber") < 3 and time.time() < deadline:
                self.assertIsNone(saver.poll(), saver.stderr.read() if saver.poll() else "")
                time.sleep(0.05)
            self.assertGreaterEqual(proxy.count("PUT", "partNumber"), 3)
            saver.kill()
            saver.communicate()
        finally:
            proxy.close()
        self.assertEqual(ck.list_steps(url), [1])
        state = {"w": tensors(4, 99), "step": 0}
        self.assertEqual(ck.load_latest(url, state), 1)
        self.assertTrue(all(torch.equal(state["w"][k], first["w"][k]) for k in first["w"]))
        self.assertNotIn("step_0000000002/MANIFEST", " ".join(self.keys(url)))
        # The killed upload is invisible but stored: gc aborts it once a newer step commits.
        self.assertEqual(len(self.uploads(url)), 1)
        self.assertNotIn("incomplete", self.titan("ckpt", "gc", url).stdout)  # 2 > latest 1
        ck.save({"w": tensors(4, 13), "step": 3}, 3, async_=False, dir=url)
        dry = self.titan("ckpt", "gc", url, "--dry-run").stdout
        self.assertRegex(dry, r"would abort incomplete upload step_0000000002/rank_00000-")
        self.assertEqual(len(self.uploads(url)), 1)
        self.assertIn("aborted incomplete upload", self.titan("ckpt", "gc", url).stdout)
        self.assertEqual(self.uploads(url), [])

    def test_gateway_restarted_mid_save(self):
        url = self.url("restart")
        ck.save({"w": tensors(2, 21), "step": 1}, 1, async_=False, dir=url)
        saver = self.saver(url, 2, 400, 22, check=True, extra_env={"TITAN_S3_MAX_ATTEMPTS": "20"})
        line = saver.stdout.readline()
        self.assertTrue(line.startswith("SAVING"), line)
        time.sleep(0.8)
        restarted_at = time.time()
        self.rgw.restart_gateway()
        out, err = saver.communicate(timeout=300)
        self.assertEqual(saver.returncode, 0, err)
        saved_at = float(out.split("SAVED ")[1].split()[0])
        self.assertGreater(saved_at, restarted_at, "the save ended before the restart")
        self.assertIn("LOADED 2 SAME", out)
        self.assertIn("attempt 2 of", err)

    def test_corrupt_truncated_objects_and_hostile_latest(self):
        url = self.url("damaged")
        good = {"w": tensors(4, 31), "step": 1}
        ck.save(good, 1, async_=False, dir=url)
        ck.save({"w": tensors(4, 32), "step": 2}, 2, async_=False, dir=url)
        prefix = url[len(f"s3://{BUCKET}/"):]
        data = [k for k in self.keys(url) if "step_0000000002/rank_" in k and k.endswith(".data")]
        self.assertEqual(len(data), 1, self.keys(url))
        blob = bytearray(self.rgw.get_object(BUCKET, data[0]))
        blob[12345] ^= 0xFF
        self.rgw.put_object(BUCKET, data[0], bytes(blob))
        p = self.titan("ckpt", "verify", url, check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("1 bad", p.stdout + p.stderr)
        state = {"w": tensors(4, 99), "step": 0}
        with self.assertWarns(UserWarning):
            self.assertEqual(ck.load_latest(url, state), 1)
        self.assertTrue(all(torch.equal(state["w"][k], good["w"][k]) for k in good["w"]))
        # Truncated: a clear error naming the object.
        self.rgw.put_object(BUCKET, data[0], bytes(blob[:1000]))
        with self.assertRaises(ck.CheckpointError) as e:
            ck.load(url + "/step_0000000002", {"w": tensors(4, 99), "step": 0})
        self.assertIn(f"s3://{BUCKET}/{data[0]}", str(e.exception))
        # A hostile `latest` pointer is not followed: the newest committed manifest wins.
        self.rgw.put_object(BUCKET, prefix + "/latest", b"../../step_9999999999\n" * 1000)
        self.assertEqual(ck.latest_step(url), 2)
        self.assertIn("0 bad", self.titan("ckpt", "verify", url + "/step_0000000001").stdout)

    def test_tiering_local_then_durable_and_restore_from_the_store(self):
        local = os.path.join(self.tmp, "tier-local")
        mirror = self.url("tier")
        states = {s: {"w": tensors(6, 40 + s), "step": s} for s in (1, 2, 3)}
        ck.save(states[1], 1, dir=local, mirror=mirror)
        ck.save(states[2], 2, dir=local, mirror=mirror)
        self.assertEqual(ck.wait(durable=True), 2)
        lines = self.titan("ckpt", "ls", local).stdout.splitlines()
        self.assertTrue(lines[-1].startswith("2 ") and lines[-1].endswith("durable"), lines)
        self.assertEqual(ck.latest_step(mirror), 2)
        self.assertTrue(self.titan("ckpt", "ls", mirror).stdout.rstrip().endswith("durable"))
        # The local copy is lost (a replaced node, a fresh directory): restored from the store.
        subprocess.run(["rm", "-rf", local], check=True)
        local = os.path.join(self.tmp, "tier-local-new-node")
        state = {"w": tensors(6, 99), "step": 0}
        self.assertEqual(ck.load_latest(local, state, mirror=mirror), 2)
        self.assertTrue(all(torch.equal(state["w"][k], states[2]["w"][k]) for k in state["w"]))
        # The local copy is corrupt: the same step comes from the store, with a warning.
        ck.save(states[3], 3, async_=False, dir=local, mirror=mirror)
        self.assertEqual(ck.wait(durable=True), 3)
        data = [os.path.join(local, "step_0000000003", f)
                for f in os.listdir(os.path.join(local, "step_0000000003")) if f.endswith(".data")]
        with open(data[0], "r+b") as f:
            f.seek(4321)
            byte = f.read(1)
            f.seek(4321)
            f.write(bytes([byte[0] ^ 0xFF]))
        state = {"w": tensors(6, 99), "step": 0}
        with self.assertWarns(UserWarning) as w:
            self.assertEqual(ck.load_latest(local, state, mirror=mirror), 3)
        self.assertIn("loading from " + mirror, str(w.warning))
        self.assertTrue(all(torch.equal(state["w"][k], states[3]["w"][k]) for k in state["w"]))
        # Every step reached the store.
        self.assertEqual(sorted(ck.list_steps(mirror)), [1, 2, 3])

    def test_a_failing_store_never_fails_a_tiered_save(self):
        local = os.path.join(self.tmp, "tier-failing")
        mirror = self.url("tier-failing")
        proxy = FaultProxy(self.rgw.endpoint)
        child = textwrap.dedent("""
            import sys, torch, titan.checkpoint as ck
            ck.save({"w": torch.ones(1 << 20), "step": 1}, 1, async_=False, dir=sys.argv[1],
                    mirror=sys.argv[2])
            print("SAVED", ck.latest_step(sys.argv[1]), flush=True)
            try:
                ck.wait(durable=True)
            except ck.CheckpointError as e:
                print("NOT DURABLE", e, flush=True)
        """)
        try:
            proxy.fail_next(1000, status=503, method="PUT", code="SlowDown")
            proxy.fail_next(1000, status=503, method="POST", code="SlowDown")
            p = subprocess.run([PYTHON, "-c", child, local, mirror], capture_output=True,
                               text=True, timeout=120,
                               env={**env(), "AWS_ENDPOINT_URL": proxy.url,
                                    "TITAN_S3_MAX_ATTEMPTS": "2"})
        finally:
            proxy.close()
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("SAVED 1", p.stdout)  # the local save succeeded
        self.assertIn("NOT DURABLE", p.stdout)
        self.assertIn("503 SlowDown", p.stdout)
        self.assertEqual(ck.latest_step(local), 1)
        self.assertTrue(self.titan("ckpt", "ls", local).stdout.rstrip().endswith("local"))
        self.assertEqual(ck.list_steps(mirror), [])
    def test_titan_run_with_a_mirror_resumes_from_the_store_after_the_disk_is_lost(self):
        local = os.path.join(self.tmp, "run-local")
        mirror = self.url("run")
        worker = os.path.join(self.tmp, "mirror_worker.py")
        with open(worker, "w") as f:
            f.write(textwrap.dedent("""
                import os, shutil, torch, titan.checkpoint as ck
                d = os.environ["TITAN_CHECKPOINT_DIR"]
                state = {"w": torch.zeros(1 << 20), "step": 0}
                start = ck.load_latest(d, state) or 0
                print("START", start, float(state["w"][0]), flush=True)
                if os.environ["TITAN_RESTART_COUNT"] == "0":
                    for step in (1, 2):
                        state["w"] += 1
                        state["step"] = step
                        ck.save(state, step)
                    print("DURABLE", ck.wait(durable=True), flush=True)
                    shutil.rmtree(d)  # the node's disk is gone
                    os._exit(3)       # and the worker crashes
                print("RESUMED", start, float(state["w"][0]), flush=True)
            """))
        run_dir = os.path.join(self.tmp, "run-dir")
        p = subprocess.run([TITAN, "run", "--run-dir", run_dir, "--checkpoint-dir", local,
                            "--checkpoint-mirror", mirror, "--nproc-per-node", "1",
                            "--max-restarts", "1", "--failure-grace", "1", "--", PYTHON, worker],
                           capture_output=True, text=True, timeout=180, env=env())
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("DURABLE 2", p.stdout + p.stderr)
        self.assertIn("RESUMED 2 2.0", p.stdout + p.stderr)
        self.assertEqual(ck.latest_step(mirror), 2)
        # Each async save reported itself three times: returned, committed, durable.
        with open(os.path.join(run_dir, "events.jsonl")) as f:
            events = [json.loads(line) for line in f]
        staged = [e["step"] for e in events if e["type"] == "checkpoint" and e["async"]]
        committed = [e["step"] for e in events if e["type"] == "checkpoint_committed"]
        durable = [e["step"] for e in events if e["type"] == "checkpoint_durable"]
        self.assertEqual((staged, committed), ([1, 2], [1, 2]), events)
        self.assertEqual(durable[-1], 2, events)
        with open(os.path.join(run_dir, "ledger.json")) as f:
            ledger = json.load(f)
        self.assertEqual((ledger["last_checkpoint_step"], ledger["last_durable_step"]), (2, 2))

    def run_restore(self, local, mirror, proxy, *flags):
        """titan run of one worker that restores from `local` with `mirror` through `proxy`:
        (stdout+stderr, the run's events)."""
        worker = os.path.join(self.tmp, "restore_worker.py")
        with open(worker, "w") as f:
            f.write(textwrap.dedent("""
                import os, torch, titan.checkpoint as ck
                g = torch.Generator().manual_seed(11)
                want = {"t%d" % i: torch.randn(1 << 18, generator=g) for i in range(24)}
                state = {"w": {k: torch.zeros(1 << 18) for k in want}, "step": -1}
                got = ck.load_latest(os.environ["TITAN_CHECKPOINT_DIR"], state)
                same = all(torch.equal(state["w"][k], want[k]) for k in want)
                print("RESTORED", got, "SAME" if same else "DIFFERENT", flush=True)
            """))
        run_dir = tempfile.mkdtemp(dir=self.tmp)
        p = subprocess.run([TITAN, "run", "--run-dir", run_dir, "--checkpoint-dir", local,
                            "--checkpoint-mirror", mirror, "--nproc-per-node", "1", *flags,
                            "--", PYTHON, worker],
                           capture_output=True, text=True, timeout=180,
                           env={**env(), "AWS_ENDPOINT_URL": proxy.url})
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        with open(os.path.join(run_dir, "events.jsonl")) as f:
            events = [json.loads(line) for line in f]
        return p.stdout + p.stderr, events

    def test_titan_run_prefetches_the_newest_durable_checkpoint_while_workers_start(self):
        mirror = self.url("prefetch")
        saver = self.saver(mirror, 7, 24, 11)
        _, err = saver.communicate(timeout=120)
        self.assertEqual(saver.returncode, 0, err)
        local = os.path.join(self.tmp, "prefetch-local")  # a new node: nothing local
        proxy = FaultProxy(self.rgw.endpoint)
        try:
            # Slow chunk reads keep the prefetch in flight while the worker starts and asks
            # (8 s: with 4 s, a worker whose PyTorch import took longer on a loaded machine
            # asked after the prefetch had ended, and never waited).
            proxy.delay(8, method="GET", path_contains=".data", n=4)
            out, events = self.run_restore(local, mirror, proxy)
            self.assertIn("RESTORED 7 SAME", out)
            self.assertIn("waited", out)  # load_latest waited for the prefetch in flight
            ends = [e for e in events if e["type"] == "prefetch" and e["phase"] == "end"]
            self.assertEqual(len(ends), 1, events)
            self.assertTrue(ends[0]["copied"], ends[0])
            self.assertEqual((ends[0]["local_step"], ends[0]["durable_step"]), (None, 7))
            self.assertGreaterEqual(ends[0]["copied_bytes"], 24 << 20)
            self.assertIn("prefetched checkpoint step 7", out)  # the run's timeline
            # The worker read the store only to learn its latest step (a listing): every chunk
            # read came before the worker's listing (the prefetch lists first too).
            reqs = [t for m, t in proxy.requests if m == "GET"]
            listings = [i for i, t in enumerate(reqs) if "list-type=2" in t]
            chunks = [i for i, t in enumerate(reqs) if ".data" in t]
            self.assertGreaterEqual(len(listings), 2, reqs)
            self.assertTrue(chunks and max(chunks) < listings[-1], reqs)
            self.assertEqual(ck.latest_step(local), 7)
            self.assertTrue(self.titan("ckpt", "ls", local).stdout.rstrip().endswith("durable"))

            # A second start finds the local copy as new as the store's: nothing is fetched.
            proxy.clear()
            proxy.reset_requests()
            out, events = self.run_restore(local, mirror, proxy)
            self.assertIn("RESTORED 7 SAME", out)
            ends = [e for e in events if e["type"] == "prefetch" and e["phase"] == "end"]
            self.assertEqual((ends[0]["copied"], ends[0]["local_step"]), (False, 7), ends)
            self.assertEqual(proxy.count("GET", ".data"), 0)

            # Without prefetch the worker reads its chunks from the store itself.
            proxy.reset_requests()
            fresh = os.path.join(self.tmp, "prefetch-off")
            out, events = self.run_restore(fresh, mirror, proxy, "--no-checkpoint-prefetch")
            self.assertIn("RESTORED 7 SAME", out)
            self.assertFalse([e for e in events if e["type"] == "prefetch"])
            self.assertGreater(proxy.count("GET", ".data"), 0)
            self.assertIsNone(ck.latest_step(fresh))
        finally:
            proxy.close()

    def test_node_local_directories_commit_at_the_store_and_restore_node_by_node(self):
        url = self.url("nodes")
        out = tempfile.mkdtemp(dir=self.tmp)
        Job("train", 4, url, out, "--steps", 8, "--save-every", 4, "--ref-at", 8,
            "--node-local", 2).wait()
        self.assertEqual(ck.latest_step(url), 8)
        keys = self.keys(url)
        self.assertFalse([k for k in keys if k.endswith(".done")], keys)  # markers consumed
        self.assertEqual(sorted({data_file_rank(k) for k in keys if k.endswith(".data")}),
                         [0, 1, 2, 3])
        for node, ranks in ((0, [0, 1]), (1, [2, 3])):
            files = local_files(os.path.join(out, f"node{node}"))
            self.assertEqual(sorted({data_file_rank(f) for f in files}), ranks, files)
            self.assertFalse([f for f in files if not f.endswith(".data")], files)  # no commit
        # 4 -> 2 ranks: rank r restores on node r; rank 0's rows are in node 0's files.
        outs = Job("compare", 2, url, out, "--saved-world", 4, "--node-local", 1).wait()
        for o in outs:
            self.assertIn("step 8", o)
            self.assertIn("SAME", o)
        self.assertGreaterEqual(int(outs[0].split("FROM_CACHE ")[1].split()[0]), 2, outs[0])

        # A new machine for node 0: titan run fetches only its ranks' (0 and 1) files.
        local = os.path.join(self.tmp, "new-node")
        run_dir = tempfile.mkdtemp(dir=self.tmp)
        worker = os.path.join(self.tmp, "node_local_worker.py")
        with open(worker, "w") as f:
            f.write(textwrap.dedent(f"""
                import os, types, torch, torch.distributed as dist
                import dist_worker as w
                torch.set_num_threads(1)
                dist.init_process_group("gloo")
                args = types.SimpleNamespace(
                    rank=dist.get_rank(), world=dist.get_world_size(), ckpt={url!r},
                    out={out!r}, saved_world=4, node_dir=os.environ["TITAN_CHECKPOINT_DIR"])
                w.run_compare(args)
            """))
        p = subprocess.run([TITAN, "run", "--run-dir", run_dir, "--checkpoint-dir", local,
                            "--checkpoint-mirror", url, "--checkpoint-node-local",
                            "--nproc-per-node", "2", "--", PYTHON, worker],
                           capture_output=True, text=True, timeout=300, env=env())
        said = p.stdout + p.stderr
        self.assertEqual(p.returncode, 0, said)
        self.assertEqual(said.count("SAME"), 2, said)
        files = local_files(local)
        self.assertEqual(sorted({data_file_rank(f) for f in files if f.endswith(".data")}),
                         [0, 1], files)
        with open(os.path.join(run_dir, "events.jsonl")) as f:
            ends = [e for e in map(json.loads, f) if e["type"] == "prefetch"
                    and e["phase"] == "end"]
        self.assertTrue(ends and ends[0]["copied"], ends)
        self.assertEqual(ends[0]["durable_step"], 8, ends)
        self.assertGreaterEqual(int(said.split("RANK 0 FROM_CACHE ")[1].split()[0]), 2, said)

    def test_a_damaged_node_local_file_is_read_from_the_store_instead(self):
        url, local = self.url("damaged"), os.path.join(self.tmp, "damaged-node")
        state = {"w": tensors(4, 5), "step": 3}
        # Saved by a child: a writer of this process would outlive the test (wait(durable=True)
        # answers for every writer of the process).
        saver = subprocess.run([PYTHON, "-c", textwrap.dedent(f"""
            import torch, titan.checkpoint as ck
            g = torch.Generator().manual_seed(5)
            w = {{"t%d" % i: torch.randn(1 << 18, generator=g) for i in range(4)}}
            ck.save({{"w": w, "step": 3}}, 3, async_=False, dir={local!r}, mirror={url!r},
                    node_local=True)
        """)], capture_output=True, text=True, timeout=120, env=env())
        self.assertEqual(saver.returncode, 0, saver.stderr)
        self.assertEqual(ck.latest_step(url), 3)
        self.assertIsNone(ck.latest_step(local))  # the commit is at the store only
        fresh = {"w": tensors(4, 6), "step": -1}
        self.assertEqual(ck.load_latest(local, fresh, mirror=url), 3)
        self.assertEqual(ck.last_load_stats()["files_from_cache"], 1)
        (data,) = [f for f in local_files(local) if f.endswith(".data")]
        with open(os.path.join(local, data), "r+b") as f:
            f.seek(4096)
            f.write(b"\xff" * 8)
        fresh = {"w": tensors(4, 6), "step": -1}
        with self.assertWarnsRegex(UserWarning, "alone"):
            self.assertEqual(ck.load_latest(local, fresh, mirror=url), 3)
        self.assertEqual(ck.last_load_stats()["files_from_cache"], 0)
        self.assertTrue(all(torch.equal(fresh["w"][k], state["w"][k]) for k in state["w"]))
        self.assertEqual(fresh["step"], 3)


def local_files(root):
    """Files under `root`, relative, without the prefetch lock."""
    return sorted(os.path.relpath(os.path.join(d, n), root) for d, _, names in os.walk(root)
                  for n in names if n != ".prefetch.lock")


def data_file_rank(path):
    """The rank in a data file's name (src/checkpoint/layout.h), None for other names."""
    name = path.rsplit("/", 1)[-1]
    if not (name.startswith("rank_") and name.endswith(".data")):
        return None
    return int(name[5:].split("-", 1)[0])


if __name__ == "__main__":
    unittest.main()
