"""titan.checkpoint: sharded, asynchronous, incremental, verified checkpoints for PyTorch.

API (stable; `titan run` and its demo script code against these exact signatures):

    save(state, step, async_=True, *, dir=None, keep_last=None, keep_every=None,
         incremental=True, group=None, layout=None, commit_timeout_s=1800.0,
         chunk_bytes=8 << 20, metadata=None, mirror=None, node_local=None) -> None
        Saves `state` as checkpoint `step` under `dir`. Every rank of the job calls it with the
        same step. Returns once the state is copied to host staging memory (async_=True) or
        once the checkpoint is committed (async_=False). A save waits first for the previous
        one if that is still in flight. Errors of an async save are raised by the next wait()
        or save(). `dir` defaults to the directory given to configure(), else the
        TITAN_CHECKPOINT_DIR environment variable, else the directory of the last
        load()/load_latest(). Retention (rank 0, after commit): keep the newest `keep_last`
        checkpoints plus every step that is a multiple of `keep_every` (None: keep all).
        `metadata` (JSON-able) is shown by `titan ckpt inspect`. Raises CheckpointError.

    wait(durable=False) -> int | None
        Blocks until this process's in-flight save is durable (rank 0: committed, i.e. the
        manifest is written, fsynced, renamed, and "latest" points to it). Raises the save's
        error, if any. Call before exiting. With durable=True it also waits for the copy to the
        mirror (below) and returns the newest step copied there.

    Tiering: save(..., mirror="s3://bucket/prefix") (or configure(mirror=), or
        TITAN_CHECKPOINT_MIRROR) saves to `dir` as always, then rank 0 copies each committed
        checkpoint to the mirror in the background (every chunk checked; only what changed is
        uploaded) and marks it DURABLE in `dir`. load_latest(dir, ..., mirror=...) loads from
        `dir` when it holds the newest checkpoint and it loads, else from the mirror.
        Under `titan run --checkpoint-mirror`, titan run copies the mirror's newest checkpoint
        into `dir` while the workers start (prefetch); load_latest first waits for that copy
        (at most TITAN_CHECKPOINT_PREFETCH_WAIT seconds, default 600), then reads local files.

    Node-local directories: save(..., mirror="s3://...", node_local=True) (or configure(),
        or TITAN_CHECKPOINT_NODE_LOCAL=1, which `titan run --checkpoint-node-local` sets) when
        `dir` is each node's own disk, not shared. Every rank writes its data to `dir`,
        uploads it to the mirror and leaves its done marker there; rank 0 commits at the
        mirror, so a committed checkpoint is already durable. `dir` keeps the data files as
        a cache (each rank prunes its own beyond keep_last, or 2), and load_latest reads the
        mirror's checkpoint taking every data file `dir` holds whole from `dir`. titan run
        prefetches, on every node, the files that node's ranks wrote.

    load_latest(dir, state, *, fallback=True, group=None, mirror=None) -> int | None
        Restores `state` in place from the newest committed checkpoint in `dir` and returns
        its step, or None when `dir` holds no committed checkpoint. With fallback=True a
        checkpoint that fails verification (checksum mismatch, missing file) is skipped with
        a warning and the next older one is tried.

    load(path, state, *, group=None) -> int
        Restores `state` in place from the checkpoint directory `path` (DIR/step_NNNNNNNNNN)
        and returns its step.

    configure(dir=None, **save_defaults) -> None
        Sets the default directory and default keyword arguments of save().

    latest_step(dir) -> int | None, list_steps(dir) -> list[int]
    verify(path) -> list[str]          every chunk's checksum; [] when intact
    last_stats() -> dict | None        bytes staged/written/referenced, blocking_s, d2h_s, write_s
    last_load_stats() -> dict | None   step, from, bytes_read, files_from_cache of the last load

What `state` may hold (a dict, nested freely):
    * objects with state_dict()/load_state_dict(): nn.Module, optim.Optimizer, LR schedulers,
      data-loader samplers, RNGState() ... restored in place through load_state_dict();
    * torch.Tensor (CPU or CUDA; a state with CUDA tensors is copied into reused pinned host
      memory on a side stream, see _staging.py) - replicated on every rank (plain data
      parallel): written once in total, the writing spread across ranks;
    * Shard(tensor, global_shape, offsets): this rank's slice of a larger tensor (ZeRO /
      tensor parallel). On load, the slice described by the Shard is read, whatever world
      size or sharding the checkpoint was saved with;
    * anything else (ints, floats, strings, lists, dicts, numpy arrays, RNG tuples): stored in
      the manifest (JSON when possible, else pickle) and restored by assignment.

    RNGState(): put it in `state` (e.g. state["rng"] = RNGState()) to save and restore the
    torch, python `random` and numpy global generators.

torch.distributed helpers: rank(group=None), world_size(group=None). When torch.distributed
is initialised, rank/world size come from `group` (default: the world group); otherwise this
process is rank 0 of 1. Commit coordination goes through the file system (each rank writes a
"done" marker with its chunk list; rank 0 merges them into the manifest), so no collective is
issued from the background thread.
"""
import atexit
import base64
import fcntl
import json
import math
import operator
import os
import pickle
import random
import secrets
import sys
import time
import warnings

