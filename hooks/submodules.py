"""Copier task: pin each external dependency as a git submodule under external/<name>, at the asked ref.

Each entry of the `external_deps` answer is `URL` or `URL@REF` (a tag, branch or commit SHA). A Python
package (one with a pyproject.toml or setup.py) becomes an editable uv path source, so the lock and the venv use
exactly the checked-out commit; anything else is left for PYTHONPATH (see the project's README). The first commit,
made by the next tasks, records each submodule's SHA.

Idempotent: a submodule already registered at external/<name> with the same URL (say, left by a copy that
failed on a wrong ref and is now retried with the right one) is brought to the asked ref, not added again. Once
the project has commits (a recopy), a registered submodule keeps the commit it is pinned at: bumping a pin is the
user's work.

With --update (run by `copier update`), only the entries that the committed answers do not list yet are added,
so a new `external_deps` answer given with --data adds its submodule, and nothing else is touched.
"""

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import yaml

from _common import fail, has_conflict_markers, run

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


def note(message: str) -> None:
    print(f"note: {message}", file=sys.stderr)


def has_uv_source(path: str) -> bool:
    """Whether pyproject.toml has a uv path source for `path` (a regex: the file may hold conflict markers)."""
    return re.search(rf'path\s*=\s*"(\./)?{re.escape(path)}/?"', Path("pyproject.toml").read_text()) is not None


def commit_of(path: str, ref: str) -> str:
    """The commit `ref` names in the checkout at `path`, or "" if it has no such ref (yet)."""
    query = ["git", "-C", path, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"]
    return subprocess.run(query, capture_output=True, text=True, check=False).stdout.strip()


def pinned(path: str) -> str:
    """The commit the project's HEAD pins the submodule at."""
    return run(["git", "rev-parse", f"HEAD:./{path}"], what=f"reading the pin of {path}").strip()


def add(entry: str, known: dict[str, str], keep_pins: bool) -> None:
    url, ref = parse(entry)
    path = f"external/{name_of(url)}"
    which = f"external dependency {entry!r}"
    if path not in known and not Path(path).exists():
        run([*GIT, "submodule", "add", "--quiet", url, path], what=f"{which}: git submodule add")
    elif known.get(path) == url and keep_pins:  # pinned by a commit of the project: leave the pin alone
        if ref and commit_of(path, ref) != pinned(path):
            move = f"git -C {path} checkout {ref} && git add {path}"
            note(f"{path} stays at its pin {pinned(path)[:12]}; to move it to {ref}: {move}")
        ref = None
    elif known.get(path) == url:  # left by a copy that failed: check it out, then move it to `ref`
        run([*GIT, "submodule", "update", "--init", "--quiet", "--", path], what=f"{which}: git submodule update")
    else:
        if path in known:
            fail(f"{which}: {path} is already a submodule from {known[path]}: answer that URL, or `git rm -f {path}`")
        fail(f"{which}: {path} already exists and is not a submodule: move it out of the way")
    if ref:
        if not commit_of(path, ref):
            run([*GIT, "-C", path, "fetch", "--quiet", "--tags", "origin"], what=f"{which}: git fetch")
        run(["git", "-C", path, "checkout", "--quiet", ref], what=f"{which}: checking out {ref!r}")
        run(["git", "add", path], what=f"{which}: git add")
    is_package = (Path(path) / "pyproject.toml").exists() or (Path(path) / "setup.py").exists()
    if is_package and not has_uv_source(path) and has_conflict_markers(Path("pyproject.toml")):
        note(f"resolve pyproject.toml, then run: uv add --no-workspace --editable ./{path}")
    elif is_package and not has_uv_source(path):
        # --no-workspace: a plain path source, not a uv workspace member
        add_source = ["uv", "add", "--quiet", "--frozen", "--no-workspace", "--editable", f"./{path}"]
        run(add_source, what=f"{which}: uv add")


parser = argparse.ArgumentParser()
parser.add_argument("entries", type=json.loads, help="the external_deps answer, as JSON")
parser.add_argument("--update", action="store_true", help="add only the entries that the committed answers lack")
parser.add_argument("--answers-file", default=".copier-answers.yml")
args = parser.parse_args()
entries = args.entries
if args.update:
    committed = subprocess.run(["git", "show", f"HEAD:./{args.answers_file}"], capture_output=True, text=True)
    answers = yaml.safe_load(committed.stdout) if committed.returncode == 0 else None
    before = (answers or {}).get("external_deps") or []
    listed = {f"external/{name_of(parse(entry)[0])}" for entry in entries}
    for dropped in sorted({f"external/{name_of(parse(entry)[0])}" for entry in before} - listed):
        if Path(dropped).exists():
            note(f"external_deps no longer lists {dropped}, which stays: remove it with `git rm {dropped}`")
    entries = [entry for entry in entries if entry not in before]
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
    add(entry, known, keep_pins=not first_copy)
