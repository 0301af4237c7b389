"""Fixtures of the library's tests: a dataset cache, training in fresh processes, a finished language-model run.

Importing helpers.project assembles the project these tests serve (the template's research code and configs as
the package `demo`); the fixture served_project points the library at it for these tests only.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import samebits.project

from library.helpers.project import ENVIRONMENT, PACKAGE, ROOT, SHORT_LM
from library.helpers.runs import RunTraining


@pytest.fixture(scope="package", autouse=True)
def served_project() -> Iterator[None]:
    """The library serves `demo`, in this process and in the processes the tests start, during the library's tests
    only: under `pytest tests` the template's tests run in the same process, and their commands (Copier, uv, a
    generated project's nox) must not find `demo` on PYTHONPATH nor be told to serve it."""
    with pytest.MonkeyPatch.context() as patch:
        for key, value in ENVIRONMENT.items():
            patch.setenv(key, value)
        samebits.project.use(PACKAGE)
        yield
    samebits.project.current.cache_clear()


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One dataset cache for the whole session, so that only the first run pays for scikit-learn's import."""
    return tmp_path_factory.mktemp("data")


@pytest.fixture(scope="session")
def run_training(data_dir: Path) -> RunTraining:
    """Run `python -m <package>.train` in a fresh process, the way users and launchers do."""

    def run(runs_dir: Path, *overrides: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        # ENVIRONMENT again: session fixtures (lm_run) are set up before the package's served_project
        env = {**os.environ, **ENVIRONMENT, **(env or {}), "DATA_DIR": str(data_dir), "RUNS_DIR": str(runs_dir)}
        command = [sys.executable, "-m", f"{PACKAGE}.train", "trainer.progress_bar=false", *overrides]
        return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)

    return run


@pytest.fixture(scope="session")
def lm_run(run_training: RunTraining, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run of the language-model experiment, shortened."""
    runs_dir = tmp_path_factory.mktemp("lm-runs")
    done = run_training(runs_dir, *SHORT_LM)
    assert done.returncode == 0, done.stderr
    (run_dir,) = (runs_dir / "char-lm").iterdir()
    return run_dir


@pytest.fixture
def unused_port() -> int:
    """A local port with nothing listening: connections to it are refused, as to a wandb host that is down."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
