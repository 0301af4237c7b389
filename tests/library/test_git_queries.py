"""The library's git queries: Python's bytecode is never a change, not even inside a submodule whose repository
does not ignore it, and no query takes the index's lock (a kill -9 would leave it behind)."""

from __future__ import annotations

import os
import subprocess
from importlib import import_module
from pathlib import Path

deps = import_module("samebits.core.deps")
provenance = import_module("samebits.core.provenance")

IDENTITY = ["-c", "user.name=T", "-c", "user.email=t@e.org", "-c", "protocol.file.allow=always"]


def git(where: Path, *args: str) -> None:
    subprocess.run(["git", *IDENTITY, *args], cwd=where, check=True, capture_output=True)


def project_with_a_submodule(tmp_path: Path) -> Path:
    """A project pinning a dependency whose repository has no .gitignore, as small lab repositories often do."""
    library = tmp_path / "library"
    library.mkdir()
    git(library, "init", "--quiet", "--initial-branch=main")
    (library / "model.py").write_text("WIDTH = 8\n")
    git(library, "add", "model.py")
    git(library, "commit", "--quiet", "-m", "model")
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "--quiet", "--initial-branch=main")
    (project / ".gitignore").write_text("__pycache__/\n")
    git(project, "add", ".gitignore")
    git(project, "submodule", "--quiet", "add", str(library), "external/library")
    git(project, "commit", "--quiet", "-m", "pin the library")
    return project


def test_bytecode_written_into_a_submodule_is_not_a_change(tmp_path: Path) -> None:
    project = project_with_a_submodule(tmp_path)
    checkout = project / "external" / "library"
    (checkout / "__pycache__").mkdir()
    (checkout / "__pycache__" / "model.cpython-311.pyc").write_bytes(b"bytecode")
    (checkout / "stale.pyc").write_bytes(b"bytecode")
    assert provenance.git_state(project)["dirty"] is False
    assert [pin.problem for pin in deps.pins(project)] == [""]
    (checkout / "extra.py").write_text("DEPTH = 2\n")  # new code is a change, bytecode beside it or not
    assert provenance.git_state(project)["dirty"] is True
    (pin,) = deps.pins(project)
    assert pin.problem.startswith("has local changes")


def test_a_query_leaves_the_index_alone(tmp_path: Path) -> None:
    """A plain `git status` rewrites the index when a tracked file's stat data changed, under the index's lock."""
    project = project_with_a_submodule(tmp_path)
    index = project / ".git" / "index"
    before = index.read_bytes()
    os.utime(project / ".gitignore", (1_000_000_000, 1_000_000_000))  # same content, other mtime: a refresh
    provenance.git_state(project)
    deps.pins(project)
    assert index.read_bytes() == before
    subprocess.run(["git", "status", "--porcelain"], cwd=project, check=True, capture_output=True)
    assert index.read_bytes() != before  # what the queries would have done without --no-optional-locks
