"""Shared helpers: the package under test (served by the samebits library), and training runs in fresh processes."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest
import samebits.project

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["name"].replace("-", "_")
samebits.project.use(PACKAGE)  # what the entry points do: the library serves this project

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


# The character-level transformer, cut down to a few seconds: two checkpoints and two evaluations.
SHORT_LM = [
    "experiment=char_transformer",
    "trainer.max_steps=20",
    "trainer.ckpt_every=10",
    "trainer.eval_every=10",
    "sched.warmup_steps=5",
    "model.width=32",
    "model.depth=1",
    "trainer.num_threads=1",
]


@pytest.fixture(scope="session")
def lm_run(run_training: RunTraining, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run of the language-model experiment, shortened."""
    runs_dir = tmp_path_factory.mktemp("lm-runs")
    done = run_training(runs_dir, *SHORT_LM)
    assert done.returncode == 0, done.stderr
    (run_dir,) = (runs_dir / "char-lm").iterdir()
    return run_dir
