"""Provenance: the exact code state, the Slurm job, and an environment with every secret value redacted."""

from __future__ import annotations

import subprocess
from importlib import import_module
from pathlib import Path

import pytest

from conftest import PACKAGE

provenance = import_module(f"{PACKAGE}.core.provenance")


def test_secret_looking_names_keep_their_name_and_lose_their_value() -> None:
    environment = {
        "WANDB_API_KEY": "k-123",  # pragma: allowlist secret
        "HF_TOKEN": "t",
        "DB_PASSWORD": "p",
        "MY_SECRET": "s",
        "HOME": "/",
    }
    assert provenance.redacted(environment) == {
        "DB_PASSWORD": "<redacted>",
        "HF_TOKEN": "<redacted>",
        "HOME": "/",
        "MY_SECRET": "<redacted>",
        "WANDB_API_KEY": "<redacted>",
    }


def test_git_state_tells_a_clean_checkout_from_a_dirty_one(tmp_path: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.name=T", "-c", "user.email=t@e.org", *args], cwd=tmp_path, check=True)

    git("init", "--quiet", "--initial-branch=main")
    (tmp_path / "uv.lock").write_text("lock\n")
    git("add", "uv.lock")
    git("commit", "--quiet", "-m", "first")
    clean = provenance.git_state(tmp_path)
    assert clean["dirty"] is False and clean["diff_sha256"] is None and clean["branch"] == "main"
    assert len(clean["commit"]) == 40
    (tmp_path / "uv.lock").write_text("changed\n")
    dirty = provenance.git_state(tmp_path)
    assert dirty["dirty"] is True and dirty["commit"] == clean["commit"] and len(dirty["diff_sha256"]) == 64
    assert b"+changed" in provenance.diff(tmp_path)


def test_outside_git_nothing_is_invented(tmp_path: Path) -> None:
    assert provenance.git_state(tmp_path) == {
        "commit": None,
        "branch": None,
        "remote_url": None,
        "dirty": None,
        "diff_sha256": None,
    }


def test_slurm_job_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("SLURM_JOB_ID", "SLURM_ARRAY_TASK_ID", "SLURM_RESTART_COUNT"):
        monkeypatch.delenv(name, raising=False)
    assert provenance.slurm_job() is None
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    monkeypatch.setenv("SLURM_RESTART_COUNT", "1")
    assert provenance.slurm_job() == {"job_id": "42", "restart_count": "1"}


def test_without_git_installed_nothing_is_invented(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # as in the container image, which has no git
    assert provenance.git_state(tmp_path)["commit"] is None