import numpy as np
import torch

from titan import _staging
from titan import _titan as _native

__all__ = [
    "save", "wait", "load", "load_latest", "configure", "latest_step", "list_steps", "verify",
    "Shard", "RNGState", "rank", "world_size", "last_stats", "last_load_stats",
    "CheckpointError", "interval",
]

_ = _native.checkpoint  # fail early if the extension was built without the checkpoint engine


class CheckpointError(RuntimeError):
    """A checkpoint could not be saved or loaded (the message says where and why)."""


class Shard:
    """This rank's slice of a larger ("global") tensor, for sharded state (ZeRO, tensor parallel).

    tensor: the local slice, laid out like the global tensor (same number of dimensions);
    global_shape: the full tensor's shape; offsets: where the slice starts in each dimension.
    On save the slice is written by this rank; on load the slice is filled in place from
    whatever slices the checkpoint holds (any world size, any sharding).
    """

    def __init__(self, tensor, global_shape, offsets):
        if len(global_shape) != tensor.dim() or len(offsets) != tensor.dim():
            raise ValueError("Shard: global_shape and offsets need one entry per dimension")
        self.tensor = tensor
        self.global_shape = [int(x) for x in global_shape]
        self.offsets = [int(x) for x in offsets]

    @staticmethod
    def of(full_shape, rank, world_size, dim=0, dtype=torch.float32):
        """An empty Shard holding rows [r*n/w, (r+1)*n/w) of `dim` (for loading)."""
        n = full_shape[dim]
        begin, end = n * rank // world_size, n * (rank + 1) // world_size
        shape = list(full_shape)
        shape[dim] = end - begin
        offsets = [0] * len(full_shape)
        offsets[dim] = begin
        return Shard(torch.empty(shape, dtype=dtype), full_shape, offsets)


class RNGState:
    """Put one in the state (state["rng"] = RNGState()) to save and restore this process's
    torch (CPU and, if present, CUDA), python `random` and numpy global generators."""

    def state_dict(self):
        d = {
            "torch": bytes(torch.get_rng_state().numpy().tobytes()),
            "python": random.getstate(),
            "numpy": np.random.get_state(),
        }
        if torch.cuda.is_available():
            d["cuda"] = [bytes(s.numpy().tobytes()) for s in torch.cuda.get_rng_state_all()]
        return d

    def load_state_dict(self, d):
        torch.set_rng_state(torch.frombuffer(bytearray(d["torch"]), dtype=torch.uint8))
        random.setstate(d["python"])
        np.random.set_state(d["numpy"])
        if "cuda" in d and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(
                [torch.frombuffer(bytearray(s), dtype=torch.uint8) for s in d["cuda"]])


# ---------------------------------------------------------------- torch.distributed helpers

