# The seed document's detect_straggler() pseudocode, called once per new sample (what a user
# would run per step): np.mean / np.std over step_times[-100:].
import time, numpy as np
rng = np.random.default_rng(42)
samples = rng.normal(100, 5, 20000)
step_times, hits = [], 0
t0 = time.process_time()
for x in samples:
    step_times.append(x)
    window = step_times[-100:]
    mean, std = np.mean(window), np.std(window)
    if step_times[-1] > mean + 3 * std:
        hits += 1
dt = time.process_time() - t0
print(f"numpy seed pseudocode: {dt / len(samples) * 1e9:.0f} ns/sample, {len(samples) / dt / 1e3:.1f} k samples/s")
