"""`titan agent --risk FILE` serves the node's failure probability from `titan predict risk --json`
as titan_node_failure_probability, and follows the file when it is rewritten (issue 35)."""
import json
import os
import re
import subprocess
import tempfile
import time
import urllib.request

TITAN = os.environ["TITAN_BIN"]


def risk_file(path, p):
    with open(path + ".tmp", "w") as f:
        json.dump({"horizon_days": 30, "nodes": [{"node_name": "n7", "p": p},
                                                  {"node_name": "n8", "p": 0.9}]}, f)
    os.replace(path + ".tmp", path)


def wait_for_value(port, value, timeout=15):
    pattern = re.compile(r'^titan_node_failure_probability\{horizon_days="30"\} (\S+)$', re.M)
    deadline = time.time() + timeout
    seen = None
    while time.time() < deadline:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
        m = pattern.search(text)
        seen = m and float(m.group(1))
        if seen == value:
            return
        time.sleep(0.2)
    raise AssertionError(f"titan_node_failure_probability {seen}, expected {value}")


def test_the_agent_serves_its_nodes_risk_and_follows_the_file():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "risk.json")
        risk_file(path, 0.25)
        agent = subprocess.Popen(
            [TITAN, "agent", "--listen", "127.0.0.1", "--port", "0", "--socket",
             os.path.join(tmp, "a.sock"), "--run-for", "60", "--risk", path, "--node-name", "n7"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            line = agent.stdout.readline()
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
            assert m, line + agent.stderr.read()
            wait_for_value(m.group(1), 0.25)
            time.sleep(1.1)  # a new modification time
            risk_file(path, 0.5)
            wait_for_value(m.group(1), 0.5)
        finally:
            agent.kill()
            agent.wait()
