"""End to end: a real PyTorch training process (Debian's python3-torch) instrumented with
titan.client sends its step and checkpoint events to a real `titan agent`; one step is made
slow on purpose. Asserts what the agent serves: every step counted, the slow step detected as
a transient with the step number and rank, the checkpoint blocking time accounted, and the
recorder dump showing the steps as slices."""
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request

import pytest

TITAN = os.environ.get("TITAN_BIN", "")
# The slow step is named at the transient's peak: "step 45 on rank 3 took ..." or, if a loaded
# machine slowed a neighbouring step too and the detector merged them,
# "steps 44-46 on rank 3: step 45 took ...".
SLOW_STEP = re.compile(r"(step 45 on rank 3|steps \d+-\d+ on rank 3: step 45) took")

TRAIN = textwrap.dedent("""
    import time, torch
    import titan.client as tc
    tc.init(rank=3, job="tiny-mlp")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(256, 32), torch.randn(256, 1)
    for step in range(60):
        with tc.step(step):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            time.sleep(0.01)
            if step == 45:
                time.sleep(0.4)       # the transient
        if step == 30:
            tc.checkpoint_begin(step)
            time.sleep(0.05)
            tc.checkpoint_end(step, 1 << 20)
    print("final loss", float(loss))
""")


def get(port, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
        return r.read().decode()


@pytest.mark.skipif(not TITAN or not os.path.exists(TITAN), reason="TITAN_BIN not built")
def test_torch_steps_reach_the_agent_and_the_slow_step_is_explained():
    with tempfile.TemporaryDirectory() as tmp:
        sock = os.path.join(tmp, "agent.sock")
        agent = subprocess.Popen(
            [TITAN, "agent", "--port", "0", "--socket", sock, "--disable", "nvml"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            line = agent.stdout.readline()
            port = int(re.search(r"127\.0\.0\.1:(\d+)", line).group(1))
            env = dict(os.environ, TITAN_AGENT_SOCKET=sock)
            train = subprocess.run([sys.executable, "-c", TRAIN], env=env, capture_output=True,
                                   text=True, timeout=300)
            assert train.returncode == 0, train.stderr
            assert "final loss" in train.stdout

            deadline = time.time() + 20
            events = []
            while time.time() < deadline:
                events = json.loads(get(port, "/events"))
                if any(SLOW_STEP.search(e["summary"]) for e in events):
                    break
                time.sleep(0.2)
            slow = [e for e in events if SLOW_STEP.search(e["summary"])]
            assert slow, [e["summary"] for e in events]
            assert slow[0]["signal"] == 'titan_step_duration_seconds{rank="3"}'
            assert slow[0]["direction"] == "spike"
            assert slow[0]["peak"] >= 0.4

            metrics = get(port, "/metrics")
            assert 'titan_steps_total{rank="3"} 60' in metrics
            assert 'titan_app_events_total{kind="hello"} 1' in metrics
            blocking = re.search(r'titan_checkpoint_blocking_seconds_total\{rank="3"\} (\S+)',
                                 metrics)
            assert blocking and 0.05 <= float(blocking.group(1)) < 1.0, metrics
            # The slow step is in the window max while the last value is a normal step.
            window_max = re.search(
                r'titan_step_duration_seconds_window_max\{rank="3"\} (\S+)', metrics)
            assert window_max and float(window_max.group(1)) >= 0.4

            dump = json.loads(get(port, "/recorder?last=5m&match=step"))
            names = {e.get("name") for e in dump["traceEvents"] if e.get("ph") == "X"}
            assert "step 45" in names and "checkpoint" in names
        finally:
            agent.terminate()
            agent.wait(timeout=10)
        assert agent.returncode == 0
