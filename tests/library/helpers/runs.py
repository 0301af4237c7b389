"""Training processes started the way users and launchers start them, and waiting on them."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from .project import PACKAGE, ROOT

RunTraining = Callable[..., subprocess.CompletedProcess[str]]

SHORT = ["trainer.max_steps=40", "sched.warmup_steps=5", "trainer.eval_every=20", "trainer.log_every=1"]


def start(runs: Path, data_dir: Path, marker: Path, *overrides: str) -> subprocess.Popen[str]:
    """A short run that pauses at step 15 (the proof's pause) until a stop signal, holding its run folder."""
    env = {**os.environ, "RUNS_DIR": str(runs), "DATA_DIR": str(data_dir)}
    env |= {"REPRODUCIBILITY_PAUSE": "step:15", "REPRODUCIBILITY_PAUSE_MARKER": str(marker)}
    command = [sys.executable, "-m", f"{PACKAGE}.train", "trainer.progress_bar=false", *SHORT, *overrides]
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@contextlib.contextmanager
def stopped_at_the_end(*processes: subprocess.Popen[str]) -> Iterator[None]:
    """However the test ends, no process it started outlives it (a paused run would wait forever)."""
    try:
        yield
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
            process.communicate(timeout=60)


def wait_for(condition: Callable[[], object], what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)
