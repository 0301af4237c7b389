"""What a run folder's `run.lock` says about the process holding it: one line, `pid N on HOST since TIME`.

The training process writes it when it takes the lock (core/run_folder.py); a second process names the holder
from it when it is refused, and `<package> status` reads it to tell a live run from a killed one
(launch/observe.py). Standard library only, so that reading it does not load torch.
"""

from __future__ import annotations

import os
import re
import socket
from datetime import UTC, datetime
from pathlib import Path

LOCK_NAME = "run.lock"
# A running attempt rewrites status.json at least this often (its heartbeat), so that a run whose holder is on
# another machine, and gone, can be told from a live one by the age of that file.
HEARTBEAT_S = 60
_LINE = re.compile(r"^pid (\d+) on (\S+) since")


def line() -> str:
    """The line the current process writes into the lock file it holds."""
    return f"pid {os.getpid()} on {socket.gethostname()} since {datetime.now(UTC).isoformat(timespec='seconds')}\n"


def is_gone(run_dir: Path) -> bool:
    """Whether the process named in the run's lock file was on this machine and has ended."""
    try:
        found = _LINE.match((run_dir / LOCK_NAME).read_text())
    except OSError:
        return False
    if not found or found.group(2) != socket.gethostname():
        return False  # another machine's process cannot be checked from here
    pid = int(found.group(1))
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # alive, under another user
    try:  # killed but not yet reaped by its parent: a zombie holds no lock and trains nothing
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z"
    except (OSError, IndexError):
        return False
