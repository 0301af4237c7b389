"""Stop requests: SIGTERM, SIGUSR1, SIGUSR2 and Ctrl-C ask the run to stop at the next step boundary.

The loop then saves a checkpoint and exits. After SIGTERM, SIGUSR1 or SIGUSR2 it exits with REQUEUE_EXIT_CODE,
which means "not failed, not finished: start me again". Slurm sends SIGTERM before it preempts or cancels a job,
and `--signal=USR1@<seconds>` ahead of its time limit. After Ctrl-C (SIGINT) it exits with 130, as shells expect
of an interrupted command; a second Ctrl-C does not wait for the step to end. Started again, the run resumes from
that checkpoint.
"""

from __future__ import annotations

import signal
from types import FrameType

from .errors import INTERRUPTED, REQUEUE
from .states import AttemptState

REQUEUE_EXIT_CODE = REQUEUE
STOP_SIGNALS = (signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2, signal.SIGINT)

_received: list[int] = []


def install_handlers() -> None:
    """Call first thing: until then, SIGTERM kills the process without a checkpoint."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, _record)


def stop_requested() -> bool:
    return bool(_received)


def received_signal() -> str:
    return signal.Signals(_received[0]).name if _received else ""


def outcome() -> tuple[AttemptState, int]:
    """The state to record and the exit code, for a run stopped at a step boundary."""
    if not _received:
        return "paused", REQUEUE_EXIT_CODE  # trainer.stop_at_step: a planned pause
    if _received[0] == signal.SIGINT:
        return "interrupted", INTERRUPTED
    return "preempted", REQUEUE_EXIT_CODE


def ignore_further_requests() -> None:
    """Call as the process leaves the entry point, its outcome recorded: SIGTERM, SIGUSR1 and SIGUSR2 have nothing
    left to ask for.

    Slurm, scancel and job.sh may signal a stopping run again. Python puts back the default action of the signals
    it handles as it exits, so one arriving then would end a saved run with 128+N instead of the code that says
    "start me again" (or a finished one instead of 0). A second Ctrl-C still ends a slow exit.
    """
    for signum in (signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(signum, signal.SIG_IGN)


def ignore_in_worker(worker_id: int) -> None:
    """DataLoader `worker_init_fn`: a signal to the process group must not kill the workers mid-batch."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)


def _record(signum: int, frame: FrameType | None) -> None:
    if signum == signal.SIGINT and signal.SIGINT in _received:
        raise KeyboardInterrupt  # the second Ctrl-C: the user will not wait for the step to end
    _received.append(signum)
