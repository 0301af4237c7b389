"""Commands in a generated project, checked for their exit code and never left running."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest


def run(project: Path, *command: str, expect: int = 0, timeout: float = 1500) -> subprocess.CompletedProcess[str]:
    """Run a command in a generated project (outside this session's venv: see conftest.py) and check its exit code.

    The command leads a process group of its own, killed whole when it runs out of time: a timed-out `nox -s
    tests` would otherwise leave the project's pytest and its training processes running through the rest of
    the suite, slowing every later test on a 2-core machine."""
    process = subprocess.Popen(
        command, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        pytest.fail(f"{' '.join(command)} ran past {timeout:.0f} s:\n{stdout[-4000:]}\n{stderr[-4000:]}")
    done = subprocess.CompletedProcess(command, process.returncode, stdout, stderr)
    assert done.returncode == expect, f"{' '.join(command)}:\n{stdout[-4000:]}\n{stderr[-4000:]}"
    return done
