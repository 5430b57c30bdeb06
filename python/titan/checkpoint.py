"""titan.checkpoint: sharded, asynchronous, incremental, verified checkpoints for PyTorch.

API (stable; `titan run` and its demo script code against these exact signatures):

    save(state, step, async_=True, *, dir=None, keep_last=None, keep_every=None,
         incremental=True, group=None, layout=None, commit_timeout_s=1800.0) -> None
        Saves `state` as checkpoint `step` under `dir`. Every rank of the job calls it with the
        same step. Returns once the state is copied to host staging memory (async_=True) or
        once the checkpoint is committed (async_=False). A save waits first for the previous
        one if that is still in flight. Errors of an async save are raised by the next wait()
        or save(). `dir` defaults to the directory given to configure(), else the
        TITAN_CHECKPOINT_DIR environment variable, else the directory of the last
        load()/load_latest(). Retention (rank 0, after commit): keep the newest `keep_last`
        checkpoints plus every step that is a multiple of `keep_every` (None: keep all).

    wait() -> None
        Blocks until this process's in-flight save is durable (rank 0: committed, i.e. the
        manifest is written, fsynced, renamed, and "latest" points to it). Raises the save's
        error, if any. Call before exiting.

    load_latest(dir, state, *, fallback=True, group=None) -> int | None
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

What `state` may hold (a dict, nested freely):
    * objects with state_dict()/load_state_dict(): nn.Module, optim.Optimizer, LR schedulers,
      data-loader samplers, RNGState() ... restored in place through load_state_dict();
    * torch.Tensor (CPU; CUDA tensors are copied to host) - replicated on every rank (plain
      data parallel): written once in total, the writing spread across ranks;
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


def save(state, step, async_=True, *, dir=None, keep_last=None, keep_every=None,
         incremental=True, group=None, layout=None, commit_timeout_s=1800.0):
    raise NotImplementedError("titan.checkpoint.save: implementation in progress")


def wait():
    raise NotImplementedError("titan.checkpoint.wait: implementation in progress")


def load_latest(dir, state, *, fallback=True, group=None):
    raise NotImplementedError("titan.checkpoint.load_latest: implementation in progress")


def load(path, state, *, group=None):
    raise NotImplementedError("titan.checkpoint.load: implementation in progress")
