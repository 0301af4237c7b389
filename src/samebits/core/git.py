"""git, as the library runs it: what a checkout is at, and what changed in it (provenance, the launcher's checks).

Every query runs with `--no-optional-locks`: a plain `git status` may take the index's lock to refresh it, and a
process killed meanwhile (a search stopped with kill -9) would leave `.git/index.lock` behind, failing the user's
next `git commit`. The bytecode Python writes next to the code it imports (`__pycache__/`, `*.pyc`) is never a
change, even in a submodule whose repository does not ignore it.

Two scripts that nox runs by path before the project's environment exists (core/deps.py,
core/template_version.py) can import nothing and run git themselves.
"""

from __future__ import annotations

import subprocess
from pathlib import Path


def output(root: Path, *args: str) -> str:
    """git's answer, or "" when git fails or is not installed (as in the container image)."""
    try:
        done = subprocess.run(["git", "--no-optional-locks", *args], cwd=root, capture_output=True, text=True,
                              check=False)  # fmt: skip
    except FileNotFoundError:
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def diff(root: Path) -> bytes:
    """The uncommitted changes of a dirty checkout, as a patch (`git apply` re-creates them)."""
    try:
        command = ["git", "--no-optional-locks", "diff", "HEAD", "--binary"]
        return subprocess.run(command, cwd=root, capture_output=True, check=False).stdout
    except FileNotFoundError:
        return b""


def changes(root: Path) -> list[str]:
    """What `git status` reports for the checkout and its submodules (porcelain v2 lines), less Python's bytecode.
    A submodule changed by nothing but untracked files is looked into: bytecode alone leaves it unchanged."""
    found = []
    status = output(root, "status", "--porcelain=v2", "--untracked-files=all", "--ignore-submodules=none")
    for line in status.splitlines():
        if line.startswith("? ") and is_bytecode(line[2:]):
            continue
        fields = line.split(" ", 8)
        if fields[0] == "1" and fields[2] == "S..U" and not changes(root / fields[8]):
            continue
        found.append(line)
    return found


def is_bytecode(path: str) -> bool:
    return "__pycache__/" in f"/{path}" or path.endswith((".pyc", ".pyo"))