def _dist():
    import torch.distributed as dist
    return dist if dist.is_available() and dist.is_initialized() else None


def rank(group=None):
    dist = _dist()
    return dist.get_rank(group) if dist else 0


def world_size(group=None):
    dist = _dist()
    return dist.get_world_size(group) if dist else 1


def _broadcast_save_id(group):
    save_id = secrets.token_hex(6)
    dist = _dist()
    if dist and dist.get_world_size(group) > 1:
        box = [save_id]
        src = dist.get_global_rank(group, 0) if group is not None else 0
        dist.broadcast_object_list(box, src=src, group=group)
        save_id = box[0]
    return save_id


def _all_ok(ok, group):
    """True iff `ok` on every rank (so that all ranks fall back together)."""
    dist = _dist()
    if not dist or dist.get_world_size(group) == 1:
        return ok
    flag = torch.tensor([0 if ok else 1], dtype=torch.int32)
    dist.all_reduce(flag, op=dist.ReduceOp.MAX, group=group)
    return int(flag.item()) == 0


# ---------------------------------------------------------------- state flattening

_DTYPES = {
    torch.float32: "float32", torch.float64: "float64", torch.float16: "float16",
    torch.bfloat16: "bfloat16", torch.int8: "int8", torch.uint8: "uint8", torch.int16: "int16",
    torch.int32: "int32", torch.int64: "int64", torch.bool: "bool",
    torch.complex64: "complex64", torch.complex128: "complex128",
}
_TORCH_DTYPES = {v: k for k, v in _DTYPES.items()}


def _byte_view(t):
    """A uint8 numpy array sharing the memory of contiguous CPU tensor `t` (no copy)."""
    flat = t.detach().reshape(-1)
    if flat.dtype == torch.bool:
        flat = flat.view(torch.uint8)
    if flat.numel() == 0:
        return np.zeros(0, dtype=np.uint8)
    return flat.view(torch.uint8).numpy()


def _host(t):
    """The CPU path: `t` as a contiguous CPU tensor (sharing its memory when it is one)."""
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    return t.contiguous()


def _is_json_scalar(v):
    if v is None or isinstance(v, (bool, int, str)):
        return True
    return isinstance(v, float) and math.isfinite(v)


class _Flattener:
    def __init__(self):
        self.tensors = []  # (name, dtype, shape, offsets, lengths, replicated); see entries()
        self.sources = []  # the tensor of each entry, as found in the state
        self.names = set()

    def _name(self, path):
        name = "/".join(str(p) for p in path) or "_"
        base, n = name, 1
        while name in self.names:
            n += 1
            name = f"{base}#{n}"
        self.names.add(name)
        return name

    def _tensor(self, t, path, shard=None):
        if t.dtype not in _DTYPES:
            raise TypeError(f"titan.checkpoint: tensor {'/'.join(map(str, path))} has "
                            f"unsupported dtype {t.dtype}")
        name = self._name(path)
        shape = list(t.shape)
        self.sources.append(t)
        if shard is None:
            self.tensors.append((name, _DTYPES[t.dtype], shape, [0] * len(shape), shape, True))
            return {"__t__": name}
        self.tensors.append((name, _DTYPES[t.dtype], shard.global_shape, shard.offsets, shape,
                             False))
        return {"__shard__": name}

    def entries(self, hosts):
        """The native writer's tensor list: each entry with the bytes of its host copy
        `hosts[i]` (a contiguous CPU tensor that the caller keeps alive while the writer reads
        it)."""
        return [e + (_byte_view(h),) for e, h in zip(self.tensors, hosts)]

    def flatten(self, obj, path):
        if isinstance(obj, torch.Tensor):
            return self._tensor(obj, path)
        if isinstance(obj, Shard):
            return self._tensor(obj.tensor, path, shard=obj)
        if hasattr(obj, "state_dict") and hasattr(obj, "load_state_dict") and \
                not isinstance(obj, type):
            return {"__sd__": self.flatten(obj.state_dict(), path)}
        if isinstance(obj, dict):
            return {"__dict__": [[k if _is_json_scalar(k) else {"__pickle__": _pickle(k)},
                                  self.flatten(v, path + [k])] for k, v in obj.items()]}
        if isinstance(obj, (list, tuple)) and not _plain(obj):
            kind = "__list__" if isinstance(obj, list) else "__tuple__"
            return {kind: [self.flatten(v, path + [i]) for i, v in enumerate(obj)]}
        if _is_json_scalar(obj):
            return {"__v__": obj}
        if isinstance(obj, list) and _plain(obj):
            return {"__v__": obj}
        return {"__pickle__": _pickle(obj)}


