"""What titan run's e2e tests share: starting a titan command with its output in a file, and
reading a run directory's event log."""
import json
import os
import subprocess


def launch(cmd, log_path, timeout, wait):
    """Starts `cmd` with stdout and stderr in `log_path`. wait: its exit code, after at most
    `timeout` seconds (killed beyond); else the running Popen."""
    log = open(log_path, "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=os.environ.copy())
    if not wait:
        return proc
    try:
        proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode


def events(run_dir):
    """The run's events.jsonl, one dict per event."""
    with open(os.path.join(run_dir, "events.jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]
