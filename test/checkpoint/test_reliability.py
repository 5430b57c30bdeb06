"""End-to-end reliability of titan.checkpoint with real processes, files and file systems.

* Full disk: a 2 MiB tmpfs (mount -t tmpfs; when mounting is not permitted, a child process
  with RLIMIT_FSIZE, which fails writes with EFBIG like a full disk, and the test says so)
  fails the save with a clear error, and the previous checkpoint stays latest and loadable.
* kill -9 of a real 2-rank PyTorch (gloo) job while it saves asynchronously in a loop: latest
  always loads and verifies (a few trials: each costs two torch start-ups; the C++
  checkpoint_crash_test and bench/ckpt_soak.sh run many more).
* Corruption: a flipped bit in a data file makes load fail naming the file and tensor, and
  load_latest(fallback=True) returns the previous intact checkpoint.
* `titan ckpt ls / inspect / verify / diff / gc` on checkpoints written from Python.
"""
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np
import torch

import titan.checkpoint as ck
from ckpt_testlib import Job, PYTHON, env

TITAN = os.environ.get("TITAN_BINARY", "")


def model_state(seed, size):
    torch.manual_seed(seed)
    return {"model": {"w": torch.randn(size), "b": torch.randn(3)}, "step": seed}


def try_mount_tmpfs(path, size="2m"):
    os.makedirs(path, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", path],
                       capture_output=True, text=True)
    return r.returncode == 0, r.stderr.strip()


FULL_DISK_CHILD = r"""
import resource, signal, sys
import torch
import titan.checkpoint as ck
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)   # EFBIG instead of a signal
resource.setrlimit(resource.RLIMIT_FSIZE, (2 << 20, 2 << 20))
d = sys.argv[1]
torch.manual_seed(0)
try:
    ck.save({"model": {"w": torch.randn(4 << 20)}}, 2, async_=False, dir=d, incremental=False)
    print("SAVED")
except ck.CheckpointError as e:
    print("ERROR", e)
"""


class ReliabilityTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="titan_ckpt_rel_")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_full_disk_fails_clearly_and_keeps_previous(self):
        d = os.path.join(self.tmp, "small")
        mounted, why = try_mount_tmpfs(d)
        try:
            small = model_state(1, 50_000)  # 200 KB
            ck.save(small, 1, async_=False, dir=d)
            self.assertEqual(ck.latest_step(d), 1)
            if mounted:
                big = model_state(2, 1_000_000)  # 4 MB > 2 MiB tmpfs
                for async_ in (False, True):
                    with self.assertRaises(ck.CheckpointError) as cm:
                        ck.save(big, 2, async_=async_, dir=d, incremental=False)
                        ck.wait()
                    message = str(cm.exception)
                    self.assertIn("RESOURCE_EXHAUSTED", message)
                    self.assertIn("full", message)
                    self.assertIn(d, message)
            else:
                print(f"\nNOTE: mount -t tmpfs not permitted ({why}); simulating a full disk "
                      f"with RLIMIT_FSIZE (EFBIG) in a child process", file=sys.stderr)
                out = subprocess.run([PYTHON, "-c", FULL_DISK_CHILD, d], capture_output=True,
                                     text=True, env=env(), timeout=300).stdout
                self.assertIn("ERROR", out)
                self.assertIn("RESOURCE_EXHAUSTED", out)
            # The previous checkpoint is still latest, intact and loadable.
            self.assertEqual(ck.latest_step(d), 1)
            self.assertEqual(ck.verify(os.path.join(d, "step_0000000001")), [])
            target = model_state(9, 50_000)
            self.assertEqual(ck.load_latest(d, target), 1)
            self.assertTrue(torch.equal(target["model"]["w"], small["model"]["w"]))
        finally:
            if mounted:
                subprocess.run(["umount", "-l", d])

    def test_a_disk_that_fills_at_commit_is_cleaned_and_the_next_save_succeeds(self):
        d = os.path.join(self.tmp, "commit-full")
        mounted, why = try_mount_tmpfs(d)
        if not mounted:
            if os.environ.get("CI") == "true":
                self.fail(f"mount -t tmpfs is needed for this test in CI: {why}")
            self.skipTest(f"mount -t tmpfs not permitted: {why}")
        try:
            ck.save(model_state(1, 10_000), 1, async_=False, dir=d)
            st = os.statvfs(d)
            free = st.f_bavail * st.f_frsize
            # Data that leaves one page: the rank's marker takes it, and the MANIFEST finds the
            # disk full (the data and the marker fitted).
            fill = {"w": torch.ones((free - 4096) // 4)}
            with self.assertRaises(ck.CheckpointError) as cm:
                ck.save(fill, 2, async_=False, dir=d, incremental=False)
            self.assertIn("RESOURCE_EXHAUSTED", str(cm.exception))
            self.assertIn("MANIFEST", str(cm.exception))
            # The failed save took its data and marker with it: the space is back.
            left = os.listdir(os.path.join(d, "step_0000000002")) \
                if os.path.isdir(os.path.join(d, "step_0000000002")) else []
            self.assertEqual(left, [])
            st = os.statvfs(d)
            self.assertGreaterEqual(st.f_bavail * st.f_frsize, free - 8192)
            self.assertEqual(ck.latest_step(d), 1)
            ck.save(model_state(3, 10_000), 3, async_=False, dir=d)  # no longer full
            self.assertEqual(ck.latest_step(d), 3)
        finally:
            subprocess.run(["umount", "-l", d])

    def test_flipped_bit_is_named_and_fallback_loads_previous(self):
        d = os.path.join(self.tmp, "c")
        s1, s2 = model_state(1, 300_000), model_state(2, 300_000)
        ck.save(s1, 1, async_=False, dir=d, incremental=False)
        ck.save(s2, 2, async_=False, dir=d, incremental=False)
        step_dir = os.path.join(d, "step_0000000002")
        data = [f for f in os.listdir(step_dir) if f.endswith(".data")][0]
        path = os.path.join(step_dir, data)
        with open(path, "r+b") as f:
            f.seek(123_457)
            byte = f.read(1)
            f.seek(123_457)
            f.write(bytes([byte[0] ^ 0x10]))
        errors = ck.verify(step_dir)
        self.assertEqual(len(errors), 1)
        self.assertIn(data, errors[0])
        self.assertIn("model/w", errors[0])
        self.assertIn("byte offset", errors[0])
        target = model_state(5, 300_000)
        with self.assertRaises(ck.CheckpointError) as cm:
            ck.load(step_dir, target)
        self.assertIn("checksum mismatch", str(cm.exception))
        with self.assertRaises(ck.CheckpointError):
            ck.load_latest(d, model_state(5, 300_000), fallback=False)
        with self.assertWarns(UserWarning):
            step = ck.load_latest(d, target, fallback=True)
        self.assertEqual(step, 1)
        self.assertTrue(torch.equal(target["model"]["w"], s1["model"]["w"]))
        self.assertEqual(target["step"], 1)

    def test_kill_nine_during_async_saves_of_a_torch_job(self):
        d = os.path.join(self.tmp, "churn")
        out = os.path.join(self.tmp, "out")
        os.makedirs(out)
        trials = int(os.environ.get("TITAN_CKPT_TORCH_KILL_TRIALS", "4"))
        rng = random.Random()
        previous = None
        for trial in range(trials):
            job = Job("churn", 2, d, out)
            # Kill at a random moment once the job is saving (after torch's start-up).
            deadline = time.time() + 120
            first = ck.latest_step(d)
            while ck.latest_step(d) == first and time.time() < deadline:
                time.sleep(0.02)
            time.sleep(rng.uniform(0, 0.5))
            for p in job.procs:
                os.kill(p.pid, signal.SIGKILL)
            job.kill()
            latest = ck.latest_step(d)
            self.assertIsNotNone(latest, f"trial {trial}")
            if previous is not None:
                self.assertGreaterEqual(latest, previous)
            previous = latest
            self.assertEqual(ck.verify(os.path.join(d, f"step_{latest:010d}")), [])
            g = torch.Generator().manual_seed(latest)
            want = torch.randn(512, 1024, generator=g)
            state = {"model": {"w": torch.zeros(512, 1024), "b": torch.zeros(4096)}, "step": 0}
            self.assertEqual(ck.load_latest(d, state, fallback=False), latest)
            self.assertTrue(torch.equal(state["model"]["w"], want), f"trial {trial}")
            self.assertTrue(torch.equal(state["model"]["b"], torch.full((4096,), float(latest))))
            self.assertEqual(state["step"], latest)

    def test_careless_arguments_are_refused_clearly(self):
        d = os.path.join(self.tmp, "careless")
        state = model_state(1, 1000)
        with self.assertRaisesRegex(TypeError, r"step must be an integer, got 1\.5 \(float\)"):
            ck.save(state, 1.5, async_=False, dir=d)  # was saved silently as step 1
        with self.assertRaisesRegex(ValueError, "metadata must be JSON.*NaN"):
            ck.save(state, 2, async_=False, dir=d, metadata={"loss": float("nan")})
        self.assertIsNone(ck.latest_step(d))  # neither wrote anything
        ck.save(state, np.int64(3), async_=False, dir=d)  # integer types other than int are fine
        self.assertEqual(ck.latest_step(d), 3)
        # A tensor the checkpoint lacks: named, instead of the dict silently losing it.
        grown = model_state(1, 1000)
        grown["model"]["big"] = torch.zeros(4)
        with self.assertRaisesRegex(ck.CheckpointError,
                                    r"state\['model'\] has 'big', which the checkpoint does "
                                    r"not hold \(it holds 'w', 'b'\)"):
            ck.load_latest(d, grown)
        self.assertIn("big", grown["model"])  # the caller's state is left as it was
        # A module built on the meta device has no memory: loading into it kept nothing.
        meta = {"model": {"w": torch.empty(1000, device="meta"), "b": torch.zeros(3)},
                "step": 0}
        with self.assertRaisesRegex(ck.CheckpointError, r"model/w .*meta device"):
            ck.load_latest(d, meta)

    @unittest.skipUnless(TITAN, "TITAN_BINARY not set (the CTest registration sets it)")
    def test_a_file_given_as_a_checkpoint_directory_is_named_as_a_file(self):
        path = os.path.join(self.tmp, "afile")
        with open(path, "w") as f:
            f.write("x")
        p = subprocess.run([TITAN, "ckpt", "verify", path], capture_output=True, text=True)
        self.assertEqual(p.returncode, 1)
        self.assertIn("is a file, not a checkpoint directory", p.stderr)

    @unittest.skipUnless(TITAN, "TITAN_BINARY not set (the CTest registration sets it)")
    def test_a_copy_into_its_own_source_is_refused_and_gc_leaves_what_it_did_not_write(self):
        d = os.path.join(self.tmp, "own")
        ck.save(model_state(1, 1000), 100, async_=False, dir=d)
        ck.save(model_state(2, 1000), 200, async_=False, dir=d)
        for inside in (os.path.join(d, "step_0000000200"), d, os.path.join(d, "sub", "..", "x")):
            p = subprocess.run([TITAN, "ckpt", "cp", d, inside], capture_output=True, text=True)
            self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
            self.assertIn("is the source's checkpoint directory", p.stderr)
        step_dir = os.path.join(d, "step_0000000200")
        self.assertEqual([n for n in os.listdir(step_dir)
                          if os.path.isdir(os.path.join(step_dir, n))], [])
        self.assertFalse(os.path.exists(os.path.join(d, "x")))
        # A link named like a step directory, pointing out of the checkpoint directory.
        victim = os.path.join(self.tmp, "victim")
        os.makedirs(victim)
        open(os.path.join(victim, "precious"), "w").close()
        os.symlink(victim, os.path.join(d, "step_0000000050"))
        p = subprocess.run([TITAN, "ckpt", "gc", d, "--keep-last", "1"], capture_output=True,
                           text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("left step_0000000050: not a directory", p.stdout)
        self.assertTrue(os.path.exists(os.path.join(victim, "precious")))
        self.assertEqual(ck.list_steps(d), [200])

    @unittest.skipUnless(TITAN, "TITAN_BINARY not set (the CTest registration sets it)")
    def test_cli(self):
        d = os.path.join(self.tmp, "cli")
        s = model_state(1, 100_000)
        ck.save(s, 10, async_=False, dir=d, metadata={"run": "cli"})
        s["model"]["b"] += 1  # change one small tensor
        ck.save(s, 20, async_=False, dir=d)
        ck.save(s, 30, async_=False, dir=d)

        def titan(*args):
            return subprocess.run([TITAN, "ckpt", *args], capture_output=True, text=True)

        r = titan("ls", d)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = [l for l in r.stdout.splitlines()[1:] if l.strip()]
        self.assertEqual([int(l.split()[0]) for l in lines], [10, 20, 30])
        self.assertIn("*", lines[-1])
        r = titan("inspect", os.path.join(d, "step_0000000010"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("model/w", r.stdout)
        self.assertIn("float32", r.stdout)
        self.assertIn("cli", r.stdout)
        r = titan("verify", d)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("0 bad", r.stdout)
        r = titan("diff", os.path.join(d, "step_0000000010"), os.path.join(d, "step_0000000020"))
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("~ model/b", r.stdout)
        self.assertNotIn("model/w", r.stdout)
        r = titan("diff", os.path.join(d, "step_0000000020"), os.path.join(d, "step_0000000030"))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = titan("gc", d, "--keep-last", "1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(ck.list_steps(d), [30])
        self.assertEqual(titan("verify", d).returncode, 0)
        # Corrupt the manifest: verify fails and says why.
        manifest = os.path.join(d, "step_0000000030", "MANIFEST")
        with open(manifest, "r+b") as f:
            f.seek(200)
            b = f.read(1)
            f.seek(200)
            f.write(bytes([b[0] ^ 1]))
        r = titan("verify", d)
        self.assertEqual(r.returncode, 1)
        self.assertIn("DATA_LOSS", r.stderr)
        self.assertEqual(titan("inspect", "/nonexistent/dir").returncode, 1)
        self.assertEqual(titan("frobnicate").returncode, 2)


if __name__ == "__main__":
    unittest.main()