def _plain(seq):
    return isinstance(seq, list) and all(_is_json_scalar(v) for v in seq)


def _pickle(obj):
    return base64.b64encode(pickle.dumps(obj, protocol=4)).decode("ascii")


def _unpickle(text):
    return pickle.loads(base64.b64decode(text))


class _Restorer:
    def __init__(self, reader, where):
        self.reader = reader
        self.where = where
        self.infos = reader.tensors()

    def _read_into(self, name, dst, offsets, lengths):
        """Reads a slice into tensor `dst` in place (directly into its memory when possible)."""
        if dst.is_meta:  # copy_ into it does nothing: the load would silently keep no values
            raise CheckpointError(
                f"{self.where}: tensor {name} would be loaded into a tensor on the meta device, "
                f"which has no memory; materialise it first (module.to_empty(device=...)) or "
                f"load into a state without it")
        if dst.device.type == "cpu" and dst.is_contiguous():
            self.reader.read_slice(name, offsets, lengths, _byte_view(dst))
        else:
            tmp = torch.empty(list(dst.shape), dtype=dst.dtype)
            self.reader.read_slice(name, offsets, lengths, _byte_view(tmp))
            with torch.no_grad():
                dst.copy_(tmp)

    def tensor(self, name, current):
        dtype, shape = self.infos[name]
        if isinstance(current, Shard):
            if _DTYPES.get(current.tensor.dtype) != dtype or current.global_shape != list(shape):
                raise CheckpointError(
                    f"{self.where}: tensor {name} is {dtype}{list(shape)} but the Shard asks "
                    f"for {current.tensor.dtype}{current.global_shape}")
            self._read_into(name, current.tensor, current.offsets, list(current.tensor.shape))
            return current
        if isinstance(current, torch.Tensor) and list(current.shape) == list(shape) and \
                _DTYPES.get(current.dtype) == dtype:
            self._read_into(name, current, [0] * len(shape), list(shape))
            return current
        fresh = torch.empty(list(shape), dtype=_TORCH_DTYPES[dtype])
        self._read_into(name, fresh, [0] * len(shape), list(shape))
        return fresh

    def build(self, skel, current, path="state"):
        """The value saved as `skel`, read into `current` (the caller's object at `path`)
        where it fits. A dict of the caller's with keys the checkpoint does not hold is an
        error: its values would otherwise be silently dropped."""
        if "__t__" in skel:
            return self.tensor(skel["__t__"], current)
        if "__shard__" in skel:
            return self.tensor(skel["__shard__"], current)
        if "__v__" in skel:
            return skel["__v__"]
        if "__pickle__" in skel:
            return _unpickle(skel["__pickle__"])
        if "__sd__" in skel:
            if current is not None and hasattr(current, "load_state_dict"):
                current.load_state_dict(
                    self.build(skel["__sd__"], current.state_dict(), path + ".state_dict()"))
                return current
            return self.build(skel["__sd__"], None, path)
        if "__dict__" in skel:
            out = {}
            for key, sub in skel["__dict__"]:
                if isinstance(key, dict):
                    key = _unpickle(key["__pickle__"])
                cur = current.get(key) if isinstance(current, dict) else None
                out[key] = self.build(sub, cur, f"{path}[{key!r}]")
            if isinstance(current, dict):
                missing = [k for k in current if k not in out]
                if missing:
                    raise CheckpointError(
                        f"{self.where}: {path} has {', '.join(map(repr, missing))}, which the "
                        f"checkpoint does not hold (it holds {', '.join(map(repr, out))}); "
                        "remove them from the state to load it, or load a checkpoint that has "
                        "them")
            return out
        for kind, ctor in (("__list__", list), ("__tuple__", tuple)):
            if kind in skel:
                cur = current if isinstance(current, (list, tuple)) and \
                    len(current) == len(skel[kind]) else [None] * len(skel[kind])
                return ctor(self.build(s, c, f"{path}[{i}]")
                            for i, (s, c) in enumerate(zip(skel[kind], cur)))
        raise CheckpointError(f"{self.where}: unknown entry in the saved state: {list(skel)}")


