"""External dependencies pinned as submodules: exact SHAs in the first commit, importable, checked by nox -s deps."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from helpers.generation import ROOT, copy_template, generate
from helpers.git import IDENTITY, git, make_package_repo


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    root = tmp_path_factory.mktemp("upstream")
    alpha = make_package_repo(root / "alpha", "alpha", ["1.0", "2.0-dev"])
    subprocess.run(["git", *IDENTITY, "tag", "v1.0", alpha[0]], cwd=root / "alpha", check=True)
    beta = make_package_repo(root / "beta.git", "beta", ["first", "second"])
    return {"root": root, "alpha_v1": alpha[0], "alpha_tip": alpha[1], "beta_first": beta[0], "beta_second": beta[1]}


@pytest.fixture(scope="module")
def project(upstream: dict, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generate(tmp_path_factory.mktemp("with-deps") / "project", external_deps=json.dumps(deps_of(upstream)))


def deps_of(upstream: dict) -> list[str]:
    root = upstream["root"]
    return [f"{root / 'alpha'}@v1.0", f"{root / 'beta.git'}@{upstream['beta_first']}"]


def test_first_commit_records_each_pinned_sha(project: Path, upstream: dict) -> None:
    assert git(project, "rev-parse", "HEAD:external/alpha") == upstream["alpha_v1"]
    assert git(project, "rev-parse", "HEAD:external/beta") == upstream["beta_first"]
    assert len(git(project, "log", "--format=%H").splitlines()) == 1
    assert git(project, "status", "--porcelain") == ""
    sources = tomllib.loads((project / "pyproject.toml").read_text())["tool"]["uv"]["sources"]
    assert sources == {
        "samebits": {"path": "external/samebits", "editable": True},
        "alpha": {"path": "external/alpha", "editable": True},
        "beta": {"path": "external/beta", "editable": True},
    }
    assert subprocess.run(["uv", "lock", "--check"], cwd=project, capture_output=True).returncode == 0


def test_deps_are_importable_at_their_pinned_versions(project: Path) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith("VIRTUAL_ENV")}
    code = "import alpha, beta; print(alpha.VERSION, beta.VERSION)"
    done = subprocess.run(
        ["uv", "run", "--frozen", "python", "-c", code], cwd=project, capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1.0", "first"]


def test_nox_deps_passes_then_fails_when_a_checkout_moves(project: Path, upstream: dict) -> None:
    ok = subprocess.run(["nox", "-s", "deps"], cwd=project, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "external/alpha" in ok.stdout and "external/beta" in ok.stdout
    subprocess.run(
        ["git", "-C", "external/beta", "checkout", "--quiet", upstream["beta_second"]], cwd=project, check=True
    )
    try:
        moved = subprocess.run(["nox", "-s", "deps"], cwd=project, capture_output=True, text=True)
        assert moved.returncode != 0
        assert "checkout differs from the pin" in moved.stdout
    finally:
        subprocess.run(["git", "-C", "external/beta", "checkout", "--quiet", upstream["beta_first"]], cwd=project)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("{root}/missing-repo", "error: external dependency '{root}/missing-repo': git submodule add failed: "),
        ("{root}/alpha@v9.9", "error: external dependency '{root}/alpha@v9.9': checking out 'v9.9' failed: "),
    ],
)
def test_a_bad_url_or_ref_fails_in_one_line_and_leaves_nothing(
    upstream: dict, tmp_path: Path, entry: str, message: str
) -> None:
    entry, message = entry.format(root=upstream["root"]), message.format(root=upstream["root"])
    destination = tmp_path / "project"
    done = copy_template(destination, external_deps=json.dumps([entry]))
    assert done.returncode != 0
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(message), done.stderr
    assert not destination.exists()


def test_the_submodules_task_run_again_changes_nothing(project: Path, upstream: dict, tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    recursive = ["git", "-c", "protocol.file.allow=always", "clone", "--quiet", "--recurse-submodules"]
    subprocess.run([*recursive, str(project), str(clone)], check=True)
    pyproject = (clone / "pyproject.toml").read_bytes()
    task = [sys.executable, str(ROOT / "hooks" / "submodules.py"), json.dumps(deps_of(upstream))]
    subprocess.run(task, cwd=clone, check=True)
    assert git(clone, "status", "--porcelain") == ""
    assert (clone / "pyproject.toml").read_bytes() == pyproject
    assert git(clone / "external" / "alpha", "rev-parse", "HEAD") == upstream["alpha_v1"]


def failed_copy_with_a_wrong_ref(upstream: dict, destination: Path) -> None:
    """A copy into an existing folder that fails on a wrong ref keeps the folder (Copier removes only a folder it
    created), with external/alpha cloned at its default branch and staged."""
    done = copy_template(destination, external_deps=json.dumps([f"{upstream['root'] / 'alpha'}@no-such-tag"]))
    assert done.returncode != 0
    assert git(destination / "external" / "alpha", "rev-parse", "HEAD") == upstream["alpha_tip"]


def test_a_copy_retried_with_the_right_ref_pins_it_and_commits_only_the_template(
    project: Path, upstream: dict, tmp_path: Path
) -> None:
    destination = tmp_path / "project"
    destination.mkdir()
    (destination / "notes.txt").write_text("the user's, from before the copy\n")
    failed_copy_with_a_wrong_ref(upstream, destination)

    done = copy_template(destination, external_deps=json.dumps([f"{upstream['root'] / 'alpha'}@v1.0"]))
    assert done.returncode == 0, done.stderr
    assert git(destination, "rev-parse", "HEAD:external/alpha") == upstream["alpha_v1"]
    assert git(destination / "external" / "alpha", "rev-parse", "HEAD") == upstream["alpha_v1"]
    sources = tomllib.loads((destination / "pyproject.toml").read_text())["tool"]["uv"]["sources"]
    assert sources == {
        "samebits": {"path": "external/samebits", "editable": True},
        "alpha": {"path": "external/alpha", "editable": True},
    }
    # The first commit holds what a copy into a new folder commits, and the user's file stays untracked, named once.
    committed = set(git(destination, "ls-tree", "-r", "--name-only", "HEAD").splitlines())
    assert committed == set(git(project, "ls-tree", "-r", "--name-only", "HEAD").splitlines()) - {"external/beta"}
    assert git(destination, "status", "--porcelain") == "?? notes.txt"
    notes = [line for line in done.stderr.splitlines() if line.startswith("note:")]
    assert notes == ["note: not from the template, so left out of the first commit (untracked): notes.txt"]


@pytest.mark.parametrize(
    ("retry", "message"),
    [
        (
            ["{root}/fork/alpha@v1.0"],
            "error: external dependency '{root}/fork/alpha@v1.0': external/alpha is already a submodule from "
            "{root}/alpha: answer that URL, or `git rm -f external/alpha`",
        ),
        (
            [],
            "error: external_deps: external/alpha is a submodule (left by an earlier, failed copy?) that the answer "
            "does not list: list it, or remove it with `git rm -f external/alpha`",
        ),
    ],
)
def test_a_retry_that_disagrees_with_the_submodule_left_there_fails_in_one_line(
    upstream: dict, tmp_path: Path, retry: list[str], message: str
) -> None:
    root = upstream["root"]
    destination = tmp_path / "project"
    destination.mkdir()
    failed_copy_with_a_wrong_ref(upstream, destination)
    done = copy_template(destination, external_deps=json.dumps([entry.format(root=root) for entry in retry]))
    assert done.returncode != 0
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert errors == [message.format(root=root)], done.stderr
    no_commit = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", "HEAD"], cwd=destination, capture_output=True
    )
    assert no_commit.returncode != 0
