"""Copier task and migration: pin the samebits library (this template's own repository) as external/samebits.

The submodule's commit is the one of the template version being copied (or updated to), taken from the clone
that Copier rendered, so the copy works offline and pins exactly the code of that version. Its URL is the
template's source as the answers record it (`gh:org/repo` written out), which job.sh and a fresh clone fetch
from. uv installs it as an editable path source, so the lock, the venv and the image use exactly that checkout.

With --update (run by `copier update`): a pin still at the old template version moves to the new one; a pin the
user moved (a patched fork, a newer commit) stays, with a note. Idempotent: a recopy leaves a registered pin.
"""

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

from _common import fail, has_conflict_markers, require_uv, run

PATH = "external/samebits"
GIT = ["git", "-c", "protocol.file.allow=always"]
SHORTHANDS = {"gh:": "https://github.com/", "gl:": "https://gitlab.com/"}


def url_of(source: str) -> str:
    """Copier's `gh:org/repo` shorthand as the URL git needs; anything else (a URL, a local path) as it is."""
    for short, prefix in SHORTHANDS.items():
        if source.startswith(short):
            return prefix + source.removeprefix(short).removesuffix(".git") + ".git"
    return source


def commit_of(repo: str, ref: str) -> str:
    query = ["git", "-C", repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"]
    return subprocess.run(query, capture_output=True, text=True, check=False).stdout.strip()


def registered() -> bool:
    query = ["git", "config", "--file", ".gitmodules", f"submodule.{PATH}.path"]
    return subprocess.run(query, capture_output=True, check=False).returncode == 0


def has_uv_source() -> bool:
    return re.search(rf'path\s*=\s*"(\./)?{PATH}/?"', Path("pyproject.toml").read_text()) is not None


def add(clone: str, url: str, commit: str) -> None:
    if Path(PATH).exists():
        fail(f"{PATH} already exists and is not a submodule: move it out of the way, then copy again")
    run([*GIT, "clone", "--quiet", "--no-checkout", clone, PATH], what=f"cloning samebits into {PATH}")
    run(["git", "-C", PATH, "checkout", "--quiet", commit], what=f"checking out samebits {commit[:12]}")
    run(["git", "-C", PATH, "remote", "set-url", "origin", url], what="setting the library's URL")
    run([*GIT, "submodule", "add", "--quiet", url, PATH], what=f"git submodule add {PATH}")
    run(["git", "submodule", "absorbgitdirs", "--", PATH], what=f"git submodule absorbgitdirs {PATH}")


def move(clone: str, commit: str, version_from: str) -> None:
    pinned = run(["git", "rev-parse", f"HEAD:./{PATH}"], what=f"reading the pin of {PATH}").strip()
    if pinned == commit:
        return
    if pinned != commit_of(clone, version_from):
        step = f"git -C {PATH} fetch origin && git -C {PATH} checkout {commit} && git add {PATH}"
        print(f"note: {PATH} stays at your pin {pinned[:12]}; the template's is {commit[:12]}: {step}", file=sys.stderr)
        return
    run([*GIT, "-C", PATH, "fetch", "--quiet", clone, commit], what="fetching the new samebits")
    run(["git", "-C", PATH, "checkout", "--quiet", commit], what=f"checking out samebits {commit[:12]}")
    run(["git", "add", PATH], what=f"git add {PATH}")
    print(f"{PATH} moved to {commit[:12]} (the library of this template version)", file=sys.stderr)


require_uv()
parser = argparse.ArgumentParser()
parser.add_argument("--template", required=True, help="the template's clone that Copier renders from")
parser.add_argument("--source", required=True, help="the template's source, as the answers record it")
parser.add_argument("--update", action="store_true")
args = parser.parse_args()
commit = commit_of(args.template, "HEAD")
if not commit:
    fail(
        f"the template at {args.source} is not a git repository, so the samebits library cannot be pinned at an "
        "exact commit: copy from the template's git URL (or a git clone of it)"
    )
if not registered():
    add(args.template, url_of(args.source), commit)
elif args.update:
    move(args.template, commit, os.environ.get("VERSION_FROM", ""))
if not has_uv_source():
    add_source = ["uv", "add", "--quiet", "--frozen", "--no-workspace", "--editable", f"./{PATH}"]
    if has_conflict_markers(Path("pyproject.toml")):
        print(f"note: resolve pyproject.toml, then run: {' '.join(add_source[:2] + add_source[4:])}", file=sys.stderr)
    else:
        run(add_source, what="uv add ./external/samebits")
