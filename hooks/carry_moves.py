"""Copier migration, on every update: no edit of the user's is lost to a file that the new version moved or removed.

Copier merges a user's edits into files that keep their path, but it deletes a file that the new version no
longer has, edits and all. So, for each file of the old version that the new one lacks:
- if a move table (`hooks/migrations/v<version>.yaml`, old path: new path) sends it to a file the new version
  has, and the user edited it, the edits are merged into that file: a 3-way merge whose base is the old template
  file, one side the user's file and the other the new template file;
- otherwise, if the user edited it, it is kept where it is, and named. A file rendered from a `.jinja` template
  cannot be compared with its base (its text depends on the answers), so it is kept whenever it is there.

A file that a version moved into the samebits library (`hooks/migrations/library.yaml`) is the library's from then
on: an unedited copy is removed (or, for the entry points, replaced by the thin one), and an edited copy stops the
update before any change, naming the file and where its code now lives.

`--stage before` runs before Copier changes anything: if an edit cannot be carried cleanly (a merge conflict, a
binary file, or the new place already taken), it stops the update with one line naming the files to move by
hand. `--stage after` runs once Copier has written the new version: it writes the carried and kept files, and
names the user's files that still import a moved module by its old name.

The user's files are read as committed (Copier updates only a clean tree and does not commit); the old template
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

from _common import fail

PACKAGE_DIR = "{{ package_name }}"  # how the template names the package folder
TEMPLATE_DIR = "template/"  # Copier's _subdirectory
JINJA = ".jinja"


@dataclass(frozen=True)
class Carry:
    old: str
    new: str | None  # None: kept in place
    merged: bytes | None = None
    templated: bool = False  # rendered from a .jinja file: whether the user edited it cannot be told


def git(*args: str, cwd: Path | None = None) -> bytes | None:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)
    return done.stdout if done.returncode == 0 else None


def committed(path: str) -> bytes | None:
    """The user's file as committed; `./` reads it relative to the project, which may be a repository's subfolder."""
    return git("show", f"HEAD:./{path}")


def template_files(template: Path, version: str, package: str) -> dict[str, str]:
    """{path in the project: path in the template} of every file the template renders at `version`."""
    listed = (git("ls-tree", "-r", "-z", "--name-only", version, "--", TEMPLATE_DIR, cwd=template) or b"").decode()
    files = {}
    for name in filter(None, listed.split("\0")):
        rendered = name.removeprefix(TEMPLATE_DIR).replace(PACKAGE_DIR, package).removesuffix(JINJA)
        if "{{" not in rendered and "{%" not in rendered:  # a conditional name: not one fixed path
            files[rendered] = name
    return files


def move_chains(migrations: Path, package: str) -> dict[str, list[str]]:
    """Every file that some version moved -> its places in version order (a file can move more than once)."""
    chains: dict[str, list[str]] = {}
    tables = sorted(migrations.glob("v*.yaml"), key=lambda path: [int(part) for part in path.stem[1:].split(".")])
    for table in tables:
        for old, new in (yaml.safe_load(table.read_text()) or {}).items():
            old, new = old.format(package=package), new.format(package=package)
            for chain in chains.values():
                if chain[-1] == old:
                    chain.append(new)
            chains.setdefault(old, [new])
    return chains


def library_places(migrations: Path, package: str) -> dict[str, str]:
    """Old place in the project (a folder ends in /) -> its place in the library, for what moved there."""
    table = migrations / "library.yaml"
    entries = (yaml.safe_load(table.read_text()) or {}) if table.is_file() else {}
    return {old.format(package=package): new for old, new in entries.items()}


def in_library(path: str, places: dict[str, str]) -> str | None:
    """Where the library now holds `path`'s code, or None if it did not move there."""
    for old, new in places.items():
        if path == old or (old.endswith("/") and path.startswith(old)):
            return new + path.removeprefix(old) if old.endswith("/") else new
    return None


