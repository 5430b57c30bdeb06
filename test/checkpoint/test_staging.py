"""The GPU path of titan.checkpoint.save() (python/titan/_staging.py), with real saves to disk.

No GPU can run here (Debian's CPU-only PyTorch), so the device seam is replaced by FakeGpu: its
"device" tensors are CPU tensors registered with to_device(), its pinned memory is ordinary
memory filled with 0xAB, and its copies run only when the event recorded after them is
synchronized, as an asynchronous device-to-host copy completes only then. Everything else is
real: the native writer, files on disk, load and verify. bench/gpu_check.sh measures the real
CUDA implementation (CudaDevice) on a GPU.

Each test names the broken logic it catches (checked by making that change to _staging.py or
checkpoint.py and watching the test fail).
"""
import os
import shutil
import tempfile
import threading
import time
import unittest

import torch

import titan.checkpoint as ck


def _storage_ptr(t):
    storage = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    return storage.data_ptr()


class FakeStream:
    def __init__(self):
        self.pending = []  # (dst, src) copies not yet made


class FakeEvent:
    def __init__(self, stream):
        self.stream = stream

    def synchronize(self):
        for dst, src in self.stream.pending:
            dst.copy_(src)
        self.stream.pending.clear()


class FakeGpu:
    """Stands in for _staging.CudaDevice (the seam), because no GPU can run here."""

    def __init__(self):
        self.device_storages = set()
        self.allocations = []  # bytes of each pinned_empty() call
        self.device_bytes = 0  # bytes copied with copy_async()

    def to_device(self, t):
        """`t` (a fresh copy) as a tensor of this device."""
        t = t.clone()
        self.device_storages.add(_storage_ptr(t))
        return t

    def owns(self, t):
        return t.numel() > 0 and _storage_ptr(t) in self.device_storages

    def pinned_empty(self, nbytes):
        self.allocations.append(nbytes)
        return torch.full((nbytes,), 0xAB, dtype=torch.uint8)

    def stream(self, device):
        return FakeStream()

    def copy_async(self, stream, dst, src):
        self.device_bytes += src.numel() * src.element_size()
        stream.pending.append((dst, src))

    def event(self, stream):
        return FakeEvent(stream)


class GatedWriter:
    """The real native writer, except that a synchronous save (the GPU path's background
    write) first waits for `gate`: it stays in flight for as long as a test keeps the gate
    closed. Records (step, native async flag) of every save."""

    def __init__(self, key):
        self.real = ck._native.checkpoint.Writer(*key)
        self.gate = threading.Event()
        self.gate.set()
        self.calls = []

    def save(self, step, tensors, rank, world_size, save_id, async_, *rest):
        self.calls.append((step, async_))
        if not async_:
            self.gate.wait(60)
        self.real.save(step, tensors, rank, world_size, save_id, async_, *rest)

    def __getattr__(self, name):
        return getattr(self.real, name)


def sample_values():
    """A state of CPU tensors covering every dtype and the awkward shapes."""
    g = torch.Generator().manual_seed(7)
    return {
        "model": {
            "w": torch.randn(300, 257, generator=g),
            "bf16": torch.randn(1001, generator=g).to(torch.bfloat16),
            "f16": torch.randn(17, 3, generator=g).to(torch.float16),
            "i8": torch.arange(-3, 4, dtype=torch.int8),  # 7 bytes: the next copy is aligned
            "f64": torch.randn(5, generator=g, dtype=torch.float64),
            "transposed": torch.randn(64, 48, generator=g).t(),  # not contiguous
        },
        "opt": {
            "step": torch.tensor(12345, dtype=torch.int64),  # 0-d
            "mask": torch.rand(999, generator=g) > 0.5,
            "i16": torch.arange(11, dtype=torch.int16),
            "i32": torch.arange(13, dtype=torch.int32),
            "u8": torch.arange(200, dtype=torch.uint8),
            "c64": torch.randn(9, generator=g, dtype=torch.complex64),
            "c128": torch.randn(4, generator=g, dtype=torch.complex128),
        },
        "special": torch.tensor([float("nan"), -0.0, float("inf"), -float("inf")]),
        "empty": torch.empty(0, 5),
        "shard": ck.Shard(torch.randn(10, 4, generator=g), [10, 4], [0, 0]),  # all of it
        "counter": 3,
    }


def map_tensors(obj, fn):
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, ck.Shard):
        return ck.Shard(fn(obj.tensor), obj.global_shape, obj.offsets)
    if isinstance(obj, dict):
        return {k: map_tensors(v, fn) for k, v in obj.items()}
    return obj


