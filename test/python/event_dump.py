"""Test helper: runs the titan_event_dump tool (src/client/event_dump_main.cc) as the receiving
end of the titan client, and runs Python snippets in fresh interpreters that send to it."""
import json
import os
import signal
import subprocess
import sys
import tempfile

import pytest

PYTHON = "/usr/bin/python3"


def dump_binary():
    path = os.environ.get("TITAN_EVENT_DUMP")
    if not path:
        pytest.skip("TITAN_EVENT_DUMP is not set: run these tests through ctest "
                    "(ctest -R python_client), which points it at the built titan_event_dump")
    return path


class EventDump:
    """with EventDump() as d: ... d.socket ...; afterwards d.events is the list of received
    events (dicts) and d.stats the receiver's counters."""

    def __init__(self):
        self.dir = tempfile.TemporaryDirectory(prefix="titan-pytest-")
        self.socket = os.path.join(self.dir.name, "agent.sock")
        self.events = []
        self.stats = None

    def __enter__(self):
        self.proc = subprocess.Popen([dump_binary(), self.socket], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        ready = self.proc.stdout.readline()
        assert ready, f"titan_event_dump did not start: {self.proc.stderr.read()}"
        assert json.loads(ready)["ready"] is True
        return self

    def __exit__(self, *exc):
        self.proc.send_signal(signal.SIGTERM)
        out, err = self.proc.communicate(timeout=60)
        assert self.proc.returncode == 0, err
        self.events = [json.loads(line) for line in out.splitlines() if line]
        self.stats = json.loads(err.strip().splitlines()[-1])
        self.dir.cleanup()
        return False


def run_python(code, socket, extra_env=None, timeout=120):
    """Runs `code` in a fresh /usr/bin/python3 whose titan client sends to `socket`."""
    env = dict(os.environ)
    env["TITAN_AGENT_SOCKET"] = socket
    for key in ("RANK", "TITAN_RANK"):
        env.pop(key, None)
    env.update(extra_env or {})
    proc = subprocess.run([PYTHON, "-c", code], env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc
