"""What every Copier task shares: run a command, or stop the copy with one readable line."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from typing import NoReturn


def fail(message: str) -> NoReturn:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(1)


def run(cmd: Sequence[str], *, what: str) -> str:
    """Run `cmd` in the project folder; on failure, say `what` failed and show the tool's last line."""
    try:
        done = subprocess.run(list(cmd), capture_output=True, text=True, check=False)
    except FileNotFoundError:
        fail(f"{what}: `{cmd[0]}` is not installed or not on PATH")
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        fail(f"{what} failed: {lines[-1] if lines else f'exit code {done.returncode}'}")
    return done.stdout
