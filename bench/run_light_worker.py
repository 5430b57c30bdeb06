#!/usr/bin/env python3
"""A light worker for `titan run` benchmarks: no PyTorch (starts in ~0.1 s), steps of --step-ms
milliseconds with titan.client step events (the first 80% "compute", marked with
client.mark("compute") as a training step marks its local compute before its collectives),
until --seconds have passed in total across restarts (a marker file in $TITAN_CHECKPOINT_DIR
keeps the start time)."""
import argparse
import os
import time

import titan.client as client

p = argparse.ArgumentParser()
p.add_argument("--step-ms", type=float, default=50)
p.add_argument("--seconds", type=float, default=30)
a = p.parse_args()
client.init()
mark = os.path.join(os.environ.get("TITAN_CHECKPOINT_DIR", "/tmp"), "start")
if int(os.environ.get("RANK", "0")) == 0 and not os.path.exists(mark):
    with open(mark, "w") as f:
        f.write(str(time.time()))
while not os.path.exists(mark):
    time.sleep(0.01)
start = float(open(mark).read() or time.time())
step = 0
while time.time() - start < a.seconds:
    client.step_begin(step)
    time.sleep(0.8 * a.step_ms / 1000)
    client.mark("compute")
    time.sleep(0.2 * a.step_ms / 1000)
    client.step_end(step)
    step += 1
