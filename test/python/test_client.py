"""titan.client end to end: real interpreters send to a real receiver (titan_event_dump)."""
import os
import signal
import subprocess
import time

from event_dump import PYTHON, EventDump, run_python


def test_every_event_arrives_with_its_fields():
    code = """
import os, titan.client as tc
assert tc.init(rank=3, job="unit-job") is True
with tc.step(1):
    pass
tc.checkpoint_begin(1)
tc.checkpoint_end(1, bytes=4096)
tc.checkpoint_end(2)
tc.mark("eval-start")
tc.heartbeat()
assert tc.dropped() == 0, tc.dropped()
print(os.getpid())
"""
    with EventDump() as dump:
        pid = int(run_python(code, dump.socket).stdout.strip())
    kinds = [e["kind"] for e in dump.events]
    assert kinds == ["hello", "step_begin", "step_end", "checkpoint_begin", "checkpoint_end",
                     "checkpoint_end", "mark", "heartbeat", "goodbye"]  # goodbye from atexit
    assert dump.events[0]["name"] == "unit-job"
    assert [e["step"] for e in dump.events[1:4]] == [1, 1, 1]
    assert dump.events[4]["value"] == 4096 and dump.events[5]["value"] == 0
    assert dump.events[6]["name"] == "eval-start"
    for e in dump.events:
        assert e["rank"] == 3
        assert e["pid"] == pid and e["claimed_pid"] == pid
    assert dump.stats["accepted"] == 9 and dump.stats["datagrams"] == 9


def test_rank_comes_from_the_environment():
    code = "import titan.client as tc; tc.step_begin(5); tc.mark('x' * 40)"
    with EventDump() as dump:
        run_python(code, dump.socket, {"RANK": "7"})
    assert [(e["kind"], e["rank"], e["step"]) for e in dump.events[:1]] == [("step_begin", 7, 5)]
    assert dump.events[1]["name"] == "x" * 23  # cut to 23 bytes


def test_step_end_is_sent_when_the_step_raises():
    code = """
import titan.client as tc
try:
    with tc.step(9):
        raise KeyError("boom")
except KeyError:
    pass
"""
    with EventDump() as dump:
        run_python(code, dump.socket)
    assert [(e["kind"], e["step"]) for e in dump.events] == [("step_begin", 9), ("step_end", 9)]


def test_agent_down_never_raises_and_counts_drops(tmp_path):
    code = """
import titan.client as tc
assert tc.init(job="lonely") is False
results = [tc.step_begin(i) for i in range(100)] + [tc.mark("m"), tc.heartbeat()]
assert not any(results)
assert tc.dropped() == 103, tc.dropped()
assert tc.sent() == 0
print("ok")
"""
    proc = run_python(code, str(tmp_path / "no-agent.sock"))
    assert proc.stdout.strip() == "ok"


def test_sigusr1_dumps_every_thread_stack_to_the_stack_file(tmp_path):
    stack_file = tmp_path / "stacks.txt"
    code = """
import sys, threading, time, titan.client as tc
tc.init(job="hang")
def data_loader_thread_body():
    time.sleep(600)
def hung_training_step():
    print("ready", flush=True)
    time.sleep(600)
threading.Thread(target=data_loader_thread_body, daemon=True).start()
hung_training_step()
"""
    env = dict(os.environ, TITAN_AGENT_SOCKET=str(tmp_path / "none.sock"),
               TITAN_STACK_FILE=str(stack_file))
    proc = subprocess.Popen([PYTHON, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        proc.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + 60
        text = ""
        while "hung_training_step" not in text and time.monotonic() < deadline:
            time.sleep(0.05)
            text = stack_file.read_text() if stack_file.exists() else ""
        assert "hung_training_step" in text, text
        assert "data_loader_thread_body" in text, text  # all threads
        assert proc.poll() is None, "the worker must survive the stack dump"
    finally:
        proc.kill()
        proc.wait()


def test_full_agent_queue_defers_then_flushes_in_order(tmp_path):
    # The "agent" is a socket this test reads only later: its kernel queue fills up first.
    code = f"""
import socket, struct, titan.client as tc
agent = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
agent.bind({str(tmp_path / "slow.sock")!r})
results = [tc.step_begin(i) for i in range(200)]
assert not all(results)
assert tc.deferred() == 64, tc.deferred()
assert tc.dropped() > 0
steps = []
def drain():
    agent.setblocking(False)
    try:
        while True:
            steps.append(struct.unpack_from("<q", agent.recv(64), 16)[0])
    except BlockingIOError:
        pass
for _ in range(1000):
    drain()
    if tc.flush() == 0:
        break
drain()
assert tc.deferred() == 0
assert steps == sorted(steps) and len(set(steps)) == len(steps), steps
assert len(steps) == tc.sent() == 200 - tc.dropped(), (len(steps), tc.sent(), tc.dropped())
print("ok")
"""
    proc = run_python(code, str(tmp_path / "slow.sock"))
    assert proc.stdout.strip() == "ok"
