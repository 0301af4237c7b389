"""Copier task 2: resolve the project's dependencies into `uv.lock`, which every install then uses frozen."""

from _common import require_uv, run

require_uv()
run(["uv", "lock", "--quiet"], what="uv lock", attempts=3)