# ---------------------------------------------------------------- module state

_defaults = {}
_default_dir = None
_default_mirror = None
_writers = {}
_last_writer = None
_lanes = {}               # writer key -> _staging.Lane: the GPU path's saves through that writer
_staging_device = None    # the GPU path's device seam (_staging.CudaDevice; a double in tests)
_last_staging = None      # stats of the last save if it took the GPU path (see last_stats())


def configure(dir=None, mirror=None, **save_defaults):
    """Sets the default directory, durable mirror and keyword arguments of save()."""
    global _default_dir, _default_mirror
    if dir is not None:
        _default_dir = os.fspath(dir)
    if mirror is not None:
        _default_mirror = os.fspath(mirror)
    _defaults.update(save_defaults)


def interval(own=None, default=None):
    """Seconds between checkpoints for this job. A script that chose its own keeps it: `own`
    wins when given. Otherwise the interval `titan run --risk` recommends from the failure risk
    of the job's nodes (Young/Daly with the job's MTBF; TITAN_CHECKPOINT_INTERVAL_S), else
    `default`. The channel only advises: titan never checkpoints on a script's behalf.

        every_s = titan.checkpoint.interval(args.ckpt_every_s, default=1800)
    """
    if own is not None:
        return float(own)
    value = os.environ.get("TITAN_CHECKPOINT_INTERVAL_S", "")
    try:
        seconds = float(value)
    except ValueError:
        return None if default is None else float(default)
    if not seconds > 0:
        return None if default is None else float(default)
    return seconds


def _location(dir):
    """A checkpoint location: an absolute directory, or an s3://bucket/prefix URL as given."""
    dir = os.fspath(dir)
    if dir.startswith("s3://"):
        return dir.rstrip("/")
    return os.path.abspath(dir)


def _writer_key(dir, mirror=None, node_local=False):
    return (_location(dir), _location(mirror) if mirror else "", bool(node_local))


def _writer(dir, mirror=None, node_local=False):
    key = _writer_key(dir, mirror, node_local)
    if key not in _writers:
        _writers[key] = _native.checkpoint.Writer(*key)
    return _writers[key]


def _drain(key):
    """Waits for the GPU path's save in flight through writer `key`, if any (its staging
    memory is then free); raises that save's error."""
    lane = _lanes.get(key)
    if lane is not None:
        lane.drain()


def _staging_lane(key, tensors):
    """The lane of writer `key` when `tensors` hold one on the GPU (the GPU path), else None
    (the CPU path, unchanged: zero-copy for CPU tensors, .cpu() for other devices)."""
    global _staging_device
    if _staging_device is None and any(t.is_cuda for t in tensors):
        _staging_device = _staging.CudaDevice()
    device = _staging_device
    if device is None or not any(device.owns(t) for t in tensors):
        return None
    if key not in _lanes:
        _lanes[key] = _staging.Lane(device)
    return _lanes[key]


def _resolve_mirror(mirror):
    mirror = mirror or _default_mirror or os.environ.get("TITAN_CHECKPOINT_MIRROR")
    return os.fspath(mirror) if mirror else None


def _resolve_node_local(node_local, opts):
    if node_local is None:
        node_local = opts.get("node_local")
    if node_local is None:
        node_local = os.environ.get("TITAN_CHECKPOINT_NODE_LOCAL", "") in ("1", "true", "yes")
    return bool(node_local)


