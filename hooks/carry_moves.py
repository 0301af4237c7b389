"""Copier migration, on every update: no edit of the user's is lost to a file that the new version moved or removed.

Copier merges a user's edits into files that keep their path, but it deletes a file that the new version no
longer has, edits and all. So:
- a file that a version moved (listed in `hooks/migrations/v<version>.yaml`, old path: new path, for each
  version the update crosses) gets a 3-way merge into its new place: the old template file is the base, the
  user's file is one side, the new template file the other;
- an edited file that the new version removed without a move is kept where it is, and named.

`--stage before` runs before Copier changes anything: if an edit cannot be carried cleanly (a merge conflict, or
the new place is taken), it stops the update with one line naming the files to move by hand. `--stage after` runs
once Copier has written the new version: it writes the carried and kept files, and names the user's files that
still import a moved module.

The user's files are read as committed (Copier updates only a clean tree, and does not commit), the old template
files from the template's git clone at VERSION_FROM, which Copier passes in the environment.
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
from packaging.version import Version

from _common import fail

PACKAGE_DIR = "{{ package_name }}"  # how the template names the package folder
TEMPLATE_DIR = "template/"  # Copier's _subdirectory


@dataclass(frozen=True)
class Carry:
    old: str
    new: str | None  # None: removed without a move, so kept in place
    text: str


def git(*args: str, cwd: Path | None = None) -> str | None:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    return done.stdout if done.returncode == 0 else None


def committed(path: str) -> str | None:
    return git("show", f"HEAD:{path}")


def template_files(template: Path, version: str, package: str) -> dict[str, str]:
    """{path in the project: path in the template} of the plain (not .jinja) files the template has at `version`.

    A templated file's text depends on the answers, so it cannot be compared with the user's; Copier merges
    those that keep their path."""
    listed = git("ls-tree", "-r", "--name-only", version, "--", TEMPLATE_DIR, cwd=template) or ""
    return {
        name.removeprefix(TEMPLATE_DIR).replace(PACKAGE_DIR, package): name
        for name in listed.splitlines()
        if not name.endswith(".jinja") and "{{" not in name.replace(PACKAGE_DIR, "") and "{%" not in name
    }


def moves_crossed(migrations: Path, version_from: Version, version_to: Version, package: str) -> dict[str, str]:
    """The moves of every version in (from, to], from the `v<version>.yaml` files, `{package}` filled in; a file
    moved twice maps to its last place."""
    moves: dict[str, str] = {}
    for table in sorted(migrations.glob("v*.yaml"), key=lambda path: Version(path.stem)):
        if version_from < Version(table.stem) <= version_to:
            listed = yaml.safe_load(table.read_text()) or {}
            later = {old.format(package=package): new.format(package=package) for old, new in listed.items()}
            moves = {old: later.get(new, new) for old, new in moves.items()} | later
    return moves


def merge(ours: str, base: str, theirs: str) -> str | None:
    """`git merge-file`: the merged text, or None when the two sides changed the same lines."""
    with tempfile.TemporaryDirectory(prefix="carry-") as scratch:
        files = []
        for name, text in (("ours", ours), ("base", base), ("theirs", theirs)):
            Path(scratch, name).write_text(text)
            files.append(str(Path(scratch, name)))
        done = subprocess.run(["git", "merge-file", "-p", *files], capture_output=True, text=True, check=False)
    return done.stdout if done.returncode == 0 else None


def plan(template: Path, version_from: str, moves: dict[str, str], package: str) -> tuple[list[Carry], list[str]]:
    """What to carry or keep, and (as text) what cannot be carried."""
    if git("rev-parse", "--verify", "--quiet", f"{version_from}^{{commit}}", cwd=template) is None:
        fail(f"template version {version_from} is not in the template's history, so your edits cannot be carried")
    old_files = template_files(template, version_from, package)
    new_files = template_files(template, "HEAD", package)
    carries, blocked = [], []
    for old, source in sorted(old_files.items()):
        if old in new_files:
            continue  # Copier merges the user's edits into it
        ours, base = committed(old), git("show", f"{version_from}:{source}", cwd=template)
        if ours is None or ours == base:
            continue  # deleted or never edited: nothing of the user's to lose
        new = moves.get(old)
        if new is None:
            carries.append(Carry(old, None, ours))
        elif new not in new_files or committed(new) is not None:
            blocked.append(f"{old} (its new place {new} is {'taken' if new in new_files else 'gone'})")
        elif (merged := merge(ours, base or "", (template / new_files[new]).read_text())) is None:
            blocked.append(f"{old} -> {new}")
        else:
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
    if not moved:
        return []
    absolute = re.compile(rf"\b({'|'.join(map(re.escape, moved))})\b")
    local_names = "|".join(re.escape(old.removeprefix(f"{package}.")) for old in moved)
    relative = re.compile(rf"^\s*from \.({local_names}) import", flags=re.MULTILINE)
    notes = []
    for path in filter(None, (git("ls-files", "-z", "--", "src", "configs", "tests") or "").split("\0")):
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
    parser.add_argument("--template", type=Path, required=True, help="the template's git clone (new version)")
    parser.add_argument("--answers-file", type=Path, default=Path(".copier-answers.yml"))
    args = parser.parse_args()
    package = yaml.safe_load(args.answers_file.read_text())["package_name"]
    version_from, version_to = os.environ["VERSION_FROM"], os.environ["VERSION_TO"]
    pep440 = Version(os.environ["VERSION_PEP440_FROM"]), Version(os.environ["VERSION_PEP440_TO"])
    moves = moves_crossed(args.template / "hooks" / "migrations", *pep440, package)
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
        target = Path(carry.new or carry.old)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(carry.text)
        if carry.new:
            print(f"carried your edits to {carry.old} into {carry.new}", file=sys.stderr)
        else:
            print(f"kept {carry.old}, which {version_to} no longer has, because you edited it", file=sys.stderr)
    for note in stale_references(moves, package):
        print(note, file=sys.stderr)


if __name__ == "__main__":
    main()
