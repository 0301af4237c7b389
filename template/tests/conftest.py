"""Shared helpers: the package under test, and training runs in fresh processes."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["name"].replace("-", "_")

RunTraining = Callable[..., subprocess.CompletedProcess[str]]


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
