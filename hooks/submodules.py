"""Copier task: pin each external dependency as a git submodule under external/<name>, at the asked ref.

Each entry of the `external_deps` answer is `URL` or `URL@REF` (a tag, branch or commit SHA). A Python
package (one with a pyproject.toml or setup.py) becomes an editable uv path source, so the lock and the venv use
exactly the checked-out commit; anything else is left for PYTHONPATH (see the project's README). The first commit,
made by the next tasks, records each submodule's SHA.

Idempotent: a submodule already registered at external/<name> with the same URL (say, left by a copy that
failed on a wrong ref and is now retried with the right one) is brought to the asked ref, not added again.
"""

import json
import subprocess
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


def registered() -> dict[str, str]:
    """The submodules .gitmodules lists: {path: URL} (a submodule's name is its path, as `submodule add` makes it)."""
    query = ["git", "config", "--file", ".gitmodules", "--get-regexp", r"^submodule\..*\.url$"]
    done = subprocess.run(query, capture_output=True, text=True, check=False)
    pairs = (line.split(" ", 1) for line in done.stdout.splitlines())
    return {key.removeprefix("submodule.").removesuffix(".url"): url for key, url in pairs}


def add(entry: str, known: dict[str, str]) -> None:
    url, ref = parse(entry)
    path = f"external/{name_of(url)}"
    which = f"external dependency {entry!r}"
    if path not in known and not Path(path).exists():
        run([*GIT, "submodule", "add", "--quiet", url, path], what=f"{which}: git submodule add")
    elif known.get(path) == url:  # there already (a retried copy, a recopy): check it out, then move it to `ref`
        run([*GIT, "submodule", "update", "--init", "--quiet", "--", path], what=f"{which}: git submodule update")
    else:
        if path in known:
            fail(f"{which}: {path} is already a submodule from {known[path]}: answer that URL, or `git rm -f {path}`")
        fail(f"{which}: {path} already exists and is not a submodule: move it out of the way")
    if ref:
        has_ref = ["git", "-C", path, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"]
        if subprocess.run(has_ref, capture_output=True, check=False).returncode != 0:
            run([*GIT, "-C", path, "fetch", "--quiet", "--tags", "origin"], what=f"{which}: git fetch")
        run(["git", "-C", path, "checkout", "--quiet", ref], what=f"{which}: checking out {ref!r}")
        run(["git", "add", path], what=f"{which}: git add")
    if (Path(path) / "pyproject.toml").exists() or (Path(path) / "setup.py").exists():
        # --no-workspace: a plain path source, not a uv workspace member
        add_source = ["uv", "add", "--quiet", "--frozen", "--no-workspace", "--editable", f"./{path}"]
        run(add_source, what=f"{which}: uv add")


entries = json.loads(sys.argv[1])
paths = [f"external/{name_of(parse(entry)[0])}" for entry in entries]
if duplicates := sorted({path for path in paths if paths.count(path) > 1}):
    fail(f"external_deps: two entries would both live in {duplicates[0]}: keep one")
known = registered()
first_copy = subprocess.run(["git", "rev-parse", "--verify", "--quiet", "HEAD"], capture_output=True).returncode != 0
if first_copy and (stale := sorted(set(known) - set(paths))):
    fail(
        f"external_deps: {stale[0]} is a submodule (left by an earlier, failed copy?) that the answer does not list: "
        f"list it, or remove it with `git rm -f {stale[0]}`"
    )
for entry in entries:
    add(entry, known)
