"""Whether a process on this machine is still the one that was recorded: its pid, plus when it started.

A pid alone can mislead: after a reboot, or once enough processes have come and gone, the same number names
another process. A process's start time (in clock ticks since boot, from /proc) and the boot's id tell the one
that was recorded from any later process with its pid. Standard library only, so that asking does not load torch.
Where /proc is missing (not Linux), a token cannot be made and the pid alone is checked.
"""

from __future__ import annotations

import os
from pathlib import Path

_BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


def start_token(pid: int | None = None) -> str | None:
    """`<boot id>/<start time in ticks>` of a live process (default: this one), or None if it cannot be read."""
    ticks = _stat_fields(pid or os.getpid())
    try:
        boot = _BOOT_ID.read_text().strip()
    except OSError:
        return None
    return f"{boot}/{ticks[19]}" if ticks and len(ticks) > 19 else None


def is_alive(pid: int, token: str | None = None) -> bool:
    """Whether process `pid` runs on this machine (not a zombie) and, given its start token, is that process."""
    fields = _stat_fields(pid)
    if fields is None:
        return _signal_reaches(pid) if not Path("/proc/self/stat").exists() else False
    if fields[0] == "Z":
        return False  # killed but not yet reaped by its parent: it holds no lock and trains nothing
    return token is None or start_token(pid) == token


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (state first), or None if there is no such process."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rpartition(")")[2].split()  # the name, in parentheses, may itself hold spaces and parentheses


def _signal_reaches(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # alive, under another user
    return True
