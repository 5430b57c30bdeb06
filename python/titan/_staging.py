"""titan._staging: the GPU path of titan.checkpoint.save() (docs/checkpoint.md, "GPU tensors").

A save whose state holds a CUDA tensor copies every tensor of the state into one block of
page-locked ("pinned") host memory, reused across saves: CUDA tensors with asynchronous
device-to-host copies on a side stream per device, which first waits for the work already
queued on that device's current stream (so the copy reads the values save() was called with);
other tensors with an ordinary host copy. save() blocks until those copies are complete (one
event per side stream), then hands the pinned bytes to the native writer, which writes them
from a background thread (Lane). A state without CUDA tensors never comes here.

Ownership of the pinned block (why it can be reused): the native writer reads a tensor's bytes
until its Save() returns (TensorToSave::data, src/checkpoint/writer.h: "valid until Save
returns"). The GPU path calls the native Save with async_=False from the lane's thread, so the
block belongs to that save from stage() until that call returns, and Lane.drain(), which joins
the thread, is the only place that gives it back. checkpoint.save() drains a writer's lane
before staging the next save, so a save in flight is never overwritten; PinnedArena.acquire()
refuses a block still held, as a second line of defence.

Device operations go through a small seam (CudaDevice) so that the tests can run this logic
without a GPU (test/checkpoint/test_staging.py has the double).

Thread safety: a Lane, its arena and a CudaDevice are used from the saving thread only (the one
that calls checkpoint.save/wait, like the native writer); the lane's background thread runs
only the write it was handed and stores its error.
"""
import threading
import time

import torch

_ALIGN = 64  # bytes; each tensor's copy starts on a cache line (and is aligned for any dtype)


class CudaDevice:
    """The seam's real implementation: CUDA side streams, events and pinned host memory."""

    def __init__(self):
        self._streams = {}  # torch.device -> torch.cuda.Stream, one side stream per device

    def owns(self, t):
        """True for tensors that the GPU path copies with copy_async()."""
        return t.is_cuda

    def pinned_empty(self, nbytes):
        """`nbytes` bytes of page-locked host memory (uint8), the target of the copies."""
        return torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)

    def stream(self, device):
        """The side stream of `device`, made to wait for everything queued so far on the
        device's current stream: copies enqueued on it read the values as of this call."""
        s = self._streams.get(device)
        if s is None:
            s = self._streams[device] = torch.cuda.Stream(device=device)
        s.wait_stream(torch.cuda.current_stream(device))
        return s

    def copy_async(self, stream, dst, src):
        """Enqueues dst.copy_(src) on `stream`; dst is pinned host memory, src a CUDA tensor.
        Neither may be freed or reused before the event recorded after it has completed."""
        with torch.cuda.stream(stream):
            dst.copy_(src, non_blocking=True)

    def event(self, stream):
        """An event recorded on `stream` now; its synchronize() returns once every copy
        enqueued on the stream before it is complete."""
        e = torch.cuda.Event()
        e.record(stream)
        return e


class PinnedArena:
    """One block of pinned host memory reused across saves: allocated at the size of the
    first save, reallocated when a save needs more (never shrunk).

    Ownership: the block belongs to the caller from acquire() to release(); acquire() while it
    is held raises instead of handing out bytes a save in flight still reads."""

    def __init__(self, device):
        self._device = device
        self._block = None
        self._held = False

    def acquire(self, nbytes):
        """The block (a uint8 tensor of at least `nbytes` bytes), held until release()."""
        if self._held:
            raise RuntimeError("titan.checkpoint: the staging memory is still read by a save "
                               "in flight (release it first)")
        if self._block is None or self._block.numel() < nbytes:
            self._block = None  # the old block goes before the new one is allocated
            self._block = self._device.pinned_empty(nbytes)
        self._held = True
        return self._block

    def release(self):
        self._held = False


def _layout(tensors):
    """(offset, nbytes) of each tensor's copy in the block, and the block size (bytes)."""
    slots, end = [], 0
    for t in tensors:
        nbytes = t.numel() * t.element_size()
        slots.append((end, nbytes))
        end += -(-nbytes // _ALIGN) * _ALIGN
    return slots, end


def _copy_into(block, slots, tensors, device):
    """Enqueues or makes the copy of each tensor into its slot; returns one event per side
    stream used (the device copies are complete once they have all synchronized)."""
    streams = {}
    for (offset, nbytes), t in zip(slots, tensors):
        if nbytes == 0:
            continue
        dst = block[offset:offset + nbytes].view(t.dtype).view(t.shape)
        if device.owns(t):
            s = streams.get(t.device)
            if s is None:
                s = streams[t.device] = device.stream(t.device)
            device.copy_async(s, dst, t.detach())
        else:
            dst.copy_(t.detach())  # a CPU tensor (or another device's): copied now
    return [device.event(s) for s in streams.values()]


class Lane:
    """The GPU path's saves through one native writer: its pinned staging memory and the
    background thread that writes from it. One save at a time: stage(), hand_over(), and
    (async) drain() before the next stage()."""

    def __init__(self, device):
        self._device = device
        self._arena = PinnedArena(device)
        self._thread = None
        self._error = None

    def stage(self, tensors):
        """Copies `tensors` into the pinned block and blocks until the copies are complete.

        Returns (hosts, seconds): per tensor, a contiguous uint8 CPU tensor holding its bytes
        (row-major, as the CPU path's .contiguous() gives them), and the time spent copying.
        The block stays held, and `hosts` unchanged, until the write handed over ends."""
        slots, total = _layout(tensors)
        block = self._arena.acquire(total)
        try:
            start = time.monotonic()
            for event in _copy_into(block, slots, tensors, self._device):
                event.synchronize()
            seconds = time.monotonic() - start
        except BaseException:
            self._arena.release()
            raise
        return [block[offset:offset + nbytes] for offset, nbytes in slots], seconds

    def hand_over(self, write, background):
        """Runs `write` (the native save, which reads the staged bytes until it returns) in
        the lane's thread (background=True; its error is raised by drain()) or here (its error
        is raised now). The staging memory is released once `write` has returned and, in the
        background case, drain() has joined the thread."""
        if not background:
            try:
                write()
            finally:
                self._arena.release()
            return

        def run():
            try:
                write()
            except Exception as e:  # raised by the next drain(), in the saving thread
                self._error = e

        self._thread = threading.Thread(target=run, name="titan-ckpt-staged")
        try:
            self._thread.start()
        except BaseException:
            self._thread = None
            self._arena.release()
            raise

    def drain(self):
        """Waits for the background write, if any, and releases the staging memory; raises
        that write's error (once)."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None
            self._arena.release()
        error, self._error = self._error, None
        if error is not None:
            raise error
