"""titan.client: step, checkpoint and mark events from a training process to `titan agent`.

    import titan.client as tc
    tc.init(job="llama")              # once per process; rank from TITAN_RANK / RANK
    for step in range(n):
        with tc.step(step):
            train_step()
    tc.checkpoint_begin(step); save(); tc.checkpoint_end(step, bytes=written)

Each call is one non-blocking datagram per agent socket (TITAN_AGENT_SOCKET, ':'-separated;
default /tmp/titan-agent.sock): a few microseconds, and it never blocks and never raises
because the agent is down or busy. With the agent down, events are dropped and counted by
dropped(); with its queue full, they wait in a small queue (deferred()) and go out before the
next event, or at exit: init() registers goodbye() with atexit, which flushes them (20 ms at
most). Every event function returns True iff every socket accepted the event at once.

init() also makes SIGUSR1 dump every thread's Python stack (faulthandler) to the file named by
TITAN_STACK_FILE (appended) or to stderr, so a supervisor can see where a hung worker is.
"""
import atexit
import faulthandler
import os
import signal
import sys
import warnings

from titan import _titan as _native

__all__ = [
    "init", "step", "step_begin", "step_end", "checkpoint_begin", "checkpoint_end",
    "checkpoint_committed", "checkpoint_durable", "mark",
    "heartbeat", "hello", "goodbye", "dropped", "sent", "deferred", "flush", "set_rank", "rank",
]

# The event functions are the native ones themselves: no Python frame in between.
step_begin = _native.step_begin
step_end = _native.step_end
checkpoint_begin = _native.checkpoint_begin
checkpoint_end = _native.checkpoint_end
checkpoint_committed = _native.checkpoint_committed
checkpoint_durable = _native.checkpoint_durable
mark = _native.mark
heartbeat = _native.heartbeat
hello = _native.hello
goodbye = _native.goodbye
dropped = _native.dropped
sent = _native.sent
deferred = _native.deferred
flush = _native.flush
set_rank = _native.set_rank
rank = _native.rank

STACK_FILE_ENV = "TITAN_STACK_FILE"
_stack_file = None  # kept open: faulthandler writes to its descriptor from a signal handler
_goodbye_registered = False


def init(rank=None, job=None):
    """Announces this process to the agent (a hello event with `job`, default the script name).

    rank: overrides TITAN_RANK / RANK for every later event. Safe to call more than once.
    Returns True iff the hello reached every agent socket; never raises for a missing agent.
    """
    global _goodbye_registered
    if rank is not None:
        _native.set_rank(int(rank))
    _register_stack_dump()
    if not _goodbye_registered:
        atexit.register(_native.goodbye)
        _goodbye_registered = True
    if job is None:
        job = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "python"
    return _native.hello(str(job))


def _register_stack_dump():
    global _stack_file
    if not hasattr(signal, "SIGUSR1"):
        return
    path = os.environ.get(STACK_FILE_ENV)
    target = sys.stderr
    if path:
        try:
            if _stack_file is None or _stack_file.name != path:
                _stack_file = open(path, "a", buffering=1)
            target = _stack_file
        except OSError as e:
            warnings.warn(f"titan.client: cannot open {STACK_FILE_ENV}={path} ({e}); "
                          "SIGUSR1 stack dumps go to stderr")
    try:
        faulthandler.register(signal.SIGUSR1, file=target, all_threads=True, chain=False)
    except (ValueError, OSError, RuntimeError) as e:  # e.g. stderr without a file descriptor
        warnings.warn(f"titan.client: SIGUSR1 stack dumps unavailable: {e}")


class step:
    """Context manager: step_begin(n) on entry, step_end(n) on exit (also on an exception)."""

    __slots__ = ("n",)

    def __init__(self, n):
        self.n = n

    def __enter__(self):
        step_begin(self.n)
        return self

    def __exit__(self, exc_type, exc, tb):
        step_end(self.n)
        return False
