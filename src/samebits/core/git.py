"""git, as the library runs it: what a checkout is at, and what changed in it (provenance, the launcher's checks).

Two scripts that nox runs by path before the project's environment exists (core/deps.py,
core/template_version.py) can import nothing and run git themselves.
"""

from __future__ import annotations

import subprocess
from pathlib import Path


def output(root: Path, *args: str) -> str:
    """git's answer, or "" when git fails or is not installed (as in the container image)."""
    try:
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def diff(root: Path) -> bytes:
    """The uncommitted changes of a dirty checkout, as a patch (`git apply` re-creates them)."""
    try:
        return subprocess.run(["git", "diff", "HEAD", "--binary"], cwd=root, capture_output=True, check=False).stdout
    except FileNotFoundError:
        return b""
