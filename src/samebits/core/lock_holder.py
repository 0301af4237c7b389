"""What a run folder's `run.lock` says about the process holding it: one line,
`pid N on HOST since TIME process TOKEN` (the token: core/processes.py).

The training process writes it when it takes the lock (core/run_folder.py); a second process names the holder
from it when it is refused, and launchers and `<package> status` read it to tell a training process that is alive
from a killed one (launch/observe.py), without touching the lock: probing a lock by taking it would, for a moment,
refuse the training process that wants it. Standard library only, so that reading it does not load torch.
"""

from __future__ import annotations

import os
import re
import socket
import time
from pathlib import Path

from . import processes
from .files import utc_now
from .run_files import RunFiles

# A running attempt rewrites status.json at least this often (its heartbeat), so that a run whose holder is on
# another machine, and gone, can be told from a live one by the age of that file.
HEARTBEAT_S = 60
_LINE = re.compile(r"^pid (\d+) on (\S+) since \S+(?: process (\S+))?")


def line() -> str:
    """The line the current process writes into the lock file it holds."""
    since = utc_now()
    token = processes.start_token()
    return f"pid {os.getpid()} on {socket.gethostname()} since {since}{f' process {token}' if token else ''}\n"


def named_holder(descriptor: int, wait_s: float = 2.0) -> str:
    """Who holds the lock open as `descriptor`, for a refusal: `pid N on HOST since TIME`, or "another process".

    The holder writes its line only after it has taken the lock, so a refusal in that moment waits for the line
    (up to `wait_s`), and does not take the line of an earlier holder that has since died for it."""
    deadline = time.monotonic() + wait_s
    while True:
        written = os.pread(descriptor, 256, 0).decode(errors="replace")
        found = _LINE.match(written)
        elsewhere = found and found.group(2) != socket.gethostname()
        if found and (elsewhere or processes.is_alive(int(found.group(1)), found.group(3))):
            return written.partition(" process ")[0].strip()  # without its start token
        if time.monotonic() >= deadline:
            return "another process"
        time.sleep(0.05)


def holder_alive(run_dir: Path) -> bool | None:
    """Whether the training process named in the run's lock file is alive: True or False for a process of this
    machine, None when there is none named or it is another machine's (which cannot be checked from here)."""
    try:
        found = _LINE.match(RunFiles(run_dir).lock.read_text())
    except OSError:
        return None
    if not found or found.group(2) != socket.gethostname():
        return None
    return processes.is_alive(int(found.group(1)), found.group(3))  # lines written before tokens: the pid alone
