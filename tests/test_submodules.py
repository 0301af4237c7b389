"""External dependencies pinned as submodules: exact SHAs in the first commit, importable, checked by nox -s deps."""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
from pathlib import Path

import pytest

from conftest import IDENTITY, copy_template, generate, git, make_package_repo


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    root = tmp_path_factory.mktemp("upstream")
    alpha = make_package_repo(root / "alpha", "alpha", ["1.0", "2.0-dev"])
    subprocess.run(["git", *IDENTITY, "tag", "v1.0", alpha[0]], cwd=root / "alpha", check=True)
    beta = make_package_repo(root / "beta.git", "beta", ["first", "second"])
    return {"root": root, "alpha_v1": alpha[0], "beta_first": beta[0], "beta_second": beta[1]}


@pytest.fixture(scope="module")
def project(upstream: dict, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = upstream["root"]
    deps = [f"{root / 'alpha'}@v1.0", f"{root / 'beta.git'}@{upstream['beta_first']}"]
    return generate(tmp_path_factory.mktemp("with-deps") / "project", external_deps=json.dumps(deps))


def test_first_commit_records_each_pinned_sha(project: Path, upstream: dict) -> None:
    assert git(project, "rev-parse", "HEAD:external/alpha") == upstream["alpha_v1"]
    assert git(project, "rev-parse", "HEAD:external/beta") == upstream["beta_first"]
    assert len(git(project, "log", "--format=%H").splitlines()) == 1
    assert git(project, "status", "--porcelain") == ""
    sources = tomllib.loads((project / "pyproject.toml").read_text())["tool"]["uv"]["sources"]
    assert sources == {
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
