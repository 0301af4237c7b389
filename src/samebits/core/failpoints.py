"""Failpoints: where a training process can be paused, checked or ended early on request from its environment.

The reproducibility proof sets them (REPRODUCIBILITY_* variables) in the processes it starts; nothing else does,
and unset they cost a string comparison. They live in core, beside what they interrupt, so that the loop and the
checkpointer never import the proof.

Pauses. The proof must kill a run at a chosen step, or while a checkpoint is being written. Both moments last
microseconds, so the proof sets REPRODUCIBILITY_PAUSE=<where>:<step> (where is `step` or `save`) and
REPRODUCIBILITY_PAUSE_MARKER=<file>: on reaching that point the run creates the marker and waits, and the proof
kills it, or sends it a signal, which ends the wait. `save` pauses the background writer mid-write (the file
written, not yet renamed), wherever the loop then is. `inflight:<saved>:<step>` pins both down: the writer pauses
mid-write of the checkpoint of step <saved>, and the loop, which trains on, pauses at step <step> once the writer
is held there; the proof kills the run with the write in flight and steps logged past it.

RNG canary. The bundled loop draws only from torch's generators (dropout), so a checkpoint that failed to
restore NumPy's or Python's global generator would go unnoticed, until a user's augmentation or sampling code
draws from it. With REPRODUCIBILITY_RNG_CANARY=1 every training process draws one number from each of them at
the end of every step; the run's `rng_sha256` (summary.json) then differs unless each resume restored them.
Torch's generators are left alone, so the proof's runs train exactly as the same config does outside it.

Quick exit. The proof starts about 26 training processes, and tearing down an interpreter that has loaded torch
is a large part of the proof's time (docs/decisions/0004-proof-processes-quick-exit.md). With
REPRODUCIBILITY_QUICK_EXIT=1 a process ends as soon as the run is over, after what Python does at exit that has
an effect outside the process (other threads joined, atexit handlers such as the log's flush run, output
flushed), but without freeing its objects one by one. Everything the proof compares was written and closed before.

The variables are read when first needed, not on import: the proof forks its runs from a process that has
imported this module before each run's variables were set (proof/forks.py).

Unset (always, outside the proof), none of this does anything.
"""

from __future__ import annotations

import atexit
import functools
import os
import random
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import preemption


@dataclass(frozen=True)
class _Requests:
    pause: str
    marker: str
    quick_exit: bool
    rng_canary: bool


@functools.cache
def _requests() -> _Requests:
    environ = os.environ
    return _Requests(
        pause=environ.get("REPRODUCIBILITY_PAUSE", ""),
        marker=environ.get("REPRODUCIBILITY_PAUSE_MARKER", ""),
        quick_exit=environ.get("REPRODUCIBILITY_QUICK_EXIT") == "1",
        rng_canary=environ.get("REPRODUCIBILITY_RNG_CANARY") == "1",
    )


def step_end(step: int, settle: Callable[[], None]) -> None:
    """Called once per training step, after the step and before a checkpoint may be written. Before a pause at
    this step, `settle` waits for the checkpoint being written: what a run paused at a step has on disk, and has
    published, is then the same every time."""
    requests = _requests()
    if requests.rng_canary:
        random.random()
        np.random.random()
    if requests.pause and requests.pause == f"step:{step}":  # unset, no string is formatted at each step
        settle()
    pause_if_requested("step", step)


_write_held = threading.Event()  # `inflight`: the writer is paused in its write


def pause_if_requested(where: str, step: int) -> None:
    pause = _requests().pause
    if not pause:
        return
    if f"{where}:{step}" == pause:
        Path(_requests().marker).touch()
        _wait_for_stop()
    elif pause.startswith("inflight:"):
        _, saved, loop_step = pause.split(":")
        if where == "save" and step == int(saved):
            _write_held.set()
            _wait_for_stop()
        elif where == "step" and step == int(loop_step):
            while not _write_held.wait(0.01) and not preemption.stop_requested():
                pass
            Path(_requests().marker).touch()
            _wait_for_stop()


def _wait_for_stop() -> None:
    while not preemption.stop_requested():
        time.sleep(0.01)


def run_then_exit(entry_point: Callable[[], object]) -> None:
    """Run the entry point; under REPRODUCIBILITY_QUICK_EXIT=1, end the process as soon as it returns.

    A crash still ends as usual, with its traceback. The exit waits until the SystemExit that may end the run
    has been released: it holds the run's frames, and with them the DataLoader workers, which must shut down
    as they do on a normal exit (they ignore SIGTERM, so multiprocessing's atexit handler would wait forever).
    """
    if not _requests().quick_exit:
        entry_point()
        return
    try:
        entry_point()
        code = 0
    except SystemExit as stop:
        code = exit_status(stop.code)
    exit_without_teardown(code)


def exit_without_teardown(code: int) -> None:
    """End the process as Python would at exit, less freeing every object one by one."""
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()  # the exit handlers Python would run, in the same order
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(code)


def exit_status(code: object) -> int:
    """The status Python gives `SystemExit(code)`: None is 0, a message is printed and gives 1."""
    if code is None or isinstance(code, int):
        return code or 0
    print(code, file=sys.stderr)
    return 1