def crosses_library(
    old_files: dict[str, str], new_files: dict[str, str], chains: dict[str, list[str]], places: dict[str, str]
) -> bool:
    """Whether the old version still had copies of code that the new version takes from the library."""
    finals = (chains[old][-1] if old in chains else old for old in old_files)
    return any(in_library(final, places) and final not in new_files for final in finals)


def edited_machinery(
    template: Path, version_from: str, old_files: dict[str, str], chains: dict[str, list[str]], places: dict[str, str]
) -> list[str]:
    """The user's edited copies of files that now live in the library, each with its new place."""
    edited = []
    for old, source in sorted(old_files.items()):
        final = chains[old][-1] if old in chains else old
        place = in_library(final, places)
        ours = committed(old)
        if place is None or ours is None or source.endswith(JINJA):
            continue
        if ours != git("show", f"{version_from}:{source}", cwd=template):
            edited.append(f"{old} (now samebits' {place})")
    return edited


def merge(ours: bytes, base: bytes, theirs: bytes) -> bytes | None:
    """`git merge-file`: the merged bytes, or None when both sides changed the same lines (or a file is binary)."""
    with tempfile.TemporaryDirectory(prefix="carry-") as scratch:
        files = []
        for name, content in (("ours", ours), ("base", base), ("theirs", theirs)):
            Path(scratch, name).write_bytes(content)
            files.append(str(Path(scratch, name)))
        done = subprocess.run(["git", "merge-file", "-p", *files], capture_output=True, check=False)
    return done.stdout if done.returncode == 0 else None


def plan(
    template: Path, version_from: str, chains: dict[str, list[str]], package: str
) -> tuple[list[Carry], list[str]]:
    """What to carry or keep, and (as text) what cannot be carried."""
    if git("rev-parse", "--verify", "--quiet", f"{version_from}^{{commit}}", cwd=template) is None:
        fail(f"template version {version_from} is not in the template's history, so your edits cannot be carried")
    old_files = template_files(template, version_from, package)
    new_files = template_files(template, "HEAD", package)
    places = library_places(template / "hooks" / "migrations", package)
    crossing = crosses_library(old_files, new_files, chains, places)
    if crossing and (edited := edited_machinery(template, version_from, old_files, chains, places)):
        fail(
            f"update stopped before changing anything: {os.environ.get('VERSION_TO', 'this version')} moved the "
            "training loop and the machinery into the samebits library (external/samebits), and you edited "
            f"these copies of it: {'; '.join(edited)}. For each: save your change as a patch, put the file back as "
            f"template {version_from} made it, commit and update again; then make the change in samebits upstream, or "
            "patch external/samebits (your runs are then marked dirty)"
        )
    carries, blocked = [], []
    for old, source in sorted(old_files.items()):
        ours = committed(old)
        if old in new_files or ours is None:
            continue  # Copier merges the user's edits into it, or the user deleted it
        base = None if source.endswith(JINJA) else git("show", f"{version_from}:{source}", cwd=template)
        if ours == base:
            continue  # never edited: nothing of the user's to lose
        new = next((place for place in reversed(chains.get(old, [])) if place in new_files), None)
        if new is None or base is None:
            carries.append(Carry(old, None, templated=base is None))
        elif committed(new) is not None:
            blocked.append(f"{old} (its new place {new} is taken)")
        elif (merged := merge(ours, base, (template / new_files[new]).read_bytes())) is None:
            blocked.append(f"{old} -> {new}")
        else:
            carries.append(Carry(old, new, merged))
    return carries, blocked


