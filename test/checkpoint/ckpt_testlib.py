"""Helpers for the checkpoint e2e tests: run a gloo job of N real processes."""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "dist_worker.py")
PYTHON = "/usr/bin/python3"


def env():
    e = dict(os.environ)
    e.setdefault("OMP_NUM_THREADS", "1")
    return e


class Job:
    """`world` processes of dist_worker.py MODE, sharing a fresh file store."""

    def __init__(self, mode, world, ckpt, out, *extra):
        fd, store = tempfile.mkstemp(prefix="titan_store_")
        os.close(fd)
        os.unlink(store)  # the file store must not exist yet
        # Output goes to files: a pipe nobody reads could block a chatty worker.
        self.logs = [tempfile.TemporaryFile(mode="w+") for _ in range(world)]
        self.procs = [
            subprocess.Popen([PYTHON, WORKER, mode, str(r), str(world), store, ckpt, out,
                              *map(str, extra)],
                             stdout=self.logs[r], stderr=subprocess.STDOUT, text=True, env=env())
            for r in range(world)]

    def _output(self, r):
        self.logs[r].seek(0)
        return self.logs[r].read()

    def wait(self, timeout=600):
        outs = []
        for r, p in enumerate(self.procs):
            p.wait(timeout=timeout)
            out = self._output(r)
            if p.returncode != 0:
                self.kill()
                raise AssertionError(f"worker {r} failed ({p.returncode}):\n{out}")
            outs.append(out)
        self._close()
        return outs

    def kill(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
        for p in self.procs:
            p.wait()
        self._close()

    def _close(self):
        for f in self.logs:
            f.close()
        self.logs = []


def losses(output):
    """{step: loss} from a worker's LOSS lines."""
    result = {}
    for line in output.splitlines():
        if line.startswith("LOSS "):
            _, step, value = line.split()
            result[int(step)] = float(value)
    return result
