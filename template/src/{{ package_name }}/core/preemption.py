"""Preemption: SIGTERM, SIGUSR1 or SIGUSR2 ask the run to stop at the next step boundary.

The loop then saves a checkpoint and exits with REQUEUE_EXIT_CODE, which means "not failed, not finished:
start me again". Slurm sends SIGTERM before it preempts or cancels a job, and `--signal=USR1@<seconds>` ahead of
its time limit. Started again, the run resumes from that checkpoint.
"""

from __future__ import annotations

import signal
from types import FrameType

REQUEUE_EXIT_CODE = 75  # EX_TEMPFAIL in sysexits.h: a temporary failure, try again
STOP_SIGNALS = (signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2)

_received: list[int] = []


def install_handlers() -> None:
    """Call first thing: until then, SIGTERM kills the process without a checkpoint."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, _record)


def stop_requested() -> bool:
    return bool(_received)


def received_signal() -> str:
    return signal.Signals(_received[0]).name if _received else ""


def ignore_in_worker(worker_id: int) -> None:
    """DataLoader `worker_init_fn`: a signal to the process group must not kill the workers mid-batch."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)


def _record(signum: int, frame: FrameType | None) -> None:
    _received.append(signum)
