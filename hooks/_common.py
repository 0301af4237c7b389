"""What every Copier task shares: run a command, or stop the copy with one readable line."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

CONFLICT_MARKERS = ("<<<<<<< ", ">>>>>>> ")  # the lines Copier's inline conflicts (and git's) begin with


def require_uv() -> None:
    """Stop the copy in one line where uv is missing, before a task needs it (the library's source, the lock)."""
    if shutil.which("uv") is None:
        fail(
            "uv is not installed, so uv.lock cannot be created: install it (`pip install uv` or "
            "https://docs.astral.sh/uv/getting-started/installation/), then run `uv lock` in the project"
        )


def fail(message: str) -> NoReturn:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(1)


def run(cmd: Sequence[str], *, what: str, attempts: int = 1) -> str:
    """Run `cmd` in the project folder; on failure, say `what` failed, with the tool's own error on the same line.

    `attempts` > 1 retries after a pause, for commands that reach a package registry, which can flake.
    """
    for attempt in range(1, attempts + 1):
        try:
            done = subprocess.run(list(cmd), capture_output=True, text=True, check=False)
        except FileNotFoundError:
            fail(f"{what}: `{cmd[0]}` is not installed or not on PATH")
        if done.returncode == 0:
            return done.stdout
        reason = " | ".join(line.strip() for line in (done.stderr or done.stdout).splitlines() if line.strip())
        if attempt < attempts:
            print(f"{what} failed (attempt {attempt} of {attempts}), retrying: {reason}", file=sys.stderr)
            time.sleep(2 * attempt)
    fail(f"{what} failed: {reason or f'exit code {done.returncode}'}")


def has_conflict_markers(path: Path) -> bool:
    """Whether an update left inline conflict markers in `path` (the file is not valid until they are resolved)."""
    return any(line.startswith(CONFLICT_MARKERS) for line in path.read_text().splitlines())
