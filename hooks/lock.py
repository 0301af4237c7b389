"""Copier task 2: resolve the project's dependencies into `uv.lock`, which every install then uses frozen."""

import shutil

from _common import fail, run

if shutil.which("uv") is None:
    fail(
        "uv is not installed, so uv.lock cannot be created: install it (`pip install uv` or "
        "https://docs.astral.sh/uv/getting-started/installation/), then run `uv lock` in the project"
    )
run(["uv", "lock", "--quiet"], what="uv lock", attempts=3)
