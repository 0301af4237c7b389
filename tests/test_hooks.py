"""The post-copy hooks: git init, uv lock, first commit. Idempotent, and clear when something is missing."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from helpers.generation import ROOT, generate
from helpers.git import GIT_FILE, git
from helpers.template_versions import COPIED_LAYOUT, FLAT_LAYOUT

HOOKS = ("git_init.py", "library.py", "lock.py", "first_commit.py")


def run_hooks(project: Path, *, env: dict[str, str] | None = None) -> None:
    identity = ["--template=t", "--version=v", "--author-name=A", "--author-email=a@example.org"]
    identity += [f"--template-dir={ROOT / 'template'}"]
    arguments = {"first_commit.py": identity, "library.py": [f"--template={ROOT}", f"--source={ROOT}"]}
    for hook in HOOKS:
        args = arguments.get(hook, [])
        subprocess.run([sys.executable, str(ROOT / "hooks" / hook), *args], cwd=project, check=True, env=env)


def test_without_git_identity_the_first_commit_uses_the_author_answers(default_project: Path) -> None:
    assert git(default_project, "log", "--format=%an <%ae>") == "Experimenter <experimenter@example.com>"


def test_a_configured_git_identity_is_respected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "gitconfig"
    config.write_text("[user]\n\tname = Grace Hopper\n\temail = grace@example.org\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    project = generate(tmp_path / "project")
    assert git(project, "log", "--format=%an <%ae>") == "Grace Hopper <grace@example.org>"


def test_hooks_run_again_change_nothing(default_project: Path, tmp_path: Path) -> None:
    project = tmp_path / "copy"
    subprocess.run(
        [*GIT_FILE, "clone", "--quiet", "--recurse-submodules", str(default_project), str(project)], check=True
    )
    head = git(project, "rev-parse", "HEAD")
    lock = (project / "uv.lock").read_bytes()
    run_hooks(project)
    assert git(project, "rev-parse", "HEAD") == head
    assert git(project, "status", "--porcelain") == ""
    assert (project / "uv.lock").read_bytes() == lock


def test_missing_uv_stops_the_copy_with_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    without_uv = os.pathsep.join(d for d in os.environ["PATH"].split(os.pathsep) if not (Path(d) / "uv").exists())
    destination = tmp_path / "project"
    command = [sys.executable, "-m", "copier", "copy", "--trust", "--defaults", "--vcs-ref=HEAD"]
    done = subprocess.run(
        [*command, str(ROOT), str(destination)], capture_output=True, text=True, env={**os.environ, "PATH": without_uv}
    )
    assert done.returncode != 0
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert errors == [
        "error: uv is not installed, so uv.lock cannot be created: install it (`pip install uv` or "
        "https://docs.astral.sh/uv/getting-started/installation/), then run `uv lock` in the project"
    ]
    assert "Traceback" not in done.stderr
    assert not destination.exists()


def test_the_v0_2_0_moves_cover_every_file_that_v0_2_0_removed() -> None:
    """An edit to a removed file that no move names would only be kept in place, not carried: the table is complete."""
    moves = yaml.safe_load((ROOT / "hooks" / "migrations" / "v0.2.0.yaml").read_text())
    in_template = {old: "template/" + old.replace("src/{package}", "src/{{ package_name }}") for old in moves}
    flat = git(ROOT, "ls-tree", "-r", "--name-only", FLAT_LAYOUT, "--", "template").splitlines()
    then = set(git(ROOT, "ls-tree", "-r", "--name-only", COPIED_LAYOUT, "--", "template").splitlines())
    assert {path for path in flat if path not in then} == set(in_template.values())
    for new in moves.values():
        assert "template/" + new.replace("src/{package}", "src/{{ package_name }}") in then, new


def test_the_library_table_covers_every_copy_that_v0_3_0_took_into_the_library() -> None:
    """A copy the user edited must stop the update: every machinery file of the copied layout is in the table."""
    carry = carry_moves()
    places = carry.library_places(ROOT / "hooks" / "migrations", "{{ package_name }}")
    copied = git(ROOT, "ls-tree", "-r", "--name-only", COPIED_LAYOUT, "--", "template").splitlines()
    removed = {path.removeprefix("template/") for path in copied if not (ROOT / path).exists()}
    assert {path for path in removed if carry.in_library(path, places) is None} == {"docs/architecture.md.jinja"}
    for path in removed - {"docs/architecture.md.jinja"}:  # a folder of the library, or the very file
        assert (ROOT / carry.in_library(path, places)).parent.is_dir(), path


def carry_moves() -> ModuleType:
    sys.path.insert(0, str(ROOT / "hooks"))
    try:
        return importlib.import_module("carry_moves")
    finally:
        sys.path.remove(str(ROOT / "hooks"))


def test_a_file_moved_twice_is_followed_to_its_last_place(tmp_path: Path) -> None:
    (tmp_path / "v0.10.0.yaml").write_text("src/{package}/b.py: src/{package}/c.py\n")
    (tmp_path / "v0.2.0.yaml").write_text("src/{package}/a.py: src/{package}/b.py\n")
    chains = carry_moves().move_chains(tmp_path, "pkg")
    assert chains == {"src/pkg/a.py": ["src/pkg/b.py", "src/pkg/c.py"], "src/pkg/b.py": ["src/pkg/c.py"]}


@pytest.mark.parametrize(
    ("text", "top_level", "names"),
    [
        ("_target_: pkg.models.MLP", False, {"pkg.models.MLP"}),
        ("from pkg import models, data as d", False, {"pkg.models", "pkg.data"}),
        ("from pkg import (\n    models,\n    data,\n)", False, {"pkg.models", "pkg.data"}),
        ("from . import models\nfrom .data import Digits", True, {"pkg.models", "pkg.data"}),
        ("from . import models", False, set()),  # in a subpackage, `.` is not the package
        ("import pkgx.models", False, set()),
    ],
)
def test_imports_of_the_package_are_found_in_every_form(text: str, top_level: bool, names: set[str]) -> None:
    assert carry_moves().imported_names(text, "pkg", top_level) == names
