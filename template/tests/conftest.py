"""Fixtures: a dataset cache, training runs in fresh processes, a finished language-model run. What tests share
besides fixtures is in helpers/ (importing helpers.project makes the samebits library serve this package)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.project import PACKAGE, ROOT
from helpers.runs import SHORT_LM, RunTraining


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One dataset cache for the whole session, so that only the first run pays for scikit-learn's import."""
    return tmp_path_factory.mktemp("data")


@pytest.fixture(scope="session")
def run_training(data_dir: Path) -> RunTraining:
    """Run `python -m <package>.train` in a fresh process, the way users and launchers do."""

    def run(runs_dir: Path, *overrides: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, **(env or {}), "DATA_DIR": str(data_dir), "RUNS_DIR": str(runs_dir)}
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
