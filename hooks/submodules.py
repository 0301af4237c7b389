"""Copier task: pin each external dependency as a git submodule under external/<name>, at the asked ref.

Each entry of the `external_deps` answer is `URL` or `URL@REF` (a tag, branch or commit SHA). A Python
package (one with a pyproject.toml or setup.py) becomes an editable uv path source, so the lock and the venv use
exactly the checked-out commit; anything else is left for PYTHONPATH (see the project's README). The first commit,
made by the next tasks, records each submodule's SHA.
"""

import json
import sys
from pathlib import Path

from _common import fail, run

# Local repositories are allowed as submodule sources (git >= 2.38 refuses `file` URLs by default).
GIT = ["git", "-c", "protocol.file.allow=always"]


def parse(entry: str) -> tuple[str, str | None]:
    """`URL@REF` -> (URL, REF). An '@' inside `git@host:org/repo` is part of the URL, not a ref."""
    url, at, ref = entry.rpartition("@")
    if not at or ":" in ref or "/" not in url:
        return entry, None
    return url, ref


def name_of(url: str) -> str:
    return url.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1].removesuffix(".git")


def add(entry: str) -> None:
    url, ref = parse(entry)
    path = f"external/{name_of(url)}"
    if Path(path).exists():
        return  # already added: tasks may run again in an existing project
    which = f"external dependency {entry!r}"
    run([*GIT, "submodule", "add", "--quiet", url, path], what=f"{which}: git submodule add")
    if ref:
        run(["git", "-C", path, "checkout", "--quiet", ref], what=f"{which}: checking out {ref!r}")
        run(["git", "add", path], what=f"{which}: git add")
    if (Path(path) / "pyproject.toml").exists() or (Path(path) / "setup.py").exists():
        # --no-workspace: a plain path source, not a uv workspace member
        add_source = ["uv", "add", "--quiet", "--frozen", "--no-workspace", "--editable", f"./{path}"]
        run(add_source, what=f"{which}: uv add")


entries = json.loads(sys.argv[1])
names = [name_of(parse(entry)[0]) for entry in entries]
if duplicates := sorted({name for name in names if names.count(name) > 1}):
    fail(f"external_deps: two entries would both live in external/{duplicates[0]}: keep one")
for entry in entries:
    add(entry)
