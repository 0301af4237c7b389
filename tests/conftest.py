"""Fixtures and hooks of the template's tests: every command runs as from a fresh user's shell, and one default
project is generated for the whole session to keep the suite fast. What tests share besides fixtures is in
helpers/."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers.generation import generate

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
def bytecode_written() -> Iterator[None]:
    """Let the commands the tests start write bytecode, as they do on a user's machine.

    Where PYTHONDONTWRITEBYTECODE is set (CI machines set it), a process in a venv whose bytecode was not compiled
    whole compiles torch again as it imports it: every `uv run` in a project venv made by `uv run` or a plain
    `uv sync`, which the tests start by the dozen. The project's own sessions and job script compile their venvs
    whole (docs/decisions/0011-bytecode-compiled-once.md), and still do.
    """
    saved = os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    yield
    if saved is not None:
        os.environ["PYTHONDONTWRITEBYTECODE"] = saved


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


# The files whose tests take longest, longest first, as a full run's `--durations=0` added them up. The tests
# session hands whole files to its two workers (--dist=loadfile) in collection order (--no-loadscope-reorder).
# xdist's own order, most tests first, left the files of a few long tests (the Slurm clusters, the container build)
# to the end, on one worker while the other sat idle. Started first, they run beside each other and the many short
# files fill in around them.
LONGEST_FIRST = (
    "test_launch.py",
    "test_multinode.py",
    "library/test_proof.py",
    "test_examples.py",
    "test_container.py",
    "test_jobs.py",
    "test_benchmarks.py",
    "library/test_bad_inputs.py",
    "test_update.py",
    "test_generated_project.py",
    "test_proof.py",
    "library/test_trackers.py",
    "library/test_analysis.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    tests = Path(__file__).parent
    if missing := [name for name in LONGEST_FIRST if not (tests / name).is_file()]:
        raise pytest.UsageError(f"LONGEST_FIRST in tests/conftest.py names files that are gone: {missing}")
    rank = {name: position for position, name in enumerate(LONGEST_FIRST)}

    def file_rank(item: pytest.Item) -> int:
        name = item.path.relative_to(tests).as_posix() if item.path.is_relative_to(tests) else ""
        return rank.get(name, len(LONGEST_FIRST))

    items.sort(key=file_rank)  # stable: a file's own tests, and the files not named, keep their order
