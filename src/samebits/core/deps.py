"""External dependencies pinned as git submodules: is each checkout exactly the commit this project records?

    python -m <package>.deps        (what `nox -s deps` runs)

Prints one row per submodule (path, URL, pinned SHA, checked-out SHA, local changes) and exits with 1 if any
checkout differs from the SHA recorded in HEAD, or has local changes: a run launched now would not use
what the commit says.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Pin:
    path: str
    url: str
    pinned: str  # the SHA recorded in HEAD
    checked_out: str  # the SHA of the working checkout ("" if not initialised)
    dirty: bool

    @property
    def problem(self) -> str:
        if not self.checked_out:
            return "not checked out: run `git submodule update --init`"
        if self.checked_out != self.pinned:
            return "checkout differs from the pin: commit the bump, or run `git submodule update`"
        if self.dirty:
            return "has local changes: commit them upstream and bump, or discard them"
        return ""


def pins(root: Path = Path(".")) -> list[Pin]:
    """Every submodule listed in .gitmodules, with the SHA that HEAD records for it (none outside a git checkout)."""
    if not (root / ".gitmodules").exists() or not (root / ".git").exists():
        return []
    listed = _git(root, "config", "--file", ".gitmodules", "--get-regexp", r"^submodule\..*\.path$").splitlines()
    found = []
    for line in listed:
        key, path = line.split(" ", 1)
        url = _git(root, "config", "--file", ".gitmodules", key.removesuffix(".path") + ".url")
        pinned = _git(root, "rev-parse", f"HEAD:{path}")
        checkout = root / path
        initialised = (checkout / ".git").exists()
        checked_out = _git(checkout, "rev-parse", "HEAD") if initialised else ""
        dirty = bool(_changes(checkout)) if initialised else False
        found.append(Pin(path, url, pinned, checked_out, dirty))
    return found


def _changes(checkout: Path) -> list[str]:
    """Local changes, less the bytecode Python writes next to the code it imports (core/git.py says why)."""
    listed = _git(checkout, "status", "--porcelain", "--untracked-files=all").splitlines()
    return [line for line in listed if not (line.startswith("?? ") and _is_bytecode(line[3:]))]


def _is_bytecode(path: str) -> bool:
    return "__pycache__/" in f"/{path}" or path.endswith((".pyc", ".pyo"))


def _git(where: Path, *args: str) -> str:
    command = ["git", "--no-optional-locks", *args]  # a query never takes the index's lock (core/git.py)
    return subprocess.run(command, cwd=where, capture_output=True, text=True, check=True).stdout.strip()


def main() -> None:
    found = pins()
    if not found:
        print("no external dependencies (.gitmodules is absent)")
        return
    print(f"{'path':<28} {'pinned':<12} {'checked out':<12} {'clean':<6} {'url':<40} problem")
    for pin in found:
        clean = "no" if pin.dirty else "yes"
        print(
            f"{pin.path:<28} {pin.pinned[:12]:<12} {pin.checked_out[:12] or '-':<12} {clean:<6} {pin.url:<40} "
            f"{pin.problem or 'ok'}"
        )
    if any(pin.problem for pin in found):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
