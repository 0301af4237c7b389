"""The generated project works as a new user finds it: its own nox sessions and pre-commit hooks pass, and `uv run`
trains. Its reproducibility proof is tested in test_proof.py.

These install the project's locked environment (torch included: about 2.6 GB into uv's cache the first time,
hard-linked afterwards) and start many training processes, so they are marked slow.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from conftest import DEFAULT_PACKAGE, run

pytestmark = pytest.mark.slow


def test_generated_tests_and_lint_pass(default_project: Path) -> None:
    run(default_project, "nox", "--non-interactive", "-s", "lint", "tests", timeout=2400)


def test_lint_fails_on_a_dependency_added_without_relocking(default_project: Path, tmp_path: Path) -> None:
    project = tmp_path / "unlocked"
    subprocess.run(["git", "clone", "--quiet", str(default_project), str(project)], check=True)
    pyproject = project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('"tqdm>=4.66",', '"tqdm>=4.66",\n    "rich>=13",'))
    done = run(project, "nox", "--non-interactive", "-s", "lint", expect=1)
    assert "uv lock --check" in done.stdout + done.stderr
    assert "needs to be updated" in done.stdout + done.stderr


def test_pre_commit_passes_on_the_first_commit_and_catches_secrets_and_conflicts(
    default_project: Path, tmp_path: Path
) -> None:
    project = tmp_path / "hooks"
    subprocess.run(["git", "clone", "--quiet", str(default_project), str(project)], check=True)
    pre_commit = ["uv", "run", "--frozen", "pre-commit", "run", "--all-files"]
    run(project, *pre_commit)
    fake_key = 'api_key = "sk_live_51HBx7bQz8sQk3nJ4pLr9tVwXy2mA"\n'
    planted = {
        "settings.py": (fake_key, "no secrets (API keys, tokens, passwords)"),
        "notes.md": ("<<<<<<< HEAD\nours\n=======\ntheirs\n>>>>>>> branch\n", "no merge conflict markers"),
    }
    for name, (content, hook) in planted.items():
        (project / name).write_text(content)
        subprocess.run(["git", "add", name], cwd=project, check=True)
        done = run(project, *pre_commit, expect=1)
        assert re.search(rf"^{re.escape(hook)}\.+Failed$", done.stdout, flags=re.MULTILINE), done.stdout
        subprocess.run(["git", "rm", "--quiet", "--force", name], cwd=project, check=True)


def test_new_user_trains_with_uv_run(default_project: Path) -> None:
    run(default_project, "uv", "run", "--frozen", DEFAULT_PACKAGE, "train")  # the console command: python -m's twin
    (run_dir,) = (default_project / "runs" / "dev").iterdir()
    assert {path.name for path in run_dir.iterdir()} >= {"config.yaml", "metrics.jsonl", "summary.json", "checkpoints"}
    assert json.loads((run_dir / "status.json").read_text())["state"] == "finished"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["metrics"]["val/acc"] >= 0.90
