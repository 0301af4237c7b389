"""Generating projects from this checkout, shared across the test session to keep the suite fast."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PACKAGE = "my_experiments"


def copy_template(destination: Path, **answers: Any) -> subprocess.CompletedProcess[str]:
    """Run `copier copy --trust --defaults` as users do, from this checkout's HEAD, in a fresh process.

    Copier includes uncommitted changes of a local template, so this tests the working tree. A fresh process
    also hands the test's environment (git config, PATH) to the post-copy tasks.
    """
    data = [f"--data={key}={value}" for key, value in answers.items()]
    command = [sys.executable, "-m", "copier", "copy", "--trust", "--defaults", "--quiet", "--vcs-ref=HEAD"]
    return subprocess.run([*command, *data, str(ROOT), str(destination)], capture_output=True, text=True)


def generate(destination: Path, **answers: Any) -> Path:
    done = copy_template(destination, **answers)
    assert done.returncode == 0, done.stderr
    return destination


def example_answers(name: str) -> dict[str, Any]:
    return yaml.safe_load((ROOT / "examples" / f"{name}.yml").read_text())


def run(project: Path, *command: str, expect: int = 0, timeout: float = 1500) -> subprocess.CompletedProcess[str]:
    """Run a command in a generated project (outside this session's venv: see below) and check its exit code.

    The command leads a process group of its own, killed whole when it runs out of time: a timed-out `nox -s
    tests` would otherwise leave the project's pytest and its training processes running through the rest of
    the suite, slowing every later test on a 2-core machine."""
    process = subprocess.Popen(
        command, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        pytest.fail(f"{' '.join(command)} ran past {timeout:.0f} s:\n{stdout[-4000:]}\n{stderr[-4000:]}")
    done = subprocess.CompletedProcess(command, process.returncode, stdout, stderr)
    assert done.returncode == expect, f"{' '.join(command)}:\n{stdout[-4000:]}\n{stderr[-4000:]}"
    return done


def git(project: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=project, capture_output=True, text=True, check=True).stdout.strip()


IDENTITY = ["-c", "user.name=Test", "-c", "user.email=test@example.org"]
# Local repositories as submodule sources (every project has one: the library, from this checkout).
GIT_FILE = ["git", "-c", "protocol.file.allow=always"]


def make_package_repo(folder: Path, name: str, versions: list[str]) -> list[str]:
    """A local git repo holding a tiny Python package, one commit per version; returns the commit SHAs."""
    folder.mkdir(parents=True)
    subprocess.run(["git", "init", "--quiet", "--initial-branch=main"], cwd=folder, check=True)
    (folder / "pyproject.toml").write_text(
        f'[project]\nname = "{name}"\nversion = "0.1.0"\n\n'
        '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n'
    )
    shas = []
    for version in versions:
        (folder / "src" / name).mkdir(parents=True, exist_ok=True)
        (folder / "src" / name / "__init__.py").write_text(f'VERSION = "{version}"\n')
        subprocess.run(["git", "add", "-A"], cwd=folder, check=True)
        subprocess.run(["git", *IDENTITY, "commit", "--quiet", "-m", version], cwd=folder, check=True)
        shas.append(git(folder, "rev-parse", "HEAD"))
    return shas


NOX_SESSION_VARIABLES = ("UV_PROJECT_ENVIRONMENT", "UV_PYTHON", "VIRTUAL_ENV")


@pytest.fixture(scope="session", autouse=True)
def outside_the_nox_session() -> Iterator[None]:
    """Run every command as from a user's shell, not from inside `nox -s tests`.

    nox points UV_PROJECT_ENVIRONMENT and UV_PYTHON at its own venv for uv-backed sessions. Inherited, they make
    a generated project's `uv lock` use this venv's Python (3.11, whatever the project asks for) and its
    `uv sync` replace this venv's packages with the project's.
    """
    saved = {key: os.environ.pop(key) for key in NOX_SESSION_VARIABLES if key in os.environ}
    yield
    os.environ.update(saved)


@pytest.fixture(scope="session", autouse=True)
def no_git_identity(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Run every test as a fresh machine: no global git config, so the hook's fallback identity is used."""
    empty = tmp_path_factory.mktemp("gitconfig") / "config"
    empty.touch()
    saved = {key: os.environ.get(key) for key in ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM")}
    os.environ.update(GIT_CONFIG_GLOBAL=str(empty), GIT_CONFIG_NOSYSTEM="1")
    yield
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="session", autouse=True)
def interpreters_without_shims(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Put pyenv's real python3.11/3.12/3.13 on PATH, ahead of its shims, for `uv lock` in the hook.

    A pyenv shim answers with a different Python depending on the folder it runs in, while uv caches what an
    executable reported by its path: once a shim was asked from the wrong folder, uv believes it has no 3.12,
    tries to download one, and fails offline. Without pyenv this does nothing.
    """
    versions = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    links = tmp_path_factory.mktemp("interpreters")
    for version in ("3.11", "3.12", "3.13"):
        found = sorted(versions.glob(f"{version}.*/bin/python{version}"))
        if found:
            (links / f"python{version}").symlink_to(found[-1])
    saved = os.environ["PATH"]
    os.environ["PATH"] = f"{links}{os.pathsep}{saved}"
    yield
    os.environ["PATH"] = saved


@pytest.fixture(scope="session")
def default_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One project with default answers for the whole session (generation runs `uv lock`)."""
    return generate(tmp_path_factory.mktemp("default") / "my-exp")
