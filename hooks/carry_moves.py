"""Copier migration: carry a user's edits to files that a template version moved into the files' new places.

Copier's update merges a user's edits into files that keep their path, but a file that the new version no longer
has is deleted, edits and all. For each move listed in `--moves` (old path: new path), this script does a 3-way
merge: the old template file is the base, the user's file (as committed: an update needs a clean tree) is one
side, and the new template file is the other.

- `--stage before` runs before Copier changes anything. If any edited file cannot be carried cleanly (a merge
  conflict, or the new path is already taken), it stops the update with one line naming the files to move by
  hand.
- `--stage after` runs once Copier has written the new version: it writes each carried file into its new place,
  and names the user's files that still import a moved module.

Copier gives the migration VERSION_FROM (the project's template version) in the environment; this script reads
the old template files at that version from the template's git clone (`--template`).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import yaml

from _common import fail

PACKAGE_DIR = "src/{{ package_name }}/"  # how the template names the package folder


@dataclass(frozen=True)
class Carry:
    old: str
    new: str
    merged: str | None  # None: the merge conflicts


def git_show(template: Path, version: str, path: str) -> str | None:
    done = subprocess.run(
        ["git", "-C", str(template), "show", f"{version}:{path}"], capture_output=True, text=True, check=False
    )
    return done.stdout if done.returncode == 0 else None


def committed(path: str) -> str | None:
    """The user's file as committed in the project (Copier refuses to update a dirty tree)."""
    done = subprocess.run(["git", "show", f"HEAD:{path}"], capture_output=True, text=True, check=False)
    return done.stdout if done.returncode == 0 else None


def template_path(project_path: str, package: str) -> str:
    return "template/" + project_path.replace(f"src/{package}/", PACKAGE_DIR, 1)


def merge(ours: str, base: str, theirs: str) -> str | None:
    """`git merge-file`: the merged text, or None when the two sides changed the same lines."""
    with tempfile.TemporaryDirectory(prefix="carry-") as scratch:
        files = []
        for name, text in (("ours", ours), ("base", base), ("theirs", theirs)):
            path = Path(scratch, name)
            path.write_text(text)
            files.append(str(path))
        done = subprocess.run(["git", "merge-file", "-p", *files], capture_output=True, text=True, check=False)
    return done.stdout if done.returncode == 0 else None


def plan(template: Path, version_from: str, moves: dict[str, str], package: str) -> tuple[list[Carry], list[str]]:
    """What to carry, and (as lines of text) what cannot be carried."""
    known = ["git", "-C", str(template), "rev-parse", "--verify", "--quiet", f"{version_from}^{{commit}}"]
    if subprocess.run(known, capture_output=True, check=False).returncode != 0:
        fail(f"template version {version_from} is not in the template's history, so your edits cannot be carried")
    carries, blocked = [], []
    for old, new in moves.items():
        ours = committed(old)
        base = git_show(template, version_from, template_path(old, package))
        if ours is None or ours == base:
            continue  # deleted or never edited: the new version's file replaces it as it is
        theirs = (template / template_path(new, package)).read_text()
        if committed(new) is not None:
            blocked.append(f"{old} (its new place {new} exists already)")
            continue
        merged = merge(ours, base or "", theirs)
        if merged is None:
            blocked.append(f"{old} -> {new}")
        carries.append(Carry(old, new, merged))
    return carries, blocked


def module_of(path: str) -> str:
    """`src/pkg/research/models/mlp.py` -> `pkg.research.models.mlp`; a package's `__init__.py` -> the package."""
    return path.removeprefix("src/").removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def stale_references(moves: dict[str, str], package: str) -> list[str]:
    """The project's files that still import a module that moved (the new version's files never do).

    Absolute names (`pkg.models`) are looked for in src/, configs/ and tests/; relative ones (`from .models`) only
    in the package's top folder, where the moved modules used to live.
    """
    moved = {module_of(old): module_of(new) for old, new in moves.items() if old.startswith("src/")}
    moved = {old: new for old, new in moved.items() if old != new}
    absolute = re.compile(rf"\b({'|'.join(map(re.escape, moved))})\b")
    local_names = "|".join(re.escape(old.removeprefix(f"{package}.")) for old in moved)
    relative = re.compile(rf"^\s*from \.({local_names}) import", flags=re.MULTILINE)
    listed = subprocess.run(["git", "ls-files", "-z", "--", "src", "configs", "tests"], capture_output=True, text=True)
    notes = []
    for path in filter(None, listed.stdout.split("\0")):
        try:
            text = Path(path).read_text()
        except (OSError, UnicodeDecodeError):
            continue
        found = set(absolute.findall(text))
        if Path(path).parent == Path("src", package):
            found |= {f"{package}.{name}" for name in relative.findall(text)}
        notes += [f"note: {path} still imports {name}, which is now {moved[name]}" for name in sorted(found)]
    return notes


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--stage", choices=["before", "after"], required=True)
    parser.add_argument("--moves", type=Path, required=True, help="YAML: old path -> new path, with {package}")
    parser.add_argument("--template", type=Path, required=True, help="the template's git clone (new version)")
    parser.add_argument("--answers-file", type=Path, default=Path(".copier-answers.yml"))
    args = parser.parse_args()
    package = yaml.safe_load(args.answers_file.read_text())["package_name"]
    listed = yaml.safe_load(args.moves.read_text())
    moves = {old.format(package=package): new.format(package=package) for old, new in listed.items()}
    version_from, version_to = os.environ["VERSION_FROM"], os.environ.get("VERSION_TO", "the new version")
    carries, blocked = plan(args.template, version_from, moves, package)
    if blocked:
        fail(
            f"update stopped before changing anything: {version_to} moved files you edited, and these edits clash "
            f"with its changes: {'; '.join(blocked)}. Take your edits out of those files (keep a copy), commit, "
            "update, then put the edits into the new files by hand"
        )
    if args.stage == "before":
        return
    for carry in carries:
        assert carry.merged is not None  # a conflict stopped the update in the before stage
        Path(carry.new).parent.mkdir(parents=True, exist_ok=True)
        Path(carry.new).write_text(carry.merged)
        print(f"carried your edits to {carry.old} into {carry.new}", file=sys.stderr)
    for note in stale_references(moves, package):
        print(note, file=sys.stderr)


if __name__ == "__main__":
    main()