def _resolve_dir(dir):
    dir = dir or _default_dir or os.environ.get("TITAN_CHECKPOINT_DIR")
    if not dir:
        raise ValueError("titan.checkpoint.save: no directory: pass dir=, call configure(dir=) "
                         "or set TITAN_CHECKPOINT_DIR")
    return os.fspath(dir)


def _native_error(e):
    if isinstance(e, CheckpointError):
        return e
    return CheckpointError(str(e))


def _previous_failed(e):
    """The error of a save() that found the previous async save failed (not started)."""
    return CheckpointError(f"the previous checkpoint save failed: {e}")


def _client_event(name, *args, **kwargs):
    try:
        from titan import client
        getattr(client, name)(*args, **kwargs)
    except Exception:  # the agent is optional; events never break a save
        pass


def save(state, step, async_=True, *, dir=None, keep_last=None, keep_every=None,
         incremental=True, group=None, layout=None, commit_timeout_s=1800.0,
         chunk_bytes=8 << 20, metadata=None, mirror=None, node_local=None):
    global _last_writer, _last_staging
    opts = dict(_defaults)
    keep_last = keep_last if keep_last is not None else opts.get("keep_last", 0)
    keep_every = keep_every if keep_every is not None else opts.get("keep_every", 0)
    dir = _resolve_dir(dir)
    if not isinstance(state, dict):
        raise TypeError("titan.checkpoint.save: state must be a dict")
    try:
        step = operator.index(step)  # ints, numpy and 0-d torch integers; never a float
    except TypeError:
        raise TypeError(f"titan.checkpoint.save: step must be an integer, got {step!r} "
                        f"({type(step).__name__})") from None
    if metadata is not None:
        try:
            json.dumps(metadata, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise ValueError(f"titan.checkpoint.save: metadata must be JSON ({e}); NaN and "
                             "infinity are not JSON: store them as strings") from None
    r, w = rank(group), world_size(group)
    save_id = _broadcast_save_id(group)
    flat = _Flattener()
    skeleton = {str(k): flat.flatten(v, [k]) for k, v in state.items()}
    items = {"step": int(step), "skeleton": skeleton}
    if metadata is not None:
        items["metadata"] = metadata
    if layout is None:
        layout = {"world_size": w}
    mirror = _resolve_mirror(mirror)
    node_local = _resolve_node_local(node_local, opts)
    if node_local and not mirror:
        raise ValueError("titan.checkpoint.save: node_local=True needs a mirror to commit at "
                         "(mirror=, configure(mirror=) or TITAN_CHECKPOINT_MIRROR)")
    key = _writer_key(dir, mirror, node_local)
    writer = _writer(*key)
    items_json, layout_json = json.dumps(items), json.dumps(layout)

    def native_save(tensors, native_async):
        writer.save(int(step), tensors, r, w, save_id, native_async, bool(incremental),
                    int(keep_last or 0), int(keep_every or 0), float(commit_timeout_s),
                    int(chunk_bytes), items_json, layout_json)

    _client_event("checkpoint_begin", int(step))
    try:
        _drain(key)  # a GPU-path save in flight; like the native Save, its error stops this one
    except RuntimeError as e:
        raise _previous_failed(e) from None
    try:
        lane = _staging_lane(key, flat.sources)
        if lane is None:
            hosts = [_host(t) for t in flat.sources]  # alive until the native save returns
            native_save(flat.entries(hosts), bool(async_))
            _last_staging = None
        else:
            _last_staging = _save_staged(lane, writer, flat, native_save, bool(async_))
    except RuntimeError as e:
        raise _native_error(e) from None
    _last_writer = writer
    # An async save returns once staged: its end is reported by the writer's thread
    # (checkpoint_committed) when the checkpoint commits.
    _client_event("checkpoint_end", int(step), tag="staged" if async_ else "")


def _save_staged(lane, writer, flat, native_save, async_):
    """The GPU path (_staging.py): blocks for the copies into the lane's pinned memory, then
    the native writer writes from there, in the lane's thread when async_. The native save is
    synchronous (it reads the pinned bytes until it returns; the lane keeps them until then).
    Returns this save's entries of last_stats()."""
    try:
        writer.wait()  # a native async (CPU-path) save in flight: one caller at a time
    except RuntimeError as e:
        raise _previous_failed(e) from None
    start = time.monotonic()
    hosts, copy_s = lane.stage(flat.sources)
    tensors = flat.entries(hosts)
    lane.hand_over(lambda: native_save(tensors, False), background=async_)
    return {"staged_bytes": sum(h.numel() for h in hosts), "d2h_s": copy_s,
            "blocking_s": time.monotonic() - start}


def wait(durable=False):
    """Waits for the save in flight; with durable=True also for its copy to the mirror.
    Returns the newest step made durable by a mirror (durable=True), else None."""
    errors, newest = [], None
    for key, writer in _writers.items():
        try:
            _drain(key)
            writer.wait()
            if durable:
                step = writer.wait_durable()
                if step is not None:
                    newest = step if newest is None else max(newest, step)
        except RuntimeError as e:
            errors.append(str(e))
    if errors:
        raise CheckpointError("; ".join(errors))
    return newest


def last_stats():
    """Statistics of this process's last save (after wait()): bytes staged/written/referenced,
    blocking_s (seconds save() held the caller, not counting its wait for the previous save),
    d2h_s (seconds of blocking_s spent copying a state with CUDA tensors into pinned host
    memory; 0.0 on the CPU path), write_s, commit_s."""
    if _last_writer is None:
        return None
    stats = _last_writer.stats()
    # The GPU path saves synchronously from a background thread: the native blocking_s would
    # be the whole save, and its staged_bytes 0; this process measured the staging itself.
    stats.update(_last_staging or {"d2h_s": 0.0})
    return stats


def _finish_at_exit():
    """The last save commits and, with a mirror, becomes durable before the process ends."""
    for key, writer in _writers.items():
        try:
            _drain(key)
            writer.wait()
            writer.wait_durable()
        except RuntimeError as e:
            warnings.warn(f"titan.checkpoint: at exit: {e}")


atexit.register(_finish_at_exit)


_last_load = None


def latest_step(dir):
    return _native.checkpoint.latest_step(os.fspath(dir))


def list_steps(dir):
    return list(_native.checkpoint.list_steps(os.fspath(dir)))


def _split(path):
    path = _location(path).rstrip("/")
    root, _, name = path.rpartition("/")
    root = root or "/"
    if not name.startswith("step_") or not name[5:].isdigit():
        raise ValueError(f"{path} is not a checkpoint directory (DIR/step_NNNNNNNNNN)")
    return root, int(name[5:])


def _load_step(root, step, state, group, cache=None):
    global _default_dir, _last_load
    where = f"checkpoint {root}/step_{step:010d}"
    reader = _native.checkpoint.Reader(root, step, cache or "")
    items = json.loads(reader.rank_items_json(rank(group)))
    skeleton = items.get("skeleton", {})
    missing = [k for k in state if str(k) not in skeleton]
    if missing:
        raise CheckpointError(f"{where} has no entry for {missing}; it holds {list(skeleton)}")
    restorer = _Restorer(reader, where)
    for key in list(state):
        value = restorer.build(skeleton[str(key)], state[key], f"state[{key!r}]")
        if value is not state[key]:
            state[key] = value
    _writer(root).seed(root, step)  # the next save can reference these chunks
    if _default_dir is None:
        _default_dir = root
    _last_load = {"step": reader.step, "from": root, "bytes_read": reader.bytes_read(),
                  "files_from_cache": reader.files_from_cache()}
    return reader.step


def load(path, state, *, group=None):
    root, step = _split(path)
    try:
        return _load_step(root, step, state, group)
    except (RuntimeError, FileNotFoundError) as e:
        raise _native_error(e) from None


def load_latest(dir, state, *, fallback=True, group=None, mirror=None):
    root = _location(dir)
    mirror = _resolve_mirror(mirror)
    if mirror:
        return _load_tiered(root, _location(mirror), state, fallback, group)
    return _load_latest_in(root, state, fallback, group)


def _load_latest_in(root, state, fallback, group, cache=None):
    latest = _native.checkpoint.latest_step(root)
    if latest is None:
        return None
    steps = [s for s in reversed(list_steps(root)) if s <= latest]
    for i, step in enumerate(steps):
        error = None
        try:
            _load_step(root, step, state, group, cache)
        except (RuntimeError, FileNotFoundError, KeyError, ValueError) as e:
            error = e
        if _all_ok(error is None, group):
            return step
        what = str(error) if error else "another rank failed to load it"
        if not fallback or i == len(steps) - 1:
            raise CheckpointError(f"loading checkpoint step {step} from {root} failed: {what}")
        warnings.warn(f"titan.checkpoint: step {step} in {root} is unusable ({what}); "
                      f"falling back to step {steps[i + 1]}")
    return None


_PREFETCH_LOCK = ".prefetch.lock"  # src/checkpoint/prefetch.h


def _await_prefetch(root):
    """Waits while titan run prefetches the mirror's newest checkpoint into directory `root`:
    its lock file is held (flock) exactly while a copy is in flight, and released by the
    kernel if titan run dies, so this never waits for a dead prefetch. Gives up (with a
    warning; the load then reads from the mirror) after TITAN_CHECKPOINT_PREFETCH_WAIT s."""
    if root.startswith("s3://"):
        return
    try:
        f = open(os.path.join(root, _PREFETCH_LOCK), "rb")
    except FileNotFoundError:
        return
    with f:
        def free():
            try:
                fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                return False
        if free():
            return
        limit = float(os.environ.get("TITAN_CHECKPOINT_PREFETCH_WAIT", "600"))
        holder = f.read(256).decode(errors="replace").strip()
        start = time.monotonic()
        while not free():
            if time.monotonic() - start > limit:
                warnings.warn(f"titan.checkpoint: gave up waiting {limit:.0f} s for the prefetch "
                              f"into {root} ({holder}); TITAN_CHECKPOINT_PREFETCH_WAIT sets "
                              "the bound")
                return
            time.sleep(0.02)
        if rank() == 0:
            print(f"titan.checkpoint: waited {time.monotonic() - start:.2f} s for the prefetch "
                  f"into {root} ({holder})", file=sys.stderr, flush=True)


def _load_tiered(root, mirror, state, fallback, group):
    """Local when it holds the newest checkpoint and it loads; else the durable mirror."""
    _await_prefetch(root)
    # A missing local directory (a new node) holds none; an unreachable store raises.
    local, durable = latest_step(root), latest_step(mirror)
    if local is not None and (durable is None or local >= durable):
        try:
            return _load_latest_in(root, state, False, group)
        except CheckpointError as e:
            if durable is None:
                raise
            warnings.warn(f"titan.checkpoint: local {root} is unusable ({e}); "
                          f"loading from {mirror}")
    if durable is None:
        return None
    if os.path.isdir(root):  # data files this node saved or prefetched (node-local dirs)
        try:
            return _load_latest_in(mirror, state, False, group, cache=root)
        except CheckpointError as e:
            warnings.warn(f"titan.checkpoint: loading from {mirror} with the files in {root} "
                          f"failed ({e}); loading from {mirror} alone")
    return _load_latest_in(mirror, state, fallback, group)


def last_load_stats():
    """What the last load()/load_latest() read: step, from (the root), bytes_read and
    files_from_cache (data files taken whole from the local directory instead of the
    mirror); None before the first load."""
    return _last_load


def verify(path):
    """Reads every chunk of checkpoint `path` and checks its checksum; returns the error
    messages (empty when intact)."""
    root, step = _split(path)
    try:
        return list(_native.checkpoint.Reader(root, step).verify())
    except (RuntimeError, FileNotFoundError) as e:
        return [str(e)]
