"""The generated project works as a new user finds it: its own nox sessions pass, and `uv run` trains.

These install the project's locked environment (torch included: about 2.6 GB into uv's cache the first time,
hard-linked afterwards), so they are marked slow.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import DEFAULT_PACKAGE

pytestmark = pytest.mark.slow


def run(project: Path, *command: str, expect: int = 0) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("VIRTUAL_ENV", "UV_PROJECT"))}
    done = subprocess.run(command, cwd=project, capture_output=True, text=True, timeout=1200, env=env)
    assert done.returncode == expect, f"{' '.join(command)}:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done


def test_generated_tests_and_lint_pass(default_project: Path) -> None:
    run(default_project, "nox", "--non-interactive", "-s", "lint", "tests")


def test_generated_reproducibility_proof_passes(default_project: Path) -> None:
    done = run(default_project, "nox", "--non-interactive", "-s", "reproducibility")
    assert "two identical runs" in done.stdout
    assert "all 1 proof(s) identical" in done.stdout


def test_reproducibility_proof_fails_when_a_run_is_not_repeatable(default_project: Path, tmp_path: Path) -> None:
    """Seed torch from the OS instead of the config: the proof must see it and fail."""
    project = tmp_path / "broken"
    subprocess.run(["git", "clone", "--quiet", str(default_project), str(project)], check=True)
    determinism = project / "src" / DEFAULT_PACKAGE / "determinism.py"
    source = determinism.read_text()
    assert "    torch.manual_seed(seed)" in source
    determinism.write_text(
        source.replace("torch.manual_seed(seed)", "torch.manual_seed(int.from_bytes(os.urandom(4)))")
    )
    done = run(project, "nox", "--non-interactive", "-s", "reproducibility", expect=1)
    assert "DIFFERENT" in done.stdout
    assert "all 1 proof(s) identical" not in done.stdout


def test_new_user_trains_with_uv_run(default_project: Path) -> None:
    run(default_project, "uv", "run", "--frozen", "python", "-m", f"{DEFAULT_PACKAGE}.train")
    (run_dir,) = (default_project / "runs" / "dev").iterdir()
    assert {path.name for path in run_dir.iterdir()} >= {"config.yaml", "metrics.jsonl", "summary.json"}
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["metrics"]["val/acc"] >= 0.90
