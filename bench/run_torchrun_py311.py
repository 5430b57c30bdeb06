#!/usr/bin/env python3
"""torchrun (python3 -m torch.distributed.run) of Debian's PyTorch 1.13 under Python 3.11, with
the one compatibility fix it needs: Std.from_str returns None on 3.11 (enum membership changed),
which makes every launch fail in start_processes. Everything else is torchrun unchanged."""
import sys

from torch.distributed.elastic.multiprocessing import api


def _from_str(cls, vm):
    def to_std(v):
        return api.Std(int(v))

    if "," not in vm and ":" not in vm:
        return to_std(vm)
    return {int(k): to_std(v) for k, v in (kv.split(":") for kv in vm.split(","))}


api.Std.from_str = classmethod(_from_str)

from torch.distributed import run  # noqa: E402

if __name__ == "__main__":
    sys.exit(run.main())
