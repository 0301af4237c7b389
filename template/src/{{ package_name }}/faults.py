"""Fault injection for the reproducibility proof, and for nothing else.

The proof must kill a run at a chosen step, or while a checkpoint is being written. Both moments last
microseconds, so the proof sets REPRODUCIBILITY_PAUSE=<where>:<step> (where is `step` or `save`) and
REPRODUCIBILITY_PAUSE_MARKER=<file>: on reaching that point the run creates the marker and waits, and the proof
kills it, or sends it a signal, which ends the wait. Unset (always, outside the proof), this does nothing.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from . import preemption

_PAUSE = os.environ.get("REPRODUCIBILITY_PAUSE", "")
_MARKER = os.environ.get("REPRODUCIBILITY_PAUSE_MARKER", "")


def pause_if_requested(where: str, step: int) -> None:
    if _PAUSE and f"{where}:{step}" == _PAUSE:
        Path(_MARKER).touch()
        while not preemption.stop_requested():
            time.sleep(0.01)
