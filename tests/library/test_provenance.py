"""Provenance: the exact code state, the Slurm job, and an environment with every secret value redacted."""

from __future__ import annotations

import json
import subprocess
from importlib import import_module
from pathlib import Path

import pytest
from omegaconf import OmegaConf

provenance = import_module("samebits.core.provenance")


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


# Planted credentials, built from pieces so that no secret scanner mistakes this file for a leak.
GITHUB_PAT = "ghp_" + "A1b2C3d4E5" * 4  # pragma: allowlist secret
HF_TOKEN = "hf_" + "QwErTyUiOp" * 4  # pragma: allowlist secret
OPENAI_KEY = "sk-proj-" + "Zx9Cv8Bn7M" * 4  # pragma: allowlist secret
AWS_KEY_ID = "AKIA" + "Q7X2M4K9P3L8R6T1"  # pragma: allowlist secret


def test_secret_values_are_redacted_whatever_the_variable_is_called() -> None:
    environment = {
        "DATABASE_URL": "postgres://u:hunter2@h/db",  # pragma: allowlist secret
        "GITHUB_PAT": GITHUB_PAT,
        "REPO_URL": f"https://{GITHUB_PAT}@github.com/me/repo.git",
        "PROXY": "http://me:p%40ss:w0rd@proxy:3128",  # pragma: allowlist secret
        "EXTRA_ARGS": f"--hub {HF_TOKEN} --openai={OPENAI_KEY}",
        "AWS_ID": AWS_KEY_ID,
        "SLACK_HOOK": "xoxb-" + "1234567890-" * 3 + "AbCdEfGh",
    }
    found = provenance.redacted(environment)
    assert found == {
        "AWS_ID": "<redacted>",
        "DATABASE_URL": "postgres://u:<redacted>@h/db",
        "EXTRA_ARGS": "--hub <redacted> --openai=<redacted>",
        "GITHUB_PAT": "<redacted>",
        "PROXY": "http://me:<redacted>@proxy:3128",
        "REPO_URL": "https://<redacted>@github.com/me/repo.git",
        "SLACK_HOOK": "<redacted>",
    }
    assert provenance.redacted({"GH_PAT": "x", "PAT": "y"}) == {"GH_PAT": "<redacted>", "PAT": "<redacted>"}


def test_ordinary_values_are_kept() -> None:
    environment = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": "/home/me",
        "PWD": "/home/me/project",
        "INDEX_URL": "https://pypi.org/simple",
        "REMOTE": "ssh://git@github.com/me/repo.git",
        "HTTP_PROXY": "http://proxy:3128",
        "HF_HOME": "/data/hf_cache/hub",
        "NOTE": "sk-learn is not scikit-learn; ghp_short, task-sk-1234, AKIA-free",
        "EMAIL": "me@example.org",
    }
    assert provenance.redacted(environment) == dict(sorted(environment.items()))


def test_collect_records_the_environment_redacted(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgres://u:hunter2@h/db")  # pragma: allowlist secret
    monkeypatch.setenv("GITHUB_PAT", GITHUB_PAT)
    monkeypatch.setenv("HOME", "/home/me")
    monkeypatch.setattr(provenance, "HydraConfig", FakeHydra)
    cfg = OmegaConf.create({"run_name": "r", "main_tag": "dev", "tags": [], "trainer": {"num_threads": 1}})
    found = provenance.collect(tmp_path, cfg, "c" * 64)
    text = json.dumps(found)
    assert "hunter2" not in text and GITHUB_PAT not in text
    assert found["environment"]["DATABASE_URL"] == "postgres://u:<redacted>@h/db"
    assert found["environment"]["GITHUB_PAT"] == "<redacted>"
    assert found["environment"]["HOME"] == "/home/me"


class FakeHydra:
    """What `collect` reads from Hydra's runtime config, outside a Hydra run."""

    @staticmethod
    def get() -> object:
        return OmegaConf.create({"runtime": {"choices": {"experiment": None}}, "overrides": {"task": []}})


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
    assert b"+changed" in import_module("samebits.core.git").diff(tmp_path)


PASSWORD_URL = "https://alice:hunter2@git.example.com/me/exp.git"  # pragma: allowlist secret
TOKEN_URL = "https://oauth2:glpat-AbCdEfGhIjKlMnOpQrSt@gitlab.com/me/exp.git"  # pragma: allowlist secret
TOKEN_USER_URL = "https://" + GITHUB_PAT + "@github.com/me/exp.git"
SUBMODULE_URL = "https://u:s3cret@h.example/lib.git"  # pragma: allowlist secret


@pytest.mark.parametrize(
    ("url", "stored"),
    [
        (PASSWORD_URL, "https://git.example.com/me/exp.git"),
        (TOKEN_URL, "https://gitlab.com/me/exp.git"),
        (TOKEN_USER_URL, "https://github.com/me/exp.git"),
        ("ssh://git@host.example.com/me/exp.git", "ssh://git@host.example.com/me/exp.git"),  # a user, no secret
        ("git@github.com:me/exp.git", "git@github.com:me/exp.git"),
        ("/srv/git/exp.git", "/srv/git/exp.git"),
    ],
)
def test_stored_urls_keep_no_credentials(url: str, stored: str) -> None:
    assert provenance.public_url(url) == stored


def test_the_remote_and_the_submodules_are_recorded_without_their_passwords(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def git(*args: str, cwd: Path) -> None:
        command = ["git", "-c", "user.name=T", "-c", "user.email=t@e.org", "-c", "protocol.file.allow=always", *args]
        subprocess.run(command, cwd=cwd, check=True, capture_output=True)

    library, project = tmp_path / "library", tmp_path / "project"
    library.mkdir()
    project.mkdir()
    git("init", "--quiet", cwd=library)
    git("commit", "--quiet", "--allow-empty", "-m", "lib", cwd=library)
    git("init", "--quiet", "--initial-branch=main", cwd=project)
    git("submodule", "--quiet", "add", str(library), "external/library", cwd=project)
    git("config", "--file", ".gitmodules", "submodule.external/library.url", SUBMODULE_URL, cwd=project)
    git("remote", "add", "origin", PASSWORD_URL, cwd=project)
    git("commit", "--quiet", "-am", "first", cwd=project)
    assert provenance.git_state(project)["remote_url"] == "https://git.example.com/me/exp.git"
    monkeypatch.setattr(provenance, "HydraConfig", FakeHydra)
    cfg = OmegaConf.create({"run_name": "r", "main_tag": "dev", "tags": [], "trainer": {"num_threads": 1}})
    found = provenance.collect(project, cfg, "0" * 64)
    assert [module["url"] for module in found["submodules"]] == ["https://h.example/lib.git"]
    assert "hunter2" not in json.dumps(found) and "s3cret" not in json.dumps(found)


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