def module_of(path: str) -> str:
    """`src/pkg/research/models/mlp.py` -> `pkg.research.models.mlp`; a package's `__init__.py` -> the package."""
    return path.removeprefix("src/").removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def imported_names(text: str, package: str, top_level: bool) -> set[str]:
    """The modules of `package` that `text` names: `pkg.x` anywhere, `from pkg import x`, and in the package's top
    folder `from .x import ...` and `from . import x`."""
    names = {match.group(0) for match in re.finditer(rf"\b{package}(\.\w+)+", text)}
    sources = [package, r"\."] if top_level else [package]
    for source in sources:
        for match in re.finditer(rf"^\s*from\s+{source}\s+import\s+\(?([\w\s,]+)", text, flags=re.MULTILINE):
            names |= {f"{package}.{part.split()[0]}" for part in match.group(1).split(",") if part.strip()}
    if top_level:
        names |= {f"{package}.{name}" for name in re.findall(r"^\s*from\s+\.(\w+)", text, flags=re.MULTILINE)}
    return names


def deeper_relative_imports(text: str, path: str) -> set[str]:
    """`from ..core.batches import X` in src/pkg/research/x.py -> pkg.core.batches (two dots and more)."""
    if not path.startswith("src/"):
        return set()
    parts = module_of(path).split(".")[:-1]  # the file's package
    found = set()
    for dots, name in re.findall(r"^\s*from\s+(\.{2,})([\w.]*)\s+import", text, flags=re.MULTILINE):
        base = parts[: len(parts) - len(dots) + 1]
        if base:
            found.add(".".join([*base, *filter(None, [name])]))
    return found


def stale_references(chains: dict[str, list[str]], places: dict[str, str], package: str) -> list[str]:
    """The project's files (src/, configs/, tests/) that still import a moved module by its old name."""
    moved = {module_of(old): module_of(chain[-1]) for old, chain in chains.items() if old.startswith("src/")}
    moved = {old: new for old, new in moved.items() if old != new}
    # the machinery's folders, now the library's modules (its entry points keep their names in the project)
    moved |= {
        module_of(old.rstrip("/")): module_of(new.rstrip("/")) for old, new in places.items() if old.endswith("/")
    }
    notes = []
    for path in filter(None, (git("ls-files", "-z", "--", "src", "configs", "tests") or b"").decode().split("\0")):
        try:
            text = Path(path).read_text()
        except (OSError, UnicodeDecodeError):
            continue
        found = imported_names(text, package, top_level=Path(path).parent == Path("src", package))
        found |= deeper_relative_imports(text, path)
        olds = sorted(old for old in moved if any(name == old or name.startswith(f"{old}.") for name in found))
        notes += [f"note: {path} still imports {old}, which is now {moved[old]}" for old in olds]
    return notes


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--stage", choices=["before", "after"], required=True)
    parser.add_argument("--template", type=Path, required=True, help="the template's git clone (new version)")
    parser.add_argument("--answers-file", type=Path, default=Path(".copier-answers.yml"))
    args = parser.parse_args()
    package = yaml.safe_load(args.answers_file.read_text())["package_name"]
    version_from, version_to = os.environ["VERSION_FROM"], os.environ["VERSION_TO"]
    chains = move_chains(args.template / "hooks" / "migrations", package)
    carries, blocked = plan(args.template, version_from, chains, package)
    if blocked:
        fail(
            f"update stopped before changing anything: {version_to} moved files you edited, and these edits cannot be "
            f"merged into their new places: {'; '.join(blocked)}. Take your edits out of those files (keep a copy), "
            "commit, update, then put the edits into the new files by hand"
        )
    if args.stage == "before":
        return
    for carry in carries:
        if carry.new is None:
            if not Path(carry.old).exists():  # never over a file that this version rendered there
                subprocess.run(["git", "checkout", "HEAD", "--", f"./{carry.old}"], check=True)
                why = "you edited it"
                if carry.templated:
                    why = (
                        "it was rendered from a template, so your edits cannot be told apart: delete it if it has none"
                    )
                print(f"kept {carry.old}, which {version_to} no longer has: {why}", file=sys.stderr)
            continue
        assert carry.merged is not None
        Path(carry.new).write_bytes(carry.merged)
        print(f"carried your edits to {carry.old} into {carry.new}", file=sys.stderr)
    for note in stale_references(chains, library_places(args.template / "hooks" / "migrations", package), package):
        print(note, file=sys.stderr)


if __name__ == "__main__":
    main()