def flat_tensors(obj, path=""):
    if isinstance(obj, ck.Shard):
        obj = obj.tensor
    if isinstance(obj, torch.Tensor):
        return [(path, obj)]
    if isinstance(obj, dict):
        return [x for k, v in obj.items() for x in flat_tensors(v, f"{path}/{k}")]
    return []


def as_bytes(t):
    """The tensor's bytes in row-major order (NaN payloads and -0.0 included)."""
    t = t.detach().contiguous().reshape(-1)
    if t.dtype == torch.bool:
        t = t.view(torch.uint8)
    return bytes(t.view(torch.uint8).numpy()) if t.numel() else b""


def nbytes(state):
    return sum(t.numel() * t.element_size() for _, t in flat_tensors(state))


class StagingTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="titan_ckpt_staging_")
        self.gpu = FakeGpu()
        ck._staging_device = self.gpu

    def tearDown(self):
        try:
            ck.wait()
        except ck.CheckpointError:
            pass
        ck._staging_device = None
        for key in [k for k in ck._writers if k[0].startswith(self.tmp)]:
            del ck._writers[key]
            ck._lanes.pop(key, None)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def dir(self, name):
        return os.path.join(self.tmp, name)

    def gated(self, d):
        key = ck._writer_key(d)
        ck._writers[key] = GatedWriter(key)
        return ck._writers[key]

    def on_gpu(self, state, keep_on_cpu=()):
        return map_tensors(state, lambda t: t if any(t is c for c in keep_on_cpu)
                           else self.gpu.to_device(t))

    def data_file(self, d, step):
        step_dir = os.path.join(d, f"step_{step:010d}")
        (name,) = [f for f in os.listdir(step_dir) if f.endswith(".data")]
        with open(os.path.join(step_dir, name), "rb") as f:
            return f.read()

    def assert_holds(self, d, step, expected):
        """Checkpoint `step` in `d` verifies and loads back `expected`'s bytes."""
        path = os.path.join(d, f"step_{step:010d}")
        self.assertEqual(ck.verify(path), [])
        target = map_tensors(expected, lambda t: torch.zeros(t.shape, dtype=t.dtype))
        ck.load(path, target)
        got = dict(flat_tensors(target))
        for name, t in flat_tensors(expected):
            self.assertEqual(as_bytes(got[name]), as_bytes(t), f"step {step}: {name}")

    def test_bytes_on_disk_are_those_of_the_cpu_path(self):
        """Catches: a copy handed to the writer before its event synchronized (0xAB bytes on
        disk), a wrong slot offset or alignment, a non-contiguous tensor copied in storage
        order."""
        values = sample_values()
        ck.save(values, 1, dir=self.dir("cpu"), incremental=False, async_=False)
        self.assertEqual(self.gpu.allocations, [])  # no device tensor: the CPU path
        for async_ in (True, False):
            d = self.dir(f"gpu-async-{async_}")
            mixed = self.on_gpu(values, keep_on_cpu=[values["model"]["i8"]])
            ck.save(mixed, 1, dir=d, incremental=False, async_=async_)
            ck.wait()
            self.assertEqual(self.data_file(d, 1), self.data_file(self.dir("cpu"), 1))
            self.assert_holds(d, 1, values)
        self.assertGreater(self.gpu.device_bytes, 0)

    def test_staging_memory_is_reused_across_saves(self):
        """Catches: a pinned block allocated per save, or one shrunk for a smaller state."""
        d = self.dir("reuse")
        state = {"w": self.gpu.to_device(torch.zeros(1 << 18)),
                 "step": self.gpu.to_device(torch.tensor(0))}
        for step in range(1, 4):
            state["w"].fill_(step)
            state["step"].fill_(step)
            ck.save(state, step, dir=d)
        ck.wait()
        self.assertEqual(len(self.gpu.allocations), 1)
        for step in range(1, 4):
            self.assert_holds(d, step, {"w": torch.full([1 << 18], float(step)),
                                        "step": torch.tensor(step)})
        bigger = dict(state, extra=self.gpu.to_device(torch.ones(1 << 16)))
        ck.save(bigger, 4, dir=d)
        ck.save(state, 5, dir=d)
        ck.save(state, 6, dir=d)
        ck.wait()
        self.assertEqual(len(self.gpu.allocations), 2)
        self.assertGreater(self.gpu.allocations[1], self.gpu.allocations[0])

    def test_a_save_in_flight_keeps_its_staging_memory(self):
        """Catches: the next save staging before the previous one's write has ended (no
        drain before staging: PinnedArena.acquire() refuses; without that guard as well, step 1
        holds step 2's values)."""
        d = self.dir("in-flight")
        writer = self.gated(d)
        w = self.gpu.to_device(torch.full([1 << 16], 1.0))
        writer.gate.clear()
        ck.save({"w": w}, 1, dir=d)  # staged; its write waits for the gate
        w.fill_(2.0)  # the next training step
        threading.Timer(0.3, writer.gate.set).start()
        start = time.monotonic()
        ck.save({"w": w}, 2, dir=d)
        waited = time.monotonic() - start
        ck.wait()
        self.assert_holds(d, 1, {"w": torch.full([1 << 16], 1.0)})
        self.assert_holds(d, 2, {"w": torch.full([1 << 16], 2.0)})
        self.assertGreater(waited, 0.2)  # save 2 waited for step 1's write
        self.assertEqual(len(self.gpu.allocations), 1)

    def test_cpu_tensors_of_a_gpu_state_are_copied_before_save_returns(self):
        """Catches: CPU tensors of a state with CUDA tensors handed to the background write
        zero-copy (the caller changes them while the write reads them)."""
        d = self.dir("mixed")
        writer = self.gated(d)
        cpu = torch.full([4096], 1.0)
        writer.gate.clear()
        ck.save({"gpu": self.gpu.to_device(torch.ones(8)), "cpu": cpu}, 1, dir=d)
        cpu.fill_(2.0)
        writer.gate.set()
        ck.wait()
        self.assert_holds(d, 1, {"gpu": torch.ones(8), "cpu": torch.full([4096], 1.0)})

    def test_a_state_without_device_tensors_takes_the_native_async_path(self):
        """Catches: CPU-only states routed through the pinned staging (a behaviour change of
        the CPU path)."""
        d = self.dir("cpu-only")
        writer = self.gated(d)
        ck.save({"w": torch.ones(1000)}, 1, dir=d)
        ck.save({"w": self.gpu.to_device(torch.ones(1000))}, 2, dir=d)
        ck.wait()
        self.assertEqual(writer.calls, [(1, True), (2, False)])
        self.assertEqual(len(self.gpu.allocations), 1)

    def test_stats_report_the_copy_and_not_the_background_write(self):
        """Catches: last_stats() passing on the native stats of the GPU path's synchronous
        write (blocking_s would include the 0.5 s the write is held; staged_bytes 0) or
        lacking d2h_s."""
        d = self.dir("stats")
        writer = self.gated(d)
        state = {"w": self.gpu.to_device(torch.ones(1 << 18)),
                 "b": self.gpu.to_device(torch.ones(7, dtype=torch.int16))}
        writer.gate.clear()
        threading.Timer(0.5, writer.gate.set).start()
        ck.save(state, 1, dir=d)
        ck.wait()
        st = ck.last_stats()
        self.assertLess(st["blocking_s"], 0.4)
        self.assertGreater(st["d2h_s"], 0.0)
        self.assertLessEqual(st["d2h_s"], st["blocking_s"])
        self.assertEqual(st["staged_bytes"], nbytes(state))
        self.assertEqual(st["written_bytes"], nbytes(state))
        self.assertTrue(st["committed"])
        self.assertGreater(st["write_s"], 0.0)
        ck.save({"w": torch.ones(10)}, 2, dir=d)
        ck.wait()
        self.assertEqual(ck.last_stats()["d2h_s"], 0.0)  # the CPU path: no device copy
        self.assertEqual(ck.last_stats()["staged_bytes"], 40)

    def test_a_failed_background_write_is_raised_and_frees_the_staging(self):
        """Catches: an error of the background write lost (wait() returns normally), or the
        staging memory left held after it (every later save fails)."""
        d = self.dir("failed")
        state = {"w": self.gpu.to_device(torch.ones(100))}
        too_big = 10 ** 18  # over the largest step: refused by the native writer
        ck.save(state, too_big, dir=d)  # refused in the background
        with self.assertRaisesRegex(ck.CheckpointError, "larger than the largest"):
            ck.wait()
        ck.save(state, too_big, dir=d)
        with self.assertRaisesRegex(ck.CheckpointError,
                                    "the previous checkpoint save failed: .*larger"):
            ck.save(state, 2, dir=d)
        ck.save(state, 3, dir=d)
        ck.wait()
        self.assertEqual(ck.latest_step(d), 3)
        self.assertEqual(len(self.gpu.allocations), 1)


if __name__ == "__main__":
    unittest.main()
