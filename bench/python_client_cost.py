#!/usr/bin/python3
"""Per-call cost of titan.client.step_begin from Python, side by side with what a user would
write by hand: struct.pack of the same 64-byte event + socket.sendto(MSG_DONTWAIT) from pure
Python, in the same run, to the same live receiver (titan_event_dump), and with no agent.

  PYTHONPATH=build/release/python /usr/bin/python3 bench/python_client_cost.py \
      --dump build/release/src/client/titan_event_dump [--calls 200000]

Each call is timed alone with a perf_counter_ns() pair (the pair's own cost is measured and
printed, not subtracted); p50/p99 in microseconds, plus the mean of an untimed loop.
"""
import argparse
import os
import signal
import socket
import struct
import subprocess
import tempfile
import sys
import time

EVENT = struct.Struct("<IHHiiqqq24s")  # src/client/wire.h
MAGIC, VERSION, STEP_BEGIN = 0x314E5454, 1, 2


def make_pure_python_step_begin(path):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.setblocking(False)
    pid = os.getpid()
    state = {"dropped": 0}

    def step_begin(step):
        try:
            sock.sendto(EVENT.pack(MAGIC, VERSION, STEP_BEGIN, 0, pid, step, time.time_ns(), 0,
                                   b""), socket.MSG_DONTWAIT, path)
            return True
        except OSError:
            state["dropped"] += 1
            return False

    return step_begin, state


def timed_calls(fn, calls):
    ns = [0] * calls
    clock = time.perf_counter_ns
    for i in range(calls):
        t0 = clock()
        fn(i)
        ns[i] = clock() - t0
    ns.sort()
    start = clock()
    for i in range(calls):
        fn(i)
    mean = (clock() - start) / calls
    return ns[calls // 2] / 1e3, ns[calls * 99 // 100] / 1e3, mean / 1e3


def start_dump(binary, directory):
    path = os.path.join(directory, "agent.sock")
    out = open(os.path.join(directory, "dump.jsonl"), "w+")
    proc = subprocess.Popen([binary, "--count-only", path], stdout=out, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        out.seek(0)
        if '"ready":true' in out.readline():
            return proc, path
        time.sleep(0.01)
    raise SystemExit("titan_event_dump did not become ready")


def run_setup(setup, args):
    """Measures both clients for one setup; runs in its own process because titan's native
    client is process-wide and reads TITAN_AGENT_SOCKET once."""
    import titan.client as tc
    with tempfile.TemporaryDirectory(prefix="titan-pybench-") as d:
        proc = None
        if setup == "live":
            proc, path = start_dump(args.dump, d)
        else:
            path = os.path.join(d, "nobody.sock")
        os.environ["TITAN_AGENT_SOCKET"] = path
        pure, state = make_pure_python_step_begin(path)
        label = "live receiver" if setup == "live" else "agent down"
        p50s = []
        for name, fn, dropped in (("titan.client.step_begin", tc.step_begin, tc.dropped),
                                  ("pure Python sendto", pure, lambda: state["dropped"])):
            before = dropped()
            p50, p99, mean = timed_calls(fn, args.calls)
            p50s.append(p50)
            print(f"{label:<16}{name:<26}{p50:>8.2f}{p99:>8.2f}{mean:>9.2f}"
                  f"{dropped() - before:>9}", flush=True)
        print(f"{label:<16}ratio titan / pure Python, p50: {p50s[0] / p50s[1]:.2f}", flush=True)
        if proc:
            proc.send_signal(signal.SIGTERM)
            proc.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dump", required=True, help="path of the titan_event_dump binary")
    ap.add_argument("--calls", type=int, default=200_000)
    ap.add_argument("--setup", choices=["live", "down"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.setup:
        run_setup(args.setup, args)
        return
    clock_pair = timed_calls(lambda i: None, args.calls)
    print(f"clock pair + empty Python call (included in every p50/p99): {clock_pair[0]:.2f} us")
    print(f"{'setup':<16}{'client':<26}{'p50 us':>8}{'p99 us':>8}{'mean us':>9}{'dropped':>9}",
          flush=True)
    for setup in ("live", "down"):
        subprocess.run([sys.executable, __file__, "--dump", args.dump, "--calls",
                        str(args.calls), "--setup", setup], check=True)


if __name__ == "__main__":
    main()
