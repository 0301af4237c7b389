"""Copier migration after every update: make uv.lock match the updated pyproject.toml by resolving it again.

A lock is never merged as text. Copier leaves the project's uv.lock as it was and merges pyproject.toml; if the
update changed the dependencies, `uv lock` re-resolves, keeping every pinned version that still fits (so the
user's pins, submodule path sources included, stay). With conflict markers in pyproject.toml there is nothing to
resolve yet: it says what to run once they are gone.
"""

import shutil
import subprocess
import sys
from pathlib import Path

from _common import has_conflict_markers, run

if has_conflict_markers(Path("pyproject.toml")):
    print("note: pyproject.toml has conflict markers: resolve them, then run `uv lock`", file=sys.stderr)
    raise SystemExit(0)
if shutil.which("uv") is None:
    print(
        "note: uv is not installed, so uv.lock was not checked: install uv, then run `uv lock --check`", file=sys.stderr
    )
    raise SystemExit(0)
if subprocess.run(["uv", "lock", "--check", "--quiet"], capture_output=True, check=False).returncode != 0:
    run(["uv", "lock", "--quiet"], what="uv lock", attempts=3)
    print("uv.lock resolved again for the updated pyproject.toml (uv lock)", file=sys.stderr)
